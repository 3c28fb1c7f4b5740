"""The critical path of a replay: the longest path through the DAG, weighted by measured node times and gaps.

Pure: standard library only. Each node starts when its last predecessor ends, plus the gap measured before it
(the GPU's dependency latency, about 0.1 µs on the H200; for a node with no predecessor, its start offset in the
replay). With the measured times this model gives back the measured span; change one node's time and it predicts
the new span (`simulate`, `what_if`). Untimed nodes (empty, event, conditional owners) pass through in 0 µs.

    >>> order = ["a", "b", "c"]; preds = {"a": (), "b": ("a",), "c": ("a",)}
    >>> path = critical_path(order, preds, {"a": 2.0, "b": 5.0, "c": 1.0}, {"a": 0.0, "b": 0.5, "c": 0.5})
    >>> path.node_ids, path.span_us
    (('a', 'b'), 7.5)
"""
from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Mapping, Sequence

from graphlab import present
from graphlab.errors import BadInputError


@dataclass(frozen=True)
class CriticalPath:
    """The longest chain of a replay.

    Attributes:
        node_ids: the nodes on it, first to last.
        span_us: the span the model gives (last end on the path, from the replay's first start).
        node_us: time spent running the path's nodes; `gap_us` the rest (dependency latency between them).
    """

    node_ids: tuple[str, ...]
    span_us: float
    node_us: float

    @property
    def gap_us(self) -> float:
        return max(0.0, self.span_us - self.node_us)

    def to_dict(self) -> dict[str, object]:
        return {"node_ids": list(self.node_ids), "span_us": self.span_us, "node_us": self.node_us}

    def describe(self) -> str:
        """The path in words: "47 nodes on the critical path: 179 µs, of it 21.3 µs gaps between nodes."."""
        n = len(self.node_ids)
        return (f"{present.count(n)} node{'s' if n != 1 else ''} on the critical path: "
                f"{present.duration(self.span_us)}, of it {present.duration(self.gap_us)} gaps between nodes.")

    def __str__(self) -> str:
        return self.describe()

    def _repr_html_(self) -> str:
        return f"<p>{html.escape(self.describe())}</p>"


def simulate(order: Sequence[str], preds: Mapping[str, Sequence[str]], dur_us: Mapping[str, float],
             gap_us: Mapping[str, float]) -> tuple[dict[str, float], dict[str, float]]:
    """(start, end) of every node in `order` (a topological order): start = the latest predecessor end + gap."""
    start: dict[str, float] = {}
    end: dict[str, float] = {}
    for nid in order:
        before = [end[p] for p in preds.get(nid, ()) if p in end]
        start[nid] = (max(before) if before else 0.0) + max(0.0, gap_us.get(nid, 0.0))
        end[nid] = start[nid] + max(0.0, dur_us.get(nid, 0.0))
    return start, end


def critical_path(order: Sequence[str], preds: Mapping[str, Sequence[str]], dur_us: Mapping[str, float],
                  gap_us: Mapping[str, float]) -> CriticalPath:
    """The longest path: from the node that ends last, back through the predecessor that ended last."""
    if not order:
        return CriticalPath((), 0.0, 0.0)
    _, end = simulate(order, preds, dur_us, gap_us)
    position = {nid: i for i, nid in enumerate(order)}
    last = max(order, key=lambda n: (end[n], -position[n]))
    path = [last]
    while True:
        before = [p for p in preds.get(path[-1], ()) if p in end]
        if not before:
            break
        path.append(max(before, key=lambda p: (end[p], -position[p])))
    path.reverse()
    timed = [n for n in path if dur_us.get(n, 0.0) > 0]
    return CriticalPath(tuple(timed or path), end[last], sum(dur_us.get(n, 0.0) for n in path))


def what_if(order: Sequence[str], preds: Mapping[str, Sequence[str]], dur_us: Mapping[str, float],
            gap_us: Mapping[str, float], changes: Mapping[str, float]) -> float:
    """The span the model predicts when each node in `changes` runs `factor` times as long (0.5: twice as fast).

    Raises:
        BadInputError: a changed node is not in `order`, or a factor is negative.
    """
    unknown = [n for n in changes if n not in set(order)]
    if unknown:
        raise BadInputError(f"what_if: {', '.join(unknown)} is not a node of this graph")
    if any(f < 0 for f in changes.values()):
        raise BadInputError("what_if: a node's time factor cannot be negative (0.5 means twice as fast)")
    new = {n: d * changes.get(n, 1.0) for n, d in dur_us.items()}
    _, end = simulate(order, preds, new, gap_us)
    return max(end.values(), default=0.0)


__all__ = ["CriticalPath", "critical_path", "simulate", "what_if"]
