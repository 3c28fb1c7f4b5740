"""The patch behind `gl.watch`: make every `torch.cuda.CUDAGraph` dumpable while a watch is open.

Every library that captures through PyTorch ends in one class, `torch.cuda.CUDAGraph`:
`torch.cuda.graph` and `make_graphed_callables` (torch/cuda/graphs.py) and torch.compile's CUDAGraph
Trees (torch/_inductor/cudagraph_trees.py) all create it as `torch.cuda.CUDAGraph()`, and anyone who
imported the name at module load holds the same class object. So the patch replaces four entries
of that class itself, not the name, which reaches every holder:

  `__new__`, `__init__`   ask the C++ base for `keep_graph=True` (pybind's `__init__` takes it; newer
                          torch also stores it in `__new__`), and remember what the caller asked for;
  `capture_begin`         note the stack, device, stream, pool and `memory_reserved()`, then begin;
  `capture_end`           end, then, for a graph whose caller did not ask to keep it, `instantiate()`
                          at once: what torch's `capture_end` does itself with `keep_graph=False`
                          (same C++ instantiate, same flags), so the library sees the same graph,
                          ready to replay; then dump the DOT (cudaGraphDebugDotPrint) and hand the
                          record to every open watch.

`replay` is never touched. The only lasting difference: a watched graph keeps its `cudaGraph_t`
(host memory, the node list) until the graph is freed. Bookkeeping errors are caught and stored on
the record; errors from torch's own calls propagate unchanged. Outside every watch the class holds
exactly its original entries again (`restore`), even after an exception.

Why a patch and not torch's hooks: neither torch graphlab runs on has a hook that fits. Looked for in
torch 2.13.0+cpu (its sources) and 2.11 (the H200's: `torch.cuda.CUDAGraph` there has capture_begin,
capture_end, debug_dump, enable_debug_mode, instantiate, pool, raw_cuda_graph, raw_cuda_graph_exec,
register_generator_state, replay and reset, nothing more), by module and attribute:

  `torch.cuda.graphs`       no module-level graph hook (`register_graph_instantiate_hook` is 2.14's);
  `torch.cuda.CUDAGraph`,   no `register_capture_end_hook`, `register_post_instantiate_hook` or
  `torch._C._CUDAGraph`     `capture_end_pre` (all 2.14's);
  `torch.accelerator.Graph` (2.13) the same class shape, no hooks;
  `torch.cuda._gpu_trace`   callbacks for events, streams, memory and synchronisation only;
  `torch._dynamo.callback`  `CallbackTrigger.CUDAGRAPH_RECORDING` fires around a CUDAGraph Trees
                            recording, without the graph, and only for torch.compile.

With 2.14's hooks a watch would need neither `keep_graph=True` nor the instantiate in `capture_end`
(a capture-end hook sees the `cudaGraph_t` whatever keep_graph), but it would still patch
`capture_begin`: there is no module-level capture hook, and the stack, stream and memory are read there.
The patch works the same from 2.8 to 2.14, so it stays while graphlab supports torch older than 2.14.

torch is imported at the top; tests swap this module's `torch` for a fake (`monkeypatch.setattr`).
"""
from __future__ import annotations

import functools
import inspect
import sys
import threading
import warnings
import weakref
from datetime import datetime, timezone
from typing import Any, Callable

import torch

from graphlab.clock import Stopwatch, now_s
from graphlab.errors import BadInputError, ConfigurationError, GraphlabError, WatchUnsupportedError
from graphlab.graph.export import dump_dot
from graphlab.watch.frames import origin, shapes_and_role, stack_frames

PATCHED = ("__new__", "__init__", "capture_begin", "capture_end")
_MISSING = object()


def check_supported() -> None:
    """Raise WatchUnsupportedError unless `torch.cuda.CUDAGraph` takes `keep_graph` (torch >= 2.8)."""
    cls = getattr(getattr(torch, "cuda", None), "CUDAGraph", None)
    if cls is None:
        raise WatchUnsupportedError(f"torch {getattr(torch, '__version__', '?')} has no torch.cuda.CUDAGraph: "
                                    "gl.watch needs torch 2.8 or newer with CUDA")
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        params = {}
    if "keep_graph" not in params or not hasattr(cls, "instantiate"):
        raise WatchUnsupportedError(
            f"torch {getattr(torch, '__version__', '?')} cannot keep a captured CUDA graph for dumping "
            "(torch.cuda.CUDAGraph has no keep_graph parameter): gl.watch needs torch 2.8 or newer "
            "(pip install 'torch>=2.8')")


