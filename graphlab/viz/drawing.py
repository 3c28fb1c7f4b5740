"""Draw a captured CUDA graph (or the difference between two) with Graphviz.

Imports graphlab.graph (the pure DAG model) and the `graphviz` Python package, no torch: it draws a
`CudaGraph`, or what any captured graph holds in `.graph` (`graphlab.viz.dag`). `Drawing.source` needs
nothing else; SVG and PNG need Graphviz's `dot` program (`apt-get install graphviz`).

    >>> import graphlab as gl
    >>> drawing = gl.render(gl.read_dot("gpt_b1.dot"))       # doctest: +SKIP
    >>> drawing                                             # doctest: +SKIP  (shows inline in Jupyter)
    >>> drawing.save("gpt_b1.svg")                          # doctest: +SKIP
"""
from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import graphviz

from graphlab.errors import BadInputError, GraphvizMissingError, UnsupportedError
from graphlab.graph.diff import GraphDiff
from graphlab.graph.model import CudaGraph, Graph, Node, NodeKind
from graphlab.graph.structure import RepeatedBlock, analyze, bridged_edges, find_repeated_blocks
from graphlab.present import duration, listing
from graphlab.viz import style
from graphlab.viz.banner import banner_text
from graphlab.viz.dag import GraphLike, dag_of
from graphlab.viz.heat import HeatScale, heat_of

COLLAPSE_MIN_SAVED_NODES = 4  # collapse a block only when that hides at least this many nodes
#: the most nodes a drawing holds (after collapsing and filters): past it, the first nodes in
#: topological order are drawn and the title says how many were left out. `dot` lays out 2,000 nodes
#: in about a second and the SVG stays under 3 MB; 5,000 take 2-3 s and 7 MB that a browser mounts slowly.
MAX_DRAWN_NODES = 2000
#: how long `dot` may lay out a drawing before graphlab gives up with a one-line error
DOT_TIMEOUT_S = 120.0
SAVE_FORMATS = {".svg": "svg", ".png": "png", ".gv": "gv", ".dot": "gv", ".pdf": "pdf"}
_TIMED_KINDS = (NodeKind.KERNEL, NodeKind.MEMCPY, NodeKind.MEMSET)  # what a profile times
_SLANTED = {"parallelogram", "trapezium", "hexagon", "house", "invhouse", "diamond", "cds", "cylinder"}



