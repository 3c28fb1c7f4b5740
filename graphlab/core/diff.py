"""What differs between two captured graphs, node by node (e.g. batch 1 vs batch 8 of one model).

Layer 0 (pure): standard library only.

Nodes are matched along each graph's topological order by a weighted longest common subsequence:
a pair counts most when the full signatures agree (kind, family, short name), less when kind and
family agree (the same cuBLAS GEMM slot picking another tile), least when only the kind does
(cuBLAS at batch 1, CUTLASS at batch 8). A matched pair whose
kernel name, grid, block, shared memory or bytes differ is "changed"; unmatched nodes are
"removed" (only in `a`) or "added" (only in `b`). Bodies of matched child-graph and conditional
nodes are compared the same way.

    >>> from graphlab.core.model import CudaGraph, Graph, Node, NodeKind
    >>> def one(grid): return CudaGraph((Graph("g", (Node("g_n0", "g", 0, NodeKind.KERNEL,
    ...     short_name="gemm", family="cuBLAS", grid=grid),), ()),))
    >>> print(diff(one((1, 1, 1)), one((8, 1, 1))).rows()[0]["detail"])
    grid 1x1x1 -> 8x1x1
"""
from __future__ import annotations

import difflib
import html
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable

from graphlab.core.model import CudaGraph, Graph, Node
from graphlab.core.structure import analyze, signature

SAME, CHANGED, ADDED, REMOVED = "same", "changed", "added", "removed"

# fields compared on a matched pair, with how to print them
_COMPARED: tuple[tuple[str, str], ...] = (
    ("short_name", "name"),
    ("demangled_name", "kernel"),
    ("grid", "grid"),
    ("block", "block"),
    ("shared_bytes", "shared bytes"),
    ("copy_direction", "direction"),
    ("copy_bytes", "bytes"),
    ("memset_bytes", "bytes"),
    ("conditional_type", "type"),
)


@dataclass(frozen=True)
class NodeMatch:
    """One row of the node-level mapping: a node of `a`, of `b`, or a matched pair.

    Attributes:
        a_id, b_id: node ids in `a` and `b` (None for added / removed nodes).
        status: "same", "changed", "added" or "removed".
        changes: for "changed", one "field old -> new" text per differing field.
    """

    a_id: str | None
    b_id: str | None
    status: str
    changes: tuple[str, ...] = ()

    @property
    def kernel_changed(self) -> bool:
        """True when another kernel (or node type) ran, not just another grid, block or size."""
        return any(c.startswith(("name ", "kernel ", "type ")) for c in self.changes)


