"""Parse the DOT text that `cudaGraphDebugDotPrint` writes into the typed model (`CudaGraph`).

Layer 0 (pure): standard library only.

The driver writes one `digraph` holding one `subgraph cluster_<G>` per CUDA graph: the root graph and,
as *sibling* clusters, every child-graph and conditional body. Bodies are linked to their owner only by
label text (`graph_10` in a child-graph rectangle, `{True|graph_10}` in a conditional record). Node
labels come in two styles: terse (octagons, trapezia, rectangles with lines of text) and verbose
(Graphviz records with `\\{ \\} \\| \\< \\>` escapes). Every flag combination mixes the two; this parser
reads the DOT syntax first (`_DotReader`) and then each node's label (`_read_label`).

Anything that is not a complete dump raises one `DotParseError` naming the source and line.

Example:
    >>> from graphlab.core.dot_parser import parse_dot
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

import bisect
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from graphlab.core.dot_labels import NodeFields, read_label
from graphlab.core.model import CudaGraph, Edge, Graph, Node
from graphlab.errors import DotParseError

__all__ = ["parse_dot", "read_dot"]

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<comment>//[^\n]*|/\*(?:[^*]|\*(?!/))*\*/|(?<![^\n])\#[^\n]*)
  | (?P<string>"[^"\\]*(?:\\.[^"\\]*)*")
  | (?P<id>[A-Za-z_\x80-\U0010ffff][\w\x80-\U0010ffff]*|-?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?))
  | (?P<op>->|--|[{}\[\];=,:+])
  | (?P<bad>.)
    """,
    re.VERBOSE | re.DOTALL,
)
_KEYWORDS = {"digraph", "graph", "subgraph", "node", "edge", "strict"}
_GRAPH_LABEL = re.compile(r"^graph_\d+$")
_NODE_NAME = re.compile(r"^(graph_\d+)_node_(\d+)$")
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f]")


@dataclass
class _Cluster:
    """One `subgraph cluster_...` as read from the text."""

    name: str
    pos: int
    label: str | None = None
    node_names: list[str] = field(default_factory=list)
    edges: list[tuple[str, str, int]] = field(default_factory=list)


@dataclass
class _RawNode:
    name: str
    cluster: _Cluster
    attrs: dict[str, str]
    pos: int


