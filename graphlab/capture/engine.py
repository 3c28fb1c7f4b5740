"""The capture engine: the one place where graphlab captures a CUDA graph.

Every front end goes through `CaptureEngine`: `gl.capture` (a function), `gl.capturing` (a `with`
block), `%%cudagraph` (a notebook cell), the latency sweep, `graphlab record`, and the graph cache.
One engine warms up on the device's side stream, captures, instantiates, and measures what *that*
graph cost (`CaptureCost`): so the capture time and memory a sweep reports are those of the graph
it times.

    >>> engine = CaptureEngine(device=0)                               # doctest: +SKIP
    >>> outputs = engine.run(lambda: model(static_x), warmup_calls=3)  # doctest: +SKIP
    >>> engine.graph, engine.cost                                      # doctest: +SKIP

On failure, `abandon` ends the capture, restores the stream and device, drops the failed graph (and
with it its private pool), settles the CUDA generator, and returns one diagnosed `CaptureError`.
Each capture gets its own cuBLAS workspace, inside its own pool (`capture/cublas_workspace.py` says why:
graphs that shared one raced when replayed on two streams at once).
"""
from __future__ import annotations

import contextlib
import inspect
import warnings
from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterator

import torch

from graphlab.clock import Stopwatch
from graphlab.capture.cublas_workspace import clear_cublas_workspaces
from graphlab.capture.diagnose import capture_error, diagnose, empty_capture_error
from graphlab.capture.options import DEFAULT_WARMUP_CALLS
from graphlab.capture.recovery import (clear_cuda_error, end_stray_capture, pool_use_count, release_failed_pool,
                                       settle_rng)
from graphlab.capture.streams import device_index, resolve_stream
from graphlab.errors import BadInputError, GraphlabError
from graphlab.graph.census import node_count
from graphlab.graph.export import has_cuda_bindings, raw_graph_handle

CAPTURE_ERROR_MODES = ("global", "thread_local", "relaxed")


#: captures this process has finished (the first is cold: `CaptureCost.capture_state`)
_CAPTURES_FINISHED = 0

@dataclass(frozen=True)
class CaptureCost:
    """What one capture cost, measured around that capture.

    Attributes:
        capture_ms: host time from capture_begin to capture_end returning (warm-up excluded).
        instantiate_ms: host time to instantiate the executable graph (0 where torch instantiates
            inside capture_end, i.e. without `keep_graph`).
        pool_bytes: growth of `torch.cuda.memory_reserved()` over capture + instantiate: the memory
            the graph's pool took from the device (0 when a shared pool already had room).
        peak_bytes: peak growth of `torch.cuda.memory_allocated()` during capture: what the captured
            work holds at once, before the allocator rounds it up to whole segments.
        exec_bytes: drop of free device memory (`cudaMemGetInfo`) over instantiate: the driver's
            executable graph (page-granular); None where torch instantiates inside capture_end.
        capture_state: "cold" for the first capture this process finished (its time includes CUDA's and
            the libraries' one-time set-up: a few ms more), "warm" for every later one. Two capture
            times compare only in the same state.
    """

    capture_ms: float
    instantiate_ms: float
    pool_bytes: int
    peak_bytes: int
    exec_bytes: int | None
    capture_state: str = "warm"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def torch_keeps_graphs() -> bool:
    """True when `torch.cuda.CUDAGraph(keep_graph=...)` exists (torch >= 2.8), so graphs can be dumped."""
    try:
        return "keep_graph" in inspect.signature(torch.cuda.CUDAGraph).parameters
    except (TypeError, ValueError):
        return False


def pool_id(pool: Any) -> Any:
    """A memory pool id from another captured graph (anything with `.pool()`) or a pool handle."""
    return pool.pool() if callable(getattr(pool, "pool", None)) else pool