@dataclass(frozen=True)
class GraphDiff:
    """The result of `diff(a, b)`: node counts side by side and the node-level mapping.

    Attributes:
        a, b: the graphs compared.
        names: how to call them in tables ("batch 1", "batch 8"); default their sources.
        matches: every node of both graphs exactly once, in `a`'s topological order with added
            nodes placed where they appear in `b`.
    """

    a: CudaGraph
    b: CudaGraph
    names: tuple[str, str]
    matches: tuple[NodeMatch, ...]
    _by_a: dict[str, NodeMatch] = field(default_factory=dict, init=False, repr=False, compare=False)
    _by_b: dict[str, NodeMatch] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for m in self.matches:
            if m.a_id is not None:
                self._by_a[m.a_id] = m
            if m.b_id is not None:
                self._by_b[m.b_id] = m

    # -- queries ---------------------------------------------------------------------------
    def status_in_a(self, node_id: str) -> str:
        """"same", "changed" or "removed" for a node of `a`."""
        return self._by_a[node_id].status

    def status_in_b(self, node_id: str) -> str:
        """"same", "changed" or "added" for a node of `b`."""
        return self._by_b[node_id].status

    def match_of_a(self, node_id: str) -> NodeMatch:
        return self._by_a[node_id]

    def match_of_b(self, node_id: str) -> NodeMatch:
        return self._by_b[node_id]

    def mapping(self) -> dict[str, str]:
        """Node id in `a` -> node id in `b`, for every matched pair."""
        return {m.a_id: m.b_id for m in self.matches if m.a_id is not None and m.b_id is not None}

    def _with(self, status: str) -> list[NodeMatch]:
        return [m for m in self.matches if m.status == status]

    @property
    def changed(self) -> list[NodeMatch]:
        return self._with(CHANGED)

    @property
    def added(self) -> list[NodeMatch]:
        return self._with(ADDED)

    @property
    def removed(self) -> list[NodeMatch]:
        return self._with(REMOVED)

    @property
    def identical(self) -> bool:
        """True when every node matched and nothing about any pair changed."""
        return all(m.status == SAME for m in self.matches)

    def count_by_kind(self) -> dict[str, tuple[int, int]]:
        """kind -> (count in a, count in b), kinds in order of first appearance."""
        ca, cb = self.a.count_by_kind(), self.b.count_by_kind()
        return {k: (ca.get(k, 0), cb.get(k, 0)) for k in dict.fromkeys([*ca, *cb])}

    def count_by_status(self) -> dict[str, int]:
        return {s: len(self._with(s)) for s in (SAME, CHANGED, ADDED, REMOVED)}

    # -- tables ----------------------------------------------------------------------------
    def rows(self, *, group: bool = True, include_same: bool = False) -> list[dict[str, Any]]:
        """The differences as table rows (dicts), in graph order.

        Each row: `status`, `kind`, `a` and `b` (labels), `detail` (what changed besides the
        label), `kernel_changed` (another kernel ran, not just another launch shape), `count` (how
        many nodes share this exact row; 12 for a GEMM that changed in each of 12 layers) and
        `a_ids` / `b_ids`. With `group=False` every node gets its own row (count 1).
        """
        rows: dict[Hashable, dict[str, Any]] = {}
        for i, m in enumerate(self.matches):
            if m.status == SAME and not include_same:
                continue
            na = self.a.node(m.a_id) if m.a_id else None
            nb = self.b.node(m.b_id) if m.b_id else None
            kind = (na or nb).kind.value  # type: ignore[union-attr]
            row = {
                "status": m.status,
                "kind": kind,
                "a": _label(na) if na else "",
                "b": _label(nb) if nb else "",
                "detail": "; ".join(c for c in m.changes if not c.startswith("name ")),
                "kernel_changed": m.kernel_changed,
            }
            key: Hashable = tuple(row.values()) if group else i
            if key not in rows:
                rows[key] = {**row, "count": 0, "a_ids": [], "b_ids": []}
            rows[key]["count"] += 1
            if m.a_id:
                rows[key]["a_ids"].append(m.a_id)
            if m.b_id:
                rows[key]["b_ids"].append(m.b_id)
        return list(rows.values())

    def summary(self) -> str:
        """A plain-text report: counts by kind, then one line per (grouped) difference."""
        na, nb = self.names
        lines = [f"{na} vs {nb}: " + self._headline()]
        wa, wb = max(8, len(na) + 2), max(8, len(nb) + 2)
        lines.append(f"  {'kind':<16}{na:>{wa}}{nb:>{wb}}")
        for kind, (x, y) in self.count_by_kind().items():
            mark = "" if x == y else "  *"
            lines.append(f"  {kind:<16}{x:>{wa}}{y:>{wb}}{mark}")
        for row in self.rows():
            times = f" x{row['count']}" if row["count"] > 1 else ""
            if row["status"] == CHANGED:
                what = f"{row['a']} -> {row['b']}" if row["a"] != row["b"] else row["a"]
                detail = f" ({row['detail']})" if row["detail"] else ""
                lines.append(f"  changed{times}: {what}{detail}")
            else:
                lines.append(f"  {row['status']}{times}: {row['a'] or row['b']}")
        return "\n".join(lines)

    def _headline(self) -> str:
        c = self.count_by_status()
        if self.identical:
            return f"identical ({c[SAME]} nodes)"
        return f"{c[CHANGED]} changed, {c[ADDED]} added, {c[REMOVED]} removed, {c[SAME]} same"

    def __str__(self) -> str:
        return self.summary()

    def _repr_html_(self) -> str:
        esc = html.escape
        na, nb = self.names
        head = f"<p><b>{esc(na)}</b> vs <b>{esc(nb)}</b>: {esc(self._headline())}</p>"
        kinds = "".join(
            f"<tr><td>{esc(k)}</td><td>{x}</td><td>{y}</td></tr>" for k, (x, y) in self.count_by_kind().items()
        )
        counts = f"<table><tr><th>kind</th><th>{esc(na)}</th><th>{esc(nb)}</th></tr>{kinds}</table>"
        body = "".join(
            f"<tr><td>{esc(r['status'])}</td><td>{r['count']}</td><td>{esc(r['kind'])}</td>"
            f"<td>{esc(r['a'])}</td><td>{esc(r['b'])}</td><td>{esc(r['detail'])}</td></tr>"
            for r in self.rows()
        )
        table = (
            "<table><tr><th>change</th><th>nodes</th><th>kind</th>"
            f"<th>{esc(na)}</th><th>{esc(nb)}</th><th>detail</th></tr>{body}</table>"
            if body
            else ""
        )
        return head + counts + table


