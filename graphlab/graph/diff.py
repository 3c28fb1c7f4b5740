"""What differs between two captured graphs, node by node (e.g. batch 1 vs batch 8 of one model).

Layer 0 (pure): standard library only.

Nodes are matched along each graph's topological order by a weighted longest common subsequence:
a pair counts most when the full signatures agree (kind, family, short name), less when kind and
family agree (the same cuBLAS GEMM slot picking another tile), least when only the kind does
(cuBLAS at batch 1, CUTLASS at batch 8). A matched pair whose
kernel name, grid, block, shared memory or bytes differ is "changed"; unmatched nodes are
"removed" (only in `a`) or "added" (only in `b`). Bodies of matched child-graph and conditional
nodes are compared the same way.

    >>> from graphlab.graph.model import CudaGraph, Graph, Node, NodeKind
    >>> def one(grid): return CudaGraph((Graph("g", (Node("g_n0", "g", 0, NodeKind.KERNEL,
    ...     short_name="gemm", family="cuBLAS", grid=grid),), ()),))
    >>> print(diff(one((1, 1, 1)), one((8, 1, 1))).rows()[0]["detail"])
    grid 1x1x1 -> 8x1x1
"""
from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Mapping

from graphlab.errors import BadInputError
from graphlab.graph.model import CudaGraph, Graph, Node, NodeKind
from graphlab.graph.structure import analyze, signature

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
        modules: per side, node id -> the module path(s) that launched it, for the nodes whose module is
            known (empty dicts when none is).
    """

    a: CudaGraph
    b: CudaGraph
    names: tuple[str, str]
    matches: tuple[NodeMatch, ...]
    modules: tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]] = field(
        default_factory=lambda: ({}, {}), repr=False)
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

    def module_of_a(self, node_id: str) -> tuple[str, ...]:
        """The module path(s) that launched a node of `a`; () when not known."""
        return self.modules[0].get(node_id, ())

    def module_of_b(self, node_id: str) -> tuple[str, ...]:
        """The module path(s) that launched a node of `b`; () when not known."""
        return self.modules[1].get(node_id, ())

    @property
    def has_modules(self) -> bool:
        """True when the module of some node is known (on either side)."""
        return bool(self.modules[0] or self.modules[1])

    def _module_text(self, m: NodeMatch) -> str:
        """The module of a match's node(s) as text ("blocks.0.mlp.fc"); `a`'s when known, else `b`'s; "" if neither."""
        paths = (self.module_of_a(m.a_id) if m.a_id else ()) or (self.module_of_b(m.b_id) if m.b_id else ())
        return ", ".join(paths)

    # -- tables ----------------------------------------------------------------------------
    def rows(self, *, group: bool = True, include_same: bool = False) -> list[dict[str, Any]]:
        """The differences as table rows (dicts), in graph order.

        Each row: `status`, `kind`, `a` and `b` (labels), `detail` (what changed besides the
        label), `kernel_changed` (another kernel ran, not just another launch shape), `count` (how
        many nodes share this exact row; 12 for a GEMM that changed in each of 12 layers),
        `a_ids` / `b_ids` and `modules` (the modules of the row's nodes, each once, in order; empty when
        not known). With `group=False` every node gets its own row (count 1).
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
                rows[key] = {**row, "count": 0, "a_ids": [], "b_ids": [], "modules": []}
            _add_to_row(rows[key], [m.a_id] if m.a_id else [], [m.b_id] if m.b_id else [], self._module_text(m))
        return list(rows.values())

    def summary(self) -> str:
        """A plain-text report: counts by kind, then one line per (grouped) difference, with its modules when known."""
        na, nb = self.names
        lines = [f"{na} vs {nb}: " + self._headline()]
        wa, wb = max(8, len(na) + 2), max(8, len(nb) + 2)
        lines.append(f"  {'kind':<16}{na:>{wa}}{nb:>{wb}}")
        for kind, (x, y) in self.count_by_kind().items():
            mark = "" if x == y else "  *"
            lines.append(f"  {kind:<16}{x:>{wa}}{y:>{wb}}{mark}")
        for row in self.rows():
            times = f" x{row['count']}" if row["count"] > 1 else ""
            where = f" [in {modules_text(row['modules'])}]" if row["modules"] else ""
            if row["status"] == CHANGED:
                what = f"{row['a']} -> {row['b']}" if row["a"] != row["b"] else row["a"]
                detail = f" ({row['detail']})" if row["detail"] else ""
                lines.append(f"  changed{times}: {what}{detail}{where}")
            else:
                lines.append(f"  {row['status']}{times}: {row['a'] or row['b']}{where}")
        return "\n".join(lines)

    def _headline(self) -> str:
        c = self.count_by_status()
        if self.identical:
            return f"identical ({c[SAME]} nodes)"
        return f"{c[CHANGED]} changed, {c[ADDED]} added, {c[REMOVED]} removed, {c[SAME]} same"

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:  # the dataclass's own repr prints both graphs and every match: tens of KB
        na, nb = self.names
        return f"<GraphDiff {na!r} vs {nb!r}: {self._headline()}; {len(self.a):,} vs {len(self.b):,} nodes>"

    def _repr_html_(self) -> str:
        esc = html.escape
        na, nb = self.names
        head = f"<p><b>{esc(na)}</b> vs <b>{esc(nb)}</b>: {esc(self._headline())}</p>"
        kinds = "".join(
            f"<tr><td>{esc(k)}</td><td>{x}</td><td>{y}</td></tr>" for k, (x, y) in self.count_by_kind().items()
        )
        counts = f"<table><tr><th>kind</th><th>{esc(na)}</th><th>{esc(nb)}</th></tr>{kinds}</table>"
        with_modules = self.has_modules
        body = "".join(
            f"<tr><td>{esc(r['status'])}</td><td>{r['count']}</td><td>{esc(r['kind'])}</td>"
            f"<td>{esc(r['a'])}</td><td>{esc(r['b'])}</td><td>{esc(r['detail'])}</td>"
            + (f"<td>{esc(modules_text(r['modules']))}</td>" if with_modules else "") + "</tr>"
            for r in self.rows()
        )
        table = (
            "<table><tr><th>change</th><th>nodes</th><th>kind</th>"
            f"<th>{esc(na)}</th><th>{esc(nb)}</th><th>detail</th>"
            + ("<th>module</th>" if with_modules else "") + f"</tr>{body}</table>"
            if body
            else ""
        )
        return head + counts + table


def _add_to_row(row: dict[str, Any], a_ids: list[str], b_ids: list[str], module: str) -> None:
    row["count"] += 1
    row["a_ids"] += a_ids
    row["b_ids"] += b_ids
    if module and module not in row["modules"]:
        row["modules"].append(module)


def modules_text(modules: list[str], shown: int = 3) -> str:
    """A row's modules in a few words: "blocks.0.fc, blocks.1.fc, blocks.2.fc, ... (12 modules)".

    >>> modules_text(["blocks.0.fc", "blocks.1.fc"]), modules_text(["m0", "m1", "m2", "m3"], shown=2)
    ('blocks.0.fc, blocks.1.fc', 'm0, m1, ... (4 modules)')
    """
    if len(modules) <= shown:
        return ", ".join(modules)
    return ", ".join(modules[:shown]) + f", ... ({len(modules)} modules)"


def diff(a: CudaGraph, b: CudaGraph, *, names: tuple[str, str] | None = None,
         modules: tuple[Any, Any] | None = None) -> GraphDiff:
    """Compare two captured graphs node by node.

    Args:
        a, b: the graphs (e.g. the same model captured at batch 1 and at batch 8), or anything
            holding one in `.graph` (a captured or watched graph, a `gl.profile` result).
        names: labels for tables and drawings; default the graphs' `source` file names.
        modules: which module launched each node, as a pair (for `a`, for `b`); each side a dict
            node id -> module path ("blocks.0.mlp.fc") or paths (a fused kernel), a `gl.profile`
            result, or None. A side left out (or None) takes the modules `a` / `b` carries when it
            is a `gl.profile` result, else its modules are unknown.

    Returns:
        A `GraphDiff`: `.rows()` for a table, `.summary()` for text, `.mapping()` and
        `.status_in_a/b(node_id)` for drawing; shows itself as an HTML table in Jupyter.

    Raises:
        BadInputError: `modules` is not a pair, names a node its graph does not have, or gives a
            module that is not a path or a list of paths.
    """
    given = _module_pair(modules)
    side_modules = tuple(_modules_of(given[i], _graph_of(obj), side) if given[i] is not None
                         else _modules_of(obj, _graph_of(obj), side) if _carries_modules(obj) else {}
                         for i, (obj, side) in enumerate(((a, "a"), (b, "b"))))
    a, b = _graph_of(a), _graph_of(b)
    if names is None:
        names = (_short_source(a.source, "a"), _short_source(b.source, "b"))
        if names[0] == names[1]:
            names = (names[0] + " (a)", names[1] + " (b)")
    mods_a, mods_b = side_modules
    matches: list[NodeMatch] = []
    _diff_graphs(a, b, a.root, b.root, matches, mods_a, mods_b)
    matched_a = {m.a_id for m in matches}
    matched_b = {m.b_id for m in matches}
    # bodies not reached through a matched owner (e.g. their owner was removed): all removed / added
    matches += [NodeMatch(n.id, None, REMOVED) for n in a.nodes() if n.id not in matched_a]
    matches += [NodeMatch(None, n.id, ADDED) for n in b.nodes() if n.id not in matched_b]
    return GraphDiff(a, b, names, tuple(matches), (mods_a, mods_b))


def _graph_of(obj: Any) -> Any:
    """`obj` itself, or the `CudaGraph` it holds in `.graph` (a CapturedGraph, a WatchedGraph, a Profile)."""
    inner = obj if isinstance(obj, CudaGraph) else getattr(obj, "graph", None)
    return inner if isinstance(inner, CudaGraph) else obj


def _module_pair(modules: Any) -> tuple[Any, Any]:
    if modules is None:
        return (None, None)
    if isinstance(modules, (tuple, list)) and len(modules) == 2:
        return modules[0], modules[1]
    raise BadInputError(f"modules is a pair (modules of a, modules of b), each a dict node id -> module path, "
                        f"a gl.profile result or None; not {type(modules).__name__}")


def _modules_of(source: Any, graph: Any, side: str) -> dict[str, tuple[str, ...]]:
    """node id -> module paths (nodes with none left out), from a dict or a `gl.profile` result (`.nodes`, each
    with `.node_id` and `.modules`)."""
    if isinstance(source, Mapping):
        items = list(source.items())
    elif _carries_modules(source):
        items = [(n.node_id, n.modules) for n in source.nodes]
    else:
        raise BadInputError(f"the modules of {side} are a dict node id -> module path or a gl.profile result, "
                            f"not {type(source).__name__}")
    out = {str(nid): _paths(value, nid, side) for nid, value in items}
    known = {n.id for n in graph.nodes()} if isinstance(graph, CudaGraph) else set()
    unknown = [nid for nid in out if nid not in known]
    if unknown:
        shown = ", ".join(repr(x) for x in unknown[:3]) + (f" and {len(unknown) - 3} more" if len(unknown) > 3 else "")
        raise BadInputError(f"the modules of {side} name {len(unknown)} node(s) its graph does not have: {shown}")
    return {nid: paths for nid, paths in out.items() if paths}


def _carries_modules(obj: Any) -> bool:
    nodes = getattr(obj, "nodes", None)
    return isinstance(nodes, (list, tuple)) and all(hasattr(n, "node_id") and hasattr(n, "modules") for n in nodes)


def _paths(value: Any, node_id: Any, side: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise BadInputError(f"the module of {side}'s node {node_id!r} is a path or a list of paths, "
                        f"not {type(value).__name__}")


def _diff_graphs(a: CudaGraph, b: CudaGraph, ga: Graph, gb: Graph, out: list[NodeMatch],
                 mods_a: Mapping[str, tuple[str, ...]], mods_b: Mapping[str, tuple[str, ...]]) -> None:
    seq_a = [a.node(nid) for nid in analyze(ga).order]
    seq_b = [b.node(nid) for nid in analyze(gb).order]
    pairs: list[tuple[Node | None, Node | None]] = []
    _align(seq_a, seq_b, pairs, mods_a, mods_b)
    for na, nb in pairs:
        if na is None:
            out.append(NodeMatch(None, nb.id, ADDED))  # type: ignore[union-attr]
        elif nb is None:
            out.append(NodeMatch(na.id, None, REMOVED))
        else:
            changes = _changes(na, nb)
            out.append(NodeMatch(na.id, nb.id, CHANGED if changes else SAME, changes))
            for body_a, body_b in zip(na.body_graph_ids, nb.body_graph_ids):
                _diff_graphs(a, b, a.graph(body_a), b.graph(body_b), out, mods_a, mods_b)


_KEYS: tuple[Callable[[Node], Hashable], ...] = (
    signature,
    lambda n: (n.kind.value, n.family or ""),
    # kind only, except kernels: a kernel never faces one of another family ("gemm (CUTLASS)" is not a changed
    # "gelu"), it is removed on one side and added on the other
    lambda n: (n.kind.value, n.family or "") if n.kind is NodeKind.KERNEL else n.kind.value,
)
_FULL_LIMIT = 4_000_000  # len(a) * len(b) up to which every alignment is considered
_BAND_HALF_WIDTH = 300  # beyond that, node i of a may only face nodes near i * len(b) / len(a)


#: how much more a pair counts when both nodes' modules are known and agree
_SAME_MODULE_FACTOR = 10
_UNKNOWN = -1  # module code of a node whose module is not known


def _module_codes(seq_a: list[Node], seq_b: list[Node], mods_a: Mapping[str, tuple[str, ...]],
                  mods_b: Mapping[str, tuple[str, ...]]) -> tuple[list[int], list[int]]:
    """One int per node: equal for two nodes of the same module (the same set of paths), `_UNKNOWN` where unknown."""
    codes: dict[frozenset[str], int] = {}

    def code(mods: Mapping[str, tuple[str, ...]], node: Node) -> int:
        paths = mods.get(node.id)
        return codes.setdefault(frozenset(paths), len(codes)) if paths else _UNKNOWN

    return [code(mods_a, x) for x in seq_a], [code(mods_b, y) for y in seq_b]


def _module_factors(mod: int, mod_b: list[int], lo: int, hi: int) -> list[int]:
    """For a node of module `mod` and b's nodes lo+1 .. hi (x = 0 .. hi-lo; x = 0 is j = lo, unused when lo is 0):
    what a pair's weight is multiplied by."""
    return [1 if j == 0 or mod_b[j - 1] == _UNKNOWN else _SAME_MODULE_FACTOR if mod_b[j - 1] == mod else 0
            for j in range(lo, hi + 1)]


