"""Parse the DOT text that `cudaGraphDebugDotPrint` writes into the typed model (`CudaGraph`).

Pure (no torch): standard library only.

The driver writes one `digraph` holding one `subgraph cluster_<G>` per CUDA graph: the root graph and,
as *sibling* clusters, every child-graph and conditional body. Bodies are linked to their owner only by
label text (`graph_10` in a child-graph rectangle, `{True|graph_10}` in a conditional record). Node
labels come in two styles: terse (octagons, trapezia, rectangles with lines of text) and verbose
(Graphviz records with `\\{ \\} \\| \\< \\>` escapes). Every flag combination mixes the two; this parser
reads the DOT syntax first (`dot_syntax.DotReader`), then each node's label (`dot_labels.read_label`),
then links bodies to owners and checks every reference.

Anything that is not a complete dump raises one `DotParseError` naming the source and line.

Example:
    >>> from graphlab.graph.dot_parser import parse_dot
    >>> graph = parse_dot('''digraph dot {
    ... subgraph cluster_1 {
    ... label="graph_1" graph[style="dashed"];
    ... "graph_1_node_0"[style="bold" shape="octagon" label="0\\nmy_kernel\\n"];
    ... }
    ... }''')
    >>> graph.count_by_kind()
    {'kernel': 1}
"""
from __future__ import annotations

import gc
import os
import re

from graphlab.graph.dot_file import DotFile
from graphlab.graph.dot_labels import read_label
from graphlab.graph.dot_limits import DotLimits, resolve_limits
from graphlab.graph.dot_templates import LabelTemplates
from graphlab.graph.dot_syntax import Cluster, DotReader, DotText, RawNode, WholeText
from graphlab.graph.model import CudaGraph, Edge, Graph, Node
from graphlab.errors import DotParseError

__all__ = ["parse_dot", "read_dot"]

_NO_GC_ABOVE_CHARS = 1_000_000  # texts (files: bytes) longer than this parse with the cyclic garbage collector paused
_GRAPH_LABEL = re.compile(r"^graph_\d+$")
_NODE_NAME = re.compile(r"^(graph_\d+)_node_(\d+)$")
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f]")
_CONTROL_CHARS = [chr(c) for c in (*range(0x00, 0x09), *range(0x0E, 0x20))]


def _graph_id(cluster: Cluster) -> str:
    if cluster.label and _GRAPH_LABEL.match(cluster.label.strip()):
        return cluster.label.strip()
    suffix = cluster.name[len("cluster") :].lstrip("_")
    return f"graph_{suffix}" if suffix.isdigit() else (cluster.label or cluster.name).strip() or cluster.name


class _NodeMaker:
    """Makes each node's `Node` from its label as the reader reads it (`DotReader(on_node=...)`), so that no label is
    held longer than its statement; `_build` makes those the reader did not (a reader without the hook)."""

    def __init__(self, *, templates: bool = True) -> None:
        """`templates`: copy a node whose label repeats another's but for its own values (`dot_templates`); the tests
        read every dump with and without."""
        self.kernel_names: dict[str, str] = {}  # one string per kernel name: a big dump repeats a few names many times
        self.templates = LabelTemplates() if templates else None
        # cluster -> (it, its label, its graph id then): one graph id string for all its nodes
        self.graph_ids: dict[int, tuple[Cluster, str | None, str]] = {}

    def __call__(self, raw: RawNode) -> None:
        cluster = raw.cluster
        known = self.graph_ids.get(id(cluster))
        if known is None or known[0] is not cluster or known[1] != cluster.label:
            known = self.graph_ids[id(cluster)] = (cluster, cluster.label, _graph_id(cluster))
        raw.made = self.make(raw, known[2], len(cluster.node_names))

    def make(self, raw: RawNode, gid: str, position: int) -> Node | str:
        """The node, or (a str) why its label did not read; its attributes are dropped either way."""
        name = raw.name
        match = _NODE_NAME.match(name)
        index = int(match.group(2)) if match else position
        attrs = raw.attrs or {}
        templates = self.templates
        found = templates.key_of(attrs) if templates is not None else None
        if found is not None:
            node = templates.node(*found, name, gid, index)  # type: ignore[union-attr]
            if node is not None:
                raw.attrs = None
                return node
        try:
            fields = read_label(attrs)
        except ValueError as exc:  # dot_labels' own _LabelError, or a value in the label that did not convert
            return f"node {name!r}: {exc}"
        except (IndexError, KeyError, TypeError, AttributeError) as exc:  # a label layout no rule foresaw
            return f"node {name!r}: cannot read its label (internal error {type(exc).__name__}: please report this dump)"
        finally:
            raw.attrs = None
        if fields.name is not None:
            fields.name = self.kernel_names.setdefault(fields.name, fields.name)
        node = fields.to_node(name, gid, index)
        if found is not None:
            templates.learn(*found, node)  # type: ignore[union-attr]
        return node


