"""Benchmark: the DOT reader's limits on hostile dumps, and a 1M-node dump parsed with the limits raised.

Builds the dumps of issue 26 (a cudaGraphDebugDotPrint-style dump of N one-line kernel nodes chained by
edges, about 158 bytes a node as in the issue; one node with a huge label) and runs `graphlab parse` on
each in a fresh process, as a user would, reporting the exit status, wall time, CPU time and the child's
peak RSS (`getrusage(RUSAGE_CHILDREN).ru_maxrss`, one fresh process per case).

    .venv/bin/python bench/bench_dot_limits.py                       # 1,000,000 nodes, 200 MB label
    .venv/bin/python bench/bench_dot_limits.py --nodes 100000 --label-mb 20 --keep /tmp/dots

Cases:
    default limits on the 1M-node file       refused by the size check before a byte is read
    size raised, node count not              refused by the pre-scan (before tokenising)
    all limits raised (`0`: none)            parsed, JSON streamed to a file: target <= 1 KB/node, < 60 s
    the huge label, size raised              refused when the tokeniser meets the label

Target (issue 26): the 1M-node file parses with limits raised in at most 1 KB of memory per node and
under 60 s on the project's CPU machine, JSON written as a stream. One run per case: a benchmark,
not a unit test (no timing target is asserted in tests).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

#: real kernel names from the H200 fixtures (gpt_b8__default.dot), cycled through the nodes
KERNELS = (
    "_ZN2at6native24vectorized_gather_kernelILi16ElEEvPcS2_PT0_illllb",
    "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma",
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEE",
    "_Z39fmha_cutlassF_f32_aligned_64x64_rf_sm80N22PyTorchMemEffAttention",
)


def write_nodes_dump(path: Path, nodes: int) -> int:
    """A dump of `nodes` one-line kernel nodes in one graph, each joined to the next; returns its size."""
    with open(path, "w", encoding="utf-8") as out:
        out.write('digraph dot {\nsubgraph cluster_1 {\nlabel="graph_1" graph[style="dashed"];\n')
        for i in range(nodes):
            out.write(f'"graph_1_node_{i}"[style="bold" shape="octagon" label="{i}\\n{KERNELS[i % 4]}\\n"];\n')
        for i in range(1, nodes):
            out.write(f'"graph_1_node_{i - 1}" -> "graph_1_node_{i}";\n')
        out.write("}\n}\n")
    return path.stat().st_size


def write_label_dump(path: Path, label_bytes: int) -> int:
    """A dump of one node whose label is `label_bytes` long."""
    with open(path, "w", encoding="utf-8") as out:
        out.write('digraph dot {\nsubgraph cluster_1 {\nlabel="graph_1" graph[style="dashed"];\n')
        out.write('"graph_1_node_0"[style="bold" shape="octagon" label="0\\n')
        chunk = "k" * 1_000_000
        for _ in range(label_bytes // len(chunk)):
            out.write(chunk)
        out.write('\\n"];\n}\n}\n')
    return path.stat().st_size


#: run by a fresh interpreter per case, so RUSAGE_CHILDREN's peak RSS is that one case's (it is a maximum over
#: every child a process waited for)
_MEASURE = """
import json, resource, subprocess, sys, time
start = time.monotonic()
with open(sys.argv[1], "w") as out:
    proc = subprocess.run([sys.executable, "-m", "graphlab", "parse", *sys.argv[2:]], stdout=out,
                          stderr=subprocess.PIPE, text=True)
wall_s = time.monotonic() - start
use = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": proc.returncode, "wall_s": wall_s, "cpu_s": use.ru_utime + use.ru_stime,
                  "peak_rss_mb": use.ru_maxrss / 1024, "stderr": proc.stderr.strip()}))
"""


def run_parse(args: list[str], json_out: Path) -> dict[str, float | int | str]:
    """`graphlab parse ARGS` in a fresh process (stdout to `json_out`): status, wall, CPU, peak RSS."""
    got = subprocess.run([sys.executable, "-c", _MEASURE, str(json_out), *args], capture_output=True, text=True,
                         cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, check=True)
    result = json.loads(got.stdout)
    result["json_mb"] = json_out.stat().st_size / 1e6
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1_000_000)
    parser.add_argument("--label-mb", type=int, default=200)
    parser.add_argument("--keep", type=Path, default=None, help="folder for the dumps (default: a temporary one)")
    args = parser.parse_args()

    folder = args.keep or Path(tempfile.mkdtemp(prefix="dotlimits-"))
    folder.mkdir(parents=True, exist_ok=True)
    nodes_dot, label_dot, json_out = folder / "nodes.dot", folder / "label.dot", folder / "out.json"
    nodes_size = write_nodes_dump(nodes_dot, args.nodes)
    label_size = write_label_dump(label_dot, args.label_mb * 1_000_000)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs, load average "
          f"{load:.2f}; {nodes_dot.name}: {args.nodes:,} nodes, {nodes_size / 1e6:.1f} MB; "
          f"{label_dot.name}: {label_size / 1e6:.1f} MB")
    tiny = folder / "tiny.dot"
    write_nodes_dump(tiny, 2)
    baseline = run_parse([str(tiny)], json_out)  # the interpreter with the parser's modules imported
    print(f"baseline (graphlab parse of a 2-node dump): peak RSS {baseline['peak_rss_mb']:.0f} MB")
    cases = [
        ("N nodes, default limits", [str(nodes_dot)]),
        ("N nodes, --max-dot-bytes 0", [str(nodes_dot), "--max-dot-bytes", "0"]),
        ("N nodes, all limits off, --compact", [str(nodes_dot), "--compact", "--max-dot-bytes", "0",
                                                 "--max-dot-nodes", "0", "--max-label-chars", "0"]),
        ("N nodes, all limits off, indented", [str(nodes_dot), "--max-dot-bytes", "0",
                                                "--max-dot-nodes", "0", "--max-label-chars", "0"]),
        ("huge label, --max-dot-bytes 0", [str(label_dot), "--max-dot-bytes", "0"]),
    ]
    print("| case | exit | wall s | CPU s | peak RSS MiB | bytes/node over baseline | JSON MB | message |")
    print("|---|---|---|---|---|---|---|---|")
    for title, case_args in cases:
        r = run_parse(case_args, json_out)
        per_node = (float(r["peak_rss_mb"]) - float(baseline["peak_rss_mb"])) * 2**20 / args.nodes  # MiB: ru_maxrss is KiB
        print(f"| {title} | {r['rc']} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | {r['peak_rss_mb']:.0f} | "
              f"{per_node:.0f} | {r['json_mb']:.0f} | {r['stderr'][:110]} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