class _DotReader:
    """A recursive-descent reader for the DOT language subset the CUDA driver writes
    (plus the general statement forms, so hand-edited dumps still read)."""

    def __init__(self, text: str, source: str):
        self.text = text
        self.source = source
        self._newlines: list[int] | None = None
        self.tokens = self._tokenize(text)
        self.i = 0
        self.clusters: list[_Cluster] = []
        self.nodes: dict[str, _RawNode] = {}
        self.loose_edges: list[tuple[str, str, int]] = []

    # -- errors and positions -----------------------------------------------------------
    def line_of(self, pos: int) -> int:
        if self._newlines is None:
            self._newlines = [m.start() for m in re.finditer("\n", self.text)]
        return bisect.bisect_left(self._newlines, pos) + 1

    def error(self, message: str, pos: int | None) -> DotParseError:
        line = None if pos is None else self.line_of(min(pos, len(self.text)))
        return DotParseError(message, source=self.source, line=line)

    # -- tokens -------------------------------------------------------------------------
    def _tokenize(self, text: str) -> list[tuple[str, str, int]]:
        tokens: list[tuple[str, str, int]] = []
        append = tokens.append
        for match in _TOKEN.finditer(text):
            kind = match.lastgroup
            if kind == "ws" or kind == "comment":
                continue
            value = match.group()
            if kind == "bad":
                pos = match.start()
                if value == '"':
                    raise self.error("unterminated string: a quote opened here is never closed (truncated dump?)", pos)
                if value == "/" and text.startswith("/*", pos):
                    raise self.error("unterminated /* comment", pos)
                raise self.error(f"unexpected character {value!r} (not DOT syntax)", pos)
            if kind == "string":
                value = value[1:-1].replace('\\"', '"').replace("\\\n", "")
            elif kind == "id":
                lowered = value.lower()
                if lowered in _KEYWORDS:
                    kind, value = "kw", lowered
            append((kind, value, match.start()))
        return tokens

    def peek(self, offset: int = 0) -> tuple[str, str, int] | None:
        index = self.i + offset
        return self.tokens[index] if index < len(self.tokens) else None

    def at_op(self, value: str) -> bool:
        token = self.peek()
        return token is not None and token[0] == "op" and token[1] == value

    def expect_op(self, value: str, what: str, opened_at: int | None = None) -> int:
        token = self.peek()
        if token is None:
            hint = f" for the '{{' on line {self.line_of(opened_at)}" if opened_at is not None else ""
            raise self.error(f"unexpected end of text: expected {what}{hint} (truncated dump?)", len(self.text))
        if token[0] != "op" or token[1] != value:
            raise self.error(f"expected {what}, found {token[1]!r}", token[2])
        self.i += 1
        return token[2]

    def read_id(self, what: str) -> tuple[str, int]:
        token = self.peek()
        if token is None:
            raise self.error(f"unexpected end of text: expected {what} (truncated dump?)", len(self.text))
        if token[0] not in ("id", "string"):
            raise self.error(f"expected {what}, found {token[1]!r}", token[2])
        self.i += 1
        value = token[1]
        while token[0] == "string" and self.at_op("+"):  # "a" + "b" concatenation
            self.i += 1
            nxt = self.peek()
            if nxt is None or nxt[0] != "string":
                raise self.error("expected a string after '+'", (nxt or token)[2])
            self.i += 1
            value += nxt[1]
        return value, token[2]

    # -- grammar ------------------------------------------------------------------------
    def read(self) -> None:
        if not self.tokens:
            raise self.error("empty input: no DOT graph found (expected 'digraph dot {')", None)
        token = self.peek()
        if token and token[0] == "kw" and token[1] == "strict":
            self.i += 1
            token = self.peek()
        if token is None or token[0] != "kw" or token[1] not in ("digraph", "graph"):
            found = token[1][:40] if token else "end of text"
            raise self.error(f"not a CUDA graph DOT dump: expected 'digraph', found {found!r}", token[2] if token else None)
        self.i += 1
        if self.peek() is not None and self.peek()[0] in ("id", "string"):  # type: ignore[index]
            self.i += 1
        opened = self.expect_op("{", "'{' after 'digraph'")
        self.read_statements(None, opened)
        extra = self.peek()
        if extra is not None:
            raise self.error(f"unexpected text after the end of the graph: {extra[1][:40]!r}", extra[2])

    def read_statements(self, cluster: _Cluster | None, opened: int) -> None:
        """Statements up to and including the closing '}'."""
        while True:
            token = self.peek()
            if token is None:
                raise self.error(
                    f"unexpected end of text: missing '}}' for the '{{' on line {self.line_of(opened)} (truncated dump?)",
                    len(self.text),
                )
            kind, value, pos = token
            if kind == "op" and value == "}":
                self.i += 1
                return
            if kind == "op" and value == ";":
                self.i += 1
                continue
            if kind == "kw" and value == "subgraph" or kind == "op" and value == "{":
                self.read_subgraph(cluster)
            elif kind == "kw" and value in ("graph", "node", "edge"):
                self.i += 1
                attrs = self.read_attr_lists(required=True)
                if value == "graph" and cluster is not None and "label" in attrs:
                    cluster.label = attrs["label"]
            elif kind in ("id", "string"):
                self.read_node_or_edge_or_assignment(cluster)
            else:
                raise self.error(f"unexpected {value!r} where a statement should start", pos)

    def read_subgraph(self, parent: _Cluster | None) -> None:
        token = self.peek()
        assert token is not None
        name = ""
        if token[0] == "kw":
            self.i += 1
            nxt = self.peek()
            if nxt is not None and nxt[0] in ("id", "string"):
                name, _ = self.read_id("a subgraph name")
        opened = self.expect_op("{", "'{' to open the subgraph")
        if self.at_op("-") or self.at_op("->") or self.at_op("--"):
            raise self.error("edges to subgraphs are not part of a CUDA graph dump", opened)
        if name.startswith("cluster"):
            cluster = _Cluster(name=name, pos=token[2])
            self.clusters.append(cluster)
            self.read_statements(cluster, opened)
        else:  # a plain subgraph ({rank=same; ...}) groups nodes of the enclosing cluster
            self.read_statements(parent, opened)
        if self.at_op("->") or self.at_op("--"):
            raise self.error("edges to subgraphs are not part of a CUDA graph dump", self.peek()[2])  # type: ignore[index]

    def read_node_or_edge_or_assignment(self, cluster: _Cluster | None) -> None:
        first, pos = self.read_id("a node name")
        if self.at_op("="):
            self.i += 1
            value, _ = self.read_id(f"a value for {first!r}")
            if first == "label" and cluster is not None:
                cluster.label = value
            return
        self.skip_port()
        if self.at_op("->") or self.at_op("--"):
            chain = [(first, pos)]
            while self.at_op("->") or self.at_op("--"):
                self.i += 1
                if self.at_op("{") or (self.peek() or ("", "", 0))[:2] == ("kw", "subgraph"):
                    raise self.error("edges to subgraphs are not part of a CUDA graph dump", self.peek()[2])  # type: ignore[index]
                chain.append(self.read_id("the node an edge points to"))
                self.skip_port()
            self.read_attr_lists(required=False)
            edges = self.loose_edges if cluster is None else cluster.edges
            for (src, src_pos), (dst, _) in zip(chain, chain[1:]):
                edges.append((src, dst, src_pos))
            return
        attrs = self.read_attr_lists(required=False)
        if first in self.nodes:
            previous = self.nodes[first]
            raise self.error(f"node {first!r} is declared twice (first on line {self.line_of(previous.pos)})", pos)
        if cluster is None:
            raise self.error(f"node {first!r} is outside every 'subgraph cluster_...' (not a CUDA graph dump)", pos)
        self.nodes[first] = _RawNode(first, cluster, attrs, pos)
        cluster.node_names.append(first)

    def skip_port(self) -> None:
        while self.at_op(":"):
            self.i += 1
            self.read_id("a port name")

    def read_attr_lists(self, *, required: bool) -> dict[str, str]:
        attrs: dict[str, str] = {}
        if required and not self.at_op("["):
            token = self.peek()
            raise self.error("expected '[' to start an attribute list", token[2] if token else len(self.text))
        while self.at_op("["):
            opened = self.expect_op("[", "'['")
            while not self.at_op("]"):
                if self.peek() is None:
                    raise self.error(
                        f"unexpected end of text: missing ']' for the '[' on line {self.line_of(opened)}", len(self.text)
                    )
                key, _ = self.read_id("an attribute name")
                if self.at_op("="):
                    self.i += 1
                    value, _ = self.read_id(f"a value for attribute {key!r}")
                else:
                    value = "true"
                attrs[key] = value  # a repeated attribute (style=... style=...): the last one wins
                if self.at_op(",") or self.at_op(";"):
                    self.i += 1
            self.i += 1
        return attrs


