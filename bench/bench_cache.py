"""Graph-cache benchmarks on a GPU: hot path (goal: a hit within 5 µs of raw copy_ + replay at batch 1) and
pool memory (goal: a shared pool of every bucket within 1.1x the largest graph alone), plus eviction.

    PYTHONPATH=. python3 bench/bench_cache.py [--json OUT.json]        # about 40 s on an H200

The same measurements are recorded with provenance by `graphlab record --models cache`
(data/recordings/<gpu>/cache/); they live in graphlab/studies/cache_bench.py so both use one copy.
"""
from __future__ import annotations

import argparse
import json

from graphlab.studies import cache_bench


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    results = {"hot_path": cache_bench.hot_path("mlp", 1), "pools": cache_bench.pool_memory(),
               "eviction": cache_bench.eviction_memory()}
    hot = results["hot_path"]
    print("hot path, mlp batch 1 (median block, µs per call):")
    for name, value in hot["variants"].items():
        print(f"  {name:<18} {value['median_us']:8.2f}  (best {value['best_us']:.2f})")
    print("pools (reserved growth, MiB):")
    for model, row in results["pools"]["models"].items():
        cells = {m: row[m].get("reserved_growth_bytes", float("nan")) / 2**20 for m in cache_bench.POOL_MODES}
        print(f"  {model:<6} " + "  ".join(f"{m} {v:.1f}" for m, v in cells.items())
              + f"  shared/largest {row.get('shared_over_largest', float('nan')):.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
