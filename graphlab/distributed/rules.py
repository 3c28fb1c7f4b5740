"""What every rank must agree on before a graph holds a collective, decided without torch.

Two pieces, both pure, so the notebook shows them on any laptop:

- **one bucket for every rank**: each rank pads its batch to the bucket of the *largest* local batch
  size (vLLM, SGLang and Megatron do the same), so every rank captures and replays the same graph;
  `common_bucket(local_sizes, buckets)` is that arithmetic (`comm.agree_bucket` gathers the sizes);
- **the rules of a captured collective** (`RULES`), each reported by a `CaptureError` cause from
  `graphlab.capture.diagnose` (`rule_error`); `capture.capture_collective` checks them on every rank.

    >>> common_bucket([3, 7], [1, 2, 4, 8, 16]).bucket
    8
    >>> [row["cause"] for row in collective_rules()][:2]
    ['nccl_lazy_init', 'collective_not_warmed']
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from graphlab.capture.diagnose import CAUSES, Diagnosis, capture_error
from graphlab.errors import CaptureError, DistributedError


# -- which bucket every rank uses ---------------------------------------------------------------------
def bucket_for(size: int, buckets: Sequence[int]) -> int | None:
    """The smallest bucket that holds `size`, or None when `size` is above the largest."""
    if size < 0:
        raise DistributedError(f"a batch size cannot be negative, got {size}")
    fitting = [b for b in sorted(buckets) if b >= size]
    return fitting[0] if fitting else None


@dataclass(frozen=True)
class BucketAgreement:
    """What every rank pads to: the bucket of the largest local batch size.

    Attributes:
        local_sizes: each rank's batch size, by rank.
        global_size: the largest of them (what an all-reduce MAX gives).
        bucket: the bucket every rank captures and replays, or None (above the largest bucket: every
            rank runs eager, together, so no rank waits in a collective alone).
    """

    local_sizes: tuple[int, ...]
    global_size: int
    bucket: int | None
    buckets: tuple[int, ...] = field(default=(), repr=False)

    @property
    def padding(self) -> tuple[int, ...]:
        """Rows of padding each rank adds (0 where the rank runs eager)."""
        return tuple((self.bucket - n) if self.bucket is not None else 0 for n in self.local_sizes)

    @property
    def pad_waste(self) -> float:
        """The share of the replayed rows that are padding, over all ranks (0.0 to 1.0)."""
        if self.bucket is None or self.bucket == 0:
            return 0.0
        return sum(self.padding) / (self.bucket * len(self.local_sizes))

    def rows(self) -> list[dict[str, Any]]:
        """One row per rank, for a table."""
        return [{"rank": r, "local_size": n, "bucket": self.bucket, "padding": p}
                for r, (n, p) in enumerate(zip(self.local_sizes, self.padding))]

    def __str__(self) -> str:
        where = f"bucket {self.bucket}" if self.bucket is not None else "eager (above the largest bucket)"
        return (f"{len(self.local_sizes)} rank(s) with sizes {list(self.local_sizes)} -> global size "
                f"{self.global_size} -> {where} on every rank; padding {list(self.padding)} "
                f"({self.pad_waste:.0%} of the replayed rows)")

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))


def common_bucket(local_sizes: Sequence[int], buckets: Sequence[int]) -> BucketAgreement:
    """The bucket every rank must use for these local batch sizes (pure: no torch, no process group).

    >>> common_bucket([3, 7], [1, 2, 4, 8, 16]).bucket
    8
    """
    sizes = tuple(int(n) for n in local_sizes)
    if not sizes:
        raise DistributedError("common_bucket needs the batch size of at least one rank")
    if not buckets:
        raise DistributedError("common_bucket needs at least one bucket")
    global_size = max(sizes)
    return BucketAgreement(sizes, global_size, bucket_for(global_size, buckets), tuple(sorted(buckets)))


# -- the rules of a captured collective ---------------------------------------------------------------
#: The rules of a captured collective, in the order `capture_collective` checks them: (cause, rule).
RULES = (
    ("nccl_lazy_init", "the NCCL communicator exists before capture (eager init: device_id)"),
    ("collective_not_warmed", "every collective ran eagerly on the capture stream first (warm-up)"),
    ("rank_mismatch", "every rank captures the same shapes (one global bucket)"),
    ("rank_capture_failed", "every rank captured, or none keeps a graph"),
)


def collective_rules() -> list[dict[str, str]]:
    """The rules as rows (rule, the CaptureError cause that reports a break, what it says, the fix); pure."""
    return [{"rule": rule, "cause": key, "error": CAUSES[key].title, "fix": CAUSES[key].fix} for key, rule in RULES]


def rule_error(cause: str, detail: str) -> CaptureError:
    """A CaptureError for a broken multi-GPU rule, in the house style (cause, what, why, fix)."""
    return capture_error(Diagnosis(CAUSES[cause], detail, None, detail))


__all__ = ["RULES", "BucketAgreement", "bucket_for", "collective_rules", "common_bucket", "rule_error"]
