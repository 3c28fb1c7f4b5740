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
"""
from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import sys
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--write", type=Path, default=None, help="also write the dump to this file")
    args = parser.parse_args()

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
