"""A graph cache for dynamic shapes: buckets, padding, one shared pool, eager fallback, LRU limits.

    >>> cache = gl.GraphCache(model, buckets="pow2", max_size=64)     # batch dim 0 of every input
    >>> y = cache(x)                   # any batch size: pad to its bucket, replay, slice back
    >>> cache.warm_up(x)               # or capture every bucket ahead, largest first (tqdm bar)
    >>> y = cache.from_host(pinned_x)  # a serving loop's pinned batch, copied straight into the graph's inputs
    >>> print(cache.stats())           # hits, captures, fallbacks, pad waste, pool memory
    >>> gl.render(cache.graph_for(8))  # every cached graph can be drawn, inspected, diffed

A sequence dimension too (a causal decoder padded on the right):
    >>> cache = gl.GraphCache(gpt, dims=[gl.Pad("batch", dim=0, buckets=[1, 2, 4, 8], max_size=8),
    ...                                  gl.Pad("seq", dim=1, buckets=[16, 32, 64], max_size=64, out_dim=1)])

How it works, and what it promises:
- **Two parts.** Which graph serves a call is decided from plain values by `graphlab.cache.plan` (the key,
  the bucket, what to pad, when to fall back); this module holds the graphs and does what the plan says:
  capture on a miss through the backend, replay, limits, stats.
- **Key**: everything that makes a graph invalid: the bucketed shapes, the other dims, dtypes, devices,
  non-tensor arguments. A call that autograd would record never uses a graph (it falls back), and every
  graph is captured under no_grad, so one graph serves no_grad, inference_mode and grad-mode calls alike.
- **Padding never changes an answer silently.** A bucket that pads is checked when it first pads
  (padded replay vs eager on the real rows); a mismatch raises `PaddingError` naming the dimension and
  the fix, and nothing is returned. `Pad(exact=True)` skips the check; `Pad(exact=False)` never pads.
- **Eager fallback** above the largest bucket, warned once and counted (`strict=True`: `CacheMissError`),
  and when autograd would need the outputs (a graph replays no autograd history).
- **One shared pool** (`pool="shared"`, default) for all buckets, captured largest first by `warm_up`;
  `pool="private"` gives each graph its own pool (eviction then returns memory to the device).
- **Static inputs per graph.** Each graph owns its padded input buffers, not SGLang's one max-size set that
  every bucket slices: a slice of a max-size buffer along any dim but the first is not contiguous, so a
  graph padded along the sequence would see strided inputs that eager never sees (`.view` fails, other
  kernels run), and the slice's tail would still need resetting on padded calls. Here a buffer's padding is
  refilled only when a call is smaller than the one before it on that graph.
- **Limits**: `CacheOptions(max_graphs=..., memory_budget_bytes=...)` evict the least recently used graph.
- **Thread-safe**: one lock per cache, held through capture and replay; no key is captured twice.
- **Outputs**: a clone of the real rows by default (`copy_outputs=True`), with the model's container types.
  `copy_outputs=False` returns views of the graph's static outputs, valid until the next call of this cache
  (any bucket, since the pool is shared): faster, for serving loops that consume each result at once.
"""
from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import torch

from graphlab.cache.backends import check_device, check_input_devices, make_backend
from graphlab.cache.buckets import Pad
from graphlab.cache.options import CacheOptions
from graphlab.cache.padding import compare_padded, example_at, output_leaves, pad_tensor, raise_if_inexact, region
from graphlab.cache.plan import CachePlanner, Fallback, Plan, TensorSpec
from graphlab.cache.stats import (BucketCounts, CacheStats, HeldGraph, PaddingCheck, WarmupStats, describe_cache,
                                  graphs_table, padding_table)
from graphlab.capture.input_plan import model_refused
from graphlab.capture.tensors import describe, flatten, map_tensors
from graphlab.errors import BadInputError, ConfigurationError, GraphlabError, PaddingError
from graphlab.present import Table, listing
from graphlab.progress import progress_bar, warn_user

