"""Every ordered pair of fresh-process sweeps of one model, compared as `graphlab repro` compares them.

Reads what `scripts/probes/repro_probe.sh` brings back (unpacked: rec*/GPU/MODEL/sweep.json and repro_*.json,
whose "sweep_now" is the re-run) and compares each sweep with each other one, the first as the
recording. Prints how many pairs meet each goal, the worst ratio of each figure, and --check's verdicts.
Pure: no GPU needed.

    python3 scripts/probes/repro_pairs.py DIR [--json OUT]
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from graphlab.timing.repro_report import check_verdict, compare_sweeps  # noqa: E402
from graphlab.timing.results import Sweep  # noqa: E402


def load(folder: Path) -> dict[str, Sweep]:
    sweeps = {}
    for path in sorted(folder.glob("rec*/*/*/sweep.json")):
        sweeps[path.parts[-4]] = Sweep.from_dict(json.loads(path.read_text()))
    for path in sorted(folder.glob("repro_*.json")):
        sweeps[path.stem] = Sweep.from_dict(json.loads(path.read_text())["sweep_now"])
    return sweeps


def worst(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return max(known, key=lambda v: abs(v - 1.0)) if known else None


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("folder", type=Path)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    sweeps = load(args.folder)
    if len(sweeps) < 2:
        print(f"need at least two sweeps under {args.folder}, found {len(sweeps)}")
        return 2
    goals_met: Counter[str] = Counter()
    verdicts: Counter[str] = Counter()
    ratios: dict[str, list[float | None]] = {"graph p50": [], "graph p50 at the recorded host speed": [],
                                              "graph submit": [], "graph wait": [],
                                              "speedup at the recorded host speed": []}
    pairs = 0
    for rec_name, recorded in sweeps.items():
        for now_name, now in sweeps.items():
            if now_name == rec_name:
                continue
            report = compare_sweeps(now, recorded)
            pairs += 1
            for goal, ok in report.goals_met().items():
                goals_met[goal] += bool(ok)
            verdicts[check_verdict(report.goals_met())] += 1
            for r in report.rows:
                ratios["graph p50"].append(r.graph_ratio)
                ratios["graph p50 at the recorded host speed"].append(r.matched_graph_ratio)
                ratios["graph submit"].append(r.graph_submit_ratio)
                ratios["graph wait"].append(r.graph_wait_ratio)
                ratios["speedup at the recorded host speed"].append(r.matched_speedup_ratio)
    summary = {"sweeps": list(sweeps), "ordered_pairs": pairs, "goals_met": dict(goals_met),
               "verdicts": dict(verdicts), "worst_ratio": {k: worst(v) for k, v in ratios.items()}}
    print(f"{len(sweeps)} sweeps ({', '.join(sweeps)}), {pairs} ordered pairs")
    for goal, n in goals_met.items():
        print(f"  {goal}: {n} of {pairs}")
    for name, value in summary["worst_ratio"].items():
        print(f"  worst {name} ratio: {'-' if value is None else f'{value:.3f}'}")
    for verdict, n in verdicts.most_common():
        print(f"  --check {verdict}: {n}")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
