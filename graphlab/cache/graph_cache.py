"""A graph cache for dynamic shapes: buckets, padding, one shared pool, eager fallback, LRU limits.

    >>> cache = gl.GraphCache(model, buckets="pow2", max_size=64)     # batch dim 0 of every input
    >>> y = cache(x)                   # any batch size: pad to its bucket, replay, slice back
    >>> cache.warmup(x)                # or capture every bucket ahead, largest first (tqdm bar)
    >>> print(cache.stats())           # hits, captures, fallbacks, pad waste, pool memory
    >>> gl.render(cache.graph_for(8))  # every cached graph can be drawn, inspected, diffed

A sequence dimension too (a causal decoder padded on the right):
    >>> cache = gl.GraphCache(gpt, dims=[gl.Pad("batch", dim=0, buckets=[1, 2, 4, 8], max_size=8),
    ...                                  gl.Pad("seq", dim=1, buckets=[16, 32, 64], max_size=64, out_dim=1)])

How it works, and what it promises:
- **Key**: everything that makes a graph invalid: the bucketed shapes, the other dims, dtypes, devices,
  non-tensor arguments, and the grad mode (`torch.is_grad_enabled`, `torch.is_inference_mode_enabled`).
- **Padding never changes an answer silently.** A bucket that pads is checked when it is captured
  (padded replay vs eager on the real rows); a mismatch raises `PaddingError` naming the dimension and
  the fix, and nothing is returned. `Pad(exact=True)` skips the check; `Pad(exact=False)` never pads.
- **Eager fallback** above the largest bucket, warned once and counted (`strict=True`: `CacheMissError`),
  and when autograd would need the outputs (a graph replays no autograd history).
- **One shared pool** (`pool="shared"`, default) for all buckets, captured largest first by `warmup`;
  `pool="private"` gives each graph its own pool (eviction then returns memory to the device).
- **Limits**: `max_graphs` and `memory_budget_bytes` evict the least recently used graph.
- **Thread-safe**: one lock per cache; no key is captured twice.
- **Outputs**: a clone of the real rows by default (`copy_outputs=True`). `copy_outputs=False` returns
  views of the graph's static outputs, valid until the next call of this cache (any bucket, since the
  pool is shared): faster, for serving loops that consume each result at once.

Layer 2: torch is imported inside functions.
"""
from __future__ import annotations

import threading
import warnings
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from graphlab.cache.buckets import Pad
from graphlab.cache.stats import BucketCounts, CacheStats
from graphlab.errors import CacheMissError, GraphlabError, PaddingError
from graphlab.cache.backends import make_backend
from graphlab.cache.padding import check_padding_exact, example_at, region
from graphlab.capture.tensors import grad_context, is_tensor, map_tensors
from graphlab.progress import progress_bar

POOLS = ("shared", "private")


@dataclass
class CacheEntry:
    """One cached graph: its buckets, the inputs it pads, and what was last written into its padding."""

    key: tuple[Any, ...]
    buckets: tuple[int, ...]
    graph: Any
    label: str
    last_sizes: tuple[int, ...] = ()
    last_route: Any = None
    #: padded dims whose exactness was checked on this graph, and the error if a check failed
    checked: set[str] = field(default_factory=set)
    padding_error: PaddingError | None = None


@dataclass
class Route:
    """How one exact input signature is served, worked out on its first call: the views of the static
    inputs to copy into, the views of the outputs to return, and the counters to bump. A hit then costs a
    dict look-up, one `copy_` per input, the replay and (with copy_outputs) one clone."""

    entry: CacheEntry
    sizes: tuple[int, ...]
    targets: list[tuple[int, Any]]
    outputs: Any
    label: str
    rows: int
    padded_rows: int
    fill: list[tuple[Any, float]]
    single_output: bool
    calls: int = 0


