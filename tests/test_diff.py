"""diff(a, b): node matching, statuses, change details, tables; on synthetic graphs and H200 captures."""
from __future__ import annotations

from collections import Counter

import pytest
from conftest import FIXTURES

from graphlab.graph.diff import diff
from graphlab.graph.model import ConditionalType, CudaGraph, Edge, Graph, Node, NodeKind

MODELS = FIXTURES / "h200" / "models"


def k(i: int, name: str, family: str = "ATen elementwise", grid=(1, 1, 1), gid: str = "graph_1", **kw) -> Node:
    return Node(f"{gid}_node_{i}", gid, i, NodeKind.KERNEL, short_name=name, family=family, grid=grid, **kw)


def chain(nodes: list[Node], source: str = "<string>", gid: str = "graph_1") -> CudaGraph:
    edges = tuple(Edge(a.id, b.id) for a, b in zip(nodes, nodes[1:]))
    return CudaGraph((Graph(gid, tuple(nodes), edges),), source=source)


def renumber(specs: list[tuple]) -> CudaGraph:
    return chain([k(i, *spec) for i, spec in enumerate(specs)])


def test_identical_graphs():
    g = renumber([("a",), ("b",), ("c",)])
    d = diff(g, g)
    assert d.identical
    assert d.rows() == []
    assert d.mapping() == {f"graph_1_node_{i}": f"graph_1_node_{i}" for i in range(3)}
    assert "identical (3 nodes)" in d.summary()


def test_grid_change_is_a_launch_change():
    d = diff(renumber([("a",), ("gelu", "ATen elementwise", (1, 1, 1))]),
             renumber([("a",), ("gelu", "ATen elementwise", (8, 1, 1))]))
    (row,) = d.rows()
    assert (row["status"], row["a"], row["b"], row["detail"]) == ("changed", "gelu", "gelu", "grid 1x1x1 -> 8x1x1")
    assert not row["kernel_changed"] and not d.changed[0].kernel_changed
    assert d.status_in_a("graph_1_node_1") == "changed" and d.status_in_b("graph_1_node_0") == "same"


def test_another_kernel_of_the_same_family_in_the_same_slot_is_a_kernel_change():
    d = diff(renumber([("ln",), ("gemv", "cuBLAS"), ("gelu",)]),
             renumber([("ln",), ("gemm 64x64", "cuBLAS"), ("gelu",)]))
    assert [m.status for m in d.matches] == ["same", "changed", "same"]
    (row,) = d.rows()
    assert (row["a"], row["b"], row["kernel_changed"]) == ("gemv", "gemm 64x64", True)


def test_kernels_of_two_families_never_pair():
    """Issue 24: kind-only matches paired "gemm (CUTLASS)" with "gelu"; a kernel of another family is removed and
    added instead."""
    d = diff(renumber([("ln",), ("gemv", "cuBLAS"), ("gelu",)]),
             renumber([("ln",), ("gemm 64x64", "CUTLASS"), ("gelu",)]))
    assert sorted(m.status for m in d.matches) == ["added", "removed", "same", "same"]
    assert all(d.a.node(m.a_id).family == d.b.node(m.b_id).family for m in d.matches if m.a_id and m.b_id)


def test_inserted_and_deleted_nodes_do_not_shift_the_rest():
    a = renumber([("a",), ("b",), ("c",), ("d",)])
    b = renumber([("a",), ("x",), ("b",), ("c",)])
    d = diff(a, b)
    assert d.mapping() == {"graph_1_node_0": "graph_1_node_0", "graph_1_node_1": "graph_1_node_2",
                           "graph_1_node_2": "graph_1_node_3"}
    assert [m.b_id for m in d.added] == ["graph_1_node_1"]
    assert [m.a_id for m in d.removed] == ["graph_1_node_3"]
    assert d.count_by_status() == {"same": 3, "changed": 0, "added": 1, "removed": 1}


def test_layers_stay_aligned_when_every_layer_picked_other_kernels():
    layer_a = [("ln", "ATen other"), ("gemm 64x64", "CUTLASS"), ("split-K", "cuBLAS"), ("add",)]
    layer_b = [("ln", "ATen other"), ("gemm 32x32", "cuBLAS"), ("add",)]
    d = diff(renumber(layer_a * 6), renumber(layer_b * 6))
    rows = {(r["status"], r["a"], r["b"]): r["count"] for r in d.rows()}
    # the split-K slot holds cuBLAS in both: it becomes the changed GEMM; CUTLASS is the one removed
    assert rows == {("changed", "split-K", "gemm 32x32"): 6, ("removed", "gemm 64x64", ""): 6}
    assert d.count_by_status()["same"] == 12  # ln and add of every layer


def test_every_node_appears_exactly_once_in_the_matches():
    a = renumber([("a",), ("b",), ("b",), ("c",)])
    b = renumber([("c",), ("b",), ("z",)])
    d = diff(a, b)
    assert Counter(m.a_id for m in d.matches if m.a_id) == Counter(n.id for n in a.nodes())
    assert Counter(m.b_id for m in d.matches if m.b_id) == Counter(n.id for n in b.nodes())


