"""diff(a, b, modules=...): the module that launched each node as a key, where both sides know it (issue 24).

Synthetic chains with known answers, then the zoo GPT's profiles recorded on the H200 (batch 1 vs 64)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from test_diff import renumber

import graphlab as gl
from graphlab.errors import BadInputError
from graphlab.graph.diff import diff, modules_text


def ids(*indexes: int) -> list[str]:
    return [f"graph_1_node_{i}" for i in indexes]


def mods(*paths: str) -> dict[str, str]:
    return {nid: p for nid, p in zip(ids(*range(len(paths))), paths)}


def test_two_nodes_of_different_modules_never_pair():
    g = renumber([("ln",), ("gemm", "cuBLAS")])
    d = diff(g, g, modules=(mods("ln", "blocks.0.fc"), mods("ln", "blocks.1.fc")))
    assert d.mapping() == {"graph_1_node_0": "graph_1_node_0"}  # the GEMMs are not "same": other modules
    assert [m.a_id for m in d.removed] == ids(1) and [m.b_id for m in d.added] == ids(1)
    assert diff(g, g).identical  # without modules they pair, as before


def test_a_node_pairs_within_its_module_before_a_closer_name_elsewhere():
    a = renumber([("gemm A", "cuBLAS"), ("gemm B", "cuBLAS")])
    b = renumber([("gemm B", "cuBLAS")])
    assert diff(a, b).mapping() == {"graph_1_node_1": "graph_1_node_0"}  # by name alone: B faces B
    d = diff(a, b, modules=(mods("fc1", "fc2"), mods("fc1")))
    assert d.mapping() == {"graph_1_node_0": "graph_1_node_0"}  # by module: fc1 faces fc1, another kernel
    (changed,) = d.changed
    assert changed.kernel_changed and d.status_in_a("graph_1_node_1") == "removed"


def test_a_known_module_outweighs_an_exact_name_whose_module_is_unknown():
    a = renumber([("gemm A", "cuBLAS")])
    b = renumber([("gemm A", "cuBLAS"), ("gemm B", "cuBLAS")])
    d = diff(a, b, modules=(mods("fc1"), {"graph_1_node_1": "fc1"}))  # b's node 0: module unknown
    assert d.mapping() == {"graph_1_node_0": "graph_1_node_1"}


def test_a_side_without_modules_aligns_as_before():
    a = renumber([("gemm A", "cuBLAS"), ("gemm B", "cuBLAS")])
    b = renumber([("gemm B", "cuBLAS")])
    assert diff(a, b, modules=(mods("fc1", "fc2"), None)).mapping() == diff(a, b).mapping()
    assert diff(a, b, modules=(mods("fc1", "fc2"), {})).mapping() == diff(a, b).mapping()


def test_a_fused_kernel_of_several_modules_pairs_with_one_of_the_same_set():
    g = renumber([("add_gelu", "Triton")])
    same = diff(g, g, modules=({"graph_1_node_0": ["mlp.act", "mlp"]}, {"graph_1_node_0": ("mlp", "mlp.act")}))
    assert same.identical
    other = diff(g, g, modules=({"graph_1_node_0": ["mlp.act", "mlp"]}, {"graph_1_node_0": ["mlp"]}))
    assert other.count_by_status() == {"same": 0, "changed": 0, "added": 1, "removed": 1}


def test_rows_summary_and_html_show_the_module():
    a = renumber([("ln",), ("gemm A", "cuBLAS"), ("ln",), ("gemm A", "cuBLAS")])
    b = renumber([("ln",), ("gemm B", "cuBLAS"), ("ln",), ("gemm B", "cuBLAS")])
    d = diff(a, b, modules=(mods("b0.ln", "b0.fc", "b1.ln", "b1.fc"), None), names=("x", "y"))
    (row,) = d.rows()
    assert (row["count"], row["modules"]) == (2, ["b0.fc", "b1.fc"])  # one row for both layers, both modules
    assert "changed x2: gemm A -> gemm B [in b0.fc, b1.fc]" in d.summary()
    html = d._repr_html_()
    assert ">module</th>" in html and "<code>b0.fc</code>, <code>b1.fc</code>" in html
    assert d.module_of_a("graph_1_node_1") == ("b0.fc",) and d.module_of_b("graph_1_node_1") == ()
    plain = diff(a, b)
    assert plain.rows()[0]["modules"] == [] and "[in" not in plain.summary() and "module" not in plain._repr_html_()


def test_modules_text_keeps_long_lists_short():
    twelve = [f"blocks.{i}.fc" for i in range(12)]
    assert modules_text(twelve) == "blocks.0.fc, blocks.1.fc, blocks.2.fc, ... (12 modules)"


def test_a_profile_like_result_brings_its_own_modules():
    g = renumber([("gemm", "cuBLAS")])
    prof_a = SimpleNamespace(graph=g, nodes=[SimpleNamespace(node_id="graph_1_node_0", modules=("fc1",))])
    prof_b = SimpleNamespace(graph=g, nodes=[SimpleNamespace(node_id="graph_1_node_0", modules=("fc2",))])
    assert not diff(prof_a, prof_b).mapping()  # gl.diff(profile_a, profile_b): modules taken from both
    assert diff(g, g, modules=(prof_a, prof_b)).modules == ({"graph_1_node_0": ("fc1",)}, {"graph_1_node_0": ("fc2",)})
    assert diff(prof_a, prof_b, modules=(None, {"graph_1_node_0": "fc1"})).identical  # given beats carried


@pytest.mark.parametrize("modules, message", [
    (({"graph_1_node_7": "fc"}, None), r"modules of a name 1 node\(s\) its graph does not have: 'graph_1_node_7'"),
    ((None, {f"n{i}": "fc" for i in range(5)}), r"modules of b name 5 node\(s\).*'n0', 'n1', 'n2' and 2 more"),
    (({"graph_1_node_0": 3}, None), r"module of a's node 'graph_1_node_0' is a path or a list of paths, not int"),
    (({"graph_1_node_0": "fc"},), r"modules is a pair"),
    (("fc", None), r"modules of a are a dict node id -> module path or a gl.profile result, not str"),
])
def test_bad_modules_are_refused_with_what_was_wrong(modules, message):
    g = renumber([("gemm", "cuBLAS")])
    with pytest.raises(BadInputError, match=message):
        diff(g, g, modules=modules)


# -- the zoo GPT's recorded profiles (module per node recorded at capture on the H200) ----------------------


@pytest.fixture(scope="module")
def gpt_profiles():
    return gl.profile.recorded("gpt b1"), gl.profile.recorded("gpt b64")


def test_gpt_batch_1_vs_64_pairs_only_nodes_of_one_module(gpt_profiles):
    b1, b64 = gpt_profiles
    d = gl.diff(b1, b64, names=("batch 1", "batch 64"))
    pairs = [(m.a_id, m.b_id) for m in d.matches if m.a_id and m.b_id]
    assert pairs and all(d.module_of_a(x) == d.module_of_b(y) != () for x, y in pairs)
    rows = {(r["status"], r["a"]): r["modules"] for r in d.rows()}
    # batch 1's CUTLASS GEMM + split-K of each MLP output layer: the CUTLASS one is removed in its own module
    assert rows[("removed", "gemm 64x64 (CUTLASS)")] == [f"blocks.{i}.mlp.2" for i in range(3)]
    assert "[in head]" in d.summary()


def test_the_drawing_and_the_inspector_take_the_modules_too(gpt_profiles):
    from graphlab.ui.diff_inspector import inspect_diff
    from graphlab.viz.diff_drawing import render_diff

    b1, b64 = gpt_profiles
    truth = gl.diff(b1, b64)
    assert truth.has_modules and not gl.diff(b1.graph, b64.graph).has_modules
    assert render_diff(b1, b64).diff.modules == truth.modules  # a profile drawn brings its modules
    assert inspect_diff(b1, b64).result.modules == truth.modules
    given = (dict(truth.modules[0]), dict(truth.modules[1]))
    assert render_diff(b1.graph, b64.graph, modules=given).diff.modules == truth.modules
    assert inspect_diff(b1.graph, b64.graph, modules=given).result.modules == truth.modules
