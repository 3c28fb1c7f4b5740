"""The typed graph model: a captured CUDA graph as nodes, edges and nested body graphs.

Pure: standard library only; must not import torch, graphviz, plotly or widgets.

Vocabulary follows CUDA's own: a `CudaGraph` is what one `cudaGraphDebugDotPrint` call wrote; it holds
the root `Graph` and every body `Graph` nested in it (child-graph bodies, conditional bodies). Each
`Node` belongs to exactly one `Graph`; `Edge`s join nodes of the same graph. Body graphs are linked to
the node that owns them through `Node.body_graph_ids` / `Graph.parent_node_id`.
"""
from __future__ import annotations

import enum
import itertools
import json
import types
from collections import Counter
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, Callable, Iterator, Union, get_args, get_origin, get_type_hints

from graphlab import present
from graphlab.graph.node_json import node_writer


class NodeKind(str, enum.Enum):
    """Node kinds, named as in torch's `get_graph_data` and CUDA's `cudaGraphNodeType`."""

    KERNEL = "kernel"
    MEMCPY = "memcpy"
    MEMSET = "memset"
    HOST = "host"
    CHILD_GRAPH = "child_graph"
    EMPTY = "empty"
    WAIT_EVENT = "wait_event"
    EVENT_RECORD = "event_record"
    EXT_SEMAS_SIGNAL = "ext_semas_signal"
    EXT_SEMAS_WAIT = "ext_semas_wait"
    MEM_ALLOC = "mem_alloc"
    MEM_FREE = "mem_free"
    BATCH_MEM_OP = "batch_mem_op"
    CONDITIONAL = "conditional"

    def __str__(self) -> str:  # "kernel", not "NodeKind.KERNEL"
        return self.value

    def words(self, n: int = 1) -> str:
        """The kind in words, singular or plural by `n`: "kernel", "memory copies", "event waits"."""
        one, many = _KIND_WORDS.get(self.value, (self.value.replace("_", " "), self.value.replace("_", " ") + "s"))
        return one if n == 1 else many


#: each node kind in words, (one, many)
_KIND_WORDS = {
    "kernel": ("kernel", "kernels"), "memcpy": ("memory copy", "memory copies"), "memset": ("memset", "memsets"),
    "host": ("host callback", "host callbacks"), "child_graph": ("child graph", "child graphs"),
    "empty": ("empty node", "empty nodes"), "wait_event": ("event wait", "event waits"),
    "event_record": ("event record", "event records"),
    "ext_semas_signal": ("external semaphore signal", "external semaphore signals"),
    "ext_semas_wait": ("external semaphore wait", "external semaphore waits"),
    "mem_alloc": ("memory allocation", "memory allocations"), "mem_free": ("memory free", "memory frees"),
    "batch_mem_op": ("batched memory operation", "batched memory operations"),
    "conditional": ("conditional node", "conditional nodes"),
}


class ConditionalType(str, enum.Enum):
    """The four conditional node types (CUDA 12.3+: IF, WHILE; 12.8+: IF/ELSE, SWITCH)."""

    IF = "IF"
    IF_ELSE = "IF/ELSE"
    WHILE = "WHILE"
    SWITCH = "SWITCH"

    def __str__(self) -> str:
        return self.value


Dim3 = tuple[int, int, int]

# Where a `Node` field comes from (its `source` in the field's metadata):
#   "identity": the node's place in the dump (id, graph, index);
#   "label": read from the node's DOT label by `graphlab.graph.dot_labels` (`NodeFields` holds these);
#   "derived": worked out from the label's fields (the kernel's demangled and short name, family);
#   "structure": the node's links to other graphs (body graph ids, from the label's graph references).
IDENTITY, LABEL, DERIVED, STRUCTURE = "identity", "label", "derived", "structure"


def _field(default: Any = None, *, source: str = LABEL, kinds: tuple[str, ...] = (), census: bool = False,
           default_factory: Callable[[], Any] | None = None, compare: bool = True) -> Any:
    """A `Node` field with its schema facts in `metadata`: where it comes from, which node kinds carry
    it (empty: every kind), and whether the CUDA graph API's census reports it too
    (`graphlab.graph.census.CensusNode` is built from the fields marked so). A field left out of comparisons
    is left out of the hash too."""
    metadata = {"source": source, "kinds": kinds, "census": census}
    if default_factory is not None:
        return field(default_factory=default_factory, metadata=metadata, compare=compare)
    return field(default=default, metadata=metadata, compare=compare)