def diff(a: CudaGraph, b: CudaGraph, *, names: tuple[str, str] | None = None) -> GraphDiff:
    """Compare two captured graphs node by node.

    Args:
        a, b: the graphs (e.g. the same model captured at batch 1 and at batch 8).
        names: labels for tables and drawings; default the graphs' `source` file names.

    Returns:
        A `GraphDiff`: `.rows()` for a table, `.summary()` for text, `.mapping()` and
        `.status_in_a/b(node_id)` for drawing; shows itself as an HTML table in Jupyter.
    """
    if names is None:
        names = (_short_source(a.source, "a"), _short_source(b.source, "b"))
        if names[0] == names[1]:
            names = (names[0] + " (a)", names[1] + " (b)")
    matches: list[NodeMatch] = []
    _diff_graphs(a, b, a.root, b.root, matches)
    matched_a = {m.a_id for m in matches}
    matched_b = {m.b_id for m in matches}
    # bodies not reached through a matched owner (e.g. their owner was removed): all removed / added
    matches += [NodeMatch(n.id, None, REMOVED) for n in a.nodes() if n.id not in matched_a]
    matches += [NodeMatch(None, n.id, ADDED) for n in b.nodes() if n.id not in matched_b]
    return GraphDiff(a, b, names, tuple(matches))


def _diff_graphs(a: CudaGraph, b: CudaGraph, ga: Graph, gb: Graph, out: list[NodeMatch]) -> None:
    seq_a = [a.node(nid) for nid in analyze(ga).order]
    seq_b = [b.node(nid) for nid in analyze(gb).order]
    pairs: list[tuple[Node | None, Node | None]] = []
    _align(seq_a, seq_b, pairs)
    for na, nb in pairs:
        if na is None:
            out.append(NodeMatch(None, nb.id, ADDED))  # type: ignore[union-attr]
        elif nb is None:
            out.append(NodeMatch(na.id, None, REMOVED))
        else:
            changes = _changes(na, nb)
            out.append(NodeMatch(na.id, nb.id, CHANGED if changes else SAME, changes))
            for body_a, body_b in zip(na.body_graph_ids, nb.body_graph_ids):
                _diff_graphs(a, b, a.graph(body_a), b.graph(body_b), out)


_KEYS: tuple[Callable[[Node], Hashable], ...] = (
    signature,
    lambda n: (n.kind.value, n.family or ""),
    lambda n: n.kind.value,
)
_DP_LIMIT = 9_000_000  # len(a) * len(b) up to which the exact alignment runs (about 1 s here)


def _align(seq_a: list[Node], seq_b: list[Node], out: list) -> None:
    """Pair up two node sequences (None on the side where a node has no partner)."""
    if len(seq_a) * len(seq_b) <= _DP_LIMIT:
        _align_exact(seq_a, seq_b, out)
    else:
        _align_greedy(seq_a, seq_b, _KEYS, out)


