"""diff(a, b)'s fused view: one kernel standing for a run of them (torch.compile vs eager, issue 24).

Synthetic chains with known answers (the rule is in graphlab.graph.diff's docstring), then the zoo GPT compiled by
torch.compile vs graphlab's own capture, recorded on the H200 (notebook 10)."""
from __future__ import annotations

from test_diff import chain, k

from graphlab.graph.diff import diff
from graphlab.graph.model import CudaGraph, Node, NodeKind

GEMM = ("gemm", "cuBLAS")


def triton(i: int, ops: str, kind: str = "poi") -> Node:
    name = f"triton_{kind}_fused_{ops}_0"
    return Node(f"graph_1_node_{i}", "graph_1", i, NodeKind.KERNEL, name=name, demangled_name=name,
                short_name=f"{ops} (Triton)", family="Triton", grid=(1, 1, 1))


def eager_mlp() -> CudaGraph:
    """gemm, add, gelu, gemm: the bias add and the GELU are two kernels."""
    return chain([k(0, *GEMM), k(1, "add"), k(2, "gelu"), k(3, *GEMM)])


def compiled_mlp(middle: Node | None = None) -> CudaGraph:
    """gemm, one Triton kernel doing add + gelu, gemm."""
    return chain([k(0, *GEMM), middle or triton(1, "add_gelu"), k(2, *GEMM)])


def ids(*indexes: int) -> tuple[str, ...]:
    return tuple(f"graph_1_node_{i}" for i in indexes)


def test_a_triton_fusion_between_matched_neighbours_is_one_fused_row():
    d = diff(eager_mlp(), compiled_mlp(), names=("eager", "compiled"))
    assert d.fused_groups() == [(ids(1, 2), ids(1))]
    (row,) = d.rows()
    assert (row["status"], row["a"], row["b"]) == ("fused", "add + gelu", "add_gelu (Triton)")
    assert (row["a_ids"], row["b_ids"], row["count"]) == (list(ids(1, 2)), list(ids(1)), 1)
    assert row["detail"] == "2 -> 1 kernels, a Triton fusion" and row["kernel_changed"]
    assert d.count_by_status() == {"same": 2, "changed": 0, "added": 0, "removed": 0, "fused": 3}
    headline = "eager vs compiled: 0 changed, 0 added, 0 removed, 1 fused (2 -> 1 nodes), 2 same"
    assert d.summary().splitlines()[0] == headline
    assert "  fused: add + gelu -> add_gelu (Triton) (2 -> 1 kernels, a Triton fusion)" in d.summary()
    assert not d.identical and not d.added and not d.removed


def test_each_node_of_a_fusion_names_the_other_side():
    d = diff(eager_mlp(), compiled_mlp())
    assert d.status_in_a("graph_1_node_1") == d.status_in_b("graph_1_node_1") == "fused"
    assert d.match_of_a("graph_1_node_2").fused_with == ids(1)
    assert d.match_of_b("graph_1_node_1").fused_with == ids(1, 2)
    assert d.mapping() == {"graph_1_node_0": "graph_1_node_0", "graph_1_node_3": "graph_1_node_2"}  # pairs only


def test_the_fused_kernel_may_be_on_either_side():
    d = diff(compiled_mlp(), eager_mlp())  # notebook 10 puts torch.compile's graph first
    assert d.fused_groups() == [(ids(1), ids(1, 2))]
    assert d.rows()[0]["a"] == "add_gelu (Triton)" and d.rows()[0]["detail"].startswith("1 -> 2 kernels")


def test_a_fusion_at_the_start_of_the_graph_counts():
    d = diff(chain([k(0, "ln"), k(1, "add"), k(2, *GEMM)]), chain([triton(0, "add_ln", "per"), k(1, *GEMM)]))
    assert d.fused_groups() == [(ids(0, 1), ids(0))]


def test_fusions_in_every_layer_group_into_one_row():
    a = chain([k(i, *spec) for i, spec in enumerate([GEMM, ("add",), ("gelu",)] * 3)])
    b = chain([k(0, *GEMM), triton(1, "add_gelu"), k(2, *GEMM), triton(3, "add_gelu"), k(4, *GEMM),
               triton(5, "add_gelu")])
    d = diff(a, b)
    (row,) = d.rows()
    assert row["count"] == 3 and len(row["a_ids"]) == 6 and len(row["b_ids"]) == 3
    assert [r["count"] for r in d.rows(group=False)] == [1, 1, 1]


def test_a_single_replaced_kernel_is_not_a_fusion():
    d = diff(chain([k(0, *GEMM), k(1, "gelu"), k(2, *GEMM)]), compiled_mlp(triton(1, "gelu")))
    assert not d.fused and (len(d.removed), len(d.added)) == (1, 1)


def test_a_kernel_not_named_as_a_fusion_is_not_one():
    plain = Node("graph_1_node_1", "graph_1", 1, NodeKind.KERNEL, name="my_kernel", short_name="my_kernel",
                 family="Triton", grid=(1, 1, 1))
    not_triton = k(1, "fused_add_gelu", "ATen other")  # another family: never pairs with add or gelu
    for middle in (plain, not_triton):
        d = diff(eager_mlp(), compiled_mlp(middle))
        assert not d.fused and (len(d.removed), len(d.added)) == (2, 1)


def test_several_nodes_on_both_sides_stay_removed_and_added():
    b = chain([k(0, *GEMM), triton(1, "add"), triton(2, "gelu"), k(3, *GEMM)])  # which fused what: not guessed
    a = chain([k(0, *GEMM), k(1, "add"), k(2, "mul"), k(3, "gelu"), k(4, *GEMM)])
    d = diff(a, b)
    assert not d.fused and (len(d.removed), len(d.added)) == (3, 2)


