"""Structure queries on a captured graph: order, levels, parallelism, neighbours, repeated blocks.

Pure (no torch): standard library only.

A CUDA graph is a DAG. The questions a reader asks of it are structural: in what order can the
nodes run (`topological_order`), how long is the critical chain (`depth`), how many nodes could run
at once (`widest_level`), what feeds a node and what it feeds (`predecessors`, `successors`), and
which stretches are the same work again and again (`find_repeated_blocks`: 12 transformer layers
are one block repeated 12 times).

    >>> from graphlab.graph.model import Edge, Graph, Node, NodeKind
    >>> nodes = tuple(Node(f"g_n{i}", "g", i, NodeKind.KERNEL, short_name=s) for i, s in enumerate("abab"))
    >>> g = Graph("g", nodes, tuple(Edge(f"g_n{i}", f"g_n{i + 1}") for i in range(3)))
    >>> analyze(g).depth, [b.count for b in find_repeated_blocks(g, min_saved_nodes=1)]
    (4, [2])

Functions taking `Graph | CudaGraph` use the root graph of a `CudaGraph`, except the neighbour and
block queries, which look in every graph (node ids are unique across a dump).
"""
from __future__ import annotations

import heapq
import weakref
from dataclasses import dataclass
from functools import cached_property
from typing import Union

from graphlab.graph.model import CudaGraph, Graph, Node, NodeKind
from graphlab.errors import GraphCycleError

AnyGraph = Union[Graph, CudaGraph]


@dataclass(frozen=True)
class GraphStructure:
    """Order, levels and neighbours of one `Graph` (computed once by `analyze`, then cached).

    Attributes:
        graph_id: the graph analysed.
        order: node ids in topological order; ties are broken by creation (= capture) index, so a
            single-stream capture comes out in the order it was recorded.
        level: node id -> longest-path layer (0 for nodes with no predecessor).
        preds, succs: node id -> ids of its direct predecessors / successors, in creation order.
    """

    graph_id: str
    order: tuple[str, ...]
    level: dict[str, int]
    preds: dict[str, tuple[str, ...]]
    succs: dict[str, tuple[str, ...]]

    @property
    def depth(self) -> int:
        """Nodes on the longest dependency chain (the critical path, counted in nodes)."""
        return max(self.level.values(), default=-1) + 1

    @property
    def level_widths(self) -> list[int]:
        """How many nodes sit on each level, from level 0 down."""
        widths = [0] * self.depth
        for lvl in self.level.values():
            widths[lvl] += 1
        return widths

    @property
    def widest_level(self) -> int:
        """Nodes on the widest level: how many could run at once (the available parallelism)."""
        return max(self.level_widths, default=0)

    def position(self, node_id: str) -> int:
        """Index of `node_id` in the topological order."""
        return self._positions[node_id]

    @cached_property
    def _positions(self) -> dict[str, int]:
        # cached_property writes the instance __dict__ directly, so it works on a frozen dataclass
        return {nid: i for i, nid in enumerate(self.order)}


# Analyses keyed by id(graph); a weakref drops the entry when the graph is garbage collected. (A cached_property
# of `Graph` would say the same, but `Graph` lives in model.py, which this module reads: it cannot call back here.)
_CACHE: dict[int, tuple[weakref.ref[Graph], GraphStructure]] = {}


def analyze(graph: AnyGraph) -> GraphStructure:
    """The `GraphStructure` of `graph` (the root, for a `CudaGraph`). Cached per graph object.

    Raises:
        GraphCycleError: the edges contain a cycle.
    """
    g = _one_graph(graph)
    hit = _CACHE.get(id(g))
    if hit is not None and hit[0]() is g:
        return hit[1]
    result = _analyze(g)
    key = id(g)
    _CACHE[key] = (weakref.ref(g, lambda _ref, key=key: _CACHE.pop(key, None)), result)
    return result


