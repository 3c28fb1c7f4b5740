"""The overhead benchmark: what one call costs, eight ways, on the same model and the same inputs.

Tables come from `graphlab.studies.overhead_report` (pure); `graphlab record --models overhead` records it.

Ways (`graphlab.studies.overhead_report.WAYS`): eager; raw `CUDAGraph.replay`; raw `copy_` + replay;
`CapturedGraph.__call__`; `CapturedGraph.unchecked`; `CapturedGraph.replay`;
`torch.cuda.make_graphed_callables`; `torch.compile(mode="reduce-overhead")`. Cases: a tiny graph
(16x16 Linear + ReLU, batch 1) and every zoo model at batch 1 and 8.

Method, in one process:
1. build every case and way first (captures, make_graphed_callables, torch.compile and its recording),
   so all timings run in the same process state; check every way's output against eager;
2. time: `rounds` rounds per case; in each, every way (in an order that rotates round by round) runs
   one *host* block (back-to-back calls, timed without synchronising, divided by the calls: the CPU
   cost of a call) and one *latency* block (synchronised calls, median); the host's speed is read
   after each round. Best and median over the rounds, p10-p90, and gaps paired round by round;
3. verify last (profiling slows later launches): one profiled call per graph way counts
   `cudaGraphLaunch`; for torch.compile also `cudagraph_skips` == 0 and a count of
   `torch.cuda.CUDAGraph.replay` calls, so "reduce-overhead" is only called a graph if it replayed one.

Time on the H200 (estimated: compiles dominate, ~5-20 s per model and batch size; timing ~2 s per
case): unlimited, about 2-2.5 minutes. The recorder (10 rounds) stops starting compiles once they have
taken `RECORD_COMPILE_BUDGET_S` (45 s; batch 1 is built first, so the batch-8 compiles go first):
about 1.5 minutes, within a 120 s device step. About 30 s with `compile=False`.
"""
from __future__ import annotations

import copy
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import torch

from graphlab.capture.api import capture
from graphlab.loader import dump
from graphlab.recordings import gpu_slug, write_recording
from graphlab.results_types import results_type
from graphlab.studies.overhead_report import (SCHEMA, WAYS, OverheadBenchmark, call_gaps, overhead_markdown,
                                              summarize_blocks)
from graphlab.stats import median
from graphlab.clock import Stopwatch, block_per_call_us, synced_us
from graphlab.timing.machine import ClockReader, run_conditions
from graphlab.timing.schedulers import interleave
from graphlab.timing.sync import cuda_sync
from graphlab.timing.timeline import profile_call
from graphlab.zoo import ZOO, get_model

#: the recording's name (`graphlab record --models overhead`): the default recording of the `OverheadBenchmark` it
#: writes, which `gl.load(OverheadBenchmark)` reads back
RECORDING = str(results_type(OverheadBenchmark).recording)

ROUNDS = 12
BLOCK_MS = 10.0
WARMUP_CALLS = 20
MIN_CALLS, MAX_CALLS = 10, 2000
GRAPH_WAYS = ("raw_copy_replay", "captured_call", "captured_unchecked", "captured_replay",
              "make_graphed_callables", "compile_reduce_overhead")
BATCH_SIZES = (1, 8)
#: the recorder's budget for torch.compile (compile + record, all cases): the recording must fit the
#: time limit of a device run; cases are built batch 1 first, so a spent budget skips batch 8 first
RECORD_COMPILE_BUDGET_S = 45.0
RECORD_ROUNDS = 10


def _flat(out: Any) -> Any:
    if torch.is_tensor(out):
        return out.detach().float().flatten()
    if isinstance(out, dict):
        out = list(out.values())
    return torch.cat([_flat(o) for o in out])


def _err(got: Any, want: Any) -> float:
    return float((_flat(got) - _flat(want)).abs().max())


def _count_replays(call: Callable[[], Any], calls: int = 3) -> int:
    """How many times `torch.cuda.CUDAGraph.replay` ran during `calls` calls (Python-level count)."""
    counter = {"n": 0}
    original = torch.cuda.CUDAGraph.replay

    def counting(self: Any, *args: Any, **kwargs: Any) -> Any:
        counter["n"] += 1
        return original(self, *args, **kwargs)

    torch.cuda.CUDAGraph.replay = counting
    try:
        for _ in range(calls):
            call()
        torch.cuda.synchronize()
    finally:
        torch.cuda.CUDAGraph.replay = original
    return counter["n"]


