"""One KV cache for every bucket: each bucket's `StaticCache` is a view of the first B rows of the largest one's.

    >>> big = make_cache(model, 256, 1024)               # the largest bucket's cache: the only KV memory
    >>> small = row_cache(model, big, 8)                 # keys/values are big's rows [:8], views, no copy
    >>> distinct_kv_bytes([big, small]) == kv_cache_bytes(big)
    True

Serving engines hold one max-size cache that every captured graph works on (SGLang's CUDA-graph runner slices
its static buffers `[:bs]`); per-bucket caches would hold about twice the largest one's memory over buckets 1 to
256 in powers of two (32 GiB at 8B, batch 256, 1,024 tokens). transformers' `StaticLayer` keeps `keys` and
`values` as contiguous (batch, heads, len, dim) tensors, so the first B rows are one contiguous block: a view
`keys[:B]` is itself contiguous, starts at the same address, and an in-place write into it (`index_copy_` at the
cache position) writes only those rows. Each bucket's cache keeps its own position counters
(`cumulative_length`): the decode step sets them before every call.

Feature-detected: the layer's `keys`/`values` attributes, their 4 dimensions, batch rows and contiguity
(`kv_layout`); a transformers that keeps them otherwise gets an `UnsupportedError` naming what it found. The
view cache's layers are initialised by the layer's own `lazy_initialization` (so every attribute this
transformers sets is set), then their keys and values are swapped for the views; the B-row tensors it made are
freed at once (one layer's worth at a time).

One batch at a time lives in the shared cache: a bucket's prefill and replays write rows 0..B-1, which are also
the first rows of every larger bucket.
"""
from __future__ import annotations

from typing import Any, Iterable

import torch
from transformers import StaticCache

from graphlab.decode.models import cache_layers
from graphlab.errors import BadInputError, UnsupportedError

#: the attributes of a static cache layer that hold its keys and values
KV_ATTRIBUTES = ("keys", "values")


def _describe(value: Any) -> str:
    if not isinstance(value, torch.Tensor):
        return type(value).__name__
    return f"tensor {tuple(value.shape)}{'' if value.is_contiguous() else ' (not contiguous)'}"


def kv_layout(cache: Any) -> tuple[int, list[tuple[int, int, int]]]:
    """(batch rows, per layer (heads, len, dim)) of an initialised static cache, checked to be what sharing needs:
    every layer's `keys` and `values` contiguous 4-D (batch, heads, len, dim) tensors with the same batch rows.

    Raises:
        UnsupportedError: the layout is another (names what was found: attributes, shapes, contiguity).
    """
    rows: set[int] = set()
    shapes = []
    for i, layer in enumerate(cache_layers(cache)):
        found = {name: getattr(layer, name, None) for name in KV_ATTRIBUTES}
        ok = all(isinstance(t, torch.Tensor) and t.dim() == 4 and t.is_contiguous() for t in found.values())
        if not ok:
            tensors = sorted(k for k, v in vars(layer).items() if isinstance(v, torch.Tensor))
            raise UnsupportedError(
                f"sharing one KV cache across buckets needs each StaticLayer's keys and values as contiguous "
                f"(batch, heads, len, dim) tensors; layer {i} ({type(layer).__name__}) has "
                + ", ".join(f"{k}: {_describe(v)}" for k, v in found.items())
                + f" (its tensors: {', '.join(tensors) or 'none'}). Use DecodeGraphs(..., shared_cache=False)")
        rows.update(int(t.shape[0]) for t in found.values())
        shapes.append(tuple(int(d) for d in found["keys"].shape[1:]))
    if len(rows) != 1:
        raise UnsupportedError(f"the cache's layers hold different batch rows {sorted(rows)}: cannot share its rows")
    return rows.pop(), shapes


def row_cache(model: Any, shared: Any, rows: int) -> Any:
    """A `StaticCache` over the first `rows` rows of `shared` (an initialised static cache): its keys and values
    are views of `shared`'s (no copy), its position counters its own.

    Raises:
        BadInputError: `rows` is not in 1..the shared cache's rows.
        UnsupportedError: `shared`'s layout is not one that can be sliced (`kv_layout`).
    """
    total, _ = kv_layout(shared)
    if not 1 <= rows <= total:
        raise BadInputError(f"a view of the shared cache takes 1 to {total} rows, got {rows}")
    big_layers = cache_layers(shared)
    cache = StaticCache(config=model.config, max_cache_len=big_layers[0].max_cache_len)
    mine = cache_layers(cache)
    if len(mine) != len(big_layers):
        raise UnsupportedError(f"a new StaticCache of this model has {len(mine)} layers, the shared one "
                               f"{len(big_layers)}: cannot share its rows")
    with torch.no_grad():
        for layer, big in zip(mine, big_layers):
            keys, values = big.keys[:rows], big.values[:rows]
            layer.lazy_initialization(keys, values)  # every attribute this transformers sets (and B-row tensors)
            for name, view in zip(KV_ATTRIBUTES, (keys, values)):
                made = getattr(layer, name)
                if made.shape != view.shape or made.dtype != view.dtype or made.device != view.device:
                    raise UnsupportedError(f"this transformers' StaticLayer made {name} {tuple(made.shape)} "
                                           f"{made.dtype} for rows {tuple(view.shape)} {view.dtype}: its layout is "
                                           "not (batch, heads, len, dim); use DecodeGraphs(..., shared_cache=False)")
                setattr(layer, name, view)  # the tensor it made is freed here
                _static_address(view)
    return cache


def _static_address(t: Any) -> None:
    """Tag a view as a fixed address for torch.compile, as `StaticLayer.lazy_initialization` tags its own."""
    mark = getattr(getattr(torch, "_dynamo", None), "mark_static_address", None)
    if callable(mark):
        mark(t)


def distinct_kv_bytes(caches: Iterable[Any]) -> int:
    """Bytes of KV memory the caches hold together: each storage counted once, however many views share it."""
    seen: dict[tuple[Any, int], int] = {}
    for cache in caches:
        for layer in cache_layers(cache):
            for name in KV_ATTRIBUTES:
                t = getattr(layer, name, None)
                if isinstance(t, torch.Tensor):
                    storage = t.untyped_storage()
                    seen[(t.device, storage.data_ptr())] = storage.nbytes()
    return int(sum(seen.values()))


def shares_rows(small: Any, big: Any) -> bool:
    """True when every layer of `small` keeps its keys and values in `big`'s storage, from its first row."""
    pairs = zip(cache_layers(small), cache_layers(big))
    return all(getattr(s, n).untyped_storage().data_ptr() == getattr(b, n).untyped_storage().data_ptr()
               and getattr(s, n).data_ptr() == getattr(b, n).data_ptr() for s, b in pairs for n in KV_ATTRIBUTES)


__all__ = ["KV_ATTRIBUTES", "distinct_kv_bytes", "kv_layout", "row_cache", "shares_rows"]
