"""Benchmark: parse a 5,000-node verbose cudaGraphDebugDotPrint dump.

The dump is built by replicating real node text from the H200 fixtures (the verbose GPT decoder
capture plus the verbose `mixed` graph, so kernels, memcpy, memset, events, host and empty nodes all
appear), renamed to unique ids and chained with `[headlabel=0]` edges, as the driver writes them.

    .venv/bin/python bench/bench_parse.py            # 5,000 nodes, 7 repeats
    .venv/bin/python bench/bench_parse.py --nodes 20000 --repeats 3

It prints the dump size and the parse time (best and median of the repeats, kernel-name caches
cleared before each repeat so demangling is paid every time). Target: well under 1 s for 5,000 nodes.
"""
from __future__ import annotations

import argparse
import platform
import re
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from graphlab.core.demangle import demangle  # noqa: E402
from graphlab.core.dot_parser import parse_dot  # noqa: E402
from graphlab.core.kernel_names import describe_kernel  # noqa: E402

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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    text = build_dump(args.nodes)
    times_s: list[float] = []
    for _ in range(args.repeats):
        describe_kernel.cache_clear()
        demangle.cache_clear()
        start = time.perf_counter()
        graph = parse_dot(text, source="bench")
        times_s.append(time.perf_counter() - start)
    assert len(graph) == args.nodes, len(graph)
    print(f"python {platform.python_version()} on {platform.machine()}, {args.repeats} repeats")
    print(f"dump: {args.nodes} nodes, {len(list(graph.edges()))} edges, {len(text) / 1e6:.2f} MB, "
          f"{graph.count_by_kind()}")
    print(f"parse_dot: best {min(times_s) * 1000:.0f} ms, median {statistics.median(times_s) * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
