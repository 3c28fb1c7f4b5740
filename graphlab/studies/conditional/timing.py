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

from typing import Any, Callable

import torch

from graphlab.errors import TimingError
from graphlab.stats import summarize
from graphlab.clock import split_us
from graphlab.timing.sync import cuda_sync


def time_call(call: Callable[[], Any], *, repeats: int = 200, warmup_calls: int = 10,
              setup: Callable[[], Any] | None = None) -> dict[str, float]:
    """Median and spread of host, wall and GPU time of `call()` over `repeats` synchronised calls.

    Args:
        call: the work to time (one request).
        setup: run (and synchronised) before every call, outside the timing: resets state a call
            consumes (a decoder's prompt, a loop counter).
    """
    if repeats < 1:
        raise TimingError(f"repeats must be at least 1, got {repeats}")
    for _ in range(warmup_calls):
        if setup is not None:
            setup()
        call()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(repeats)]
    pending = iter(events)
    current: list[Any] = []

    def before() -> None:
        current[:] = next(pending)
        current[0].record()

    host, wall = split_us(call, repeats, cuda_sync(), setup=setup, around=(before, lambda: current[1].record()))
    gpu = [s.elapsed_time(e) * 1e3 for s, e in events]
    out: dict[str, float] = {"repeats": repeats}
    for label, samples in (("host", host), ("wall", wall), ("gpu", gpu)):
        s = summarize(samples)
        out.update({f"{label}_p10_us": round(s.p10_us, 2), f"{label}_p50_us": round(s.p50_us, 2),
                    f"{label}_p90_us": round(s.p90_us, 2)})
    return out


__all__ = ["time_call"]