def _analyze(g: Graph) -> GraphStructure:
    index = {node.id: node.index for node in g.nodes}
    preds: dict[str, list[str]] = {node.id: [] for node in g.nodes}
    succs: dict[str, list[str]] = {node.id: [] for node in g.nodes}
    seen: set[tuple[str, str]] = set()
    for edge in g.edges:
        if edge.src not in index or edge.dst not in index or (edge.src, edge.dst) in seen:
            continue  # edges to nodes outside this graph are not dependencies inside it
        seen.add((edge.src, edge.dst))
        succs[edge.src].append(edge.dst)
        preds[edge.dst].append(edge.src)
    indegree = {nid: len(p) for nid, p in preds.items()}
    heap = [(index[nid], nid) for nid, d in indegree.items() if d == 0]
    heapq.heapify(heap)
    order: list[str] = []
    level: dict[str, int] = {}
    while heap:
        _, nid = heapq.heappop(heap)
        order.append(nid)
        level[nid] = max((level[p] + 1 for p in preds[nid]), default=0)
        for nxt in succs[nid]:
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                heapq.heappush(heap, (index[nxt], nxt))
    if len(order) != len(index):
        stuck = sorted((nid for nid, d in indegree.items() if d > 0), key=index.__getitem__)
        raise GraphCycleError(
            f"graph {g.id} has a cycle through {stuck[0]} ({len(stuck)} nodes involved): "
            "a CUDA graph is acyclic, so check the edges of the dump"
        )
    by_index = index.__getitem__
    return GraphStructure(
        graph_id=g.id,
        order=tuple(order),
        level=level,
        preds={nid: tuple(sorted(p, key=by_index)) for nid, p in preds.items()},
        succs={nid: tuple(sorted(s, key=by_index)) for nid, s in succs.items()},
    )


def topological_order(graph: AnyGraph) -> list[str]:
    """Node ids of `graph` (root of a `CudaGraph`) in topological order, ties by capture order."""
    return list(analyze(graph).order)


def levels(graph: AnyGraph) -> dict[str, int]:
    """Node id -> longest-path level (sources are level 0)."""
    return dict(analyze(graph).level)


def depth(graph: AnyGraph) -> int:
    """Nodes on the longest dependency chain of `graph`."""
    return analyze(graph).depth


def widest_level(graph: AnyGraph) -> int:
    """Nodes on the widest level of `graph`: the parallelism available to the GPU."""
    return analyze(graph).widest_level


def predecessors(graph: AnyGraph, node_id: str) -> list[str]:
    """Ids of the nodes `node_id` directly waits for (in whichever graph of the dump it lives)."""
    return list(analyze(_graph_of(graph, node_id)).preds[node_id])


def successors(graph: AnyGraph, node_id: str) -> list[str]:
    """Ids of the nodes that directly wait for `node_id`."""
    return list(analyze(_graph_of(graph, node_id)).succs[node_id])


@dataclass(frozen=True)
class GraphSummary:
    """The numbers a reader wants first (`summary(graph)`); `depth`/`widest_level` are the root's."""

    nodes: int
    edges: int
    graphs: int
    by_kind: dict[str, int]
    by_family: dict[str, int]
    depth: int
    widest_level: int
    repeated_blocks: int

    def __str__(self) -> str:
        kinds = ", ".join(f"{k} {n}" for k, n in self.by_kind.items())
        return (
            f"{self.nodes} nodes ({kinds}), {self.edges} edges, {self.graphs} graph(s); "
            f"longest chain {self.depth} nodes, widest level {self.widest_level}"
        )


def summary(graph: AnyGraph) -> GraphSummary:
    """Counts, critical-path depth and available parallelism of a whole dump."""
    cg = graph if isinstance(graph, CudaGraph) else CudaGraph((graph,))
    info = analyze(cg)
    return GraphSummary(
        nodes=len(cg),
        edges=sum(1 for _ in cg.edges()),
        graphs=len(cg.graphs),
        by_kind=cg.count_by_kind(),
        by_family=cg.count_by_family(),
        depth=info.depth,
        widest_level=info.widest_level,
        repeated_blocks=len(find_repeated_blocks(cg)),
    )


