"""Draw the difference between two captured graphs (e.g. batch 1 vs batch 8) side by side.

`graphlab.graph.diff` decides what matches; `drawing.py` paints each side. Either side may be anything
`gl.render` draws: a `CudaGraph` or a captured graph of any origin (`graphlab.viz.dag`).
"""
from __future__ import annotations

from typing import Any, Callable

from graphlab.graph.diff import GraphDiff, NodeMatch, diff, module_sources
from graphlab.viz import style
from graphlab.viz.banner import banner_text
from graphlab.viz.dag import GraphLike
from graphlab.viz.drawing import Drawing, _as_cudagraph, _new_digraph, _Options, _Painter

_STATUS_RANK = {"same": 0, "launch changed": 1, "added": 2, "removed": 2, "fused": 2, "kernel changed": 3}


def render_diff(
    a: GraphLike,
    b: GraphLike,
    *,
    names: tuple[str, str] | None = None,
    collapse: bool = True,
    rankdir: str = "TB",
    legend: bool = True,
    modules: tuple[Any, Any] | None = None,
) -> Drawing:
    """Draw two graphs side by side, coloured by what changed between them.

    Colours: grey = the same in both, yellow = matched but changed (another kernel, grid or
    block), mint = only in `b` (added), orange = only in `a` (removed), light blue = fused (one kernel
    on one side standing for a run of kernels on the other; `gl.diff`'s docstring has the rule). A table
    node sums up node counts by kind and the first differences (the drawing says how to list the rest:
    `print(gl.diff(a, b))`); `Drawing.diff` holds the full `GraphDiff`. Node ids
    in the SVG are "a-<node id>" and "b-<node id>". `modules`: as `gl.diff` takes it (a `gl.profile`
    result drawn brings its own).
    """
    sources = module_sources(a, b, modules)
    a, b = _as_cudagraph(a, "render_diff()"), _as_cudagraph(b, "render_diff()")
    d = diff(a, b, names=names, modules=sources)
    dot = _new_digraph(rankdir)
    drawn: list[str] = []
    collapsed = False
    for side, cg, match in (("a", a, d.match_of_a), ("b", b, d.match_of_b)):
        opts = _Options(collapse=collapse, name_prefix=f"{side}__", id_prefix=f"{side}-")
        painter = _Painter(cg, opts)
        collapsed = collapsed or bool(painter.collapsed)
        worst = _worst_status(painter, match)
        opts.fill = lambda node, worst=worst: style.STATUS_COLORS[worst[node.id]]
        opts.extra_classes = lambda node, worst=worst, side=side: [
            f"status-{style.slug(worst[node.id])}", f"side-{side}"
        ]
        with dot.subgraph(name=f"cluster_side_{side}") as sub:
            sub.attr(label=d.names[0 if side == "a" else 1], id=f"side-{side}", style="rounded", color="#BBBBBB",
                     fontsize="12")
            painter.paint(sub)
        drawn += [f"{side}-{nid}" for nid in painter.drawn]
    entries = [(status, colour) for status, colour in style.STATUS_COLORS.items()
               if status != "fused" or d.fused] if legend else []
    note = style.BLOCK_NOTE + "; it shows the biggest change among its repeats" if legend and collapsed else ""
    recorded = banner_text()  # recorded mode: say the graphs were recorded elsewhere
    title = f"{d.names[0]}  vs  {d.names[1]}" + (f", {recorded}" if recorded else "")
    dot.attr(label=style.title_label(title, entries, heading="difference",
                                     note=note, per_row=5, table=_diff_table(d)))
    return Drawing(dot, node_ids=drawn, diff=d)


def _display_status(match: NodeMatch) -> str:
    if match.status != "changed":
        return match.status
    return "kernel changed" if match.kernel_changed else "launch changed"


def _worst_status(painter: _Painter, match: Callable[[str], NodeMatch]) -> dict[str, str]:
    """Status per drawn node; a block's stand-in shows the biggest change among the nodes it stands for."""
    worst = {n.id: _display_status(match(n.id)) for n in painter.cg.nodes()}
    for hidden_id, rep_id in painter.rep.items():
        if _STATUS_RANK[worst[hidden_id]] > _STATUS_RANK[worst[rep_id]]:
            worst[rep_id] = worst[hidden_id]
    return worst


def _diff_table(d: GraphDiff, listed: int = 12) -> str:
    rows = d.rows()
    lines = []
    for row in rows[:listed]:
        times = f" x{row['count']}" if row["count"] > 1 else ""
        what = f"{row['a']} \u2192 {row['b']}" if row["a"] and row["b"] and row["a"] != row["b"] else row["a"] or row["b"]
        detail = f" ({row['detail']})" if row["detail"] else ""
        shown = row["status"]
        if shown == "changed":
            shown = "kernel changed" if row["kernel_changed"] else "launch changed"
        lines.append((shown, f"{row['status']}{times}: {what}{detail}"))
    more = len(rows) - listed
    if more > 0:  # what a reader can type to see the rest
        lines.append(("", f"... and {more} more: print(gl.diff(a, b)) lists every difference"))
    if not rows:
        lines.append(("", "no differences"))
    return style.diff_table(d.names, d.count_by_kind(), lines)


__all__ = ["render_diff"]
