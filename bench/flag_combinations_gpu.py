"""GPU check: parse_dot reads cudaGraphDebugDotPrint output for many flag *combinations*.

The committed fixtures (tests/fixtures/h200) hold each flag alone plus the all-runtime and all-flags
unions. This script, run on a GPU machine with torch (CUDA) and cuda-bindings, rebuilds the same
graphs with `tests/fixtures/make_fixtures.py` (one per node kind, and the `mixed` graph) and dumps
each under every subset of the flags that can change how its nodes print, every pair of the 16
flags and random subsets of all 16. It parses each dump with graphlab and compares node kinds, graph
and edge counts and kernel launch parameters with the census taken through the CUDA graph API, and
writes a JSON summary (failures listed).

    PYTHONPATH=. python3 bench/flag_combinations_gpu.py --out /tmp/combos --random 40 --every-flag-value mixed
"""
from __future__ import annotations

import argparse
import itertools
import json
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "fixtures"))

import make_fixtures as mf  # noqa: E402
from cuda.bindings import driver as dr  # noqa: E402
from cuda.bindings import runtime as rt  # noqa: E402

from graphlab.graph.dot_parser import read_dot  # noqa: E402
from graphlab.errors import DotParseError  # noqa: E402

FLAGS = sorted(set(mf.RUNTIME_FLAGS.values()) | set(mf.DRIVER_ONLY_FLAGS.values()))
# flags that change how any node prints, and the per-kind parameter flags
COMMON_FLAGS = (1, 2, 512, 1024, 16384, 32768)  # verbose, runtime types, kernel attrs, handles, topo, conditional
KIND_FLAGS = {"kernel": 4, "memcpy": 8, "memset": 16, "host": 32, "event_record": 64, "wait_event": 64,
              "ext_semas_signal": 128, "ext_semas_wait": 256, "mem_alloc": 2048, "mem_free": 4096,
              "batch_mem_op": 8192}


def relevant_combinations(kinds: dict) -> list[int]:
    """Every subset of the flags that can change how this graph's nodes print (the driver ignores
    a node type's parameter flag for other node types)."""
    bits = sorted(set(COMMON_FLAGS) | {KIND_FLAGS[k] for k in kinds if k in KIND_FLAGS})
    return [sum(b for i, b in enumerate(bits) if mask >> i & 1) for mask in range(1 << len(bits))]


def compare(path: Path, facts: dict) -> str | None:
    """None when the parse agrees with the census, else what differs."""
    try:
        graph = read_dot(path)
    except DotParseError as exc:
        return f"DotParseError: {exc}"
    problems = []
    if sorted(graph.count_by_kind().items()) != sorted(facts["kinds"].items()):
        problems.append(f"kinds {graph.count_by_kind()} != {facts['kinds']}")
    if len(graph.graphs) != facts["graphs"]:
        problems.append(f"graphs {len(graph.graphs)} != {facts['graphs']}")
    if len(list(graph.edges())) != facts["edges"]:
        problems.append(f"edges {len(list(graph.edges()))} != {facts['edges']}")
    kernels = graph.kernels()
    if [k.name for k in kernels] != [k.get("name") for k in facts["kernels"]]:
        problems.append("kernel names differ")
    for node, expected in zip(kernels, facts["kernels"]):
        if node.grid is not None and [list(node.grid), list(node.block), node.shared_bytes] != [
            expected["grid"], expected["block"], expected["shared_bytes"]
        ]:
            problems.append(f"{node.id} launch {node.grid} {node.block} {node.shared_bytes} != {expected}")
    return "; ".join(problems) or None


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None, help="folder for summary.json (default: a temporary folder)")
    ap.add_argument("--random", type=int, default=40, help="random flag subsets per kind graph")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--every-flag-value", nargs="*", default=[], metavar="GRAPH",
                    help="graphs (e.g. mixed) to dump under all 65,536 flag values")
    args = ap.parse_args()
    out = Path(args.out or tempfile.mkdtemp())
    dumps = out / "dumps"
    dumps.mkdir(parents=True, exist_ok=True)
    mf.torch.cuda.init()
    mf.check(dr.cuInit(0), "cuInit")
    rng = random.Random(args.seed)

    graphs = {stem: (graph, bodies) for stem, (graph, bodies, _) in mf.build_kind_graphs().items()}
    graphs["mixed"] = mf.build_mixed_graph()
    checked, failures = 0, []
    for stem, (graph, bodies) in graphs.items():
        facts = mf.census(graph, bodies)
        combos = relevant_combinations(facts["kinds"])
        combos += [a | b for a, b in itertools.combinations(FLAGS, 2)]  # every pair of all 16 flags
        combos += [sum(f for f in FLAGS if rng.random() < 0.5) for _ in range(args.random)]
        if stem in args.every_flag_value:
            combos = list(range(1 << 16))
        for flags in sorted(set(combos)):
            path = dumps / f"{stem}.dot"  # reused: only the summary is kept
            err = rt.cudaGraphDebugDotPrint(graph, str(path).encode(), flags)
            err = err[0] if isinstance(err, tuple) else err
            if int(err) != 0:
                failures.append({"graph": stem, "flags": flags, "problem": f"dump failed: {err!r}"})
                continue
            checked += 1
            problem = compare(path, facts)
            if problem:
                failures.append({"graph": stem, "flags": flags, "problem": problem})
    summary = {"dumps_checked": checked, "every_flag_value": args.every_flag_value, "combinations": "per graph: every subset of the flags relevant to its "
               "node kinds, every pair of the 16 flags, and random subsets of all 16", "graphs": sorted(graphs), "failures": failures,
               "gpu": mf.torch.cuda.get_device_name(0), "torch": mf.torch.__version__}
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps({k: v for k, v in summary.items() if k != "failures"}), f"failures={len(failures)}")
    for failure in failures[:20]:
        print(failure)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