def _align_exact(seq_a: list[Node], seq_b: list[Node], out: list) -> None:
    """Weighted longest common subsequence: a pair scores 9 when the signatures agree, 4 when kind
    and family agree, 1 when only the kind does. Maximising the total keeps layer i of `a` facing
    layer i of `b` even when every layer picked other kernels; as each weight is more than twice
    the next, one exact match beats shifting two neighbours into looser matches."""
    codes: list[dict[Hashable, int]] = [{} for _ in _KEYS]
    ka = [[c.setdefault(key(n), len(c)) for n in seq_a] for key, c in zip(_KEYS, codes)]
    kb = [[c.setdefault(key(n), len(c)) for n in seq_b] for key, c in zip(_KEYS, codes)]
    fb, mb, cb = kb
    m = len(seq_b)
    prev = [0] * (m + 1)
    back: list[bytearray] = []  # 1 = pair, 2 = a's node unmatched, 3 = b's node unmatched
    for f, mid, k in zip(*ka):
        cur = [0] * (m + 1)
        row = bytearray(m + 1)
        row[0] = 2
        for j in range(m):
            if fb[j] == f:
                diag = prev[j] + 9
            elif mb[j] == mid:
                diag = prev[j] + 4
            elif cb[j] == k:
                diag = prev[j] + 1
            else:
                diag = -1
            up, left = prev[j + 1], cur[j]
            if diag >= up and diag >= left:
                cur[j + 1], row[j + 1] = diag, 1
            elif up >= left:
                cur[j + 1], row[j + 1] = up, 2
            else:
                cur[j + 1], row[j + 1] = left, 3
        back.append(row)
        prev = cur
    pairs: list[tuple[Node | None, Node | None]] = []
    i, j = len(seq_a), m
    while i or j:
        step = back[i - 1][j] if i else 3
        if step == 1:
            pairs.append((seq_a[i - 1], seq_b[j - 1]))
            i, j = i - 1, j - 1
        elif step == 2:
            pairs.append((seq_a[i - 1], None))
            i -= 1
        else:
            pairs.append((None, seq_b[j - 1]))
            j -= 1
    out.extend(reversed(pairs))


def _align_greedy(
    seq_a: list[Node], seq_b: list[Node], keys: tuple[Callable[[Node], Hashable], ...], out: list
) -> None:
    """For very large graphs: match on the first key (difflib), then re-align the gaps on the next."""
    if not keys:
        out.extend((n, None) for n in seq_a)
        out.extend((None, n) for n in seq_b)
        return
    key, rest = keys[0], keys[1:]
    matcher = difflib.SequenceMatcher(None, [key(n) for n in seq_a], [key(n) for n in seq_b], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out.extend(zip(seq_a[i1:i2], seq_b[j1:j2]))
        else:
            _align_greedy(seq_a[i1:i2], seq_b[j1:j2], rest, out)


def _changes(na: Node, nb: Node) -> tuple[str, ...]:
    out = []
    seen_labels = set()
    for attr, label in _COMPARED:
        x, y = getattr(na, attr), getattr(nb, attr)
        if x == y or label in seen_labels:
            continue
        if attr == "demangled_name":
            if na.short_name == nb.short_name:  # the full names are too long for a table cell
                seen_labels.add(label)
                out.append("kernel variant differs (same short name)")
            continue
        seen_labels.add(label)
        out.append(f"{label} {_fmt(x)} -> {_fmt(y)}")
    return tuple(out)


def _fmt(value: Any) -> str:
    if value is None:
        return "?"
    if isinstance(value, tuple):
        return "x".join(str(v) for v in value)
    return str(value)


def _label(node: Node) -> str:
    return node.label


def _short_source(source: str, fallback: str) -> str:
    name = source.replace("\\", "/").rsplit("/", 1)[-1]
    return name if name and not name.startswith("<") else fallback
