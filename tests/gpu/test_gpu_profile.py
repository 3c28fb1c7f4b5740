"""gl.profile on a real GPU: module attribution exact where the launch counts are known, every GPU node of the
zoo GPT matched, a GraphCache profiled bucket by bucket, the critical path's model giving back the span."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import graphlab as gl  # noqa: E402
from graphlab.profile.api import capture_with_modules  # noqa: E402
from graphlab.profile.match import BODY_NOT_REPORTED  # noqa: E402
from graphlab.profile.modules import assign_modules  # noqa: E402
from graphlab.studies.profile import EXPECTED, counted_model, what_if_check  # noqa: E402
from graphlab.zoo import get_model  # noqa: E402

pytestmark = pytest.mark.gpu


def test_module_attribution_is_exact_when_each_module_launches_a_known_count():
    x = torch.randn(64, 64, device="cuda")
    cg, spans = capture_with_modules(counted_model().cuda(), x)
    graph = cg.graph
    found = assign_modules(spans, [n.index for n in graph.root.nodes])
    assert [found[n.index] for n in graph.root.nodes if n.kind.value == "kernel"] == EXPECTED
    cg.reset()


def test_every_gpu_node_of_the_zoo_gpt_is_matched_and_has_its_module():
    zoo = get_model("gpt")
    prof = gl.profile(zoo.build(), *zoo.make_inputs(1), replays=10)
    assert prof.replays == 10 and prof.matched_fraction == 1.0, prof.unmatched
    assert prof.span_us > 0 and 0 <= prof.idle_us < prof.span_us
    modules = {m for n in prof.nodes for m in n.modules}
    assert "blocks.0.qkv" in modules and "head" in modules
    assert prof.critical_path().span_us == pytest.approx(prof.span_us, rel=0.1)
    rows = prof.module_rows(depth=2)
    assert sum(r["gpu_us"] for r in rows) == pytest.approx(prof.node_sum_us)


def test_a_graph_cache_is_profiled_bucket_by_bucket():
    zoo = get_model("mlp")
    cache = gl.GraphCache(zoo.build(), buckets=[1, 8])
    cache.warm_up(*zoo.make_inputs(8))
    profs = gl.profile(cache, replays=5)
    assert set(profs) == {"1", "8"} and all(p.matched_fraction == 1.0 for p in profs.values())
    one = gl.profile(cache, bucket="8", replays=5)
    assert one.name.endswith("bucket 8")
    with pytest.raises(gl.BadInputError, match="no graph for bucket"):
        gl.profile(cache, bucket="3")


# -- the what-if against a graph that really does half the work ------------------------------------------------
def _checked(two_streams):
    out = what_if_check(two_streams)
    print(f"\n[what-if] two_streams={two_streams}: {out}")
    assert "error" not in out, out
    assert out["predicted_span_us"] == pytest.approx(out["measured_span_us"], rel=0.10), out  # "mm1 2x faster"
    assert out["predicted_with_factor_us"] == pytest.approx(out["measured_span_us"], rel=0.10), out
    assert set(out["node"]) <= set(out["critical_path"]), out
    return out


def test_the_what_if_predicts_a_chain_whose_chosen_gemm_does_half_the_work():
    _checked(two_streams=False)


def test_the_what_if_predicts_a_graph_with_parallel_branches():
    assert not _checked(two_streams=True)["side_on_critical_path"]  # the shorter branch is off the path


# -- graphs graphlab did not capture itself ----------------------------------------------------------------------
def _compiled_under_watch(model):
    """`model` compiled with reduce-overhead and called 3 times (batch 8 x 256) inside gl.watch, without grad:
    (the compiled function, its input, what the watch saw). Call it inside `torch.no_grad()`."""
    compiled = torch.compile(model.cuda().eval(), mode="reduce-overhead")
    x = torch.randn(8, 256, device="cuda")
    with gl.watch() as seen:
        for _ in range(3):
            compiled(x)
    return compiled, x, seen


def test_a_watched_torch_compile_graph_is_profiled_by_calling_the_compiled_function():
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.Linear(512, 256))
    with torch.no_grad():
        compiled, x, seen = _compiled_under_watch(model)
        watched = [g for g in seen if g.dot]
        assert watched, [getattr(g, "dot_error", None) for g in seen]
        with pytest.raises(gl.BadInputError, match="calling its library"):
            gl.profile(watched[-1])
        prof = gl.profile(watched[-1], call=lambda: compiled(x), replays=10)
    print(f"\n[watched] {prof.name}: {[(n.node_id, n.label, n.median_us) for n in prof.nodes]}, "
          f"unmatched {prof.unmatched}, extra {prof.extra_names}")
    assert prof.replays == 10 and prof.matched_fraction >= 0.99, prof.unmatched
    assert prof.span_us > 0


class _NamedMLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.act, self.fc2 = torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.Linear(512, 256)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def test_a_watched_torch_compile_graph_names_the_modules_each_triton_kernel_fuses():
    """gl.watch records Inductor's provenance while torch.compile compiles; each Triton kernel node of the watched
    graph lists the modules it fuses, and gl.profile's rows show them."""
    torch._dynamo.reset()
    with torch.no_grad():
        compiled, x, watch_seen = _compiled_under_watch(_NamedMLP())
        watched = [g for g in watch_seen if g.dot and g.kernels]
        notes = [(g.index, g.role, g.node_modules_note) for g in watch_seen]
        assert watched, f"no watched graph with kernels: {notes}"
        g = watched[-1]
        triton = [n for n in g.graph.kernels() if (n.name or "").startswith("triton_")]
        found = {n.id: (n.name, (g.node_modules or {}).get(n.id)) for n in g.graph.kernels()}
        said = f"notes {notes}; kernel nodes -> modules {found}"
        print(f"\n[watched modules] {said}")
        assert triton, f"no Triton kernel in the watched graph: {said}"
        assert g.node_modules, f"the watched graph has no node_modules: {said}"
        assert all(g.node_modules.get(n.id) for n in triton), f"a Triton kernel without modules: {said}"
        listed = {m for n in triton for m in g.node_modules[n.id]}
        assert listed <= {"fc1", "act", "fc2"} and "act" in listed, f"modules not the MLP's own: {said}"
        prof = gl.profile(g, call=lambda: compiled(x), replays=5)
    rows = {r["node"]: r for r in prof.rows()}
    shown = {n.id: rows.get(n.id, {}).get("module") for n in triton}
    print(f"[watched modules] profile rows: {shown}")
    assert all(shown.values()), f"gl.profile rows without the modules: {shown}; {said}"
    assert any("act" in v for v in shown.values()), shown


