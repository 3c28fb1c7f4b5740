"""GPU activity events from a torch.profiler Chrome trace, grouped into one list per graph replay.

Pure: standard library only. torch.profiler (Kineto over CUPTI) writes every kernel, memcpy and memset that runs
inside a `cudaGraphLaunch` as its own event, with its duration, grid, block and stream, and with the correlation id
of the launch that submitted it. There is no graph id or graph node id in torch 2.11's events; newer Kineto builds
add `graph node id` (read here when present, `GpuEvent.node_id`).

    >>> replays = replays_from_chrome(json.load(open("trace.json")))     # doctest: +SKIP
    >>> len(replays), replays[0][0].name                                   # doctest: +SKIP
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graphlab.errors import BadInputError

#: the Chrome trace categories of GPU work, and the kind of node each one is
GPU_CATEGORIES = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
GRAPH_LAUNCH = "cudaGraphLaunch"
#: event argument names Kineto builds use for a kernel's graph node id (feature-detected, none in torch 2.11)
NODE_ID_ARGS = ("graph node id", "graphNodeId", "graph_node_id")

Dim3 = tuple[int, int, int]


@dataclass(frozen=True)
class GpuEvent:
    """One kernel, memcpy or memset the GPU ran, as the profiler saw it.

    Attributes:
        name: the demangled kernel name ("void at::native::...") or "Memcpy DtoD (Device -> Device)".
        kind: "kernel", "memcpy" or "memset".
        start_us, dur_us: when it started (trace clock, µs) and how long it ran.
        grid, block: kernel launch dimensions, when the trace gives them.
        bytes: memcpy/memset size, when given.
        stream: the CUDA stream id it ran on.
        correlation: the correlation id; every event of one replay carries its cudaGraphLaunch's.
        node_id: the graph node id where the trace gives one (newer Kineto), else None.
    """

    name: str
    kind: str
    start_us: float
    dur_us: float
    grid: Dim3 | None = None
    block: Dim3 | None = None
    bytes: int | None = None
    stream: int | None = None
    correlation: int | None = None
    node_id: int | None = None

    @property
    def end_us(self) -> float:
        return self.start_us + self.dur_us

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, "start_us": self.start_us, "dur_us": self.dur_us}
        for key in ("grid", "block", "bytes", "stream", "correlation", "node_id"):
            value = getattr(self, key)
            if value is not None:
                out[key] = list(value) if isinstance(value, tuple) else value
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GpuEvent:
        try:
            return cls(name=str(data["name"]), kind=str(data["kind"]), start_us=float(data["start_us"]),
                       dur_us=float(data["dur_us"]), grid=_dim3(data.get("grid")), block=_dim3(data.get("block")),
                       bytes=_int(data.get("bytes")), stream=_int(data.get("stream")),
                       correlation=_int(data.get("correlation")), node_id=_int(data.get("node_id")))
        except (KeyError, TypeError, ValueError) as exc:
            raise BadInputError(f"not a GPU event ({exc}): {str(data)[:80]}") from None


def _dim3(value: Any) -> Dim3 | None:
    if value is None:
        return None
    parts = [int(v) for v in value]
    if len(parts) != 3:
        raise BadInputError(f"a launch dimension has 3 parts, not {len(parts)}")
    return (parts[0], parts[1], parts[2])


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def event_from_chrome(event: dict[str, Any]) -> GpuEvent | None:
    """The `GpuEvent` of one Chrome trace event, or None when it is not GPU work."""
    kind = GPU_CATEGORIES.get(str(event.get("cat", "")))
    if kind is None or event.get("ph") != "X" or "ts" not in event:
        return None
    args = event.get("args") or {}
    node_id = next((args[k] for k in NODE_ID_ARGS if args.get(k) is not None), None)
    return GpuEvent(
        name=str(event.get("name", "?")), kind=kind, start_us=float(event["ts"]), dur_us=float(event.get("dur", 0.0)),
        grid=_dim3(args["grid"]) if isinstance(args.get("grid"), list) else None,
        block=_dim3(args["block"]) if isinstance(args.get("block"), list) else None,
        bytes=_int(args.get("bytes")), stream=_int(args.get("stream")),
        correlation=_int(args.get("correlation")), node_id=_int(node_id),
    )


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
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        raise BadInputError("not a Chrome trace: expected a JSON object with a 'traceEvents' list "
                            "(torch.profiler's export_chrome_trace writes one)")
    if uncorrelated not in ("drop", "by_time"):
        raise BadInputError(f"uncorrelated must be 'drop' or 'by_time', got {uncorrelated!r}")
    launches: list[tuple[float, int]] = []
    gpu: dict[int, list[GpuEvent]] = {}
    for raw in trace["traceEvents"]:
        if not isinstance(raw, dict):
            continue
        if raw.get("cat") in ("cuda_runtime", "cuda_driver") and "GraphLaunch" in str(raw.get("name", "")):
            corr = (raw.get("args") or {}).get("correlation")
            if corr is not None:
                launches.append((float(raw.get("ts", 0.0)), int(corr)))
            continue
        event = event_from_chrome(raw)
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


__all__ = ["GPU_CATEGORIES", "GRAPH_LAUNCH", "NODE_ID_ARGS", "GpuEvent", "event_from_chrome", "replays_from_chrome"]
