"""What the GPU worker calls on a batch: the model eagerly, or the graph cache.

A runner is any callable `runner(*device_inputs) -> scores` with optional methods the worker uses
when present: `bucket_for(rows)` (the padded size a batch runs at, for the statistics), `warm_up()`
(run once on the worker's thread and stream before the service takes traffic) and
`from_host(*pinned_inputs)` (the batch as the worker staged it in pinned host memory: the graph cache
copies it straight into its static inputs, one device copy fewer than moving it first). The
worker takes a runner by injection, so CPU tests can hand it a stand-in.

- `EagerRunner`: the module at the batch's exact size (no padding, nothing captured). Warm-up calls
  it at every power-of-two size so that eager gets the same lazy initialisation (cuBLAS handles,
  allocator blocks) the graphs get from capture: a fair comparison.
- `make_cache_runner`: `gl.GraphCache` over the buckets of the config, every bucket captured and
  its padding checked before traffic (largest first, so the shared pool's blocks are reused by the
  smaller ones). So no capture ever happens while requests are served.

    >>> from graphlab.serve.runners import EagerRunner
    >>> import torch
    >>> runner = EagerRunner(torch.nn.Linear(4, 2), example_inputs=lambda n: (torch.randn(n, 4),), max_batch_size=8)
    >>> runner(torch.randn(3, 4)).shape, runner.bucket_for(3)
    (torch.Size([3, 2]), 3)
"""
from __future__ import annotations

from typing import Any, Callable

import torch

from graphlab.cache.buckets import bucket_list, pow2_buckets
from graphlab.cache.graph_cache import GraphCache

ExampleInputs = Callable[[int], tuple[torch.Tensor, ...]]


class EagerRunner:
    """Call the module at the batch's own size; nothing is padded or captured."""

    def __init__(self, module: torch.nn.Module, example_inputs: ExampleInputs, max_batch_size: int):
        self.module = module
        self.example_inputs = example_inputs
        self.max_batch_size = max_batch_size

    def __call__(self, *inputs: torch.Tensor) -> torch.Tensor:
        return self.module(*inputs)

    def bucket_for(self, rows: int) -> int:
        return rows

    def warm_up(self) -> None:
        for rows in reversed(pow2_buckets(self.max_batch_size)):
            for _ in range(2):
                self.module(*self.example_inputs(rows))

    def describe(self) -> dict[str, Any]:
        return {"runner": "eager"}


class CacheRunner:
    """Call a `gl.GraphCache`; `warm_up` captures every bucket (largest first) and checks its padding."""

    def __init__(self, cache: GraphCache, example_inputs: ExampleInputs, buckets: list[int]):
        self.cache = cache
        self.example_inputs = example_inputs
        self.bucket_sizes = sorted(buckets)

    def __call__(self, *inputs: torch.Tensor) -> torch.Tensor:
        return self.cache(*inputs)

    def from_host(self, *inputs: torch.Tensor) -> torch.Tensor:
        """The batch staged in pinned host memory: copied straight into the graph's static inputs (the worker's
        launch; `GraphCache.from_host`)."""
        return self.cache.from_host(*inputs)

    def bucket_for(self, rows: int) -> int:
        bucket = self.cache.bucket_for(rows)
        return rows if bucket is None else int(bucket)  # None: above the largest bucket, the eager fallback

    def warm_up(self) -> None:
        self.cache.warm_up(*self.example_inputs(1), progress=False)
        # the cache checks a bucket's padding (padded replay vs eager) the first time it pads: do it now,
        # not on the first request that pads
        previous = 0
        for bucket in self.bucket_sizes:
            if previous + 1 < bucket:
                self.cache(*self.example_inputs(previous + 1))
            previous = bucket

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"runner": "graph_cache", "buckets": self.bucket_sizes}
        stats = self.cache.stats()
        for key in ("graphs", "hits", "captures", "capture_ms", "pool_bytes", "exec_bytes", "fallbacks"):
            if hasattr(stats, key):
                value = getattr(stats, key)
                out[key] = round(value, 3) if isinstance(value, float) else value
        return out


def make_cache_runner(module: torch.nn.Module, example_inputs: ExampleInputs, *, max_batch_size: int, buckets: Any,
                      device: torch.device, name: str) -> CacheRunner:
    """A `CacheRunner` over `gl.GraphCache` (backend "eager" on a CPU device, so tests run the same code).

    copy_outputs=False: the worker copies each batch's scores to the host on the same stream right after
    the replay, so the next replay cannot overwrite them first; a clone would be one more kernel and buffer.
    """
    sizes = bucket_list(buckets, max_batch_size)
    backend = "eager" if torch.device(device).type == "cpu" else None
    cache = GraphCache(module, buckets=sizes, max_size=max_batch_size, strict=False, copy_outputs=False, device=device,
                       name=name, backend=backend)
    return CacheRunner(cache, example_inputs, sizes)


__all__ = ["CacheRunner", "EagerRunner", "make_cache_runner"]
