"""The interactive graph inspector: a captured CUDA graph you can zoom, click, search and filter.

Layer 3 (UI). Python does the work (layout with Graphviz's `dot`, node details, search, summary)
and holds every piece of state as a synced traitlet; a small offline anywidget front end
(`inspector.js` and `inspector.css`, bundled into the widget: no CDN) draws it and reports clicks.
So a notebook, or a test without any browser, can read and drive the widget:

    >>> import graphlab as gl
    >>> w = gl.inspect(gl.load_recording("gpt").graph("b1"))   # doctest: +SKIP
    >>> w.search = "gemm"; len(w.matches)                        # doctest: +SKIP
    >>> w.selected = w.matches[0]; w.details["demangled_name"]  # doctest: +SKIP
    >>> w.export("png")                                          # doctest: +SKIP

Outside a live kernel (nbconvert, GitHub) the widget shows a static picture instead: its
`_repr_mimebundle_` carries `image/svg+xml` and `image/png` next to the widget view.
"""
from __future__ import annotations

import base64
import html
import re
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from graphlab.core import structure
from graphlab.core.model import CudaGraph, Node
from graphlab.errors import GraphlabError

_HERE = Path(__file__).resolve().parent
_DRAWN_ID = re.compile(r'<g id="([^"]+)" class="(?:node|cluster[^"]*repeated)')
_EXPANDED_REPEAT = re.compile(r"^(block_\d+)-\d+$")  # one repeat of an expanded block
RANKDIRS = ("TB", "LR", "BT", "RL")
EXPORT_FORMATS = {"svg": "image/svg+xml", "png": "image/png", "dot": "text/vnd.graphviz", "json": "application/json"}
STATIC_PNG_DPI = 72  # the static picture in saved notebooks: enough to read, small enough to keep
STATIC_PNG_MAX_INCHES = "12,40"  # larger drawings are scaled down to fit (Graphviz `size`)


class InspectorError(GraphlabError, ValueError):
    """The inspector was given something it cannot show, or an option it does not know."""


def as_cuda_graph(obj: Any) -> CudaGraph:
    """A `CudaGraph` from a graph, anything with a `.graph` (a `CapturedGraph`), or a .dot path."""
    if isinstance(obj, CudaGraph):
        return obj
    inner = getattr(obj, "graph", None)
    if isinstance(inner, CudaGraph):
        return inner
    if isinstance(obj, (str, Path)) and str(obj).endswith((".dot", ".gv")):
        from graphlab.core.dot_parser import read_dot

        return read_dot(obj)
    if callable(inner) and hasattr(obj, "graph_names"):  # a Recording: which of its graphs?
        raise InspectorError(
            f"a recording holds several graphs: pass one, e.g. gl.inspect(rec.graph({obj.graph_names[0]!r})) "
            f"(it has {', '.join(obj.graph_names)})"
        )
    raise InspectorError(
        f"cannot inspect a {type(obj).__name__}: pass a CudaGraph (gl.parse_dot(text), "
        "gl.load_recording(name).graph(key)), a captured graph, or the path of a .dot file"
    )


def _pairs(counts: dict[str, int]) -> list[list[Any]]:
    return [[k, v] for k, v in counts.items()]


