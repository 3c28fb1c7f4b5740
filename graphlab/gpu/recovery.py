"""Leave the process usable after a failed capture: end it, clear the error, restore the stream,
and take the CUDA generator out of capture mode.

Layer 2: torch is passed in; cuda-bindings is imported inside functions only.
"""
from __future__ import annotations

import contextlib
import warnings
from typing import Any

from graphlab.env import require_cuda
from graphlab.gpu.dot_export import has_cuda_bindings
from graphlab.gpu.streams import side_stream


def clear_cuda_error() -> None:
    """Clear the last (non-sticky) CUDA error a failed capture left behind."""
    if not has_cuda_bindings():
        return
    with contextlib.suppress(Exception):
        from cuda.bindings import runtime as rt

        rt.cudaGetLastError()


def settle_rng(torch: Any, stream: Any) -> None:
    """Take the CUDA generator out of capture mode after a failed capture.

    torch's capture_end raises before it runs the generator's capture epilogue, so every later
    `torch.randn(..., device="cuda")` fails with "Offset increment outside graph capture encountered
    unexpectedly" until a capture completes. A tiny successful capture on `stream` completes one.
    """
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


def end_allocate_to_pool(torch: Any, device_index: int, pool: Any) -> None:
    """Tell the caching allocator that a capture into `pool` is over (torch's capture_end raises
    before it does so when the capture failed); an error just means torch already did."""
    with contextlib.suppress(Exception):
        torch._C._cuda_endAllocateToPool(device_index, pool)


def end_stray_capture(torch: Any) -> bool:
    """End a capture still running on the current stream (through cuda-bindings); True if one was."""
    if not torch.cuda.is_current_stream_capturing():
        return False
    if has_cuda_bindings():
        from cuda.bindings import runtime as rt

        with contextlib.suppress(Exception):
            result = rt.cudaStreamEndCapture(torch.cuda.current_stream().cuda_stream)
            if int(result[0]) == 0 and result[1] is not None:
                rt.cudaGraphDestroy(result[1])
    return True


def recover(torch: Any | None = None) -> bool:
    """Make the process usable after a failed capture elsewhere (e.g. a raw `torch.cuda.graph` block).

    Ends a capture still running on the current stream, clears the CUDA error it left, and makes the
    default stream current again. Returns True when something had to be repaired.
    """
    torch = torch or require_cuda("recover")
    repaired = end_stray_capture(torch)
    if torch.cuda.current_stream() != torch.cuda.default_stream():
        repaired = True
        torch.cuda.set_stream(torch.cuda.default_stream())
    clear_cuda_error()
    settle_rng(torch, side_stream(torch))
    return repaired


__all__ = ["clear_cuda_error", "end_allocate_to_pool", "end_stray_capture", "recover", "settle_rng"]
