"""Leave the process usable after a failed capture: end it, clear the error, restore the stream,
and take the CUDA generator out of capture mode. cuda-bindings (optional) is imported where it is used.
"""
from __future__ import annotations

import contextlib
import warnings
from typing import Any

import torch

from graphlab.env import require_cuda
from graphlab.graph.export import has_cuda_bindings
from graphlab.capture.streams import side_stream


def clear_cuda_error() -> None:
    """Clear the last (non-sticky) CUDA error a failed capture left behind."""
    if not has_cuda_bindings():
        return
    with contextlib.suppress(Exception):
        from cuda.bindings import runtime as rt

        rt.cudaGetLastError()


def settle_rng(stream: Any) -> None:
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


def end_allocate_to_pool(device_index: int, pool: Any) -> None:
    """Tell the caching allocator that a capture into `pool` is over (torch's capture_end raises
    before it does so when the capture failed); an error just means torch already did."""
    with contextlib.suppress(Exception):
        torch._C._cuda_endAllocateToPool(device_index, pool)


def pool_use_count(device_index: int, pool: Any) -> int | None:
    """How many graphs (and captures under way) hold memory pool `pool`; None where torch does not say."""
    get = getattr(torch._C, "_cuda_getPoolUseCount", None)
    if get is None:
        return None
    try:
        return int(get(device_index, pool))
    except Exception:  # an unknown pool, or another signature
        return None


def release_failed_pool(device_index: int, pool: Any, use_count_before: int | None) -> bool:
    """Give back the pool reference a capture took when its capture_end never succeeded; True if released.

    torch's `CUDAGraph.reset()` releases a graph's pool only after a successful `capture_end`
    (CUDAGraph.cpp: `if (capture_ended_) releasePool(...)`), so a failed capture kept its private pool,
    and with it every block allocated during the capture: 55 MiB per failed capture of a 1024x1024
    GEMM on the H200 (tests/gpu/test_gpu_failures.py). Where torch reports use counts, the reference
    is given back only if the capture really took one; else the caller says whether capture_begin ran.
    """
    end_allocate_to_pool(device_index, pool)
    now = pool_use_count(device_index, pool)
    if now is not None and use_count_before is not None and now <= use_count_before:
        return False
    release = getattr(torch._C, "_cuda_releasePool", None)
    if release is None:
        return False
    try:
        release(device_index, pool)
    except Exception:  # torch already gave it back
        return False
    return True


def end_stray_capture() -> bool:
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


def recover() -> bool:
    """Make the process usable after a failed capture elsewhere (e.g. a raw `torch.cuda.graph` block).

    Ends a capture still running on the current stream, clears the CUDA error it left, and makes the
    default stream current again. Returns True when something had to be repaired.
    """
    require_cuda("recover")
    repaired = end_stray_capture()
    if torch.cuda.current_stream() != torch.cuda.default_stream():
        repaired = True
        torch.cuda.set_stream(torch.cuda.default_stream())
    clear_cuda_error()
    settle_rng(side_stream())
    return repaired


__all__ = ["clear_cuda_error", "end_allocate_to_pool", "end_stray_capture", "pool_use_count", "recover",
           "release_failed_pool", "settle_rng"]