@pytest.mark.parametrize("route", ["child", "capture"])
def test_a_conditional_graph_is_profiled_with_the_body_that_ran_and_the_one_that_did_not(route):
    """On the H200 (driver 580.159, torch 2.11, 2026-12-02) CUPTI reports the kernels inside a conditional's body,
    but not under the launch's correlation id: gl.profile gives them to their replay by time. The THEN body ran
    and is timed; the ELSE body did not run and is grouped under BODY_NOT_REPORTED."""
    x = torch.randn(256, 256, device="cuda")
    out = torch.empty_like(x)
    flag = torch.ones(1, dtype=torch.bool, device="cuda")
    graph = gl.cond(flag, lambda: out.copy_(x @ x), lambda: out.copy_(torch.relu(x) * 2), route=route,
                    name=f"profiled_if_{route}")
    try:
        prof = gl.profile(graph, replays=10)
    finally:
        graph.close()
    cg = prof.graph
    body_kernels = {g.id: {n.id for n in g.nodes if n.kind.value == "kernel"} for g in cg.graphs
                    if g.parent_node_id is not None}
    body_kernels = {gid: ids for gid, ids in body_kernels.items() if ids}
    timed = {n.node_id for n in prof.nodes if n.median_us is not None}
    unreported = set(prof.unmatched.get(BODY_NOT_REPORTED, ()))
    print(f"\n[conditional] route {graph.route}: timed {sorted(timed)}, body kernels {body_kernels}, "
          f"unmatched {prof.unmatched}, extra {prof.extra_names}")
    root_kernels = {n.id for n in cg.root.nodes if n.kind.value == "kernel"}
    assert root_kernels and root_kernels <= timed  # the set-condition kernel
    then_body, else_body = list(body_kernels.values())  # in branch order
    assert then_body <= timed, prof.unmatched  # the body that ran
    assert else_body <= unreported and not (else_body & timed)  # the body that did not
    # the THEN body's copy into `out`, which the driver runs as a kernel (`memcpy32_post`), is the copy node's time
    assert not any(name.startswith("memcpy") for name in prof.extra_names), prof.extra_names