def _build(reader: DotReader) -> CudaGraph:
    """Turn what the reader collected into the typed model, checking every cross-reference."""
    if not reader.clusters:
        raise reader.error("no CUDA graph in this DOT text: expected 'subgraph cluster_<N> { ... }'", None)
    graph_ids: dict[str, Cluster] = {}
    for cluster in reader.clusters:
        gid = _graph_id(cluster)
        if gid in graph_ids:
            raise reader.error(f"graph {gid!r} appears twice in the dump", cluster.pos)
        graph_ids[gid] = cluster
    cluster_gid = {id(c): g for g, c in graph_ids.items()}

    nodes: dict[str, Node] = {}
    raw_nodes = reader.nodes
    owner_pos: dict[str, int] = {}  # where each node with a body was declared (the checks below name it)
    maker = reader.on_node if isinstance(reader.on_node, _NodeMaker) else _NodeMaker()
    for name in list(raw_nodes):
        raw = raw_nodes.pop(name)  # each raw node goes once its Node is taken: less held at once
        gid = cluster_gid[id(raw.cluster)]
        made = raw.made
        if made is None:  # not made while reading
            made = maker.make(raw, gid, raw.cluster.node_names.index(name))
        if isinstance(made, str):
            raise reader.error(made, raw.pos)
        if made.graph_id is not gid and made.graph_id != gid:  # the cluster's label came after this node
            made.__dict__["graph_id"] = gid
        node = nodes[name] = made
        if node.body_graph_ids:
            owner_pos[name] = raw.pos
    raw_nodes.clear()  # popping left the table its full size
    del maker

    owner_of: dict[str, str] = {}
    for name, node in nodes.items():
        for body in node.body_graph_ids:
            if body not in graph_ids:
                raise reader.error(f"node {name!r} refers to body graph {body!r}, which is not in the dump", owner_pos[name])
            if body in owner_of:
                raise reader.error(f"graph {body!r} is the body of two nodes ({owner_of[body]!r} and {name!r})", owner_pos[name])
            if body == node.graph_id:
                raise reader.error(f"node {name!r} names its own graph {body!r} as its body", owner_pos[name])
            owner_of[body] = name
    _check_no_cycles(reader, nodes, owner_of, owner_pos)

    edges_by_graph: dict[str, list[Edge]] = {gid: [] for gid in graph_ids}
    for read in [c.edges for c in reader.clusters] + [reader.loose_edges]:
        for i, (src, dst, pos) in enumerate(read):
            for end in (src, dst):
                if end not in nodes:
                    raise reader.error(f"edge {src!r} -> {dst!r} refers to unknown node {end!r}", pos)
            if nodes[src].graph_id != nodes[dst].graph_id:
                raise reader.error(f"edge {src!r} -> {dst!r} joins nodes of two different graphs", pos)
            edges_by_graph[nodes[src].graph_id].append(Edge(src, dst))
            read[i] = None  # type: ignore[call-overload]  # each edge as read goes once made: less held at once

    graphs = [
        Graph(
            id=gid,
            nodes=tuple(nodes[n] for n in cluster.node_names),
            edges=tuple(edges_by_graph[gid]),
            parent_node_id=owner_of.get(gid),
        )
        for gid, cluster in graph_ids.items()
    ]
    graphs.sort(key=lambda g: g.parent_node_id is not None)  # stable: root first, bodies in dump order
    return CudaGraph(graphs=tuple(graphs), source=reader.source)


