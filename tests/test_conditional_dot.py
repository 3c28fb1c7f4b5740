"""Conditional graphs with PyTorch bodies, as the H200 dumped them, parse and draw with every body visible."""
from __future__ import annotations

import pytest
from conftest import FIXTURES

from graphlab.graph.dot_parser import read_dot
from graphlab.graph.model import NodeKind

COND = FIXTURES / "h200" / "conditional"
SET_KERNEL = "graphlab_set_conditional"


def _conditional(graph):
    (node,) = [n for n in graph.nodes() if n.kind is NodeKind.CONDITIONAL]
    return node


@pytest.mark.parametrize("name, ctype, bodies", [
    ("route_a_if_else", "IF/ELSE", 2), ("route_a_while", "WHILE", 1), ("route_a_switch", "SWITCH", 3),
    ("route_a_gpt", "IF", 1), ("route_b_if_thread_local", "IF", 1), ("route_b_gpt_while", "WHILE", 1),
])
def test_the_conditional_node_its_bodies_and_its_setter_parse(name, ctype, bodies):
    graph = read_dot(COND / f"{name}.dot")
    node = _conditional(graph)
    assert str(node.conditional_type) == ctype
    assert len(node.body_graph_ids) == bodies
    for body_id in node.body_graph_ids:
        assert graph.graph(body_id).parent_node_id == node.id
    # the set-condition kernel runs right before the conditional node, in the same graph
    parents = [e.src for e in graph.edges() if e.dst == node.id]
    assert [graph.node(p).name for p in parents] == [SET_KERNEL]
    if ctype == "WHILE":  # and again at the end of every iteration
        body = graph.graph(node.body_graph_ids[0])
        assert any(n.name == SET_KERNEL for n in body.nodes)


def test_route_child_bodies_hold_torch_graphs_and_route_capture_bodies_hold_the_kernels():
    child = read_dot(COND / "route_a_gpt.dot")
    body = child.graph(_conditional(child).body_graph_ids[0])
    assert [n.kind for n in body.nodes] == [NodeKind.CHILD_GRAPH]
    gpt = child.graph(body.nodes[0].body_graph_ids[0])
    assert sum(n.kind is NodeKind.KERNEL for n in gpt.nodes) > 30
    captured = read_dot(COND / "route_b_gpt_while.dot")
    body = captured.graph(_conditional(captured).body_graph_ids[0])
    assert not any(n.kind is NodeKind.CHILD_GRAPH for n in body.nodes)
    assert sum(n.kind is NodeKind.KERNEL for n in body.nodes) > 30
    assert {n.family for n in body.nodes if n.kind is NodeKind.KERNEL} >= {"cuBLAS", "attention"}


def test_drawings_label_every_body_and_show_the_loop():
    pytest.importorskip("graphviz")
    from graphlab.viz.drawing import render

    src = render(read_dot(COND / "route_a_if_else.dot")).source
    assert "IF/ELSE body (true)" in src and "IF/ELSE body (false)" in src and "child graph body" in src
    assert "graphlab_set_conditional" in src
    src = render(read_dot(COND / "route_a_switch.dot")).source
    assert all(f"SWITCH case {i}" in src for i in range(3))
    src = render(read_dot(COND / "route_b_gpt_while.dot")).source
    assert "WHILE body" in src and 'label="repeat?"' in src


def test_the_inspector_says_how_the_node_decides_and_which_body_is_which():
    pytest.importorskip("traitlets")
    from graphlab.ui.inspector import _GraphFacts

    for name, expected in (("route_a_if_else", "Bodies: IF/ELSE body (true), 1 node; IF/ELSE body (false), 1 node."),
                           ("route_b_gpt_while", "again at the end of every iteration")):
        graph = read_dot(COND / f"{name}.dot")
        note = _GraphFacts(graph).node_details(_conditional(graph).id)["note"]
        assert expected in note and SET_KERNEL in note
