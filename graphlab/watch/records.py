"""What `gl.watch` keeps of each captured graph, and the summary of many.

    >>> seen[0]                          # WatchedGraph: who, when, where, cost, and the DOT
    >>> seen[0].graph                    # the parsed DAG (a gl.CudaGraph): gl.render / gl.inspect / gl.diff
    >>> seen.summary()                   # graphs, nodes and pool memory by library and input shapes
    >>> seen.to_pandas()                 # one row per graph

The `watch` recording (`graphlab record --models watch`) reads back as `gl.load(WatchCases)` (the worked cases and
the graphs the watch saw), `gl.load(WatchComparison)` (torch.compile's graphs against gl.capture's) and
`gl.load(WatchOverhead)` (the watch's replay overhead, measured).

Pure Python (no torch): recordings load into the same objects on a machine without a GPU.
"""
from __future__ import annotations

import threading
import weakref
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Iterable, Iterator, Mapping, Sequence, overload

from graphlab import present
from graphlab.errors import BadInputError, GraphlabError, RecordingError, UnsupportedError
from graphlab.present import Code, Column, Table
from graphlab.recordings import made_on
from graphlab.results_types import keep_known, recorded_result
from graphlab.watch.frames import TORCH_CUDA_GRAPH
from graphlab.watch.kernel_modules import node_modules
from graphlab.present import ShownAsTable

#: the columns of `WatchedGraphs.rows()` / `to_pandas()`
ROW_COLUMNS = ("index", "library", "role", "input_shapes", "nodes", "kernels", "capture_ms", "pool_bytes",
               "pool_reserved_bytes", "pool_id", "device", "stream_id", "where", "captured_at")


def shapes_text(shapes: Sequence[Sequence[int]] | None) -> str:
    """[[8, 64], [64]] -> "8x64, 64"; None -> "?" (not knowable for this library)."""
    if shapes is None:
        return "?"
    return ", ".join("x".join(str(d) for d in s) if s else "scalar" for s in shapes) or "none"


def shapes_words(shapes: Sequence[Sequence[int]] | None) -> str | None:
    """[[8, 64], [64]] -> "8 x 64, 64" (shapes as a person reads them); None when not knowable."""
    if shapes is None:
        return None
    return ", ".join(present.shape(s) for s in shapes) or "none"


#: what a dash means in a watched graph's columns
NO_SHAPES = ("not knowable from outside the library (a pool keeper reads no input; a `torch.cuda.graph` block "
             "may read any tensor)")
NO_ROLE = "the library gives its graphs no role"
NO_DOT = "no DOT to count in"


def _origin(g: WatchedGraph) -> Any:
    """The user's line that led to a capture, as code ("`out = compiled(ids)`"); its file and line where the code
    was not read; None when every frame was library code."""
    if g.user_code:
        return Code(g.user_code)
    return g.where or None


def _pool_labels(graphs: Iterable[WatchedGraph]) -> dict[tuple[int, ...], int]:
    """torch's pool id -> 1, 2, ... in order of first capture (the same number: one shared pool)."""
    labels: dict[tuple[int, ...], int] = {}
    for g in graphs:
        if g.pool_id is not None:
            labels.setdefault(tuple(g.pool_id), len(labels) + 1)
    return labels


