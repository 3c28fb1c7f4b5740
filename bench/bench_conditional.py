"""Conditional nodes with PyTorch bodies, measured: the three worked uses and the two build routes (GPU).

For each study (the modules of graphlab.studies.conditional), every variant is checked against eager first, then
timed (host time to issue the call, wall time to the sync, CUDA-event GPU time; p10/p50/p90 over
`repeats` synchronised calls after warm-up):

    early_exit     IF/ELSE graph vs `.item()` + one of two graphs vs one full graph vs eager
    decode_loop    greedy decoding: one WHILE launch vs one replay (and one sync) per token vs eager
    bucket_switch  one SWITCH graph over batch buckets vs one graph per bucket (copy_ + replay),
                   one graph padded to the largest, gl.GraphCache, eager; memory and build cost
    routes         route "child" vs route "capture" building the IF/ELSE and WHILE graphs

Writes DIR/conditional_bench.json (every study's rows, checks, facts, conditions) and
DIR/conditional_bench_<study>.dot (the conditional graph measured), and prints each study's table.
About 60-90 s on an H200 (`--quick`: about 25 s).

Usage (on a GPU machine, from the repository root):
    PYTHONPATH=. python3 bench/bench_conditional.py --out DIR [--quick] [--studies early_exit decode_loop]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder for conditional_bench.json and the DOT dumps")
    parser.add_argument("--quick", action="store_true", help="a quarter of the repeats")
    parser.add_argument("--studies", nargs="*", default=None,
                        help="early_exit decode_loop bucket_switch routes (default: all)")
    args = parser.parse_args()
    from graphlab.env import require_cuda
    from graphlab.studies.conditional.record import run_studies, strip_paths
    from graphlab.conditional.support import conditional_support
    from graphlab.studies.record import git_commit

    torch = require_cuda("bench_conditional.py")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    studies, errors = run_studies(quick=args.quick, names=args.studies)
    report = {
        "command": "python3 bench/bench_conditional.py" + (" --quick" if args.quick else ""),
        "git_commit": git_commit(), "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
        "support": conditional_support().to_dict(), "seconds": round(time.perf_counter() - t0, 1),
        "studies": {s.name: s.to_dict() for s in studies}, "errors": errors,
    }
    (out / "conditional_bench.json").write_text(json.dumps(strip_paths(report), indent=1))
    for s in studies:
        if s.dot:
            (out / f"conditional_bench_{s.name}.dot").write_text(s.dot)
        print(f"\n{s}\n", flush=True)
    print(f"[bench] {len(studies)} studies, {len(errors)} failed, {report['seconds']} s -> {out}", flush=True)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
