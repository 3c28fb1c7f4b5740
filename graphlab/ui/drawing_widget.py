"""What the graph and diff inspectors share: synced state, layout with `dot`, export, static picture.

The front end is `inspector.js` + `inspector.css`, bundled into the widget (no CDN). Both inspectors take
any graph `gl.render` draws (`graphlab.viz.dag`), and a .dot path.
"""
from __future__ import annotations

import base64
import html
import re
import subprocess
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from graphlab import present
from graphlab.clock import Stopwatch
from graphlab.errors import GraphlabError, GraphvizMissingError, InspectorError
from graphlab.graph.dot_parser import read_dot
from graphlab.graph.model import CudaGraph
from graphlab.viz.dag import GraphLike, dag_of

_HERE = Path(__file__).resolve().parent
_DRAWN_ID = re.compile(r'<g id="([^"]+)" class="(?:node|cluster[^"]*repeated)')
RANKDIRS = ("TB", "LR", "BT", "RL")
EXPORT_FORMATS = {"svg": "image/svg+xml", "png": "image/png", "dot": "text/vnd.graphviz", "json": "application/json"}
STATIC_PNG_DPI = 72  # the static picture in saved notebooks: enough to read, small enough to keep
STATIC_PNG_MAX_INCHES = "12,40"  # larger drawings are scaled down to fit (Graphviz `size`)
#: where exports go unless told: a folder beside the notebook (the kernel's working directory) that
#: the repository's .gitignore ignores, so exporting from the tutorial notebooks leaves the clone clean
DEFAULT_EXPORT_DIR = "graphlab-exports"


def as_cuda_graph(obj: GraphLike | str | Path) -> CudaGraph:
    """The `CudaGraph` to show: a graph, a captured graph of any origin (its `.graph`), or a .dot path.

    An eager stand-in has no DAG: the `UnsupportedError` its `.graph` raises goes on to the caller as it is.
    """
    cg = dag_of(obj)
    if cg is not None:
        return cg
    if isinstance(obj, (str, Path)) and str(obj).endswith((".dot", ".gv")):
        return read_dot(obj)
    if callable(getattr(obj, "graph", None)) and hasattr(obj, "graph_names"):  # a Recording: which graph?
        raise InspectorError(
            f"a recording holds several graphs: pass one, e.g. gl.inspect(rec.graph({obj.graph_names[0]!r})) "
            f"(it has {', '.join(obj.graph_names)})"
        )
    raise InspectorError(
        f"cannot inspect a {type(obj).__name__}: pass a CudaGraph (gl.parse_dot(text), "
        "gl.load_recording(name).graph(key)), a captured graph, or the path of a .dot file"
    )


def display_rows(d: dict[str, Any]) -> list[list[str]]:
    """The details panel's rows for one node (`node.to_dict()` plus the inspector's fields), in words, each value
    through `graphlab.present`: "grid" "2 x 12 x 1", "shared memory" "6.75 KiB". The front end shows them as they are;
    ids (for code) go in `code_rows`."""
    rows: list[list[str]] = []

    def add(label: str, value: Any) -> None:
        if value is not None and value != "" and value != []:
            rows.append([label, str(value)])

    add("kind", d.get("kind"))
    add("family", d.get("family"))
    add("grid", present.shape(tuple(d["grid"])) if d.get("grid") else None)
    add("block", present.shape(tuple(d["block"])) if d.get("block") else None)
    add("shared memory", present.size(d["shared_bytes"]) if d.get("shared_bytes") is not None else None)
    add("copy", d.get("copy_direction"))
    add("bytes copied", present.size(d["copy_bytes"]) if d.get("copy_bytes") is not None else None)
    add("bytes set", present.size(d["memset_bytes"]) if d.get("memset_bytes") is not None else None)
    add("value", d.get("memset_value"))
    add("condition", d.get("conditional_type"))
    add("bodies", d.get("bodies"))
    add("status", d.get("status"))
    add("GPU time", d.get("gpu_time"))
    add("module", d.get("module"))
    add("critical path", d.get("critical_path"))
    if d.get("topo_position"):
        add("topological order", f"{present.count(d['topo_position'])} of {present.count(d['topo_total'])}")
    if d.get("level") is not None:
        add("level", f"{present.count(d['level'])} (nodes on the longest chain before it)")
    add("graph", d.get("graph_words"))
    return rows


def _run_dot(source: str, fmt: str, *extra: str) -> bytes:
    """Lay out `source` with the `dot` binary; `InspectorError` with the fix when it is missing."""
    try:
        done = subprocess.run(["dot", f"-T{fmt}", *extra], input=source.encode(), capture_output=True, timeout=120)
    except FileNotFoundError:
        raise GraphvizMissingError() from None
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
    # the search text that `matches`, `hidden_matches` and `search_error` belong to: it changes with
    # every search answered, so the front end redraws the count and the dimming even when the
    # matches stay the same ([] for "qxqx", and [] again once the box is cleared)
    searched = traitlets.Unicode("").tag(sync=True)
    hidden_matches = traitlets.Int(0).tag(sync=True)  # matching kernels not drawn (filters, or past max_nodes)
    hide_kinds = traitlets.List(traitlets.Unicode()).tag(sync=True)
    hide_families = traitlets.List(traitlets.Unicode()).tag(sync=True)
    kind_options = traitlets.List().tag(sync=True)
    family_options = traitlets.List().tag(sync=True)
    collapse = traitlets.Bool(True).tag(sync=True)
    expanded = traitlets.List(traitlets.Unicode()).tag(sync=True)
    rankdir = traitlets.Unicode("TB").tag(sync=True)
    summary = traitlets.Dict().tag(sync=True)
    status = traitlets.Unicode("").tag(sync=True)
    #: what the details panel says before anything is clicked (the colours, in the words the drawing uses)
    hint = traitlets.Unicode("").tag(sync=True)
    #: said over the canvas when the drawing has nothing to show (every node hidden by the filters)
    notice = traitlets.Unicode("").tag(sync=True)
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
        with Stopwatch() as rendering:
            self._drawing = self._draw()
            svg = self._drawing.svg()
        self.render_ms = rendering.ms
        self._drawn = {html.unescape(x) for x in _DRAWN_ID.findall(svg)}  # dot writes '-' as &#45;
        self.svg = svg[svg.find("<svg"):] if "<svg" in svg else svg
        self._after_redraw()
        if self.selected:  # what the panel says depends on the drawing (collapsed or not): never left stale
            self.details = self.details_for(self.selected)

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
            path: where to write; default `<export_dir>/<title>.<fmt>` (`export_dir` defaults to
                `graphlab-exports/` in the working directory, which git ignores).

        Returns:
            The path written.
        """
        fmt = fmt.lower().lstrip(".")
        if fmt not in EXPORT_FORMATS:
            raise InspectorError(f"cannot export {fmt!r}: choose one of {', '.join(EXPORT_FORMATS)}")
        out = Path(path) if path is not None else self.export_dir / f"{_safe_stem(self.title)}.{fmt}"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(self._export_bytes(fmt))
        self.status = f"saved {out.resolve()} ({present.size(out.stat().st_size)})"  # the full path: say where
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


def _safe_stem(title: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", title).strip("._") or "graph"


__all__ = ["DEFAULT_EXPORT_DIR", "EXPORT_FORMATS", "RANKDIRS", "STATIC_PNG_DPI", "STATIC_PNG_MAX_INCHES",
           "as_cuda_graph", "display_rows"]
