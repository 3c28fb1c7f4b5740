"""What `gl.watch` keeps of each captured graph, and the summary of many.

    >>> seen[0]                          # WatchedGraph: who, when, where, cost, and the DOT
    >>> seen[0].graph                    # the parsed DAG (a gl.CudaGraph): gl.render / gl.inspect / gl.diff
    >>> seen.summary()                   # graphs, nodes and pool memory by library and input shapes
    >>> seen.to_pandas()                 # one row per graph

Pure Python (no torch): recordings load into the same objects on a machine without a GPU.
"""
from __future__ import annotations

import html
import threading
import weakref
from dataclasses import dataclass, field, fields
from typing import Any, Iterable, Iterator, Sequence, overload

from graphlab.errors import BadInputError, GraphlabError, RecordingError, UnsupportedError
from graphlab.watch.kernel_modules import node_modules

#: the columns of `WatchedGraphs.rows()` / `to_pandas()`
ROW_COLUMNS = ("index", "library", "role", "input_shapes", "nodes", "kernels", "capture_ms", "pool_bytes",
               "pool_reserved_bytes", "pool_id", "device", "stream_id", "where", "captured_at")


def shapes_text(shapes: Sequence[Sequence[int]] | None) -> str:
    """[[8, 64], [64]] -> "8x64, 64"; None -> "?" (not knowable for this library)."""
    if shapes is None:
        return "?"
    return ", ".join("x".join(str(d) for d in s) if s else "scalar" for s in shapes) or "none"


def _mib(value: int | None) -> str:
    return "?" if value is None else f"{value / 2**20:.2f} MiB"


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
        names = {f.name for f in fields(cls) if not f.name.startswith("_")}
        missing = {"index", "library"} - set(data)
        if missing:
            raise RecordingError(f"a watched graph needs {', '.join(sorted(missing))}; got {sorted(data)}")
        return cls(**{k: v for k, v in data.items() if k in names})

    def row(self) -> dict[str, Any]:
        return {"index": self.index, "library": self.library, "role": self.role,
                "input_shapes": shapes_text(self.input_shapes), "nodes": self.nodes, "kernels": self.kernels,
                "capture_ms": None if self.capture_ms is None else round(self.capture_ms, 3),
                "pool_bytes": self.pool_bytes, "pool_reserved_bytes": self.pool_reserved_bytes,
                "pool_id": None if self.pool_id is None else tuple(self.pool_id),
                "device": self.device, "stream_id": self.stream_id, "where": self.where,
                "captured_at": self.captured_at}

    def __repr__(self) -> str:
        size = f"{self.nodes} nodes" if self.dot is not None else f"no DOT ({self.dot_error})"
        where = f" from {self.where}" if self.where else ""
        role = f" {self.role}" if self.role else ""
        return (f"WatchedGraph(#{self.index} {self.library}{role} [{shapes_text(self.input_shapes)}]: {size}, "
                f"capture {self.capture_ms or 0:.1f} ms, pool +{_mib(self.pool_bytes)}{where})")


@dataclass(frozen=True)
class WatchSummary:
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
        head = [f"{self.graphs} graphs, pool memory {_mib(self.total_pool_bytes)} in all (reserved-memory growth "
                f"over the captures)"]
        if self.pools:
            sizes = ", ".join(f"{pool}: {_mib(size)}" for pool, size in self.pools.items())
            head.append(f"  {len(self.pools)} pool(s), holding after their last capture: {sizes}")
        head += [f"  {lib}: {v['graphs']} graphs, {v['nodes']} nodes, pool {_mib(v['pool_bytes'])}"
                 for lib, v in self.by_library.items()]
        return head

    def __str__(self) -> str:
        out = self.lines()
        if self.rows:
            out.append(f"{'library':<34} {'role':<12} {'input shapes':<22} {'graphs':>6} {'nodes':>6} {'pool':>11}")
            out += [f"{r['library'][:34]:<34} {r['role'][:12]:<12} {r['input_shapes'][:22]:<22} {r['graphs']:>6} "
                    f"{r['nodes']:>6} {_mib(r['pool_bytes']):>11}" for r in self.rows]
        return "\n".join(out)

    def _repr_html_(self) -> str:
        head = "".join(f"<div>{html.escape(line)}</div>" for line in self.lines())
        cols = ("library", "role", "input_shapes", "graphs", "nodes", "kernels", "pool_bytes")
        cells = "".join("<tr>" + "".join(
            f"<td>{html.escape(_mib(r[c]) if c == 'pool_bytes' else str(r[c]))}</td>" for c in cols) + "</tr>"
            for r in self.rows)
        names = "".join(f"<th>{c.replace('_', ' ')}</th>" for c in cols)
        return f"<b>Watched CUDA graphs</b>{head}<table><tr>{names}</tr>{cells}</table>"


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
                 keep_dot: bool = True):
        if max_graphs is not None and max_graphs < 1:
            raise BadInputError(f"max_graphs must be at least 1 (or None for no limit), got {max_graphs}")
        self._items: list[WatchedGraph] = list(graphs)
        self._lock = threading.Lock()
        self.max_graphs = max_graphs
        self.keep_dot = keep_dot
        self.active = False
        self.dropped = 0

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
            return WatchedGraphs(self._items[i])
        return self._items[i]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[WatchedGraph]:
        return iter(list(self._items))

    # -- queries -----------------------------------------------------------------------------------------
    def filter(self, *, library: str | None = None, role: str | None = None, nonempty: bool = False) -> WatchedGraphs:
        """The graphs of one library and/or role; `nonempty` leaves out graphs with no nodes (and no DOT)."""
        return WatchedGraphs(g for g in self._items if (library is None or g.library == library)
                             and (role is None or g.role == role) and (not nonempty or (g.nodes or 0) > 0))

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

    def __repr__(self) -> str:
        state = "watching" if self.active else "closed"
        lines = [f"WatchedGraphs: {len(self)} graphs ({state})" + (f", {self.dropped} dropped" if self.dropped else "")]
        lines += [f"  {g!r}" for g in self._items[:50]]
        if len(self) > 50:
            lines.append(f"  ... {len(self) - 50} more")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        cols = ("index", "library", "role", "input_shapes", "nodes", "capture_ms", "pool_bytes", "where")
        body = "".join("<tr>" + "".join(
            f"<td>{html.escape(_mib(r[c]) if c == 'pool_bytes' else '' if r[c] is None else str(r[c]))}</td>"
            for c in cols) + "</tr>" for r in self.rows()[:200])
        names = "".join(f"<th>{c.replace('_', ' ')}</th>" for c in cols)
        return f"<b>{len(self)} watched CUDA graphs</b><table><tr>{names}</tr>{body}</table>"


__all__ = ["ROW_COLUMNS", "WatchSummary", "WatchedGraph", "WatchedGraphs", "shapes_text"]