def _graph_id(cluster: _Cluster) -> str:
    if cluster.label and _GRAPH_LABEL.match(cluster.label.strip()):
        return cluster.label.strip()
    suffix = cluster.name[len("cluster") :].lstrip("_")
    return f"graph_{suffix}" if suffix.isdigit() else (cluster.label or cluster.name).strip() or cluster.name


def _build(reader: _DotReader) -> CudaGraph:
    """Turn what the reader collected into the typed model, checking every cross-reference."""
    if not reader.clusters:
        raise reader.error("no CUDA graph in this DOT text: expected 'subgraph cluster_<N> { ... }'", None)
    graph_ids: dict[str, _Cluster] = {}
    for cluster in reader.clusters:
        gid = _graph_id(cluster)
        if gid in graph_ids:
            raise reader.error(f"graph {gid!r} appears twice in the dump", cluster.pos)
        graph_ids[gid] = cluster
    cluster_gid = {id(c): g for g, c in graph_ids.items()}

    nodes: dict[str, Node] = {}
    fields_of: dict[str, NodeFields] = {}
    for name, raw in reader.nodes.items():
        gid = cluster_gid[id(raw.cluster)]
        match = _NODE_NAME.match(name)
        index = int(match.group(2)) if match else raw.cluster.node_names.index(name)
        try:
            fields = read_label(raw.attrs)
        except ValueError as exc:
            raise reader.error(f"node {name!r}: {exc}", raw.pos) from None
        except (IndexError, KeyError, TypeError, AttributeError) as exc:  # a label layout no rule foresaw
            message = f"node {name!r}: cannot read its label (internal error {type(exc).__name__}: please report this dump)"
            raise reader.error(message, raw.pos) from None
        fields_of[name] = fields
        nodes[name] = fields.to_node(name, gid, index)

    owner_of: dict[str, str] = {}
    for name, node in nodes.items():
        for body in node.body_graph_ids:
            if body not in graph_ids:
                raise reader.error(f"node {name!r} refers to body graph {body!r}, which is not in the dump", reader.nodes[name].pos)
            if body in owner_of:
                raise reader.error(f"graph {body!r} is the body of two nodes ({owner_of[body]!r} and {name!r})", reader.nodes[name].pos)
            if body == node.graph_id:
                raise reader.error(f"node {name!r} names its own graph {body!r} as its body", reader.nodes[name].pos)
            owner_of[body] = name
    _check_no_cycles(reader, nodes, owner_of)

    edges_by_graph: dict[str, list[Edge]] = {gid: [] for gid in graph_ids}
    all_edges = [e for c in reader.clusters for e in c.edges] + reader.loose_edges
    for src, dst, pos in all_edges:
        for end in (src, dst):
            if end not in nodes:
                raise reader.error(f"edge {src!r} -> {dst!r} refers to unknown node {end!r}", pos)
        if nodes[src].graph_id != nodes[dst].graph_id:
            raise reader.error(f"edge {src!r} -> {dst!r} joins nodes of two different graphs", pos)
        edges_by_graph[nodes[src].graph_id].append(Edge(src, dst))

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