class _GraphFacts:
    """What the inspector needs to know about one graph, computed once: blocks, neighbours, order."""

    def __init__(self, graph: CudaGraph):
        from graphlab.render.drawing import COLLAPSE_MIN_SAVED_NODES

        self.graph = graph
        # the same blocks, with the same ids, as the drawing collapses
        found = structure.find_repeated_blocks(graph, min_saved_nodes=COLLAPSE_MIN_SAVED_NODES)
        self.blocks = {b.id: b for b in found}
        self.block_of: dict[str, str] = {}
        for block in self.blocks.values():
            for nid in block.all_node_ids():
                self.block_of[nid] = block.id
        self.summary = structure.summary(graph)

    def structure_of(self, node: Node) -> structure.GraphStructure:
        return structure.analyze(self.graph.graph(node.graph_id))

    def brief(self, node_id: str) -> dict[str, str]:
        return {"id": node_id, "label": self.graph.node(node_id).label}

    def node_details(self, node_id: str) -> dict[str, Any]:
        """Everything the details panel shows for one node, JSON-ready."""
        node = self.graph.node(node_id)
        info = self.structure_of(node)
        out = node.to_dict()
        out.pop("details", None)
        out["label"] = node.label
        out["extra"] = dict(node.details)
        out["topo_position"] = info.position(node_id) + 1
        out["topo_total"] = len(info.order)
        out["level"] = info.level[node_id]
        out["predecessors"] = [self.brief(p) for p in info.preds[node_id]]
        out["successors"] = [self.brief(s) for s in info.succs[node_id]]
        if node.graph_id != self.graph.root.id:
            parent = self.graph.graph(node.graph_id).parent_node_id
            out["note"] = f"Inside the body graph {node.graph_id}" + (f" of node {parent}." if parent else ".")
        block_id = self.block_of.get(node_id)
        if block_id is not None:
            block = self.blocks[block_id]
            repeat, offset = block.locate(node_id) or (0, 0)
            out["block_id"] = block_id
            where = (
                f"Node {offset + 1} of {block.period} in repeat {repeat + 1} of {block.count} "
                f"of the repeated block {block_id}."
            )
            out["note"] = f"{out['note']} {where}" if "note" in out else where
        return out

    def block_details(self, block_id: str) -> dict[str, Any]:
        """The details panel for a repeated block drawn as one node."""
        block = self.blocks[block_id]
        first = [self.brief(nid) for nid in block.representative]
        return {
            "id": block_id,
            "label": f"{block.count} × the same {block.period} nodes",
            "kind": "repeated block",
            "graph_id": block.graph_id,
            "block_id": block_id,
            "note": (
                f"{block.count} repeats of {block.period} nodes ({block.count * block.period} in all), "
                "e.g. one per transformer layer. Expand it to see every node."
            ),
            "members": first,
        }

    def summary_rows(self, title: str) -> dict[str, Any]:
        s = self.summary
        bodies = s.graphs > 1  # depth and width are the root graph's
        return {
            "title": title,
            "rows": [
                ["nodes", s.nodes],
                ["edges", s.edges],
                ["graphs (root + bodies)", s.graphs],
                ["longest chain in the root graph" if bodies else "longest chain (depth)", f"{s.depth} nodes"],
                ["widest level in the root graph" if bodies else "widest level (parallelism)",
                 f"{s.widest_level} node{'s' if s.widest_level != 1 else ''}"],
                ["repeated blocks", len(self.blocks)],
            ],
            "tables": [["nodes by kind", _pairs(s.by_kind)], ["kernels by family", _pairs(s.by_family)]],
        }


def _kernel_text(node: Node) -> str:
    return "\n".join(x for x in (node.short_name, node.demangled_name, node.name) if x)


def _run_dot(source: str, fmt: str, *extra: str) -> bytes:
    """Lay out `source` with the `dot` binary; `InspectorError` with the fix when it is missing."""
    try:
        done = subprocess.run(["dot", f"-T{fmt}", *extra], input=source.encode(), capture_output=True, timeout=120)
    except FileNotFoundError:
        raise InspectorError("the Graphviz `dot` program is not installed: apt-get install graphviz") from None
    if done.returncode != 0:
        raise InspectorError(f"dot could not draw the graph: {done.stderr.decode(errors='replace').strip()[:300]}")
    return done.stdout