@dataclass
class WatchedGraph:
    """One CUDA graph some library captured while a watch was open.

    Attributes:
        index: its place in the watch (0 = first captured).
        library: who captured it ("torch.compile (CUDAGraph Trees)", "make_graphed_callables",
            "torch.cuda.graph", "graphlab", a package name, or "CUDAGraph.capture_begin").
        role: "recording" (a CUDAGraph Trees recording), "pool keeper" (the empty graph CUDAGraph
            Trees captures to keep its memory pool alive), "forward"/"backward" (make_graphed_callables),
            or None.
        input_shapes: shapes of the tensors the graph reads, where the library's frame shows them
            (weights left out); None where not knowable (a `torch.cuda.graph` block reads anything).
        user_file, user_line, user_function, user_code: the user's line that led to the capture (the
            innermost frame outside torch, graphlab and installed packages); None if there was none.
        captured_at: UTC time of capture_begin. device: "cuda:0". stream_id: torch's id of the
            capture stream; stream_is_default: True if it was the default stream.
        capture_ms: host time from capture_begin to capture_end. instantiate_ms: the instantiate
            graphlab did in the library's place (None where the caller instantiates itself).
        pool_id: the graph's memory pool id; pool_given: a pool was passed in (shared).
        pool_bytes: growth of `torch.cuda.memory_reserved()` over the capture: what the pool took
            from the device (0 when a shared pool already had room).
        pool_reserved_bytes: what the graph's pool held right after capture (all its segments, so
            for a shared pool also what warm-up and earlier graphs put there); None if unknown.
        dot: the DOT text (cudaGraphDebugDotPrint), or None with `dot_error` saying why.
        details: library specifics (CUDAGraph Trees: tree_graph_id, compile_id, static_inputs).
        node_modules: torch.compile graphs: kernel node id -> the modules (dotted paths relative to the compiled
            module) of the FX nodes Inductor fused into that kernel, read from Inductor's provenance record while
            the watch was open (graphlab/watch/kernel_modules.py); None where not known, `node_modules_note` says
            why, or how the nodes were matched ("by launch", "by name").
    """

    index: int
    library: str
    dot: str | None = None
    role: str | None = None
    input_shapes: list[list[int]] | None = None
    user_file: str | None = None
    user_line: int | None = None
    user_function: str | None = None
    user_code: str | None = None
    captured_at: str = ""
    device: str = ""
    stream_id: int | None = None
    stream_is_default: bool | None = None
    capture_error_mode: str | None = None
    capture_ms: float | None = None
    instantiate_ms: float | None = None
    dot_ms: float | None = None
    pool_id: list[int] | None = None
    pool_given: bool | None = None
    pool_bytes: int | None = None
    pool_reserved_bytes: int | None = None
    keep_graph_asked: bool | None = None
    dot_error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    node_modules: dict[str, list[str]] | None = None
    node_modules_note: str | None = None
    _torch_graph: Any = field(default=None, repr=False, compare=False)
    _parsed: Any = field(default=None, repr=False, compare=False)
    #: where and when a graph loaded from a recording was captured ("Recorded on NVIDIA H200 ..."); None live
    _recorded: str | None = field(default=None, repr=False, compare=False)

    # -- the graph ---------------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        """A short label for tables, drawings and diffs: "torch.compile (CUDAGraph Trees) #2 [8x64]"."""
        shapes = "" if self.input_shapes is None else f" [{shapes_text(self.input_shapes)}]"
        return f"{self.library} #{self.index}{shapes}"

    @property
    def graph(self) -> Any:
        """The parsed DAG (`gl.CudaGraph`), what gl.render, gl.inspect and gl.diff read."""
        if self._parsed is None:
            if self.dot is None:
                raise UnsupportedError(f"watched graph #{self.index} ({self.library}) has no DOT: {self.dot_error}")
            from graphlab.graph.dot_parser import parse_dot

            self._parsed = parse_dot(self.dot, source=self.name.replace("/", "|"))
        return self._parsed

    @property
    def torch_graph(self) -> Any:
        """The live `torch.cuda.CUDAGraph`, or None once the library freed it (or from a recording)."""
        ref = self._torch_graph
        return ref() if isinstance(ref, weakref.ref) else ref

    @property
    def nodes(self) -> int | None:
        """Node count, or None without a readable DOT (`.graph` says why)."""
        parsed = self._graph_or_none()
        return None if parsed is None else len(parsed)

    @property
    def kernels(self) -> int | None:
        parsed = self._graph_or_none()
        return None if parsed is None else len(parsed.kernels())

    def _graph_or_none(self) -> Any:
        if self.dot is None:
            return None
        try:
            return self.graph
        except GraphlabError:  # e.g. the empty graph CUDAGraph Trees keeps its pool alive with
            return None

    @property
    def where(self) -> str:
        """ "serve.py:12" (the user's line), or "" when every frame was library code."""
        return f"{self.user_file}:{self.user_line}" if self.user_file else ""

    # -- persistence ------------------------------------------------------------------------------------
    def to_dict(self, include_dot: bool = True) -> dict[str, Any]:
        """JSON-ready fields (the DOT too unless `include_dot=False`)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if not f.name.startswith("_")}
        if not include_dot:
            out.pop("dot")
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WatchedGraph:
        missing = {"index", "library"} - set(data)
        if missing:
            raise RecordingError(f"a watched graph needs {', '.join(sorted(missing))}; got {sorted(data)}")
        return cls(**{k: v for k, v in keep_known(cls, data).items() if not k.startswith("_")})

    def row(self) -> dict[str, Any]:
        return {"index": self.index, "library": self.library, "role": self.role,
                "input_shapes": shapes_text(self.input_shapes), "nodes": self.nodes, "kernels": self.kernels,
                "capture_ms": None if self.capture_ms is None else round(self.capture_ms, 3),
                "pool_bytes": self.pool_bytes, "pool_reserved_bytes": self.pool_reserved_bytes,
                "pool_id": None if self.pool_id is None else tuple(self.pool_id),
                "device": self.device, "stream_id": self.stream_id, "where": self.where,
                "captured_at": self.captured_at}

    def facts(self) -> Table:
        """What the watch saw of this graph, in words: who captured it, its inputs, its nodes by kernel family, the
        capture's time and memory, and the user's line it came from."""
        what = self.library + (f", {self.role}" if self.role else "")
        rows: list[tuple[str, Any]] = [("captured by", what), ("input shapes", shapes_words(self.input_shapes)
                                                                 or self._no_shapes())]
        parsed = self._graph_or_none()
        if parsed is None:
            rows.append(("nodes", f"no DOT ({self.dot_error})" if self.dot_error else "no DOT"))
        else:
            kinds = parsed.count_by_kind()
            rows.append(("nodes", present.count(len(parsed)) + (
                "" if len(kinds) < 2 else ": " + present.listing(f"{n} {k}" for k, n in kinds.items()))))
            families = parsed.count_by_family()
            if families:
                rows.append(("kernels by family", present.listing(f"{n} {f}" for f, n in families.items())))
        if self.capture_ms is not None:
            rows.append(("capture took", present.duration(self.capture_ms * 1e3)))
        if self.pool_bytes is not None:
            held = "" if self.pool_reserved_bytes is None else (
                f"; the pool held {present.size(self.pool_reserved_bytes)} right after it")
            shared = " (a pool passed in: shared)" if self.pool_given else ""
            rows.append(("memory pool", f"grew {present.size(self.pool_bytes)} during the capture{held}{shared}"))
        origin = _origin(self)
        if origin is not None:
            where = f"{origin}" + (f" in `{self.user_function}`" if self.user_function and self.user_code else "")
            if self.user_file and self.user_code:
                where += f" ({self.user_file.rsplit('/', 1)[-1]})"
            rows.append(("captured from", where))
        title = f"Watched graph #{self.index}" + (f": {self._recorded}" if self._recorded else "")
        return present.facts(rows, title=title)

    def _no_shapes(self) -> str:
        """Why this graph's input shapes are not known, in words."""
        if self.role == "pool keeper":
            return "none: the pool keeper reads no input"
        if self.library == TORCH_CUDA_GRAPH:
            return "not knowable from outside: a `torch.cuda.graph` block may read any tensor"
        return "not knowable from outside the library"

    def __repr__(self) -> str:
        size = f"{present.count(self.nodes)} nodes" if self.dot is not None else f"no DOT ({self.dot_error})"
        role = f" {self.role}" if self.role else ""
        shapes = shapes_words(self.input_shapes)
        inputs = f", inputs {shapes}" if shapes else ""
        capture = "" if self.capture_ms is None else f", capture {present.duration(self.capture_ms * 1e3)}"
        pool = "" if self.pool_bytes is None else f", pool grew {present.size(self.pool_bytes)}"
        origin = _origin(self)
        where = f", from {origin}" if origin is not None else ""
        return f"<watched graph #{self.index}: {self.library}{role}{inputs}: {size}{capture}{pool}{where}>"

    def _repr_html_(self) -> str:
        return self.facts()._repr_html_()


