"""What does graphlab's own graph call cost? (GPU benchmark; not a test)

For each model, at one batch size, the end-to-end latency of one synchronised call, five ways:

    eager             model(x)
    raw replay        torch.cuda.CUDAGraph.replay() alone (inputs already in place)
    raw copy+replay   static_x.copy_(x); graph.replay()      (what a request really needs)
    CapturedGraph     graphlab's CapturedGraph.__call__(x)   (copy in + replay + return outputs)
    eager, after profiling   model(x) again, once this process has run torch.profiler (a control:
                      Kineto may leave CUPTI attached, which slows every later launch)
    reduce-overhead   torch.compile(model, mode="reduce-overhead")(x)

The reduce-overhead row is only reported as a graph if its logs prove it: no
`cudagraph_skips` in torch._dynamo's counters, and a profiled call shows a `cudaGraphLaunch`.

Usage (on a GPU machine, from the repository root):
    PYTHONPATH=. python3 bench/bench_overhead.py --models mlp gpt --batch-size 1 --out bench-overhead.json
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import datetime, timezone
from typing import Any, Callable

REPETITIONS = 500
RUNS = 5
WARMUP = 30


def _time(torch: Any, call: Callable[[], Any]) -> dict[str, Any]:
    from graphlab.core.stats import median, run_spread_pct, summarize

    for _ in range(WARMUP):
        call()
    torch.cuda.synchronize()
    samples: list[float] = []
    medians: list[float] = []
    for _ in range(RUNS):
        run: list[float] = []
        for _ in range(REPETITIONS):
            t0 = time.perf_counter_ns()
            call()
            torch.cuda.synchronize()
            run.append((time.perf_counter_ns() - t0) / 1000.0)
        samples += run
        medians.append(median(run))
    s = summarize(samples)
    return {"p10_us": s.p10_us, "p50_us": s.p50_us, "p90_us": s.p90_us, "spread_pct": run_spread_pct(medians)}


def _graph_launches(call: Callable[[], Any]) -> int:
    from graphlab.gpu.timeline import profile_call

    trace = profile_call(call, "graph")
    return sum(1 for s in trace.launches if "GraphLaunch" in s.name)


def bench_model(torch: Any, name: str, batch_size: int, compile_too: bool = True) -> dict[str, Any]:
    from graphlab.gpu.zoo import get_model

    zm = get_model(name)
    model = zm.build()
    (x,) = zm.make_inputs(batch_size)
    x2 = zm.make_inputs(batch_size, seed=1)[0]
    rows: dict[str, Any] = {}
    with torch.no_grad():
        rows["eager"] = _time(torch, lambda: model(x))

        static_x = x.clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                model(static_x)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            model(static_x)
        rows["raw replay"] = _time(torch, graph.replay)

        def copy_replay() -> None:
            static_x.copy_(x2)
            graph.replay()

        rows["raw copy+replay"] = _time(torch, copy_replay)
        rows["raw copy+replay"]["graph_launches_in_profiled_call"] = _graph_launches(copy_replay)
        try:
            from graphlab.gpu.capture import capture

            cg = capture(model, x)
            rows["CapturedGraph"] = _time(torch, lambda: cg(x2))
            rows["CapturedGraph"]["graph_launches_in_profiled_call"] = _graph_launches(lambda: cg(x2))
        except ImportError as exc:
            rows["CapturedGraph"] = {"error": f"graphlab.gpu.capture unavailable: {exc}"}

        # control: eager again, now that this process has run torch.profiler (CUPTI may stay attached)
        rows["eager, after profiling"] = _time(torch, lambda: model(x))
        if not compile_too:
            return {"model": name, "batch_size": batch_size, "rows": rows}

        torch._dynamo.reset()
        from torch._dynamo.utils import counters

        counters.clear()
        t0 = time.perf_counter()
        compiled = torch.compile(model, mode="reduce-overhead")
        try:
            for _ in range(3):  # warm-up, record, first replay (CUDAGraph Trees)
                compiled(x)
        except Exception as exc:  # no compiler toolchain, inductor bug, ...: report, keep the other rows
            rows["reduce-overhead"] = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"}
            return {"model": name, "batch_size": batch_size, "rows": rows}
        torch.cuda.synchronize()
        compile_s = time.perf_counter() - t0
        row = _time(torch, lambda: compiled(x2))
        row["compile_and_record_s"] = compile_s
        row["cudagraph_skips"] = int(counters["inductor"]["cudagraph_skips"])
        row["graph_launches_in_profiled_call"] = _graph_launches(lambda: compiled(x2))
        row["used_graphs"] = row["cudagraph_skips"] == 0 and row["graph_launches_in_profiled_call"] > 0
        rows["reduce-overhead"] = row
    return {"model": name, "batch_size": batch_size, "rows": rows}


def contamination(torch: Any, name: str, batch_size: int, sessions: int) -> dict[str, Any]:
    """Does a process time eager calls slower after torch.profiler, or after failed captures?

    Times `model(x)` in this (fresh) process, again after `sessions` profiled calls, and again after
    every capture-failure example of `graphlab.gpu.pitfalls` (each fails inside a capture, on purpose).
    """
    from graphlab.gpu.timeline import profile_call
    from graphlab.gpu.zoo import get_model

    zm = get_model(name)
    model = zm.build()
    (x,) = zm.make_inputs(batch_size)
    rows: dict[str, Any] = {}
    with torch.no_grad():
        rows["eager, fresh process"] = _time(torch, lambda: model(x))
        for _ in range(sessions):
            profile_call(lambda: model(x), "eager")
        rows[f"eager, after {sessions} profiled calls"] = _time(torch, lambda: model(x))
    from graphlab.gpu.pitfalls import EXAMPLES, run_example

    outcomes = {}
    for key in EXAMPLES:
        try:
            outcomes[key] = str(run_example(key).cause)
        except Exception as exc:  # an example that did not fail, or failed differently: note it, go on
            outcomes[key] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}"
    with torch.no_grad():
        rows["eager, after the capture-failure examples"] = _time(torch, lambda: model(x))
    rows["capture-failure examples"] = outcomes
    return {"model": name, "batch_size": batch_size, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["mlp", "gpt"])
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile(mode='reduce-overhead')")
    parser.add_argument("--contamination", type=int, default=0, metavar="N",
                        help="instead: time eager fresh, after N profiled calls, after the capture-failure examples")
    parser.add_argument("--teardown-cupti", action="store_true",
                        help="set TEARDOWN_CUPTI=1 first, so Kineto detaches CUPTI after each profile")
    args = parser.parse_args(argv)
    if args.teardown_cupti:
        os.environ["TEARDOWN_CUPTI"] = "1"

    from graphlab.env import require_cuda
    from graphlab.gpu.timing import run_conditions

    torch = require_cuda("bench_overhead")
    results = {
        "conditions": {
            **run_conditions(torch),
            "repetitions": REPETITIONS, "runs": RUNS, "warmup": WARMUP,
            "TEARDOWN_CUPTI": os.environ.get("TEARDOWN_CUPTI"),
            "timer": "host perf_counter from the call to torch.cuda.synchronize() returning",
            "command": "python3 bench/bench_overhead.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
        "models": [],
    }
    for name in args.models:
        if args.contamination:
            entry = contamination(torch, name, args.batch_size, args.contamination)
        else:
            entry = bench_model(torch, name, args.batch_size, compile_too=not args.no_compile)
        results["models"].append(entry)
        if args.out:  # after every model, so a time limit loses at most the model in progress
            with open(args.out, "w", encoding="utf-8") as fh:
                json.dump(results, fh, indent=1)
        print(f"\n{name}, batch {args.batch_size}: end-to-end p50 (p10-p90) µs, spread between {RUNS} runs")
        for mode, row in entry["rows"].items():
            if isinstance(row, dict) and "p50_us" in row:
                extra = f"  used graphs: {row['used_graphs']}" if "used_graphs" in row else ""
                print(f"  {mode:<24} {row['p50_us']:9.1f} ({row['p10_us']:.1f}-{row['p90_us']:.1f})  "
                      f"±{row['spread_pct']:.1f}%{extra}")
            else:
                print(f"  {mode:<24} {row}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
