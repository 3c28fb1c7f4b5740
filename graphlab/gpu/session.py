"""The mechanics of one stream capture: side streams, warm-up, begin/end/abandon, and recovery.

Every front end (`capture`, `capturing`, `%%cudagraph`) goes through `CaptureSession`, which owns the
stream switch and leaves the process usable after a failure (ended capture, cleared error, default
stream current again, CUDA generator out of capture mode).
Layer 2: torch is passed in; never plotly, graphviz or widgets.
"""
from __future__ import annotations

import contextlib
import inspect
import time
import warnings
from typing import Any, Callable

from graphlab.env import require_cuda
from graphlab.errors import CaptureError, GraphlabError
from graphlab.gpu.diagnose import capture_error, diagnose, empty_capture_error
from graphlab.gpu.dot_export import has_cuda_bindings, raw_graph_handle

_SIDE_STREAMS: dict[int, Any] = {}


def side_stream(torch: Any, device: int | None = None) -> Any:
    """One shared side stream per device, used for warm-up and capture (as torch.cuda.graph does)."""
    index = torch.cuda.current_device() if device is None else device
    if index not in _SIDE_STREAMS:
        _SIDE_STREAMS[index] = torch.cuda.Stream(device=index)
    return _SIDE_STREAMS[index]


def _resolve_stream(torch: Any, stream: Any) -> Any:
    if stream is None:
        return side_stream(torch)
    if stream == "default":
        return torch.cuda.default_stream()
    return stream


def _clear_cuda_error() -> None:
    """Clear a sticky-looking last error left by a failed capture (non-sticky capture errors only)."""
    if not has_cuda_bindings():
        return
    with contextlib.suppress(Exception):
        from cuda.bindings import runtime as rt

        rt.cudaGetLastError()


def settle_rng(torch: Any, stream: Any | None = None) -> None:
    """Take the CUDA generator out of capture mode after a failed capture.

    torch's capture_end raises before it runs the generator's capture epilogue, so every later
    `torch.randn(..., device="cuda")` fails with "Offset increment outside graph capture encountered
    unexpectedly" until a capture completes. A tiny successful capture completes one.
    """
    stream = stream or side_stream(torch)
    with contextlib.suppress(Exception), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scratch = torch.zeros(1, device="cuda")
        stream.wait_stream(torch.cuda.current_stream())
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.stream(stream):
            graph.capture_begin()
            try:
                scratch.add_(1)
            finally:
                graph.capture_end()
        torch.cuda.current_stream().wait_stream(stream)
        graph.reset()


def recover(torch: Any | None = None) -> bool:
    """Make the process usable after a failed capture elsewhere (e.g. a raw `torch.cuda.graph` block).

    Ends a capture still running on the current stream, clears the CUDA error it left, and makes the
    default stream current again. Returns True when something had to be repaired.
    """
    torch = torch or require_cuda("recover")
    repaired = False
    if torch.cuda.is_current_stream_capturing():
        repaired = True
        stream = torch.cuda.current_stream()
        if has_cuda_bindings():
            from cuda.bindings import runtime as rt

            with contextlib.suppress(Exception):
                result = rt.cudaStreamEndCapture(stream.cuda_stream)
                if int(result[0]) == 0 and result[1] is not None:
                    rt.cudaGraphDestroy(result[1])
    if torch.cuda.current_stream() != torch.cuda.default_stream():
        repaired = True
        torch.cuda.set_stream(torch.cuda.default_stream())
    _clear_cuda_error()
    settle_rng(torch)
    return repaired


