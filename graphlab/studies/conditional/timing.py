"""Time one call three ways, for the conditional-node studies: host, wall and GPU.

    >>> row = time_call(lambda: graph.launch(), repeats=200)            # doctest: +SKIP
    >>> row["host_p50_us"], row["wall_p50_us"], row["gpu_p50_us"]       # doctest: +SKIP

- host: from the call to its return, before any synchronisation: what the CPU spends issuing the
  work (a call that syncs inside, like `.item()`, counts its wait here too);
- wall: from the call to `torch.cuda.synchronize()` returning: what a request sees;
- gpu: CUDA events recorded just before and after the call on the current stream.
Every repetition is synchronised; warm-up calls come first. Statistics from `graphlab.stats`.
"""
from __future__ import annotations

import time
from typing import Any, Callable

import torch

from graphlab.errors import TimingError
from graphlab.stats import summarize


def time_call(call: Callable[[], Any], *, repeats: int = 200, warmup: int = 10,
              setup: Callable[[], Any] | None = None) -> dict[str, float]:
    """Median and spread of host, wall and GPU time of `call()` over `repeats` synchronised calls.

    Args:
        call: the work to time (one request).
        setup: run (and synchronised) before every call, outside the timing: resets state a call
            consumes (a decoder's prompt, a loop counter).
    """
    if repeats < 1:
        raise TimingError(f"repeats must be at least 1, got {repeats}")
    for _ in range(warmup):
        if setup is not None:
            setup()
        call()
    torch.cuda.synchronize()
    host: list[float] = []
    wall: list[float] = []
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(repeats)]
    for start, end in events:
        if setup is not None:
            setup()
            torch.cuda.synchronize()
        t0 = time.perf_counter_ns()
        start.record()
        call()
        t1 = time.perf_counter_ns()
        end.record()
        torch.cuda.synchronize()
        t2 = time.perf_counter_ns()
        host.append((t1 - t0) / 1e3)
        wall.append((t2 - t0) / 1e3)
    gpu = [s.elapsed_time(e) * 1e3 for s, e in events]
    out: dict[str, float] = {"repeats": repeats}
    for label, samples in (("host", host), ("wall", wall), ("gpu", gpu)):
        s = summarize(samples)
        out.update({f"{label}_p10_us": round(s.p10_us, 2), f"{label}_p50_us": round(s.p50_us, 2),
                    f"{label}_p90_us": round(s.p90_us, 2)})
    return out


__all__ = ["time_call"]
