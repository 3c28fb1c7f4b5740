"""Eager vs graph-replay latency over batch sizes, measured so that a speedup means the same on every run.

Needs torch (imported at the top) and a GPU. Never imports plotly, graphviz or widgets. In recorded mode (`gl.set_mode`)
`sweep` answers from the recordings (`graphlab.timing.recorded.recorded_sweep`).

Method (docs/latency-method.md explains each choice), in three phases:
1. prepare, batch size by batch size: random inputs (three sets, rotated call by call; never zeros),
   one cold eager call (`first_call_us`), one capture with `gl.capture` (the graph that is timed is
   the graph whose capture time and memory are reported: `capture_ms`, `instantiate_ms`,
   `pool_bytes`, `graph_peak_bytes`, `graph_exec_bytes`), its cold first call, then eager and
   graph warmed up until their medians settle and their blocks sized to ~`block_ms`;
2. time: `pairs` rounds; each round times one (eager block, graph block) pair at every batch size,
   eager first in even rounds (`graphlab.timing.blocks.time_rounds`), so both modes, and all batch
   sizes, see the same machine state; every block median is kept, with the GPU clock, the CPU clock
   and the host's speed read after it;
3. profile: one profiled call per point (kernel count, GPU-busy time), last, because a process that
   has profiled launches kernels more slowly afterwards.

The results say how the host behaved: `sweep.paired(b)` (speedup per pair, its spread, per host
mode), `sweep.modes_report()` (the speed modes the eager blocks fell into), `point.fastest_mode_p50_us`.

Example (on a GPU):
    >>> import graphlab as gl
    >>> result = gl.sweep("mlp", batch_sizes=[1, 8, 64])      # doctest: +SKIP
    >>> print(result.table()); print(result.modes_report())   # doctest: +SKIP
"""
from __future__ import annotations

import inspect
import warnings
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any, Callable, Sequence

import torch

from graphlab.clock import now_ns, now_s
from graphlab.capture.api import capture
from graphlab.env import require_cuda
from graphlab.errors import TimingError
from graphlab.mode import stand_in
from graphlab.progress import progress_bar
from graphlab.stats import overhead_share_pct, percentile, run_spread_pct, summarize
from graphlab.timing import host_modes
from graphlab.timing.blocks import BlockSeries, PairPlan, prepare_pair, time_rounds
from graphlab.timing.options import (FASTEST, MAX_BLOCK_CALLS, MIN_BLOCK_CALLS, SETTLE_PCT, WARMUP_BLOCK_MS,
                                     SweepOptions)
from graphlab.timing.host_modes import READINGS, HostTarget, readings_before_pairs
from graphlab.timing.machine import ClockReader, run_conditions
from graphlab.timing.recorded import recorded_sweep
from graphlab.timing.results import LatencyPoint, Sweep
from graphlab.timing.timeline import kernel_count, profile_call
from graphlab.timing.weights import probe_weight_update
from graphlab.zoo import DEFAULT_BATCH_SIZES, get_model

INPUT_SETS = 3


def _as_tuple(inputs: Any) -> tuple[Any, ...]:
    return tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)


def _check_inputs(inputs: Sequence[Any], batch_size: int) -> None:
    for x in inputs:
        if torch.is_tensor(x) and x.numel() > 0 and int(torch.count_nonzero(x)) == 0:
            raise TimingError(
                f"make_inputs({batch_size}) returned an all-zero tensor: use random inputs (zeros can take fast paths)"
            )


def _call_make_inputs(make_inputs: Callable[..., Any], batch_size: int, seed: int) -> tuple[Any, ...]:
    try:
        takes_seed = "seed" in inspect.signature(make_inputs).parameters
    except (TypeError, ValueError):
        takes_seed = False
    return _as_tuple(make_inputs(batch_size, seed=seed) if takes_seed else make_inputs(batch_size))


@dataclass
class _Prepared:
    """One batch size, captured and warmed up, waiting for the rounds."""

    case: Case
    graph: Any
    plan: PairPlan
    inputs: tuple[Any, ...]
    eager_first_us: float
    graph_first_us: float


def _timed_once(call: Callable[[], Any]) -> float:
    """Wall µs of one synchronised call (the cold first call of a mode)."""
    torch.cuda.synchronize()
    t0 = now_ns()
    call()
    torch.cuda.synchronize()
    return (now_ns() - t0) / 1e3


