"""What every rank must agree on before a graph holds a collective, decided without torch.

Two pieces, both pure, so the notebook shows them on any laptop:

- **one bucket for every rank**: each rank pads its batch to the bucket of the *largest* local batch
  size (vLLM, SGLang and Megatron do the same), so every rank captures and replays the same graph;
  `common_bucket(local_sizes, buckets)` is that arithmetic (`comm.agree_bucket` gathers the sizes);
- **the rules of a captured collective** (`RULES`), each reported by a `CaptureError` cause from
  `graphlab.capture.diagnose` (`rule_error`); `capture.capture_collective` checks them on every rank.

    >>> common_bucket([3, 7], [1, 2, 4, 8, 16]).bucket
    8
    >>> collective_rules().column("cause")[:2]
    ['nccl_lazy_init', 'collective_not_warmed']
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from graphlab import present
from graphlab.cache.buckets import smallest_bucket
from graphlab.capture.diagnose import CAUSES, Diagnosis, capture_error
from graphlab.errors import CaptureError, DistributedError
from graphlab.present import ShownAsTable


# -- which bucket every rank uses ---------------------------------------------------------------------
@dataclass(frozen=True)
class BucketAgreement(ShownAsTable):
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

    def sentence(self) -> str:
        """The agreement in words: "4 ranks hold 3, 7, 1 and 5 rows; the largest is 7, so every rank replays
        bucket 8: 16 of the 32 replayed rows are padding (50%)"."""
        ranks = len(self.local_sizes)
        held = (f"{ranks} ranks hold {present.listing(self.local_sizes)} rows" if ranks > 1 else
                f"1 rank holds {present.count(self.local_sizes[0])} rows")
        if self.bucket is None:
            return (f"{held}; the largest, {self.global_size}, is above the largest bucket "
                    f"({present.count(max(self.buckets)) if self.buckets else 'none'}), so every rank runs eager, "
                    "together, with no padding")
        replayed = self.bucket * ranks
        return (f"{held}; the largest is {self.global_size}, so every rank replays bucket {self.bucket}: "
                f"{present.count(sum(self.padding))} of the {present.count(replayed)} replayed rows are padding "
                f"({present.percent(100 * self.pad_waste)})")

    def table(self) -> present.Table:
        """One row per rank: the rows it holds, the bucket it replays, the padding it adds; the sentence as title."""
        columns = [present.Column("rank", "rank", kind="count"),
                   present.Column("local_size", "rows it holds", kind="count"),
                   present.Column("bucket", "bucket it replays", kind="count",
                                  missing="above the largest bucket: eager on every rank"),
                   present.Column("padding", "padding rows", kind="count")]
        return present.Table(self.rows(), columns, index="rank", title=self.sentence())


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
    if min(sizes) < 0:
        raise DistributedError(f"a batch size cannot be negative, got {min(sizes)}")
    global_size = max(sizes)
    return BucketAgreement(sizes, global_size, smallest_bucket(global_size, buckets), tuple(sorted(buckets)))


# -- the rules of a captured collective ---------------------------------------------------------------
#: The rules of a captured collective, in the order `capture_collective` checks them: (cause, rule).
RULES = (
    ("nccl_lazy_init", "the NCCL communicator exists before capture (created eagerly, given `device_id`)"),
    ("collective_not_warmed", "every collective ran eagerly on the capture stream first (warm-up)"),
    ("rank_mismatch", "every rank captures the same shapes (one global bucket)"),
    ("rank_capture_failed", "every rank captured, or none keeps a graph"),
)


def collective_rules() -> present.Table:
    """The rules as a table (pure): one row per rule, in words, with the `CaptureError.cause` that reports a
    broken rule (code), what the error says and the fix. `.rows` holds them as dicts, `.column("cause")` the
    causes."""
    rows = [{"rule": rule, "cause": key, "error": CAUSES[key].title, "fix": CAUSES[key].fix} for key, rule in RULES]
    columns = [present.Column("rule", "the rule", kind="text"),
               present.Column("cause", "cause (err.cause)", kind="code"),
               present.Column("error", "what the error says", kind="text"),
               present.Column("fix", "the fix", kind="text")]
    return present.Table(rows, columns, index="rule",
                         title="What every rank must agree on before a graph holds a collective",
                         notes=["capture_collective checks the rules in this order, on every rank, before it "
                                "captures; a broken rule raises the same CaptureError on every rank."])


def rule_error(cause: str, detail: str) -> CaptureError:
    """A CaptureError for a broken multi-GPU rule, in the house style (cause, what, why, fix)."""
    return capture_error(Diagnosis(CAUSES[cause], detail, None, detail))


__all__ = ["RULES", "BucketAgreement", "collective_rules", "common_bucket", "rule_error"]