def _check_no_cycles(reader: DotReader, nodes: dict[str, Node], owner_of: dict[str, str],
                     owner_pos: dict[str, int]) -> None:
    """A body graph must not (through its owners) contain itself."""
    for start in owner_of:
        seen = {start}
        gid = start
        while gid in owner_of:
            gid = nodes[owner_of[gid]].graph_id
            if gid in seen:
                pos = owner_pos[owner_of[start]]
                raise reader.error(f"body graphs form a cycle through {start!r}", pos)
            seen.add(gid)


def parse_dot(text: str, *, source: str = "<string>", limits: DotLimits | None = None) -> CudaGraph:
    """Parse the DOT text written by `cudaGraphDebugDotPrint` (any flags) into a `CudaGraph`.

    Args:
        text: the whole dump.
        source: a name for error messages (the file name, by default "<string>").
        limits: the most the text may hold (`gl.DotLimits`; None: the current ones, see
            `graphlab.graph.dot_limits`): its length, checked first, then a pre-scan of the node count,
            then the exact count and each label while reading.

    Raises:
        DotLimitError: past a limit; the message names it and how to raise it.
        DotParseError: the text is empty, truncated, binary, not a CUDA graph dump, or inconsistent
            (edges or body references to graphs and nodes that are not there). The message names
            `source` and the line.

    Example:
        >>> text = open("tests/fixtures/h200/kinds/mixed__all.dot").read()  # doctest: +SKIP
        >>> graph = parse_dot(text, source="mixed__all.dot")  # doctest: +SKIP
        >>> graph.count_by_kind()  # doctest: +SKIP
        {'memset': 5, 'kernel': 3, 'memcpy': 1, 'event_record': 1, 'empty': 1, 'child_graph': 1, 'host': 1, 'conditional': 1}
    """
    if not isinstance(text, str):
        raise DotParseError(f"expected DOT text (str), got {type(text).__name__}", source=source)
    limits = resolve_limits(limits)
    limits.check_bytes(len(text), source, "characters")
    limits.prescan_nodes(text, source)
    bad = _CONTROL.search(text) if any(char in text for char in _CONTROL_CHARS) else None  # `in`: 10x faster
    if bad is not None:
        line = text.count("\n", 0, bad.start()) + 1
        raise DotParseError("binary data, not a DOT text dump (control character found)", source=source, line=line)
    return _parse(WholeText(text), source, limits, big=len(text) > _NO_GC_ABOVE_CHARS)


def _parse(text: DotText, source: str, limits: DotLimits, *, big: bool) -> CudaGraph:
    """Read a checked text into the model, each node made as it is read."""
    # The parse makes millions of small objects and no reference cycles: the cyclic collector would only
    # walk them again and again (about a quarter of a big dump's parse time), so it waits until the end.
    collecting = gc.isenabled() and big
    if collecting:
        gc.disable()
    reader = None
    try:
        reader = DotReader(text, source, limits=limits, on_node=_NodeMaker())
        reader.read()
        return _build(reader)
    except RecursionError:
        raise DotParseError("nesting too deep to be a CUDA graph dump", source=source) from None
    finally:
        if reader is not None:
            reader._chunks = None  # the token generator refers to the reader: no cycle left for the collector
        if collecting:
            gc.enable()


def read_dot(path: str | os.PathLike[str], *, limits: DotLimits | None = None) -> CudaGraph:
    """Read and parse a DOT file written by `cudaGraphDebugDotPrint`, in pieces (`graphlab.graph.dot_file`): the
    whole text is never in memory at once.

    Args:
        limits: the most the file may hold (`gl.DotLimits`; None: the current ones): its size is checked
            before a byte is read, then as `parse_dot` checks.

    Raises:
        DotFileError: the file cannot be opened (also the OSError Python raised: FileNotFoundError, ...).
        DotLimitError: past a limit; the message names it and how to raise it.
        DotParseError: the file is not UTF-8 text or not a complete CUDA graph dump.

    Example:
        >>> graph = read_dot("tests/fixtures/h200/models/mlp_b1__verbose.dot")  # doctest: +SKIP
        >>> [n.short_name for n in graph.kernels()][:3]  # doctest: +SKIP
        ['gemv (cuBLAS)', 'gelu (elementwise)', 'gemv (cuBLAS)']
    """
    limits = resolve_limits(limits)
    with DotFile.open(path, limits) as text:
        return _parse(text, str(path), limits, big=text.size > _NO_GC_ABOVE_CHARS)
