"""Match the GPU events of one replay to the nodes of the graph's DOT dump.

Pure: standard library and graphlab.graph only. Both sides carry the kernel's name, grid and block (a copy's or a
memset's size), and the events come in the order the GPU ran them, which respects the DAG: a node can only start
after its predecessors ended. So the matcher walks the events by start time and gives each one to a *ready* node
(every predecessor matched) of the same signature, the earliest in topological order. Where the trace carries a
real graph node id (newer Kineto builds; `GpuEvent.node_id`) and it names a node of that signature, that node is
taken instead. What cannot be matched is said, by reason.

    >>> m = match_replay(graph, events)                 # doctest: +SKIP
    >>> m.by_node["graph_1_node_3"], m.unmatched        # doctest: +SKIP
"""
from __future__ import annotations

import heapq
import re
from dataclasses import dataclass, field, replace
from typing import Iterable

from graphlab.graph.kernel_names import function_path
from graphlab.graph.model import CudaGraph, Node, NodeKind
from graphlab.graph.structure import analyze
from graphlab.timing.chrome_trace import GpuEvent

#: node kinds that run on the GPU and show up in a trace
TIMED_KINDS = (NodeKind.KERNEL, NodeKind.MEMCPY, NodeKind.MEMSET)

#: how a node was matched
BY_NODE_ID, BY_SIGNATURE, BY_LOOSE_NAME, OUT_OF_ORDER = "node id", "signature", "function name", "out of DAG order"
BY_COPY_KERNEL = "copy run as a kernel"

#: the kernels the driver runs a copy node as where it cannot use a copy engine (seen on the H200, driver 580,
#: for the device-to-device copy inside a conditional body: `memcpy32_post`): reported as a kernel, with no size
DRIVER_COPY_KERNEL = re.compile(r"^memcpy\d*_[a-z]+$")

#: why a node has no time
NO_GPU_WORK = "no GPU work of its own ({kind} node)"
NO_KERNEL_EVENT = "no kernel event with this name, grid and block in the replay"
NO_COPY_EVENT = "no {kind} event of this size in the replay"
BODY_NOT_REPORTED = "conditional body: did not run in these replays, or CUDA did not report it"
HOST_NODE = "host function: runs on the CPU, not in the GPU trace"

_SPACES = re.compile(r"\s+")


def _name(text: str) -> str:
    return _SPACES.sub("", text)


def node_name_keys(node: Node) -> tuple[str, str]:
    """(exact, loose) name keys of a kernel node: its demangled name without spaces, its function path."""
    full = node.demangled_name or node.name or ""
    return _name(full), _name(function_path(full))


def event_name_keys(event: GpuEvent) -> tuple[str, str]:
    return _name(event.name), _name(function_path(event.name))


def _dims_agree(a: tuple[int, int, int] | None, b: tuple[int, int, int] | None) -> bool:
    return a is None or b is None or tuple(a) == tuple(b)


def _size(node: Node) -> int | None:
    return node.copy_bytes if node.kind is NodeKind.MEMCPY else node.memset_bytes


def fits(node: Node, event: GpuEvent) -> str | None:
    """How well an event fits a node: BY_SIGNATURE (exact name, dims/size), BY_LOOSE_NAME (same function path,
    dims/size), or None (it is not this node's event)."""
    if node.kind.value != event.kind:
        return None
    if node.kind is NodeKind.KERNEL:
        if not (_dims_agree(node.grid, event.grid) and _dims_agree(node.block, event.block)):
            return None
        exact, loose = node_name_keys(node)
        e_exact, e_loose = event_name_keys(event)
        if exact and exact == e_exact:
            return BY_SIGNATURE
        if loose and loose == e_loose:
            return BY_LOOSE_NAME
        return None
    size = _size(node)
    return BY_SIGNATURE if size is None or event.bytes is None or size == event.bytes else None


