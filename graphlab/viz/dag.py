"""The DAG behind what a drawing or a widget is given: a `CudaGraph`, one `Graph` of it, or a captured graph.

Every captured graph implements `graphlab.capture.surface.Replayable` (live, recorded or an eager stand-in)
and holds its parsed DAG in `.graph`; so does anything else graphlab draws (a `WatchedGraph`, a `Drawing`).
`gl.render`, `gl.render_diff`, `gl.inspect` and `gl.inspect_diff` read the DAG here, through `.graph` only.
An eager stand-in has no DAG: its `.graph` raises `UnsupportedError` saying why, and that error is passed on
as it is, never turned into "cannot draw an EagerGraph".

    >>> from graphlab.graph.model import CudaGraph
    >>> dag_of(CudaGraph(())) is not None, dag_of(42)
    (True, None)

Pure: imports no torch, graphviz, plotly or widgets (the Protocol is pure too).
"""
from __future__ import annotations

from typing import Any, Union

from graphlab.capture.surface import Replayable
from graphlab.graph.model import CudaGraph, Graph

#: what the drawings and widgets take: a parsed dump, one graph of it, or a captured graph of any origin
GraphLike = Union[CudaGraph, Graph, Replayable]


def dag_of(obj: Any) -> CudaGraph | None:
    """The `CudaGraph` that `obj` is or holds; None when `obj` is no graph at all (the caller says what it takes).

    A lone `Graph` (the root or a body) becomes a `CudaGraph` of that one graph. A captured graph gives its
    `.graph`; an eager stand-in's `UnsupportedError` (it has no DAG) goes on to the caller unchanged.
    """
    if isinstance(obj, CudaGraph):
        return obj
    if isinstance(obj, Graph):
        return CudaGraph((obj,))
    inner = getattr(obj, "graph", None)  # only AttributeError means "no .graph": UnsupportedError goes on
    return inner if isinstance(inner, CudaGraph) else None


__all__ = ["GraphLike", "dag_of"]