POOLS = ("shared", "private")


@dataclass
class CacheEntry:
    """One cached graph: its buckets, and what the cache knows about its static inputs."""

    key: tuple[Any, ...]
    buckets: tuple[int, ...]
    graph: Any
    label: str
    #: the real sizes the last call copied in: a smaller call must refill the padding they reached
    written: tuple[int, ...]
    #: padded dims whose exactness was checked on this graph, and the error if a check failed
    checked: set[str] = field(default_factory=set)
    padding_error: PaddingError | None = None


@dataclass
class Route:
    """How one exact input signature is served, worked out on its first call: the views of the static inputs
    to copy into, the views of the outputs to return, and the counters to bump. A hit then costs a dict
    look-up, one `copy_` per input, the replay and (with copy_outputs) one clone."""

    entry: CacheEntry
    plan: Plan
    targets: list[tuple[int, torch.Tensor]]
    outputs: Any
    #: the whole static input of each padded input, and its pad value (to refill after a larger call)
    fill: list[tuple[torch.Tensor, float]]
    single_output: bool
    calls: int = 0


def _clone(t: torch.Tensor) -> torch.Tensor:
    return t.clone()


def _exact_key(inputs: tuple[Any, ...], device_index: int | None = None) -> Any:
    """The exact signature of a call: shapes, dtypes, devices and plain arguments (the hot path: keep it lean).
    `device_index`: the signature the same tensors would have on that device (`from_host`)."""
    if len(inputs) == 1 and isinstance(inputs[0], torch.Tensor):
        x = inputs[0]
        return (x.shape, x.dtype, x.get_device() if device_index is None else device_index)
    return tuple((x.shape, x.dtype, x.get_device() if device_index is None else device_index)
                 if isinstance(x, torch.Tensor) else ("arg", x) for x in inputs)


def _to(inputs: tuple[Any, ...], device: torch.device) -> tuple[Any, ...]:
    return tuple(x.to(device, non_blocking=True) if isinstance(x, torch.Tensor) else x for x in inputs)


def _fold(per_bucket: dict[str, BucketCounts], route: Route) -> None:
    """Add a route's calls (and the rows they computed, real and padded) to its bucket's counts."""
    per_bucket.setdefault(route.entry.label, BucketCounts()).add_many(route.calls, route.plan.rows,
                                                                       route.plan.padded_rows)


def _signature(inputs: Sequence[Any]) -> tuple[Any, ...]:
    """The inputs as the plan reads them: a TensorSpec per tensor, plain arguments as they are."""
    return tuple(TensorSpec(tuple(x.shape), x.dtype, x.get_device()) if isinstance(x, torch.Tensor) else x
                 for x in inputs)