def _conditional(body_names: list[str]) -> CudaGraph:
    owner = Node("graph_1_node_0", "graph_1", 0, NodeKind.CONDITIONAL, conditional_type=ConditionalType.WHILE,
                 body_graph_ids=("graph_2",))
    body = chain([k(i, n, gid="graph_2") for i, n in enumerate(body_names)], gid="graph_2").root
    return CudaGraph((Graph("graph_1", (owner,), ()), Graph("graph_2", body.nodes, body.edges, "graph_1_node_0")))


def test_bodies_of_matched_conditionals_are_compared():
    d = diff(_conditional(["a", "b"]), _conditional(["a", "c", "b"]))
    assert [m.b_id for m in d.added] == ["graph_2_node_1"]
    assert d.status_in_a("graph_1_node_0") == "same"


def test_names_default_to_the_source_file_names():
    a = chain([k(0, "a")], source="/tmp/x/gpt_b1.dot")
    b = chain([k(0, "a")], source="/tmp/y/gpt_b8.dot")
    assert diff(a, b).names == ("gpt_b1.dot", "gpt_b8.dot")
    assert diff(a, a).names == ("gpt_b1.dot (a)", "gpt_b1.dot (b)")
    assert diff(a, b, names=("batch 1", "batch 8")).names == ("batch 1", "batch 8")


def test_html_and_text_tables():
    d = diff(renumber([("a",), ("b",)]), renumber([("a",), ("b", "ATen elementwise", (4, 1, 1)), ("c",)]),
             names=("batch 1", "batch 8"))
    html = d._repr_html_()
    assert "<table" in html and "batch 8" in html and "grid 1x1x1 -&gt; 4x1x1" in html
    text = d.summary()
    assert text.splitlines()[0] == "batch 1 vs batch 8: 1 changed, 1 added, 0 removed, 1 same"
    assert "kernel" in text and "added: c" in text
    assert len(d.rows(group=False)) == 2


def test_repr_is_one_short_line_and_the_html_stays(read):
    a, b = read(MODELS / "gpt_b1__verbose.dot"), read(MODELS / "gpt_b8__verbose.dot")
    d = diff(a, b, names=("batch 1", "batch 8"))
    text = repr(d)  # the dataclass repr printed both graphs and every match
    assert len(text) < 200 and "\n" not in text
    assert text == f"<GraphDiff 'batch 1' vs 'batch 8': {d._headline()}; {len(a)} vs {len(b)} nodes>"
    assert "<table" in d._repr_html_()  # notebooks still get the tables


# -- real captures ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def read():
    from graphlab.graph.dot_parser import read_dot

    return read_dot


def test_mlp_batch_1_vs_8_on_the_h200(read):
    a, b = read(MODELS / "mlp_b1__verbose.dot"), read(MODELS / "mlp_b8__verbose.dot")
    d = diff(a, b)
    assert d.count_by_kind() == {"kernel": (5, 6)}  # from MANIFEST.json's API census
    assert len(d.added) == 1 and not d.removed
    # batch 1 runs GEMV kernels; batch 8 switches to GEMMs: kernel changes, not just launch shapes
    assert any(m.kernel_changed for m in d.changed)


def test_gpt_batch_1_vs_8_matches_layer_by_layer(read):
    a, b = read(MODELS / "gpt_b1__verbose.dot"), read(MODELS / "gpt_b8__verbose.dot")
    d = diff(a, b, names=("batch 1", "batch 8"))
    assert d.count_by_kind() == {"kernel": (88, 75), "memset": (0, 6)}
    added = Counter(a_or_b for r in d.rows() if r["status"] == "added" for a_or_b in [r["b"]] * r["count"])
    assert added["memset"] == 6  # one per layer, so alignment kept the six layers apart
    # every layer_norm of batch 1 (2 per layer + final) faces a layer_norm of batch 8
    ln_rows = [r for r in d.rows() if r["a"] == "layer_norm (ATen)"]
    assert sum(r["count"] for r in ln_rows) == 13 and all(r["b"] == "layer_norm (ATen)" for r in ln_rows)


def test_large_graphs_are_aligned_within_a_band():
    # 2,100 x 2,101 nodes is past the exhaustive limit: the banded alignment must still find
    # the one inserted node and keep the 300 repeats of the 7-kernel pattern facing each other
    pattern = [("ln", "ATen other"), ("gemm", "cuBLAS"), ("attn", "attention"), ("gemm", "cuBLAS"),
               ("add",), ("gelu",), ("add",)]
    specs = pattern * 300
    a = renumber(specs)
    b = renumber(specs[:1000] + [("extra",)] + specs[1000:])
    d = diff(a, b)
    assert d.count_by_status() == {"same": 2100, "changed": 0, "added": 1, "removed": 0}
    assert d.added[0].b_id == "graph_1_node_1000"