class Drawing:
    """A rendered graph: a `graphviz.Digraph` plus what was drawn.

    Shows itself inline in Jupyter as SVG, with a PNG fallback for viewers that refuse SVG.

    Attributes:
        digraph: the `graphviz.Digraph`.
        graph: the `CudaGraph` drawn (`None` for a diff drawing; see `diff`).
        blocks: every repeated block found (collapsed or expanded); `collapsed` holds the ids
            of those drawn once as an "xN" cluster.
        node_ids: model node ids drawn, in drawing order (for a diff: "a-<id>" / "b-<id>").
        diff: for `render_diff`, the `GraphDiff`.
        left_out: how many nodes were not drawn because the drawing reached `max_nodes`.
    """

    def __init__(
        self,
        digraph: graphviz.Digraph,
        *,
        graph: CudaGraph | None = None,
        blocks: Iterable[RepeatedBlock] = (),
        collapsed: Iterable[str] = (),
        node_ids: Iterable[str] = (),
        diff: GraphDiff | None = None,
    ):
        self.digraph = digraph
        self.graph = graph
        self.blocks = list(blocks)
        self.collapsed = list(collapsed)
        self.node_ids = list(node_ids)
        self.diff = diff
        self.left_out = 0  # nodes past render's max_nodes, not drawn
        self._piped: dict[str, bytes] = {}

    @property
    def source(self) -> str:
        """The DOT text (no `dot` program needed)."""
        return self.digraph.source

    def pipe(self, format: str = "svg", *, timeout_s: float | None = None) -> bytes:  # noqa: A002 - graphviz's name
        """The drawing in `format` ("svg", "png", "pdf", ...), laid out by `dot`. Cached.

        Raises GraphvizMissingError without `dot`, and UnsupportedError when `dot` fails or takes longer than
        `timeout_s` (default `DOT_TIMEOUT_S`).
        """
        if format not in self._piped:
            limit = DOT_TIMEOUT_S if timeout_s is None else timeout_s
            try:
                done = _run_dot(format, self.source, limit)
            except FileNotFoundError as exc:
                raise GraphvizMissingError() from exc
            except subprocess.TimeoutExpired:
                raise UnsupportedError(
                    f"Graphviz's dot took over {limit:g} s to lay out {len(self.node_ids):,} nodes: draw fewer "
                    "(collapse repeated blocks, hide kinds or families, a smaller max_nodes) or allow more time"
                ) from None
            if done.returncode != 0:
                last = (done.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
                raise UnsupportedError(f"Graphviz's dot could not draw this graph as {format}: {last}")
            self._piped[format] = done.stdout
        return self._piped[format]

    def svg(self) -> str:
        """The SVG text; each node's <g> carries the model node id and kind/family classes."""
        return self.pipe("svg").decode("utf-8")

    def save(self, path: str | Path, *, timeout_s: float | None = None) -> Path:
        """Write `.svg`, `.png`, `.pdf` or `.gv`/`.dot` (DOT source), chosen by the suffix (`timeout_s`: see `pipe`)."""
        out = Path(path)
        fmt = SAVE_FORMATS.get(out.suffix.lower())
        if fmt is None:
            raise BadInputError(f"cannot tell the format of {out}: use a name ending in .svg, .png, .pdf or .gv")
        if fmt == "gv":
            out.write_text(self.source, encoding="utf-8")
        else:
            out.write_bytes(self.pipe(fmt, timeout_s=timeout_s))
        return out

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        bundle: dict[str, Any] = {"text/plain": repr(self)}
        try:
            bundle["image/svg+xml"] = self.svg()
            bundle["image/png"] = self.pipe("png")
        except UnsupportedError as exc:  # no dot program, or dot failed: the text still says what it is
            bundle["text/plain"] += f"\n{exc}"
        if include:
            bundle = {k: v for k, v in bundle.items() if k in include}
        if exclude:
            bundle = {k: v for k, v in bundle.items() if k not in exclude}
        return bundle

    def __repr__(self) -> str:
        what = f"diff of {' and '.join(self.diff.names)}" if self.diff else (self.graph.source if self.graph else "graph")
        folded = f", {len(self.collapsed)} repeated block(s) collapsed" if self.collapsed else ""
        capped = f", {self.left_out:,} left out (max_nodes)" if self.left_out else ""
        return f"<Drawing of {what}: {len(self.node_ids):,} nodes drawn{folded}{capped}>"


def _run_dot(format: str, source: str, timeout_s: float) -> subprocess.CompletedProcess:  # noqa: A002
    """Graphviz's `dot` on `source` (graphviz.Digraph.pipe has no timeout)."""
    return subprocess.run(["dot", f"-T{format}"], input=source.encode("utf-8"), capture_output=True, timeout=timeout_s)


@dataclass(frozen=True)
class DrawOptions:
    """What `render` draws and how: its keywords as one value (`render` builds one; the inspector builds one for
    each redraw and hands it to `draw` with the repeated blocks it found already). Each field is `render`'s
    keyword of that name; the node ids, kinds and families may be given as any iterable of strings."""

    collapse: bool = True
    expand: frozenset[str] = frozenset()
    rankdir: str = "TB"
    highlight: frozenset[str] = frozenset()
    selected: str | None = None
    hide_kinds: frozenset[str] = frozenset()
    hide_families: frozenset[str] = frozenset()
    legend: bool = True
    max_nodes: int | None = MAX_DRAWN_NODES
    critical: bool = True

    def __post_init__(self) -> None:
        for name in ("expand", "highlight", "hide_kinds", "hide_families"):
            object.__setattr__(self, name, frozenset(str(v) for v in getattr(self, name)))


@dataclass
class _Options:
    """Everything `_Painter` needs to know besides the graph: a drawing's `DrawOptions` as the painter reads
    them (families as slugs, nodes folded into a collapsed block lit on their stand-in), and how a diff or a
    heat map paints."""

    collapse: bool = True
    expand: frozenset[str] = frozenset()
    highlight: frozenset[str] = frozenset()
    selected: str | None = None
    hide_kinds: frozenset[str] = frozenset()
    hide_families: frozenset[str] = frozenset()
    name_prefix: str = ""
    id_prefix: str = ""
    fill: Callable[[Node], str] | None = None
    tooltip_extra: Callable[[Node], str] | None = None  # a line added to each node's hover text (the heat map's time)
    extra_classes: Callable[[Node], list[str]] = field(default=lambda node: [])
    max_nodes: int | None = None  # draw at most this many nodes (None: all)
    blocks: list[RepeatedBlock] | None = None  # the graph's repeated blocks, when the caller found them already


class _Painter:
    """Emits one `CudaGraph` into a Graphviz (sub)graph: nodes, nested clusters, bridged edges."""

    def __init__(self, cg: CudaGraph, opts: _Options):
        self.cg, self.opts = cg, opts
        found = opts.blocks if opts.blocks is not None else None
        if opts.collapse and found is None:
            found = find_repeated_blocks(cg, min_saved_nodes=COLLAPSE_MIN_SAVED_NODES)
        self.blocks = list(found or []) if opts.collapse else []
        self.collapsed = [b for b in self.blocks if b.id not in opts.expand]
        self.block_at = {b.node_ids[0][0]: b for b in self.blocks}
        self.rep: dict[str, str] = {}  # collapsed-away node -> node drawn in its place
        self.where: dict[str, tuple[str, int]] = {}  # node in a collapsed block -> (block id, repeat)
        for b in self.collapsed:
            for r, nodes in enumerate(b.node_ids):
                for offset, nid in enumerate(nodes):
                    self.where[nid] = (b.id, r)
                    if r:
                        self.rep[nid] = b.node_ids[0][offset]
        self.hidden = {n.id for n in cg.nodes() if self._is_hidden(n)}
        self.drawn: list[str] = []
        self.drawn_graphs: list[Graph] = []
        self.families: set[str] = set()
        self.left_out = 0  # nodes past `max_nodes`, not drawn

    def _is_hidden(self, node: Node) -> bool:
        if node.kind.value in self.opts.hide_kinds:
            return True
        fam = style.family_of(node)
        return fam is not None and style.slug(fam) in self.opts.hide_families

    def name(self, node_id: str) -> str:
        return self.opts.name_prefix + node_id

    # -- nodes and clusters --------------------------------------------------------------
    def paint(self, target: graphviz.Digraph) -> None:
        self._graph(target, self.cg.root)
        self._edges(target)

    def _graph(self, target: graphviz.Digraph, graph: Graph) -> int:
        """Draw the nodes of `graph` (bodies nested); returns how many nodes were drawn."""
        self.drawn_graphs.append(graph)
        before = len(self.drawn)
        order = analyze(graph).order
        pos = 0
        while pos < len(order):
            block = self.block_at.get(order[pos])
            if block is None:
                self._node(target, order[pos])
                pos += 1
                continue
            self._block(target, block)
            pos += block.count * block.period
        return len(self.drawn) - before

    def _block(self, target: graphviz.Digraph, block: RepeatedBlock) -> None:
        pid = self.opts.id_prefix + block.id
        if block.id not in self.opts.expand:
            with target.subgraph(name=f"cluster_{self.opts.name_prefix}{block.id}") as sub:
                sub.attr(
                    # short, so that the arrow into the cluster's centre misses it
                    label=f'<<B>x{block.count}</B> <FONT POINT-SIZE="9">({block.period} nodes'
                          f'{self._block_time_text(block)})</FONT>>',
                    id=pid, tooltip=f"{style.block_words(block, self.blocks)}: these {block.period} nodes ran "
                    f"{block.count} times in a row; draw every repeat with render(..., expand=['{block.id}'])",
                    style="rounded,filled", fillcolor=style.BLOCK_FILL, color="#777777", penwidth="1.5",
                    labeljust="l", **{"class": "repeated-block collapsed"},
                )
                for nid in block.representative:
                    self._node(sub, nid)
            return
        for r, nodes in enumerate(block.node_ids):
            if block.period < 2:  # a cluster per single node would only add clutter
                for nid in nodes:
                    self._node(target, nid)
                continue
            with target.subgraph(name=f"cluster_{self.opts.name_prefix}{block.id}_{r}") as sub:
                sub.attr(
                    label=f"repeat {r + 1} of {block.count}", id=f"{pid}-{r}", style="rounded,dashed",
                    color="#999999", labeljust="l", fontsize="8", **{"class": "repeated-block expanded"},
                )
                for nid in nodes:
                    self._node(sub, nid)

    def _block_time_text(self, block: RepeatedBlock) -> str:
        total = getattr(self, "block_time", {}).get(block.id)
        return f", {total:,.1f} µs in all" if total else ""

    def _node(self, target: graphviz.Digraph, node_id: str) -> None:
        if node_id in self.hidden:
            return
        node = self.cg.node(node_id)
        if self.opts.max_nodes is not None and len(self.drawn) >= self.opts.max_nodes:
            self.left_out += 1 + sum(len(self.cg.graph(b).nodes) for b in node.body_graph_ids)
            return
        opts = self.opts
        classes = style.css_classes(node) + opts.extra_classes(node)
        attrs = {
            "id": opts.id_prefix + node.id,
            "shape": style.KIND_SHAPES.get(node.kind, "box"),
            "style": "filled,rounded" if node.kind is NodeKind.KERNEL else "filled",
            "fillcolor": opts.fill(node) if opts.fill else style.fill_color(node),
            "tooltip": style.tooltip(node, opts.tooltip_extra(node) if opts.tooltip_extra else ""),
        }
        if attrs["shape"] in _SLANTED:  # slanted shapes grow wide around their text: pad less
            attrs["margin"] = "0.02,0.01"
        dark = opts.fill is not None and style.is_dark(attrs["fillcolor"])  # the heat map's slowest nodes
        if dark:
            attrs["fontcolor"] = "white"
        if node.kind is NodeKind.EMPTY:
            attrs.update(label="", width="0.18", height="0.18", fixedsize="true")
        else:
            attrs["label"] = style.html_label(*style.label_lines(node), on_dark=dark)
        if node.kind is NodeKind.MEM_FREE:
            attrs["style"] = "filled,dashed"
        if node.id == opts.selected:
            attrs.update(color=style.SELECTED_COLOR, penwidth="4")
            classes.append("selected")
        elif node.id in opts.highlight:
            attrs.update(color=style.HIGHLIGHT_COLOR, penwidth="3")
            classes.append("highlighted")
        if node.id in self.where:
            classes.append("in-repeated-block")
        attrs["class"] = " ".join(classes)
        target.node(self.name(node.id), **attrs)
        self.drawn.append(node.id)
        fam = style.family_of(node)
        if fam is not None:
            self.families.add(fam)
        for position, body_id in enumerate(node.body_graph_ids):
            self._body(target, node, position, self.cg.graph(body_id))

    def _body(self, target: graphviz.Digraph, owner: Node, position: int, body: Graph) -> None:
        with target.subgraph(name=f"cluster_{self.opts.name_prefix}{body.id}") as sub:
            sub.attr(
                label=style.body_label(owner, position), id=self.opts.id_prefix + body.id,
                style="rounded,filled", fillcolor=style.BODY_FILL, color="#666666", labeljust="l",
                fontsize="9", **{"class": f"body body-of-{style.slug(owner.kind.value)}"},
            )
            if not self._graph(sub, body):  # Graphviz drops empty clusters: keep a visible stand-in
                sub.node(self.name(body.id + "_empty"), label="(empty)", shape="plaintext", fontsize="8",
                         id=self.opts.id_prefix + body.id + "_empty")

    # -- edges -------------------------------------------------------------------------------
    def _edges(self, target: graphviz.Digraph) -> None:
        drawn = set(self.drawn)
        for graph in self.drawn_graphs:
            edges: dict[tuple[str, str], bool] = {}  # (src, dst) -> drawn through hidden nodes only
            for src, dst, bridged in bridged_edges(graph, self.hidden):
                a, b = self.rep.get(src, src), self.rep.get(dst, dst)
                wa, wb = self.where.get(src), self.where.get(dst)
                if a == b or (wa and wb and wa[0] == wb[0] and wa[1] != wb[1]):
                    continue  # inside one collapsed block, between two of its repeats
                if a in drawn and b in drawn:
                    edges[(a, b)] = edges.get((a, b), True) and bridged
            for (a, b), bridged in edges.items():
                extra = {"style": "dashed", "tooltip": "through hidden nodes"} if bridged else {}
                target.edge(self.name(a), self.name(b), **extra)
            if graph.parent_node_id is not None and graph.parent_node_id in drawn:
                self._body_entry(target, graph, edges)

    def _body_entry(self, target: graphviz.Digraph, body: Graph, edges: dict[tuple[str, str], bool]) -> None:
        """Dashed arrows from the owning node to the first nodes of its body."""
        entered = {dst for _, dst in edges}
        drawn = set(self.drawn)
        firsts = [nid for nid in analyze(body).order if nid in drawn and nid not in entered]
        if not firsts and not any(n.id in drawn for n in body.nodes):
            firsts = [body.id + "_empty"]
        for nid in firsts:
            target.edge(self.name(body.parent_node_id or ""), self.name(nid), style="dashed", color="#666666",
                        arrowhead="empty", tooltip="runs the body")
        owner = self.cg.node(body.parent_node_id or "")
        if owner.conditional_type is not None and str(owner.conditional_type) == "WHILE":
            # the loop: after each iteration the WHILE node checks its condition again
            left = {src for src, _ in edges}
            lasts = [nid for nid in reversed(analyze(body).order) if nid in drawn and nid not in left][:1]
            for nid in lasts or [body.id + "_empty"]:
                target.edge(self.name(nid), self.name(owner.id), style="dashed", color="#666666",
                            arrowhead="empty", constraint="false", label="repeat?", fontsize="8",
                            fontname=style.FONT, tooltip="after each iteration, WHILE checks its condition again")


def _new_digraph(rankdir: str) -> graphviz.Digraph:
    if rankdir not in ("TB", "LR", "BT", "RL"):
        raise BadInputError(f"rankdir must be one of TB, LR, BT, RL, not {rankdir!r}")
    dot = graphviz.Digraph(name="graphlab")
    dot.attr("graph", rankdir=rankdir, fontname=style.FONT, fontsize="11", nodesep="0.25", ranksep="0.3",
             labelloc="t", labeljust="l", newrank="true", bgcolor="white")
    dot.attr("node", fontname=style.FONT, fontsize="10", color=style.LINE_COLOR, penwidth="1",
             height="0.3", margin="0.1,0.04")
    dot.attr("edge", color=style.EDGE_COLOR, arrowsize="0.6")
    return dot


def _as_cudagraph(graph: GraphLike, caller: str = "render()") -> CudaGraph:
    """The DAG to draw (`graphlab.viz.dag.dag_of`); an eager stand-in's UnsupportedError goes on as it is."""
    cg = dag_of(graph)
    if cg is None:
        raise BadInputError(f"{caller} takes a CudaGraph (from gl.read_dot or a recording), one Graph of it, or a "
                            f"captured graph (gl.capture, a GraphCache's graphs), not {type(graph).__name__}")
    return cg


def _source_name(cg: CudaGraph) -> str:
    return cg.source.replace("\\", "/").rsplit("/", 1)[-1]


def render(
    graph: GraphLike,
    *,
    collapse: bool = True,
    expand: Iterable[str] = (),
    rankdir: str = "TB",
    highlight: Iterable[str] = (),
    selected: str | None = None,
    hide_kinds: Iterable[str] = (),
    hide_families: Iterable[str] = (),
    legend: bool = True,
    max_nodes: int | None = MAX_DRAWN_NODES,
    heat: Any = None,
    critical: bool = True,
) -> Drawing:
    """Draw a captured CUDA graph: short labels, colour by kernel family, shape by node kind.

    How to read it:
      - Kernels are rounded boxes, coloured by family: cuBLAS light blue, CUTLASS light cyan,
        cuDNN mint, attention orange, ATen elementwise light yellow, ATen reduction pear green,
        ATen other pale olive, Triton pink, NCCL lavender, other grey (`style.FAMILY_COLOUR_WORDS`). The second line gives the
        grid and block (and dynamic shared memory when non-zero).
      - Other kinds are white: memcpy a parallelogram ("memcpy HtoD", bytes), memset a
        trapezium, host function a hexagon, child graph a 3-D box, conditional a diamond,
        event record / wait a house / inverted house, alloc / free a cylinder (free dashed),
        empty a small grey dot.
      - Child-graph and conditional bodies are nested clusters ("IF body (true)", "WHILE body",
        "SWITCH case 2"), entered by a dashed arrow from their owner.
      - A grey cluster marked "x12" is a block of nodes that ran 12 times in a row (say 12
        transformer layers), drawn once; pass its id (see `Drawing.blocks`) in `expand`.
      - Dashed edges stand for paths through hidden nodes.

    Args:
        graph: a `CudaGraph` (from `gl.read_dot` or a recording), one `Graph` of it, or a captured graph of any
            origin (`graphlab.capture.surface.Replayable`: live, recorded; an eager stand-in has no DAG and
            says so with `UnsupportedError`).
        collapse: draw repeated blocks once, as an "xN" cluster.
        expand: ids of blocks ("block_0") to draw in full even when `collapse` is on.
        rankdir: "TB" (top to bottom, default) or "LR", "BT", "RL".
        highlight: node ids to outline in red (e.g. search hits).
        selected: one node id to outline in thick black.
        hide_kinds: node kinds to leave out ("memset", "empty", ...); edges are bridged.
        hide_families: kernel families to leave out ("ATen elementwise", ...); edges are bridged.
        legend: add the colour legend.
        max_nodes: draw at most this many nodes, after collapsing and filters (default
            `MAX_DRAWN_NODES`, 2,000; None: no limit). Past it, the first nodes in topological order
            are drawn and the title says how many were left out (`Drawing.left_out`).
        heat: a `gl.profile` result (or a mapping node id -> µs): fill each node by its GPU time instead of its
            family (a log scale from the fastest node's time to the slowest's, the same whether blocks are collapsed
            or not; legend in µs; a collapsed block's node is filled by the mean over its repeats, its block's label
            gives their total; each node's hover text gives its time), with the critical path outlined (the highlight colour,
            red-orange) when `critical` is on; labels on the darkest fills are white.
        critical: with `heat`, outline the critical path.

    The keywords but `heat` make one `DrawOptions`; `draw(graph, options, heat=...)` takes that directly.

    Returns:
        A `Drawing`: `.source` (DOT), `.svg()`, `.pipe(format)`, `.save(path)`; shows inline in Jupyter.
    """
    options = DrawOptions(collapse=collapse, expand=frozenset(expand), rankdir=rankdir, highlight=frozenset(highlight),
                          selected=selected, hide_kinds=frozenset(hide_kinds), hide_families=frozenset(hide_families),
                          legend=legend, max_nodes=max_nodes, critical=critical)
    return draw(graph, options, heat=heat)


def draw(graph: GraphLike, options: DrawOptions = DrawOptions(), *, heat: Any = None,
         blocks: Iterable[RepeatedBlock] | None = None) -> Drawing:
    """`render` with its settings as one `DrawOptions`. `blocks`: the graph's repeated blocks if found already
    (`find_repeated_blocks(graph, min_saved_nodes=COLLAPSE_MIN_SAVED_NODES)`), so they are not searched for again."""
    cg = _as_cudagraph(graph)
    hide_kinds, hide_families = sorted(options.hide_kinds), sorted(options.hide_families)
    max_nodes, legend = options.max_nodes, options.legend
    opts = _Options(
        collapse=options.collapse,
        expand=options.expand,
        highlight=options.highlight,
        selected=options.selected,
        hide_kinds=options.hide_kinds,
        hide_families=frozenset(style.slug(f) for f in options.hide_families),
        max_nodes=max_nodes,
        blocks=None if blocks is None else list(blocks),
    )
    painter = _Painter(cg, opts)
    scale = None
    if heat is not None:
        scale, critical_ids = _heat_fill(painter, opts, heat, options.critical)
        opts.highlight = opts.highlight | critical_ids
    # highlighted / selected nodes folded into a collapsed block light up their stand-in
    opts.highlight = frozenset(painter.rep.get(n, n) for n in opts.highlight)
    if options.selected is not None:
        opts.selected = painter.rep.get(options.selected, options.selected)
    dot = _new_digraph(options.rankdir)
    painter.paint(dot)
    entries = [(f, c) for f, c in style.FAMILY_COLORS.items() if f in painter.families] if legend else []
    heading = "kernel family"
    if scale is not None:
        entries, heading = (scale.legend() if legend else []), "GPU time per replay"
    note = style.BLOCK_NOTE if legend and painter.collapsed else ""
    if not painter.drawn and len(cg) and (opts.hide_kinds or opts.hide_families):
        note = (f"{note}; " if note else "") + nothing_drawn_note(hide_kinds, hide_families)
    elif painter.hidden:  # say what the filters left out, so the drawing is not read as the whole graph
        note = (f"{note}; " if note else "") + hidden_note(len(painter.hidden), hide_kinds, hide_families)
    if painter.left_out:  # said even without the legend: the drawing is not the whole graph
        note = (f"{note}; " if note else "") + left_out_note(len(painter.drawn), painter.left_out, max_nodes)
    title = f"{_source_name(cg)}  ({len(cg):,} nodes)"
    recorded = banner_text()  # recorded mode: the drawing says its graph was recorded elsewhere
    if recorded:
        title = f"{title}, {recorded}"
    dot.attr(label=style.title_label(title, entries, heading=heading, note=note))  # last: not inherited
    drawing = Drawing(
        dot, graph=cg, blocks=painter.blocks, collapsed=[b.id for b in painter.collapsed], node_ids=painter.drawn
    )
    drawing.left_out = painter.left_out
    return drawing


def _heat_fill(painter: _Painter, opts: _Options, heat: Any, critical: bool) -> tuple[HeatScale, frozenset[str]]:
    """Fill by time: a collapsed block's drawn node stands for the same node of every repeat and is filled by
    their mean, on the same scale as every other node (its block's label gives the sum: filled by the sum, a
    12-layer block would be the darkest node and push the rest of the graph to pale); the critical path's drawn
    nodes are outlined (in the highlight colour, as `critical-path` in the SVG's classes)."""
    times = heat_of(heat)
    shown = dict(times)
    repeats = dict.fromkeys(times, 1)
    for hidden, rep in painter.rep.items():
        if hidden in times:
            shown[rep] = shown.get(rep, 0.0) + times[hidden]
            repeats[rep] = repeats.get(rep, 0) + 1
    shown = {nid: total / repeats.get(nid, 1) for nid, total in shown.items() if nid not in painter.rep}
    # over every node's own time, drawn or folded into a repeat: the legend's ends do not move when blocks are
    # collapsed or expanded (a collapsed node's mean lies between them)
    scale = HeatScale.of(times)
    opts.fill = lambda node: scale.color(shown.get(node.id))

    def time_line(node: Node) -> str:
        if node.id not in shown:
            return "GPU time: not measured" if node.kind in _TIMED_KINDS else ""
        if repeats.get(node.id, 1) > 1:
            own = f"; this repeat {duration(times[node.id])}" if node.id in times else ""
            return f"GPU time {duration(shown[node.id])} per replay, the mean of its {repeats[node.id]} repeats{own}"
        return f"GPU time {duration(shown[node.id])} per replay"

    opts.tooltip_extra = time_line
    on_path: frozenset[str] = frozenset()
    if critical and hasattr(heat, "critical_path"):
        on_path = frozenset(painter.rep.get(n, n) for n in heat.critical_path().node_ids)
    previous = opts.extra_classes
    opts.extra_classes = lambda node: previous(node) + (["critical-path"] if node.id in on_path else [])
    painter.block_time = {b.id: sum(times.get(n, 0.0) for rep in b.node_ids for n in rep) for b in painter.blocks}
    return scale, on_path


def _filters_words(hide_kinds: Iterable[str], hide_families: Iterable[str]) -> str:
    parts = []
    if hide_kinds:
        parts.append("kinds " + listing(sorted(hide_kinds)))
    if hide_families:
        parts.append("families " + listing(sorted(hide_families)))
    return " and ".join(parts)


def nothing_drawn_note(hide_kinds: Iterable[str], hide_families: Iterable[str]) -> str:
    """What a drawing whose every node is hidden says, and how to show nodes again."""
    return (f"no node drawn: every node is hidden ({_filters_words(hide_kinds, hide_families)} left out); tick a "
            "kind or family again, or pass fewer to hide_kinds / hide_families")


def hidden_note(hidden: int, hide_kinds: Iterable[str], hide_families: Iterable[str]) -> str:
    """"36 nodes hidden (families ATen elementwise and ATen other); dashed edges pass through them"."""
    return (f"{hidden:,} node{'s' if hidden != 1 else ''} hidden ({_filters_words(hide_kinds, hide_families)}); "
            "dashed edges pass through them")


def left_out_note(drawn: int, left_out: int, max_nodes: int | None) -> str:
    """What a capped drawing says about itself."""
    return (f"only the first {drawn:,} nodes are drawn ({left_out:,} more left out, max_nodes={max_nodes:,}): "
            "collapse repeated blocks, hide kinds or families, or raise max_nodes")


__all__ = ["COLLAPSE_MIN_SAVED_NODES", "DOT_TIMEOUT_S", "Drawing", "MAX_DRAWN_NODES", "SAVE_FORMATS",
           "left_out_note", "nothing_drawn_note", "render"]
