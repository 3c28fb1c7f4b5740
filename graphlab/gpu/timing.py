"""Eager vs graph-replay latency over batch sizes, measured the honest way.

Layer 2 (GPU): torch is imported inside functions only. Never imports plotly, graphviz or widgets.

Method (docs/latency-method.md explains each choice):
- inputs are random (several sets, rotated call by call), never zeros;
- warm-up calls first (lazy init, cuBLAS handles, allocator), and the very first call is kept
  apart as `first_call_us`;
- every timed call is synchronised: host wall time from the call to `torch.cuda.synchronize()`
  returning (what a request sees) and, in the same loop, CUDA events around the call (GPU side);
- repetitions per run are chosen so a run lasts about `run_s` seconds (within bounds), and the
  run is repeated `runs` times; the spread between run medians is the noise floor;
- order: eager at every batch size first, then the graphs, then one profiled call per point
  (a process that has run torch.profiler launches kernels more slowly afterwards: docs/overhead.md);
- kernel count and GPU-busy time come from that profiled call, capture time and graph memory from
  a separate reference capture with `torch.cuda.CUDAGraph`.

Example (on a GPU):
    >>> import graphlab as gl
    >>> from graphlab.gpu.zoo import get_model
    >>> zm = get_model("mlp")
    >>> result = gl.sweep(zm.build(), zm.make_inputs, [1, 8, 64], name="mlp")   # doctest: +SKIP
    >>> print(result.table())                                                     # doctest: +SKIP
"""
from __future__ import annotations

import inspect
import time
import warnings
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any, Callable, Sequence

from graphlab.core.results import DEFAULT_BATCH_SIZES, LatencyPoint, Sweep
from graphlab.core.stats import median, overhead_share_pct, run_spread_pct, summarize
from graphlab.errors import GraphlabError, TimingError
from graphlab.gpu.graph_call import GraphCall, as_tuple, build_graph_call, measure_capture
from graphlab.gpu.weights import probe_weight_update

INPUT_SETS = 3



def run_conditions(torch: Any) -> dict[str, Any]:
    """GPU, driver, torch and CUDA of this run, for the `conditions` of a result."""
    from graphlab.env import environment

    env = environment()
    return {
        "gpu": env.gpus[0] if env.gpus else None,
        "driver": env.driver,
        "torch": env.torch,
        "cuda": env.torch_cuda,
        "tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32),
    }


def _check_inputs(torch: Any, inputs: Sequence[Any], batch_size: int) -> None:
    for x in inputs:
        if torch.is_tensor(x) and x.numel() > 0 and int(torch.count_nonzero(x)) == 0:
            raise TimingError(
                f"make_inputs({batch_size}) returned an all-zero tensor: use random inputs (zeros can take fast paths)"
            )


def _time_loop(torch: Any, call: Callable[[Sequence[Any]], Any], input_sets: list[Sequence[Any]], repetitions: int) -> tuple[list[float], list[float]]:
    """Time `repetitions` synchronised calls; return (wall_us, event_us)."""
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(repetitions)]
    wall: list[float] = []
    torch.cuda.synchronize()
    for i, (start, end) in enumerate(events):
        inputs = input_sets[i % len(input_sets)]
        t0 = time.perf_counter_ns()
        start.record()
        call(inputs)
        end.record()
        torch.cuda.synchronize()
        wall.append((time.perf_counter_ns() - t0) / 1000.0)
    return wall, [s.elapsed_time(e) * 1000.0 for s, e in events]


def _measure(torch: Any, call: Callable[[Sequence[Any]], Any], input_sets: list[Sequence[Any]], *, mode: str,
             batch_size: int, warmup: int, repetitions: int | None, runs: int, run_s: float,
             first_call_us: float | None, **extra: Any) -> LatencyPoint:
    """Warm up, then time `runs` runs of synchronised calls; no profiling here (see `_with_profile`)."""
    for i in range(warmup):
        call(input_sets[i % len(input_sets)])
    torch.cuda.synchronize()
    if repetitions is None:  # aim for ~run_s seconds per run, from a short probe
        probe, _ = _time_loop(torch, call, input_sets, 10)
        repetitions = int(min(2000, max(50, run_s * 1e6 / max(median(probe), 1.0))))
    wall_all: list[float] = []
    gpu_all: list[float] = []
    run_medians: list[float] = []
    for _ in range(runs):
        wall, gpu = _time_loop(torch, call, input_sets, repetitions)
        wall_all += wall
        gpu_all += gpu
        run_medians.append(median(wall))
    w, g = summarize(wall_all), summarize(gpu_all)
    return LatencyPoint(
        batch_size=batch_size, mode=mode, p10_us=w.p10_us, p50_us=w.p50_us, p90_us=w.p90_us,
        gpu_p10_us=g.p10_us, gpu_p50_us=g.p50_us, gpu_p90_us=g.p90_us, repetitions=repetitions, runs=runs,
        run_p50_us=tuple(run_medians), spread_pct=run_spread_pct(run_medians), first_call_us=first_call_us, **extra,
    )