@dataclass(frozen=True)
class WatchSummary(ShownAsTable):
    """Watched graphs counted by library and input shapes, with their pool memory.

    `rows`: one per (library, role, input shapes): graphs, nodes, kernels, pool_bytes, capture_ms.
    `by_library`: {library: {"graphs", "nodes", "pool_bytes"}}. `str()` is a table; `to_pandas()`.
    """

    rows: tuple[dict[str, Any], ...]
    by_library: dict[str, dict[str, int]]
    graphs: int
    total_pool_bytes: int
    pools: dict[str, int | None] = field(default_factory=dict)

    @property
    def pool_reserved_bytes(self) -> int | None:
        """What the distinct pools held at their last capture, summed (None if unknown)."""
        sizes = list(self.pools.values())
        return None if not sizes or any(v is None for v in sizes) else sum(v for v in sizes if v is not None)

    @classmethod
    def of(cls, graphs: Iterable[WatchedGraph]) -> WatchSummary:
        groups: dict[tuple[str, str, str], dict[str, Any]] = {}
        libraries: dict[str, dict[str, int]] = {}
        pools: dict[str, int | None] = {}
        count = 0
        for g in graphs:
            count += 1
            if g.pool_id is not None:
                pools[str(tuple(g.pool_id))] = g.pool_reserved_bytes  # the last capture's view of it
            key = (g.library, g.role or "", shapes_text(g.input_shapes))
            row = groups.setdefault(key, {"library": key[0], "role": key[1], "input_shapes": key[2], "graphs": 0,
                                          "nodes": 0, "kernels": 0, "pool_bytes": 0, "capture_ms": 0.0})
            lib = libraries.setdefault(g.library, {"graphs": 0, "nodes": 0, "pool_bytes": 0})
            row["graphs"] += 1
            lib["graphs"] += 1
            row["nodes"] += g.nodes or 0
            lib["nodes"] += g.nodes or 0
            row["kernels"] += g.kernels or 0
            row["pool_bytes"] += g.pool_bytes or 0
            lib["pool_bytes"] += g.pool_bytes or 0
            row["capture_ms"] = round(row["capture_ms"] + (g.capture_ms or 0.0), 3)
        total = sum(v["pool_bytes"] for v in libraries.values())
        return cls(tuple(groups.values()), libraries, count, total, pools)

    def to_pandas(self) -> Any:
        """A DataFrame with one row per (library, role, input shapes) (imports pandas on first use)."""
        import pandas as pd

        return pd.DataFrame(list(self.rows), columns=["library", "role", "input_shapes", "graphs", "nodes", "kernels",
                                                      "pool_bytes", "capture_ms"])

    def lines(self) -> list[str]:
        """The summary in sentences: graphs, what the pools took and held, and each library's share."""
        head = [f"{present.count(self.graphs)} graph{'s' if self.graphs != 1 else ''}; their pools grew "
                f"{present.size(self.total_pool_bytes)} in all (reserved memory taken during the captures)."]
        if self.pools:
            held = [v for v in self.pools.values() if v is not None]
            n = len(self.pools)
            held_words = f", holding {present.size(sum(held))} after the last capture" if held else ""
            head.append(f"{n} memory pool{'s' if n != 1 else ''}{held_words}.")
        if len(self.by_library) > 1:
            head += [f"{lib}: {present.count(v['graphs'])} graphs, {present.count(v['nodes'])} nodes, pools grew "
                     f"{present.size(v['pool_bytes'])}." for lib, v in self.by_library.items()]
        return head

    def table(self) -> Table:
        """The summary as a table: one row per (library, role, input shapes)."""
        rows = [{**r, "role": r["role"] or None, "input_shapes": None if r["input_shapes"] == "?" else
                 r["input_shapes"].replace("x", " x ")} for r in self.rows]
        columns = [Column("library", "library", kind="text"), Column("role", "role", kind="text", missing=NO_ROLE),
                   Column("input_shapes", "input shapes", kind="text", missing=NO_SHAPES),
                   Column("graphs", "graphs", kind="count"), Column("nodes", "nodes", kind="count"),
                   Column("kernels", "kernels", kind="count"), Column("pool_bytes", "pools grew", kind="bytes")]
        return Table(rows, columns, title="Watched CUDA graphs", notes=self.lines())


