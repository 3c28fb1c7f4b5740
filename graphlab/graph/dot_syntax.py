"""Read the DOT language as `cudaGraphDebugDotPrint` writes it: clusters, nodes with attributes, edges.

Pure (no torch): standard library only. Used by `graphlab.graph.dot_parser`, which turns what this
reader collects into the typed model. The reader knows DOT syntax only (tokens, statements,
attribute lists, comments, `"a" + "b"` concatenation, ports); it knows nothing about CUDA.
Every problem raises one `DotParseError` with the source and the line.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from graphlab.errors import DotParseError
from graphlab.graph.dot_limits import NO_LIMITS, DotLimits

_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"'
_IDENT = r"[A-Za-z_\x80-\U0010ffff][\w\x80-\U0010ffff]*"
_NUMBER = r"-?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)"
_TOKEN = re.compile(
    rf"""
    (?P<ws>\s+)
  | (?P<comment>//[^\n]*|/\*(?:[^*]|\*(?!/))*\*/|(?<![^\n])\#[^\n]*)
  | (?P<string>{_STRING})
  | (?P<id>{_IDENT}|{_NUMBER})
  | (?P<op>->|--|[{{}}\[\];=,:+])
  | (?P<bad>.)
    """,
    re.VERBOSE | re.DOTALL,
)

# Fast path. The driver writes every node as `"name"[style="bold" shape="record" label="..."];`
# (sometimes with `style` twice) and every edge as `"a" -> "b" [headlabel=0];` or `"a" -> "b";`.
# The tokenizer reads a statement in exactly that form as one token, "node" (value: name and
# attributes) or "edge" (value: source and destination), finding the end of the label with `str.find`:
# the label may hold no quote and must not end in a backslash, so its end is where the general
# tokenizer would put it. `read_statements` takes these tokens where a statement starts; met anywhere
# else (`a -> "b"[...];`), they make the reader start over with the general tokens alone, so the fast
# path never changes what a text means. Any other form is read by the general tokens.
_DRIVER_STATEMENT = re.compile(
    r'"([^"\\]*)"(?:\[style="([a-z]*)"(?: style="([a-z]*)")? shape="([a-z]*)" label="'  # node, up to its label
    r'| -> "([^"\\]*)"(?: \[headlabel=[0-9]+\])?;)'  # edge, whole
)


_WORDS: dict[str, str] = {}  # style and shape words, one string object each (a big dump repeats them per node)


def _driver_statement(text: str, pos: int, max_label: int | None = None) -> tuple[tuple[str, Any, int], int] | None:
    """The statement at `pos` (a quote) as one token, and where it ends, when the driver wrote it in its
    usual form; None for anything else. A label longer than `max_label` characters: a "long" token
    (its length) and -1 for where it ends."""
    match = _DRIVER_STATEMENT.match(text, pos)
    if match is None:
        return None
    name, style, restyle, shape, dst = match.groups()
    if dst is not None:
        return ("edge", (name, dst), pos), match.end()
    start = match.end()
    end = text.find('"', start)
    if max_label is not None:
        length = (end if end >= 0 else len(text)) - start
        if length > max_label:
            return ("long", length, start), -1
    if end < 0 or text[end - 1] == "\\" or not text.startswith("];", end + 1):
        return None
    words = _WORDS
    style = style if restyle is None else restyle
    if len(words) < 64:  # the driver's few words; a hostile dump's endless new ones are not kept
        style, shape = words.setdefault(style, style), words.setdefault(shape, shape)
    attrs = {"style": words.get(style, style), "shape": words.get(shape, shape), "label": _unescape_string(text[start:end])}
    return ("node", (name, attrs), pos), end + 3


class _StartOver(Exception):
    """A fast-path statement token met where no statement starts: read again with general tokens."""


def _unescape_string(value: str) -> str:
    """The text of a DOT string token (quotes already off): `\\"` and line continuations resolved."""
    if "\\" in value:
        value = value.replace('\\"', '"').replace("\\\n", "")
    return value


#: tokens per chunk (`DotReader._token_chunks`)
TOKEN_CHUNK = 4096

_KEYWORDS = {"digraph", "graph", "subgraph", "node", "edge", "strict"}


@dataclass
class Cluster:
    """One `subgraph cluster_...` as read from the text."""

    name: str
    pos: int
    label: str | None = None
    node_names: list[str] = field(default_factory=list)
    edges: list[tuple[str, str, int]] = field(default_factory=list)


@dataclass(slots=True)
class RawNode:
    """A node statement as read: its name, cluster, attributes and where it starts. `made`: what the reader's
    `on_node` made of it (the parser's `Node`, or why its label did not read), its attributes then dropped."""

    name: str
    cluster: Cluster
    attrs: dict[str, str] | None
    pos: int
    made: Any = None


class DotText:
    """A DOT text as the reader takes it: `pieces()` yields it in order, from the start each time it is called (the
    reader starts over on a rare out-of-place statement), and `line_of(pos)` is the line of a character position.

    The reader holds one piece and what is left of the one before at a time, so a text read in pieces (a file:
    `graphlab.graph.dot_parser`) is never in memory whole. Pieces may be cut anywhere; cut just after a `;` that
    ends a line, they hold whole driver statements (a statement cut in two is read token by token).
    """

    def pieces(self) -> Iterator[str]:
        raise NotImplementedError

    def line_of(self, pos: int) -> int:
        raise NotImplementedError


class WholeText(DotText):
    """A text already in memory: one piece."""

    def __init__(self, text: str):
        self.text = text
        self._newlines: list[int] | None = None

    def pieces(self) -> Iterator[str]:
        yield self.text

    def line_of(self, pos: int) -> int:
        if self._newlines is None:
            self._newlines = [m.start() for m in re.finditer("\n", self.text)]
        return bisect.bisect_left(self._newlines, pos) + 1


class DotReader:
    """A recursive-descent reader for the DOT language subset the CUDA driver writes
    (plus the general statement forms, so hand-edited dumps still read)."""

    def __init__(self, text: str | DotText, source: str, *, fast: bool = True, limits: DotLimits = NO_LIMITS,
                 on_node: Callable[[RawNode], None] | None = None):
        """`text`: the whole text, or a `DotText` read in pieces. `fast=False` reads every statement with the
        general tokens (the tests compare both ways). `limits`: the node count and label length are checked while
        reading (`graphlab.graph.dot_limits`). `on_node`: called with each node as it is read (the parser makes its
        `Node` there, so that no label is held longer than its statement)."""
        self.text = text if isinstance(text, DotText) else WholeText(text)
        self.source = source
        self.limits = limits
        self.on_node = on_node
        self.length = 0  # characters of the text read so far: all of it once the tokens are at its end
        self.clusters: list[Cluster] = []
        self.nodes: dict[str, RawNode] = {}
        self.loose_edges: list[tuple[str, str, int]] = []
        self._fast = fast
        self._chunks: Iterator[list[tuple[str, Any, int]]] | None = self._token_chunks(self.text.pieces(), fast=fast)
        self.tokens: list[tuple[str, Any, int]] = next(self._chunks)
        self.i = 0

    # -- errors and positions -----------------------------------------------------------
    def line_of(self, pos: int) -> int:
        return self.text.line_of(pos)

    def error(self, message: str, pos: int | None) -> DotParseError:
        line = None if pos is None else self.line_of(min(pos, self.length))
        return DotParseError(message, source=self.source, line=line)

    def _end_of_text(self) -> int:
        """The position of the text's end (every token read to get there)."""
        while self._more():
            pass
        return self.length

    # -- tokens -------------------------------------------------------------------------
    def _more(self) -> bool:
        """Read the next chunk of tokens into `tokens` (dropping those already read); False at the end."""
        chunk = next(self._chunks, None) if self._chunks is not None else None
        if chunk is None:
            self._chunks = None
            return False
        del self.tokens[: self.i]
        self.i = 0
        self.tokens.extend(chunk)
        return True

    def _token_chunks(self, pieces: Iterator[str], *, fast: bool) -> Iterator[list[tuple[str, Any, int]]]:
        """(kind, value, position) tokens, in chunks; with `fast`, whole driver-style statements become one
        "node" token (value: name, attributes) or "edge" token (value: source, destination).

        A chunk ends only after such a whole-statement token, once it holds `TOKEN_CHUNK` tokens, so a big
        dump is never all tokens at once (a million nodes: 0.8 KB a node less at the peak), and every
        statement in general tokens is whole within one chunk. The grammar reads the next chunk only where a
        statement starts (`read_statements`, `peek`). A dump of fewer statements is one chunk: read exactly as
        before (a problem in the text is found by the tokeniser before the grammar starts); in a bigger one, a
        problem of DOT syntax and one of the grammar are met in the order they stand in the text.

        The text comes in `pieces` (`DotText`); positions count from the start of the whole text. A token that
        reaches the end of what is held, an unterminated string or comment, may go on in the next piece: the
        next piece is read and the token read again (the carried text and at least as much again, so a long
        string is read in a number of steps that grows with the log of its length). One character before the
        token is carried with it: a `#` comment needs to see a line start before it.
        """
        tokens: list[tuple[str, Any, int]] = []
        append = tokens.append
        token_at = _TOKEN.match
        limits = self.limits
        max_label, max_nodes = limits.max_label_chars, limits.max_nodes
        node_tokens = 0
        feed = iter(pieces)
        text = next(feed, "")
        pending = next(feed, None)  # the next piece: None at the end of the text
        base, pos, end = 0, 0, len(text)  # text[0] is character `base` of the whole text
        self.length = end
        while True:
            if pos >= end:
                if pending is None:
                    break
                carry = True
            else:
                carry = False
                if text[pos] == '"':
                    if fast:
                        statement = _driver_statement(text, pos, max_label)
                        if statement is not None:
                            token, after = statement
                            if after < 0:  # a label past the limit: stop here
                                limits.check_label(token[1], self.source, line=self.line_of(base + token[2]), at_least=True)
                            pos = after
                            append((token[0], token[1], base + token[2]))
                            if len(tokens) >= TOKEN_CHUNK:
                                yield tokens
                                tokens = []
                                append = tokens.append
                            if token[0] == "node":
                                node_tokens += 1
                                if max_nodes is not None and node_tokens > max_nodes:  # stop before reading further
                                    limits.check_nodes(node_tokens, self.source, line=self.line_of(base + token[2]))
                            continue
                    if max_label is not None:  # a string at least this long (its end is at or after the next quote)
                        nxt = text.find('"', pos + 1)
                        if nxt - pos - 1 > max_label or (nxt < 0 and end - pos - 1 > max_label):
                            length = (nxt if nxt >= 0 else end) - pos - 1
                            limits.check_label(length, self.source, line=self.line_of(base + pos), at_least=True)
                match = token_at(text, pos)
                if match is None:  # cannot happen while `bad` matches any one character; said as DOT would say it
                    raise self.error(f"unexpected character {text[pos]!r} (not DOT syntax)", base + pos)
                kind = match.lastgroup
                if pending is not None and (match.end() == end or kind == "bad" and (
                        text[pos] == '"' or text.startswith("/*", pos))):
                    carry = True  # it may go on in the next piece
                else:
                    pos = match.end()
                    if kind == "ws" or kind == "comment":
                        continue
                    value = match.group()
                    start = base + match.start()
                    if kind == "bad":
                        if value == '"':
                            raise self.error("unterminated string: a quote opened here is never closed (truncated dump?)",
                                             start)
                        if value == "/" and text.startswith("/*", match.start()):
                            raise self.error("unterminated /* comment", start)
                        raise self.error(f"unexpected character {value!r} (not DOT syntax)", start)
                    if kind == "string":
                        value = _unescape_string(value[1:-1])
                    elif kind == "id":
                        lowered = value.lower()
                        if lowered in _KEYWORDS:
                            kind, value = "kw", lowered
                    append((kind, value, start))
                    continue
            # read on: what is left of this piece (and the character before it), then at least as much again
            keep = min(pos, 1)
            parts, wanted, got = [text[pos - keep:]], end - pos, 0
            while pending is not None and (got == 0 or got < wanted):
                parts.append(pending)
                got += len(pending)
                pending = next(feed, None)
            base += pos - keep
            text = "".join(parts)
            pos, end = keep, len(text)
            self.length = base + end
        yield tokens

    def peek(self, offset: int = 0) -> tuple[str, str, int] | None:
        index = self.i + offset
        while index >= len(self.tokens):
            if not self._more():
                return None
            index = self.i + offset
        token = self.tokens[index]
        if token[0] == "node" or token[0] == "edge":  # a whole statement where none may start
            raise _StartOver()
        return token

    def at_op(self, value: str) -> bool:
        token = self.peek()
        return token is not None and token[0] == "op" and token[1] == value

    def expect_op(self, value: str, what: str, opened_at: int | None = None) -> int:
        token = self.peek()
        if token is None:
            hint = f" for the '{{' on line {self.line_of(opened_at)}" if opened_at is not None else ""
            raise self.error(f"unexpected end of text: expected {what}{hint} (truncated dump?)", self._end_of_text())
        if token[0] != "op" or token[1] != value:
            raise self.error(f"expected {what}, found {token[1]!r}", token[2])
        self.i += 1
        return token[2]

    def read_id(self, what: str) -> tuple[str, int]:
        token = self.peek()
        if token is None:
            raise self.error(f"unexpected end of text: expected {what} (truncated dump?)", self._end_of_text())
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
        """Read the whole text; on a fast-path statement out of place, read it again token by token."""
        try:
            self._read_graph()
        except _StartOver:
            self.clusters, self.nodes, self.loose_edges = [], {}, []
            self._chunks = self._token_chunks(self.text.pieces(), fast=False)
            self.tokens, self.i = next(self._chunks), 0
            self._read_graph()
        self.tokens, self.i = [], 0  # read: what they said is in clusters and nodes now

    def _read_graph(self) -> None:
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
        tokens = self.tokens
        while True:
            if self.i >= len(tokens) and self._chunks is not None and self._more():  # where a statement starts
                continue
            token = tokens[self.i] if self.i < len(tokens) else None
            if token is not None and token[0] == "node":  # fast path: one whole `"name"[...];`
                tokens[self.i] = None  # type: ignore[call-overload]  # read once, never looked at again
                self.i += 1
                name, attrs = token[1]
                self.add_node(name, attrs, cluster, token[2])
                continue
            if token is not None and token[0] == "edge":  # fast path: one whole `"a" -> "b" [...];`
                tokens[self.i] = None  # type: ignore[call-overload]
                self.i += 1
                src, dst = token[1]
                known = self.nodes  # the node's own name strings: the edge's copies go with the tokens
                if src in known:
                    src = known[src].name
                if dst in known:
                    dst = known[dst].name
                (self.loose_edges if cluster is None else cluster.edges).append((src, dst, token[2]))
                continue
            if token is None:
                raise self.error(
                    f"unexpected end of text: missing '}}' for the '{{' on line {self.line_of(opened)} (truncated dump?)",
                    self._end_of_text(),
                )
            kind, value, pos = token
            if kind == "op" and value == "}":
                self.i += 1
                return
            if kind == "op" and value == ";":
                self.i += 1
                continue
            if kind == "kw" and value == "subgraph" or kind == "op" and value == "{":
                self.read_subgraph(cluster, token)
            elif kind == "kw" and value in ("graph", "node", "edge"):
                self.i += 1
                attrs = self.read_attr_lists(required=True)
                if value == "graph" and cluster is not None and "label" in attrs:
                    cluster.label = attrs["label"]
            elif kind in ("id", "string"):
                self.read_node_or_edge_or_assignment(cluster)
            else:
                raise self.error(f"unexpected {value!r} where a statement should start", pos)

    def read_subgraph(self, parent: Cluster | None, token: tuple[str, Any, int]) -> None:
        """The subgraph that starts at `token`, the next one: the keyword 'subgraph' or its '{'."""
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
        self.add_node(first, self.read_attr_lists(required=False), cluster, pos)

    def add_node(self, name: str, attrs: dict[str, str], cluster: Cluster | None, pos: int) -> None:
        if name in self.nodes:
            previous = self.nodes[name]
            raise self.error(f"node {name!r} is declared twice (first on line {self.line_of(previous.pos)})", pos)
        if cluster is None:
            raise self.error(f"node {name!r} is outside every 'subgraph cluster_...' (not a CUDA graph dump)", pos)
        limits = self.limits
        if limits.max_nodes is not None and len(self.nodes) >= limits.max_nodes:
            limits.check_nodes(len(self.nodes) + 1, self.source, line=self.line_of(pos))
        if limits.max_label_chars is not None and len(attrs.get("label", "")) > limits.max_label_chars:
            limits.check_label(len(attrs["label"]), self.source, line=self.line_of(pos))
        raw = self.nodes[name] = RawNode(name, cluster, attrs, pos)
        if self.on_node is not None:
            self.on_node(raw)
        cluster.node_names.append(name)

    def skip_port(self) -> None:
        while self.at_op(":"):
            self.i += 1
            self.read_id("a port name")

    def read_attr_lists(self, *, required: bool) -> dict[str, str]:
        """`[k=v k=v, k=v; k]...`; a repeated key (`style=... style=...`) keeps the last value."""
        attrs: dict[str, str] = {}
        if required and not self.at_op("["):
            token = self.peek()
            raise self.error("expected '[' to start an attribute list", token[2] if token else self._end_of_text())
        tokens, count = self.tokens, len(self.tokens)
        while self.at_op("["):
            opened = self.expect_op("[", "'['")
            while True:
                i = self.i
                if i >= count:
                    raise self.error(
                        f"unexpected end of text: missing ']' for the '[' on line {self.line_of(opened)}", self._end_of_text()
                    )
                token = tokens[i]
                if token[0] == "op" and token[1] == "]":
                    self.i = i + 1
                    break
                # fast path: key = value, both plain (the driver's only form)
                if (
                    i + 2 < count and token[0] in ("id", "string") and tokens[i + 1][1] == "=" and tokens[i + 1][0] == "op"
                    and tokens[i + 2][0] in ("id", "string")
                    and not (i + 3 < count and tokens[i + 3][0] == "op" and tokens[i + 3][1] == "+")
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


__all__ = ["Cluster", "DotReader", "DotText", "RawNode", "WholeText"]
