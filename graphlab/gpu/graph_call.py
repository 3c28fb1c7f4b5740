"""A graph ready to time: capture once, then call with new inputs; and what a capture costs.

Layer 2 (GPU): torch is passed in or imported inside functions.
"""
from __future__ import annotations

import inspect
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence


@dataclass
class GraphCall:
    """A ready-to-call graph: `call(inputs)` copies inputs in, replays, and returns the outputs."""

    call: Callable[[Sequence[Any]], Any]
    source: str
    kernel_nodes: int | None = None
    capture_ms: float | None = None


@dataclass
class GraphCost:
    """What capturing one graph cost, measured around a plain `torch.cuda.CUDAGraph` capture."""

    capture_ms: float
    pool_bytes: int
    exec_bytes: int | None
    peak_bytes: int


def as_tuple(inputs: Any) -> tuple[Any, ...]:
    return tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)


def measure_capture(torch: Any, fn: Callable[..., Any], static_in: Sequence[Any], warmup: int = 3) -> tuple[Any, Any, GraphCost]:
    """Warm up on a side stream, capture `fn(*static_in)`, instantiate; return (graph, output, cost)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmup):
            fn(*static_in)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    keep = "keep_graph" in inspect.signature(torch.cuda.CUDAGraph).parameters
    graph = torch.cuda.CUDAGraph(keep_graph=True) if keep else torch.cuda.CUDAGraph()
    torch.cuda.empty_cache()
    reserved0 = torch.cuda.memory_reserved()
    torch.cuda.reset_peak_memory_stats()
    allocated0 = torch.cuda.memory_allocated()
    start = time.perf_counter()
    with torch.cuda.graph(graph):
        out = fn(*static_in)
    torch.cuda.synchronize()
    peak_bytes = int(torch.cuda.max_memory_allocated() - allocated0)
    exec_bytes = None
    if keep and hasattr(graph, "instantiate"):
        free0 = torch.cuda.mem_get_info()[0]
        graph.instantiate()
        torch.cuda.synchronize()
        exec_bytes = int(free0 - torch.cuda.mem_get_info()[0])
    done = time.perf_counter()
    cost = GraphCost((done - start) * 1e3, int(torch.cuda.memory_reserved() - reserved0), exec_bytes, peak_bytes)
    return graph, out, cost


def build_graph_call(fn: Callable[..., Any], example: Sequence[Any]) -> GraphCall:
    """Capture `fn(*example)` with graphlab's capture engine; the call copies inputs in and replays."""
    from graphlab.gpu.capture import capture

    cg = capture(fn, *example)
    try:
        kernels: int | None = len(cg.graph.kernels())
    except Exception:  # the DOT export needs cuda-bindings; counting is optional here
        kernels = None
    return GraphCall(lambda inputs: cg(*inputs), "graphlab.capture", kernels, cg.capture_ms)
