"""What an HTTP client sees of `python -m graphlab.serve`, beside a bare Starlette app (the floor), with `hey`.

    python bench/bench_serve_http.py --out out/serve_http                                  # GPU: the zoo GPT
    python bench/bench_serve_http.py --device cpu --model mlp --quick --out /tmp/s         # CPU dry run

The measurement is `graphlab.studies.serving_http.measure` (what `graphlab record --models serving_http` records
with provenance, and notebook 09 shows); this script runs it with other choices and writes the results as one JSON
file plus hey's raw output per run. Servers are processes of their own on 127.0.0.1; `hey` (Debian's package, or
--hey PATH) is the load generator; nothing here is timed by Python.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
from pathlib import Path

from graphlab.loadtest.external import CONCURRENCY, HEY_ENV, find_hey
from graphlab.studies.serving_http import (FLOOD_CLIENTS, IN_PROCESS_RATES, OPEN_LOOP_RATES, SETTINGS, HttpServingPlan,
                                     measure)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hey", default=None, help=f"hey's binary (default: ${HEY_ENV}, else hey on PATH)")
    p.add_argument("--model", default="gpt")
    p.add_argument("--device", default="cuda")
    p.add_argument("--settings", nargs="*", default=list(SETTINGS))
    p.add_argument("--duration-s", type=float, default=2.0)
    p.add_argument("--flood", type=int, default=FLOOD_CLIENTS, metavar="CLIENTS", help="0: no flood")
    p.add_argument("--no-own", action="store_true", help="leave out your own model (served through the CLI)")
    p.add_argument("--quick", action="store_true", help="two client counts, one open-loop rate, no in-process run")
    p.add_argument("--out", default="out/serve_http")
    args = p.parse_args()
    hey = args.hey or find_hey()
    if hey is None:
        p.error(f"needs hey: apt-get install hey, --hey PATH or ${HEY_ENV}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    batched = "graphs+batching" if args.device.startswith("cuda") else "eager+batching"
    plan = HttpServingPlan(model=args.model, device=args.device, settings=tuple(args.settings),
                           duration_s=args.duration_s, concurrency=(8, 32) if args.quick else CONCURRENCY,
                           capacity_for=("bare", batched), open_loop_rates=(50,) if args.quick else OPEN_LOOP_RATES,
                           in_process_rates=() if args.quick else IN_PROCESS_RATES, flood_clients=args.flood,
                           batched_setting=batched, own=not args.no_own)
    results = measure(out, hey=hey, plan=plan)
    raw = out / "raw"
    raw.mkdir(exist_ok=True)
    for name, text in results.pop("raw").items():
        (raw / f"{name.replace('+', '_')}.txt").write_text(text, encoding="utf-8")
    results["machine"] = {"python": platform.python_version(), "cpu_count": os.cpu_count()}
    (out / "serve_http.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    print(f"wrote {out / 'serve_http.json'} and hey's output under {raw}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
