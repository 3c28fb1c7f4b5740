"""The node schema: one field list in `Node` that the label reader, the JSON form, the CLI and the GPU
census all derive theirs from; and the parser's fast way of making a node equals the normal one."""
from __future__ import annotations

import dataclasses
import json

import pytest
from conftest import FIXTURES

from graphlab.graph.dot_labels import NodeFields
from graphlab.graph.dot_parser import read_dot
from graphlab.graph.model import (
    ConditionalType,
    CudaGraph,
    Node,
    NodeKind,
    node_field_names,
)

H200 = FIXTURES / "h200"
SAMPLES = [
    H200 / "kinds" / "mixed__all.dot",
    H200 / "kinds" / "mixed__verbose.dot",
    H200 / "kinds" / "conditional_switch__all.dot",
    H200 / "kinds" / "nested__verbose.dot",
    H200 / "models" / "gpt_b1__verbose.dot",
    H200 / "models" / "mlp_b8__default.dot",
]


def _nodes() -> list[Node]:
    return [n for path in SAMPLES for n in read_dot(path).nodes()]


def test_the_parser_fast_path_makes_the_same_node_as_the_constructor() -> None:
    nodes = _nodes()
    assert len(nodes) > 100
    for node in nodes:
        again = Node(**{f.name: getattr(node, f.name) for f in dataclasses.fields(Node)})
        assert again == node and again.details == node.details and hash(again) == hash(node)
        names = [f.name for f in dataclasses.fields(Node)]
        assert [getattr(again, f) for f in names] == [getattr(node, f) for f in names]  # every field reads the same
        # the parser's node holds only the fields that are set (the others read their default from the class)
        assert set(vars(node)) <= set(names) and set(vars(node)) == {f for f, v in vars(again).items()
                                                                     if v is not None and v != () or f == "details"}


def test_to_dict_keeps_its_shape_and_round_trips() -> None:
    node = Node("graph_1_node_3", "graph_1", 3, NodeKind.KERNEL, topo_id=7, name="k", grid=(2, 1, 1),
                block=(128, 1, 1), shared_bytes=0, handle="0x1", details={"func handle": "0x2"})
    assert list(node.to_dict().items()) == [
        ("id", "graph_1_node_3"), ("kind", "kernel"), ("graph_id", "graph_1"), ("index", 3), ("topo_id", 7),
        ("name", "k"), ("grid", [2, 1, 1]), ("block", [128, 1, 1]), ("shared_bytes", 0), ("handle", "0x1"),
        ("details", {"func handle": "0x2"}),
    ]
    cond = Node("g_n0", "g", 0, NodeKind.CONDITIONAL, conditional_type=ConditionalType.IF_ELSE,
                body_graph_ids=("graph_2", "graph_3"))
    assert cond.to_dict() == {"id": "g_n0", "kind": "conditional", "graph_id": "g", "index": 0,
                              "conditional_type": "IF/ELSE", "body_graph_ids": ["graph_2", "graph_3"]}
    for n in [node, cond, *_nodes()]:
        data = json.loads(json.dumps(n.to_dict()))
        back = Node.from_dict(data)
        assert back == n and back.details == n.details
        assert isinstance(back.kind, NodeKind) and (back.grid is None or isinstance(back.grid, tuple))


def test_from_dict_ignores_keys_it_does_not_know() -> None:
    data = {"id": "g_n0", "kind": "empty", "graph_id": "g", "index": 0, "label": "empty", "new_field": 1}
    assert Node.from_dict(data) == Node("g_n0", "g", 0, NodeKind.EMPTY)


def test_a_whole_graph_round_trips_through_json() -> None:
    for path in SAMPLES:
        graph = read_dot(path)
        again = CudaGraph.from_json(graph.to_json())
        names = [f.name for f in dataclasses.fields(Node)]
        assert [[getattr(n, f) for f in names] for n in again.nodes()] == [[getattr(n, f) for f in names] for n in graph.nodes()]
        assert list(again.edges()) == list(graph.edges())


def test_every_reader_of_the_schema_follows_node() -> None:
    """One field list: adding a field to `Node` changes NodeFields, the JSON, the CLI and the census."""
    label_fields = node_field_names(source="label")
    assert set(vars(NodeFields(NodeKind.KERNEL))) == {*label_fields, "bodies"}
    assert set(Node.__dataclass_fields__) == {
        *node_field_names(source="identity"), *label_fields, *node_field_names(source="derived"),
        *node_field_names(source="structure")}
    assert node_field_names(kind="kernel", census=True) == ("name", "grid", "block", "shared_bytes")
    census = pytest.importorskip("graphlab.graph.census")
    shared = [f.name for f in dataclasses.fields(census.CensusNode)][3:-1]
    assert ["kind", *shared] == list(node_field_names(census=True))
    assert census.CensusNode(0, 1, "kernel", "k", (1, 1, 1)).grid == (1, 1, 1)  # positional order kept


def test_node_field_names_filters() -> None:
    assert node_field_names(source="identity") == ("id", "graph_id", "index")
    assert node_field_names(source="derived") == ("demangled_name", "short_name", "family")
    assert node_field_names(kind="memcpy") == ("copy_direction", "copy_bytes")
    assert "details" in node_field_names(source="label") and "details" not in node_field_names(kind="kernel")


def test_reprs_are_one_short_line() -> None:
    """In a terminal `graph` must not print every node (the dataclass repr was tens of KB)."""
    from graphlab.recordings import load_recording

    graph = load_recording("resnet18").graph("b64")
    assert len(str(graph.to_dict())) > 50_000
    text = repr(graph)
    assert len(text) < 200 and "\n" not in text
    assert text.startswith("<CudaGraph 'resnet18 b64 (H200)': ") and f"{len(graph):,} nodes" in text
    assert f"{graph.count_by_kind()['kernel']} kernel" in text and "edges" in text
    mixed = read_dot(H200 / "kinds" / "mixed__all.dot")
    assert repr(mixed).endswith("9 edges + 3 body graphs>") and ", ...)" in repr(mixed)  # four kinds, then "..."
    assert repr(mixed.graphs[1]) == "<Graph graph_29: 1 node, 0 edges, body of graph_27_node_8>"
    assert len(repr(mixed.graphs)) < 400
