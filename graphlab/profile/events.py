"""GPU activity events from a torch.profiler Chrome trace, grouped into one list per graph replay.

Pure: standard library only. The trace is read by `graphlab.timing.chrome_trace` (its `GpuEvent`s, its host
calls); what is specific here is which events belong to which `cudaGraphLaunch`.

    >>> replays = replays_from_chrome(json.load(open("trace.json")))     # doctest: +SKIP
    >>> len(replays), replays[0][0].name                                   # doctest: +SKIP
"""
from __future__ import annotations

from typing import Any

from graphlab.errors import BadInputError
from graphlab.timing.chrome_trace import GpuEvent, gpu_event, host_call, trace_events

GRAPH_LAUNCH = "cudaGraphLaunch"


def replays_from_chrome(trace: dict[str, Any], uncorrelated: str = "drop") -> list[list[GpuEvent]]:
    """The GPU events of every graph replay in a Chrome trace: one list per `cudaGraphLaunch`, in launch order,
    each list sorted by start time.

    `uncorrelated`: what to do with GPU events whose correlation id is no launch's. "drop" (default) leaves them
    out. "by_time" gives each to the last replay whose first event started at or before it: right only when the
    replays ran one at a time with nothing else on the GPU (`gl.profile` synchronizes after each). On the H200
    (driver 580.159, torch 2.11) the kernels inside a conditional node's body come this way: CUPTI reports them,
    but not under the launch's correlation id.

    Raises:
        BadInputError: the trace is not a dict with `traceEvents`, or holds no `cudaGraphLaunch`.
    """
    events = trace_events(trace)
    if uncorrelated not in ("drop", "by_time"):
        raise BadInputError(f"uncorrelated must be 'drop' or 'by_time', got {uncorrelated!r}")
    launches: list[tuple[float, int]] = []
    gpu: dict[int, list[GpuEvent]] = {}
    for raw in events:
        call = host_call(raw)
        if call is not None:
            if "GraphLaunch" in call.name and call.correlation is not None:
                launches.append((call.start_us, call.correlation))
            continue
        event = gpu_event(raw)
        if event is not None and event.correlation is not None:
            gpu.setdefault(event.correlation, []).append(event)
    if not launches:
        raise BadInputError("the trace holds no cudaGraphLaunch: profile graph replays (CPU and CUDA activities)")
    replays = [sorted(gpu.pop(corr, []), key=lambda e: e.start_us) for _, corr in sorted(launches)]
    if uncorrelated == "by_time":
        firsts = [(r[0].start_us, i) for i, r in enumerate(replays) if r]
        for event in sorted((e for events in gpu.values() for e in events), key=lambda e: e.start_us):
            owner = max((i for start, i in firsts if start <= event.start_us), default=None)
            if owner is not None:
                replays[owner].append(event)
        for r in replays:
            r.sort(key=lambda e: e.start_us)
    return replays


__all__ = ["GRAPH_LAUNCH", "replays_from_chrome"]