class _DrawingWidget(anywidget.AnyWidget):
    """What the graph and diff inspectors share: the synced state, layout, export, static picture."""

    _esm = (_HERE / "inspector.js").read_text(encoding="utf-8")
    _css = (_HERE / "inspector.css").read_text(encoding="utf-8")

    mode = traitlets.Unicode("graph").tag(sync=True)
    title = traitlets.Unicode("").tag(sync=True)
    svg = traitlets.Unicode("").tag(sync=True)
    selected = traitlets.Unicode("").tag(sync=True)
    details = traitlets.Dict().tag(sync=True)
    search = traitlets.Unicode("").tag(sync=True)
    search_regex = traitlets.Bool(False).tag(sync=True)
    search_error = traitlets.Unicode("").tag(sync=True)
    matches = traitlets.List(traitlets.Unicode()).tag(sync=True)
    hidden_matches = traitlets.Int(0).tag(sync=True)  # matching kernels the filters hide
    hide_kinds = traitlets.List(traitlets.Unicode()).tag(sync=True)
    hide_families = traitlets.List(traitlets.Unicode()).tag(sync=True)
    kind_options = traitlets.List().tag(sync=True)
    family_options = traitlets.List().tag(sync=True)
    collapse = traitlets.Bool(True).tag(sync=True)
    expanded = traitlets.List(traitlets.Unicode()).tag(sync=True)
    rankdir = traitlets.Unicode("TB").tag(sync=True)
    summary = traitlets.Dict().tag(sync=True)
    status = traitlets.Unicode("").tag(sync=True)
    render_ms = traitlets.Float(0.0)

    def _setup(self, export_dir: str | Path) -> None:
        self.export_dir = Path(export_dir)
        self._drawing: Any = None
        self._drawn: set[str] = set()
        self._ready = False

    def _start(self) -> None:
        self._ready = True
        self._redraw()
        self.on_msg(self._on_custom_msg)

    # -- drawing -----------------------------------------------------------------------------
    def _draw(self) -> Any:
        raise NotImplementedError

    def _redraw(self) -> None:
        t0 = time.perf_counter()
        self._drawing = self._draw()
        svg = self._drawing.svg()
        self.render_ms = (time.perf_counter() - t0) * 1e3
        self._drawn = {html.unescape(x) for x in _DRAWN_ID.findall(svg)}  # dot writes '-' as &#45;
        self.svg = svg[svg.find("<svg"):] if "<svg" in svg else svg
        self._after_redraw()

    def _after_redraw(self) -> None:
        pass

    @property
    def drawn_ids(self) -> set[str]:
        """Ids of the nodes the current drawing shows (model node ids, block ids, legend keys)."""
        return set(self._drawn)

    @traitlets.validate("rankdir")
    def _check_rankdir(self, proposal: dict[str, Any]) -> str:
        value = str(proposal["value"]).upper()
        if value not in RANKDIRS:
            raise InspectorError(f"rankdir must be one of {', '.join(RANKDIRS)}, not {proposal['value']!r}")
        return value

    @traitlets.observe("collapse", "expanded", "rankdir", "hide_kinds", "hide_families")
    def _on_layout_change(self, change: dict[str, Any]) -> None:
        if self._ready and change["old"] != change["new"]:
            self._redraw()

    @traitlets.observe("selected")
    def _on_selected(self, change: dict[str, Any]) -> None:
        if self.status.endswith("is not a node of this graph") or "of either graph" in self.status:
            self.status = ""
        self.details = self.details_for(change["new"])

    def details_for(self, node_id: str) -> dict[str, Any]:
        raise NotImplementedError

    # -- export ------------------------------------------------------------------------------
    def export(self, fmt: str, path: str | Path | None = None) -> Path:
        """Write the drawing as "svg", "png" or "dot" (its Graphviz source), or the graph as "json".

        Args:
            fmt: one of svg, png, dot, json.
            path: where to write; default `<export_dir>/<title>.<fmt>`.

        Returns:
            The path written.
        """
        fmt = fmt.lower().lstrip(".")
        if fmt not in EXPORT_FORMATS:
            raise InspectorError(f"cannot export {fmt!r}: choose one of {', '.join(EXPORT_FORMATS)}")
        out = Path(path) if path is not None else self.export_dir / f"{_safe_stem(self.title)}.{fmt}"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(self._export_bytes(fmt))
        self.status = f"saved {out} ({out.stat().st_size:,} bytes)"
        return out

    def _export_bytes(self, fmt: str) -> bytes:
        if fmt == "svg":
            return self.svg.encode("utf-8")
        if fmt == "png":
            return bytes(self._drawing.pipe("png"))
        if fmt == "dot":
            return str(self._drawing.source).encode("utf-8")
        return self._json().encode("utf-8")

    def _json(self) -> str:
        raise NotImplementedError

    def _on_custom_msg(self, _widget: Any, content: dict[str, Any], _buffers: Any) -> None:
        if not isinstance(content, dict) or content.get("event") != "export":
            return
        fmt = str(content.get("format", ""))
        try:
            out = self.export(fmt)
        except (GraphlabError, OSError) as exc:
            self.status = f"export failed: {exc}"
            return
        data = out.read_bytes()
        binary = fmt == "png"
        self.send({
            "event": "exported", "filename": out.name, "mime": EXPORT_FORMATS[fmt], "base64": binary,
            "data": base64.b64encode(data).decode("ascii") if binary else data.decode("utf-8"),
        })

    # -- static fallback ---------------------------------------------------------------------
    def static_png(self) -> bytes:
        """The current drawing as a PNG at `STATIC_PNG_DPI`, for viewers without a kernel."""
        return _run_dot(self._drawing.source, "png", f"-Gdpi={STATIC_PNG_DPI}", f"-Gsize={STATIC_PNG_MAX_INCHES}")

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        data, metadata = bundle
        data = dict(data)
        data["image/svg+xml"] = self.svg
        data["image/png"] = base64.b64encode(self.static_png()).decode("ascii")
        data["text/plain"] = repr(self)
        return data, metadata