def _align(seq_a: list[Node], seq_b: list[Node], out: list, mods_a: Mapping[str, tuple[str, ...]] | None = None,
           mods_b: Mapping[str, tuple[str, ...]] | None = None) -> None:
    """Pair up two node sequences (None on the side where a node has no partner).

    A weighted longest common subsequence: a pair scores 9 when the signatures agree, 4 when kind
    and family agree, 1 when only the kind does (not for kernels: kernels of two families never pair). Maximising
    the total keeps layer i of `a` facing layer i of `b` even when every layer picked other kernels; as each weight
    is more than twice the next, one exact match beats shifting two neighbours into looser matches. Where both
    nodes' modules are known (`mods_a`, `mods_b`: node id -> module paths), two nodes of different modules never
    pair and two of the same module score ten times as much (90, 40, 10), so a node pairs within its module before
    it pairs with a node whose module is unknown. Large graphs are aligned within a band around the diagonal
    (about 0.5 s for 5,000 x 5,000 nodes here).
    """
    n, m = len(seq_a), len(seq_b)
    if not n or not m:
        out.extend((x, None) for x in seq_a)
        out.extend((None, y) for y in seq_b)
        return
    half = m if n * m <= _FULL_LIMIT else _BAND_HALF_WIDTH
    codes: list[dict[Hashable, int]] = [{} for _ in _KEYS]
    ka = [[c.setdefault(key(x), len(c)) for x in seq_a] for key, c in zip(_KEYS, codes)]
    fb, mb, cb = ([c.setdefault(key(y), len(c)) for y in seq_b] for key, c in zip(_KEYS, codes))
    mod_a, mod_b = _module_codes(seq_a, seq_b, mods_a or {}, mods_b or {})
    prev_lo, prev = 0, [0] * (min(m, half) + 1)  # row 0: only b's nodes so far, all unmatched
    back: list[bytearray] = []  # per row of a: 1 = pair, 2 = a's node unmatched, 3 = b's node unmatched
    los: list[int] = []
    for i, (f, mid, k, mod) in enumerate(zip(*ka, mod_a), start=1):
        centre = i * m // n
        lo, hi = max(0, centre - half), min(m, centre + half)
        pv = [-1] * (hi - lo + 2)  # pv[x] = score of (i-1, lo-1+x); -1 = outside the band
        s0, s1 = max(lo - 1, prev_lo), min(hi, prev_lo + len(prev) - 1)
        if s0 <= s1:
            pv[s0 - lo + 1 : s1 - lo + 2] = prev[s0 - prev_lo : s1 - prev_lo + 1]
        cur = [-1] * (hi - lo + 2)  # cur[x] = score of (i, lo-1+x)
        row = bytearray(hi - lo + 1)
        # factor[j - 1]: 10 for b's node j of this node's module, 0 for one of another module, 1 where unknown
        factor = None if mod == _UNKNOWN else _module_factors(mod, mod_b, lo, hi)
        for x in range(hi - lo + 1):
            j = lo + x
            diag = pv[x]
            if diag < 0 or j == 0 or (factor is not None and not factor[x]):
                diag = -1
            elif fb[j - 1] == f:
                diag += 9 if factor is None else 9 * factor[x]
            elif mb[j - 1] == mid:
                diag += 4 if factor is None else 4 * factor[x]
            elif cb[j - 1] == k:
                diag += 1 if factor is None else factor[x]
            else:
                diag = -1
            up, left = pv[x + 1], cur[x]
            if diag >= up and diag >= left and diag >= 0:
                cur[x + 1], row[x] = diag, 1
            elif up >= left:
                cur[x + 1], row[x] = up, 2
            else:
                cur[x + 1], row[x] = left, 3
        back.append(row)
        los.append(lo)
        prev_lo, prev = lo, cur[1:]
    pairs: list[tuple[Node | None, Node | None]] = []
    i, j = n, m
    while i or j:
        step = back[i - 1][j - los[i - 1]] if i else 3
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


__all__ = ["GraphDiff", "NodeMatch", "_COMPARED", "_KEYS", "diff", "modules_text"]
