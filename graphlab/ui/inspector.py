"""The interactive graph inspector: a captured CUDA graph you can zoom, click, search and filter.

Python does the work (layout with Graphviz's `dot`, node details, search, summary)
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

import re
from collections import Counter
from pathlib import Path
from typing import Any

import traitlets

from graphlab.graph import structure
from graphlab.graph.model import CudaGraph, Node
from graphlab.ui.diff_inspector import DiffInspector, inspect_diff
from graphlab.ui.drawing_widget import DEFAULT_EXPORT_DIR, InspectorError, _DrawingWidget, as_cuda_graph, display_rows
from graphlab.viz.dag import GraphLike
from graphlab.viz.drawing import COLLAPSE_MIN_SAVED_NODES, DrawOptions, draw, left_out_note, nothing_drawn_note
from graphlab.present import Code, Table, count, duration, facts, listing
from graphlab.viz.style import block_words, body_label, family_of

_EXPANDED_REPEAT = re.compile(r"^(block_\d+)-(\d+)$")  # one repeat of an expanded block
#: the most nodes the inspector draws unless told (max_nodes): half of a static drawing's
#: (`graphlab.viz.drawing.MAX_DRAWN_NODES`), so that even a drawing in full opens in about 1.5 s on
#: a 2-core machine and answers clicks at once (docs/inspector.md, "Speed")
INSPECTOR_MAX_NODES = 1000


def _default_title(graph: CudaGraph) -> str:
    """"gpt/b1" for a recording's data/recordings/h200/gpt/b1.dot; the file name's stem otherwise."""
    path = Path(graph.source.replace("\\", "/"))
    if path.parent.name and len(path.stem) <= 4:
        return f"{path.parent.name}/{path.stem}"
    return path.stem or "graph"


def _pairs(counts: dict[str, int]) -> list[list[Any]]:
    return [[k, v] for k, v in counts.items()]


def _conditional_note(node: Node, setters: list[str], bodies: list[str]) -> str:
    """How a conditional node decides, and which body is which, for the details panel."""
    ctype = str(node.conditional_type)
    when = ("before the node and again at the end of every iteration" if ctype == "WHILE" else "before the node")
    by = f" (here: {listing(setters)})" if setters else ""
    article = "An" if ctype[:1] in "AEIOU" else "A"
    return (f"{article} {ctype} node: at every launch the GPU reads its condition handle, which device code sets {when}"
            f"{by}. Bodies: {'; '.join(bodies) or 'none'}.")


class _GraphFacts:
    """What the inspector needs to know about one graph, computed once: blocks, neighbours, order."""

    def __init__(self, graph: CudaGraph):
        self.graph = graph
        # the same blocks, with the same ids, as the drawing collapses
        found = structure.find_repeated_blocks(graph, min_saved_nodes=COLLAPSE_MIN_SAVED_NODES)
        self.found = found  # handed to the drawing, which would otherwise search for them again
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

    def block_words(self, block_id: str) -> str:
        """"the repeated block (3 x 14 nodes)": how a person reads a block (its id is for code)."""
        return block_words(self.blocks[block_id], list(self.blocks.values()))

    def _body_words(self, owner: Node, position: int, body_id: str) -> str:
        """"IF body (true), 3 nodes": a body graph in words."""
        n = len(self.graph.graph(body_id).nodes)
        return f"{body_label(owner, position)}, {count(n)} node{'' if n == 1 else 's'}"

    def node_details(self, node_id: str, *, collapsed: bool = True) -> dict[str, Any]:
        """Everything the details panel shows for one node, JSON-ready. `collapsed`: the node's repeated block (if
        any) is drawn once for all its repeats (collapse on, block not expanded), which the note says."""
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
        notes = []
        if node.graph_id != self.graph.root.id:
            parent_id = self.graph.graph(node.graph_id).parent_node_id
            if parent_id:
                owner = self.graph.node(parent_id)
                where = body_label(owner, list(owner.body_graph_ids).index(node.graph_id))
                out["graph_words"] = f"{where} of {owner.label}"
                notes.append(f"Inside the {where} of the {owner.label} node.")
            else:
                out["graph_words"] = "a body graph"
                notes.append("Inside a body graph.")
        if node.body_graph_ids:
            out["bodies"] = "; ".join(self._body_words(node, i, b) for i, b in enumerate(node.body_graph_ids))
        if node.conditional_type is not None:
            notes.append(_conditional_note(node, [p["label"] for p in out["predecessors"]],
                                           [self._body_words(node, i, b) for i, b in enumerate(node.body_graph_ids)]))
        block_id = self.block_of.get(node_id)
        if block_id is not None:
            block = self.blocks[block_id]
            repeat, offset = block.locate(node_id) or (0, 0)
            out["block_id"] = block_id
            words = self.block_words(block_id)
            if collapsed:
                notes.append(f"Node {offset + 1} of {block.period} of {words}, which is drawn once for its "
                             f"{block.count} repeats; this one is in repeat {repeat + 1} of {block.count}. Expand the block to draw "
                             "every repeat.")
            else:
                notes.append(f"Node {offset + 1} of {block.period} in repeat {repeat + 1} of {block.count} of {words}; "
                             "every repeat is drawn.")
        if notes:
            out["note"] = " ".join(notes)
        return out

    def block_details(self, block_id: str, *, collapsed: bool = True, repeat: int | None = None) -> dict[str, Any]:
        """The details panel for a repeated block: drawn as one node (`collapsed`), or one of its repeats drawn in
        full (`repeat`, counted from 0)."""
        block = self.blocks[block_id]
        first = [self.brief(nid) for nid in (block.node_ids[repeat] if repeat is not None else block.representative)]
        words = self.block_words(block_id)
        if collapsed:
            note = (f"{block.count} repeats of {block.period} nodes ({count(block.count * block.period)} in all), e.g. one "
                    "per transformer layer, drawn once. Expand it to see every node.")
        else:
            where = f"Repeat {repeat + 1} of {block.count}: " if repeat is not None else ""
            note = (f"{where}{block.count} repeats of {block.period} nodes ({count(block.count * block.period)} in all), "
                    "every repeat drawn.")
        return {
            "id": block_id,
            "label": words[0].upper() + words[1:],
            "kind": "repeated block",
            "graph_id": block.graph_id,
            "block_id": block_id,
            "note": note,
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
                *_origin_rows(getattr(self.graph, "metadata", None) or {}),
            ],
            "tables": [["nodes by kind", _pairs(s.by_kind)], ["kernels by family", _pairs(s.by_family)]],
        }


def _origin_rows(metadata: dict[str, Any]) -> list[list[Any]]:
    """Where the graph came from (a multi-GPU recording's rank and device), as summary rows."""
    rows = []
    if "rank" in metadata:
        world = metadata.get("world_size")
        rows.append(["rank", f"{metadata['rank']} of {world}" if world is not None else metadata["rank"]])
    if "device" in metadata:
        rows.append(["device", metadata["device"]])
    return rows


def _main_module(modules: list[tuple[str, ...] | list[str]]) -> str:
    """The deepest dotted module path that more than half of these nodes (each with its modules) lie in:
    "blocks.1" for a repeat of blocks.1.ln1, blocks.1.qkv, ... and one add of blocks.0; "" if there is none."""
    counts: Counter[str] = Counter()
    for names in modules:
        counts.update({".".join(name.split(".")[:depth]) for name in names
                       for depth in range(1, name.count(".") + 2)})
    most = [path for path, n in counts.items() if 2 * n > len(modules)]
    return max(most, key=lambda path: (path.count("."), path), default="")


def _kernel_text(node: Node) -> str:
    return "\n".join(x for x in (node.short_name, node.demangled_name, node.name) if x)


class Inspector(_DrawingWidget):
    """A zoomable, clickable drawing of one CUDA graph, with details, search, filters and export.

    Every synced trait can be read and set from Python; the front end follows.

    Attributes:
        selected: id of the selected node ("graph_1_node_3"), a repeated block ("block_0"), or "".
        details: what the side panel shows for `selected` (kind, family, names, launch shape,
            copy bytes, predecessors, successors, position in topological order).
        search: text (case-insensitive substring, or a regex when `search_regex`) over kernel names.
        matches: ids of the drawn nodes that match `search`, in dump order; `hidden_matches`
            counts the matching kernels not drawn (filters, or past `max_nodes`); `searched` is the
            search text they were found for (the front end shows the count and dims the rest by it).
        hide_kinds, hide_families: node kinds and kernel families left out of the drawing.
        collapse: draw repeated blocks once; `expanded` lists the block ids drawn in full anyway.
        rankdir: "TB" (top to bottom) or "LR" (left to right).
        summary: node counts by kind and family, edges, longest chain, widest level.
        render_ms: how long the last layout took (Python side, `dot` included).
        export_dir: where `export()` and the export buttons write: by default `graphlab-exports/`
            in the kernel's working directory (beside the notebook), which git ignores.
        max_nodes: the most nodes drawn (default `INSPECTOR_MAX_NODES`, 1,000; 0: no limit): past it the
            first nodes in topological order are drawn and the status line says how many were left
            out; search counts matches left out as not drawn.
    """

    def __init__(
        self,
        graph: GraphLike | str | Path,
        *,
        title: str | None = None,
        collapse: bool = True,
        rankdir: str = "TB",
        export_dir: str | Path = DEFAULT_EXPORT_DIR,
        max_nodes: int | None = None,
        profile: Any = None,
    ) -> None:
        self.graph = as_cuda_graph(graph)
        self.profile = profile  # a gl.profile result: heat map, critical path, times and modules in the details
        self._times = {n.node_id: n for n in profile.nodes} if profile is not None else {}
        self._critical = set(profile.critical_path().node_ids) if profile is not None else set()
        self.max_nodes = INSPECTOR_MAX_NODES if max_nodes is None else (max_nodes or None)
        self._facts = _GraphFacts(self.graph)
        self._setup(export_dir)
        super().__init__(title=title or _default_title(self.graph), collapse=collapse, rankdir=rankdir)
        self.kind_options = [{"name": k, "count": n} for k, n in self.graph.count_by_kind().items()]
        # the drawing's families: unknown ones are "other"
        families = Counter(family_of(n) or "other" for n in self.graph.kernels())
        self.family_options = [{"name": k, "count": n} for k, n in families.most_common()]
        self.summary = self._facts.summary_rows("summary")
        self.hint = ("Click a node to see its details; the colours are kernel families (the legend above the "
                     "drawing). Drag to pan, scroll to zoom." if profile is None else
                     "Click a node to see its GPU time and module; darker is slower (the legend above the drawing), "
                     "the critical path is outlined. Drag to pan, scroll to zoom.")
        self._start()

    def _draw(self) -> Any:
        options = DrawOptions(collapse=self.collapse, expand=frozenset(self.expanded), rankdir=self.rankdir,
                              hide_kinds=frozenset(self.hide_kinds), hide_families=frozenset(self.hide_families),
                              max_nodes=self.max_nodes)
        return draw(self.graph, options, heat=self.profile, blocks=self._facts.found)

    def _after_redraw(self) -> None:
        left_out = getattr(self._drawing, "left_out", 0)
        if left_out:
            self.status = left_out_note(len(self._drawing.node_ids), left_out, self.max_nodes)
        elif self.status.startswith(("only the first", "no node drawn")):
            self.status = ""
        nothing = not self._drawing.node_ids and len(self.graph) and (self.hide_kinds or self.hide_families)
        self.notice = nothing_drawn_note(self.hide_kinds, self.hide_families) if nothing else ""
        if self.notice:
            self.status = self.notice
        self._update_matches()

    def _json(self) -> str:
        return self.graph.to_json()

    def _is_collapsed(self, block_id: str | None) -> bool:
        """Whether a block is drawn once for all its repeats now (collapse on and the block not expanded)."""
        return bool(block_id) and self.collapse and block_id not in self.expanded

    def details_for(self, node_id: str) -> dict[str, Any]:
        """The side panel's content for a node or block id ({} for "" or an unknown id)."""
        if not node_id:
            return {}
        repeat_match = _EXPANDED_REPEAT.match(node_id)
        repeat = int(repeat_match.group(2)) if repeat_match else None
        node_id = repeat_match.group(1) if repeat_match else node_id
        if node_id in self._facts.blocks:
            details = self._facts.block_details(node_id, collapsed=self._is_collapsed(node_id), repeat=repeat)
        else:
            try:
                details = self._facts.node_details(node_id,
                                                   collapsed=self._is_collapsed(self._facts.block_of.get(node_id)))
            except KeyError:
                self.status = f"{node_id!r} is not a node of this graph"
                return {}
        timed = self._times.get(node_id)
        if timed is not None:
            if timed.median_us is not None:
                details["gpu_time"] = (f"{duration(timed.median_us)} median (p10 {duration(timed.p10_us)}, p90 "
                                       f"{duration(timed.p90_us)}), starts at {duration(timed.start_us)}")
            elif timed.kind in ("kernel", "memcpy", "memset"):
                details["gpu_time"] = "not matched in the trace"
            details["module"] = ", ".join(timed.modules)
            details["critical_path"] = "yes" if node_id in self._critical else ""
        elif self.profile is not None and node_id in self._facts.blocks:
            block = self._facts.blocks[node_id]
            total = sum(self._times[n].median_us or 0.0 for n in block.all_node_ids() if n in self._times)
            details["gpu_time"] = f"{duration(total)} in all {block.count} repeats"
            details["module"] = self._repeat_modules(block)
        details["expanded"] = details.get("block_id") in self.expanded
        # the expand/collapse button: only while repeats are collapsed (collapse on)
        details["can_toggle"] = self.collapse and "block_id" in details
        # a node folded into a collapsed repeat is outlined where it is drawn: its stand-in
        details["drawn_as"] = node_id if node_id in self._drawn else (self._stand_in(node_id) or "")
        details["rows"] = display_rows(details)
        details["code"] = node_id  # what code selects it by (w.selected = ...), shown under "for code"
        return details

    def _repeat_modules(self, block: structure.RepeatedBlock) -> str:
        """The modules a block's repeats ran in, as the profile recorded them at capture: "model.layers.0 to
        model.layers.31, one per repeat" when most of each repeat's nodes lie in a module of its own ("" when they
        do not, or none is known). The block itself is found from the kernels alone
        (`graph.structure.find_repeated_blocks`): every graph has them, a DOT dump no module names. So a repeat
        may start a node or two before its layer's module (the residual add that ends the layer before it)."""
        owners = []
        for repeat in block.node_ids:
            owner = _main_module([self._times[n].modules for n in repeat if n in self._times])
            if not owner:
                return ""
            owners.append(owner)
        if len(set(owners)) != len(owners):
            return ""
        return f"{owners[0]} to {owners[-1]}, one per repeat" if len(owners) > 1 else owners[0]

    def details_table(self, node_id: str | None = None) -> Table:
        """What the details panel shows for `node_id` (default: the selected node), as a table for a notebook: the
        node's name, its full kernel name, its rows (kind, family, launch shape, ...), what it waits for and what
        waits for it; the panel's note under it, and where it stands among the search's matches.

        Raises:
            InspectorError: nothing is selected, or `node_id` is no node of this graph.
        """
        node_id = self.selected if node_id is None else node_id
        d = self.details if node_id == self.selected else self.details_for(node_id)
        if not d:
            raise InspectorError("nothing selected: set w.selected to a node id (e.g. w.matches[0] after a search), or "
                                 "pass one: w.details_table(node_id)")
        pairs: list[tuple[str, Any]] = [("node", d.get("label", ""))]
        if d.get("demangled_name") and d["demangled_name"] != d.get("label"):
            pairs.append(("full kernel name", Code(d["demangled_name"])))
        pairs += [(k, v) for k, v in d.get("rows", [])]
        for key, what in (("predecessors", "waits for"), ("successors", "runs before")):
            if key in d:
                labels = [item["label"] for item in d[key]]
                pairs.append((what, listing(labels) if labels else "nothing (it starts the graph)"
                              if key == "predecessors" else listing(labels) if labels else "nothing (it ends the graph)"))
        notes = [d["note"]] if d.get("note") else []
        matches = list(self.matches)
        shown = d.get("drawn_as") or node_id
        if self.searched and shown in matches:
            notes.append(f"Match {matches.index(shown) + 1} of the {count(len(matches))} drawn nodes that match "
                         f"“{self.searched}”.")
        return facts(pairs, title=f"{d.get('label', '')}: what the details panel shows", notes=notes)

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
            return [n.id for n in self.graph.kernels() if rx.search(self._search_text(n))]
        needle = pattern.lower()
        return [n.id for n in self.graph.kernels() if needle in self._search_text(n).lower()]

    def _search_text(self, node: Node) -> str:
        """What search looks in: the kernel's names, and its module(s) when a profile gives them."""
        timed = self._times.get(node.id)
        return _kernel_text(node) + (" " + " ".join(timed.modules) if timed is not None and timed.modules else "")

    def _update_matches(self) -> None:
        if not self._ready:
            return
        with self.hold_sync():  # one message: matches, count and error arrive together with `searched`
            try:
                found = self.find(self.search, regex=self.search_regex)
            except InspectorError:
                self.search_error = "not a valid regex"
                self.hidden_matches = 0
                self.matches = []
                self.searched = self.search
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
            self.searched = self.search

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
        chosen = "no node selected"
        if self.selected:
            try:
                chosen = f"selected: {self._facts.graph.node(self.selected).label}"
            except KeyError:
                chosen = "a node selected"
        return f"<Inspector of {self.title}: {count(s.nodes)} nodes, {count(s.edges)} edges; {chosen}>"


def inspect(graph: GraphLike | str | Path, *, compare: GraphLike | str | Path | None = None,
            **options: Any) -> Inspector | DiffInspector:
    """Open the inspector on a graph, or on the difference of two graphs when `compare` is given.

    Args:
        graph: a `CudaGraph`, a captured graph of any origin (`graphlab.capture.surface.Replayable`: live or
            recorded; an eager stand-in has no DAG and says so with `UnsupportedError`), or a .dot path.
        compare: a second graph; the widget then shows `inspect_diff(graph, compare)`.
        **options: `title`, `collapse`, `rankdir`, `export_dir`, `max_nodes`, `profile` (a `gl.profile` result:
            nodes coloured by GPU time, the critical path outlined, times and modules in the details, modules
            searchable; see `Inspector`).

    Example:
        >>> rec = gl.load_recording("gpt")                       # doctest: +SKIP
        >>> gl.inspect(rec.graph("b1"))                          # doctest: +SKIP
        >>> gl.inspect(rec.graph("b1"), compare=rec.graph("b8")) # doctest: +SKIP
    """
    if compare is not None:
        return inspect_diff(graph, compare, **options)
    return Inspector(graph, **options)


__all__ = ["DiffInspector", "Inspector", "InspectorError", "as_cuda_graph", "inspect", "inspect_diff"]
