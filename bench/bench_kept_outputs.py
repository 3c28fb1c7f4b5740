"""Benchmark (CPU): what the kept-output guard (`cg.warn_kept_outputs()`) adds to a captured graph's call.

A CapturedGraph around a graph whose replay does nothing (so the figure is graphlab's own call path: the input check,
one `copy_` into the static input, and with the guard one `detach()`, one weak reference and one frame look-up), called
in a loop that reassigns its result (`y = cg(x)`, never warned), off and on, alternating, `--rounds` times.
Target (issue 41): at most 1 µs per call added, for a graph with one output tensor.

    .venv/bin/python bench/bench_kept_outputs.py            # prints a table and the added cost per call
    .venv/bin/python bench/bench_kept_outputs.py --rounds 9 --json out.json
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import timeit
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this tree's graphlab, not an installed one

from graphlab import present  # noqa: E402
from graphlab.capture.captured import CapturedGraph  # noqa: E402
from graphlab.capture.engine import CaptureCost  # noqa: E402

CALLS = 20_000


class NullGraph:
    def replay(self):
        pass

    def reset(self):
        pass


def _graph(outputs: int) -> CapturedGraph:
    x = torch.randn(8, 64)
    out = torch.zeros(8, 64) if outputs == 1 else tuple(torch.zeros(8, 64) for _ in range(outputs))
    return CapturedGraph(torch_graph=NullGraph(), static_inputs=(x,), static_outputs=out, fn=None, name="null",
                         device_index=-1, cost=CaptureCost(0.0, 0.0, 0, 0, None))


def per_call_us(cg: CapturedGraph, x: torch.Tensor) -> float:
    def loop():
        for _ in range(CALLS):
            y = cg(x)  # noqa: F841 (reassigned each call, as a serving loop does)

    return min(timeit.repeat(loop, number=1, repeat=5)) / CALLS * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    rows = []
    for outputs in (1, 3):
        cg, x = _graph(outputs), torch.randn(8, 64)
        off, on = [], []
        for _ in range(args.rounds):
            cg.warn_kept_outputs(False)
            off.append(per_call_us(cg, x))
            cg.warn_kept_outputs(True)
            on.append(per_call_us(cg, x))
        rows.append({"outputs": outputs, "off_us": statistics.median(off), "on_us": statistics.median(on),
                     "added_us": statistics.median(on) - statistics.median(off)})
    print(present.readable(rows, title=f"Kept-output guard, per call (median of {args.rounds} rounds of the best of 5 "
                                       f"x {CALLS:,} calls), {platform.processor() or platform.machine()}, torch "
                                       f"{torch.__version__}"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "torch": torch.__version__, "python": platform.python_version()}, f, indent=1)


if __name__ == "__main__":
    main()
