"""What differs between two captured graphs, node by node (e.g. batch 1 vs batch 8 of one model).

Pure (no torch): standard library only.

Nodes are matched along each graph's topological order by a weighted longest common subsequence:
a pair counts most when the full signatures agree (kind, family, short name), less when kind and
family agree (the same cuBLAS GEMM slot picking another tile), least when only the kind does
(cuBLAS at batch 1, CUTLASS at batch 8); two kernels of different families never pair. A matched pair whose
kernel name, grid, block, shared memory or bytes differ is "changed"; unmatched nodes are
"removed" (only in `a`) or "added" (only in `b`). Bodies of matched child-graph and conditional
nodes are compared the same way.

Where both sides know which module launched a node, modules decide what may pair; one kernel standing for a
run of kernels on the other side (torch.compile's fusions) is reported as "fused". `diff`'s docstring has both
rules.

    >>> from graphlab.graph.model import CudaGraph, Graph, Node, NodeKind
    >>> def one(grid): return CudaGraph((Graph("g", (Node("g_n0", "g", 0, NodeKind.KERNEL,
    ...     short_name="gemm", family="cuBLAS", grid=grid),), ()),))
    >>> print(diff(one((1, 1, 1)), one((8, 1, 1))).rows()[0]["detail"])
    grid 1x1x1 -> 8x1x1
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Mapping

from graphlab.errors import BadInputError
from graphlab.graph.model import CudaGraph, Graph, Node, NodeKind
from graphlab.graph.structure import analyze, signature

SAME, CHANGED, ADDED, REMOVED, FUSED = "same", "changed", "added", "removed", "fused"

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
        a_id, b_id: node ids in `a` and `b` (None for added / removed nodes, and for both sides of a fusion:
            one NodeMatch per node).
        status: "same", "changed", "added", "removed" or "fused".
        changes: for "changed", one "field old -> new" text per differing field; for "fused", how the fusion
            was recognised ("a Triton fusion" or "same modules").
        fused_with: for "fused", the node ids on the other side: the one fused kernel for a node of the run,
            the whole run for the fused kernel.
    """

    a_id: str | None
    b_id: str | None
    status: str
    changes: tuple[str, ...] = ()
    fused_with: tuple[str, ...] = ()

    @property
    def kernel_changed(self) -> bool:
        """True when another kernel (or node type) ran, not just another grid, block or size (a fusion too)."""
        return self.status == FUSED or any(c.startswith(("name ", "kernel ", "type ")) for c in self.changes)


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
    def fused(self) -> list[NodeMatch]:
        """Every node of both sides in a fusion (see `fused_groups` for them grouped)."""
        return self._with(FUSED)

    def fused_groups(self) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
        """(node ids in `a`, node ids in `b`) of every fusion, in graph order: N ids on one side, one on the other."""
        groups: dict[tuple[tuple[str, ...], tuple[str, ...]], None] = {}
        for m in self.fused:
            groups.setdefault(self.fusion_of(m))
        return list(groups)

    def fusion_of(self, m: NodeMatch) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(node ids in `a`, node ids in `b`) of the fusion a "fused" match belongs to."""
        if m.status != FUSED:
            raise BadInputError(f"fusion_of takes a fused match, not a {m.status!r} one")
        if m.a_id is not None:
            if len(m.fused_with) > 1:  # the fused kernel is this node of a
                return (m.a_id,), m.fused_with
            return self._by_b[m.fused_with[0]].fused_with, m.fused_with
        if len(m.fused_with) > 1:
            return m.fused_with, (m.b_id,)  # type: ignore[return-value]
        return (m.fused_with[0],), self._by_a[m.fused_with[0]].fused_with

    @property
    def identical(self) -> bool:
        """True when every node matched and nothing about any pair changed."""
        return all(m.status == SAME for m in self.matches)

    def count_by_kind(self) -> dict[str, tuple[int, int]]:
        """kind -> (count in a, count in b), kinds in order of first appearance."""
        ca, cb = self.a.count_by_kind(), self.b.count_by_kind()
        return {k: (ca.get(k, 0), cb.get(k, 0)) for k in dict.fromkeys([*ca, *cb])}

    def count_by_status(self) -> dict[str, int]:
        """Nodes (of both sides together) by status; "fused" only when some nodes were fused."""
        counts = {s: len(self._with(s)) for s in (SAME, CHANGED, ADDED, REMOVED, FUSED)}
        if not counts[FUSED]:
            del counts[FUSED]
        return counts

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
        not known). A fusion is one row, status "fused": `a` / `b` the labels of its nodes joined by " + ",
        `count` how many fusions share it. With `group=False` every node (every fusion) gets its own row
        (count 1).
        """
        rows: dict[Hashable, dict[str, Any]] = {}
        fusions_seen: set[tuple[tuple[str, ...], tuple[str, ...]]] = set()
        for i, m in enumerate(self.matches):
            if m.status == SAME and not include_same:
                continue
            if m.status == FUSED:
                fusion = self.fusion_of(m)
                if fusion not in fusions_seen:
                    fusions_seen.add(fusion)
                    self._add_fusion_row(rows, fusion, m.changes, i if not group else None)
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
            _add_to_row(rows[key], [m.a_id] if m.a_id else [], [m.b_id] if m.b_id else [], [self._module_text(m)])
        return list(rows.values())

    def _add_fusion_row(self, rows: dict[Hashable, dict[str, Any]], fusion: tuple[tuple[str, ...], tuple[str, ...]],
                        how: tuple[str, ...], index: int | None) -> None:
        """One row for a fusion: the run's labels joined by " + " on its side, the fused kernel on the other."""
        a_ids, b_ids = fusion
        row = {
            "status": FUSED,
            "kind": NodeKind.KERNEL.value,
            "a": " + ".join(_label(self.a.node(nid)) for nid in a_ids),
            "b": " + ".join(_label(self.b.node(nid)) for nid in b_ids),
            "detail": f"{len(a_ids)} -> {len(b_ids)} kernels" + (f", {how[0]}" if how else ""),
            "kernel_changed": True,
        }
        key: Hashable = tuple(row.values()) if index is None else index
        if key not in rows:
            rows[key] = {**row, "count": 0, "a_ids": [], "b_ids": [], "modules": []}
        modules = [", ".join(self.module_of_a(nid)) for nid in a_ids] + [", ".join(self.module_of_b(nid))
                                                                            for nid in b_ids]
        _add_to_row(rows[key], list(a_ids), list(b_ids), modules)

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
            row = {**row, "a": _uncut(row["a"], self.a, row["a_ids"]), "b": _uncut(row["b"], self.b, row["b_ids"])}
            times = f" x{row['count']}" if row["count"] > 1 else ""
            where = f" [in {modules_text(row['modules'])}]" if row["modules"] else ""
            if row["status"] in (CHANGED, FUSED):
                what = f"{row['a']} -> {row['b']}" if row["a"] != row["b"] else row["a"]
                detail = f" ({row['detail']})" if row["detail"] else ""
                lines.append(f"  {row['status']}{times}: {what}{detail}{where}")
            else:
                lines.append(f"  {row['status']}{times}: {row['a'] or row['b']}{where}")
        return "\n".join(lines)

    def _headline(self) -> str:
        c = self.count_by_status()
        if self.identical:
            return f"identical ({c[SAME]} nodes)"
        groups = self.fused_groups()
        fusions = ""
        if groups:  # "2 fused (4 -> 2 nodes)": two fusions, four nodes of a standing for two of b
            fusions = (f", {len(groups)} fused ({sum(len(x) for x, _ in groups)} -> "
                       f"{sum(len(y) for _, y in groups)} nodes)")
        return f"{c[CHANGED]} changed, {c[ADDED]} added, {c[REMOVED]} removed{fusions}, {c[SAME]} same"

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:  # the dataclass's own repr prints both graphs and every match: tens of KB
        na, nb = self.names
        return f"<GraphDiff {na!r} vs {nb!r}: {self._headline()}; {len(self.a):,} vs {len(self.b):,} nodes>"

    def counts_table(self) -> Any:
        """Nodes by kind on each side (a `present.Table`)."""
        from graphlab.present import Column, Table

        na, nb = self.names
        rows = [{"kind": k, "a": x, "b": y} for k, (x, y) in self.count_by_kind().items()]
        return Table(rows, [Column("kind", "kind of node", kind="text"), Column("a", f"{na}: nodes", kind="count"),
                            Column("b", f"{nb}: nodes", kind="count")], index="kind")

    def table(self, *, group: bool = True, include_same: bool = False, limit: int | None = 40) -> Any:
        """The differences as a `present.Table`, in graph order: what changed, how many times, the node on each
        side (kernel names that the short label cuts are shown in full, as code), what else differs, and the modules
        when known. `limit=None` shows every row; `.rows()` gives them as dicts."""
        from graphlab.present import Column, Table

        na, nb = self.names
        rows = []
        for r in self.rows(group=group, include_same=include_same):
            rows.append({"status": r["status"], "count": r["count"], "kind": r["kind"],
                         "a": _uncut(r["a"], self.a, r["a_ids"]) or None, "b": _uncut(r["b"], self.b, r["b_ids"]) or None,
                         "detail": r["detail"] or None, "modules": _modules_code(r["modules"]) or None})
        columns = [Column("status", "change", kind="text"), Column("count", "how many", kind="count"),
                   Column("kind", "kind", kind="text"),
                   Column("a", na, kind="text", missing="no such node on this side"),
                   Column("b", nb, kind="text", missing="no such node on this side"),
                   Column("detail", "what else differs", kind="text", missing="nothing else")]
        if self.has_modules:
            columns.append(Column("modules", "module", kind="text", missing="not known"))
        notes = ["how many: nodes with this change (for a fused row: fusions like it)."]
        return Table(rows, columns, title=f"{na} vs {nb}: {self._headline()}", notes=notes, limit=limit,
                     more="`.table(limit=None)` shows them all; `.rows()` gives them as dicts")

    def _repr_html_(self) -> str:
        changes = self.table()
        if not changes.rows:
            na, nb = self.names
            return f"<p><b>{html.escape(na)} vs {html.escape(nb)}</b>: {html.escape(self._headline())}</p>" + \
                self.counts_table()._repr_html_()
        title, changes.title = changes.title, ""
        return (f"<p><b>{html.escape(title)}</b></p>" + self.counts_table()._repr_html_() + "<br>"
                + changes._repr_html_())


