"""Which graph serves a call: the graph cache's decision, made from plain values (no torch).

A call's inputs arrive here described, not as tensors: a `TensorSpec` (shape, dtype, device) for each tensor
and the value itself for a plain argument. `CachePlanner.decide` answers with one of two things:

- a `Plan`: the key of the graph that serves the call, the real size along each padded dim and its bucket,
  what to pad in each input, what to cut back from the outputs, and which padded dims still need the
  exactness check; or
- a `Fallback`: run eagerly, and why (above the largest bucket, autograd on, a dim that may not be padded).

    >>> planner = CachePlanner([Pad("batch", dim=0, buckets=[1, 2, 4, 8], max_size=None)])
    >>> plan = planner.decide((TensorSpec((3, 16), "float32", 0),))
    >>> plan.sizes, plan.buckets, plan.label, plan.padded_rows
    ((3,), (4,), '4', 1)

`GraphCache` (graph_cache.py) holds the graphs and does what the plan says; this module only decides, so the
rules (what makes two calls share a graph, which bucket serves a size, when padding is allowed) read and test
without a GPU or torch. The key follows vLLM's idea of a small descriptor decided apart from the graphs.

Pure (no torch): standard library and the pure bucket module only.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from graphlab.cache.buckets import Pad
from graphlab.errors import BadInputError, CacheMissError, ConfigurationError

#: why a call that autograd would record runs eagerly (a graph replays no autograd history)
AUTOGRAD = "autograd is on (call under torch.no_grad() or torch.inference_mode() to use graphs)"
ABOVE = "above the largest bucket"
NOT_A_BUCKET = "size is not a bucket of a dim that must not be padded (exact=False)"


@dataclass(frozen=True)
class TensorSpec:
    """A tensor input as plain values: its shape, dtype (any hashable: a torch.dtype, or a name in tests) and
    device index (-1 for the CPU, as `torch.Tensor.get_device()` gives it)."""

    shape: tuple[int, ...]
    dtype: Any
    device: int

    @property
    def ndim(self) -> int:
        return len(self.shape)


@dataclass(frozen=True)
class Fallback:
    """Run this call eagerly; `reason` is counted in the cache's stats and warned once."""

    reason: str


@dataclass(frozen=True)
class PadInput:
    """How one tensor input is padded: along `dims`, from the real `sizes` up to `buckets`, with `value`."""

    index: int
    dims: tuple[int, ...]
    sizes: tuple[int, ...]
    buckets: tuple[int, ...]
    value: float


@dataclass(frozen=True)
class Plan:
    """How one call is served by a graph.

    Attributes:
        key: what the graph depends on: the buckets and the signature (shapes with -1 along padded dims,
            dtypes, devices, plain arguments). Calls with one key share one graph.
        sizes, buckets: the real size along each padded dim, and the bucket that serves it.
        inputs: for each tensor input some Pad applies to, how it is padded (also when sizes == buckets: the
            graph's static input is then made at the bucket's shape all the same).
        cuts: (output dim, real size, bucket) to cut the outputs back along, for each dim that pads.
        check: the padded dims whose exactness is not promised (`Pad.exact is None`): the cache checks each
            once per graph, padded replay vs eager.
    """

    key: tuple[Any, ...]
    sizes: tuple[int, ...]
    buckets: tuple[int, ...]
    inputs: tuple[PadInput, ...]
    cuts: tuple[tuple[int, int, int], ...]
    check: tuple[Pad, ...]

    @property
    def label(self) -> str:
        """The bucket as stats and `GraphCache.graphs` name it: "8", or "8x32" with two padded dims."""
        return "x".join(map(str, self.buckets))

    @property
    def pads(self) -> bool:
        """Whether this call is padded at all (some real size is below its bucket)."""
        return self.sizes != self.buckets

    @property
    def rows(self) -> int:
        """Real rows (positions) computed: the product of the real sizes."""
        return math.prod(self.sizes)

    @property
    def padded_rows(self) -> int:
        """Rows (positions) computed for nothing: the buckets' product minus the real one."""
        return math.prod(self.buckets) - self.rows


