"""Structure queries: topological order, levels, neighbours, and repeated-block detection."""
from __future__ import annotations

import pytest
from conftest import FIXTURES, PUBLIC_SAMPLES
from hypothesis import given, settings
from hypothesis import strategies as st

from graphlab.graph.model import ConditionalType, CudaGraph, Edge, Graph, Node, NodeKind
from graphlab.graph.structure import (
    bridged_edges,
    GraphCycleError,
    analyze,
    depth,
    find_repeated_blocks,
    levels,
    predecessors,
    signature,
    successors,
    summary,
    topological_order,
    widest_level,
)

MODELS = FIXTURES / "h200" / "models"


def kernel(gid: str, i: int, name: str, family: str = "ATen elementwise") -> Node:
    return Node(f"{gid}_node_{i}", gid, i, NodeKind.KERNEL, short_name=name, family=family)


def chain(names: list[str], gid: str = "graph_1") -> Graph:
    """A single-stream capture: kernels one after another."""
    nodes = tuple(kernel(gid, i, n) for i, n in enumerate(names))
    edges = tuple(Edge(a.id, b.id) for a, b in zip(nodes, nodes[1:]))
    return Graph(gid, nodes, edges)


def diamond() -> Graph:
    """0 -> {1, 2, 3} -> 4, with 3 created before 1 and 2 to test tie-breaking."""
    names = ["src", "b", "c", "d", "sink"]
    nodes = tuple(kernel("g", i, n) for i, n in enumerate(names))
    edges = [Edge("g_node_0", f"g_node_{i}") for i in (3, 1, 2)] + [Edge(f"g_node_{i}", "g_node_4") for i in (1, 2, 3)]
    return Graph("g", nodes, tuple(edges))


def test_topological_order_breaks_ties_by_capture_index():
    assert topological_order(diamond()) == [f"g_node_{i}" for i in range(5)]


def test_topological_order_respects_edges_against_index_order():
    nodes = tuple(kernel("g", i, "k") for i in range(3))
    g = Graph("g", nodes, (Edge("g_node_2", "g_node_0"), Edge("g_node_0", "g_node_1")))
    assert topological_order(g) == ["g_node_2", "g_node_0", "g_node_1"]


def test_levels_depth_and_widest_level_of_a_diamond():
    g = diamond()
    assert levels(g) == {"g_node_0": 0, "g_node_1": 1, "g_node_2": 1, "g_node_3": 1, "g_node_4": 2}
    assert depth(g) == 3
    assert widest_level(g) == 3
    assert analyze(g).level_widths == [1, 3, 1]


def test_levels_use_the_longest_path():
    # 0 -> 1 -> 2 -> 3 and a shortcut 0 -> 3: node 3 sits on level 3, not 1
    g = chain(["a", "b", "c", "d"], "g")
    g = Graph("g", g.nodes, g.edges + (Edge("g_node_0", "g_node_3"),))
    assert levels(g)["g_node_3"] == 3
    assert depth(g) == 4 and widest_level(g) == 1


def test_predecessors_and_successors():
    g = diamond()
    assert successors(g, "g_node_0") == ["g_node_1", "g_node_2", "g_node_3"]
    assert predecessors(g, "g_node_4") == ["g_node_1", "g_node_2", "g_node_3"]
    assert predecessors(g, "g_node_0") == [] and successors(g, "g_node_4") == []
    assert analyze(g).position("g_node_4") == 4


def test_neighbours_in_a_body_graph_are_found_through_the_cudagraph():
    root = Graph("graph_1", (Node("graph_1_node_0", "graph_1", 0, NodeKind.CONDITIONAL,
                                  conditional_type=ConditionalType.WHILE, body_graph_ids=("graph_2",)),), ())
    body = chain(["x", "y"], "graph_2")
    body = Graph(body.id, body.nodes, body.edges, parent_node_id="graph_1_node_0")
    cg = CudaGraph((root, body))
    assert successors(cg, "graph_2_node_0") == ["graph_2_node_1"]
    assert predecessors(cg, "graph_2_node_1") == ["graph_2_node_0"]
    s = summary(cg)
    assert (s.nodes, s.edges, s.graphs, s.depth, s.widest_level) == (3, 1, 2, 1, 1)
    assert s.by_kind == {"kernel": 2, "conditional": 1}


def test_a_cycle_is_one_clear_error():
    g = chain(["a", "b", "c"], "g")
    g = Graph("g", g.nodes, g.edges + (Edge("g_node_2", "g_node_0"),))
    with pytest.raises(GraphCycleError, match="graph g has a cycle"):
        topological_order(g)


def test_analysis_is_cached_per_graph_object():
    g = diamond()
    assert analyze(g) is analyze(g)


# -- repeated blocks ------------------------------------------------------------------------

LAYER = ["layer_norm", "gemm", "attention", "gemm", "add", "layer_norm", "gemm", "gelu", "gemm", "add"]


def test_twelve_identical_layers_are_one_block_of_twelve():
    g = chain(["embed"] + LAYER * 12 + ["layer_norm", "lm_head"])
    (block,) = find_repeated_blocks(g)
    assert (block.id, block.count, block.period, block.start) == ("block_0", 12, len(LAYER), 1)
    assert block.node_ids[0] == tuple(f"graph_1_node_{i}" for i in range(1, 11))
    assert block.node_ids[11][-1] == "graph_1_node_120"
    assert block.locate("graph_1_node_12") == (1, 1)
    assert block.locate("graph_1_node_0") is None
    # node i of every repeat does the same work
    nodes = {n.id: n for n in g.nodes}
    for offset in range(block.period):
        assert len({signature(nodes[rep[offset]]) for rep in block.node_ids}) == 1


