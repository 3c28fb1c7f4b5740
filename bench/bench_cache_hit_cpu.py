"""Benchmark (CPU): what a GraphCache hit costs, this tree against another (issue 26: the input checks run at a
miss only, so a hit must cost what it did before).

A hit is measured with a backend whose graphs replay nothing (`NullBackend`), so the figure is the cache's own
bookkeeping (exact-signature look-up, LRU touch, one `copy_` into the static input, the output clone), with no
model time to hide a change; and with the eager backend on a small `nn.Linear` (what a CPU user sees).
Each tree runs in its own fresh process; the trees alternate, `--rounds` times.

    .venv/bin/python bench/bench_cache_hit_cpu.py --other /work/main          # this tree vs main
    .venv/bin/python bench/bench_cache_hit_cpu.py --other /path/to/old/checkout --rounds 5

The GPU figure (a hit vs raw `copy_` + replay on the H200) is `bench/bench_cache.py`'s hot path.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

#: run in a fresh interpreter with PYTHONPATH set to the tree being measured; prints µs per hit
_MEASURE = r"""
import json, timeit, warnings
import torch
import graphlab as gl

class NullGraph:
    capture_ms, pool_bytes, exec_bytes = 0.0, 0, None
    def __init__(self, statics):
        self.inputs = statics
        self.outputs = torch.zeros(statics[0].shape[0], 8)
    def replay(self):
        pass
    def reset(self):
        pass

class NullBackend:
    name = "null"
    def new_pool(self, device):
        return None
    def capture(self, fn, statics, **kw):
        return NullGraph(statics)

results = {}
x = torch.randn(3, 64)
with torch.no_grad():
    for label, backend, model in (("null backend", NullBackend(), torch.nn.Identity()),
                                  ("eager backend, Linear(64, 8)", "eager", torch.nn.Linear(64, 8).eval())):
        cache = gl.GraphCache(model, buckets=[1, 2, 4, 8], max_size=None, backend=backend,
                              options=gl.CacheOptions(check_padding=False))
        cache(x)  # the miss: capture, route
        timer = timeit.Timer(lambda: cache(x))
        per_call = [t / 2000 * 1e6 for t in timer.repeat(repeat=15, number=2000)]
        results[label] = {"best_us": min(per_call), "median_us": sorted(per_call)[len(per_call) // 2]}
print(json.dumps(results))
"""


def measure(tree: Path) -> dict[str, dict[str, float]]:
    done = subprocess.run([sys.executable, "-c", _MEASURE], capture_output=True, text=True, check=True, cwd=tree,
                          env={**os.environ, "PYTHONPATH": str(tree)})
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--other", type=Path, required=True, help="the tree to compare with, e.g. /work/main")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    trees = {"this tree": REPO, f"other ({args.other})": args.other.resolve()}
    runs: dict[str, list[dict[str, dict[str, float]]]] = {name: [] for name in trees}
    for _ in range(args.rounds):
        for name, tree in trees.items():
            runs[name].append(measure(tree))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"python {platform.python_version()}, {os.cpu_count()} CPUs, load average {load:.2f}, "
          f"{args.rounds} fresh processes per tree, 15 x 2,000 hits each")
    print("| tree | case | best µs/hit (min over processes) | median µs/hit (median over processes) |")
    print("|---|---|---|---|")
    for name, results in runs.items():
        for case in results[0]:
            best = min(r[case]["best_us"] for r in results)
            med = statistics.median(r[case]["median_us"] for r in results)
            print(f"| {name} | {case} | {best:.2f} | {med:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