def _add_to_row(row: dict[str, Any], a_ids: list[str], b_ids: list[str], modules: list[str]) -> None:
    row["count"] += 1
    row["a_ids"] += a_ids
    row["b_ids"] += b_ids
    for module in modules:
        if module and module not in row["modules"]:
            row["modules"].append(module)


def _uncut(text: str, graph: CudaGraph, ids: list[str]) -> str:
    """A row's label with every kernel name its short label cut ("…") given in full, as code: the Triton kernel
    `triton_per_fused_add_addmm_embedding_native_layer_norm_0` for "add_addmm_embedding_native_laye… (Triton)"."""
    if "\u2026" not in text:
        return text
    full: dict[str, list[str]] = {}
    for nid in ids:
        node = graph.node(nid)
        if "\u2026" in node.label:
            full.setdefault(node.label, [])
            name = node.name or node.demangled_name
            if name and name not in full[node.label]:
                full[node.label].append(name)
    return " + ".join(", ".join(f"`{n}`" for n in full[part]) if full.get(part) else part
                      for part in text.split(" + "))


def _modules_code(modules: list[str], shown: int = 3) -> str:
    """A row's modules as code, a few of them and how many more: "`blocks.0.fc`, `blocks.1.fc` and 10 more"."""
    if not modules:
        return ""
    head = ", ".join(f"`{m}`" for m in modules[:shown])
    return head if len(modules) <= shown else f"{head} and {len(modules) - shown} more"


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

    Modules: where the module that launched a node is known on both sides (`modules=`, or `gl.profile` results
    diffed), two nodes of different modules never pair (never "same" or "changed"), and two of the same module
    (the same set of module paths) count ten times as much as a pair whose module is not known on both sides, so
    a node pairs within its module first.

    Fusions ("fused"): torch.compile runs one Triton kernel where eager PyTorch runs several. After the alignment,
    take each stretch of unpaired nodes between two pairs (or a pair and the start or end of the graph). It is one
    fusion when all of these hold:

    1. one side (either: `a` or `b`) holds exactly one node F and the other side N >= 2 nodes (the run:
       consecutive in topological order), and every one of them is a kernel;
    2. if F's module and the modules of every node of the run are known, they decide: a fusion exactly when the
       run's modules together are F's modules (the same set of paths), whatever F's name;
    3. otherwise F is a Triton kernel named as inductor names fusions (`triton_<kind>_fused_<ops>_<n>`, e.g.
       `triton_poi_fused_add_gelu_0`), and, when F's module is known, no node of the run comes from a module
       that F's do not list.

    A fusion's nodes get status "fused" (`NodeMatch.fused_with` names the other side) and one row: "fused: these
    N nodes -> this one". Stretches with several nodes on both sides stay removed and added: which of them fused
    into which is not decided by guessing.

    Raises:
        BadInputError: `modules` is not a pair, names a node its graph does not have, or gives a
            module that is not a path or a list of paths.
    """
    sources = module_sources(a, b, modules)
    side_modules = tuple({} if source is None else _modules_of(source, _graph_of(obj), side)
                         for source, obj, side in zip(sources, (a, b), ("a", "b")))
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


def module_sources(a: Any, b: Any, modules: tuple[Any, Any] | None) -> tuple[Any, Any]:
    """Where each side's modules come from: the one given in `modules`, else `a` / `b` itself when it carries
    them (a `gl.profile` result), else None. `render_diff` and the diff inspector pass this on to `diff`."""
    given = _module_pair(modules)
    return tuple(g if g is not None else obj if _carries_modules(obj) else None  # type: ignore[return-value]
                 for g, obj in zip(given, (a, b)))


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
    fused = _fused_stretches(pairs, mods_a, mods_b)
    for index, (na, nb) in enumerate(pairs):
        if index in fused:
            out.append(fused[index])
        elif na is None:
            out.append(NodeMatch(None, nb.id, ADDED))  # type: ignore[union-attr]
        elif nb is None:
            out.append(NodeMatch(na.id, None, REMOVED))
        else:
            changes = _changes(na, nb)
            out.append(NodeMatch(na.id, nb.id, CHANGED if changes else SAME, changes))
            for body_a, body_b in zip(na.body_graph_ids, nb.body_graph_ids):
                _diff_graphs(a, b, a.graph(body_a), b.graph(body_b), out, mods_a, mods_b)


_TRITON_FUSED = re.compile(r"^triton_(?:[a-z]+_)?fused_")  # inductor's name for a fusion: triton_poi_fused_add_gelu_0


def _stretches(pairs: list[tuple[Node | None, Node | None]]) -> list[tuple[int, int]]:
    """(start, stop) of every maximal run of unpaired entries: between two pairs, or a pair and an end."""
    out, start = [], None
    for index, (na, nb) in enumerate(pairs + [(None, None)]):
        unpaired = index < len(pairs) and (na is None or nb is None)
        if unpaired and start is None:
            start = index
        elif not unpaired and start is not None:
            out.append((start, index))
            start = None
    return out


def _fused_stretches(pairs: list[tuple[Node | None, Node | None]], mods_a: Mapping[str, tuple[str, ...]],
                     mods_b: Mapping[str, tuple[str, ...]]) -> dict[int, NodeMatch]:
    """index in `pairs` -> its "fused" match, for every stretch where one kernel stands for a run of them."""
    out: dict[int, NodeMatch] = {}
    for start, stop in _stretches(pairs):
        run_a = [na for na, _ in pairs[start:stop] if na is not None]
        run_b = [nb for _, nb in pairs[start:stop] if nb is not None]
        if len(run_a) == 1 and len(run_b) >= 2:
            fused, run, fused_mods, run_mods = run_a[0], run_b, mods_a, mods_b
        elif len(run_b) == 1 and len(run_a) >= 2:
            fused, run, fused_mods, run_mods = run_b[0], run_a, mods_b, mods_a
        else:
            continue
        how = _fused_how(fused, run, fused_mods.get(fused.id, ()), [run_mods.get(n.id, ()) for n in run])
        if not how:
            continue
        run_ids = tuple(n.id for n in run)
        for index in range(start, stop):
            na, nb = pairs[index]
            node = na if na is not None else nb
            fused_with = run_ids if node is fused else (fused.id,)
            out[index] = NodeMatch(na.id if na else None, nb.id if nb else None, FUSED, (how,), fused_with)
    return out


def _fused_how(fused: Node, run: list[Node], fused_modules: tuple[str, ...],
               run_modules: list[tuple[str, ...]]) -> str:
    """How the one kernel `fused` is known to do the work of the run of kernels `run` ("" when it is not):
    the rule in `diff`'s docstring."""
    if fused.kind is not NodeKind.KERNEL or any(n.kind is not NodeKind.KERNEL for n in run):
        return ""
    known = [set(m) for m in run_modules if m]
    if fused_modules and len(known) == len(run):  # modules known on both sides: they decide
        return "same modules" if set().union(*known) == set(fused_modules) else ""
    if fused_modules and any(not m <= set(fused_modules) for m in known):
        return ""  # a node of the run comes from a module the fused kernel does not
    named = fused.family == "Triton" and _TRITON_FUSED.match(fused.name or fused.demangled_name or "")
    return "a Triton fusion" if named else ""


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


__all__ = ["GraphDiff", "NodeMatch", "_COMPARED", "_KEYS", "diff", "module_sources", "modules_text"]
