"""Every real dump parses right: the public samples, and every H200 fixture against the census that
`tests/fixtures/h200/make_fixtures.py` took through the CUDA graph API (independently of the DOT text).
"""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Any

import pytest
from conftest import FIXTURES, PUBLIC_SAMPLES

from graphlab.graph.dot_parser import read_dot
from graphlab.graph.model import ConditionalType, CudaGraph, NodeKind
from graphlab.errors import DotParseError

H200 = FIXTURES / "h200"
MANIFEST = H200 / "MANIFEST.json"
ENTRIES: list[dict[str, Any]] = json.loads(MANIFEST.read_text())["files"] if MANIFEST.exists() else []
needs_manifest = pytest.mark.skipif(not ENTRIES, reason="tests/fixtures/h200/MANIFEST.json is not there")
needs_public = pytest.mark.skipif(not PUBLIC_SAMPLES.is_dir(), reason="public DOT samples are not there")


def _check_well_formed(graph: CudaGraph) -> None:
    """Ids unique, edges inside one graph, every body owned by exactly one node of another graph."""
    ids = [n.id for n in graph.nodes()]
    assert len(ids) == len(set(ids))
    graph_ids = [g.id for g in graph.graphs]
    assert len(graph_ids) == len(set(graph_ids))
    assert graph.graphs[0].parent_node_id is None
    for g in graph.graphs:
        node_ids = {n.id for n in g.nodes}
        assert all(n.graph_id == g.id for n in g.nodes)
        assert all(e.src in node_ids and e.dst in node_ids for e in g.edges)
        if g.parent_node_id is not None:
            assert g.id in graph.node(g.parent_node_id).body_graph_ids
    for node in graph.nodes():
        assert sorted(node.index for node in graph.graph(node.graph_id).nodes) == list(
            range(len(graph.graph(node.graph_id).nodes))
        )
        for body in node.body_graph_ids:
            assert graph.graph(body).parent_node_id == node.id


# -- public samples --------------------------------------------------------------------------------
PUBLIC_COUNTS = {
    "candle_log_1kernel_8d68bb2.dot": ({"mem_alloc": 1, "kernel": 1}, 1),
    "candle_mlp2_3kernels_c47e52a.dot": ({"mem_alloc": 3, "kernel": 3}, 5),
    "candle_mlp34_69kernels_67a48c5.dot": ({"mem_alloc": 69, "kernel": 69}, 137),
    "candle_26matmuls_memfree_a4eae54.dot": ({"mem_alloc": 26, "kernel": 26, "mem_free": 25}, 76),
}


@needs_public
@pytest.mark.parametrize("name", sorted(PUBLIC_COUNTS))
def test_public_sample_counts(name: str) -> None:
    graph = read_dot(PUBLIC_SAMPLES / name)
    kinds, edge_count = PUBLIC_COUNTS[name]
    assert graph.count_by_kind() == kinds
    assert len(list(graph.edges())) == edge_count
    assert len(graph.graphs) == 1
    _check_well_formed(graph)
    topo = sorted(n.topo_id for n in graph.nodes())
    assert topo == list(range(len(topo)))  # verbose dumps: topoId is a permutation of 0..n-1


@needs_public
def test_candle_69_kernel_sample_details() -> None:
    graph = read_dot(PUBLIC_SAMPLES / "candle_mlp34_69kernels_67a48c5.dot")
    first = graph.kernels()[0]
    assert first.short_name == "gemv (cuBLAS)" and first.block == (2, 64, 1) and first.shared_bytes == 784
    assert first.demangled_name.startswith("std::enable_if<true, void>::type internal::gemvx::kernel<int, int,")
    families = graph.count_by_family()
    assert families == {"other": 35, "cuBLAS": 34}
    assert {n.name for n in graph.kernels() if n.family == "other"} == {"badd_bf16", "urelu_bf16"}
    alloc = graph.node("graph_1_node_0")
    assert alloc.details["bytesize"] == "128" and alloc.details["poolProps.location.type"] == "DEVICE"


@needs_public
def test_public_cutlass_sample_kernels() -> None:
    graph = read_dot(PUBLIC_SAMPLES / "candle_26matmuls_memfree_a4eae54.dot")
    assert {(k.short_name, k.grid, k.block, k.shared_bytes) for k in graph.kernels()} == {
        ("gemm 32x32 (CUTLASS)", (1, 1, 1), (128, 1, 1), 37376)
    }


