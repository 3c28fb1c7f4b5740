"""Benchmark: `graphlab render` of the 5,000-node verbose dump that bench_parse.py builds.

    .venv/bin/python bench/bench_render.py              # 5,000 nodes, 3 repeats per case
    .venv/bin/python bench/bench_render.py --repeats 5

Each case runs `python -m graphlab render big5000.dot -o OUT` in a fresh process (parse, drawing, `dot`
layout and writing the SVG: what a user waits for) and reports best, median and worst wall time, the
nodes drawn and the SVG's size. Cases: the default (repeated blocks collapsed), `--no-collapse` (capped
at `--max-nodes`, 2,000 by default) and `--no-collapse --max-nodes 0` (all 5,000: the uncapped cost).
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

from bench_parse import build_dump  # noqa: E402

CASES = {
    "collapsed (default)": [],
    "--no-collapse (capped at 2,000)": ["--no-collapse"],
    "--no-collapse --max-nodes 0 (all)": ["--no-collapse", "--max-nodes", "0"],
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"python {platform.python_version()}, {os.cpu_count()} CPUs, load average {load:.2f}, "
          f"{args.repeats} fresh processes per case")
    with tempfile.TemporaryDirectory() as tmp:
        dump = Path(tmp) / "big.dot"
        dump.write_text(build_dump(args.nodes), encoding="utf-8")
        for name, extra in CASES.items():
            times_s, said, size = [], "", 0
            for _ in range(args.repeats):
                out = Path(tmp) / "big.svg"
                start = time.perf_counter()
                done = subprocess.run([sys.executable, "-m", "graphlab", "render", str(dump), "-o", str(out), "--max-dot-bytes", "0",
                                       "--max-dot-nodes", "0", *extra],
                                      capture_output=True, text=True, cwd=REPO, timeout=600)
                times_s.append(time.perf_counter() - start)
                if done.returncode != 0:
                    print(f"{name}: failed: {done.stderr.strip()}")
                    return 1
                said, size = done.stderr.strip().split(": ", 1)[1], out.stat().st_size
            print(f"{name}: best {min(times_s):.2f} s, median {statistics.median(times_s):.2f} s, worst "
                  f"{max(times_s):.2f} s; {said}; SVG {size / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