def asked_keep_graph(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """What `CUDAGraph(*args, **kwargs)` asked for: keep_graph is its first parameter."""
    if "keep_graph" in kwargs:
        return bool(kwargs["keep_graph"])
    return bool(args[0]) if args else False


class Pending:
    """What `capture_begin` saw, waiting for `capture_end`."""

    def __init__(self, graph: Any, caller: Any, args: tuple[Any, ...], kwargs: dict[str, Any]):
        frames = stack_frames(caller)
        self.origin = origin(frames)
        self.input_shapes, self.role, self.details = shapes_and_role(frames, graph)
        del frames
        self.device = int(torch.cuda.current_device())
        stream = torch.cuda.current_stream(self.device)
        self.stream_id = int(getattr(stream, "stream_id", 0))
        self.stream_is_default = bool(stream == torch.cuda.default_stream(self.device))
        pool = kwargs.get("pool", args[0] if args else None)
        self.pool_given = pool is not None
        self.capture_error_mode = str(kwargs.get("capture_error_mode", args[1] if len(args) > 1 else "global"))
        self.captured_at = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        self.reserved0 = int(torch.cuda.memory_reserved(self.device))
        self.t0 = now_s()


class Patch:
    """The one patch of this process: installed with the first open watch, removed with the last.

    `sinks` are the open watches' `add(fields)` callables; each finished capture goes to all of them.
    """

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.sinks: list[Callable[[dict[str, Any]], None]] = []
        self.saved: dict[str, Any] = {}
        self.cls: Any = None
        self.asked: Any = weakref.WeakKeyDictionary()  # graph -> keep_graph its caller asked for
        self.pending: dict[int, Pending] = {}
        self.dot_flags = 1

    @property
    def installed(self) -> bool:
        return self.cls is not None

    def open(self, sink: Callable[[dict[str, Any]], None], dot_flags: int) -> None:
        with self.lock:
            if not self.installed:
                check_supported()
                self._install()
                self.dot_flags = dot_flags
            elif self.cls is not torch.cuda.CUDAGraph:
                raise ConfigurationError("a watch over another torch module is open (torch.cuda.CUDAGraph is not the "
                                         "class it patched): close that watch first")
            elif dot_flags != self.dot_flags:
                raise BadInputError(f"a watch with dot_flags={self.dot_flags} is already open: a nested watch "
                                    f"shares its dumps, so open it with the same flags (not {dot_flags})")
            self.sinks.append(sink)

    def remember(self, graph: Any, asked: bool) -> None:
        """Note what keep_graph the caller of `CUDAGraph(...)` asked for."""
        try:
            self.asked[graph] = asked
        except TypeError:  # not weak-referenceable
            try:
                object.__setattr__(graph, "_graphlab_keep_graph_asked", asked)
            except (AttributeError, TypeError):
                pass

    def asked_for(self, graph: Any) -> bool | None:
        """What the caller asked for, or None for a graph created outside every watch."""
        try:
            found = self.asked.get(graph)
        except TypeError:
            found = None
        return found if found is not None else getattr(graph, "_graphlab_keep_graph_asked", None)

    def close(self, sink: Callable[[dict[str, Any]], None]) -> None:
        with self.lock:
            if sink in self.sinks:
                self.sinks.remove(sink)
            if not self.sinks and self.installed:
                self.restore()

    def restore(self) -> None:
        """Put the class's own entries back (delete the ones it only inherited)."""
        cls, self.cls = self.cls, None
        for name, value in self.saved.items():
            if value is _MISSING:
                if name in vars(cls):
                    delattr(cls, name)
            else:
                setattr(cls, name, value)
        self.saved = {}
        self.pending.clear()

    # -- the patched entries ------------------------------------------------------------------------------
    def _install(self) -> None:
        cls = torch.cuda.CUDAGraph
        self.saved = {name: vars(cls).get(name, _MISSING) for name in PATCHED}
        orig_new, orig_init = cls.__new__, cls.__init__
        orig_begin, orig_end = cls.capture_begin, cls.capture_end
        patch = self

        @functools.wraps(orig_new)
        def __new__(klass: Any, *args: Any, **kwargs: Any) -> Any:
            kwargs.pop("keep_graph", None)
            return orig_new(klass, *args[1:], keep_graph=True, **kwargs)

        @functools.wraps(orig_init)
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            asked = asked_keep_graph(args, kwargs)
            kwargs.pop("keep_graph", None)
            orig_init(self, *args[1:], keep_graph=True, **kwargs)
            patch.remember(self, asked)

        @functools.wraps(orig_begin)
        def capture_begin(self: Any, *args: Any, **kwargs: Any) -> None:
            try:
                pending: Pending | None = Pending(self, sys._getframe(1), args, kwargs)
            except Exception:
                pending = None
            orig_begin(self, *args, **kwargs)
            if pending is not None:
                patch.pending[id(self)] = pending

        @functools.wraps(orig_end)
        def capture_end(self: Any) -> None:
            pending = patch.pending.pop(id(self), None)
            orig_end(self)
            t_end = now_s()
            asked = patch.asked_for(self)
            instantiate_ms = None
            if asked is False:  # torch would have instantiated inside capture_end: do it now, whatever else
                self.instantiate()
                instantiate_ms = (now_s() - t_end) * 1e3
            if pending is not None:
                patch._finish(self, pending, (t_end - pending.t0) * 1e3, instantiate_ms, asked)

        cls.__new__ = __new__
        cls.__init__ = __init__
        cls.capture_begin = capture_begin
        cls.capture_end = capture_end
        self.cls = cls

    def _finish(self, graph: Any, pending: Pending, capture_ms: float, instantiate_ms: float | None,
                asked: bool | None) -> None:
        """Measure, dump and hand the record to every open watch; never raise."""
        fields: dict[str, Any] = {}
        try:
            pool_bytes = max(0, int(torch.cuda.memory_reserved(pending.device)) - pending.reserved0)
            fields = {
                "library": pending.origin.library, "user_file": pending.origin.user_file,
                "user_line": pending.origin.user_line, "user_function": pending.origin.user_function,
                "user_code": pending.origin.user_code, "role": pending.role, "input_shapes": pending.input_shapes,
                "details": pending.details, "captured_at": pending.captured_at, "device": f"cuda:{pending.device}",
                "stream_id": pending.stream_id, "stream_is_default": pending.stream_is_default,
                "capture_error_mode": pending.capture_error_mode, "capture_ms": capture_ms,
                "instantiate_ms": instantiate_ms, "pool_bytes": pool_bytes, "pool_given": pending.pool_given,
                "keep_graph_asked": asked, "torch_graph": graph,
            }
            fields["pool_id"] = _pool_id(graph)
            fields["pool_reserved_bytes"] = pool_size_bytes(fields["pool_id"], pending.device)
            fields.update(_dump(graph, self.dot_flags, asked))
        except Exception as exc:  # bookkeeping only: the capture itself succeeded
            fields.setdefault("library", pending.origin.library)
            fields["dot_error"] = f"graphlab could not record this graph: {type(exc).__name__}: {exc}"
        with self.lock:
            sinks = list(self.sinks)
        for sink in sinks:
            try:
                sink(fields)
            except Exception:
                pass


def _pool_id(graph: Any) -> list[int] | None:
    try:
        return [int(v) for v in graph.pool()]
    except Exception:
        return None


def pool_size_bytes(pool_id: list[int] | None, device: int) -> int | None:
    """Bytes the caching allocator holds in one graph pool now (its segments' sizes), or None if unknown.

    Shared pools (CUDAGraph Trees, make_graphed_callables) fill mostly before a capture (warm-up,
    earlier graphs), so this says more than the growth during one capture.
    """
    snapshot = getattr(torch.cuda, "memory_snapshot", None)
    if pool_id is None or snapshot is None:
        return None
    try:
        params = inspect.signature(snapshot).parameters
        kwargs: dict[str, Any] = {}
        if "mempool_id" in params:
            kwargs["mempool_id"] = tuple(pool_id)
        if "include_traces" in params:
            kwargs["include_traces"] = False
        segments = snapshot(**kwargs)
        total, known = 0, False
        for segment in segments:
            owner = segment.get("segment_pool_id")
            if owner is None:
                continue
            known = True
            if list(owner) == list(pool_id) and segment.get("device", device) == device:
                total += int(segment.get("total_size", 0))
        return total if known or not segments else None
    except Exception:
        return None


def _dump(graph: Any, flags: int, asked: bool | None) -> dict[str, Any]:
    """{"dot", "dot_ms"} or {"dot_error"}."""
    dumping = Stopwatch().start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's debug_dump fallback warns "DEBUG: calling debug_dump()"
            dot = dump_dot(graph, flags)
    except (GraphlabError, RuntimeError) as exc:
        if asked is None:
            return {"dot": None, "dot_error": "this graph was created before gl.watch started, without "
                    "keep_graph=True, so torch destroyed it at capture_end: open the watch before the library "
                    "creates its graphs"}
        return {"dot": None, "dot_error": f"{type(exc).__name__}: {exc}"}
    return {"dot": dot, "dot_ms": dumping.stop() * 1e3}


PATCH = Patch()


def is_patched() -> bool:
    """True while any watch is open: `torch.cuda.CUDAGraph` carries graphlab's entries."""
    return PATCH.installed and PATCH.cls is getattr(getattr(torch, "cuda", None), "CUDAGraph", None)


__all__ = ["PATCH", "PATCHED", "Patch", "asked_keep_graph", "check_supported", "is_patched", "pool_size_bytes"]