@dataclass(frozen=True)
class Node:
    """One node of a CUDA graph.

    Only the fields that make sense for `kind` are set; the others stay None.

    The field list below is the one schema of a node: the label reader (`NodeFields`), the JSON form
    (`to_dict`/`from_dict`), the CLI's JSON and the GPU census (`CensusNode`) all derive theirs from
    it (`node_field_names`), so a new field is one edit here.

    Attributes:
        id: the node's DOT name, e.g. "graph_1_node_3"; unique within a `CudaGraph`.
        graph_id: id of the graph the node belongs to, e.g. "graph_1".
        index: the node's index within its graph, in creation (= capture) order.
        kind: what the node does (`NodeKind`).
        topo_id: the driver's topological id (printed with the verbose flag), else None.
        name: kernel only, the mangled kernel name as the driver reports it.
        demangled_name: kernel only, the demangled C++ name (same as `name` when not mangled).
        short_name: kernel only, a readable name such as "gemm 32x32 (cuBLAS)".
        family: kernel only, the library family ("cuBLAS", "ATen elementwise", "NCCL", ...).
        grid, block: kernel only, launch dimensions (x, y, z), when the dump shows them.
        shared_bytes: kernel only, dynamic shared memory in bytes, when the dump shows it.
        copy_direction: memcpy only, "HtoD", "DtoH", "DtoD", "HtoH" or "Default".
        copy_bytes: memcpy only, bytes copied, when the dump shows it.
        memset_bytes: memset only, bytes written (elementSize * width * height), when shown.
        memset_value: memset only, the value written, when shown.
        conditional_type: conditional only (`ConditionalType`).
        body_graph_ids: child_graph and conditional only, ids of the body graphs, in order
            (IF/ELSE: then, else; SWITCH: case 0, 1, ...).
        handle: the node handle ("0x..."), when the dump shows handles.
        details: every other field the dump printed for this node, as text (e.g. "event",
            "bytesize", "dptr"), so nothing the driver wrote is lost.
    """

    id: str = _field(source=IDENTITY, default=MISSING)
    graph_id: str = _field(source=IDENTITY, default=MISSING)
    index: int = _field(source=IDENTITY, default=MISSING)
    kind: NodeKind = _field(default=MISSING, census=True)
    topo_id: int | None = _field()
    name: str | None = _field(kinds=("kernel",), census=True)
    demangled_name: str | None = _field(source=DERIVED, kinds=("kernel",))
    short_name: str | None = _field(source=DERIVED, kinds=("kernel",))
    family: str | None = _field(source=DERIVED, kinds=("kernel",))
    grid: Dim3 | None = _field(kinds=("kernel",), census=True)
    block: Dim3 | None = _field(kinds=("kernel",), census=True)
    shared_bytes: int | None = _field(kinds=("kernel",), census=True)
    copy_direction: str | None = _field(kinds=("memcpy",), census=True)
    copy_bytes: int | None = _field(kinds=("memcpy",), census=True)
    memset_bytes: int | None = _field(kinds=("memset",))
    memset_value: int | None = _field(kinds=("memset",))
    conditional_type: ConditionalType | None = _field(kinds=("conditional",))
    body_graph_ids: tuple[str, ...] = _field(source=STRUCTURE, default=(), kinds=("child_graph", "conditional"))
    handle: str | None = _field()
    details: dict[str, str] = _field(default_factory=dict, compare=False)

    @property
    def label(self) -> str:
        """A one-line readable label: the kernel's short name, else the kind."""
        if self.kind is NodeKind.KERNEL:
            return self.short_name or self.demangled_name or self.name or "kernel"
        if self.kind is NodeKind.MEMCPY and self.copy_direction:
            return f"memcpy {self.copy_direction}"
        if self.kind is NodeKind.CONDITIONAL and self.conditional_type:
            return f"conditional {self.conditional_type}"
        return self.kind.value

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: `id` and `kind` always, other fields only when set (enums as their value,
        tuples as lists; empty bodies and details left out)."""
        out: dict[str, Any] = {"id": self.id, "kind": self.kind.value}
        for name, encode in _ENCODERS:
            value = getattr(self, name)
            if value is not None and value != () and value != {}:
                out[name] = encode(value)
        return out

    @classmethod
    def from_parser(cls, values: dict[str, Any]) -> Node:
        """The same `Node` as `Node(**values)`, made without the frozen dataclass's per-field
        `__init__` (9 µs a node here, the largest single cost of parsing a big dump).

        For the DOT parser, whose `values` are already complete and of the right types (`id`,
        `graph_id`, `index`, `kind` and any others): nothing is checked. `tests/test_model.py` keeps
        the two ways of making a node equal.
        """
        node = object.__new__(cls)
        state = node.__dict__
        # only the fields that are set: an unset one reads its default from the class (the dataclass keeps
        # it there), so a terse kernel node holds 9 entries, not 20 (a million-node dump: 0.6 KB less a node)
        for key, value in values.items():
            if value is not None and value is not _NO_BODIES:
                state[key] = value
        if "details" not in state:
            state["details"] = {}
        return node

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Node:
        """Inverse of `to_dict`."""
        kwargs = {name: decode(data[name]) for name, decode in _DECODERS if data.get(name) is not None}
        return cls(**kwargs)


def _codecs() -> tuple[tuple[tuple[str, Callable[[Any], Any]], ...], tuple[tuple[str, Callable[[Any], Any]], ...]]:
    """(field, to-JSON) and (field, from-JSON) pairs for every `Node` field, worked out from its type."""
    hints = get_type_hints(Node, globalns={**globals(), "Dim3": Dim3})
    encoders, decoders = [], []
    for f in fields(Node):
        hint = hints[f.name]
        parts = get_args(hint) if get_origin(hint) in (Union, types.UnionType) else (hint,)
        enum_type = next((p for p in parts if isinstance(p, type) and issubclass(p, enum.Enum)), None)
        is_tuple = any(get_origin(p) is tuple for p in parts)
        is_dict = any(get_origin(p) is dict for p in parts)
        if enum_type is not None:
            encode, decode = (lambda v: v.value), enum_type
        elif is_tuple:
            encode, decode = list, tuple
        elif is_dict:
            encode, decode = dict, dict
        else:
            encode = decode = _same
        if f.name not in ("id", "kind"):  # to_dict writes these two first, always
            encoders.append((f.name, encode))
        decoders.append((f.name, decode))
    return tuple(encoders), tuple(decoders)


def _same(value: Any) -> Any:
    return value


class _Stream:
    """A JSON array written as `items` yields them (`count` known ahead, for `[]`), in chunks."""

    CHUNK = 2000  # items encoded by one json.dumps call

    def __init__(self, items: Iterator[Any], count: int, *, nested: bool = False, encoded: bool = False):
        """`nested`: the items hold `_Stream`s themselves (written one by one). `encoded`: the items are JSON text
        already (compact: written only with no indent)."""
        self.items, self.count, self.nested, self.encoded = items, count, nested, encoded


def _write_stream(obj: Any, write: Callable[[str], Any], indent: int | None, depth: int) -> None:
    """Write `obj` as `json.dumps(obj, indent=indent)` would, streaming the `_Stream`s in it: a dict holding a
    `_Stream` is written key by key, a `_Stream` chunk by chunk (each chunk one `json.dumps` of a list, its
    brackets cut off), anything else whole."""
    here = " " * (indent * depth) if indent else ""
    if isinstance(obj, _Stream):
        if obj.count == 0:
            write("[]")
            return
        if obj.nested:
            pad = "" if indent is None else "\n" + " " * (indent * (depth + 1))
            write("[" + pad)
            for i, item in enumerate(obj.items):
                if i:
                    write(", " if indent is None else "," + pad)
                _write_stream(item, write, indent, depth + 1)
            write("]" if indent is None else "\n" + here + "]")
            return
        write("[" if indent is None else "[\n")
        chunk: list[Any] = []
        first = True
        for item in itertools.chain(obj.items, (_END,)):
            if item is not _END:
                chunk.append(item)
                if len(chunk) < _Stream.CHUNK:
                    continue
            if not chunk:
                break
            text = "[" + ", ".join(chunk) + "]" if obj.encoded else json.dumps(chunk, indent=indent)
            if indent is None:
                write(("" if first else ", ") + text[1:-1])
            else:  # "[\n" + items at one indent + "\n]": move them to depth + 1
                write(("" if first else ",\n") + here + text[2:-2].replace("\n", "\n" + here))
            first, chunk = False, []
        write("]" if indent is None else "\n" + here + "]")
        return
    if not (isinstance(obj, dict) and any(isinstance(v, _Stream) for v in obj.values())):
        text = json.dumps(obj, indent=indent)
        write(text.replace("\n", "\n" + here) if indent and "\n" in text else text)
        return
    pad = "" if indent is None else "\n" + " " * (indent * (depth + 1))
    comma, end = (", ", "}") if indent is None else ("," + pad, "\n" + here + "}")
    write("{" + pad)
    for i, (key, value) in enumerate(obj.items()):
        write((comma if i else "") + json.dumps(key) + ": ")
        _write_stream(value, write, indent, depth + 1)
    write(end)


_END = object()


def _count(n: int, what: str) -> str:
    return f"{n:,} {what}{'' if n == 1 else 's'}"


def _dims(dims: tuple[int, ...]) -> str:
    """Launch dimensions in words: (64, 1, 1) -> "64", (4, 2, 1) -> "4 x 2"."""
    dims = tuple(int(d) for d in dims)
    while len(dims) > 1 and dims[-1] == 1:
        dims = dims[:-1]
    return present.shape(dims)


_ENCODERS, _DECODERS = _codecs()
_NO_BODIES: tuple[str, ...] = ()
_DEFAULTS = {f.name: f.default for f in fields(Node) if f.default is not MISSING}


def node_field_names(*, source: str | None = None, kind: str | None = None, census: bool | None = None) -> tuple[str, ...]:
    """Names of the `Node` fields, in declaration order, that match every filter given.

    Args:
        source: "identity", "label", "derived" or "structure" (see the constants above).
        kind: a node kind ("kernel"): the fields that kind carries (fields for every kind excluded).
        census: True for the fields the CUDA graph API's census reports too.

    Example:
        >>> node_field_names(kind="kernel", census=True)
        ('name', 'grid', 'block', 'shared_bytes')
    """
    out = []
    for f in fields(Node):
        meta = f.metadata
        if source is not None and meta["source"] != source:
            continue
        if kind is not None and kind not in meta["kinds"]:
            continue
        if census is not None and meta["census"] != census:
            continue
        out.append(f.name)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Edge:
    """A dependency: `dst` runs after `src` (both node ids of the same graph)."""

    src: str
    dst: str


@dataclass(frozen=True)
class Graph:
    """One CUDA graph: the root, or the body of a child-graph or conditional node.

    Attributes:
        id: the graph's name in the dump, e.g. "graph_1". The number is a process-wide counter,
            not a capture index.
        nodes: nodes in creation order.
        edges: dependencies between those nodes.
        parent_node_id: for a body graph, the id of the node that owns it; None for the root.
    """

    id: str
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    parent_node_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "nodes": [node.to_dict() for node in self.nodes],
            "edges": [[edge.src, edge.dst] for edge in self.edges],
        }
        if self.parent_node_id is not None:
            out["parent_node_id"] = self.parent_node_id
        return out

    def __repr__(self) -> str:  # the dataclass's own repr prints every node: tens of KB
        owner = f", body of {self.parent_node_id}" if self.parent_node_id else ""
        return f"<Graph {self.id}: {_count(len(self.nodes), 'node')}, {_count(len(self.edges), 'edge')}{owner}>"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Graph:
        return cls(
            id=data["id"],
            nodes=tuple(Node.from_dict(n) for n in data["nodes"]),
            edges=tuple(Edge(src, dst) for src, dst in data["edges"]),
            parent_node_id=data.get("parent_node_id"),
        )


@dataclass(frozen=True)
class CudaGraph:
    """Everything one DOT dump holds: the root graph and all body graphs nested in it.

    Attributes:
        graphs: the root graph first, then body graphs in the order the dump lists them.
        source: where the dump came from (a file name, or "<string>").
        metadata: where the graph came from, when known, e.g. {"rank": 0, "world_size": 2,
            "device": "cuda:0"} for one rank's graph of a multi-GPU recording (shown by the inspector).
    """

    graphs: tuple[Graph, ...]
    source: str = "<string>"
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    _index: dict[str, Node] = field(default_factory=dict, init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        for graph in self.graphs:
            for node in graph.nodes:
                self._index[node.id] = node

    # -- access ---------------------------------------------------------------------------
    @property
    def root(self) -> Graph:
        """The top-level graph (the one no node owns)."""
        for graph in self.graphs:
            if graph.parent_node_id is None:
                return graph
        return self.graphs[0]

    def graph(self, graph_id: str) -> Graph:
        """The graph named `graph_id`; KeyError if there is none."""
        for graph in self.graphs:
            if graph.id == graph_id:
                return graph
        raise KeyError(graph_id)

    def node(self, node_id: str) -> Node:
        """The node named `node_id`, in any graph; KeyError if there is none."""
        return self._index[node_id]

    def nodes(self) -> Iterator[Node]:
        """Every node of every graph, bodies included, each once."""
        for graph in self.graphs:
            yield from graph.nodes

    def edges(self) -> Iterator[Edge]:
        """Every edge of every graph."""
        for graph in self.graphs:
            yield from graph.edges

    def kernels(self) -> list[Node]:
        """All kernel nodes, bodies included, in dump order."""
        return [n for n in self.nodes() if n.kind is NodeKind.KERNEL]

    def count_by_kind(self) -> dict[str, int]:
        """{"kernel": 12, "memcpy": 1, ...} over all graphs, most common first."""
        return dict(Counter(n.kind.value for n in self.nodes()).most_common())

    def count_by_family(self) -> dict[str, int]:
        """{"cuBLAS": 4, "ATen elementwise": 6, ...} over all kernels, most common first."""
        return dict(Counter(n.family or "other" for n in self.kernels()).most_common())

    def __len__(self) -> int:
        return len(self._index)

    # -- views for people ----------------------------------------------------------------
    def kinds(self) -> str:
        """The nodes by kind, in words: "47 nodes: 44 kernels and 3 memsets" (bodies included)."""
        counts = self.count_by_kind()
        parts = [f"{n:,} {NodeKind(kind).words(n)}" for kind, n in counts.items()]
        total = len(self)
        if len(counts) == 1 and total > 1:
            return f"{_count(total, 'node')}, all {NodeKind(next(iter(counts))).words(total)}"
        return f"{_count(total, 'node')}: {present.listing(parts)}" if parts else "no nodes"

    def families(self) -> str:
        """The kernels by the library they come from, in words: "44 kernels: 19 cuBLAS, 10 ATen elementwise,
        9 ATen other, 3 attention and 3 CUTLASS"."""
        counts = self.count_by_family()
        if not counts:
            return "no kernels"
        total = sum(counts.values())
        return f"{_count(total, 'kernel')}: {present.listing(f'{n:,} {family}' for family, n in counts.items())}"

    def sequence(self, limit: int = 12) -> str:
        """The nodes in capture order, by their readable labels: "5 nodes: gemv (cuBLAS), gelu (elementwise),
        ..."; past `limit`, "and N more (graph.table())" says how many are left out."""
        labels = [n.label for n in self.nodes()]
        shown = labels if limit is None or len(labels) <= limit else labels[:limit]
        rest = len(labels) - len(shown)
        text = f"{_count(len(labels), 'node')}: {', '.join(shown)}"
        return text + (f" and {rest:,} more (`graph.table(limit=None)` lists them all)" if rest else "")

    def table(self, limit: int | None = 30) -> present.Table:
        """One row per node, in capture order: what it does, the library a kernel comes from, its launch (blocks
        in the grid, threads per block, dynamic shared memory). `limit=None` shows every node."""
        rows = []
        several = len(self.graphs) > 1
        for number, node in enumerate(self.nodes(), start=1):
            kernel = node.kind is NodeKind.KERNEL
            row: dict[str, Any] = {
                "order": number,
                "node": node.label,
                "library": node.family if kernel else None,
                "grid": _dims(node.grid) if kernel and node.grid else None,
                "block": _dims(node.block) if kernel and node.block else None,
                "shared": node.shared_bytes if kernel else None,
            }
            if several:
                row["graph"] = "root" if node.graph_id == self.root.id else "body"
            rows.append(row)
        columns = [present.Column("order", "#", kind="count"), present.Column("node", "what it does", kind="text"),
                   present.Column("library", "library", kind="text", missing="not a kernel"),
                   present.Column("grid", "grid (blocks)", kind="text", missing="not a kernel, or not in the dump"),
                   present.Column("block", "block (threads)", kind="text", missing="not a kernel, or not in the dump")]
        if any(r["shared"] for r in rows):
            columns.append(present.Column("shared", "shared memory", kind="bytes",
                                          missing="not a kernel, or not in the dump"))
        if several:
            columns.insert(1, present.Column("graph", "in", kind="text"))
        more = f"`graph.table(limit=None)` shows all {len(rows):,}"
        return present.Table(rows, columns, title=self.kinds(), limit=limit, more=more)

    def __repr__(self) -> str:
        """One line: the source, node counts by kind (the four commonest), edges and graphs. The
        dataclass's own repr would print every node (tens of KB in a terminal)."""
        kinds = list(self.count_by_kind().items())
        shown = ", ".join(f"{n} {kind}" for kind, n in kinds[:4]) + (", ..." if len(kinds) > 4 else "")
        edges = sum(len(g.edges) for g in self.graphs)
        bodies = f" + {_count(len(self.graphs) - 1, 'body graph')}" if len(self.graphs) > 1 else ""
        return f"<CudaGraph {self.source!r}: {_count(len(self), 'node')} ({shown}), {_count(edges, 'edge')}{bodies}>"

    # -- serialisation --------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The CLI's JSON shape: {"graphs": [{"id", "nodes", "edges"}, ...]}."""
        out: dict[str, Any] = {"source": self.source, "graphs": [g.to_dict() for g in self.graphs]}
        if self.metadata:
            out["metadata"] = dict(self.metadata)
        return out

    def to_json(self, indent: int | None = 1) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def write_json(self, out: Any, *, indent: int | None = 1, kernel_fields: tuple[str, ...] = ()) -> None:
        """Write `to_json(indent)` to the text stream `out` node by node, never holding the whole JSON or
        `to_dict()` in memory (a million-node dump: `graphlab parse`). The text is the same as `to_json`'s.

        Args:
            kernel_fields: fields every kernel node carries, null when not set (the CLI's contract).
        """
        def nodes(graph: Graph) -> Iterator[dict[str, Any]]:
            for node in graph.nodes:
                entry = node.to_dict()
                if kernel_fields and node.kind is NodeKind.KERNEL:
                    for key in kernel_fields:
                        entry.setdefault(key, None)
                yield entry

        if indent is None:  # each node's text made from cached pieces: the same text, 2-3x sooner
            node_json = node_writer(_ENCODERS, kernel_fields)

            def node_stream(graph: Graph) -> _Stream:
                return _Stream(map(node_json, graph.nodes), len(graph.nodes), encoded=True)
        else:
            def node_stream(graph: Graph) -> _Stream:
                return _Stream(nodes(graph), len(graph.nodes))

        def graph_entry(graph: Graph) -> dict[str, Any]:
            entry: dict[str, Any] = {"id": graph.id, "nodes": node_stream(graph),
                                     "edges": _Stream(([e.src, e.dst] for e in graph.edges), len(graph.edges))}
            if graph.parent_node_id is not None:
                entry["parent_node_id"] = graph.parent_node_id
            return entry

        data: dict[str, Any] = {"source": self.source,
                                "graphs": _Stream((graph_entry(g) for g in self.graphs), len(self.graphs), nested=True)}
        if self.metadata:
            data["metadata"] = dict(self.metadata)
        _write_stream(data, out.write, indent, 0)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CudaGraph:
        return cls(graphs=tuple(Graph.from_dict(g) for g in data["graphs"]), source=data.get("source", "<json>"),
                   metadata=dict(data.get("metadata") or {}))

    @classmethod
    def from_json(cls, text: str) -> CudaGraph:
        return cls.from_dict(json.loads(text))


__all__ = ["ConditionalType", "CudaGraph", "Edge", "Graph", "Node", "NodeKind", "node_field_names"]
