"""A node census of a captured graph, read straight from the CUDA graph API (not from the DOT text).

It is the independent witness for the DOT parser: the same graph counted two ways must agree
(`Census.compare(parsed)` lists every disagreement). Kernel launch parameters come through the DRIVER
API (`cuGraphKernelNodeGetParams` + `cuFuncGetName`): the runtime's `cudaGraphKernelNodeGetParams`
answers `cudaErrorInvalidDeviceFunction` for PyTorch and cuBLAS kernels. Child-graph bodies are
walked recursively.

Needs cuda-bindings (optional: imported when a census is taken; without it `take_census` raises
`UnsupportedError` saying what to install).

A zoo recording keeps the census of each of its graphs, taken on the GPU when it was recorded, with what comparing it
with the DOT found then: its `census` entry, read as `RecordedCensuses` (`gl.load(RecordedCensuses, "gpt")["b8"]`,
one `RecordedCensus` per graph); a recorded graph's `cg.census()` is its own.

Example:
    >>> cg = gl.capture(model, x)
    >>> census = cg.census()
    >>> census.count_by_kind()          # {"kernel": 7, "memcpy": 1}
    >>> census.compare(cg.graph)        # [] when the parsed DOT agrees
"""
from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Iterator, Mapping

from graphlab.errors import ResultsError, UnsupportedError
from graphlab.graph.export import check_cuda
from graphlab.graph.model import Node, node_field_names
from graphlab.results_types import keep_known, recorded_result

# cudaGraphNodeType value -> NodeKind value (graphlab.graph.model)
NODE_TYPES: dict[int, str] = {
    0: "kernel", 1: "memcpy", 2: "memset", 3: "host", 4: "child_graph", 5: "empty", 6: "wait_event",
    7: "event_record", 8: "ext_semas_signal", 9: "ext_semas_wait", 10: "mem_alloc", 11: "mem_free",
    12: "batch_mem_op", 13: "conditional",
}
# cudaMemcpyKind value -> the direction name the DOT prints
COPY_KINDS: dict[int, str] = {0: "HtoH", 1: "HtoD", 2: "DtoH", 3: "DtoD", 4: "Default"}

def _census_node_type() -> type:
    """`CensusNode`: where the node sits in the API's graph walk, then the `Node` fields that the API
    reports too (`node_field_names(census=True)`: kind, name, grid, block, shared_bytes,
    copy_direction, copy_bytes, with the model's types; kind as its string value), then the body link."""
    types = {f.name: f.type for f in dataclasses.fields(Node)}
    shared = [(name, types[name], None) for name in node_field_names(census=True) if name != "kind"]
    return dataclasses.make_dataclass(
        "CensusNode",
        [("graph_index", "int"), ("index", "int"), ("kind", "str"), *[
            (name, type_, dataclasses.field(default=default)) for name, type_, default in shared],
         ("body_graph_index", "int | None", dataclasses.field(default=None))],
        frozen=True,
        namespace={"__doc__": "One node as the graph API reports it (fields shared with `Node` come from its schema).",
                   "__module__": __name__},
    )


CensusNode = _census_node_type()


