"""Padding or uninitialized memory that reaches the real rows: a GraphCache's graph replayed with the padding rows
holding other values; the real rows must not change.

Torch, no CUDA (the cache's eager backend runs it on CPU). For a draw that the cache pads, the audit pads it twice
itself, once with the cache's pad value and once with random values of the input's kind (token ids stay in the range
the input holds), runs the bucket's graph on each, and compares the outputs cut back to the real rows.
"""
from __future__ import annotations

from typing import Any

import torch

from graphlab import present
from graphlab.audit.compare import first_difference, snapshot
from graphlab.audit.findings import Finding, Location
from graphlab.audit.targets import CacheTarget, Draw
from graphlab.cache.padding import pad_tensor, padded_shape, region
from graphlab.capture.tensors import map_tensors, random_like


def _sizes(target: CacheTarget, args: tuple[Any, ...]) -> tuple[int, ...] | None:
    """The draw's size along each padded dim of the cache (None when an input lacks one)."""
    planner, sizes = target.cache.planner, {}
    for i, x in enumerate(args):
        if isinstance(x, torch.Tensor):
            for k in planner.pads_of(i, x.ndim):
                sizes.setdefault(k, int(x.shape[target.cache.dims[k].dim]))
    if len(sizes) != len(target.cache.dims):
        return None
    return tuple(sizes[k] for k in range(len(target.cache.dims)))


def _padded(target: CacheTarget, args: tuple[Any, ...], buckets: tuple[int, ...], other: bool, seed: int) -> tuple:
    planner, out = target.cache.planner, []
    for i, x in enumerate(args):
        if not isinstance(x, torch.Tensor) or not planner.pads_of(i, x.ndim):
            out.append(x)
            continue
        ks = planner.pads_of(i, x.ndim)
        dims = [target.cache.dims[k].dim for k in ks]
        wanted = [buckets[k] for k in ks]
        padded = pad_tensor(x, dims, wanted, target.cache.dims[ks[0]].value)
        if other:
            noise = random_like(x.new_empty(padded_shape(x.shape, dims, wanted)) if x.dtype.is_floating_point
                                else padded, seed)
            if x.dtype.is_floating_point:
                noise = noise * 1e3
            noise[region(x.ndim, dims, [x.shape[d] for d in dims])] = x
            padded = noise
        out.append(padded)
    return tuple(out)


def _cut(target: CacheTarget, tree: Any, sizes: tuple[int, ...], buckets: tuple[int, ...]) -> Any:
    def cut(t: torch.Tensor) -> torch.Tensor:
        for k, pad in enumerate(target.cache.dims):
            if pad.out_dim is not None and t.ndim > pad.out_dim and t.shape[pad.out_dim] == buckets[k]:
                t = t.narrow(pad.out_dim, 0, sizes[k])
        return t
    return map_tensors(cut, tree)


def check_padding(target: CacheTarget, draw: Draw) -> tuple[Finding | None, str]:
    """(the finding or None, what was tried in words; "" when this draw pads nothing)."""
    args, _ = draw
    sizes = _sizes(target, args)
    if sizes is None:
        return None, ""
    found = target.cache.bucket_for(*sizes)
    if found is None:
        return None, ""
    buckets = found if isinstance(found, tuple) else (found,)
    if tuple(buckets) == sizes:
        return None, ""
    target.cache(*args)  # the bucket's graph exists after a call
    graph = target.cache.graph_for(*sizes)
    plain = _cut(target, snapshot(graph(*_padded(target, args, buckets, False, 0))), sizes, buckets)
    other = _cut(target, snapshot(graph(*_padded(target, args, buckets, True, 1))), sizes, buckets)
    tried = (f"padding rows filled with other values at size {' x '.join(map(str, sizes))} (bucket "
             f"{' x '.join(map(str, buckets))})")
    difference = first_difference(other, plain)
    if difference is None:
        return None, tried
    return Finding("padding_reaches_rows",
                   f"{target.label}: the real rows of output {difference.path} change (by up to "
                   f"{present.error(difference.max_abs_err)}) when the padding rows hold other values, at size "
                   f"{' x '.join(map(str, sizes))} in bucket {' x '.join(map(str, buckets))}",
                   Location(output=difference.path),
                   evidence={"sizes": list(sizes), "buckets": list(buckets), "max_abs_err": difference.max_abs_err}), \
        tried


__all__ = ["check_padding"]