def _tiny() -> tuple[Any, Any, Any]:
    gen = torch.Generator(device="cpu").manual_seed(0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU()).cuda().eval()
    x = torch.randn(1, 16, generator=gen).cuda()
    return model, x, torch.randn(1, 16, generator=gen).cuda()


def build_case(model: Any, x: Any, x2: Any, *, compile_too: bool = True) -> dict[str, dict[str, Any]]:
    """Every way of calling `model` on `x2` (graphs captured with `x`), each {"call", "notes"} or {"error"}."""
    ways: dict[str, dict[str, Any]] = {}
    want_x2, want_x = model(x2), model(x)

    def add(way: str, make: Callable[[], tuple[Callable[[], Any], dict[str, Any]]], reference: Any = want_x2) -> None:
        try:
            call, notes = make()
            notes = {**notes, "max_abs_err": _err(call(), reference)}
            ways[way] = {"call": call, "notes": notes}
        except Exception as exc:  # one way failing (no toolchain for Inductor, ...) keeps the others
            ways[way] = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"}

    add("eager", lambda: ((lambda: model(x2)), {}))

    static_x = x.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            model(static_x)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = model(static_x)

    def raw_replay() -> Any:
        graph.replay()
        return static_out

    def raw_copy_replay() -> Any:
        static_x.copy_(x2)
        graph.replay()
        return static_out

    add("raw_replay", lambda: (raw_replay, {}), reference=want_x)
    add("raw_copy_replay", lambda: (raw_copy_replay, {}))
    ways["_keep"] = {"graph": graph, "static": (static_x, static_out)}  # keep the raw graph alive

    cg = capture(model, x)
    ways["_cg"] = {"graph": cg}
    add("captured_call", lambda: ((lambda: cg(x2)), {}))
    if hasattr(cg, "unchecked"):
        add("captured_unchecked", lambda: ((lambda: cg.unchecked(x2)), {}))
    else:
        ways["captured_unchecked"] = {"error": "CapturedGraph.unchecked is not in this graphlab"}
    add("captured_replay", lambda: (cg.replay, {}))  # cg(x2) above left x2 in the static input

    def graphed() -> tuple[Callable[[], Any], dict[str, Any]]:
        fn = torch.cuda.make_graphed_callables(copy.deepcopy(model), (x.clone(),))
        return (lambda: fn(x2)), {"replays_in_3_calls": _count_replays(lambda: fn(x2))}

    add("make_graphed_callables", graphed)
    if compile_too:
        add("compile_reduce_overhead", lambda: _compiled(model, x, x2))
    return ways


def _compiled(model: Any, x: Any, x2: Any) -> tuple[Callable[[], Any], dict[str, Any]]:
    counters = torch._dynamo.utils.counters  # torch loads _dynamo on first use: importing it costs a second
    for limit in ("recompile_limit", "cache_size_limit"):  # one entry per model and shape: raise the cap
        if hasattr(torch._dynamo.config, limit):
            setattr(torch._dynamo.config, limit, max(64, getattr(torch._dynamo.config, limit)))
    skips0 = int(counters["inductor"]["cudagraph_skips"])
    with Stopwatch(cuda_sync()) as compiling:
        fn = torch.compile(model, mode="reduce-overhead", dynamic=False)
        for _ in range(3):  # warm-up, record, first replay (CUDA Graph Trees)
            fn(x)
    notes = {"compile_s": compiling.s,
             "cudagraph_skips": int(counters["inductor"]["cudagraph_skips"]) - skips0,
             "replays_in_3_calls": _count_replays(lambda: fn(x2))}
    return (lambda: fn(x2)), notes