class CaptureSession:
    """One capture on one stream: begin, end, or abandon after a failure. Shared by every front end.

    Owns the stream switch, so the caller's current stream is restored whatever happens.
    """

    def __init__(self, torch: Any, *, stream: Any = None, pool: Any = None, capture_error_mode: str = "global",
                 prefer_filename: str | None = None):
        self.torch = torch
        self.stream = _resolve_stream(torch, stream)
        self.pool = pool.pool() if callable(getattr(pool, "pool", None)) else pool
        self.capture_error_mode = capture_error_mode
        self.prefer_filename = prefer_filename
        self.keep_graph = "keep_graph" in inspect.signature(torch.cuda.CUDAGraph).parameters
        self.graph = torch.cuda.CUDAGraph(keep_graph=True) if self.keep_graph else torch.cuda.CUDAGraph()
        self._stream_ctx: Any = None
        self.capture_ms = 0.0
        self.instantiate_ms = 0.0
        self.memory_bytes = 0

    def begin(self) -> None:
        torch = self.torch
        if torch.cuda.is_current_stream_capturing():
            raise GraphlabError("a capture is already running on this stream: finish it (or call "
                                "graphlab.recover()) before starting another")
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        self._reserved_before = torch.cuda.memory_reserved()
        self._stream_ctx = torch.cuda.stream(self.stream)
        self._stream_ctx.__enter__()
        self._t0 = time.perf_counter()
        try:
            self.graph.capture_begin(pool=self.pool, capture_error_mode=self.capture_error_mode)
        except Exception as exc:
            raise self.abandon(exc) from None

    def _exit_stream(self) -> None:
        if self._stream_ctx is not None:
            ctx, self._stream_ctx = self._stream_ctx, None
            ctx.__exit__(None, None, None)

    def end(self) -> None:
        """Finish the capture; raise CaptureError if it failed or recorded nothing."""
        torch = self.torch
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                self.graph.capture_end()
        except Exception as exc:
            self._end_allocate_to_pool()
            raise self.abandon(exc) from None
        self.capture_ms = (time.perf_counter() - self._t0) * 1e3
        self._exit_stream()
        empty = False
        for w in caught:
            if "CUDA Graph is empty" in str(w.message):
                empty = True
            elif "debug_dump" not in str(w.message):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        handle = raw_graph_handle(self.graph)
        if handle is not None and has_cuda_bindings():
            from graphlab.gpu.census import node_count

            empty = node_count(handle) == 0
        if empty:
            with contextlib.suppress(Exception):
                self.graph.reset()
            raise empty_capture_error()
        t1 = time.perf_counter()
        if self.keep_graph and hasattr(self.graph, "instantiate"):
            self.graph.instantiate()
        torch.cuda.synchronize()
        self.instantiate_ms = (time.perf_counter() - t1) * 1e3
        self.memory_bytes = max(0, torch.cuda.memory_reserved() - self._reserved_before)

    def abandon(self, exc: BaseException) -> CaptureError:
        """End a failed capture, restore the stream and error state; return the diagnosed CaptureError."""
        torch = self.torch
        if self._stream_ctx is not None and torch.cuda.is_current_stream_capturing():
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # "The CUDA Graph is empty": expected after a failure
                    self.graph.capture_end()
            except Exception:
                self._end_allocate_to_pool()
        if self._stream_ctx is not None and torch.cuda.is_current_stream_capturing():
            recover(torch)
        self._exit_stream()
        _clear_cuda_error()
        with contextlib.suppress(Exception):
            self.graph.reset()
        with contextlib.suppress(Exception):
            torch.cuda.synchronize()
        settle_rng(torch, None if self.stream == torch.cuda.default_stream() else self.stream)
        return capture_error(diagnose(exc, self.prefer_filename), exc)

    def _end_allocate_to_pool(self) -> None:
        """torch's capture_end raises before it tells the caching allocator that the capture is over;
        tell it here (an error just means torch already did)."""
        with contextlib.suppress(Exception):
            self.torch._C._cuda_endAllocateToPool(self.torch.cuda.current_device(), self.graph.pool())


def warm_up(torch: Any, run: Callable[[], Any], times: int, stream: Any) -> None:
    """Run `run()` `times` times on `stream`, ordered after and before the current stream (docs' pattern)."""
    if times <= 0:
        return
    current = torch.cuda.current_stream()
    stream.wait_stream(current)
    with torch.cuda.stream(stream):
        for _ in range(times):
            run()
    current.wait_stream(stream)