class GraphCache:
    """Callable like `model`: serves any size by padding to a captured bucket (see the module docstring).

    Args:
        model: an nn.Module or function of positional tensor (and plain Python) arguments.
        buckets: the batch buckets (dim 0): "pow2", "vllm", "every", a list of sizes, or a
            `BucketAdvice`. Ignored when `dims` is given.
        max_size: the largest batch size for a named policy.
        dims: the dimensions that may vary, as `gl.Pad(...)`; default: `[Pad("batch", dim=0)]`.
        strict: raise `CacheMissError` instead of running eagerly above the largest bucket.
        copy_outputs: return clones (safe) instead of views of the static outputs (fast).
        pool: "shared" (one pool for every graph), "private", or a pool to share (a CapturedGraph or
            `torch.cuda.graph_pool_handle()`).
        max_graphs: most graphs held; the least recently used is evicted beyond it.
        memory_budget_bytes: most pool + executable-graph bytes held (as measured at each capture).
        device: where graphs live (default: the first call's inputs' device).
        warmup: eager runs before each capture.
        check_padding: check each padded bucket against eager when it is captured.
        name: for messages, stats and graph names (default: the model's class name).
        backend: "cuda" (default), "eager" (no GPU: the same bookkeeping with eager runs), or a custom one.
    """

    def __init__(self, model: Any, buckets: Any = "pow2", *, max_size: int | None = 64,
                 dims: Sequence[Pad] | None = None, strict: bool = False, copy_outputs: bool = True,
                 pool: Any = "shared", max_graphs: int | None = None, memory_budget_bytes: int | None = None,
                 device: Any = None, warmup: int = 3, check_padding: bool = True, name: str | None = None,
                 backend: Any = None):
        self.model = model
        self.dims: tuple[Pad, ...] = tuple(dims) if dims is not None else (
            Pad("batch", dim=0, buckets=buckets, max_size=max_size, out_dim=0),)
        if not self.dims:
            raise GraphlabError("GraphCache needs at least one dimension to pad (dims=[gl.Pad(...)])")
        if len({p.dim for p in self.dims}) != len(self.dims):
            raise GraphlabError("each Pad must name a different input dimension")
        self.tables = tuple(p.table() for p in self.dims)
        if max_graphs is not None and max_graphs < 1:
            raise GraphlabError(f"max_graphs must be at least 1, got {max_graphs}")
        if memory_budget_bytes is not None and memory_budget_bytes <= 0:
            raise GraphlabError(f"memory_budget_bytes must be positive, got {memory_budget_bytes}")
        if isinstance(pool, str) and pool not in POOLS:
            raise GraphlabError(f"pool must be one of {', '.join(POOLS)} or a pool to share, got {pool!r}")
        self.strict = strict
        self.copy_outputs = copy_outputs
        self.pool_mode = pool
        self.max_graphs = max_graphs
        self.memory_budget_bytes = memory_budget_bytes
        self.device = device
        self.warmup_runs = warmup
        self.check_padding = check_padding
        self.name = name or getattr(model, "__name__", None) or type(model).__name__
        self.backend = make_backend(backend)
        self._entries: OrderedDict[tuple[Any, ...], CacheEntry] = OrderedDict()
        self._routes: dict[tuple[Any, ...], Route] = {}
        self._pools: dict[Any, Any] = {}
        self._lock = threading.Lock()  # not re-entrant: nothing under it calls back into the cache
        self._stats = CacheStats()
        self._warned: set[str] = set()
        import torch

        self._torch, self._tensor_type, self._grad_enabled = torch, torch.Tensor, torch.is_grad_enabled
        self._needs_grad = any(getattr(p, "requires_grad", False) for p in
                               (model.parameters() if hasattr(model, "parameters") else ()))

    # -- the call ------------------------------------------------------------------------------------------
    def __call__(self, *inputs: Any) -> Any:
        with self._lock:
            exact = self._exact_key(inputs, self._tensor_type)
            try:
                route = self._routes.get(exact)
            except TypeError:  # an unhashable plain argument: no fast route, the slow path keys on its repr
                exact = route = None
            if route is not None and not (self._grad_enabled() and self._autograd_needed(inputs)):
                self._stats.hits += 1
                self._entries.move_to_end(route.entry.key)
                return self._replay(route, inputs)
            return self._call_slow(inputs, exact, self._torch)

    @staticmethod
    def _exact_key(inputs: tuple[Any, ...], tensor: type) -> Any:
        """The exact signature of a call: shapes, dtypes, devices and plain arguments (hot path: keep it lean)."""
        if len(inputs) == 1 and isinstance(inputs[0], tensor):
            x = inputs[0]
            return (x.shape, x.dtype, x.get_device())
        return tuple((x.shape, x.dtype, x.get_device()) if isinstance(x, tensor) else ("arg", x) for x in inputs)

    def _autograd_needed(self, inputs: tuple[Any, ...]) -> bool:
        return self._needs_grad or any(is_tensor(x) and x.requires_grad for x in inputs)

    def _call_slow(self, inputs: tuple[Any, ...], exact: tuple[Any, ...] | None, torch: Any) -> Any:
        """First call of a signature: decide fallback or graph, capture if needed, check padding, make a route."""
        sizes, reason = self._sizes(inputs)
        if reason is None and torch.is_grad_enabled() and self._autograd_needed(inputs):
            reason = "autograd is on (call under torch.no_grad() or torch.inference_mode() to use graphs)"
        if reason is not None:
            return self._fallback(inputs, reason)
        buckets = tuple(table.bucket_for(n) for table, n in zip(self.tables, sizes))
        if None in buckets:
            over = [f"{p.describe()} size {n} > largest bucket {t.largest}"
                    for p, t, n, b in zip(self.dims, self.tables, sizes, buckets) if b is None]
            if self.strict:
                raise CacheMissError(f"GraphCache {self.name!r}: {'; '.join(over)}: add a bucket for it, or "
                                     "strict=False to run such calls eagerly")
            return self._fallback(inputs, "above the largest bucket")
        if any(p.exact is False and n != b for p, n, b in zip(self.dims, sizes, buckets)):
            return self._fallback(inputs, "size is not a bucket of a dim that must not be padded (exact=False)")
        key = self._key(inputs, buckets)
        entry = self._entries.get(key)
        if entry is None:
            entry = self._capture(key, buckets, inputs, torch)
        else:
            self._stats.hits += 1
            self._entries.move_to_end(key)
        if sizes != buckets and self.check_padding:
            self._check_padding(entry, inputs, sizes, torch)
        route = self._route(entry, inputs, sizes)
        if exact is not None:
            self._routes[exact] = route
        return self._replay(route, inputs)

    def _sizes(self, inputs: tuple[Any, ...]) -> tuple[tuple[int, ...], str | None]:
        """The real size along each padded dim (all padded inputs must agree), or a fallback reason."""
        sizes = []
        for pad in self.dims:
            found = None
            for i, x in enumerate(inputs):
                if not is_tensor(x) or x.ndim <= pad.dim or (pad.inputs is not None and i not in pad.inputs):
                    continue
                n = x.shape[pad.dim]
                if found is None:
                    found = n
                elif n != found:
                    raise GraphlabError(f"GraphCache {self.name!r}: inputs disagree on {pad.describe()}: {found} vs "
                                        f"{n} (input {i}); pad only the inputs that share it (Pad(inputs=(...)))")
            if found is None:
                return (), f"no input has {pad.describe()}"
            if found < 1:
                return (), f"{pad.describe()} is empty"
            sizes.append(int(found))
        return tuple(sizes), None

    def _key(self, inputs: tuple[Any, ...], buckets: tuple[int, ...]) -> tuple[Any, ...]:
        """Everything that makes a graph invalid: bucketed sizes, other dims, dtypes, devices, plain arguments.

        The grad mode is decided before the key: a call where autograd would record never uses a graph
        (it falls back), and every graph is captured under no_grad, so its outputs are plain tensors
        whether the caller is in no_grad, inference_mode, or grad mode with nothing requiring grad.
        """
        signature = []
        for i, x in enumerate(inputs):
            if is_tensor(x):
                dims = {pad.dim for pad in self.dims if self._pads(pad, i, x)}
                shape = tuple(-1 if d in dims else s for d, s in enumerate(x.shape))
                signature.append((shape, x.dtype, x.get_device()))
            else:
                try:
                    hash(x)
                    signature.append(("arg", x))
                except TypeError:
                    signature.append(("arg", repr(x)))
        return (buckets, tuple(signature))

    @staticmethod
    def _pads(pad: Pad, i: int, x: Any) -> bool:
        return x.ndim > pad.dim and (pad.inputs is None or i in pad.inputs)

    # -- capture ---------------------------------------------------------------------------------------------
    def _capture(self, key: tuple[Any, ...], buckets: tuple[int, ...], inputs: tuple[Any, ...],
                 torch: Any) -> CacheEntry:
        with torch.inference_mode(False), torch.no_grad():  # static buffers must be normal tensors
            return self._capture_now(key, buckets, inputs, torch)

    def _capture_now(self, key: tuple[Any, ...], buckets: tuple[int, ...], inputs: tuple[Any, ...],
                     torch: Any) -> CacheEntry:
        statics = []
        for i, x in enumerate(inputs):
            if not is_tensor(x):
                statics.append(x)
                continue
            pads = [p for p in self.dims if self._pads(p, i, x)]
            shape = list(x.shape)
            for p, b in zip(self.dims, buckets):
                if p in pads:
                    shape[p.dim] = b
            static = torch.full(shape, pads[0].value if pads else 0, dtype=x.dtype, device=x.device)
            static[region(x.ndim, [p.dim for p in pads], [x.shape[p.dim] for p in pads])].copy_(x)
            statics.append(static)
        label = "x".join(str(b) for b in buckets)
        device = self.device if self.device is not None else next((x.device for x in inputs if is_tensor(x)), None)
        graph = self.backend.capture(self.model, tuple(statics), pool=self._pool_for(device), device=device,
                                     warmup=self.warmup_runs, name=f"{self.name} {label}", grad_mode="no_grad")
        entry = CacheEntry(key, buckets, graph, label, last_sizes=buckets)
        self._stats.captures += 1
        self._stats.capture_ms += graph.cost.capture_ms
        self._entries[key] = entry
        self._enforce_limits(keep=key)
        return entry

    def _check_padding(self, entry: CacheEntry, inputs: tuple[Any, ...], sizes: tuple[int, ...], torch: Any) -> None:
        """Check once per graph and padded dim that padding is exact (padded replay vs eager on the real rows)."""
        padded = [p for p, n, b in zip(self.dims, sizes, entry.buckets) if n != b and p.exact is None]
        if entry.padding_error is not None and any(p.name in entry.padding_error.dim_name.split(",") for p in padded):
            raise entry.padding_error
        todo = [p for p in padded if p.name not in entry.checked]
        if not todo:
            return
        route = self._route(entry, inputs, sizes)  # a throwaway route: a check is not a call
        self._replay(route, inputs)
        replayed = map_tensors(lambda t: t.clone(), route.outputs)  # the real rows, whatever copy_outputs says
        with torch.no_grad():
            eager = self.model(*inputs)
        try:
            check_padding_exact(torch, replayed, eager, self.dims, todo,
                                f"GraphCache {self.name!r}, bucket {entry.label} for size " + "x".join(map(str, sizes)))
        except PaddingError as err:
            entry.padding_error = err
            raise
        entry.checked.update(p.name for p in todo)

    def _pool_for(self, device: Any) -> Any:
        if self.pool_mode == "private":
            return None
        if self.pool_mode != "shared":
            return self.pool_mode  # a pool given by the caller
        slot = str(device)
        if slot not in self._pools:
            self._pools[slot] = self.backend.new_pool(device)
        return self._pools[slot]

    def _enforce_limits(self, keep: tuple[Any, ...]) -> None:
        while self.max_graphs is not None and len(self._entries) > self.max_graphs:
            self._evict_oldest(keep)
        while (self.memory_budget_bytes is not None and len(self._entries) > 1
               and self._held_bytes() > self.memory_budget_bytes):
            self._evict_oldest(keep)

    def _held_bytes(self) -> int:
        return sum(e.graph.cost.pool_bytes + (e.graph.cost.exec_bytes or 0) for e in self._entries.values())

    def _evict_oldest(self, keep: tuple[Any, ...]) -> None:
        for key in self._entries:
            if key != keep:
                entry = self._entries.pop(key)
                self._retire(r for r in self._routes.values() if r.entry is entry)
                self._routes = {k: r for k, r in self._routes.items() if r.entry is not entry}
                entry.graph.reset()
                self._stats.evictions += 1
                self._release_memory()
                return

    def _retire(self, routes: Iterable[Route]) -> None:
        """Fold the counters of routes that go away into the per-bucket totals."""
        for route in routes:
            self._stats.per_bucket.setdefault(route.label, BucketCounts()).add_many(
                route.calls, route.rows, route.padded_rows)
            route.calls = 0

    def _release_memory(self) -> None:
        if self.backend.name == "cuda":
            import torch

            torch.cuda.empty_cache()

    # -- replay ------------------------------------------------------------------------------------------------
    def _route(self, entry: CacheEntry, inputs: tuple[Any, ...], sizes: tuple[int, ...]) -> Route:
        statics = entry.graph.inputs
        targets, fill = [], []
        for i, x in enumerate(inputs):
            if not is_tensor(x):
                continue
            pads = [p for p in self.dims if self._pads(p, i, x)]
            static = statics[i]
            if sizes == entry.buckets or not pads:
                targets.append((i, static))
                continue
            targets.append((i, static[region(x.ndim, [p.dim for p in pads], [x.shape[p.dim] for p in pads])]))
            fill.append((static, pads[0].value))
        rows = total = 1
        for n, b in zip(sizes, entry.buckets):
            rows, total = rows * n, total * b
        outputs = self._views(entry.graph.outputs, entry.buckets, sizes)
        return Route(entry, sizes, targets, outputs, entry.label, rows, total - rows, fill, is_tensor(outputs))

    def _replay(self, route: Route, inputs: tuple[Any, ...]) -> Any:
        entry = route.entry
        if entry.last_route is not route:
            self._switch_route(entry, route)
        for i, target in route.targets:
            target.copy_(inputs[i])
        entry.graph.replay()
        route.calls += 1
        if not self.copy_outputs:
            return route.outputs
        if route.single_output:
            return route.outputs.clone()
        return map_tensors(lambda t: t.clone(), route.outputs)

    @staticmethod
    def _switch_route(entry: CacheEntry, route: Route) -> None:
        """Keep the padding at the pad value whatever a larger call left there (only when sizes shrink)."""
        if any(n < last for n, last in zip(route.sizes, entry.last_sizes)):
            for static, value in route.fill:
                static.fill_(value)
        entry.last_route, entry.last_sizes = route, route.sizes

    def _views(self, outputs: Any, buckets: tuple[int, ...], sizes: tuple[int, ...]) -> Any:
        """The outputs sliced back to the real sizes, as views of the static outputs (made once per route)."""
        def cut(t: Any) -> Any:
            for pad, b, n in zip(self.dims, buckets, sizes):
                d = pad.out_dim
                if d is not None and n != b and t.ndim > d and t.shape[d] == b:
                    t = t.narrow(d, 0, n)
            return t

        return map_tensors(cut, outputs)

    def _fallback(self, inputs: tuple[Any, ...], reason: str) -> Any:
        self._stats.fallbacks += 1
        self._stats.fallback_reasons[reason] = self._stats.fallback_reasons.get(reason, 0) + 1
        if reason not in self._warned:
            self._warned.add(reason)
            warnings.warn(f"GraphCache {self.name!r}: {reason}; running eagerly (counted in "
                          "cache.stats().fallbacks; strict=True makes sizes above the largest bucket an error)",
                          stacklevel=3)
        return self.model(*inputs)

    # -- ahead of time ---------------------------------------------------------------------------------------------
    def warmup(self, *example_inputs: Any, sizes: Iterable[Any] | None = None, progress: bool = True) -> CacheStats:
        """Capture graphs ahead of use, largest first, into the shared pool.

        Args:
            example_inputs: inputs shaped like a real call (any size along the padded dims); random inputs
                of each bucket's shape are made from them.
            sizes: which buckets to capture: sizes of the first dim, or tuples with one size per dim
                (default: every combination of buckets).
            progress: a tqdm bar.
        """
        import itertools

        import torch

        if not example_inputs:
            raise GraphlabError("warmup needs example inputs shaped like a real call, e.g. cache.warmup(x)")
        if sizes is None:
            combos = list(itertools.product(*(t.buckets for t in self.tables)))
        else:
            combos = [tuple(s) if isinstance(s, (tuple, list)) else (s,) for s in sizes]
            for combo in combos:
                if len(combo) != len(self.dims):
                    raise GraphlabError(f"warmup sizes need one size per padded dim ({len(self.dims)}), got {combo}")
        combos.sort(key=lambda c: [-x for x in c])  # largest first: smaller graphs reuse the pool's blocks
        bar = progress_bar(len(combos), f"Capturing graphs ({self.name})", unit="graph", show=progress)
        with self._lock, grad_context("no_grad"):
            for seed, combo in enumerate(combos):
                buckets = tuple(t.bucket_for(n) for t, n in zip(self.tables, combo))
                if None in buckets or buckets != tuple(combo):
                    raise GraphlabError(f"warmup size {combo} is not a bucket of this cache "
                                        f"({[list(t.buckets) for t in self.tables]})")
                inputs = tuple(self._example(x, i, combo, seed) for i, x in enumerate(example_inputs))
                key = self._key(inputs, buckets)
                if key not in self._entries:
                    self._capture(key, buckets, inputs, torch)
                if bar is not None:
                    bar.update(1)
            if bar is not None:
                bar.close()
        return self.stats()

    def _example(self, x: Any, i: int, combo: tuple[int, ...], seed: int) -> Any:
        import torch

        if not is_tensor(x):
            return x
        dims = [p.dim for p in self.dims if self._pads(p, i, x)]
        sizes = [n for p, n in zip(self.dims, combo) if self._pads(p, i, x)]
        return example_at(torch, x, dims, sizes, seed)

    # -- looking at it -----------------------------------------------------------------------------------------------
    def bucket_for(self, *sizes: int) -> tuple[int, ...] | int | None:
        """The bucket(s) that serve these sizes (one per padded dim), or None above the largest."""
        if len(sizes) != len(self.dims):
            raise GraphlabError(f"bucket_for takes one size per padded dim ({len(self.dims)}), got {sizes}")
        found = tuple(t.bucket_for(n) for t, n in zip(self.tables, sizes))
        if None in found:
            return None
        return found[0] if len(found) == 1 else found

    @property
    def graphs(self) -> dict[str, Any]:
        """The cached graphs by bucket label ("8", or "8x32" with two dims), least recently used first."""
        with self._lock:
            return {self._label(e): e.graph for e in self._entries.values()}

    def graph_for(self, *sizes: int) -> Any:
        """The cached graph that serves these sizes (for gl.render / gl.inspect / gl.diff)."""
        bucket = self.bucket_for(*sizes)
        wanted = bucket if isinstance(bucket, tuple) else (bucket,)
        with self._lock:
            for entry in reversed(self._entries.values()):
                if entry.buckets == wanted:
                    return entry.graph
        raise GraphlabError(f"GraphCache {self.name!r} holds no graph for size {sizes} (bucket {bucket}); "
                            f"it holds {list(self.graphs)}: call it once at that size or warmup()")

    def _label(self, entry: CacheEntry) -> str:
        same_bucket = [e for e in self._entries.values() if e.buckets == entry.buckets]
        if len(same_bucket) == 1:
            return entry.label
        return f"{entry.label}#{same_bucket.index(entry)}"

    def stats(self) -> CacheStats:
        """A snapshot of the counters, with the memory the held graphs took."""
        with self._lock:
            snap = CacheStats(**{**self._stats.__dict__})
            snap.per_bucket = {k: BucketCounts(**v.__dict__) for k, v in self._stats.per_bucket.items()}
            for route in self._routes.values():
                if route.calls:
                    snap.per_bucket.setdefault(route.label, BucketCounts()).add_many(
                        route.calls, route.rows, route.padded_rows)
            snap.fallback_reasons = dict(self._stats.fallback_reasons)
            snap.graphs = len(self._entries)
            snap.pool_bytes = sum(e.graph.cost.pool_bytes for e in self._entries.values())
            snap.exec_bytes = sum(e.graph.cost.exec_bytes or 0 for e in self._entries.values())
            return snap

    def clear(self) -> None:
        """Drop every graph (their memory goes back to the device once no graph uses the pool)."""
        with self._lock:
            for entry in self._entries.values():
                entry.graph.reset()
            self._entries.clear()
            self._retire(self._routes.values())
            self._routes.clear()
            self._pools.clear()
            self._release_memory()

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        buckets = "; ".join(f"{p.name} {list(t.buckets)}" for p, t in zip(self.dims, self.tables))
        return f"GraphCache({self.name!r}: {buckets}; {len(self._entries)} graphs, backend {self.backend.name})"


__all__ = ["CacheEntry", "GraphCache", "POOLS"]
