"""Benchmark: parse a 5,000-node verbose cudaGraphDebugDotPrint dump.

The dump is built by replicating real node text from the H200 fixtures (the verbose GPT decoder
capture plus the verbose `mixed` graph, so kernels, memcpy, memset, events, host and empty nodes all
appear), renamed to unique ids and chained with `[headlabel=0]` edges, as the driver writes them.

    .venv/bin/python bench/bench_parse.py            # 5,000 nodes, 7 repeats
    .venv/bin/python bench/bench_parse.py --nodes 20000 --repeats 3

    .venv/bin/python bench/bench_parse.py --write /tmp/big5000.dot   # also write the dump (for graphlab render)

It prints the dump size and the parse time: best, median and worst of the repeats, wall clock and
CPU time of this process (the CPU time moves less when other work shares the machine), with every
cache graphlab's parser keeps (rows, kernel cells, launch shapes, demangled and classified kernel
names) cleared before each repeat, so each one reads the dump as the first parse in a process does.
Target (issue 10): under 0.3 s for 5,000 nodes on the project's 2-core CPU machine.

`--cli` (issue 40) measures the command a user runs instead: `graphlab parse --compact` of a 50,000-node verbose
decoder dump to /dev/null, each run a fresh process, its wall and CPU time and peak RSS, interleaved with runs on a
1-node dump of the same node text (the baseline RSS: the interpreter with the parser's modules). The dump is made
from a real recorded one (`tests/decoder_dump.py`: the H200 small-Llama decode step's layer repeated); `--tree`
runs another checkout's graphlab on the same files (to measure before and after).

    .venv/bin/python bench/bench_parse.py --cli --repeats 5                   # 50,000 nodes
    .venv/bin/python bench/bench_parse.py --cli --tree /tmp/before --repeats 5

Target (issue 40): under 2 s, and peak RSS over the 1-node run's at most 1.5 KB a node.
"""
from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from graphlab.graph import dot_labels  # noqa: E402
from graphlab.graph.demangle import demangle  # noqa: E402
from graphlab.graph.dot_limits import NO_LIMITS  # noqa: E402
from graphlab.graph.dot_parser import parse_dot  # noqa: E402
from graphlab.graph.kernel_names import describe_kernel  # noqa: E402

SOURCES = [
    REPO / "tests/fixtures/h200/models/gpt_b1__verbose.dot",
    REPO / "tests/fixtures/h200/kinds/mixed__verbose.dot",
]
_NODE = re.compile(r'^"(graph_\d+_node_\d+)"\[(.*?)\];\n', re.MULTILINE | re.DOTALL)


def node_templates() -> list[str]:
    """Attribute text (`style=... shape=... label="..."`) of every non-body node in the sources."""
    templates: list[str] = []
    for path in SOURCES:
        text = path.read_text(encoding="utf-8")
        for match in _NODE.finditer(text):
            attrs = match.group(2)
            if "graph_" in attrs.split("label=", 1)[-1]:  # child-graph / conditional owners need bodies
                continue
            templates.append(attrs)
    if not templates:
        raise SystemExit("no node text found: are the fixtures under tests/fixtures/h200?")
    return templates


def build_dump(node_count: int) -> str:
    """A verbose dump with `node_count` nodes in one graph, as cudaGraphDebugDotPrint lays it out."""
    templates = node_templates()
    lines = ["digraph dot {", "subgraph cluster_1 {", 'label="graph_1" graph[style="dashed"];']
    for i in range(node_count):
        attrs = templates[i % len(templates)]
        attrs = re.sub(r"\{ID \| \d+", f"{{ID | {i}", attrs, count=1)
        lines.append(f'"graph_1_node_{i}"[{attrs}];\n')
    for i in range(1, node_count):
        lines.append(f'"graph_1_node_{i - 1}" -> "graph_1_node_{i}" [headlabel=0];')
    lines += ["}", "}", ""]
    return "\n".join(lines)


def clear_caches() -> None:
    """Forget everything a parse learnt: the next one starts cold, like the first in a process."""
    dot_labels.clear_caches()
    describe_kernel.cache_clear()
    demangle.cache_clear()


def time_parse(text: str, repeats: int) -> tuple[list[float], list[float], object]:
    """Wall and CPU seconds of `repeats` cold parses of `text`, and the last graph."""
    wall_s: list[float] = []
    cpu_s: list[float] = []
    graph = None
    for _ in range(repeats):
        clear_caches()
        wall, cpu = time.perf_counter(), time.process_time()
        graph = parse_dot(text, source="bench", limits=NO_LIMITS)  # past the default limits (issue 26)
        cpu_s.append(time.process_time() - cpu)
        wall_s.append(time.perf_counter() - wall)
    return wall_s, cpu_s, graph