@needs_public
def test_truncated_issue_excerpt_is_rejected() -> None:
    path = PUBLIC_SAMPLES / "pytorch-issue-126753-excerpt.dot"
    with pytest.raises(DotParseError, match="unterminated string") as info:
        read_dot(path)
    assert info.value.line == 18 and info.value.source == str(path)


# -- H200 fixtures against the API census ----------------------------------------------------------
@needs_manifest
@pytest.mark.parametrize("entry", ENTRIES, ids=[e["file"] for e in ENTRIES])
def test_fixture_matches_census(entry: dict[str, Any]) -> None:
    graph = read_dot(H200 / entry["file"])
    _check_well_formed(graph)
    census = entry.get("census")
    if not census:  # the cudaMallocAsync capture has no census (see tests/fixtures/README.md)
        assert graph.count_by_kind()
        return
    assert sorted(graph.count_by_kind().items()) == sorted(census["kinds"].items())
    assert len(graph.graphs) == census["graphs"]
    assert len(list(graph.edges())) == census["edges"]
    kernels = graph.kernels()
    assert [k.name for k in kernels] == [k["name"] for k in census["kernels"]]
    for node, expected in zip(kernels, census["kernels"]):
        assert node.demangled_name and node.short_name and node.family
        if node.grid is not None:  # shown with kernel params (4), verbose (1) and their unions
            assert (node.grid, node.block, node.shared_bytes) == (
                tuple(expected["grid"]), tuple(expected["block"]), expected["shared_bytes"]
            )


def _by_fixture() -> dict[str, dict[str, CudaGraph]]:
    groups: dict[str, dict[str, CudaGraph]] = defaultdict(dict)
    for entry in ENTRIES:
        groups[entry["fixture"]][entry["flag_name"]] = read_dot(H200 / entry["file"])
    return groups


@needs_manifest
def test_flag_variants_agree() -> None:
    """Each flag shows more or less, but never a different graph: same nodes, kinds, names, and the
    same launch dimensions, copy and memset fields wherever a variant shows them."""
    for fixture, variants in _by_fixture().items():
        reference = variants["default"]
        shown: dict[str, dict[str, set[Any]]] = defaultdict(lambda: defaultdict(set))
        for flag, graph in variants.items():
            assert [(n.id, n.kind, n.name, n.body_graph_ids) for n in graph.nodes()] == [
                (n.id, n.kind, n.name, n.body_graph_ids) for n in reference.nodes()
            ], (fixture, flag)
            assert [(e.src, e.dst) for e in graph.edges()] == [(e.src, e.dst) for e in reference.edges()]
            for node in graph.nodes():
                for attr in ("grid", "block", "shared_bytes", "copy_direction", "copy_bytes", "memset_bytes",
                             "memset_value", "conditional_type"):
                    value = getattr(node, attr)
                    if value is not None:
                        shown[node.id][attr].add(value)
        for node_id, attrs in shown.items():
            for attr, values in attrs.items():
                assert len(values) == 1, (fixture, node_id, attr, values)


@needs_manifest
def test_flags_show_what_they_promise() -> None:
    groups = _by_fixture()
    kernel = groups["kernel"]
    assert all(n.grid is not None for n in kernel["kernel_params"].kernels())
    assert all(n.grid is None for n in kernel["default"].kernels())
    assert all(n.handle and "func handle" in n.details for n in kernel["handles"].kernels())
    assert all(n.topo_id is not None for n in kernel["extra_topo_info"].nodes())
    assert all("priority" in n.details and n.grid is None for n in kernel["kernel_attributes"].kernels())
    for flag in ("verbose", "all"):
        for graph in (g[flag] for g in groups.values()):
            assert all(n.topo_id is not None and n.handle for n in graph.nodes())
            for g in graph.graphs:
                assert sorted(n.topo_id for n in g.nodes) == list(range(len(g.nodes)))
    (host_node,) = [n for n in groups["host"]["host_params"].nodes() if n.kind is NodeKind.HOST]
    assert set(host_node.details) == {"fn", "userData"}
    (wait,) = [n for n in groups["event"]["event_params"].nodes() if n.kind is NodeKind.WAIT_EVENT]
    assert wait.details["event"].startswith("0x")