def bridged_edges(graph: Graph, hidden: set[str] | frozenset[str]) -> list[tuple[str, str, bool]]:
    """The edges of `graph` among the nodes not in `hidden`, a path through hidden nodes becoming
    one edge, so that leaving nodes out of a drawing keeps what waits for what.

    Returns:
        (src, dst, bridged) triples, each pair once, in topological order of `src`; `bridged` is
        True when the pair is joined only through hidden nodes, not by an edge of its own.
    """
    info = analyze(graph)
    reach: dict[str, list[str]] = {}  # hidden node -> first non-hidden nodes after it
    for nid in reversed(info.order):
        if nid in hidden:
            acc: dict[str, None] = {}
            for nxt in info.succs[nid]:
                acc.update(dict.fromkeys(reach[nxt] if nxt in hidden else [nxt]))
            reach[nid] = list(acc)
    out: dict[tuple[str, str], bool] = {}
    for nid in info.order:
        if nid in hidden:
            continue
        for nxt in info.succs[nid]:
            if nxt in hidden:
                for t in reach[nxt]:
                    out.setdefault((nid, t), True)
            else:
                out[(nid, nxt)] = False
    return [(src, dst, bridged) for (src, dst), bridged in out.items()]


# -- repeated blocks ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RepeatedBlock:
    """A stretch of the topological order that is one sequence of nodes repeated `count` times.

    Attributes:
        id: "block_0", "block_1", ... numbered over the dump (graph order, then position).
        graph_id: the graph the block lies in.
        count: number of repeats (12 for 12 identical transformer layers).
        period: nodes per repeat.
        start: position of the first node in the graph's topological order.
        node_ids: one tuple of node ids per repeat, each in topological order; node `i` of
            every repeat has the same signature (kind, family, short name).
    """

    id: str
    graph_id: str
    count: int
    period: int
    start: int
    node_ids: tuple[tuple[str, ...], ...]

    @property
    def representative(self) -> tuple[str, ...]:
        """The first repeat's node ids: what a collapsed drawing shows."""
        return self.node_ids[0]

    def all_node_ids(self) -> list[str]:
        """Every node id of every repeat."""
        return [nid for rep in self.node_ids for nid in rep]

    def locate(self, node_id: str) -> tuple[int, int] | None:
        """(repeat, offset) of `node_id` in this block, or None when it is not in it."""
        for r, rep in enumerate(self.node_ids):
            if node_id in rep:
                return r, rep.index(node_id)
        return None


def signature(node: Node) -> tuple[str, str, str]:
    """What makes two nodes "the same work": kind, family and short name (or label)."""
    extra = str(node.conditional_type or "") if node.kind is NodeKind.CONDITIONAL else ""
    return (node.kind.value, node.family or "", (node.short_name or node.label) + extra)


def find_repeated_blocks(graph: AnyGraph, *, min_count: int = 2, min_saved_nodes: int = 2) -> list[RepeatedBlock]:
    """Maximal runs of a repeated sequence of node signatures, along each graph's topological order.

    Runs are chosen greedily by how many nodes they cover (largest first, shortest period on
    ties), without overlapping. Deterministic, and O(n log^2 n) for n nodes.

    Args:
        graph: a `Graph`, or a `CudaGraph` (every graph in it, bodies included).
        min_count: fewest repeats worth reporting.
        min_saved_nodes: fewest nodes that collapsing must save ((count - 1) * period), so that
            two identical kernels in a row are not reported as a block.

    Returns:
        The blocks, in graph order then position, numbered "block_0", "block_1", ...
    """
    graphs = graph.graphs if isinstance(graph, CudaGraph) else (graph,)
    found: list[RepeatedBlock] = []
    for g in graphs:
        node_by_id = {node.id: node for node in g.nodes}
        order = analyze(g).order
        codes: dict[tuple[str, str, str], int] = {}
        seq = [codes.setdefault(signature(node_by_id[nid]), len(codes)) for nid in order]
        for start, period, count in _select_runs(seq, min_count, min_saved_nodes):
            reps = tuple(tuple(order[start + r * period : start + (r + 1) * period]) for r in range(count))
            found.append(RepeatedBlock(f"block_{len(found)}", g.id, count, period, start, reps))
    return found


_MOD = (1 << 61) - 1
_BASE = 1_000_003


