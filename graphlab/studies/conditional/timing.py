"""Time one call three ways, for the conditional-node studies: host, wall and GPU.

    >>> row = time_call(torch, lambda: graph.launch(), repeats=200)     # doctest: +SKIP
    >>> row["host_p50_us"], row["wall_p50_us"], row["gpu_p50_us"]       # doctest: +SKIP

- host: from the call to its return, before any synchronisation: what the CPU spends issuing the
  work (a call that syncs inside, like `.item()`, counts its wait here too);
- wall: from the call to `torch.cuda.synchronize()` returning: what a request sees;
- gpu: CUDA events recorded just before and after the call on the current stream.
Every repetition is synchronised; warm-up calls come first. Statistics from `graphlab.stats`.
Layer 2: torch is passed in.
"""
from __future__ import annotations

import time
from typing import Any, Callable

from graphlab.stats import summarize
from graphlab.errors import TimingError


def time_call(torch: Any, call: Callable[[], Any], *, repeats: int = 200, warmup: int = 10,
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


def study_conditions(torch: Any, **extra: Any) -> dict[str, Any]:
    """Where a study ran: GPU, driver, torch, CUDA, cuda-bindings, NVRTC, date (plus `extra`)."""
    from datetime import datetime, timezone

    from graphlab.conditional.support import conditional_support, driver_version_text
    from graphlab.timing.sweep import run_conditions

    facts = conditional_support().facts
    return {**run_conditions(torch), "cuda_driver": driver_version_text(facts.driver_version),
            "cuda_bindings": facts.cuda_bindings, "nvrtc": facts.nvrtc,
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), **extra}


def graph_facts(graph: Any) -> dict[str, Any]:
    """What building a ConditionalGraph cost, for a study's facts."""
    return {"route": graph.route, "kind": graph.kind, "capture_ms": round(graph.capture_ms, 3),
            "instantiate_ms": round(graph.instantiate_ms, 3), "pool_bytes": graph.pool_bytes,
            "exec_bytes": graph.exec_bytes, "set_condition_kernel": graph.kernel_how}


def max_abs_err(torch: Any, got: Any, want: Any) -> float:
    """Largest absolute difference between two tensors (inf if their shapes differ)."""
    if tuple(got.shape) != tuple(want.shape):
        return float("inf")
    return float((got.float() - want.float()).abs().max().item()) if got.numel() else 0.0


__all__ = ["graph_facts", "max_abs_err", "study_conditions", "time_call"]