def time_case(ways: dict[str, dict[str, Any]], *, rounds: int = ROUNDS, block_ms: float = BLOCK_MS,
              clocks: Any = None) -> dict[str, Any]:
    """Warm up, size blocks, then `rounds` rounds of one host block and one latency block per way
    (`graphlab.timing.schedulers.interleave`, the order rotating by one way per round)."""
    sync = cuda_sync()
    live = [w for w in WAYS if w in ways and "call" in ways[w]]
    sizes: dict[str, int] = {}
    for way in live:
        call = ways[way]["call"]
        for _ in range(WARMUP_CALLS):
            call()
        estimate = median(synced_us(call, 11, sync))
        sizes[way] = max(MIN_CALLS, min(MAX_CALLS, int(block_ms * 1e3 / max(estimate, 0.5))))

    def blocks_of(way: str) -> Callable[[], tuple[float, float]]:
        call, n = ways[way]["call"], sizes[way]
        return lambda: (round(block_per_call_us(call, n, sync, include_wait=False), 4),
                        round(median(synced_us(call, n, sync)), 3))

    host_speed: list[float] = []
    timed = interleave({way: blocks_of(way) for way in live}, rounds, order="rotate",
                       after_round=None if clocks is None else lambda r: host_speed.append(clocks.host_speed_us()))
    out: dict[str, Any] = {}
    for way in WAYS:
        if way not in ways:
            continue
        entry = ways[way]
        if "call" not in entry:
            out[way] = {"error": entry["error"]}
            continue
        out[way] = {"host_us": summarize_blocks([h for h, _ in timed[way]]),
                    "latency_us": summarize_blocks([w for _, w in timed[way]]),
                    "calls_per_block": sizes[way], "notes": dict(entry["notes"])}
    return {"ways": out, "host_speed_us": host_speed}


def verify_graph_launches(ways: dict[str, dict[str, Any]], timed: dict[str, Any]) -> None:
    """Count cudaGraphLaunch in one profiled call of every graph way (run after every timing)."""
    for way in GRAPH_WAYS:
        if way not in ways or "call" not in ways[way]:
            continue
        try:
            trace = profile_call(ways[way]["call"], "graph")
            launches = sum(1 for s in trace.launches if "GraphLaunch" in s.name)
        except Exception as exc:  # the timing stands; say why the check is missing
            launches = f"profile failed: {type(exc).__name__}: {exc}"[:200]
        timed["ways"][way]["notes"]["graph_launches_in_profiled_call"] = launches
    compiled = timed["ways"].get("compile_reduce_overhead")
    if compiled and "notes" in compiled:
        n = compiled["notes"]
        n["used_graphs"] = (n.get("cudagraph_skips") == 0 and isinstance(n.get("graph_launches_in_profiled_call"), int)
                            and n["graph_launches_in_profiled_call"] > 0 and n.get("replays_in_3_calls", 0) > 0)