def _with_profile(point: LatencyPoint, call: Callable[[Sequence[Any]], Any], inputs: Sequence[Any]) -> LatencyPoint:
    """Add kernel count, GPU-busy time and idle share from one profiled call.

    Runs after every timed loop of a sweep: a process that has run torch.profiler launches kernels
    more slowly afterwards (measured in docs/overhead.md), so profiling first would bias the timings.
    """
    from graphlab.gpu.timeline import kernel_count, profile_call

    try:
        trace = profile_call(lambda: call(inputs), point.mode)
    except Exception as exc:  # the timings stand without the profile; say why it is missing
        warnings.warn(f"profiling batch {point.batch_size} ({point.mode}) failed, no kernel count/busy time: {exc}",
                      stacklevel=2)
        return point
    if not trace.kernels:
        return point
    busy = trace.busy_us
    kernels = kernel_count(trace) if point.mode == "eager" or point.kernel_count is None else point.kernel_count
    return replace(point, kernel_count=kernels, gpu_busy_us=busy,
                   launch_overhead_pct=overhead_share_pct(busy, point.p50_us))


def _call_make_inputs(make_inputs: Callable[..., Any], batch_size: int, seed: int) -> tuple[Any, ...]:
    try:
        takes_seed = "seed" in inspect.signature(make_inputs).parameters
    except (TypeError, ValueError):
        takes_seed = False
    return as_tuple(make_inputs(batch_size, seed=seed) if takes_seed else make_inputs(batch_size))