def _check_no_cycles(reader: _DotReader, nodes: dict[str, Node], owner_of: dict[str, str]) -> None:
    """A body graph must not (through its owners) contain itself."""
    for start in owner_of:
        seen = {start}
        gid = start
        while gid in owner_of:
            gid = nodes[owner_of[gid]].graph_id
            if gid in seen:
                pos = reader.nodes[owner_of[start]].pos
                raise reader.error(f"body graphs form a cycle through {start!r}", pos)
            seen.add(gid)


def parse_dot(text: str, *, source: str = "<string>") -> CudaGraph:
    """Parse the DOT text written by `cudaGraphDebugDotPrint` (any flags) into a `CudaGraph`.

    Args:
        text: the whole dump.
        source: a name for error messages (the file name, by default "<string>").

    Raises:
        DotParseError: the text is empty, truncated, binary, not a CUDA graph dump, or inconsistent
            (edges or body references to graphs and nodes that are not there). The message names
            `source` and the line.

    Example:
        >>> g = parse_dot(open("graph.dot").read(), source="graph.dot")  # doctest: +SKIP
        >>> g.count_by_kind()  # doctest: +SKIP
        {'kernel': 12, 'memcpy': 1}
    """
    if not isinstance(text, str):
        raise DotParseError(f"expected DOT text (str), got {type(text).__name__}", source=source)
    bad = _CONTROL.search(text)
    if bad is not None:
        line = text.count("\n", 0, bad.start()) + 1
        raise DotParseError("binary data, not a DOT text dump (control character found)", source=source, line=line)
    reader = _DotReader(text, source)
    try:
        reader.read()
        return _build(reader)
    except RecursionError:
        raise DotParseError("nesting too deep to be a CUDA graph dump", source=source) from None


def read_dot(path: str | os.PathLike[str]) -> CudaGraph:
    """Read and parse a DOT file written by `cudaGraphDebugDotPrint`.

    Raises:
        FileNotFoundError / IsADirectoryError / PermissionError: the file cannot be opened.
        DotParseError: the file is not UTF-8 text or not a complete CUDA graph dump.

    Example:
        >>> graph = read_dot("tests/fixtures/h200/mlp_b1_verbose.dot")  # doctest: +SKIP
        >>> [n.short_name for n in graph.kernels()][:2]  # doctest: +SKIP
        ['gemm 64x64 (cuBLAS)', 'gelu (elementwise)']
    """
    file = Path(path)
    data = file.read_bytes()
    source = str(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DotParseError("binary data, not a UTF-8 DOT text dump", source=source, line=line) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return parse_dot(text, source=source)