def _point(series: BlockSeries, batch_size: int, first_call_us: float, extra: dict[str, Any]) -> LatencyPoint:
    """One mode's `LatencyPoint` at one batch size from its blocks; `extra`: more fields (seq_len, graph cost)."""
    wall, gpu = summarize(series.wall_us), summarize(series.gpu_us) if series.gpu_us else None
    return LatencyPoint(
        batch_size=batch_size, mode=series.mode, p10_us=wall.p10_us, p50_us=wall.p50_us, p90_us=wall.p90_us,
        gpu_p10_us=gpu.p10_us if gpu else None, gpu_p50_us=gpu.p50_us if gpu else None,
        gpu_p90_us=gpu.p90_us if gpu else None, repetitions=series.calls_per_block,
        runs=len(series.block_p50_us), spread_pct=run_spread_pct(series.block_p50_us), first_call_us=first_call_us,
        block_p50_us=tuple(series.block_p50_us), block_start_ms=tuple(series.block_start_ms),
        block_gpu_mhz=tuple(series.block_gpu_mhz), block_cpu_mhz=tuple(series.block_cpu_mhz),
        block_host_us=tuple(series.block_host_us), block_dispatch_us=tuple(series.block_dispatch_us),
        block_submit_us=tuple(series.block_submit_us), warmup_calls=series.warmup_calls, **extra,
    )


def _graph_cost(cg: Any, count_kernels: bool) -> dict[str, Any]:
    """What capturing `cg` cost, from the graph itself (`graphlab.capture.surface.Replayable`'s cost fields)."""
    kernels = None
    if count_kernels:
        try:
            kernels = len(cg.graph.kernels())
        except Exception:  # the DOT export needs cuda-bindings; the kernel count is optional here
            kernels = None
    return {
        "kernel_count": kernels,
        "capture_ms": cg.capture_ms,
        "capture_state": getattr(getattr(cg, "cost", None), "capture_state", None),
        "instantiate_ms": cg.instantiate_ms,
        "pool_bytes": cg.pool_bytes,
        "graph_peak_bytes": cg.peak_bytes,
        "graph_exec_bytes": cg.exec_bytes,
    }


def _with_profile(point: LatencyPoint, call: Callable[[], Any]) -> LatencyPoint:
    """Add kernel count, GPU-busy time and idle share from one profiled call (run after all timings)."""
    try:
        trace = profile_call(call, point.mode)
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


@dataclass(frozen=True)
class Case:
    """One size to time: a batch size (and, for sweeps over sequence length, a sequence length) and
    `make_inputs(seed)` -> the input tuple for it."""

    batch_size: int
    make_inputs: Callable[[int], tuple[Any, ...]]
    seq_len: int | None = None

    @property
    def label(self) -> str:
        return f"b{self.batch_size}" + (f"-s{self.seq_len}" if self.seq_len is not None else "")


@stand_in(recorded_sweep)
def sweep(model: Any, make_inputs: Callable[..., Any] | None = None, batch_sizes: Sequence[int] = DEFAULT_BATCH_SIZES,
          *, name: str | None = None, options: SweepOptions = SweepOptions(), progress: bool = True,
          on_point: Callable[[LatencyPoint], None] | None = None) -> Sweep:
    """Measure eager and graph latency of `model` at each batch size, in interleaved pairs of blocks.

    Args:
        model: an `nn.Module` / callable of CUDA tensors, or a zoo name ("mlp", "gpt", ...).
        make_inputs: `make_inputs(batch_size, seed=...)` -> tensor or tuple of tensors (random);
            optional for zoo names.
        batch_sizes: batch sizes to measure, in order.
        name: the model's name for the result (default: the zoo name, else its class name).
        options: how to measure (`SweepOptions`: pairs, block length, warm-up, host target, profiling, ...).
        progress: show a tqdm.auto bar (prepare each batch size, each round, summarise each batch size).
        on_point: called with each `LatencyPoint` once it is summarised (eager, then graph), after the
            rounds.

    Returns:
        A `Sweep` with an eager and a graph point per batch size; every block median is kept. In recorded
        mode (`gl.set_mode`), the sweep recorded for this zoo model, at the batch sizes asked for.
    """
    if isinstance(model, str):
        zoo_model = get_model(model)
        name = name or zoo_model.name
        make_inputs = make_inputs or zoo_model.make_inputs
        model = zoo_model.build()
    if make_inputs is None:
        raise TimingError("sweep() needs make_inputs(batch_size, seed=...) unless model is a zoo name")
    if not batch_sizes:
        raise TimingError("sweep() needs at least one batch size, e.g. [1, 8, 64]")
    maker = make_inputs
    cases = [Case(b, lambda seed, b=b: _call_make_inputs(maker, b, seed)) for b in batch_sizes]
    result = sweep_cases(model, cases, name=name, options=options, progress=progress, on_point=on_point)
    if not (options.check_weights and hasattr(model, "parameters")):
        return result
    try:
        weights = probe_weight_update(model, _call_make_inputs(make_inputs, batch_sizes[0], 0))
    except Exception as exc:  # keep the sweep; record why the probe is missing
        weights = {"error": f"{type(exc).__name__}: {exc}"}
    return Sweep(result.model, result.points, result.conditions, weights)


