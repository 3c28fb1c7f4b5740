"""The diff view: two graphs side by side, coloured by what changed (e.g. batch 1 vs batch 8).

Shares its front end and state with the graph inspector (`drawing_widget.py`); each side is anything the
inspector takes: a `CudaGraph`, a captured graph of any origin, or a .dot path.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from graphlab.graph.diff import diff, module_sources
from graphlab.graph import structure
from graphlab.ui.drawing_widget import DEFAULT_EXPORT_DIR, _DrawingWidget, as_cuda_graph, display_rows
from graphlab.viz.dag import GraphLike
from graphlab.viz.diff_drawing import render_diff
from graphlab.viz.drawing import COLLAPSE_MIN_SAVED_NODES
from graphlab.viz.style import STATUS_COLORS, STATUS_COLOUR_WORDS, block_words


_SHOWN_ROWS = 40  # differences listed in the side panel; the rest are counted, with how to see them


def diff_hint(a_name: str, b_name: str, *, fused: bool = False) -> str:
    """What the diff view's details panel says before a click: the colours, named as the drawing's legend names
    them (grey "same", mint "added", ...)."""
    said = {"same": "the same", "launch changed": "another launch shape", "kernel changed": "another kernel",
            "added": f"only in {b_name} (added)", "removed": f"only in {a_name} (removed)",
            "fused": "fused (one kernel for a run of them)"}
    parts = [f"{STATUS_COLOUR_WORDS[status]}: {said[status]}" for status in STATUS_COLORS
             if status != "fused" or fused]
    text = " · ".join(parts)
    return f"Click a node to compare it with its counterpart. {text[:1].upper()}{text[1:]}."


class DiffInspector(_DrawingWidget):
    """Two graphs side by side, coloured by what changed (e.g. batch 1 vs batch 8 of one model).

    Grey: the same in both; pale yellow: the same kernel with another launch shape; yellow: another
    kernel; mint: only in B (added); orange: only in A (removed); light blue: fused (one kernel standing for a
    run of kernels on the other side). Clicking a node shows it and its counterpart(s), whose outlines light up
    too. `result` holds the `GraphDiff` (`.rows()`, `.summary()`). `modules`: as `gl.diff` takes it.
    Node ids in the drawing are "a-<node id>" and "b-<node id>".
    """

    def __init__(
        self,
        a: GraphLike | str | Path,
        b: GraphLike | str | Path,
        *,
        names: tuple[str, str] | None = None,
        title: str | None = None,
        collapse: bool = True,
        rankdir: str = "TB",
        export_dir: str | Path = DEFAULT_EXPORT_DIR,
        modules: tuple[Any, Any] | None = None,
    ) -> None:
        self.modules = module_sources(a, b, modules)
        self.a, self.b = as_cuda_graph(a), as_cuda_graph(b)
        self.result = diff(self.a, self.b, names=names, modules=self.modules)
        self._setup(export_dir)
        na, nb = self.result.names
        super().__init__(mode="diff", title=title or f"{na} vs {nb}", collapse=collapse, rankdir=rankdir)
        self.summary = self._summary()
        self.hint = diff_hint(na, nb, fused=bool(self.result.fused))
        self._start()

    def _draw(self) -> Any:
        return render_diff(self.a, self.b, names=self.result.names, collapse=self.collapse, rankdir=self.rankdir,
                           modules=self.modules)

    def _json(self) -> str:
        import json

        return json.dumps({"names": list(self.result.names), "count_by_status": self.result.count_by_status(),
                           "rows": self.result.rows(), "a": self.a.to_dict(), "b": self.b.to_dict()}, indent=1)

    def _summary(self) -> dict[str, Any]:
        d = self.result
        na, nb = d.names
        counts = d.count_by_status()
        rows = d.rows()
        return {
            "title": f"{na} vs {nb}",
            "rows": [[status, counts[status]] for status in ("same", "changed", "added", "removed", "fused")
                     if status in counts]
            + [["nodes", f"{len(self.a)} \u2192 {len(self.b)}"]],
            "tables": [
                [f"nodes by kind ({na} \u2192 {nb})",
                 [[k, f"{x} \u2192 {y}"] for k, (x, y) in d.count_by_kind().items()]],
                ["differences", [[f"{r['status']} \u00d7{r['count']}", _diff_text(r)] for r in rows[:_SHOWN_ROWS]]
                 + ([["", f"and {len(rows) - _SHOWN_ROWS} more: print(gl.diff(a, b)) lists every difference"]]
                    if len(rows) > _SHOWN_ROWS else [])],
            ],
        }

    def details_for(self, node_id: str) -> dict[str, Any]:
        """Both sides of the pair a drawn node ("a-graph_1_node_3" or "b-...") belongs to."""
        self.matches = []
        side, _, raw = node_id.partition("-")
        if not node_id or side not in ("a", "b") or not raw:
            return {}
        if raw.startswith("block_"):
            graph = self.a if side == "a" else self.b
            blocks = structure.find_repeated_blocks(graph, min_saved_nodes=COLLAPSE_MIN_SAVED_NODES)
            block = next((b for b in blocks if b.id == raw), None)
            words = block_words(block, blocks) if block is not None else "a repeated block"
            name = self.result.names[0 if side == "a" else 1]
            return {"id": node_id, "label": f"{words[0].upper()}{words[1:]} of {name}", "kind": "repeated block",
                    "note": "Drawn once, with the biggest change among its repeats: untick \"collapse repeats\" "
                            "(or set collapse = False) to see every node.",
                    "rows": [["kind", "repeated block"]], "code": node_id}
        try:
            match = self.result.match_of_a(raw) if side == "a" else self.result.match_of_b(raw)
        except KeyError:
            self.status = f"{node_id!r} is not a node of either graph"
            return {}
        graph = self.a if side == "a" else self.b
        out = graph.node(raw).to_dict()
        out.pop("details", None)
        out["id"] = node_id
        out["label"] = graph.node(raw).label
        kernel_changed = bool(getattr(match, "kernel_changed", False))
        out["status"] = match.status
        if match.status == "changed":  # the drawing's two shades of change
            out["status"] = "kernel changed" if kernel_changed else "launch changed"
        out["note"] = self._fused_note(match) if match.status == "fused" else {
            "same": "The same in both graphs.",
            "changed": ("Changed (another kernel): " if kernel_changed else "Changed (same kernel, new launch shape): ")
            + "; ".join(match.changes),
            "added": f"Only in {self.result.names[1]} (added).",
            "removed": f"Only in {self.result.names[0]} (removed).",
        }[match.status]
        sides = []
        counterparts: list[str] = []
        a_ids, b_ids = self._pair_ids(match)
        for label, g, nids, prefix in ((self.result.names[0], self.a, a_ids, "a-"),
                                       (self.result.names[1], self.b, b_ids, "b-")):
            for nid in nids:
                node = g.node(nid).to_dict()
                node.pop("details", None)
                node.pop("name", None)
                rows = [["name", g.node(nid).label], *display_rows(node)]
                sides.append({"title": label, **node, "rows": rows})
                other = prefix + nid
                if other != node_id and other in self._drawn:
                    counterparts.append(other)
        self.matches = counterparts  # assigned, never appended to: a traitlet syncs to the page only when set
        out["sides"] = sides
        out["rows"] = [row for row in display_rows(out) if row[0] in ("status", "kind")]
        out["code"] = node_id
        return out

    def _pair_ids(self, match: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The node ids of `a` and of `b` a match puts side by side: a pair, one node, or a whole fusion."""
        if match.status == "fused":
            return self.result.fusion_of(match)
        return (match.a_id,) if match.a_id else (), (match.b_id,) if match.b_id else ()

    def _fused_note(self, match: Any) -> str:
        a_ids, b_ids = self.result.fusion_of(match)
        na, nb = self.result.names
        how = f" ({match.changes[0]})" if match.changes else ""
        return f"Fused{how}: {len(a_ids)} kernel(s) of {na} \u2192 {len(b_ids)} of {nb}."

    def __repr__(self) -> str:
        return f"<DiffInspector {self.title!r}: {self.result._headline()}>"


def _diff_text(row: dict[str, Any]) -> str:
    what = f"{row['a']} \u2192 {row['b']}" if row["a"] and row["b"] and row["a"] != row["b"] else row["a"] or row["b"]
    return f"{what} ({row['detail']})" if row["detail"] else what


def inspect_diff(a: GraphLike | str | Path, b: GraphLike | str | Path, **options: Any) -> DiffInspector:
    """The diff view of two graphs (e.g. batch 1 vs batch 8): see `DiffInspector`.

    Example:
        >>> rec = gl.load_recording("gpt")                             # doctest: +SKIP
        >>> gl.inspect_diff(rec.graph("b1"), rec.graph("b8"), names=("batch 1", "batch 8"))  # doctest: +SKIP
    """
    return DiffInspector(a, b, **options)


__all__ = ["DiffInspector", "diff_hint", "inspect_diff"]
