"""torch.profiler around a piece of work, its Chrome trace handed back as a dict: the one profiler runner.

Torch at the top. The kernel timeline (`graphlab.timing.timeline.profile_call`) and `gl.profile`'s replays
(`graphlab.profile.api.profile_replays`) run their work through `run_profiled`; what the trace says is read by
`graphlab.timing.chrome_trace`.

    >>> trace = run_profiled(lambda: model(x))               # doctest: +SKIP
    >>> [gpu_event(e) for e in trace_events(trace)]           # doctest: +SKIP
"""
from __future__ import annotations

import json
import os
import tempfile
from typing import Any, Callable

from torch.profiler import ProfilerActivity, profile


def run_profiled(work: Callable[[], Any]) -> dict[str, Any]:
    """Run `work()` under torch.profiler (CPU and CUDA activities); the Chrome trace it wrote, read back.

    The trace goes through a temporary file (torch.profiler exports to a path), removed before returning.
    """
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        work()
    fd, path = tempfile.mkstemp(suffix=".json", prefix="graphlab-trace-")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    finally:
        os.unlink(path)


__all__ = ["run_profiled"]