def sweep_cases(model: Any, cases: Sequence[Case], *, name: str | None = None, options: SweepOptions = SweepOptions(),
                progress: bool = True, on_point: Callable[[LatencyPoint], None] | None = None) -> Sweep:
    """The paired method over any list of sizes (`Case`s: a batch size, optionally a sequence length).

    `sweep()` calls this with one case per batch size; a sweep over sequence length passes one case
    per (batch size, sequence length), and every point keeps its `seq_len`. Arguments as for `sweep()`
    (`options.check_weights` is `sweep()`'s: it probes the model once, not per case).
    """
    require_cuda("sweep")
    if not cases:
        raise TimingError("sweep() needs at least one batch size, e.g. [1, 8, 64]")
    if hasattr(model, "eval"):
        model.eval()
    name = name or type(model).__name__
    pairs, host_target = options.pairs, options.host_target
    clocks = ClockReader(torch.cuda.current_device(), dispatch=True)
    bar = progress_bar(2 * len(cases) + pairs, f"{name}: prepare, paired rounds, summarise", unit="step", show=progress)
    prepared: list[_Prepared] = []
    events: list[Any] = []  # one pool of CUDA event pairs for every timer of the sweep
    started = now_s()
    with torch.no_grad():
        for case in cases:  # 1. prepare: inputs, cold calls, one capture, warm-up
            input_sets = [_as_tuple(case.make_inputs(seed)) for seed in range(INPUT_SETS)]
            _check_inputs(input_sets[0], case.batch_size)
            eager_first = _timed_once(lambda: model(*input_sets[0]))
            cg = capture(model, *input_sets[0], name=f"{name}-{case.label}")
            graph_first = _timed_once(lambda: cg(*input_sets[0]))
            calls = {"eager": lambda xs: model(*xs), "graph": lambda xs, cg=cg: cg(*xs)}
            plan = prepare_pair(calls, input_sets, options, events=events)
            prepared.append(_Prepared(case, cg, plan, input_sets[0], eager_first, graph_first))
            _step(bar, f"{case.label}: captured, warmed up")
        # 2. time: round r times one pair at every case
        plans = [p.plan for p in prepared]
        until = None if host_target is None else (lambda: _enough_at(plans, _target_now(plans, host_target)))
        rounds_s = time_rounds(plans, pairs, clocks, progress=lambda r: _step(bar, f"round {r + 1}/{pairs}"),
                               until=until, max_extra_s=options.max_extra_s, min_s=options.min_rounds_s)
        rounds = len(plans[0].series["eager"].block_p50_us)
        points: list[LatencyPoint] = []
        for p in prepared:  # 3. summarise; profile last (it slows the launches of everything after it)
            where = {"seq_len": p.case.seq_len} if p.case.seq_len is not None else {}
            eager = _point(p.plan.series["eager"], p.case.batch_size, p.eager_first_us, where)
            graph = _point(p.plan.series["graph"], p.case.batch_size, p.graph_first_us,
                           {**where, **_graph_cost(p.graph, options.count_kernels)})
            if options.profile:
                eager = _with_profile(eager, lambda: model(*p.inputs))
                graph = _with_profile(graph, lambda: p.graph(*p.inputs))
            p.graph.reset()
            points += [eager, graph]
            for point in (eager, graph):
                if on_point is not None:
                    on_point(point)
            _step(bar, f"{p.case.label}: eager {eager.p50_us:.0f} µs, graph {graph.p50_us:.0f} µs")
        prepared.clear()
        torch.cuda.empty_cache()
    if bar is not None:
        bar.close()
    target = None if host_target is None else _target_now(plans, host_target)
    return Sweep(model=name, points=tuple(points), conditions=_conditions(
        clocks, options, target, sweep_s=now_s() - started, rounds_s=rounds_s, rounds=rounds))




def _target_now(plans: Sequence[PairPlan], target: HostTarget | str) -> HostTarget:
    """`target` itself, or for "fastest" the fastest host speed seen so far: the 10th percentile of every
    block's dispatcher reading (the pure-Python one where there is none), ±10%."""
    if isinstance(target, HostTarget):
        return target
    reading = "dispatch" if all(p.series["eager"].block_dispatch_us for p in plans) else "host"
    name = READINGS[reading]
    values = [v for p in plans for mode in ("eager", "graph") for v in getattr(p.series[mode], name)]
    return HostTarget(reading, round(percentile(values, 10.0), 2))