def _attribute(item: WatchedGraph, dot: str | None, launches: Any, reason: str | None) -> None:
    """Fill a torch.compile capture's `node_modules` from the compiles a watch recorded; never raises."""
    if "compile" not in item.library:
        return
    if not launches:
        item.node_modules_note = reason or "no Inductor compile was recorded"
        return
    if not dot:
        item.node_modules_note = "no DOT to match kernels in"
        return
    try:
        if item.dot == dot:
            parsed = item.graph
        else:  # the watch keeps no DOT: read it once for the match
            from graphlab.graph.dot_parser import parse_dot

            parsed = parse_dot(dot, source="<watched>")
        found, how = node_modules(parsed, launches)
    except Exception as exc:  # attribution must never break watching
        item.node_modules_note = f"could not match kernels to modules: {type(exc).__name__}: {exc}"
        return
    item.node_modules, item.node_modules_note = (found or None), how


class WatchedGraphs(Sequence[WatchedGraph]):
    """The graphs a watch saw, in capture order: a read-only list that grows while the watch is open.

    Attributes:
        active: True while the watch is open.
        dropped: captures seen after `max_graphs` was reached (counted, not kept).
    """

    def __init__(self, graphs: Iterable[WatchedGraph] = (), *, max_graphs: int | None = None,
                 keep_dot: bool = True, recorded: str | None = None):
        if max_graphs is not None and max_graphs < 1:
            raise BadInputError(f"max_graphs must be at least 1 (or None for no limit), got {max_graphs}")
        self._items: list[WatchedGraph] = list(graphs)
        self._lock = threading.Lock()
        self.max_graphs = max_graphs
        self.keep_dot = keep_dot
        self.active = False
        self.dropped = 0
        #: where and when the graphs were captured, for graphs loaded from a recording; None live
        self.recorded = recorded

    def add(self, captured: dict[str, Any]) -> WatchedGraph | None:
        """Keep one capture (the patch's fields); None when over `max_graphs`."""
        with self._lock:
            if self.max_graphs is not None and len(self._items) >= self.max_graphs:
                self.dropped += 1
                return None
            data = dict(captured)
            graph = data.pop("torch_graph", None)
            launches = data.pop("kernel_launches", None)
            reason = data.pop("kernel_modules_reason", None)
            dot = data.get("dot")
            if not self.keep_dot:
                data["dot"] = None
                data.setdefault("dot_error", "not kept (watch(keep_dot=False))")
            item = WatchedGraph.from_dict({**data, "index": len(self._items)})
            if launches is not None or reason is not None:
                _attribute(item, dot, launches, reason)
            try:
                item._torch_graph = weakref.ref(graph) if graph is not None else None
            except TypeError:
                item._torch_graph = None
            self._items.append(item)
            return item

    # -- list-like ---------------------------------------------------------------------------------------
    @overload
    def __getitem__(self, i: int) -> WatchedGraph: ...

    @overload
    def __getitem__(self, i: slice) -> WatchedGraphs: ...

    def __getitem__(self, i: int | slice) -> WatchedGraph | WatchedGraphs:
        if isinstance(i, slice):
            return WatchedGraphs(self._items[i], recorded=self.recorded)
        return self._items[i]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[WatchedGraph]:
        return iter(list(self._items))

    # -- queries -----------------------------------------------------------------------------------------
    def filter(self, *, library: str | None = None, role: str | None = None, nonempty: bool = False) -> WatchedGraphs:
        """The graphs of one library and/or role; `nonempty` leaves out graphs with no nodes (and no DOT)."""
        return WatchedGraphs((g for g in self._items if (library is None or g.library == library)
                              and (role is None or g.role == role) and (not nonempty or (g.nodes or 0) > 0)),
                             recorded=self.recorded)

    @property
    def libraries(self) -> dict[str, int]:
        """{library: graphs}, in order of first capture."""
        out: dict[str, int] = {}
        for g in self._items:
            out[g.library] = out.get(g.library, 0) + 1
        return out

    @property
    def total_pool_bytes(self) -> int:
        return sum(g.pool_bytes or 0 for g in self._items)

    def summary(self) -> WatchSummary:
        """Counts by library and input shapes, and the pool memory they took."""
        return WatchSummary.of(self._items)

    def rows(self) -> list[dict[str, Any]]:
        return [g.row() for g in self._items]

    def to_pandas(self) -> Any:
        """A DataFrame with one row per graph (imports pandas on first use)."""
        import pandas as pd

        return pd.DataFrame(self.rows(), columns=list(ROW_COLUMNS))

    def to_dicts(self, include_dot: bool = True) -> list[dict[str, Any]]:
        return [g.to_dict(include_dot) for g in self._items]

    @classmethod
    def from_dicts(cls, items: Iterable[dict[str, Any]]) -> WatchedGraphs:
        return cls(WatchedGraph.from_dict(d) for d in items)

    def table(self, limit: int | None = 50) -> Table:
        """One row per graph, in capture order: who captured it, its role and input shapes, its nodes and kernels,
        the capture's time, what its pool took and held, which pool (the same number: one shared pool), and the
        line of your code it came from. `limit=None` shows every row."""
        pools = _pool_labels(self._items)
        rows = [{"index": g.index, "library": g.library, "role": g.role, "input_shapes": shapes_words(g.input_shapes),
                 "nodes": g.nodes, "kernels": g.kernels, "capture_ms": g.capture_ms, "pool_bytes": g.pool_bytes,
                 "pool_reserved_bytes": g.pool_reserved_bytes,
                 "pool": None if g.pool_id is None else pools[tuple(g.pool_id)], "origin": _origin(g)}
                for g in self._items]
        columns = [Column("index", "#", kind="count"), Column("library", "captured by", kind="text"),
                   Column("role", "role", kind="text", missing=NO_ROLE),
                   Column("input_shapes", "input shapes", kind="text", missing=NO_SHAPES),
                   Column("nodes", "nodes", kind="count", missing=NO_DOT),
                   Column("kernels", "kernels", kind="count", missing=NO_DOT),
                   Column("capture_ms", "capture", kind="time", factor=1e3, missing="not timed"),
                   Column("pool_bytes", "pool grew", kind="bytes", missing="not measured"),
                   Column("pool_reserved_bytes", "pool held after", kind="bytes", missing="not known"),
                   Column("pool", "pool", kind="count", missing="no pool id"),
                   Column("origin", "captured from", kind="code", missing="every frame was library code")]
        state = "" if not self.active else " (still watching)"
        title = f"{present.count(len(self))} watched CUDA graph{'s' if len(self) != 1 else ''}{state}"
        if self.recorded:
            title += f": {self.recorded}"
        notes = ["pool grew: reserved memory taken during the capture (0 when a shared pool already had room); "
                 "pool held after: all the pool's memory right after it; pool: the same number is one shared pool.",
                 "captured from: the line of your code that led to the capture (`.where` gives its file and line"
                 + (", as they were when recorded)." if self.recorded else ").")]
        if self.dropped:
            notes.append(f"{present.count(self.dropped)} more captures were counted but not kept (max_graphs).")
        return Table(rows, columns, index="index", title=title, notes=notes, limit=limit,
                     more="`.table(limit=None)` shows them all")

    def __repr__(self) -> str:
        state = "watching" if self.active else "closed"
        lines = [f"WatchedGraphs: {len(self)} graphs ({state})" + (f", {self.dropped} dropped" if self.dropped else "")]
        lines += [f"  {g!r}" for g in self._items[:50]]
        if len(self) > 50:
            lines.append(f"  and {len(self) - 50} more (`.table(limit=None)` shows them all)")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