def test_a_run_holding_a_memset_is_not_fused():
    memset = Node("graph_1_node_2", "graph_1", 2, NodeKind.MEMSET, memset_bytes=64)
    a = chain([k(0, *GEMM), k(1, "add"), memset, k(3, *GEMM)])
    assert not diff(a, compiled_mlp()).fused


# -- with modules --------------------------------------------------------------------------------------------


def modules_of(graph: CudaGraph, *paths) -> dict[str, object]:
    return {n.id: p for n, p in zip(graph.root.nodes, paths)}


def test_with_modules_the_run_must_come_from_the_fused_kernels_modules():
    a, b = eager_mlp(), compiled_mlp()
    ok = diff(a, b, modules=(modules_of(a, "fc1", "fc1", "act", "fc2"), modules_of(b, "fc1", ["fc1", "act"], "fc2")))
    assert ok.fused_groups() == [(ids(1, 2), ids(1))] and ok.rows()[0]["detail"].endswith("same modules")
    assert ok.rows()[0]["modules"] == ["fc1", "act", "fc1, act"]
    # the fused kernel says it is act's only: the bias add of fc1 is not part of it
    narrower = diff(a, b, modules=(modules_of(a, "fc1", "fc1", "act", "fc2"), modules_of(b, "fc1", "act", "fc2")))
    assert not narrower.fused
    # a run node of another module blocks a Triton fusion even when some modules are not known
    other = diff(a, b, modules=({"graph_1_node_1": "fc2"}, modules_of(b, "fc1", ["fc1", "act"], "fc2")))
    assert not other.fused


def test_with_modules_one_kernel_of_the_same_module_as_the_run_is_a_fusion():
    a = chain([k(0, "ln"), k(1, "bmm", "cuBLAS"), k(2, "softmax"), k(3, "bmm", "cuBLAS"), k(4, "add")])
    b = chain([k(0, "ln"), k(1, "flash fwd", "attention"), k(2, "add")])
    assert not diff(a, b).fused  # by name alone, the attention kernel is just added
    d = diff(a, b, modules=(modules_of(a, "ln", "attn", "attn", "attn", ""), modules_of(b, "ln", "attn", "")))
    assert d.fused_groups() == [(ids(1, 2, 3), ids(1))]
    assert "fused: bmm + softmax + bmm -> flash fwd (3 -> 1 kernels, same modules) [in attn]" in d.summary()


# -- torch.compile vs gl.capture, recorded on the H200 ------------------------------------------------------------


def test_compiled_gpt_vs_eager_capture_reports_its_fusions():
    from graphlab.studies.watch_examples import load_example

    d = load_example("compile").diff(8)  # a: torch.compile's graph, b: gl.capture's eager kernels
    groups = d.fused_groups()
    assert groups and all(len(x) == 1 and len(y) >= 2 for x, y in groups)
    assert all(d.a.node(x[0]).name.startswith("triton_") for x, _ in groups)
    rows = {r["a"]: r for r in d.rows() if r["status"] == "fused"}
    # every residual add + layer_norm of the eager graph is one Triton kernel under torch.compile
    assert rows["add_addmm_native_layer_norm_view (Triton)"]["b"] == "add (elementwise) + layer_norm (ATen)"
    assert not any(r["status"] == "added" and r["b"] == "layer_norm (ATen)" for r in d.rows())


# -- drawn and inspected ------------------------------------------------------------------------------------------


def test_render_diff_colours_a_fusion_and_lists_it():
    from graphlab.viz import style
    from graphlab.viz.diff_drawing import render_diff

    drawing = render_diff(eager_mlp(), compiled_mlp(), names=("eager", "compiled"))
    assert drawing.diff.fused_groups() == [(ids(1, 2), ids(1))]
    assert drawing.source.count(style.STATUS_COLORS["fused"]) >= 4  # 3 nodes, the legend and the table row
    assert "fused: add + gelu \u2192 add_gelu (Triton)" in drawing.source
    assert ">fused  <" in drawing.source  # the legend says what light blue is, here
    assert ">fused  <" not in render_diff(eager_mlp(), eager_mlp()).source  # and only where something fused


def test_diff_inspector_shows_a_fusion_with_all_its_nodes():
    from graphlab.ui.diff_inspector import inspect_diff

    w = inspect_diff(eager_mlp(), compiled_mlp(), names=("eager", "compiled"))
    assert ["fused", 3] in w.summary["rows"]
    details = w.details_for("b-graph_1_node_1")
    assert details["status"] == "fused" and details["note"].startswith("Fused (a Triton fusion): 2 kernel(s) of eager")
    assert [s["title"] for s in details["sides"]] == ["eager", "eager", "compiled"]
    assert sorted(w.matches) == ["a-graph_1_node_1", "a-graph_1_node_2"]
    w.details_for("a-graph_1_node_2")
    assert sorted(w.matches) == ["a-graph_1_node_1", "b-graph_1_node_1"]


def test_a_click_in_the_diff_inspector_sends_its_counterparts_to_the_page():
    """`matches` is a synced traitlet: it reaches the page only when assigned (an in-place append never syncs;
    the real-browser test caught one)."""
    from graphlab.ui.diff_inspector import inspect_diff

    w = inspect_diff(eager_mlp(), compiled_mlp(), names=("eager", "compiled"))
    sent = []
    w.observe(lambda change: sent.append(sorted(change["new"])), names="matches")
    w.details_for("b-graph_1_node_1")
    assert sent[-1] == ["a-graph_1_node_1", "a-graph_1_node_2"]
    w.details_for("a-graph_1_node_2")
    assert sent[-1] == ["a-graph_1_node_1", "b-graph_1_node_1"]