def bucket_key(kind: str, loose_name: str) -> tuple[str, str]:
    return (kind, loose_name if kind == "kernel" else "")


@dataclass
class ReplayMatch:
    """One replay's events given to nodes.

    Attributes:
        events: the replay's events, by start time.
        by_node: node id -> indexes into `events` (more than one: a body that ran several times).
        matched_by: node id -> how it was matched (BY_SIGNATURE, BY_NODE_ID, ...).
        unmatched: node id -> why it has no event (every node without one, the untimed kinds included).
        extra: indexes of events no node took.
    """

    events: list[GpuEvent]
    by_node: dict[str, list[int]] = field(default_factory=dict)
    matched_by: dict[str, str] = field(default_factory=dict)
    unmatched: dict[str, str] = field(default_factory=dict)
    extra: list[int] = field(default_factory=list)


class Dag:
    """The dependencies the matcher and the critical path follow: every graph of a dump, bodies entered from
    their owner (a body's first nodes wait for what its owner waits for)."""

    def __init__(self, cg: CudaGraph):
        self.cg = cg
        self.order: list[str] = []
        self.preds: dict[str, tuple[str, ...]] = {}
        self.succs: dict[str, list[str]] = {}
        self.in_body: set[str] = set()
        owner_preds: dict[str, tuple[str, ...]] = {}
        pending = [cg.root]
        seen: set[str] = set()
        while pending:  # root first, then bodies in the order their owners come
            graph = pending.pop(0)
            if graph.id in seen:
                continue
            seen.add(graph.id)
            structure = analyze(graph)
            entry = owner_preds.get(graph.parent_node_id or "", ())
            for nid in structure.order:
                self.order.append(nid)
                preds = structure.preds.get(nid, ())
                self.preds[nid] = preds if preds else entry
                if graph.parent_node_id is not None:
                    self.in_body.add(nid)
                node = cg.node(nid)
                for body in node.body_graph_ids:
                    owner_preds[body] = self.preds[nid]
                    try:
                        pending.append(cg.graph(body))
                    except KeyError:
                        pass
        for nid in self.order:
            self.succs.setdefault(nid, [])
            for p in self.preds[nid]:
                self.succs.setdefault(p, []).append(nid)
        self.position = {nid: i for i, nid in enumerate(self.order)}


def _reason(node: Node, in_body: bool) -> str:
    if node.kind is NodeKind.HOST:
        return HOST_NODE
    if node.kind not in TIMED_KINDS:
        return NO_GPU_WORK.format(kind=node.kind.value)
    if in_body:
        return BODY_NOT_REPORTED
    return NO_KERNEL_EVENT if node.kind is NodeKind.KERNEL else NO_COPY_EVENT.format(kind=node.kind.value)


def is_copy_kernel(event: GpuEvent) -> bool:
    """A kernel event that is the driver running a copy node (`DRIVER_COPY_KERNEL`)."""
    return event.kind == "kernel" and bool(DRIVER_COPY_KERNEL.match(event.name.strip()))