class Inspector(_DrawingWidget):
    """A zoomable, clickable drawing of one CUDA graph, with details, search, filters and export.

    Every synced trait can be read and set from Python; the front end follows.

    Attributes:
        selected: id of the selected node ("graph_1_node_3"), a repeated block ("block_0"), or "".
        details: what the side panel shows for `selected` (kind, family, names, launch shape,
            copy bytes, predecessors, successors, position in topological order).
        search: text (case-insensitive substring, or a regex when `search_regex`) over kernel names.
        matches: ids of the drawn nodes that match `search`, in dump order; `hidden_matches`
            counts the matching kernels that the kind and family filters hide.
        hide_kinds, hide_families: node kinds and kernel families left out of the drawing.
        collapse: draw repeated blocks once; `expanded` lists the block ids drawn in full anyway.
        rankdir: "TB" (top to bottom) or "LR" (left to right).
        summary: node counts by kind and family, edges, longest chain, widest level.
        render_ms: how long the last layout took (Python side, `dot` included).
    """

    def __init__(
        self,
        graph: Any,
        *,
        title: str | None = None,
        collapse: bool = True,
        rankdir: str = "TB",
        export_dir: str | Path = ".",
    ) -> None:
        self.graph = as_cuda_graph(graph)
        self._facts = _GraphFacts(self.graph)
        self._setup(export_dir)
        super().__init__(title=title or _default_title(self.graph), collapse=collapse, rankdir=rankdir)
        self.kind_options = [{"name": k, "count": n} for k, n in self.graph.count_by_kind().items()]
        from graphlab.render.style import family_of  # the drawing's families: unknown ones are "other"

        families = Counter(family_of(n) or "other" for n in self.graph.kernels())
        self.family_options = [{"name": k, "count": n} for k, n in families.most_common()]
        self.summary = self._facts.summary_rows("summary")
        self._start()

    def _draw(self) -> Any:
        from graphlab.render.drawing import render

        return render(
            self.graph,
            collapse=self.collapse,
            expand=tuple(self.expanded),
            rankdir=self.rankdir,
            hide_kinds=tuple(self.hide_kinds),
            hide_families=tuple(self.hide_families),
            legend=True,
        )

    def _after_redraw(self) -> None:
        self._update_matches()

    def _json(self) -> str:
        return self.graph.to_json()

    def details_for(self, node_id: str) -> dict[str, Any]:
        """The side panel's content for a node or block id ({} for "" or an unknown id)."""
        if not node_id:
            return {}
        node_id = _EXPANDED_REPEAT.sub(r"\1", node_id)
        if node_id in self._facts.blocks:
            details = self._facts.block_details(node_id)
        else:
            try:
                details = self._facts.node_details(node_id)
            except KeyError:
                self.status = f"{node_id!r} is not a node of this graph"
                return {}
        details["expanded"] = details.get("block_id") in self.expanded
        details["can_toggle"] = self.collapse and "block_id" in details  # the expand/collapse button
        # a node folded into a collapsed repeat is outlined where it is drawn: its stand-in
        details["drawn_as"] = node_id if node_id in self._drawn else (self._stand_in(node_id) or "")
        return details

    # -- search ------------------------------------------------------------------------------
    @traitlets.observe("search", "search_regex")
    def _on_search(self, change: dict[str, Any]) -> None:
        self._update_matches()

    def find(self, pattern: str, *, regex: bool = False) -> list[str]:
        """Ids of all kernel nodes whose short, demangled or mangled name matches, in dump order.

        Raises:
            InspectorError: `regex` is True and `pattern` is not a valid regular expression.
        """
        if not pattern:
            return []
        if regex:
            try:
                rx = re.compile(pattern, re.IGNORECASE)
            except re.error as exc:
                raise InspectorError(f"bad regular expression {pattern!r}: {exc}") from None
            return [n.id for n in self.graph.kernels() if rx.search(_kernel_text(n))]
        needle = pattern.lower()
        return [n.id for n in self.graph.kernels() if needle in _kernel_text(n).lower()]

    def _update_matches(self) -> None:
        if not self._ready:
            return
        try:
            found = self.find(self.search, regex=self.search_regex)
        except InspectorError:
            self.search_error = "not a valid regex"
            self.hidden_matches = 0
            self.matches = []
            return
        self.search_error = ""
        drawn: list[str] = []
        hidden = 0
        for nid in found:  # a match inside a collapsed repeat lights up what stands for it
            target = nid if nid in self._drawn else self._stand_in(nid)
            if target is None:
                hidden += 1
            elif target not in drawn:
                drawn.append(target)
        self.hidden_matches = hidden
        self.matches = drawn

    def _stand_in(self, node_id: str) -> str | None:
        block_id = self._facts.block_of.get(node_id)
        if block_id is None:
            return None
        block = self._facts.blocks[block_id]
        _, offset = block.locate(node_id) or (0, 0)
        rep = block.representative[offset]  # same kind and family: hidden by the same filters
        return rep if rep in self._drawn else None

    def __repr__(self) -> str:
        s = self._facts.summary
        return f"<Inspector {self.title!r}: {s.nodes} nodes, {s.edges} edges, selected={self.selected or None!r}>"