def sweep(
    model: Any,
    make_inputs: Callable[..., Any] | None = None,
    batch_sizes: Sequence[int] = DEFAULT_BATCH_SIZES,
    *,
    name: str | None = None,
    repetitions: int | None = None,
    runs: int = 5,
    warmup: int = 20,
    run_s: float = 0.05,
    profile: bool = True,
    check_weights: bool = True,
    progress: bool = True,
    on_point: Callable[[LatencyPoint], None] | None = None,
) -> Sweep:
    """Measure eager and graph latency of `model` at each batch size.

    Args:
        model: an `nn.Module` / callable of CUDA tensors, or a zoo name ("mlp", "gpt", ...).
        make_inputs: `make_inputs(batch_size, seed=...)` -> tensor or tuple of tensors (random);
            optional for zoo names.
        batch_sizes: batch sizes to measure, in order.
        repetitions: timed calls per run (default: enough for ~`run_s` seconds, 50..2000).
        runs: repeated runs per point; their spread is reported as `spread_pct`.
        warmup: untimed calls before timing, per mode and batch size.
        profile: also profile one call per point (kernel count, GPU-busy time, overhead share),
            after all timings.
        check_weights: also probe what a graph does when weights change (`probe_weight_update`).
        progress: show a tqdm.auto bar (one step per timed point: eager first, then graphs).
        on_point: called with each `LatencyPoint` as soon as it is measured (the widget uses it).

    Returns:
        A `Sweep` with an eager and a graph point per batch size.
    """
    from graphlab.env import require_cuda

    torch = require_cuda("sweep")
    if isinstance(model, str):
        from graphlab.gpu.zoo import get_model

        zoo_model = get_model(model)
        name = name or zoo_model.name
        make_inputs = make_inputs or zoo_model.make_inputs
        model = zoo_model.build()
    if make_inputs is None:
        raise TimingError("sweep() needs make_inputs(batch_size, seed=...) unless model is a zoo name")
    if not batch_sizes:
        raise TimingError("sweep() needs at least one batch size, e.g. [1, 8, 64]")
    if hasattr(model, "eval"):
        model.eval()
    name = name or type(model).__name__
    common = dict(warmup=warmup, repetitions=repetitions, runs=runs, run_s=run_s)
    bar = _progress_bar(progress, 2 * len(batch_sizes), name)

    def done(point: LatencyPoint) -> None:
        if on_point is not None:
            on_point(point)
        if bar is not None:
            bar.set_postfix_str(f"{point.mode} batch {point.batch_size}: p50 {point.p50_us:.1f} µs")
            bar.update(1)

    eager: dict[int, LatencyPoint] = {}
    graph: dict[int, LatencyPoint] = {}
    calls: dict[int, GraphCall] = {}
    with torch.no_grad():
        inputs = {b: [_call_make_inputs(make_inputs, b, seed) for seed in range(INPUT_SETS)] for b in batch_sizes}
        for batch_size in batch_sizes:  # 1. eager, before captures and profiling touch the process
            _check_inputs(torch, inputs[batch_size][0], batch_size)
            torch.cuda.synchronize()
            t0 = time.perf_counter_ns()
            model(*inputs[batch_size][0])
            torch.cuda.synchronize()
            eager[batch_size] = _measure(torch, lambda xs: model(*xs), inputs[batch_size], mode="eager",
                                         batch_size=batch_size, first_call_us=(time.perf_counter_ns() - t0) / 1e3,
                                         **common)
            done(eager[batch_size])
        for batch_size in batch_sizes:  # 2. graphs: capture cost, then copy-in + replay timings
            _, _, cost = measure_capture(torch, model, tuple(x.clone() for x in inputs[batch_size][0]))
            torch.cuda.empty_cache()
            graph_call = build_graph_call(model, inputs[batch_size][0])
            t0 = time.perf_counter_ns()
            graph_call.call(inputs[batch_size][0])
            torch.cuda.synchronize()
            graph[batch_size] = _measure(
                torch, graph_call.call, inputs[batch_size], mode="graph", batch_size=batch_size,
                first_call_us=(time.perf_counter_ns() - t0) / 1e3, kernel_count=graph_call.kernel_nodes,
                capture_ms=cost.capture_ms, graph_memory_bytes=cost.pool_bytes, graph_exec_bytes=cost.exec_bytes,
                graph_peak_bytes=cost.peak_bytes,
                **common)
            if profile:
                calls[batch_size] = graph_call
            del graph_call
            done(graph[batch_size])
        if profile:  # 3. profiling last (see _with_profile)
            for batch_size in batch_sizes:
                eager[batch_size] = _with_profile(eager[batch_size], lambda xs: model(*xs), inputs[batch_size][0])
                graph[batch_size] = _with_profile(graph[batch_size], calls[batch_size].call, inputs[batch_size][0])
        calls.clear()
        torch.cuda.empty_cache()
    if bar is not None:
        bar.close()
    points = [p for b in batch_sizes for p in (eager[b], graph[b])]
    conditions = {
        **run_conditions(torch),
        "warmup": warmup, "runs": runs, "repetitions": repetitions or f"auto (~{run_s} s per run, 50..2000)",
        "input_sets": INPUT_SETS, "graph_call": "graphlab.capture",
        "wall_time": "host perf_counter from call to torch.cuda.synchronize() returning",
        "gpu_time": "CUDA events recorded on the current stream around the call",
        "capture_ms": "reference torch.cuda.CUDAGraph capture + instantiate, warm-up excluded",
        "graph_memory_bytes": "torch.cuda.memory_reserved() growth over that capture (the graph's private pool)",
        "graph_exec_bytes": "drop of cudaMemGetInfo free memory over instantiate() (driver's executable graph)",
        "graph_peak_bytes": "peak torch.cuda.memory_allocated() growth during that capture (bytes the pool must hold)",
        "order": "eager at every batch size, then graphs, then one profiled call per point (profiling last: "
                 "a process that has profiled launches kernels more slowly)",
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    weights = None
    if check_weights and hasattr(model, "parameters"):
        try:
            weights = probe_weight_update(model, _call_make_inputs(make_inputs, batch_sizes[0], 0))
        except Exception as exc:  # keep the sweep; record why the probe is missing
            weights = {"error": f"{type(exc).__name__}: {exc}"}
    return Sweep(model=name, points=tuple(points), conditions=conditions, weight_update=weights)


def _progress_bar(progress: bool, total: int, name: str) -> Any:
    """A tqdm.auto bar (one step per timed point), or None without progress or tqdm."""
    if not progress:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:  # no tqdm: measure without a bar
        return None
    return tqdm(total=total, desc=f"{name}: eager, then graphs", unit="point")


__all__ = ["DEFAULT_BATCH_SIZES", "TimingError", "run_conditions", "sweep"]
