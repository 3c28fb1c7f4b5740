"""TEST DATA: a synthetic decoder's decode-step DOT dump of any depth, made from a real recorded dump.

Not a recording and no measurement: the node text is real (the H200 capture of the small Llama-style decode step
in `data/recordings/h200/decode/llama-b1.dot`, verbose flags, 4 identical layers of 44 nodes), the depth is made
up. The layer is the repeated block graphlab itself finds (`graphlab.graph.structure.find_repeated_blocks`); the
dump is the recorded one with that layer's node statements written `layers` times (or until `nodes` nodes), every
node renumbered (its name, `ID`, `topoId` and node handle) and chained as the driver chains a one-stream capture.

Used by the tests (a 32-layer graph collapses to one block x32) and by `bench/bench_parse.py` (a 50,000-node
verbose dump), so both read the node shapes of a real decoder.

    >>> text = decoder_dump(layers=32)          # doctest: +SKIP
    >>> write_decoder_dump(path, nodes=50_000)  # doctest: +SKIP
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterator, TextIO

REPO = Path(__file__).resolve().parent.parent
RECORDED_DECODE_DOT = REPO / "data" / "recordings" / "h200" / "decode" / "llama-b1.dot"

_NODE = re.compile(r'^"(graph_\d+)_node_(\d+)"\[(.*?)\];\n', re.MULTILINE | re.DOTALL)
_ID = re.compile(r"(\{ID \| |\{\{ID \| node handle\} \| \{)\d+ \(topoId: \d+\)")
_HANDLE = re.compile(r"(\(topoId: \d+\) \| |\{\{node handle \| func handle\} \| \{)0x[0-9A-F]{16}")
_HANDLE_BASE = 0x60B40000


@dataclass(frozen=True)
class DecoderShape:
    """The recorded dump cut into what comes before its layers, one layer, and what comes after (attribute texts
    of node statements, in topological order), with the graph's cluster name and the dump's framing."""

    graph_id: str
    head: str  # `digraph dot {` up to the first node statement
    before: tuple[str, ...]
    layer: tuple[str, ...]
    after: tuple[str, ...]
    recorded_layers: int
    source: Path

    @property
    def fixed_nodes(self) -> int:
        """Nodes outside the layers (embedding, rotary set-up, final norm, head, argmax)."""
        return len(self.before) + len(self.after)


@lru_cache(maxsize=4)
def decoder_shape(source: Path = RECORDED_DECODE_DOT) -> DecoderShape:
    """Cut a recorded decode-step dump into before / one layer / after by its one repeated block."""
    from graphlab.graph.dot_parser import read_dot
    from graphlab.graph.structure import analyze, find_repeated_blocks

    text = source.read_text(encoding="utf-8")
    graph = read_dot(source)
    if len(graph.graphs) != 1:
        raise ValueError(f"{source}: expected one graph (a decode step), found {len(graph.graphs)}")
    blocks = find_repeated_blocks(graph, min_saved_nodes=4)
    if len(blocks) != 1:
        raise ValueError(f"{source}: expected one repeated block (the layers), found {len(blocks)}")
    block = blocks[0]
    statements = {f"{m.group(1)}_node_{m.group(2)}": m.group(3) for m in _NODE.finditer(text)}
    order = analyze(graph.root).order
    attrs = [statements[nid] for nid in order]
    end = block.start + block.count * block.period
    first = _NODE.search(text)
    if first is None:
        raise ValueError(f"{source}: no node statement")
    return DecoderShape(graph.root.id, text[: first.start()], tuple(attrs[: block.start]),
                        tuple(attrs[block.start: block.start + block.period]), tuple(attrs[end:]), block.count, source)


def _node_attrs(shape: DecoderShape, layers: int | None, nodes: int | None) -> Iterator[str]:
    """Attribute texts of every node, in order: before, the layer repeated, after."""
    if (layers is None) == (nodes is None):
        raise ValueError("give layers or nodes")
    if nodes is not None:
        if nodes < shape.fixed_nodes:
            raise ValueError(f"at least {shape.fixed_nodes} nodes (those outside the layers)")
        in_layers = nodes - shape.fixed_nodes
    else:
        in_layers = layers * len(shape.layer)  # type: ignore[operator]
    yield from shape.before
    for i in range(in_layers):
        yield shape.layer[i % len(shape.layer)]
    yield from shape.after


def _renumbered(attrs: str, index: int, total: int) -> str:
    attrs = _ID.sub(lambda m: f"{m.group(1)}{index} (topoId: {total - 1 - index})", attrs, count=1)
    return _HANDLE.sub(lambda m: f"{m.group(1)}0x{_HANDLE_BASE + 0x968 * index:016X}", attrs, count=1)


def write_decoder_dump(out: TextIO, *, layers: int | None = None, nodes: int | None = None,
                       source: Path = RECORDED_DECODE_DOT) -> int:
    """Write the dump of a decoder `layers` deep (or of exactly `nodes` nodes, the last layer cut short) to `out`,
    node by node; returns its node count."""
    shape = decoder_shape(source)
    total = (nodes if nodes is not None
             else shape.fixed_nodes + layers * len(shape.layer))  # type: ignore[operator]
    gid = shape.graph_id
    out.write(shape.head)
    for i, attrs in enumerate(_node_attrs(shape, layers, nodes)):
        out.write(f'"{gid}_node_{i}"[{_renumbered(attrs, i, total)}];\n\n')
    for i in range(1, total):
        out.write(f'"{gid}_node_{i - 1}" -> "{gid}_node_{i}" [headlabel=0];\n')
    out.write("}\n}\n")
    return total


def decoder_dump(*, layers: int | None = None, nodes: int | None = None, source: Path = RECORDED_DECODE_DOT) -> str:
    """The text of `write_decoder_dump`."""
    import io

    out = io.StringIO()
    write_decoder_dump(out, layers=layers, nodes=nodes, source=source)
    return out.getvalue()


def synthetic_replays(graph, replays: int, seed: int = 0):  # type: ignore[no-untyped-def]
    """TEST DATA: made-up GPU events of `replays` replays of `graph` (each kernel 1-9 µs, random; copies and sets
    1 µs; one after the other on one stream, in the order the profiler's matcher walks the graph, bodies included).
    Also what `bench/bench_profile.py` profiles."""
    import random

    from graphlab.profile.events import GpuEvent
    from graphlab.profile.match import Dag

    rng = random.Random(seed)
    out = []
    for _ in range(replays):
        t, events = 0.0, []
        for nid in Dag(graph).order:
            node = graph.node(nid)
            if node.kind.value == "kernel":
                events.append(GpuEvent(node.demangled_name or "", "kernel", t, rng.uniform(1, 9), grid=node.grid,
                                       block=node.block))
            elif node.kind.value in ("memcpy", "memset"):
                events.append(GpuEvent(node.kind.value, node.kind.value, t, 1.0,
                                       bytes=node.copy_bytes or node.memset_bytes))
            else:
                continue
            t = events[-1].end_us + 0.1
        out.append(events)
    return out


def synthetic_profile(graph, replays: int = 3, seed: int = 0):  # type: ignore[no-untyped-def]
    """TEST DATA: a `gl.profile` result for a decoder graph with made-up GPU times (`synthetic_replays`) and module
    names by layer: the nodes of repeat k of the graph's repeated block are `model.layers.k`, the others `model`
    (what `DecodeGraphs` records at capture on a GPU)."""
    from graphlab.graph.structure import find_repeated_blocks
    from graphlab.profile.results import build_profile

    modules = {node.id: ["model"] for node in graph.nodes()}
    for block in find_repeated_blocks(graph, min_saved_nodes=4):
        for layer, ids in enumerate(block.node_ids):
            modules.update({nid: [f"model.layers.{layer}"] for nid in ids})
    return build_profile(graph, synthetic_replays(graph, replays, seed), name="synthetic decoder",
                         node_modules=modules)
