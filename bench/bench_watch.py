"""Does gl.watch change what a watched library computes, or how fast it replays? (GPU benchmark; not a test)

Two measurements, both in one process, in short interleaved blocks paired by neighbour (the H200 host
flips between CPU speed modes every few hundred ms, so only neighbouring blocks are comparable):

1. reduce-overhead: `torch.compile(mode="reduce-overhead")` on the zoo GPT, one copy recorded with no
   watch, one under gl.watch (graphlab.studies.watch_overhead.measure_watch_overhead): outputs compared
   with torch.equal, replay latency per synchronised call, ratio watched / unwatched per pair.
2. keep_graph control: what gl.watch changes underneath, alone. Four raw torch.cuda.CUDAGraph graphs of
   the same small function captured in the order default, kept, kept, default (kept = keep_graph=True
   then instantiate(), as the watch does; default = keep_graph=False), replayed in alternating
   blocks: the ratio kept / default, and second pair / first pair (capture order) for comparison.

Usage (on a GPU machine, from the repository root; about 1-2 min on an H200, estimated from the
probe: most of it torch.compile of two GPT copies per batch size):

    PYTHONPATH=. python3 bench/bench_watch.py --out DIR [--batch-sizes 1 8] [--pairs 200]

Writes DIR/bench_watch.json (results + machine + command) and prints one line per measurement.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

CONTROL_REPLAYS_PER_BLOCK = 200
CONTROL_PAIRS = 60


def keep_graph_control(torch: Any, pairs: int = CONTROL_PAIRS) -> dict[str, Any]:
    """Replay time of keep_graph=True+instantiate graphs vs default ones, capture order ABBA."""
    from graphlab.timing.host_modes import paired_speedup
    from graphlab.stats import median

    x = torch.randn(64, 256, device="cuda")
    w = torch.randn(256, 256, device="cuda")

    def fn() -> Any:
        return (x.sin() @ w).relu() + 1

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graphs, outputs = [], []
    for kept in (False, True, True, False):
        g = torch.cuda.CUDAGraph(keep_graph=True) if kept else torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            outputs.append(fn())
        if kept:
            g.instantiate()
        graphs.append(g)
    for g in graphs:
        g.replay()
    torch.cuda.synchronize()
    identical = all(bool(torch.equal(outputs[0], o)) for o in outputs[1:])
    blocks: list[list[float]] = [[] for _ in graphs]
    for i in range(pairs):
        for j in (range(4) if i % 2 == 0 else reversed(range(4))):
            torch.cuda.synchronize()
            t0 = time.perf_counter_ns()
            for _ in range(CONTROL_REPLAYS_PER_BLOCK):
                graphs[j].replay()
            torch.cuda.synchronize()
            blocks[j].append((time.perf_counter_ns() - t0) / 1000.0 / CONTROL_REPLAYS_PER_BLOCK)
    kept = [a + b for a, b in zip(blocks[1], blocks[2])]
    default = [a + b for a, b in zip(blocks[0], blocks[3])]
    by_keep = paired_speedup(kept, default)
    by_order = paired_speedup([a + b for a, b in zip(blocks[2], blocks[3])],
                              [a + b for a, b in zip(blocks[0], blocks[1])])
    return {"replays_per_block": CONTROL_REPLAYS_PER_BLOCK, "pairs": pairs, "outputs_identical": identical,
            "us_per_replay_p50": [round(median(b), 3) for b in blocks], "capture_order": ["default", "kept", "kept",
                                                                                        "default"],
            "kept_over_default": {"p50": by_keep.p50, "p10": by_keep.p10, "p90": by_keep.p90},
            "second_pair_over_first_pair": {"p50": by_order.p50, "p10": by_order.p10, "p90": by_order.p90},
            "host_modes": by_keep.modes.describe()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder for bench_watch.json")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--calls-per-block", type=int, default=25)
    args = parser.parse_args(argv)
    import torch

    from graphlab.studies.watch_overhead import measure_watch_overhead

    if not torch.cuda.is_available():
        print("bench_watch: needs a CUDA GPU", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    results: dict[str, Any] = {"reduce_overhead": [], "keep_graph_control": None}
    for batch_size in args.batch_sizes:
        r = measure_watch_overhead(batch_size=batch_size, pairs=args.pairs,
                                   calls_per_block=args.calls_per_block, progress=False)
        print(f"[bench_watch] {r.describe()}; compile {r.compile_s}", flush=True)
        results["reduce_overhead"].append(r.to_dict())
    control = keep_graph_control(torch)
    results["keep_graph_control"] = control
    print(f"[bench_watch] keep_graph control: kept / default {control['kept_over_default']['p50']:.4f}x "
          f"(p10-p90 {control['kept_over_default']['p10']:.4f}-{control['kept_over_default']['p90']:.4f}); "
          f"second / first capture pair {control['second_pair_over_first_pair']['p50']:.4f}x; "
          f"µs per replay {control['us_per_replay_p50']}", flush=True)
    results["machine"] = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                          "cuda": str(torch.version.cuda)}
    results["command"] = (f"python3 bench/bench_watch.py --out DIR --batch-sizes {' '.join(map(str, args.batch_sizes))} "
                          f"--pairs {args.pairs} --calls-per-block {args.calls_per_block}")  # no paths stored
    results["date"] = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    results["seconds"] = round(time.perf_counter() - t_start, 1)
    (out / "bench_watch.json").write_text(json.dumps(results, indent=1))
    print(f"[bench_watch] wrote {out / 'bench_watch.json'} in {results['seconds']} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
