"""The Chrome trace torch.profiler writes, read: its complete events, the GPU work in it, the host's CUDA calls.

Pure: standard library only. The one reader of profiler traces: the kernel timeline (`graphlab.timing.timeline`
cuts one call out of a trace) and `gl.profile` (`graphlab.profile.events` groups a trace by graph replay) both read
their events through it; `graphlab.timing.profiler` runs the profiler and hands the trace over as a dict.

torch.profiler (Kineto over CUPTI) writes every kernel, memcpy and memset as its own event, with its duration,
grid, block and stream, and with the correlation id of the host call that submitted it. There is no graph id or
graph node id in torch 2.11's events; newer Kineto builds add `graph node id` (read when present,
`GpuEvent.node_id`).

    >>> trace = {"traceEvents": [{"ph": "X", "cat": "kernel", "name": "gemm", "ts": 10, "dur": 2,
    ...                           "args": {"correlation": 7}}]}
    >>> [gpu_event(e).correlation for e in trace_events(trace)]
    [7]
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from graphlab.errors import BadInputError

#: the Chrome trace categories of GPU work, and the kind of node each one is
GPU_CATEGORIES = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
#: the categories of the host's CUDA runtime and driver calls (launches, copies, syncs)
HOST_CATEGORIES = ("cuda_runtime", "cuda_driver")
#: event argument names Kineto builds use for a kernel's graph node id (feature-detected, none in torch 2.11)
NODE_ID_ARGS = ("graph node id", "graphNodeId", "graph_node_id")

Dim3 = tuple[int, int, int]


def trace_events(trace: Any) -> list[dict[str, Any]]:
    """The complete events ("ph": "X", with a start time) of a Chrome trace, in the order written.

    Raises:
        BadInputError: `trace` is not a JSON object with a `traceEvents` list.
    """
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        raise BadInputError("not a Chrome trace: expected a JSON object with a 'traceEvents' list "
                            "(torch.profiler's export_chrome_trace writes one)")
    return [e for e in trace["traceEvents"] if isinstance(e, dict) and e.get("ph") == "X" and "ts" in e]


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


def gpu_event(event: dict[str, Any]) -> GpuEvent | None:
    """The `GpuEvent` of one complete trace event, or None when it is not GPU work."""
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


class HostCall(NamedTuple):
    """One CUDA runtime or driver call the host made (cudaLaunchKernel, cudaGraphLaunch, cudaMemcpyAsync, ...)."""

    name: str
    start_us: float
    dur_us: float
    correlation: int | None


def host_call(event: dict[str, Any]) -> HostCall | None:
    """The `HostCall` of one complete trace event, or None when it is not a CUDA runtime or driver call."""
    if event.get("cat") not in HOST_CATEGORIES:
        return None
    return HostCall(str(event.get("name", "")), float(event.get("ts", 0.0)), float(event.get("dur", 0.0)),
                    _int((event.get("args") or {}).get("correlation")))


__all__ = ["GPU_CATEGORIES", "HOST_CATEGORIES", "NODE_ID_ARGS", "GpuEvent", "HostCall", "gpu_event", "host_call",
           "trace_events"]