@needs_manifest
def test_fixture_semantics() -> None:
    groups = _by_fixture()
    expected_types = {
        "conditional_if": [ConditionalType.IF],
        "conditional_if_else": [ConditionalType.IF_ELSE],
        "conditional_while": [ConditionalType.WHILE],
        "conditional_switch": [ConditionalType.SWITCH],
        "nested": [ConditionalType.WHILE, ConditionalType.IF],
    }
    body_counts = {"conditional_if": 1, "conditional_if_else": 2, "conditional_while": 1, "conditional_switch": 3}
    for fixture, types in expected_types.items():
        for flag, graph in groups[fixture].items():
            conditionals = [n for n in graph.nodes() if n.kind is NodeKind.CONDITIONAL]
            assert [n.conditional_type for n in conditionals] == types, (fixture, flag)
            if fixture in body_counts:
                assert len(conditionals[0].body_graph_ids) == body_counts[fixture]
    nested = groups["nested"]["default"]
    outer, inner = (n for n in nested.nodes() if n.kind is NodeKind.CONDITIONAL)
    assert inner.graph_id in outer.body_graph_ids and nested.graph(inner.body_graph_ids[0]).parent_node_id == inner.id
    copies = [n for n in groups["memcpy"]["all"].nodes()]
    assert [(n.copy_direction, n.copy_bytes) for n in copies] == [("HtoD", 16384), ("DtoD", 16384), ("DtoH", 16384)]
    (child,) = [n for n in groups["child_graph"]["default"].nodes() if n.kind is NodeKind.CHILD_GRAPH]
    assert [n.kind for n in groups["child_graph"]["default"].graph(child.body_graph_ids[0]).nodes] == [
        NodeKind.MEMSET, NodeKind.MEMSET
    ]


@needs_manifest
def test_model_captures_read_well() -> None:
    """What a learner sees for the real PyTorch captures: readable names in the expected families."""
    gpt_b1 = read_dot(H200 / "models/gpt_b1__verbose.dot")
    gpt_b8 = read_dot(H200 / "models/gpt_b8__verbose.dot")
    for graph in (gpt_b1, gpt_b8):
        names = Counter(n.short_name for n in graph.kernels())
        assert names["mem-efficient fwd (attention)"] == 6  # one per decoder layer
        assert names["gelu (elementwise)"] == 6
        assert names["layer_norm (ATen)"] == 13  # two per layer and the final one
        assert not [n for n in graph.kernels() if n.family == "other"]
    # batch size changes which GEMM kernels cuBLAS picks
    assert {n.short_name for n in gpt_b1.kernels()} != {n.short_name for n in gpt_b8.kernels()}
    alloc = read_dot(H200 / "alloc/torch_mallocasync__verbose.dot")
    assert alloc.count_by_kind()["mem_alloc"] == 5 and alloc.count_by_kind()["mem_free"] == 3


@needs_manifest
def test_nothing_the_driver_printed_is_lost() -> None:
    """Every pointer/handle value (0x...) and every 'key | value' number in the all-flags dumps ends
    up in a model field or in `details`."""
    import re

    node_text = re.compile(r'^"(graph_\d+_node_\d+)"\[(.*?)\];$', re.MULTILINE | re.DOTALL)
    for entry in ENTRIES:
        if entry["flag_name"] != "all":
            continue
        path = H200 / entry["file"]
        graph = read_dot(path)
        for node_id, attrs in node_text.findall(path.read_text()):
            node = graph.node(node_id)
            kept = set(node.details.values()) | {node.handle}
            printed = set(re.findall(r"0x[0-9A-Fa-f]+", attrs.split("label=", 1)[1]))
            assert printed <= kept, (entry["file"], node_id, printed - kept)


def test_windows_line_endings_read_the_same() -> None:
    text = (PUBLIC_SAMPLES / "candle_mlp2_3kernels_c47e52a.dot").read_text() if PUBLIC_SAMPLES.is_dir() else None
    if text is None:
        pytest.skip("public samples are not there")
    from graphlab.graph.dot_parser import parse_dot

    assert parse_dot(text.replace("\n", "\r\n")).to_dict()["graphs"] == parse_dot(text).to_dict()["graphs"]