class DiffInspector(_DrawingWidget):
    """Two graphs side by side, coloured by what changed (e.g. batch 1 vs batch 8 of one model).

    Grey: the same in both; pale yellow: the same kernel with another launch shape; yellow: another
    kernel; mint: only in B (added); orange: only in A (removed). Clicking a node shows it and its counterpart,
    whose outline lights up too. `result` holds the `GraphDiff` (`.rows()`, `.summary()`).
    Node ids in the drawing are "a-<node id>" and "b-<node id>".
    """

    def __init__(
        self,
        a: Any,
        b: Any,
        *,
        names: tuple[str, str] | None = None,
        title: str | None = None,
        collapse: bool = True,
        rankdir: str = "TB",
        export_dir: str | Path = ".",
    ) -> None:
        from graphlab.core.diff import diff

        self.a, self.b = as_cuda_graph(a), as_cuda_graph(b)
        self.result = diff(self.a, self.b, names=names)
        self._setup(export_dir)
        na, nb = self.result.names
        super().__init__(mode="diff", title=title or f"{na} vs {nb}", collapse=collapse, rankdir=rankdir)
        self.summary = self._summary()
        self._start()

    def _draw(self) -> Any:
        from graphlab.render.drawing import render_diff

        return render_diff(self.a, self.b, names=self.result.names, collapse=self.collapse, rankdir=self.rankdir)

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
            "rows": [[status, counts[status]] for status in ("same", "changed", "added", "removed")]
            + [["nodes", f"{len(self.a)} \u2192 {len(self.b)}"]],
            "tables": [
                [f"nodes by kind ({na} \u2192 {nb})",
                 [[k, f"{x} \u2192 {y}"] for k, (x, y) in d.count_by_kind().items()]],
                ["differences", [[f"{r['status']} \u00d7{r['count']}", _diff_text(r)] for r in rows[:40]]],
            ],
        }

    def details_for(self, node_id: str) -> dict[str, Any]:
        """Both sides of the pair a drawn node ("a-graph_1_node_3" or "b-...") belongs to."""
        self.matches = []
        side, _, raw = node_id.partition("-")
        if not node_id or side not in ("a", "b") or not raw:
            return {}
        if raw.startswith("block_"):
            return {"id": node_id, "label": "repeated block", "kind": "repeated block",
                    "note": "Drawn once, with the worst status of its repeats. Use collapse=False to see every node."}
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
        out["note"] = {
            "same": "The same in both graphs.",
            "changed": ("Changed (another kernel): " if kernel_changed else "Changed (same kernel, new launch shape): ")
            + "; ".join(match.changes),
            "added": f"Only in {self.result.names[1]} (added).",
            "removed": f"Only in {self.result.names[0]} (removed).",
        }[match.status]
        sides = []
        for label, g, nid, prefix in ((self.result.names[0], self.a, match.a_id, "a-"),
                                      (self.result.names[1], self.b, match.b_id, "b-")):
            if nid is None:
                continue
            node = g.node(nid).to_dict()
            node.pop("details", None)
            node.pop("name", None)
            sides.append({"title": label, **node})
            other = prefix + nid
            if other != node_id and other in self._drawn:
                self.matches = [other]
        out["sides"] = sides
        return out

    def __repr__(self) -> str:
        return f"<DiffInspector {self.title!r}: {self.result._headline()}>"