def match_replay(cg: CudaGraph, events: Iterable[GpuEvent], dag: Dag | None = None) -> ReplayMatch:
    """Give each event of one replay to a node of `cg` (see the module docstring). A driver copy kernel
    (`memcpy32_post`) is offered to the copy nodes, as a copy of unknown size (`BY_COPY_KERNEL`)."""
    dag = dag or Dag(cg)
    evs = sorted(events, key=lambda e: e.start_us)
    copy_kernels = {i for i, e in enumerate(evs) if is_copy_kernel(e)}
    result = ReplayMatch(events=evs)
    nodes = {nid: cg.node(nid) for nid in dag.order}
    timed = {nid for nid, n in nodes.items() if n.kind in TIMED_KINDS}
    keys = {nid: bucket_key(nodes[nid].kind.value, node_name_keys(nodes[nid])[1] if nodes[nid].kind is NodeKind.KERNEL
                            else "") for nid in timed}
    by_index: dict[int, list[str]] = {}
    for nid in timed:
        by_index.setdefault(nodes[nid].index, []).append(nid)
    remaining = {nid: len(dag.preds[nid]) for nid in dag.order}
    ready: dict[tuple[str, str], list[tuple[int, str]]] = {}
    unplaced: dict[tuple[str, str], list[tuple[int, str]]] = {}
    for nid in timed:
        unplaced.setdefault(keys[nid], []).append((dag.position[nid], nid))
    for bucket in unplaced.values():
        bucket.sort()
    done: set[str] = set()

    def finish(nid: str) -> None:
        stack = [nid]
        while stack:
            current = stack.pop()
            if current in done:
                continue
            done.add(current)
            for s in dag.succs.get(current, ()):
                remaining[s] -= 1
                if remaining[s] == 0:
                    if s in timed:
                        heapq.heappush(ready.setdefault(keys[s], []), (dag.position[s], s))
                    else:
                        stack.append(s)

    for nid in dag.order:
        if remaining[nid] == 0:
            if nid in timed:
                heapq.heappush(ready.setdefault(keys[nid], []), (dag.position[nid], nid))
            else:
                finish(nid)

    def take(nid: str, index: int, how: str) -> None:
        result.by_node[nid] = [index]
        result.matched_by[nid] = how
        finish(nid)

    def best(bucket: list[tuple[int, str]], event: GpuEvent) -> tuple[str, str] | None:
        """The earliest unmatched node of `bucket` the event fits, exact names before loose ones."""
        loose: str | None = None
        for _, nid in sorted(bucket):
            if nid in result.by_node:
                continue
            how = fits(nodes[nid], event)
            if how == BY_SIGNATURE:
                return nid, how
            if how is not None and loose is None:
                loose = nid
        return (loose, BY_LOOSE_NAME) if loose is not None else None

    for index, event in enumerate(evs):
        if index in copy_kernels:
            event = replace(event, kind=NodeKind.MEMCPY.value, bytes=None)
        key = bucket_key(event.kind, event_name_keys(event)[1] if event.kind == "kernel" else "")
        if event.node_id is not None:  # a real node id: the low 32 bits are the node's id in its graph
            hinted = [nid for nid in by_index.get(event.node_id & 0xFFFFFFFF, ())
                      if nid not in result.by_node and fits(nodes[nid], event)]
            if len(hinted) == 1:
                take(hinted[0], index, BY_NODE_ID)
                continue
        heap = ready.get(key, [])
        while heap and heap[0][1] in result.by_node:
            heapq.heappop(heap)
        found = best(heap, event) if heap else None
        if found is not None:
            take(found[0], index, BY_COPY_KERNEL if index in copy_kernels else found[1])
            continue
        found = best(unplaced.get(key, []), event)
        if found is not None:
            take(found[0], index, OUT_OF_ORDER)
            continue
        again = [nid for nid in dag.in_body if nid in result.by_node and keys.get(nid) == key and fits(nodes[nid], event)]
        if again:  # a body node running once more (a WHILE loop's next iteration, where CUDA reports it)
            result.by_node[min(again, key=dag.position.__getitem__)].append(index)
            continue
        result.extra.append(index)
    for nid in dag.order:
        if nid not in result.by_node:
            result.unmatched[nid] = _reason(nodes[nid], nid in dag.in_body)
    return result


__all__ = ["BODY_NOT_REPORTED", "BY_COPY_KERNEL", "BY_LOOSE_NAME", "BY_NODE_ID", "BY_SIGNATURE", "DRIVER_COPY_KERNEL",
           "Dag", "HOST_NODE", "NO_COPY_EVENT", "NO_GPU_WORK", "NO_KERNEL_EVENT", "OUT_OF_ORDER", "ReplayMatch",
           "TIMED_KINDS", "event_name_keys", "fits", "is_copy_kernel", "match_replay", "node_name_keys"]