class GraphCache:
    """Callable like `model`: serves any size by padding to a captured bucket (see the module docstring).

    Args:
        model: an nn.Module or function of positional tensor (and plain Python) arguments.
        buckets: the batch buckets (dim 0): a policy name (`graphlab.cache.buckets.POLICIES`), a list of
            sizes, or a `BucketAdvice`. Ignored when `dims` is given.
        max_size: the largest batch size for a named policy.
        dims: the dimensions that may vary, as `gl.Pad(...)`; default: `[Pad("batch", dim=0)]`.
        strict: raise `CacheMissError` instead of running eagerly above the largest bucket.
        copy_outputs: return clones (safe) instead of views of the static outputs (fast).
        pool: "shared" (one pool for every graph), "private", or a pool to share (a CapturedGraph or
            `torch.cuda.graph_pool_handle()`).
        device: where graphs live (default: the first call's inputs' device).
        name: for messages, stats and graph names (default: the model's class name).
        backend: "cuda" (default; "eager" in recorded mode), "eager" (no GPU: the same bookkeeping with
            eager runs), or a custom one (`capture` and `new_pool`).
        options: the limits (`max_graphs`, `memory_budget_bytes`: the least recently used graph is evicted beyond
            them), the eager warm-up before each capture (`warmup_calls`) and the padding check (`check_padding`),
            as one `CacheOptions`.
    """

    def __init__(self, model: Any, buckets: Any = "pow2", *, max_size: int | None = 64,
                 dims: Sequence[Pad] | None = None, strict: bool = False, copy_outputs: bool = True,
                 pool: Any = "shared", device: Any = None, name: str | None = None, backend: Any = None,
                 options: CacheOptions = CacheOptions()):
        self.model = model
        self.name = name or getattr(model, "__name__", None) or type(model).__name__
        if dims is None:
            dims = (Pad("batch", dim=0, buckets=buckets, max_size=max_size, out_dim=0),)
        self.planner = CachePlanner(dims, strict=strict, name=self.name)
        self.dims, self.tables = self.planner.dims, self.planner.tables
        if isinstance(pool, str) and pool not in POOLS:
            raise ConfigurationError(f"pool must be one of {', '.join(POOLS)} or a pool to share, got {pool!r}")
        self.strict = strict
        self.copy_outputs = copy_outputs
        self.pool_mode = pool
        self.options = options
        self.max_graphs = options.max_graphs
        self.memory_budget_bytes = options.memory_budget_bytes
        self.warmup_calls = options.warmup_calls
        self.check_padding = options.check_padding
        self.backend = make_backend(backend)
        self.device = check_device(self.backend, device)  # a backend refuses the devices it cannot run on
        self._entries: OrderedDict[tuple[Any, ...], CacheEntry] = OrderedDict()  # least recently used first
        self._routes: dict[Any, Route] = {}  # by exact signature
        self._pools: dict[str, Any] = {}  # the shared pool of each device
        self._lock = threading.Lock()  # not re-entrant: nothing under it calls back into the cache
        self._stats = CacheStats()
        self._checks: list[PaddingCheck] = []  # the padding checks run, in order (display only)
        self._warned: set[str] = set()
        self._needs_grad = any(p.requires_grad for p in (model.parameters() if hasattr(model, "parameters") else ()))

    # -- the call: a known signature replays; a new one is planned, captured if need be, and remembered ---------
    def __call__(self, *inputs: Any) -> Any:
        with self._lock:
            exact = _exact_key(inputs)
            try:
                route = self._routes.get(exact)
            except TypeError:  # an unhashable plain argument: no fast route, the plan keys on its repr
                exact = route = None
            autograd = torch.is_grad_enabled() and self._autograd_needed(inputs)
            if route is not None and not autograd:
                self._stats.hits += 1
                self._entries.move_to_end(route.entry.key)
            else:
                plan = self.planner.decide(_signature(inputs), autograd=autograd)
                if isinstance(plan, Fallback):
                    return self._fallback(inputs, plan.reason)
                route = self._new_route(plan, inputs, exact)
            return self._run(route, inputs)

    def from_host(self, *inputs: Any) -> Any:
        """`cache(*(x.to(device) for x in inputs))` for host tensors, with one copy fewer on a hit: each is copied
        straight into its graph's static input (`non_blocking`, on the current stream), then the graph replays.

        For serving loops that stage each batch in pinned host memory (`graphlab.serve.worker`): no device
        staging tensor, no device-to-device copy (docs/serving.md, "What moved the 50 req/s figure", has what it
        saved). Give pinned tensors, and leave them untouched until the stream has run the copies (a CUDA event
        after the call says when). A call that would not replay a known route (a new signature, the eager
        fallback, autograd) moves the inputs to the device and is the usual call.
        On a CPU cache (the eager backend) it takes the same routes as the usual call.
        """
        device = self.device
        if device is None:
            raise BadInputError(f"GraphCache {self.name!r}: from_host needs to know where the graphs live: make "
                                "the cache with device= (e.g. GraphCache(model, device='cuda'))")
        if device.type == "cuda":
            index = device.index if device.index is not None else torch.cuda.current_device()
        elif device.type == "cpu":
            index = -1  # what get_device() says of a CPU tensor: the same routes as the usual call
        else:
            return self(*_to(inputs, device))
        with self._lock:
            try:
                route = self._routes.get(_exact_key(inputs, index))
            except TypeError:  # an unhashable plain argument: the usual call plans it
                route = None
            if route is not None and not (torch.is_grad_enabled() and self._autograd_needed(inputs)):
                self._stats.hits += 1
                self._entries.move_to_end(route.entry.key)
                return self._run(route, inputs, non_blocking=True)
        return self(*_to(inputs, device))

    def _autograd_needed(self, inputs: tuple[Any, ...]) -> bool:
        return self._needs_grad or any(isinstance(x, torch.Tensor) and x.requires_grad for x in inputs)

    def _new_route(self, plan: Plan, inputs: tuple[Any, ...], exact: Any) -> Route:
        """The first call of a signature: find or capture its graph, check its padding, remember the route."""
        entry = self._entries.get(plan.key)
        if entry is None:
            entry = self._capture(plan, inputs)
        else:
            self._stats.hits += 1
            self._entries.move_to_end(plan.key)
        if plan.check and self.check_padding:
            self._check_padding(entry, plan, inputs)
        route = self._route(entry, plan)
        if exact is not None:
            self._routes[exact] = route
        return route

    def _run(self, route: Route, inputs: tuple[Any, ...], non_blocking: bool = False) -> Any:
        """Copy the inputs into the graph's static inputs, replay, return the real rows of the outputs."""
        entry = route.entry
        if entry.written is not route.plan.sizes:  # another size than last time on this graph
            self._keep_padding_clean(entry, route)
        for i, target in route.targets:
            target.copy_(inputs[i], non_blocking=non_blocking)
        entry.graph.replay()
        route.calls += 1
        if not self.copy_outputs:
            return route.outputs
        if route.single_output:
            return route.outputs.clone()
        return map_tensors(_clone, route.outputs)

    @staticmethod
    def _keep_padding_clean(entry: CacheEntry, route: Route) -> None:
        """The padding must hold the pad value: a call smaller than the last one (along any dim) would leave
        that call's real rows in it, so refill it first. A call as large or larger overwrites them anyway."""
        if any(n < last for n, last in zip(route.plan.sizes, entry.written)):
            for static, value in route.fill:
                static.fill_(value)
        entry.written = route.plan.sizes

    def _fallback(self, inputs: tuple[Any, ...], reason: str) -> Any:
        if not inputs:
            raise BadInputError(f"GraphCache {self.name!r} was called with no inputs: call it as the model, e.g. cache(x)")
        self._stats.fallbacks += 1
        self._stats.fallback_reasons[reason] = self._stats.fallback_reasons.get(reason, 0) + 1
        if reason not in self._warned:
            self._warned.add(reason)
            warn_user(f"GraphCache {self.name!r}: {reason}; running eagerly (counted in "
                      "cache.stats().fallbacks; strict=True makes sizes above the largest bucket an error)")
        try:
            return self.model(*inputs)
        except GraphlabError:
            raise
        except (RuntimeError, TypeError, ValueError, IndexError) as exc:  # the model refused these inputs
            raise self._model_refused(inputs, f"an eager run ({reason})", exc) from exc

    # -- capture, routes, the padding check ------------------------------------------------------------------
    def _capture(self, plan: Plan, inputs: tuple[Any, ...]) -> CacheEntry:
        """Capture the graph of `plan` on static inputs padded to its buckets, and hold it (limits apply)."""
        pads = {p.index: p for p in plan.inputs}
        self._check_inputs(inputs)  # a miss only: a hit's inputs matched a captured signature exactly
        device = self.device if self.device is not None else next(
            (x.device for x in inputs if isinstance(x, torch.Tensor)), None)
        with torch.inference_mode(False), torch.no_grad():  # static buffers must be normal tensors
            statics = tuple(
                x if not isinstance(x, torch.Tensor)
                else pad_tensor(x, pads[i].dims, pads[i].buckets, pads[i].value) if i in pads
                else x.clone(memory_format=torch.contiguous_format)
                for i, x in enumerate(inputs))
            try:
                graph = self.backend.capture(self.model, statics, pool=self._pool_for(device), device=device,
                                             warmup_calls=self.warmup_calls, name=f"{self.name} {plan.label}",
                                             grad_mode="no_grad")
            except GraphlabError:
                raise
            except (RuntimeError, TypeError, ValueError, IndexError) as exc:  # the model refused these inputs
                raise self._model_refused(inputs, f"a new graph ({plan.label})", exc) from exc
        entry = CacheEntry(plan.key, plan.buckets, graph, plan.label, written=plan.buckets)
        self._stats.captures += 1
        self._stats.capture_ms += graph.capture_ms
        self._entries[plan.key] = entry
        self._enforce_limits(keep=plan.key)
        return entry

    # -- what a capture is given (checked at a miss, never on a hit) -------------------------------------------
    def _check_inputs(self, inputs: tuple[Any, ...]) -> None:
        where = f"GraphCache {self.name!r}"
        if not inputs:
            raise BadInputError(f"{where} was called with no inputs: call it as the model, e.g. cache(x)")
        check_input_devices(self.backend, inputs, self.device, where)

    def _expected(self) -> str:
        """What the graphs expect: the model's parameters and the inputs of the graphs captured so far."""
        parts = []
        params = list(self.model.parameters()) if hasattr(self.model, "parameters") else []
        if params:
            dtypes = sorted({str(p.dtype).replace("torch.", "") for p in params})
            devices = sorted({str(p.device) for p in params})
            parts.append(f"the model's weights are {'/'.join(dtypes)} on {'/'.join(devices)}")
        for entry in list(self._entries.values())[-2:]:
            shown = ", ".join(f"input {path}: {describe(t)}" for path, t in flatten(entry.graph.inputs)
                              if isinstance(t, torch.Tensor))
            parts.append(f"graph {entry.label} was captured for {shown}")
        return "; ".join(parts) or "nothing captured yet"

    def _model_refused(self, inputs: tuple[Any, ...], what: str, exc: BaseException) -> BadInputError:
        """The one-line error for a model that raised on a capture's inputs: which input, expected, got, fix."""
        padded = {i for i in range(len(inputs)) if self.planner.pads_of(i, 64)}
        return model_refused(self.model, inputs, exc, where=f"GraphCache {self.name!r}", what=what,
                             expected=self._expected(), tensor_at=padded)

    @staticmethod
    def _route(entry: CacheEntry, plan: Plan) -> Route:
        """Views of `entry`'s static inputs to copy a call of `plan` into, and of its outputs cut back to size."""
        statics = entry.graph.inputs
        padded = {p.index: p for p in plan.inputs} if plan.pads else {}
        targets, fill = [], []
        for i, static in enumerate(statics):
            if not isinstance(static, torch.Tensor):
                continue
            pad = padded.get(i)
            if pad is None:
                targets.append((i, static))
            else:
                targets.append((i, static[region(static.ndim, pad.dims, pad.sizes)]))
                fill.append((static, pad.value))

        def cut(t: torch.Tensor) -> torch.Tensor:
            for dim, n, b in plan.cuts:
                if t.ndim > dim and t.shape[dim] == b:
                    t = t.narrow(dim, 0, n)
            return t

        outputs = map_tensors(cut, entry.graph.outputs)
        return Route(entry, plan, targets, outputs, fill, isinstance(outputs, torch.Tensor))

    def _check_padding(self, entry: CacheEntry, plan: Plan, inputs: tuple[Any, ...]) -> None:
        """Check once per graph and padded dim that padding is exact (padded replay vs eager on the real rows)."""
        error = entry.padding_error
        if error is not None and any(p.name in error.dim_name.split(",") for p in plan.check):
            raise error
        todo = [p for p in plan.check if p.name not in entry.checked]
        if not todo:
            return
        route = self._route(entry, plan)  # a throwaway route: a check is not a call
        self._run(route, inputs)
        replayed = map_tensors(_clone, route.outputs)  # the real rows, whatever copy_outputs says
        with torch.no_grad():
            eager = self.model(*inputs)
        where = f"GraphCache {self.name!r}, bucket {entry.label} for size " + "x".join(map(str, plan.sizes))
        comparison = compare_padded(replayed, eager)
        self._checks.append(PaddingCheck(
            entry.label, plan.sizes, tuple(p.name for p in todo), comparison.max_abs_err,
            comparison.allowed if comparison.mismatch is None else None,
            tuple(tuple(t.shape) for _, t in output_leaves(replayed)), comparison.exact))
        try:
            raise_if_inexact(comparison, todo, where)
        except PaddingError as err:
            entry.padding_error = err
            raise
        entry.checked.update(p.name for p in todo)

    # -- pools and limits -------------------------------------------------------------------------------------
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
        return sum(e.graph.pool_bytes + (e.graph.exec_bytes or 0) for e in self._entries.values())

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
            _fold(self._stats.per_bucket, route)
            route.calls = 0

    def _release_memory(self) -> None:
        if self.backend.name == "cuda":
            torch.cuda.empty_cache()

    # -- ahead of time ---------------------------------------------------------------------------------------------
    def warm_up(self, *example_inputs: Any, sizes: Iterable[Any] | None = None, progress: bool = True) -> WarmupStats:
        """Capture graphs ahead of use, largest first, into the shared pool.

        Args:
            example_inputs: inputs shaped like a real call (any size along the padded dims); random inputs
                of each bucket's shape are made from them.
            sizes: which buckets to capture: sizes of the first dim, or tuples with one size per dim
                (default: every combination of buckets).
            progress: a tqdm bar.

        Returns:
            The cache's stats after it (`WarmupStats`), which also say what it made, in order.
        """
        if not example_inputs:
            raise BadInputError("warm_up needs example inputs shaped like a real call, e.g. cache.warm_up(x)")
        combos = self.planner.warmup_order(sizes)
        # an eager stand-in captures nothing: the bar says what it does make
        doing = "Capturing graphs" if self.backend.name == "cuda" else "Making eager stand-ins (no GPU: nothing captured)"
        bar = progress_bar(len(combos), f"{doing} ({self.name})", unit="graph", show=progress)
        made: list[str] = []
        with self._lock, torch.no_grad():
            for seed, combo in enumerate(combos):
                inputs = self._examples(example_inputs, combo, seed)
                plan = self.planner.decide(_signature(inputs))
                if isinstance(plan, Fallback):
                    raise BadInputError(f"warm_up cannot capture bucket {combo} from these examples: {plan.reason}")
                if plan.key not in self._entries:
                    made.append(self._capture(plan, inputs).label)
                if bar is not None:
                    bar.update(1)
            if bar is not None:
                bar.close()
        stats = self.stats()
        pool = self.pool_mode if isinstance(self.pool_mode, str) else "given"
        return WarmupStats(**{**stats.__dict__, "made": tuple(made), "pool": pool})

    def _examples(self, example_inputs: tuple[Any, ...], combo: tuple[int, ...], seed: int) -> tuple[Any, ...]:
        """Fresh random inputs like `example_inputs`, resized to `combo` along the padded dims."""
        out = []
        for i, x in enumerate(example_inputs):
            if not isinstance(x, torch.Tensor):
                out.append(x)
                continue
            ks = self.planner.pads_of(i, x.ndim)
            out.append(example_at(x, [self.dims[k].dim for k in ks], [combo[k] for k in ks], seed))
        return tuple(out)

    # -- looking at it -----------------------------------------------------------------------------------------------
    def bucket_for(self, *sizes: int) -> tuple[int, ...] | int | None:
        """The bucket(s) that serve these sizes (one per padded dim), or None above the largest."""
        found = self.planner.bucket_for(sizes)
        if found is None:
            return None
        return found[0] if len(found) == 1 else found

    @property
    def graphs(self) -> dict[str, Any]:
        """The cached graphs by bucket label ("8", or "8x32" with two dims), least recently used first; graphs of
        one bucket with other keys (another dtype, another other dim) are told apart as "8#0", "8#1", ..."""
        with self._lock:
            entries = list(self._entries.values())
        per_bucket = Counter(e.buckets for e in entries)
        seen: Counter[tuple[int, ...]] = Counter()
        out = {}
        for e in entries:
            if per_bucket[e.buckets] == 1:
                out[e.label] = e.graph
            else:
                out[f"{e.label}#{seen[e.buckets]}"] = e.graph
                seen[e.buckets] += 1
        return out

    def graph_keys(self) -> Table:
        """The keys of `graphs` as a table, smallest bucket first: each key, its bucket and the inputs its graph was
        made for; a key like "4#0" says that bucket 4 holds more than one graph (inputs that differ in another dim
        or a dtype)."""
        held = []
        for key, graph in self.graphs.items():
            bucket = key.partition("#")[0]
            inputs = tuple((path, tuple(t.shape), str(t.dtype).replace("torch.", ""))
                           for path, t in flatten(graph.inputs) if isinstance(t, torch.Tensor))
            held.append(HeldGraph(key, bucket, inputs))
        return graphs_table(self.name, held, self.backend.name)

    def padding_checks(self) -> Table:
        """The padding checks this cache ran (once per graph and padded dim, at its first padded call): the size
        checked, the output returned, the largest difference from eager on the real rows and what the dtype
        allows. With the eager backend nothing is replayed: the check compares the model on the padded inputs
        with the model on the real ones."""
        with self._lock:
            checks = list(self._checks)
        return padding_table(self.name, checks, self.backend.name, str(self.device) if self.device else "")

    def graph_for(self, *sizes: int) -> Any:
        """The cached graph that serves these sizes (for gl.render / gl.inspect / gl.diff); the most recently
        used one when several keys share the bucket."""
        bucket = self.bucket_for(*sizes)
        wanted = bucket if isinstance(bucket, tuple) else (bucket,)
        with self._lock:
            for entry in reversed(self._entries.values()):
                if entry.buckets == wanted:
                    return entry.graph
        size = " x ".join(map(str, sizes))
        held = f"graphs {listing(self.graphs)}" if self.graphs else "no graphs yet"
        served = ("above the largest bucket" if bucket is None else f"bucket {' x '.join(map(str, wanted))}")
        raise BadInputError(f"GraphCache {self.name!r} holds no graph for size {size} ({served}); it holds {held}: "
                            "call it once at that size or warm_up()")

    def stats(self) -> CacheStats:
        """A snapshot of the counters, with the memory the held graphs took."""
        with self._lock:
            snap = CacheStats(**{**self._stats.__dict__})
            snap.per_bucket = {k: BucketCounts(**v.__dict__) for k, v in self._stats.per_bucket.items()}
            for route in self._routes.values():
                if route.calls:
                    _fold(snap.per_bucket, route)
            snap.fallback_reasons = dict(self._stats.fallback_reasons)
            snap.graphs = len(self._entries)
            snap.pool_bytes = sum(e.graph.pool_bytes for e in self._entries.values())
            snap.exec_bytes = sum(e.graph.exec_bytes or 0 for e in self._entries.values())
            snap.backend = self.backend.name
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
        dims = [(p.name, list(t.buckets)) for p, t in zip(self.dims, self.tables)]
        return describe_cache(self.name, dims, len(self._entries), self.backend.name)


__all__ = ["CacheEntry", "GraphCache", "POOLS", "Route"]
