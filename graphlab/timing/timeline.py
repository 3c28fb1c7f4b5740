"""Kernel timelines from torch.profiler: what the GPU did during one eager forward and one replay.

Needs torch (imported at the top) and a GPU; cutting one call out of a trace (`trace_from_chrome`, over
`graphlab.timing.chrome_trace`) is plain Python, so it can be tested on a machine without a GPU (a recording's timeline is read by `graphlab.timing.results.Timeline`).
Never imports plotly, graphviz or widgets (the GPU machine has none); `graphlab.viz.plots.plot_timeline`
draws the result. In recorded mode (`gl.set_mode`) `record_timeline` answers from the recordings
(`graphlab.timing.recorded.recorded_timeline`).

Why a timeline explains graphs: in eager mode the host launches kernels one by one, and while it
is busy in Python and the CUDA runtime the GPU sits idle between kernels. A replay submits the whole
graph with one launch, so the kernels run back to back. The idle gaps, summed, are the time a
graph can save.

Example (on a GPU):
    >>> import graphlab as gl
    >>> from graphlab.zoo import get_model
    >>> zm = get_model("mlp")
    >>> tl = gl.record_timeline(zm.build(), zm.make_inputs(1), name="mlp")   # doctest: +SKIP
    >>> round(tl.eager.idle_us), round(tl.graph.idle_us)                      # doctest: +SKIP
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Callable, Sequence

import torch
from torch.profiler import record_function

from graphlab.capture.api import capture
from graphlab.env import require_cuda
from graphlab.errors import TimelineError, TimingError
from graphlab.mode import stand_in
from graphlab.timing.chrome_trace import gpu_event, host_call, trace_events
from graphlab.timing.machine import run_conditions
from graphlab.timing.profiler import run_profiled
from graphlab.timing.recorded import recorded_timeline
from graphlab.timing.results import Span, Timeline, Trace
from graphlab.zoo import get_model

ANNOTATION = "graphlab_call"
#: the host calls that count as launches (`graphlab.timing.chrome_trace.HostCall` names containing one)
LAUNCH_WORDS = ("Launch", "Memcpy", "Memset")


def is_copy(name: str) -> bool:
    """True for memcpy/memset activity ("Memcpy DtoD ...", "Memset (Device)"), False for kernels."""
    return name.startswith("Memcpy") or name.startswith("Memset")


def kernel_count(trace: Trace) -> int:
    """Kernels (not copies) in a trace."""
    return sum(1 for k in trace.kernels if not is_copy(k.name))


def trace_from_chrome(trace: dict[str, Any], mode: str, annotation: str = ANNOTATION) -> Trace:
    """Cut one call out of a Chrome trace written by `torch.profiler` (`export_chrome_trace`).

    The call is the *last* `record_function(annotation)` range; its start becomes 0 µs. Kernels,
    memcpys and memsets that start inside the range become `kernels`; host-side launch calls
    (cudaLaunchKernel, cudaGraphLaunch, cudaMemcpyAsync, ...) become `launches`.
    """
    events = trace_events(trace)
    marks = [e for e in events if e.get("name") == annotation and e.get("cat") == "user_annotation"]
    if not marks:
        raise TimelineError(f"the profiler trace has no {annotation!r} range: profile the call inside record_function")
    mark = max(marks, key=lambda e: float(e["ts"]))
    t0, t1 = float(mark["ts"]), float(mark["ts"]) + float(mark.get("dur", 0.0))

    def span(name: str, start_us: float, dur_us: float) -> Span:
        start = start_us - t0
        return Span(name, start, start + dur_us)

    gpu = [span(g.name, g.start_us, g.dur_us) for g in map(gpu_event, events) if g and t0 <= g.start_us <= t1]
    host = [span(h.name, h.start_us, h.dur_us) for h in map(host_call, events)
            if h and t0 <= h.start_us <= t1 and any(w in h.name for w in LAUNCH_WORDS)]
    return Trace(
        mode=mode,
        kernels=tuple(sorted(gpu, key=lambda s: s.start_us)),
        launches=tuple(sorted(host, key=lambda s: s.start_us)),
        host_us=t1 - t0,
    )


def profile_call(call: Callable[[], Any], mode: str, calls: int = 2) -> Trace:
    """Run `call()` `calls` times under torch.profiler and return the trace of the last call.

    Each call is wrapped in `record_function(ANNOTATION)` and ends with `torch.cuda.synchronize()`,
    so the range covers everything from the host call to the GPU finishing. Earlier calls absorb the
    profiler's own start-up cost.
    """
    def calls_marked() -> None:
        for _ in range(max(1, calls)):
            with record_function(ANNOTATION):
                call()
                torch.cuda.synchronize()

    torch.cuda.synchronize()
    return trace_from_chrome(run_profiled(calls_marked), mode)


@stand_in(recorded_timeline)
def record_timeline(
    model: Any,
    inputs: Any = None,
    *,
    name: str | None = None,
    warmup_calls: int = 5,
    batch_size: int = 1,
) -> Timeline:
    """Profile one eager forward and one graph replay of `model(*inputs)`, kernel by kernel.

    Args:
        model: an `nn.Module` (put in eval mode), any callable of CUDA tensors, or a zoo name ("mlp").
        inputs: a tensor or tuple of tensors on the GPU (random, not zeros: see the zoo's make_inputs);
            for a zoo name, None makes them at `batch_size`.
        name: the model's name for the result (default: its class name).
        warmup_calls: eager calls (and graph calls) before anything is profiled (lazy initialisation, cuBLAS handles).

    Returns:
        A `Timeline`; `.eager` and `.graph` are `Trace`s whose times start at the host call (0 µs).
        The graph call is what a request pays: copy the inputs in, replay, synchronise. In recorded
        mode (`gl.set_mode`), the timeline recorded for this zoo model.
    """
    require_cuda("record_timeline")
    if isinstance(model, str):
        zoo_model = get_model(model)
        name = name or zoo_model.name
        model = zoo_model.build()
        inputs = zoo_model.make_inputs(batch_size) if inputs is None else inputs
    if inputs is None:
        raise TimingError("record_timeline(model, inputs) needs example inputs unless model is a zoo name")
    args: Sequence[Any] = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    if hasattr(model, "eval"):
        model.eval()
    batch_size = int(args[0].shape[0]) if args and hasattr(args[0], "shape") and args[0].dim() > 0 else 1
    with torch.no_grad():
        for _ in range(warmup_calls):
            model(*args)
        torch.cuda.synchronize()
        eager = profile_call(lambda: model(*args), "eager")
        cg = capture(model, *args, name=f"{name or type(model).__name__}-timeline")
        for _ in range(warmup_calls):
            cg(*args)
        torch.cuda.synchronize()
        graph = profile_call(lambda: cg(*args), "graph")
    try:
        kernel_nodes: int | None = len(cg.graph.kernels())
    except Exception:  # the DOT export needs cuda-bindings; the node count is optional here
        kernel_nodes = None
    cg.reset()
    conditions = {
        **run_conditions(),
        "warmup": warmup_calls,  # the recordings' key
        "graph_call": "graphlab.capture: CapturedGraph.__call__ (copy in, replay)",
        "graph_kernel_nodes": kernel_nodes,
        "note": "times from torch.profiler (CUPTI); profiling adds host overhead to every launch",
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    return Timeline(
        model=name or type(model).__name__, batch_size=batch_size, eager=eager, graph=graph, conditions=conditions
    )


__all__ = ["ANNOTATION", "TimelineError", "is_copy", "kernel_count", "profile_call", "record_timeline", "trace_from_chrome"]