def test_no_blocks_in_a_graph_without_repetition():
    assert find_repeated_blocks(chain(list("abcdefgh"))) == []


def test_two_identical_kernels_in_a_row_are_not_a_block():
    assert find_repeated_blocks(chain(["a", "b", "b", "c"])) == []
    assert [b.count for b in find_repeated_blocks(chain(["a", "b", "b", "c"]), min_saved_nodes=1)] == [2]


def test_two_layers_are_found_even_when_not_aligned_to_the_period():
    g = chain(["x", "y", "z"] + LAYER * 2)
    (block,) = find_repeated_blocks(g)
    assert (block.start, block.period, block.count) == (3, len(LAYER), 2)


def test_a_run_of_one_kernel_has_period_one():
    (block,) = find_repeated_blocks(chain(["a"] + ["fill"] * 50 + ["b"]))
    assert (block.start, block.period, block.count) == (1, 1, 50)


def test_separate_runs_are_numbered_in_order():
    g = chain(["p", "q"] * 4 + ["sep"] + ["r", "s", "t"] * 3)
    blocks = find_repeated_blocks(g)
    assert [(b.id, b.start, b.period, b.count) for b in blocks] == [("block_0", 0, 2, 4), ("block_1", 9, 3, 3)]


def test_blocks_are_found_inside_body_graphs_too():
    root = Graph("graph_1", (Node("graph_1_node_0", "graph_1", 0, NodeKind.CHILD_GRAPH, body_graph_ids=("graph_2",)),), ())
    body = chain(["a", "b"] * 5, "graph_2")
    blocks = find_repeated_blocks(CudaGraph((root, Graph("graph_2", body.nodes, body.edges, "graph_1_node_0"))))
    assert [(b.graph_id, b.count) for b in blocks] == [("graph_2", 5)]


def test_family_is_part_of_the_signature():
    nodes = tuple(kernel("g", i, "gemm", "cuBLAS" if i % 2 else "CUTLASS") for i in range(8))
    g = Graph("g", nodes, tuple(Edge(a.id, b.id) for a, b in zip(nodes, nodes[1:])))
    (block,) = find_repeated_blocks(g)
    assert (block.period, block.count) == (2, 4)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from("abc"), min_size=0, max_size=40))
def test_blocks_are_true_disjoint_repeats(names):
    g = chain(names, "g")
    order = topological_order(g)
    seq = [names[int(nid.rsplit("_", 1)[1])] for nid in order]
    taken: set[int] = set()
    blocks = find_repeated_blocks(g)
    for b in blocks:
        span = range(b.start, b.start + b.count * b.period)
        assert not taken & set(span)
        taken |= set(span)
        unit = seq[b.start : b.start + b.period]
        assert seq[span.start : span.stop] == unit * b.count
        assert list(order[span.start : span.stop]) == b.all_node_ids()
        assert (b.count - 1) * b.period >= 2
    # the first choice covers as many nodes as the best tandem repeat found by brute force
    best = 0
    for k in range(1, len(seq) // 2 + 1):
        for s in range(len(seq)):
            c = 1
            while seq[s + c * k : s + (c + 1) * k] == seq[s : s + k] and s + (c + 1) * k <= len(seq):
                c += 1
            if c >= 2 and (c - 1) * k >= 2:
                best = max(best, c * k)
    assert max((b.count * b.period for b in blocks), default=0) == best


def test_detection_is_deterministic():
    g = chain((["a", "b", "c"] * 7 + ["d"]) * 3)
    assert find_repeated_blocks(g) == find_repeated_blocks(chain((["a", "b", "c"] * 7 + ["d"]) * 3))


# -- real captures ------------------------------------------------------------------------


def _read(path):
    from graphlab.graph.dot_parser import read_dot

    return read_dot(path)


def test_six_layer_gpt_capture_has_one_block_of_six():
    g = _read(MODELS / "gpt_b1__verbose.dot")
    (block,) = find_repeated_blocks(g)
    assert block.count == 6  # TinyGPT(layers=6) in tests/fixtures/make_fixtures.py
    assert block.period * block.count + 4 == len(g)  # gather, then layers, then layer_norm and two GEMMs
    s = summary(g)
    assert s.depth == 88 and s.widest_level == 1  # one stream: a chain


def test_candle_mlp_sample_hidden_layers_collapse():
    g = _read(PUBLIC_SAMPLES / "candle_mlp34_69kernels_67a48c5.dot")
    (block,) = find_repeated_blocks(g)
    # up Linear+relu is 6 nodes; then 32 hidden + 1 down Linear are (alloc, gemv, alloc, badd) each
    assert (block.start, block.period, block.count) == (6, 4, 33)
    assert depth(g) == 138


def test_bridged_edges_join_around_hidden_nodes():
    g = diamond()  # 0 -> {1, 2, 3} -> 4
    edges = bridged_edges(g, {"g_node_1", "g_node_2"})
    assert edges == [("g_node_0", "g_node_4", True), ("g_node_0", "g_node_3", False), ("g_node_3", "g_node_4", False)]
    # a chain with two hidden nodes in a row still joins its ends
    assert bridged_edges(chain(list("abcd"), "g"), {"g_node_1", "g_node_2"}) == [("g_node_0", "g_node_3", True)]
    assert bridged_edges(g, set()) == [(e.src, e.dst, False) for e in sorted(g.edges, key=lambda e: (e.src, e.dst))]
