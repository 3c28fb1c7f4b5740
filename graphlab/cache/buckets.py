"""Buckets: the sizes a graph cache captures, and which bucket serves which size.

A captured graph has fixed shapes, so a cache captures a few sizes (buckets) of each dimension that
varies and pads every request up to the smallest bucket that holds it. Named policies follow what
serving engines ship: powers of two (TensorRT-LLM, Megatron's exponential ladder) and vLLM's ladder
1, 2, 4, 8, 16, 24, 32, ... (steps of 8 up to 256, then 16).

    >>> bucket_list("pow2", max_size=64)
    [1, 2, 4, 8, 16, 32, 64]
    >>> bucket_list("vllm", max_size=40)
    [1, 2, 4, 8, 16, 24, 32, 40]
    >>> BucketTable([1, 2, 4, 8]).bucket_for(3)
    4
    >>> smallest_bucket(5, [8, 1, 4]), smallest_bucket(9, [8])
    (8, None)

**Adding a policy** is one decorated function in this module, `max_size -> sizes`:

    @bucket_policy("pow4", label="powers of four")
    def pow4_buckets(max_size): ...

Everything that takes a policy name reads `POLICIES`: `bucket_list`, `Pad` and so `gl.GraphCache(buckets=...)`,
the service's `ServeConfig(buckets=...)`, and `gl.advise_buckets`, which scores each policy with `compare=True`
against its own choice. No other module lists the names or repeats a ladder.

Pure (no torch): standard library only.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from graphlab.errors import BadInputError, ConfigurationError

#: a bucket policy's ladder: max_size -> the ascending bucket sizes, the last one max_size
Ladder = Callable[[int], list[int]]


@dataclass(frozen=True)
class BucketPolicy:
    """A named ladder of bucket sizes.

    Attributes:
        name: what `buckets=` takes ("pow2").
        sizes: `max_size -> [ascending sizes]`, the last one `max_size`.
        label: how the advisor's comparison table names it ("powers of two").
        compare: whether `gl.advise_buckets` scores it beside its own choice ("every" does not: it captures sizes
            nobody asked for, and the advisor's "one graph per size" is that idea on the observed sizes).
    """

    name: str
    sizes: Ladder
    label: str
    compare: bool = True


#: every bucket policy by name, in the order they were registered
POLICIES: dict[str, BucketPolicy] = {}


def bucket_policy(name: str, *, label: str, compare: bool = True) -> Callable[[Ladder], Ladder]:
    """Register a ladder as the bucket policy `name` (a decorator; the function is returned as is)."""

    def register(sizes: Ladder) -> Ladder:
        POLICIES[name] = BucketPolicy(name, sizes, label, compare)
        return sizes

    return register


def policy_names() -> tuple[str, ...]:
    """The names `buckets=` takes, for messages and docs."""
    return tuple(POLICIES)


@bucket_policy("pow2", label="powers of two")
def pow2_buckets(max_size: int) -> list[int]:
    """1, 2, 4, ... up to and including `max_size` (which is added if it is not a power of two)."""
    out, size = [], 1
    while size < max_size:
        out.append(size)
        size *= 2
    return out + [max_size]


@bucket_policy("vllm", label="vLLM ladder")
def vllm_buckets(max_size: int) -> list[int]:
    """vLLM's default ladder: 1, 2, 4, then every 8 up to 256, then every 16; capped at `max_size`."""
    ladder = [1, 2, 4, *range(8, 256, 8), *range(256, max(max_size, 256) + 16, 16)]
    out = [b for b in ladder if b < max_size]
    return out + [max_size]


@bucket_policy("every", label="every size", compare=False)
def every_bucket(max_size: int) -> list[int]:
    """One bucket per size, 1 .. `max_size`: no padding at all, the most graphs."""
    return list(range(1, max_size + 1))


def bucket_list(buckets: str | Iterable[int] | Any, max_size: int | None = None) -> list[int]:
    """Buckets from a policy name (`POLICIES`), a list of sizes, or a `BucketAdvice`.

    Raises:
        BadInputError: an unknown policy, or sizes that are not positive integers.
        ConfigurationError: a named policy without `max_size`.
    """
    if hasattr(buckets, "buckets") and not isinstance(buckets, (str, list, tuple)):
        buckets = buckets.buckets  # a BucketAdvice (graphlab.cache.advisor)
    if isinstance(buckets, str):
        policy = POLICIES.get(buckets)
        if policy is None:
            raise BadInputError(f"unknown bucket policy {buckets!r}: use one of {', '.join(POLICIES)} or a list of "
                                "sizes (a new policy is a @bucket_policy function in graphlab/cache/buckets.py)")
        if max_size is None or max_size < 1:
            raise ConfigurationError(f"bucket policy {buckets!r} needs max_size (the largest size to capture), "
                                     f"got {max_size!r}")
        return policy.sizes(max_size)
    sizes = list(buckets)
    if not sizes or any(not isinstance(b, int) or isinstance(b, bool) or b < 1 for b in sizes):
        raise BadInputError(f"buckets must be positive integers, e.g. [1, 2, 4, 8], got {sizes!r}")
    return sorted(set(sizes))


def smallest_bucket(size: int, buckets: Sequence[int]) -> int | None:
    """The smallest bucket that holds `size` (>= it), or None when `size` is above the largest: the one rule of
    which bucket serves a size (the graph cache's table, the ranks' common bucket, decode and the SWITCH study)."""
    ordered = sorted(buckets)
    i = bisect.bisect_left(ordered, size)
    return ordered[i] if i < len(ordered) else None


@dataclass(frozen=True)
class BucketTable:
    """Sorted buckets with an O(1) size -> bucket table (vLLM precomputes one; SGLang bisects).

    `bucket_for(n)` is `smallest_bucket(n, buckets)` read from the table: None above the largest bucket and for n < 1.
    """

    buckets: tuple[int, ...]
    _table: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __init__(self, buckets: Sequence[int]):
        ordered = tuple(bucket_list(list(buckets)))
        object.__setattr__(self, "buckets", ordered)
        table = [0] * (ordered[-1] + 1)
        for n in range(1, ordered[-1] + 1):
            table[n] = ordered[bisect.bisect_left(ordered, n)]  # smallest_bucket(n, ordered), sorted once
        object.__setattr__(self, "_table", tuple(table))

    @property
    def largest(self) -> int:
        return self.buckets[-1]

    def bucket_for(self, n: int) -> int | None:
        """The bucket that serves size `n` (n >= 1), or None when n is above the largest bucket."""
        if n < len(self._table):
            return self._table[n] if n >= 1 else None
        return None

    def pad_waste(self, sizes: Iterable[int]) -> float:
        """Share of the rows computed for `sizes` that are padding (0 when every size is a bucket)."""
        real = padded = 0
        for n in sizes:
            b = self.bucket_for(n)
            if b is not None:
                real += n
                padded += b
        return 0.0 if padded == 0 else (padded - real) / padded


@dataclass(frozen=True)
class Pad:
    """One dimension a graph cache may pad, and its buckets.

    Attributes:
        name: what the dimension is ("batch", "seq"), for messages and stats.
        dim: the dimension of each padded input.
        buckets: a policy name (one of `POLICIES`), a list of sizes, or a `BucketAdvice`.
        max_size: the largest size, for named policies.
        out_dim: the dimension of the outputs to slice back to the real size (None: outputs are not
            sliced along it, e.g. a model that pools the sequence away).
        value: what padded positions are filled with (0: a valid token id and a neutral float).
        inputs: which positional inputs are padded (None: every tensor input with more than `dim` dims).
        exact: None (check at capture: padded replay vs eager on the real rows), True (trust it: rows or
            positions along this dim are independent), False (never pad: only exact bucket sizes run as
            graphs, others run eagerly).
    """

    name: str = "batch"
    dim: int = 0
    buckets: Any = "pow2"
    max_size: int | None = 64
    out_dim: int | None = 0
    value: float = 0
    inputs: tuple[int, ...] | None = None
    exact: bool | None = None

    def table(self) -> BucketTable:
        return BucketTable(bucket_list(self.buckets, self.max_size))

    def describe(self) -> str:
        return f"dim {self.dim} ({self.name!r})"


__all__ = ["BucketPolicy", "BucketTable", "Ladder", "POLICIES", "Pad", "bucket_list", "bucket_policy", "every_bucket",
           "policy_names", "pow2_buckets", "smallest_bucket", "vllm_buckets"]