def run_overhead(*, models: tuple[str, ...] | None = None, batch_sizes: tuple[int, ...] = BATCH_SIZES,
                 tiny: bool = True, compile_too: bool = True, compile_budget_s: float | None = None,
                 rounds: int = ROUNDS, block_ms: float = BLOCK_MS,
                 log: Callable[[str], None] = print) -> dict[str, Any]:
    """The whole benchmark in this process; returns JSON-ready results (`graphlab.overhead/1`).

    Args:
        models: zoo models (default: every zoo model whose packages are here).
        compile_budget_s: stop compiling further cases once torch.compile has taken this long in all
            (their row says so); None: no limit. Cases are built batch size by batch size, smallest first.
    """
    models = tuple(ZOO) if models is None else models

    started = Stopwatch().start()
    clocks = ClockReader(torch.cuda.current_device())
    specs: list[tuple[str, str, int, Any, Any, Any]] = []  # (key, title, batch size, model, x, x2)
    if tiny:
        model, x, x2 = _tiny()
        specs.append(("tiny", "tiny graph (16x16 Linear + ReLU), batch 1", 1, model, x, x2))
    built_models = {}
    for name in models:
        zoo_model = get_model(name)
        if not zoo_model.available():
            log(f"[overhead] {name}: skipped, needs {', '.join(zoo_model.needs)}")
            continue
        built_models[name] = (zoo_model, zoo_model.build(device="cuda"))
    for b in sorted(batch_sizes):  # batch size by batch size: a spent compile budget skips the larger ones
        for name, (zoo_model, model) in built_models.items():
            (x,) = zoo_model.make_inputs(b, device="cuda", seed=0)
            (x2,) = zoo_model.make_inputs(b, device="cuda", seed=1)
            specs.append((f"{name}_b{b}", f"{name}, batch {b}", b, model, x, x2))
    built: list[tuple[tuple[str, str, int, Any, Any, Any], dict[str, dict[str, Any]]]] = []
    phase: dict[str, float] = {}
    phase_clock = Stopwatch().start()
    with torch.no_grad():
        compile_s = 0.0
        for spec in specs:  # 1. build everything first: all timings then see one process state
            case_clock = Stopwatch().start()
            in_budget = compile_budget_s is None or compile_s < compile_budget_s
            ways = build_case(spec[3], spec[4], spec[5], compile_too=compile_too and in_budget)
            if compile_too and not in_budget:
                ways["compile_reduce_overhead"] = {"error": f"skipped: the recorder's torch.compile budget "
                                                            f"({compile_budget_s:g} s) was spent on earlier cases"}
            compile_s += ways.get("compile_reduce_overhead", {}).get("notes", {}).get("compile_s", 0.0)
            built.append((spec, ways))
            log(f"[overhead] built {spec[1]} in {case_clock.s:.1f} s")
        phase["build_s"] = phase_clock.stop()
        phase_clock.start()
        cases = []
        for (key, title, b, *_), ways in built:  # 2. time
            timed = time_case(ways, rounds=rounds, block_ms=block_ms, clocks=clocks)
            cases.append({"case": key, "title": title, "batch_size": b, **timed})
            gaps = call_gaps(cases[-1])
            call = gaps.get("captured_call")
            log(f"[overhead] timed {title}: CapturedGraph(x) - raw copy+replay "
                f"{'n/a' if call is None else format(call['median'], '+.1f') + ' µs'}")
        phase["time_s"] = phase_clock.stop()
        phase_clock.start()
        for (_, ways), case in zip(built, cases):  # 3. verify last: profiling slows later launches
            verify_graph_launches(ways, case)
        phase["verify_s"] = phase_clock.stop()
    for case in cases:
        case["gaps"] = call_gaps(case)
    conditions = {
        **run_conditions(), **clocks.describe(),
        "rounds": rounds, "block_ms": block_ms, "warmup_calls": WARMUP_CALLS,
        "calls_per_block": f"~{block_ms:g} ms of synchronised calls, {MIN_CALLS}..{MAX_CALLS}",
        "host_us": "a block of back-to-back calls until the last returns, divided by the calls (graphlab.clock.block_per_call_us, include_wait=False)",
        "latency_us": "median of a block of synchronised calls, each from the call to torch.cuda.synchronize returning (graphlab.clock.synced_us)",
        "order": "build every case and way first; then per case, rounds of (host block, latency block) per way "
                 "in an order rotating by one way per round; profiling for the cudaGraphLaunch counts last",
        "gaps": "per round, way minus raw_copy_replay host time; median and p10-p90 over the rounds",
        "compile": "torch.compile(model, mode='reduce-overhead', dynamic=False); used_graphs needs cudagraph_skips "
                   "0, a cudaGraphLaunch in a profiled call and CUDAGraph.replay calls" if compile_too else "skipped",
        "compile_budget_s": compile_budget_s,
        "seconds": {**{k: round(v, 1) for k, v in phase.items()}, "total_s": round(started.s, 1)},
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    return {"schema": SCHEMA, "conditions": conditions, "cases": cases}


def record(out_root: Path, prov: dict[str, Any]) -> Path:
    """What one call costs, eight ways, for a tiny graph and every zoo model at batch 1 and 8."""
    bench = OverheadBenchmark.from_dict(run_overhead(compile_budget_s=RECORD_COMPILE_BUDGET_S, rounds=RECORD_ROUNDS,
                                                     log=lambda line: print(line, flush=True)))
    print(overhead_markdown(bench), flush=True)
    folder = out_root / gpu_slug(prov["gpu"]) / RECORDING
    write_recording(folder, name=RECORDING, description="What one call costs, eight ways (eager, raw CUDAGraph replay, "
                    "raw copy_ + replay, CapturedGraph call / unchecked / replay, make_graphed_callables, "
                    "torch.compile reduce-overhead), tiny graph and zoo models at batch 1 and 8.",
                    provenance=prov, graphs={}, results={results_type(OverheadBenchmark).entry: dump(bench)})
    return folder


__all__ = ["RECORDING", "RECORD_COMPILE_BUDGET_S", "build_case", "record", "run_overhead", "time_case",
           "verify_graph_launches"]