@dataclass
class Census:
    """Every node of a graph and its child-graph bodies; graph 0 is the root."""

    nodes: list[CensusNode] = field(default_factory=list)
    edge_count: int = 0
    graph_count: int = 1

    def count_by_kind(self) -> dict[str, int]:
        """{"kernel": 12, "memcpy": 1, ...}, same keys as `CudaGraph.count_by_kind()`."""
        return dict(Counter(n.kind for n in self.nodes).most_common())

    def kernels(self) -> list[CensusNode]:
        return [n for n in self.nodes if n.kind == "kernel"]

    def kernel_names(self) -> list[str]:
        """Mangled kernel names, root first, in the order the API lists them."""
        return [n.name or "" for n in self.kernels()]

    def __len__(self) -> int:
        return len(self.nodes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "graph_count": self.graph_count,
            "edge_count": self.edge_count,
            "count_by_kind": self.count_by_kind(),
            "nodes": [{k: v for k, v in asdict(n).items() if v is not None} for n in self.nodes],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Census:
        """A census as `to_dict()` wrote it (fields a newer graphlab adds to a node are left out).

        Raises:
            ResultsError: not a census (no node list, or a node without its place or kind)."""
        if not isinstance(data, Mapping) or not isinstance(data.get("nodes", []), list):
            raise ResultsError("not a census: expected a JSON object with a 'nodes' list")
        nodes = []
        try:
            for row in data.get("nodes", []):
                kept = keep_known(CensusNode, row)
                for dim in ("grid", "block"):
                    if kept.get(dim) is not None:
                        kept[dim] = tuple(int(v) for v in kept[dim])
                nodes.append(CensusNode(**kept))
            return cls(nodes, int(data.get("edge_count", 0)), int(data.get("graph_count", 1)))
        except (AttributeError, TypeError, ValueError) as exc:
            raise ResultsError(f"not a census node ({exc}); nodes need graph_index, index and kind") from None

    def compare(self, parsed: Any) -> list[str]:
        """Disagreements with a parsed `CudaGraph` of the same graph; [] when both tell the same story.

        Compared: node counts by kind, the number of graphs and of edges, the multiset of kernel names
        and, where the DOT shows them, each kernel's grid, block and dynamic shared memory.
        """
        problems: list[str] = []
        parsed_counts = parsed.count_by_kind()
        if parsed_counts != self.count_by_kind():
            problems.append(f"node kinds differ: API {self.count_by_kind()} vs DOT {parsed_counts}")
        if len(parsed.graphs) != self.graph_count:
            problems.append(f"graph count differs: API {self.graph_count} vs DOT {len(parsed.graphs)}")
        parsed_edges = sum(1 for _ in parsed.edges())
        if parsed_edges != self.edge_count:
            problems.append(f"edge count differs: API {self.edge_count} vs DOT {parsed_edges}")
        api_names = Counter(self.kernel_names())
        dot_names = Counter(n.name or "" for n in parsed.kernels())
        if api_names != dot_names:
            only_api = list((api_names - dot_names).elements())[:3]
            only_dot = list((dot_names - api_names).elements())[:3]
            problems.append(f"kernel names differ: only in API {only_api}, only in DOT {only_dot}")
        dot_launches = Counter(
            (n.name, tuple(n.grid), tuple(n.block), n.shared_bytes)
            for n in parsed.kernels()
            if n.grid is not None and n.block is not None
        )
        if dot_launches:
            api_launches = Counter((n.name, n.grid, n.block, n.shared_bytes) for n in self.kernels())
            missing = dot_launches - api_launches
            if missing:
                problems.append(f"launch parameters differ for {len(list(missing.elements()))} kernel(s), e.g. "
                                f"{next(iter(missing))}")
        return problems


@dataclass(frozen=True)
class RecordedCensus:
    """The census `graphlab record` took of one graph through the CUDA graph API, and what comparing it with the
    parsed DOT found then, on the GPU (`compare` answers with that: nothing is read here).

    Attributes:
        census: the nodes as the API listed them (None when the census could not be taken: `error` says why).
        disagreements: what differed from the DOT when it was recorded (empty: the two witnesses agreed).
        error: why no census was taken (cuda-bindings missing, ...), else None.
    """

    census: Census | None
    disagreements: tuple[str, ...] = ()
    error: str | None = None

    @property
    def agrees_with_dot(self) -> bool:
        """True when a census was taken and it agreed with the DOT."""
        return self.census is not None and not self.disagreements

    def compare(self, graph: Any = None) -> list[str]:
        """The disagreements found on the GPU between this census and the parsed DOT (empty: they agree)."""
        return list(self.disagreements)

    def _taken(self) -> Census:
        if self.census is None:
            raise UnsupportedError(f"no census was taken when this graph was recorded: {self.error}")
        return self.census

    def count_by_kind(self) -> dict[str, int]:
        return self._taken().count_by_kind()

    def kernel_names(self) -> list[str]:
        return self._taken().kernel_names()

    def __len__(self) -> int:
        return len(self._taken())

    def to_dict(self) -> dict[str, Any]:
        """As a recording keeps it: the census, then `agrees_with_dot` and `disagreements` (or only its `error`)."""
        if self.census is None:
            return {"error": self.error or "no census"}
        return {**self.census.to_dict(), "agrees_with_dot": self.agrees_with_dot,
                "disagreements": list(self.disagreements)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RecordedCensus:
        if isinstance(data, Mapping) and "error" in data and "nodes" not in data:
            return cls(None, (), str(data["error"]))
        if not isinstance(data, Mapping):
            raise ResultsError(f"not a recorded census: expected a JSON object, got {type(data).__name__}")
        return cls(Census.from_dict(data), tuple(str(d) for d in data.get("disagreements") or ()))


@recorded_result(entry="census", recording="mlp", schema=1, found_in=("*/census",))
@dataclass(frozen=True)
class RecordedCensuses:
    """The census of every graph of a zoo recording, by graph key ("b8"): its `census` entry, written by
    `graphlab record` (`gl.load(RecordedCensuses, "gpt")["b8"].compare()`).

    Attributes:
        graphs: graph key -> its `RecordedCensus`, in recording order.
        provenance: the recording's (GPU, driver, torch, date), when read from one.
    """

    graphs: dict[str, RecordedCensus]
    provenance: dict[str, Any] = field(default_factory=dict, compare=False)

    def __getitem__(self, key: str) -> RecordedCensus:
        return self.graphs[key]

    def __contains__(self, key: object) -> bool:
        return key in self.graphs

    def __iter__(self) -> Iterator[str]:
        return iter(self.graphs)

    def __len__(self) -> int:
        return len(self.graphs)

    def get(self, key: str) -> RecordedCensus | None:
        return self.graphs.get(key)

    def to_dict(self) -> dict[str, Any]:
        """As the recording keeps it: graph key -> that graph's census (no schema marker: the keys are graphs')."""
        return {key: census.to_dict() for key, census in self.graphs.items()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RecordedCensuses:
        if not isinstance(data, Mapping):
            raise ResultsError(f"not a census entry: expected a JSON object of graphs, got {type(data).__name__}")
        return cls({str(k): RecordedCensus.from_dict(v) for k, v in data.items() if k != "schema"})

    @classmethod
    def from_recording(cls, data: Mapping[str, Any], recording: Any) -> RecordedCensuses:
        """The census entry read by `gl.load`, with the recording's provenance."""
        return cls(cls.from_dict(data).graphs, dict(recording.provenance))


def _node_type(rt: Any, node: Any) -> str:
    kind = check_cuda(rt.cudaGraphNodeGetType(node), "cudaGraphNodeGetType")
    value = int(getattr(kind, "value", kind))
    return NODE_TYPES.get(value, f"type_{value}")


def _kernel_fields(node: Any) -> dict[str, Any]:
    from cuda.bindings import driver as dr

    params = check_cuda(dr.cuGraphKernelNodeGetParams(dr.CUgraphNode(init_value=int(node))), "cuGraphKernelNodeGetParams")
    raw_name = check_cuda(dr.cuFuncGetName(params.func), "cuFuncGetName")
    name = raw_name.decode(errors="replace") if isinstance(raw_name, bytes) else str(raw_name)
    return {
        "name": name,
        "grid": (int(params.gridDimX), int(params.gridDimY), int(params.gridDimZ)),
        "block": (int(params.blockDimX), int(params.blockDimY), int(params.blockDimZ)),
        "shared_bytes": int(params.sharedMemBytes),
    }


def _memcpy_fields(rt: Any, node: Any) -> dict[str, Any]:
    try:
        params = check_cuda(rt.cudaGraphMemcpyNodeGetParams(node), "cudaGraphMemcpyNodeGetParams")
        extent = params.extent
        kind = int(getattr(params.kind, "value", params.kind))
        return {
            "copy_direction": COPY_KINDS.get(kind),
            "copy_bytes": int(extent.width) * max(int(extent.height), 1) * max(int(extent.depth), 1),
        }
    except Exception:  # some copies (1-D, peer) have no 3-D params; counts still agree without them
        return {}


def _edge_count(rt: Any, handle: Any) -> int:
    result = rt.cudaGraphGetEdges(handle, numEdges=0)
    return int(result[-1])  # (err, from, to, [edgeData,] numEdges): the count is last in 12.x and 13.x


def _runtime() -> Any:
    """cuda-bindings' runtime module, or UnsupportedError naming the package to install."""
    try:
        from cuda.bindings import runtime
    except ImportError:
        raise UnsupportedError("a census reads the graph through the CUDA graph API, which needs cuda-bindings: "
                               "pip install cuda-bindings") from None
    return runtime


def take_census(handle: int) -> Census:
    """Census of the raw `cudaGraph_t` `handle` (an int, e.g. from `raw_cuda_graph()`), bodies included."""
    rt = _runtime()

    census = Census(graph_count=0)
    pending: list[tuple[int, Any]] = [(0, handle)]
    while pending:
        graph_index, graph = pending.pop(0)
        census.graph_count += 1
        count = int(rt.cudaGraphGetNodes(graph, numNodes=0)[-1])
        nodes = check_cuda(rt.cudaGraphGetNodes(graph, numNodes=count), "cudaGraphGetNodes")[0] if count else []
        census.edge_count += _edge_count(rt, graph)
        for index, node in enumerate(nodes):
            kind = _node_type(rt, node)
            extra: dict[str, Any] = {}
            if kind == "kernel":
                extra = _kernel_fields(node)
            elif kind == "memcpy":
                extra = _memcpy_fields(rt, node)
            elif kind == "child_graph":
                body = check_cuda(rt.cudaGraphChildGraphNodeGetGraph(node), "cudaGraphChildGraphNodeGetGraph")
                extra = {"body_graph_index": census.graph_count + len(pending)}
                pending.append((extra["body_graph_index"], body))
            census.nodes.append(CensusNode(graph_index=graph_index, index=index, kind=kind, **extra))
    return census


def node_count(handle: int) -> int:
    """Number of nodes in the root graph (0 means the capture recorded nothing)."""
    rt = _runtime()
    return int(rt.cudaGraphGetNodes(handle, numNodes=0)[-1])


__all__ = ["NODE_TYPES", "Census", "CensusNode", "RecordedCensus", "RecordedCensuses", "node_count", "take_census"]