class CachePlanner:
    """The decision of one graph cache: its padded dims, their buckets, and strict or not.

    Args:
        dims: the dimensions that may vary (`Pad`), each a different input dim.
        strict: a size above the largest bucket raises `CacheMissError` instead of falling back.
        name: the cache's name, for messages.
    """

    def __init__(self, dims: Sequence[Pad], *, strict: bool = False, name: str = "GraphCache"):
        self.dims = tuple(dims)
        if not self.dims:
            raise ConfigurationError("GraphCache needs at least one dimension to pad, e.g. dims=[gl.Pad('batch', "
                                     "dim=0)] (the default when dims is not given)")
        if len({p.dim for p in self.dims}) != len(self.dims):
            raise ConfigurationError(f"each Pad must name a different input dimension, got dims "
                                     f"{[p.dim for p in self.dims]}: give one Pad per dim")
        self.tables = tuple(p.table() for p in self.dims)
        self.strict = strict
        self.name = name

    # -- one call ----------------------------------------------------------------------------------------
    def decide(self, signature: Sequence[Any], *, autograd: bool = False) -> Plan | Fallback:
        """The plan for a call whose inputs are `signature` (a `TensorSpec` per tensor, else the value).

        Args:
            autograd: autograd would record this call (grad mode on and a parameter or input requires
                grad): it falls back, since a graph replays no autograd history.

        Raises:
            BadInputError: the inputs disagree on the size of a padded dim.
            CacheMissError: strict, and a size is above its largest bucket.
        """
        padded_by = [self.pads_of(i, spec.ndim) if isinstance(spec, TensorSpec) else ()
                     for i, spec in enumerate(signature)]
        sizes = []
        for k, pad in enumerate(self.dims):
            found = None
            for i, spec in enumerate(signature):
                if k not in padded_by[i]:
                    continue
                n = spec.shape[pad.dim]
                if found is None:
                    found = n
                elif n != found:
                    raise BadInputError(f"GraphCache {self.name!r}: inputs disagree on {pad.describe()}: {found} vs "
                                        f"{n} (input {i}); pad only the inputs that share it (Pad(inputs=(...)))")
            if found is None:
                return Fallback(f"no input has {pad.describe()}")
            if found < 1:
                return Fallback(f"{pad.describe()} is empty")
            sizes.append(int(found))
        if autograd:
            return Fallback(AUTOGRAD)
        buckets = tuple(table.bucket_for(n) for table, n in zip(self.tables, sizes))
        if None in buckets:
            if self.strict:
                over = [f"{p.describe()} size {n} > largest bucket {t.largest}"
                        for p, t, n, b in zip(self.dims, self.tables, sizes, buckets) if b is None]
                raise CacheMissError(f"GraphCache {self.name!r}: {'; '.join(over)}: add a bucket for it, or "
                                     "strict=False to run such calls eagerly")
            return Fallback(ABOVE)
        if any(p.exact is False and n != b for p, n, b in zip(self.dims, sizes, buckets)):
            return Fallback(NOT_A_BUCKET)
        return self._plan(signature, padded_by, tuple(sizes), buckets)  # type: ignore[arg-type]

    def pads_of(self, index: int, ndim: int) -> tuple[int, ...]:
        """Which of `dims` (their positions) pad tensor input `index` of `ndim` dims: those with `dim < ndim`,
        among a Pad's `inputs` when it names them."""
        return tuple(k for k, p in enumerate(self.dims) if ndim > p.dim and (p.inputs is None or index in p.inputs))

    def _plan(self, signature: Sequence[Any], padded_by: list[tuple[int, ...]], sizes: tuple[int, ...],
              buckets: tuple[int, ...]) -> Plan:
        inputs, described = [], []
        for i, (spec, ks) in enumerate(zip(signature, padded_by)):
            if not isinstance(spec, TensorSpec):
                described.append(("arg", _hashable(spec)))
                continue
            dims = tuple(self.dims[k].dim for k in ks)
            if ks:
                # one fill value per input: the first Pad's (a corner padded along two dims has one value)
                inputs.append(PadInput(i, dims, tuple(sizes[k] for k in ks), tuple(buckets[k] for k in ks),
                                       self.dims[ks[0]].value))
            described.append((tuple(-1 if d in dims else s for d, s in enumerate(spec.shape)), spec.dtype,
                              spec.device))
        padded = [(p, n, b) for p, n, b in zip(self.dims, sizes, buckets) if n != b]
        return Plan(key=(buckets, tuple(described)), sizes=sizes, buckets=buckets, inputs=tuple(inputs),
                    cuts=tuple((p.out_dim, n, b) for p, n, b in padded if p.out_dim is not None),
                    check=tuple(p for p, _, _ in padded if p.exact is None))

    # -- sizes ---------------------------------------------------------------------------------------------
    def bucket_for(self, sizes: Sequence[int]) -> tuple[int, ...] | None:
        """The buckets that serve these sizes (one per padded dim), or None when one is above its largest.

        Raises:
            BadInputError: not one size per padded dim.
        """
        if len(sizes) != len(self.dims):
            raise BadInputError(f"bucket_for takes one size per padded dim ({len(self.dims)}: "
                                f"{', '.join(p.name for p in self.dims)}), got {tuple(sizes)}")
        found = tuple(t.bucket_for(n) for t, n in zip(self.tables, sizes))
        return None if None in found else found  # type: ignore[return-value]

    def warmup_order(self, sizes: Iterable[Any] | None = None) -> list[tuple[int, ...]]:
        """The bucket combinations to capture ahead, largest first (smaller graphs then reuse the shared
        pool's blocks): `sizes` as sizes of the first dim or tuples with one size per dim, default every
        combination of buckets.

        Raises:
            BadInputError: a combination without one size per dim, or with a size that is not a bucket.
        """
        if sizes is None:
            combos = list(itertools.product(*(t.buckets for t in self.tables)))
        else:
            combos = [tuple(s) if isinstance(s, (tuple, list)) else (s,) for s in sizes]
        for combo in combos:
            if len(combo) != len(self.dims):
                raise BadInputError(f"warm-up sizes need one size per padded dim ({len(self.dims)}), got {combo}")
            if self.bucket_for(combo) != combo:
                raise BadInputError(f"warm-up size {combo} is not a bucket of this cache "
                                    f"({[list(t.buckets) for t in self.tables]}): warm up buckets only")
        return sorted(combos, key=lambda c: [-x for x in c])

    def describe(self) -> str:
        """The buckets of every padded dim, e.g. "batch [1, 2, 4]; seq [16, 32]"."""
        return "; ".join(f"{p.name} {list(t.buckets)}" for p, t in zip(self.dims, self.tables))


def _hashable(value: Any) -> Any:
    """A plain argument as it goes into a key: itself, or its repr when it cannot be hashed (a list, a dict)."""
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


__all__ = ["ABOVE", "AUTOGRAD", "CachePlanner", "Fallback", "NOT_A_BUCKET", "PadInput", "Plan", "TensorSpec"]