class _Hashes:
    """Prefix polynomial hashes of an int sequence, for O(1) slice comparison."""

    def __init__(self, seq: list[int]):
        self.seq = seq
        self.prefix = [0] * (len(seq) + 1)
        self.power = [1] * (len(seq) + 1)
        for i, x in enumerate(seq):
            self.prefix[i + 1] = (self.prefix[i] * _BASE + x + 1) % _MOD
            self.power[i + 1] = self.power[i] * _BASE % _MOD

    def of(self, lo: int, hi: int) -> int:
        return (self.prefix[hi] - self.prefix[lo] * self.power[hi - lo]) % _MOD

    def forward(self, i: int, j: int, limit: int) -> int:
        """Longest L <= limit with seq[i:i+L] == seq[j:j+L]."""
        seq = self.seq
        step = 0
        while step < limit and step < 8:  # most extensions are short: compare directly first
            if seq[i + step] != seq[j + step]:
                return step
            step += 1
        lo, hi = step, limit
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.of(i, i + mid) == self.of(j, j + mid):
                lo = mid
            else:
                hi = mid - 1
        return lo

    def backward(self, i: int, j: int, limit: int) -> int:
        """Longest L <= limit with seq[i-L:i] == seq[j-L:j]."""
        seq = self.seq
        step = 0
        while step < limit and step < 8:
            if seq[i - 1 - step] != seq[j - 1 - step]:
                return step
            step += 1
        lo, hi = step, limit
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.of(i - mid, i) == self.of(j - mid, j):
                lo = mid
            else:
                hi = mid - 1
        return lo


def _runs(seq: list[int]) -> list[tuple[int, int, int]]:
    """All maximal runs (start, end, period) with end - start >= 2 * period.

    Every run of period k holds a multiple of k, the anchor j, with seq[j:j+k] inside the run, so
    checking the anchors j = 0, k, 2k, ... with forward and backward extensions finds them all.
    """
    n = len(seq)
    hashes = _Hashes(seq)
    runs: list[tuple[int, int, int]] = []
    for k in range(1, n // 2 + 1):
        j = 0
        while j + k < n:
            back = hashes.backward(j, j + k, min(j, k))
            fwd = hashes.forward(j, j + k, n - j - k)
            if back + fwd >= k:
                start, end = j - back, j + k + fwd
                runs.append((start, end, k))
                # another maximal run of period k overlaps this one by < k nodes: skip the anchors
                # that would only find this run again
                j = max(j + k, -(-(end - k + 1) // k) * k)
                continue
            j += k
    return runs


def _select_runs(seq: list[int], min_count: int, min_saved_nodes: int) -> list[tuple[int, int, int]]:
    """Greedy non-overlapping choice of runs, most nodes covered first; (start, period, count)."""
    heap: list[tuple[int, int, int, int]] = []  # (-covered, period, start, end)

    def push(start: int, end: int, k: int) -> None:
        count = (end - start) // k
        if count >= min_count and (count - 1) * k >= min_saved_nodes:
            heapq.heappush(heap, (-count * k, k, start, end))

    for start, end, k in _runs(seq):
        push(start, end, k)
    taken: list[tuple[int, int]] = []  # accepted [lo, hi) intervals
    chosen: list[tuple[int, int, int]] = []
    while heap:
        neg_cover, k, start, end = heapq.heappop(heap)
        lo, hi = start, start - neg_cover
        clash = [(a, b) for a, b in taken if a < hi and lo < b]
        if not clash:
            taken.append((lo, hi))
            chosen.append((start, k, -neg_cover // k))
            continue
        # keep the free parts of the run (it still has period k there) as smaller candidates
        cursor = start
        for a, b in sorted(clash):
            if a > cursor:
                push(cursor, min(a, end), k)
            cursor = max(cursor, b)
        if cursor < end:
            push(cursor, end, k)
    return sorted(chosen)


def _one_graph(graph: AnyGraph) -> Graph:
    return graph.root if isinstance(graph, CudaGraph) else graph


def _graph_of(graph: AnyGraph, node_id: str) -> Graph:
    if isinstance(graph, Graph):
        return graph
    return graph.graph(graph.node(node_id).graph_id)


__all__ = ["GraphStructure", "GraphSummary", "RepeatedBlock", "_CACHE", "analyze", "bridged_edges", "depth",
           "find_repeated_blocks", "levels", "predecessors", "signature", "successors", "summary",
           "topological_order", "widest_level"]
