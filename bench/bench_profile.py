"""Benchmark: the heat map of a 5,000-node graph (render + `dot` to SVG) and an inspector click's details.

    .venv/bin/python bench/bench_profile.py             # 5,000 nodes, 3 repeats

The graph is bench_parse.py's 5,000-node verbose dump; its profile is made from events laid out along the DAG
with made-up durations (1-9 µs, seeded): this measures drawing and lookup speed only, no GPU time. Reports best
and median wall time of `gl.render(graph, heat=prof).svg()` (collapsed, the default) and of
`Inspector.details_for(node)` over 200 nodes, plus `build_profile` (matching 3 replays of 5,000 events).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))

from bench_parse import build_dump  # noqa: E402
from decoder_dump import synthetic_replays  # noqa: E402  (test data: made-up GPU times)

import graphlab as gl  # noqa: E402
from graphlab.clock import Stopwatch  # noqa: E402
from graphlab.profile.results import build_profile  # noqa: E402


def _time(fn, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        with Stopwatch() as sw:
            fn()
        out.append(sw.s)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    # the dump is past the default limits (2.6 MB, 5,000 nodes): this is a trusted synthetic one
    graph = gl.parse_dot(build_dump(args.nodes), source=f"big{args.nodes}.dot",
                         limits=gl.DotLimits(max_bytes=None, max_nodes=None))
    replays = synthetic_replays(graph, 3)
    holder = {}
    build = _time(lambda: holder.update(prof=build_profile(graph, replays, name="synthetic")), args.repeats)
    prof = holder["prof"]
    render = _time(lambda: gl.render(graph, heat=prof).svg(), args.repeats)
    from graphlab.ui.inspector import Inspector

    ins = Inspector(graph, profile=prof)
    ids = [n.id for n in graph.nodes()][:: max(1, len(graph) // 200)]
    clicks = []
    for nid in ids:
        with Stopwatch() as sw:
            ins.details_for(nid)
        clicks.append(sw.s)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{len(graph):,} nodes, {os.cpu_count()} cores, load {load:.1f}; matched {prof.matched_fraction:.3f}")
    print(f"build_profile (3 replays): best {min(build):.2f} s, median {statistics.median(build):.2f} s")
    print(f"render heat map + SVG:     best {min(render):.2f} s, median {statistics.median(render):.2f} s")
    print(f"inspector click details:   median {1e3 * statistics.median(clicks):.2f} ms, worst {1e3 * max(clicks):.2f} ms "
          f"over {len(clicks)} nodes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