def _diff_text(row: dict[str, Any]) -> str:
    what = f"{row['a']} \u2192 {row['b']}" if row["a"] and row["b"] and row["a"] != row["b"] else row["a"] or row["b"]
    return f"{what} ({row['detail']})" if row["detail"] else what


def inspect_diff(a: Any, b: Any, **options: Any) -> DiffInspector:
    """The diff view of two graphs (e.g. batch 1 vs batch 8): see `DiffInspector`.

    Example:
        >>> rec = gl.load_recording("gpt")                             # doctest: +SKIP
        >>> gl.inspect_diff(rec.graph("b1"), rec.graph("b8"), names=("batch 1", "batch 8"))  # doctest: +SKIP
    """
    return DiffInspector(a, b, **options)


def _default_title(graph: CudaGraph) -> str:
    """"gpt/b1" for a recording's data/recordings/h200/gpt/b1.dot; the file name's stem otherwise."""
    path = Path(graph.source.replace("\\", "/"))
    if path.parent.name and len(path.stem) <= 4:
        return f"{path.parent.name}/{path.stem}"
    return path.stem or "graph"


def _safe_stem(title: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", title).strip("._") or "graph"


def inspect(graph: Any, *, compare: Any = None, **options: Any) -> Any:
    """Open the inspector on a graph, or on the difference of two graphs when `compare` is given.

    Args:
        graph: a `CudaGraph`, a captured graph (anything with `.graph`), or a .dot path.
        compare: a second graph; the widget then shows `inspect_diff(graph, compare)`.
        **options: `title`, `collapse`, `rankdir`, `export_dir` (see `Inspector`).

    Example:
        >>> rec = gl.load_recording("gpt")                       # doctest: +SKIP
        >>> gl.inspect(rec.graph("b1"))                          # doctest: +SKIP
        >>> gl.inspect(rec.graph("b1"), compare=rec.graph("b8")) # doctest: +SKIP
    """
    if compare is not None:
        return inspect_diff(graph, compare, **options)
    return Inspector(graph, **options)


__all__ = ["DiffInspector", "Inspector", "InspectorError", "as_cuda_graph", "inspect", "inspect_diff"]