#: the name of the recording `graphlab record --models watch` writes (`graphlab.studies.watch`)
RECORDING = "watch"


@recorded_result(entry="examples", recording=RECORDING)
@dataclass(frozen=True)
class WatchCases:
    """The worked cases of the watch recording, as recorded: per case ("compile", "make_graphed_callables",
    "torch.cuda.graph") its description, calls and facts, the keys of the graphs the watch saw and of graphlab's own
    capture of the same model. The graphs themselves are the recording's DOTs, read when asked (`seen`,
    `references`). `graphlab.studies.watch_examples.watch_example` shows one case from them.

        >>> cases = gl.load(WatchCases)              # doctest: +SKIP
        >>> cases.seen("compile").summary()          # doctest: +SKIP
    """

    cases: dict[str, dict[str, Any]]
    #: the recording the graphs are read from (None: a `WatchCases` made from a dict alone has no graphs)
    recording: Any = field(default=None, compare=False, repr=False)
    #: where and when they were recorded ("Recorded on NVIDIA H200 on 2026-12-01")
    where: str = ""

    @property
    def names(self) -> list[str]:
        return list(self.cases)

    def case(self, name: str) -> dict[str, Any]:
        """What was recorded of one case (description, calls, facts, graph keys, ...)."""
        if name not in self.cases:
            raise RecordingError(f"the {RECORDING!r} recording has no {name!r} example; it has "
                                 f"{', '.join(self.cases)}")
        return self.cases[name]

    def _recording(self) -> Any:
        if self.recording is None:
            raise RecordingError("these watch cases were not read from a recording, so they hold no graphs: "
                                 "gl.load(WatchCases) reads them with their graphs")
        return self.recording

    def seen(self, name: str) -> WatchedGraphs:
        """The graphs the watch saw in one case (those with a readable DOT), as it saw them; their times and memory
        say where they were measured."""
        rec = self._recording()
        seen = WatchedGraphs((WatchedGraph.from_dict({**rec.graph_info(key)["watched"], "dot": rec.dot(key)})
                              for key in self.case(name)["graph_keys"]), recorded=self.where)
        for g in seen:
            g._recorded = self.where  # noqa: SLF001 - its times and memory were measured there, not here
        return seen

    def references(self, name: str) -> dict[int, Any]:
        """Batch size -> graphlab's own capture (`gl.capture`) of the same model (a parsed `CudaGraph`)."""
        rec = self._recording()
        return {int(b): rec.graph(key) for b, key in self.case(name).get("reference_keys", {}).items()}

    def to_dict(self) -> dict[str, Any]:
        return {name: dict(info) for name, info in self.cases.items()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WatchCases:
        return cls({str(name): dict(info) for name, info in data.items()})

    @classmethod
    def from_recording(cls, data: Mapping[str, Any], recording: Any) -> WatchCases:
        return replace(cls.from_dict(data), recording=recording, where=made_on(recording.provenance, "Recorded"))


@recorded_result(entry="comparison", recording=RECORDING)
@dataclass(frozen=True)
class WatchComparison(ShownAsTable):
    """torch.compile's graph against graphlab's own capture of the same model, per batch size, as the watch
    recording kept it (`gl.diff` of the two): nodes the same, changed, added and removed, and the diff in words.

        >>> gl.load(WatchComparison)                 # one row per batch size   # doctest: +SKIP
    """

    #: batch size -> {"summary": the diff in words, "count_by_status": {...}, "count_by_kind": {...}}
    by_batch: dict[int, dict[str, Any]]
    where: str = ""

    def rows(self) -> list[dict[str, Any]]:
        return [{"batch_size": b, **{k: int(v) for k, v in d.get("count_by_status", {}).items()}}
                for b, d in sorted(self.by_batch.items())]

    def summary(self, batch_size: int) -> str:
        """`gl.diff`'s summary at one batch size, as recorded."""
        if batch_size not in self.by_batch:
            raise BadInputError(f"no comparison at batch size {batch_size}; it has {sorted(self.by_batch)}")
        return str(self.by_batch[batch_size].get("summary", ""))

    def table(self) -> Table:
        """Nodes of torch.compile's graph against gl.capture's, by batch size: the same, changed, added, removed."""
        columns = [Column("batch_size", "batch size", kind="count")]
        columns += [Column(k, k, kind="count", missing="not counted") for k in ("same", "changed", "added", "removed")]
        title = "torch.compile's graph vs gl.capture's, node by node"
        return Table(self.rows(), columns, index="batch_size", title=f"{title}: {self.where}" if self.where else title,
                     notes=["added: nodes only gl.capture's graph has; removed: only torch.compile's; `summary(b)` "
                            "says which."])

    def to_dict(self) -> dict[str, Any]:
        return {str(b): dict(d) for b, d in self.by_batch.items()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WatchComparison:
        return cls({int(b): dict(d) for b, d in data.items()})

    @classmethod
    def from_recording(cls, data: Mapping[str, Any], recording: Any) -> WatchComparison:
        return replace(cls.from_dict(data), where=made_on(recording.provenance, "Recorded"))


@recorded_result(entry="overhead", recording=RECORDING,
                 fields={"model": 1, "batch_size": 1, "pairs": 1, "calls_per_block": 1, "unwatched_p50_us": 1,
                         "watched_p50_us": 1, "ratio_p50": 1, "ratio_p10": 1, "ratio_p90": 1, "spread_pct": 1,
                         "ratio_by_mode": 1, "host_modes": 1, "outputs_identical": 1, "max_abs_err_vs_eager": 1,
                         "graphs_watched": 1, "graphs_during_timing": 1, "compile_s": 1, "ratios": 1},
                 optional=("ratios",))
@dataclass(frozen=True)
class WatchOverhead:
    """Watched vs unwatched reduce-overhead replays of one model at one batch size
    (`graphlab.studies.watch_overhead` measures it; `gl.load(WatchOverhead)` reads the recorded one).

    Attributes:
        unwatched_p50_us, watched_p50_us: median of the block medians (one synchronised call each).
        ratio_p50, ratio_p10, ratio_p90: watched / unwatched per pair of neighbouring blocks.
        spread_pct: (p90 - p10) / p50 of the ratios, in %. ratio_by_mode: median ratio per host mode.
        host_modes: the speed modes seen in the watched blocks (`HostModes.describe()`).
        outputs_identical: `torch.equal` of the two copies' outputs on every fresh input.
        max_abs_err_vs_eager: largest difference of the watched copy from eager.
        graphs_watched: graphs the watch saw while the watched copy compiled and recorded.
        graphs_during_timing: graphs captured while timing (0: nothing re-recorded).
        compile_s: seconds of the first three calls of each copy (compile, warm-up, record).
        source: where it was measured ("live on ..." or "Recorded on ..."; not written: a recording's provenance
            says it).
    """

    model: str
    batch_size: int
    pairs: int
    calls_per_block: int
    unwatched_p50_us: float
    watched_p50_us: float
    ratio_p50: float
    ratio_p10: float
    ratio_p90: float
    spread_pct: float
    ratio_by_mode: list[float]
    host_modes: str
    outputs_identical: bool
    max_abs_err_vs_eager: float
    graphs_watched: int
    graphs_during_timing: int
    compile_s: dict[str, float]
    ratios: list[float] = field(default_factory=list, repr=False)
    source: str = ""

    def describe(self) -> str:
        same = "bit-identical" if self.outputs_identical else "NOT identical"
        return (f"{self.model} batch {self.batch_size}: replay watched / unwatched {present.ratio(self.ratio_p50)} "
                f"(p10-p90 {present.ratio(self.ratio_p10)} to {present.ratio(self.ratio_p90)} over "
                f"{present.count(self.pairs)} pairs of {present.count(self.calls_per_block)} calls; "
                f"{present.duration(self.unwatched_p50_us)} vs {present.duration(self.watched_p50_us)} per call); "
                f"outputs {same}; host: {self.host_modes}")

    def facts(self) -> Any:
        """The check in words (a `present` facts table), titled with where it was measured."""
        rows = [
            ("replay, unwatched vs watched", f"{present.duration(self.unwatched_p50_us)} vs "
             f"{present.duration(self.watched_p50_us)} per call (median of the blocks' medians)"),
            ("watched / unwatched, pair by pair", f"{present.ratio(self.ratio_p50)} (p10 to p90: "
             f"{present.ratio(self.ratio_p10)} to {present.ratio(self.ratio_p90)}, over {present.count(self.pairs)} "
             f"pairs of blocks of {present.count(self.calls_per_block)} calls)"),
            ("outputs of the two copies", "bit-identical" if self.outputs_identical else "not identical"),
            ("largest difference from eager", present.error(self.max_abs_err_vs_eager)),
            ("graphs captured while timing", "none: nothing was re-recorded" if not self.graphs_during_timing
             else present.count(self.graphs_during_timing)),
            ("host speed modes", self.host_modes),
        ]
        title = f"gl.watch's replay overhead, {self.model} at batch {self.batch_size}"
        return present.facts(rows, title=f"{title}: {self.source}" if self.source else title)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WatchOverhead:
        return cls(**keep_known(cls, data))

    @classmethod
    def from_recording(cls, data: Mapping[str, Any], recording: Any) -> WatchOverhead:
        """The recorded check (`gl.load(WatchOverhead)`): its source says where and when it was recorded."""
        return replace(cls.from_dict(data), source=made_on(recording.provenance, "Recorded"))

    def __repr__(self) -> str:
        return f"<WatchOverhead {self.describe()}>"

    def __str__(self) -> str:
        return str(self.facts())

    def _repr_html_(self) -> str:
        return self.facts()._repr_html_()


__all__ = ["RECORDING", "ROW_COLUMNS", "WatchCases", "WatchComparison", "WatchOverhead", "WatchSummary",
           "WatchedGraph", "WatchedGraphs", "shapes_text", "shapes_words"]