def _spread(values: list[float]) -> str:
    return (f"best {min(values) * 1000:.0f} ms, median {statistics.median(values) * 1000:.0f} ms, "
            f"worst {max(values) * 1000:.0f} ms")


#: run by a fresh interpreter per run, so RUSAGE_CHILDREN's peak RSS is that one run's
_MEASURE = """
import json, resource, subprocess, sys, time
start = time.monotonic()
proc = subprocess.run([sys.executable, "-m", "graphlab", "parse", "--compact", *sys.argv[1:]],
                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
wall_s = time.monotonic() - start
use = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": proc.returncode, "wall_s": wall_s, "cpu_s": use.ru_utime + use.ru_stime,
                  "peak_rss_kib": use.ru_maxrss, "stderr": proc.stderr.strip()}))
"""


def run_cli(tree: Path, dump: Path) -> dict[str, float]:
    """`graphlab parse --compact DUMP > /dev/null` with `tree`'s graphlab, in a fresh process."""
    import json
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(tree)}
    got = subprocess.run([sys.executable, "-c", _MEASURE, str(dump), "--max-dot-bytes", "0", "--max-dot-nodes", "0"],
                         capture_output=True, text=True, cwd=tree, env=env, check=True)
    result = json.loads(got.stdout)
    if result["rc"] != 0:
        raise SystemExit(f"graphlab parse failed: {result['stderr']}")
    return result


def cli_main(args: argparse.Namespace) -> int:
    """The `--cli` measurement (see the module docstring)."""
    sys.path.insert(0, str(REPO / "tests"))
    from decoder_dump import decoder_shape, write_decoder_dump

    folder = Path(tempfile.mkdtemp(prefix="bench-parse-"))
    dump, one = folder / f"decoder{args.nodes}.dot", folder / "one.dot"
    with open(dump, "w", encoding="utf-8") as out:
        write_decoder_dump(out, nodes=args.nodes)
    shape = decoder_shape()
    one.write_text(f'{shape.head}"{shape.graph_id}_node_0"[{shape.layer[0]}];\n}}\n}}\n', encoding="utf-8")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs, load average "
          f"{load:.2f}; graphlab from {args.tree}; {dump.name}: {args.nodes:,} nodes, {dump.stat().st_size / 1e6:.1f} MB")
    runs, bases = [], []
    for _ in range(args.repeats):  # interleaved: the load moves both alike
        bases.append(run_cli(args.tree, one))
        runs.append(run_cli(args.tree, dump))
    base_kib = statistics.median(b["peak_rss_kib"] for b in bases)
    print("| run | wall s | CPU s | peak RSS MiB | over the 1-node run, bytes a node |")
    print("|---|---|---|---|---|")
    for i, r in enumerate(runs):
        over = (r["peak_rss_kib"] - base_kib) * 1024 / args.nodes
        print(f"| {i + 1} | {r['wall_s']:.2f} | {r['cpu_s']:.2f} | {r['peak_rss_kib'] / 1024:.0f} | {over:,.0f} |")
    walls = [r["wall_s"] for r in runs]
    print(f"wall: best {min(walls):.2f} s, median {statistics.median(walls):.2f} s, worst {max(walls):.2f} s; "
          f"1-node run: median {statistics.median(b['wall_s'] for b in bases):.2f} s, peak RSS {base_kib / 1024:.1f} MiB; "
          f"load average now {os.getloadavg()[0]:.2f}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=None, help="default 5,000 (--cli: 50,000)")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--write", type=Path, default=None, help="also write the dump to this file")
    parser.add_argument("--cli", action="store_true", help="time `graphlab parse --compact` of a decoder dump")
    parser.add_argument("--tree", type=Path, default=REPO, help="--cli: the checkout whose graphlab runs")
    args = parser.parse_args()
    if args.cli:
        args.nodes = args.nodes or 50_000
        return cli_main(args)
    args.nodes = args.nodes or 5000

    text = build_dump(args.nodes)
    if args.write:
        args.write.write_text(text, encoding="utf-8")
    wall_s, cpu_s, graph = time_parse(text, args.repeats)
    assert len(graph) == args.nodes, len(graph)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs, "
          f"load average {load:.2f}, {args.repeats} repeats, caches cleared before each")
    print(f"dump: {args.nodes} nodes, {len(list(graph.edges()))} edges, {len(text) / 1e6:.2f} MB, "
          f"{graph.count_by_kind()}")
    print(f"parse_dot wall: {_spread(wall_s)}")
    print(f"parse_dot CPU:  {_spread(cpu_s)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
