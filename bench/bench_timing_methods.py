"""Which timing method comes back? torch.utils.benchmark vs graphlab's paired blocks, same model, same process.

For each model (zoo, batch 1 by default), `--repeats` times, alternating the two methods:
  benchmark   torch.utils.benchmark.Timer("f()").adaptive_autorange(threshold=0.1, min_run_time=0.2,
              max_run_time=1.0) for eager and for the graph, f = call + torch.cuda.synchronize() (so
              both time latency, not queued throughput); the figure is Measurement.median
  paired      graphlab.timing.blocks.time_pairs: 15 pairs of ~20 ms eager/graph blocks, alternating
              order; eager and graph p50 over all calls, the median pair speedup, and the median
              pair speedup in the fastest host mode (graphlab.timing.host_modes)
Then the run-to-run spread of each figure over the repeats: (max - min) / median in %. The method
whose figures agree from run to run measures better; docs/latency-method.md says which and why.

Usage (GPU, repository root; about 20-25 s per model on the H200):
    PYTHONPATH=. python3 bench/bench_timing_methods.py --models gpt mlp --out out/methods
Writes OUT/timing_methods.json and OUT/timing_methods.md.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any


def _spread(values: list[float]) -> float:
    from graphlab.stats import median

    return 100.0 * (max(values) - min(values)) / median(values)


def compare(torch: Any, name: str, batch_size: int, repeats: int) -> dict[str, Any]:
    import torch.utils.benchmark as tub

    from graphlab.timing.host_modes import paired_speedup
    from graphlab.stats import median
    from graphlab.timing.blocks import time_pairs
    from graphlab.timing.options import SweepOptions
    from graphlab.capture.api import capture
    from graphlab.timing.machine import ClockReader
    from graphlab.zoo import get_model

    zm = get_model(name)
    model = zm.build(device="cuda")
    inputs = [zm.make_inputs(batch_size, device="cuda", seed=s) for s in range(3)]
    clocks = ClockReader()
    runs: dict[str, list[dict[str, float]]] = {"benchmark": [], "paired": []}
    with torch.no_grad():
        cg = capture(model, *inputs[0])
        calls = {"eager": lambda xs: model(*xs), "graph": lambda xs: cg(*xs)}
        sync = torch.cuda.synchronize
        x = inputs[1]
        for _ in range(repeats):
            row: dict[str, float] = {}
            t0 = time.perf_counter()
            for mode in ("eager", "graph"):
                f = (lambda: (model(*x), sync())) if mode == "eager" else (lambda: (cg(*x), sync()))
                m = tub.Timer(stmt="f()", globals={"f": f}).adaptive_autorange(threshold=0.1, min_run_time=0.2,
                                                                                max_run_time=1.0)
                row[f"{mode}_us"] = m.median * 1e6
                row[f"{mode}_blocks"] = len(m.times)
            row["speedup"] = row["eager_us"] / row["graph_us"]
            row["seconds"] = time.perf_counter() - t0
            row["host_us"] = clocks.host_speed_us()
            runs["benchmark"].append(row)
            t0 = time.perf_counter()
            series = time_pairs(calls, inputs, SweepOptions(pairs=15, block_ms=20.0), clocks=clocks)
            pairs = paired_speedup(series["eager"].block_p50_us, series["graph"].block_p50_us)
            runs["paired"].append({"eager_us": median(series["eager"].wall_us),
                                   "graph_us": median(series["graph"].wall_us),
                                   "speedup": pairs.p50, "fastest_mode_speedup": pairs.by_mode[0],
                                   "modes": pairs.modes.count, "seconds": time.perf_counter() - t0,
                                   "host_us": median(series["eager"].block_host_us)})
        cg.reset()
    spreads = {method: {key: _spread([r[key] for r in rows]) for key in rows[0]
                        if key.endswith("_us") and key != "host_us" or key.endswith("speedup")}
               for method, rows in runs.items()}
    return {"model": name, "batch_size": batch_size, "repeats": repeats, "runs": runs, "spread_pct": spreads}


def markdown(results: list[dict[str, Any]]) -> str:
    lines = ["| model | method | eager spread | graph spread | speedup spread | fastest-mode speedup spread | "
             "speedups per run |", "|---|---|---|---|---|---|---|"]
    for r in results:
        for method, s in r["spread_pct"].items():
            speedups = ", ".join(f"{row['speedup']:.2f}" for row in r["runs"][method])
            fast = f"{s['fastest_mode_speedup']:.1f}%" if "fastest_mode_speedup" in s else "-"
            lines.append(f"| {r['model']} b{r['batch_size']} | {method} | {s['eager_us']:.1f}% | "
                         f"{s['graph_us']:.1f}% | {s['speedup']:.1f}% | {fast} | {speedups} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["gpt", "mlp"])
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default="out/methods")
    args = parser.parse_args(argv)

    from graphlab.env import require_cuda
    from graphlab.errors import GraphlabError
    from graphlab.timing.machine import run_conditions

    try:
        torch = require_cuda("bench_timing_methods")
    except GraphlabError as exc:
        print(f"bench_timing_methods: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    results = [compare(torch, name, args.batch_size, args.repeats) for name in args.models]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data = {"conditions": {**run_conditions(), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())},
            "results": results}
    (out / "timing_methods.json").write_text(json.dumps(data, indent=1), encoding="utf-8")
    text = markdown(results)
    (out / "timing_methods.md").write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