class CaptureEngine:
    """One capture on one device and stream: warm up, begin, end (or abandon), and measure.

    Args:
        device: the CUDA device to capture on (index, "cuda:N", torch.device; default: current).
        stream: capture stream: None (graphlab's side stream on `device`), "default" (fails: shows
            why capture needs a side stream) or a `torch.cuda.Stream`.
        pool: memory pool to capture into: None (a private pool), another graph, or a pool handle.
        capture_error_mode: "global" (default), "thread_local" or "relaxed".
        prefer_filename: file whose lines a diagnosis should point at (a notebook cell's name).
    """

    def __init__(self, *, device: Any = None, stream: Any = None, pool: Any = None,
                 capture_error_mode: str = "global", prefer_filename: str | None = None):
        if capture_error_mode not in CAPTURE_ERROR_MODES:
            raise BadInputError(f"capture_error_mode must be one of {', '.join(CAPTURE_ERROR_MODES)}, "
                                f"got {capture_error_mode!r}")
        self.device_index = device_index(device)
        self.stream = resolve_stream(stream, self.device_index)
        # a private pool gets a handle here, so that a capture that fails can give it back (recovery.py)
        self.pool = pool_id(pool) if pool is not None else torch.cuda.graph_pool_handle()
        self.capture_error_mode = capture_error_mode
        self.prefer_filename = prefer_filename
        self.keep_graph = torch_keeps_graphs()
        with torch.cuda.device(self.device_index):
            self.graph = torch.cuda.CUDAGraph(keep_graph=True) if self.keep_graph else torch.cuda.CUDAGraph()
        self.cost: CaptureCost | None = None
        self._contexts: contextlib.ExitStack | None = None
        self._began = self._ended = False  # capture_begin returned; capture_end succeeded
        self._use_count0: int | None = None

    # -- the steps ----------------------------------------------------------------------------------------
    def warm_up(self, run: Callable[[], Any], calls: int) -> None:
        """Run `run()` `calls` times on the capture stream, ordered after and before the caller's stream.

        Warm-up lets libraries initialise lazily (cuBLAS handles and workspaces are per stream) before
        capture, where they could not.
        """
        if calls <= 0:
            return
        with torch.cuda.device(self.device_index):
            current = torch.cuda.current_stream()
            self.stream.wait_stream(current)
            with torch.cuda.stream(self.stream):
                for _ in range(calls):
                    run()
            current.wait_stream(self.stream)

    def begin(self) -> None:
        """Start capturing on the engine's device and stream (which become current until end/abandon)."""
        with torch.cuda.device(self.device_index):
            if torch.cuda.is_current_stream_capturing():
                raise BadInputError("a capture is already running on this stream: finish it (or call "
                                    "gl.recover()) before starting another")
            torch.cuda.synchronize()
            clear_cublas_workspaces()  # the capture makes its own, inside its pool (cublas_workspace.py)
            torch.cuda.empty_cache()
            self._reserved0 = torch.cuda.memory_reserved()
            torch.cuda.reset_peak_memory_stats()
            self._allocated0 = torch.cuda.memory_allocated()
        self._contexts = contextlib.ExitStack()
        self._contexts.enter_context(torch.cuda.device(self.device_index))
        self._contexts.enter_context(torch.cuda.stream(self.stream))
        self._clock = Stopwatch().start()
        self._use_count0 = pool_use_count(self.device_index, self.pool)
        try:
            self.graph.capture_begin(pool=self.pool, capture_error_mode=self.capture_error_mode)
        except Exception as exc:
            raise self.abandon(exc) from None
        self._began = True

    def end(self) -> CaptureCost:
        """Finish the capture, instantiate, and measure; raise CaptureError if it failed or is empty."""
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                self.graph.capture_end()
        except Exception as exc:
            raise self.abandon(exc) from None
        self._ended = True
        capture_ms = self._clock.stop() * 1e3
        clear_cublas_workspaces()  # no later eager GEMM on this stream may use the graph's workspace
        self._exit_contexts()
        empty = False
        for w in caught:
            if "CUDA Graph is empty" in str(w.message):
                empty = True
            elif "debug_dump" not in str(w.message):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        handle = raw_graph_handle(self.graph)
        if handle is not None and has_cuda_bindings():
            empty = node_count(handle) == 0
        if empty:
            self._discard()
            raise empty_capture_error()
        with torch.cuda.device(self.device_index):
            peak_bytes = max(0, torch.cuda.max_memory_allocated() - self._allocated0)
            exec_bytes = None
            instantiating = Stopwatch().start()
            if self.keep_graph and hasattr(self.graph, "instantiate"):
                free0 = torch.cuda.mem_get_info()[0]
                self.graph.instantiate()
                torch.cuda.synchronize()
                exec_bytes = max(0, int(free0 - torch.cuda.mem_get_info()[0]))
            else:
                torch.cuda.synchronize()
            instantiate_ms = instantiating.stop() * 1e3
            pool_bytes = max(0, torch.cuda.memory_reserved() - self._reserved0)
        global _CAPTURES_FINISHED
        state = "cold" if _CAPTURES_FINISHED == 0 else "warm"
        _CAPTURES_FINISHED += 1
        self.cost = CaptureCost(capture_ms, instantiate_ms, int(pool_bytes), int(peak_bytes), exec_bytes, state)
        return self.cost

    def abandon(self, exc: BaseException) -> Exception:
        """End a failed capture and leave the process usable; return the diagnosed CaptureError."""
        if self._contexts is not None and torch.cuda.is_current_stream_capturing():
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # "The CUDA Graph is empty": expected after a failure
                    self.graph.capture_end()
                self._ended = True
            except Exception:
                pass
        if self._contexts is not None:
            end_stray_capture()
        self._exit_contexts()
        clear_cuda_error()
        with contextlib.suppress(Exception):
            clear_cublas_workspaces()
        self._discard()  # reset() gives the pool back only after a successful capture_end
        with contextlib.suppress(Exception):
            torch.cuda.synchronize(self.device_index)
        if not self._ended and (self._began or self._use_count0 is not None):
            release_failed_pool(self.device_index, self.pool, self._use_count0)
        with torch.cuda.device(self.device_index):
            settle_rng(self.stream if self.stream != torch.cuda.default_stream() else
                       resolve_stream(None, self.device_index))
        if isinstance(exc, GraphlabError):
            return exc
        return capture_error(diagnose(exc, self.prefer_filename), exc)

    # -- conveniences --------------------------------------------------------------------------------------
    def run(self, work: Callable[[], Any], warmup_calls: int = DEFAULT_WARMUP_CALLS) -> Any:
        """Warm up `work` `warmup_calls` times, capture one call of it, end; return what the captured call returned."""
        self.warm_up(work, warmup_calls)
        with self.capturing():
            outputs = work()
        return outputs

    @contextlib.contextmanager
    def capturing(self) -> Iterator[CaptureEngine]:
        """begin(); yield; end() — or abandon() and raise the CaptureError if the block raised."""
        self.begin()
        try:
            yield self
        except Exception as exc:
            raise self.abandon(exc) from None
        self.end()

    # -- internals -----------------------------------------------------------------------------------------
    def _exit_contexts(self) -> None:
        if self._contexts is not None:
            contexts, self._contexts = self._contexts, None
            contexts.close()

    def _discard(self) -> None:
        """Drop a graph that will never replay. torch's reset() gives its pool back only when capture_end
        succeeded; `abandon` gives back the pool of a capture that did not end (releasing it after a
        successful capture_end as well tripped the allocator's use-count assert)."""
        with contextlib.suppress(Exception):
            self.graph.reset()


__all__ = ["CAPTURE_ERROR_MODES", "CaptureCost", "CaptureEngine", "pool_id", "torch_keeps_graphs"]
