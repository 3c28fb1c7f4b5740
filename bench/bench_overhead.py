"""What one call costs, eight ways, on the same model and inputs, in one process (GPU benchmark; not a test).

Ways: eager; raw torch.cuda.CUDAGraph.replay; raw copy_ + replay; CapturedGraph.__call__;
CapturedGraph.unchecked; CapturedGraph.replay; torch.cuda.make_graphed_callables;
torch.compile(mode="reduce-overhead") (counted as a graph only if it replayed one: cudagraph_skips 0,
a cudaGraphLaunch in a profiled call, CUDAGraph.replay calls). Cases: a tiny graph (16x16 Linear +
ReLU, batch 1) and every zoo model at batch 1 and 8. Per way: host time per call (back-to-back calls,
no synchronisation inside the block) and synchronised latency, in interleaved blocks (every way once
per round, rotating order); best and median over the rounds, p10-p90, and the gap of graphlab's call
paths to raw copy_ + replay paired round by round. Method and reading: docs/overhead.md.

Usage (on a GPU machine, from the repository root; about 2-2.5 minutes on the H200, ~30 s with --no-compile):
    PYTHONPATH=. python3 bench/bench_overhead.py --out out/overhead
    PYTHONPATH=. python3 bench/bench_overhead.py --models mlp --no-compile --out out/overhead-mlp

Writes OUT/overhead.json and OUT/overhead.md (the tables of docs/overhead.md). The same benchmark as a
recording with provenance: graphlab record --models overhead (data/recordings/<gpu>/overhead/).
"""
from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=None, help="zoo models (default: every zoo model)")
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=[1, 8])
    parser.add_argument("--no-tiny", action="store_true", help="skip the tiny 16x16 Linear + ReLU graph")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile(mode='reduce-overhead')")
    parser.add_argument("--compile-budget-s", type=float, default=None,
                        help="stop compiling once torch.compile took this long in all (default: no limit)")
    parser.add_argument("--rounds", type=int, default=12, help="rounds per case (every way once per round)")
    parser.add_argument("--block-ms", type=float, default=10.0, help="length of one block")
    parser.add_argument("--out", default="out/overhead", help="folder for overhead.json and overhead.md")
    args = parser.parse_args(argv)

    from graphlab.studies.overhead_report import overhead_markdown
    from graphlab.env import require_cuda
    from graphlab.errors import GraphlabError
    from graphlab.studies.overhead import run_overhead

    try:
        require_cuda("bench_overhead")
    except GraphlabError as exc:
        print(f"bench_overhead: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    data = run_overhead(models=None if args.models is None else tuple(args.models),
                        batch_sizes=tuple(args.batch_sizes), tiny=not args.no_tiny, compile_too=not args.no_compile,
                        compile_budget_s=args.compile_budget_s, rounds=args.rounds, block_ms=args.block_ms)
    given = list(argv if argv is not None else sys.argv[1:])
    if "--out" in given[:-1]:  # no absolute path in a result: the output folder is named OUT
        given[given.index("--out") + 1] = "OUT"
    data["conditions"]["command"] = " ".join(["python3 bench/bench_overhead.py", *map(shlex.quote, given)])
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "overhead.json").write_text(json.dumps(data, indent=1), encoding="utf-8")
    text = overhead_markdown(data)
    (out / "overhead.md").write_text(text, encoding="utf-8")
    print(text)
    print(f"wrote {out / 'overhead.json'} and {out / 'overhead.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