def _enough_at(plans: Sequence[PairPlan], target: HostTarget) -> bool:
    """True once every plan has `target.min_pairs` pairs that ran at the target speed: both blocks' readings
    and the reading just before the pair in the band (`HostTarget.matching`, as `Sweep.at_host_speed`)."""
    name = READINGS[target.reading]
    timeline = [(t, v) for plan in plans for s in plan.series.values()
                for t, v in zip(s.block_start_ms, getattr(s, name))]
    for plan in plans:
        eager, graph = plan.series["eager"], plan.series["graph"]
        before = readings_before_pairs(eager.block_start_ms, graph.block_start_ms, timeline)
        if len(target.matching(getattr(eager, name), getattr(graph, name), before)) < target.min_pairs:
            return False
    return True


def _conditions(clocks: ClockReader, options: SweepOptions, host_target: HostTarget | None, *, sweep_s: float,
                rounds_s: float, rounds: int) -> dict[str, Any]:
    """How a sweep was measured, stored with it (docs/latency-method.md explains each entry). `host_target`: the
    speed the extra rounds collected pairs at (`options.host_target` resolved), or None."""
    pairs, block_ms, repetitions = options.pairs, options.block_ms, options.repetitions
    extra: dict[str, Any] = {"min_rounds_s": options.min_rounds_s} if options.min_rounds_s else {}
    if host_target is not None:
        level = ("the fastest seen: 10th percentile of the readings so far" if options.host_target == FASTEST
                 else "given by the caller")
        extra["host_target"] = {**host_target.to_dict(), "level": level, "max_extra_s": options.max_extra_s,
                                "rule": "after the planned pairs, whole rounds until every batch size has min_pairs "
                                        "pairs whose eager and graph readings, and the reading just before the "
                                        "pair, lie in the band, or max_extra_s"}
    return {
        **run_conditions(),
        **clocks.describe(),
        "method": "paired blocks",
        "pairs": pairs, "block_ms": block_ms, "repetitions": repetitions or f"auto (~{block_ms:g} ms per block)",
        "min_block_calls": MIN_BLOCK_CALLS, "max_block_calls": MAX_BLOCK_CALLS,
        "warmup": options.warmup_calls, "warmup_max_ms": options.warmup_max_ms,
        "warmup_rule": f"at least `warmup` calls, then {WARMUP_BLOCK_MS:g} ms blocks until three block "
                       f"medians lie within {SETTLE_PCT:g}%, or warmup_max_ms",
        "input_sets": INPUT_SETS, "graph_call": "graphlab.capture: CapturedGraph.__call__ (copy in, replay)",
        "wall_time": "host perf_counter from call to torch.cuda.synchronize() returning",
        "submit_time": "host perf_counter from call to the call returning, before the synchronize (block_submit_us: "
                       "its median per block, the calls without events)",
        "gpu_time": "CUDA events recorded on the current stream around the call",
        "pair_order": "eager block first in even rounds, graph block first in odd rounds",
        "round_order": "each round times one pair at every batch size, in order in even rounds and in reverse "
                       "in odd rounds",
        "block": "one untimed call, then the timed calls; every other call carries a CUDA event pair (GPU "
                 "time), the others give the wall time",
        "gc": "Python's garbage collector off during the timed rounds",
        "mode_detection": {"max_modes": host_modes.MAX_MODES, "min_step_pct": host_modes.MIN_STEP_PCT,
                           "min_separation": host_modes.MIN_SEPARATION, "min_share": host_modes.MIN_SHARE,
                           "min_blocks": host_modes.MIN_BLOCKS},
        "capture_ms": "the timed graph's own capture (capture_begin to capture_end), warm-up excluded; "
                      "instantiate_ms apart",
        "pool_bytes": "torch.cuda.memory_reserved() growth over the timed graph's capture (its pool)",
        "graph_exec_bytes": "drop of cudaMemGetInfo free memory over instantiate() (driver's executable graph)",
        "graph_peak_bytes": "peak torch.cuda.memory_allocated() growth during the capture",
        "order": "per batch size: cold eager call, capture, cold graph call, warm-up; then the rounds of paired "
                 "blocks over all batch sizes; then one profiled call per point (profiling last)",
        "sweep_s": round(sweep_s, 2), "rounds_s": round(rounds_s, 2), "rounds": rounds, **extra,
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def _step(bar: Any, text: str) -> None:
    if bar is not None:
        bar.set_postfix_str(text)
        bar.update(1)


__all__ = ["DEFAULT_BATCH_SIZES", "FASTEST", "Case", "SweepOptions", "TimingError", "run_conditions", "sweep",
           "sweep_cases"]
