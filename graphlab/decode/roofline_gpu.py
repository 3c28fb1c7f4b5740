"""The roofline's two rates measured on this GPU: memory bandwidth and the bf16 matmul rate (the arithmetic:
`graphlab.decode.roofline`).

    >>> bw = measure_bandwidth()          # a read-only reduction and a device-to-device copy over a 4 GiB buffer
    >>> bw.best                           # (bytes/s, which of the two)
    >>> measure_mm_rate()                 # FLOP/s of a bf16 8192 x 8192 x 8192 mm

Each: CUDA events around one call, 3 warm-ups, the median of 20 (or more) calls. The buffer is 4 GiB of bf16, far
past the L2 (60 MB on an H200), so every byte comes from HBM. The reduction (`x.sum(dtype=torch.float32)`) reads
the buffer once; the copy reads it and writes another, counted as both.

torch at the top.
"""
from __future__ import annotations

from typing import Any, Callable

import torch

from graphlab.decode.roofline import Bandwidth, mm_flops
from graphlab.env import require_cuda
from graphlab.errors import BadInputError
from graphlab.stats import median

BUFFER_BYTES = 4 * 2**30
WARMUPS, TRIALS = 3, 20
MM_N = 8192


def _event_ms(fn: Callable[[], Any], warmups: int, trials: int) -> list[float]:
    """Milliseconds of each of `trials` calls of `fn`, CUDA events around each, after `warmups` calls."""
    if trials < 1:
        raise BadInputError(f"trials must be at least 1, got {trials}")
    for _ in range(warmups):
        fn()
    torch.cuda.synchronize()
    pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(trials)]
    for start, end in pairs:
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return [start.elapsed_time(end) for start, end in pairs]


def measure_bandwidth(buffer_bytes: int = BUFFER_BYTES, *, warmups: int = WARMUPS, trials: int = TRIALS) -> Bandwidth:
    """HBM bandwidth, bytes/s: a read-only reduction over `buffer_bytes` of bf16, and a copy (read + write)."""
    require_cuda("graphlab.decode.roofline_gpu.measure_bandwidth")
    nbytes = (buffer_bytes // 2) * 2
    read_ms, copy_ms = _buffer_ms(buffer_bytes // 2, warmups, trials)
    torch.cuda.empty_cache()
    return Bandwidth(nbytes / (read_ms / 1e3), 2 * nbytes / (copy_ms / 1e3), nbytes, trials)


def _buffer_ms(elements: int, warmups: int, trials: int) -> tuple[float, float]:
    """Median ms of a read-only reduction and of a copy over `elements` bf16 (the buffers are freed on return)."""
    x = torch.ones(elements, dtype=torch.bfloat16, device="cuda")
    read_ms = median(_event_ms(lambda: x.sum(dtype=torch.float32), warmups, trials))
    y = torch.empty_like(x)
    return read_ms, median(_event_ms(lambda: y.copy_(x), warmups, trials))


def measure_mm_rate(n: int = MM_N, *, warmups: int = WARMUPS, trials: int = TRIALS) -> float:
    """FLOP/s of a bf16 n x n x n matmul on this GPU."""
    require_cuda("graphlab.decode.roofline_gpu.measure_mm_rate")
    ms = _mm_ms(n, warmups, trials)
    torch.cuda.empty_cache()
    return mm_flops(n) / (ms / 1e3)


def _mm_ms(n: int, warmups: int, trials: int) -> float:
    a = torch.randn(n, n, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(n, n, dtype=torch.bfloat16, device="cuda")
    return median(_event_ms(lambda: torch.mm(a, b), warmups, trials))


def measure_machine(buffer_bytes: int = BUFFER_BYTES, mm_n: int = MM_N) -> dict[str, Any]:
    """Both rates, as a scale part's `machine`: {"bandwidth": {...}, "mm_flops_per_s", "mm_n"}."""
    return {"bandwidth": measure_bandwidth(buffer_bytes).to_dict(), "mm_flops_per_s": measure_mm_rate(mm_n),
            "mm_n": mm_n}


__all__ = ["BUFFER_BYTES", "MM_N", "TRIALS", "WARMUPS", "measure_bandwidth", "measure_machine", "measure_mm_rate"]
