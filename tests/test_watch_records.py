"""What gl.watch keeps of each graph, and its summary: records built from patch fields, no GPU needed."""
from __future__ import annotations

import gc
import json

import pytest
from conftest import FIXTURES

import graphlab as gl
from graphlab.errors import GraphlabError
from graphlab.watch.frames import COMPILE_TREES, MAKE_GRAPHED_CALLABLES, TORCH_CUDA_GRAPH
from graphlab.watch.records import ROW_COLUMNS, WatchedGraph, WatchedGraphs, shapes_text

MLP = (FIXTURES / "h200" / "models" / "mlp_b1__verbose.dot").read_text()
MLP8 = (FIXTURES / "h200" / "models" / "mlp_b8__verbose.dot").read_text()
MiB = 2**20


def fields(library, shapes=None, role=None, pool_bytes=MiB, dot=MLP, **extra):
    return {"library": library, "input_shapes": shapes, "role": role, "pool_bytes": pool_bytes, "dot": dot,
            "capture_ms": 1.5, "device": "cuda:0", "stream_id": 3, "pool_id": [0, 1], "captured_at": "2026-01-01T00Z",
            "user_file": "serve.py", "user_line": 12, **extra}


def watched() -> WatchedGraphs:
    seen = WatchedGraphs()
    seen.add(fields(COMPILE_TREES, role="pool keeper", pool_bytes=0, dot=None, dot_error="empty"))
    seen.add(fields(COMPILE_TREES, [[1, 64]], "recording", 2 * MiB))
    seen.add(fields(COMPILE_TREES, [[8, 64]], "recording", 4 * MiB, dot=MLP8))
    seen.add(fields(COMPILE_TREES, [[8, 64]], "recording", 0, dot=MLP8))
    seen.add(fields(MAKE_GRAPHED_CALLABLES, [[16, 64]], "forward"))
    seen.add(fields(TORCH_CUDA_GRAPH))
    return seen


def test_records_are_numbered_and_list_like():
    seen = watched()
    assert len(seen) == 6 and [g.index for g in seen] == list(range(6))
    assert seen[-1].library == TORCH_CUDA_GRAPH
    assert isinstance(seen[1:3], WatchedGraphs) and len(seen[1:3]) == 2
    assert seen.libraries == {COMPILE_TREES: 4, MAKE_GRAPHED_CALLABLES: 1, TORCH_CUDA_GRAPH: 1}
    assert len(seen.filter(library=COMPILE_TREES, role="recording")) == 3
    assert len(seen.filter(nonempty=True)) == 5
    assert seen.total_pool_bytes == 8 * MiB


def test_summary_counts_by_library_and_shape_with_pool_memory():
    summary = watched().summary()
    assert summary.graphs == 6 and summary.total_pool_bytes == 8 * MiB
    assert summary.by_library[COMPILE_TREES]["graphs"] == 4
    assert summary.by_library[COMPILE_TREES]["pool_bytes"] == 6 * MiB
    by_shape = {(r["library"], r["role"], r["input_shapes"]): r for r in summary.rows}
    assert by_shape[(COMPILE_TREES, "recording", "8x64")]["graphs"] == 2
    assert by_shape[(COMPILE_TREES, "recording", "8x64")]["pool_bytes"] == 4 * MiB
    assert by_shape[(TORCH_CUDA_GRAPH, "", "?")]["nodes"] == len(gl.parse_dot(MLP))
    text = str(summary)
    assert "6 graphs; their pools grew 8.00 MiB in all" in text and "8 x 64" in text
    assert "<table" in summary._repr_html_() and "pools grew (MiB)" in summary._repr_html_()
    frame = summary.to_pandas()
    assert list(frame.columns) == ["library", "role", "input_shapes", "graphs", "nodes", "kernels", "pool_bytes",
                                   "capture_ms"]
    assert frame.groupby("library")["graphs"].sum()[COMPILE_TREES] == 4


def test_one_row_per_graph_in_pandas():
    frame = watched().to_pandas()
    assert list(frame.columns) == list(ROW_COLUMNS) and len(frame) == 6
    assert frame.loc[1, "input_shapes"] == "1x64" and frame.loc[1, "where"] == "serve.py:12"
    assert frame.loc[0, "nodes"] is None or frame["nodes"].isna()[0]


def test_watched_graphs_draw_inspect_and_diff():
    seen = watched()
    a, b = seen[1], seen[2]
    assert isinstance(a.graph, gl.CudaGraph) and a.graph is a.graph  # parsed once
    assert a.name == f"{COMPILE_TREES} #1 [1x64]"
    d = gl.diff(a, b)
    assert d.names == (a.name, b.name) and d.a is a.graph
    drawing = gl.render(a)
    assert drawing.graph is a.graph
    assert gl.render_diff(a, b).diff is not None
    from graphlab.ui.drawing_widget import as_cuda_graph

    assert as_cuda_graph(a) is a.graph
    with pytest.raises(GraphlabError, match="has no DOT: empty"):
        gl.render(seen[0])


def test_records_round_trip_through_json():
    seen = watched()
    data = json.loads(json.dumps(seen.to_dicts()))
    again = WatchedGraphs.from_dicts(data)
    assert [g.to_dict() for g in again] == [g.to_dict() for g in seen]
    assert "dot" not in seen[1].to_dict(include_dot=False)
    with pytest.raises(GraphlabError, match="needs library"):
        WatchedGraph.from_dict({"index": 0})


def test_the_torch_graph_is_held_weakly():
    class Graph:
        pass

    seen = WatchedGraphs()
    g = Graph()
    seen.add({**fields(TORCH_CUDA_GRAPH), "torch_graph": g})
    assert seen[0].torch_graph is g
    del g
    gc.collect()
    assert seen[0].torch_graph is None, "a watch must not keep a library's graph (and its pool) alive"


def test_repr_and_shapes_text():
    seen = watched()
    assert "WatchedGraphs: 6 graphs (closed)" in repr(seen)
    assert "#2: torch.compile (CUDAGraph Trees) recording, inputs 8 x 64" in repr(seen[2])
    assert "no DOT (empty)" in repr(seen[0])
    assert "<table" in seen._repr_html_()
    assert shapes_text(None) == "?" and shapes_text([]) == "none" and shapes_text([[2, 3], []]) == "2x3, scalar"
