"""Read the DOT language as `cudaGraphDebugDotPrint` writes it: clusters, nodes with attributes, edges.

Layer 0 (pure): standard library only. Used by `graphlab.core.dot_parser`, which turns what this
reader collects into the typed model. The reader knows DOT syntax only (tokens, statements,
attribute lists, comments, `"a" + "b"` concatenation, ports); it knows nothing about CUDA.
Every problem raises one `DotParseError` with the source and the line.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from graphlab.errors import DotParseError

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


@dataclass
class Cluster:
    """One `subgraph cluster_...` as read from the text."""

    name: str
    pos: int
    label: str | None = None
    node_names: list[str] = field(default_factory=list)
    edges: list[tuple[str, str, int]] = field(default_factory=list)


@dataclass
class RawNode:
    name: str
    cluster: Cluster
    attrs: dict[str, str]
    pos: int


class DotReader:
    """A recursive-descent reader for the DOT language subset the CUDA driver writes
    (plus the general statement forms, so hand-edited dumps still read)."""

    def __init__(self, text: str, source: str):
        self.text = text
        self.source = source
        self._newlines: list[int] | None = None
        self.tokens = self._tokenize(text)
        self.i = 0
        self.clusters: list[Cluster] = []
        self.nodes: dict[str, RawNode] = {}
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

    def read_statements(self, cluster: Cluster | None, opened: int) -> None:
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

    def read_subgraph(self, parent: Cluster | None) -> None:
        token = self.peek()
        assert token is not None
        name = ""
        if token[0] == "kw":
            self.i += 1
            nxt = self.peek()
            if nxt is not None and nxt[0] in ("id", "string"):
                name, _ = self.read_id("a subgraph name")
        opened = self.expect_op("{", "'{' to open the subgraph")
        if name.startswith("cluster"):
            cluster = Cluster(name=name, pos=token[2])
            self.clusters.append(cluster)
            self.read_statements(cluster, opened)
        else:  # a plain subgraph ({rank=same; ...}) groups nodes of the enclosing cluster
            self.read_statements(parent, opened)
        if self.at_op("->") or self.at_op("--"):
            raise self.error("edges to subgraphs are not part of a CUDA graph dump", self.peek()[2])  # type: ignore[index]

    def read_node_or_edge_or_assignment(self, cluster: Cluster | None) -> None:
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
        self.nodes[first] = RawNode(first, cluster, attrs, pos)
        cluster.node_names.append(first)

    def skip_port(self) -> None:
        while self.at_op(":"):
            self.i += 1
            self.read_id("a port name")

    def read_attr_lists(self, *, required: bool) -> dict[str, str]:
        """`[k=v k=v, k=v; k]...`; a repeated key (`style=... style=...`) keeps the last value."""
        attrs: dict[str, str] = {}
        if required and not self.at_op("["):
            token = self.peek()
            raise self.error("expected '[' to start an attribute list", token[2] if token else len(self.text))
        tokens, count = self.tokens, len(self.tokens)
        while self.at_op("["):
            opened = self.expect_op("[", "'['")
            while True:
                i = self.i
                if i >= count:
                    raise self.error(
                        f"unexpected end of text: missing ']' for the '[' on line {self.line_of(opened)}", len(self.text)
                    )
                token = tokens[i]
                if token[0] == "op" and token[1] == "]":
                    self.i = i + 1
                    break
                # fast path: key = value, both plain (the driver's only form)
                if (
                    i + 2 < count and token[0] in ("id", "string") and tokens[i + 1][1] == "=" and tokens[i + 1][0] == "op"
                    and tokens[i + 2][0] in ("id", "string") and not (i + 3 < count and tokens[i + 3][1] == "+")
                ):
                    attrs[token[1]] = tokens[i + 2][1]
                    self.i = i + 3
                else:
                    key, _ = self.read_id("an attribute name")
                    if self.at_op("="):
                        self.i += 1
                        attrs[key], _ = self.read_id(f"a value for attribute {key!r}")
                    else:
                        attrs[key] = "true"
                if self.at_op(",") or self.at_op(";"):
                    self.i += 1
        return attrs
