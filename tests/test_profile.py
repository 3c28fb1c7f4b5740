"""gl.profile's pure part: matching trace events to DOT nodes, module attribution, the critical path and the
what-if, on synthetic DAGs with known answers and on traces recorded on the H200 (data/recordings/h200/profile)."""
from __future__ import annotations

import random
import re

import pytest

import graphlab as gl
from graphlab.errors import BadInputError
from graphlab.graph.model import CudaGraph, Edge, Graph, Node, NodeKind
from graphlab.profile.critical import critical_path, what_if
from graphlab.profile.events import replays_from_chrome
from graphlab.timing.chrome_trace import GpuEvent
from graphlab.profile.match import (BODY_NOT_REPORTED, BY_NODE_ID, BY_SIGNATURE, NO_GPU_WORK, NO_KERNEL_EVENT, Dag,
                                    match_replay)
from graphlab.profile.modules import ModuleSpan, assign_modules
from graphlab.profile.results import Profile, build_profile


def _kernel(i: int, name: str, grid=(1, 1, 1), block=(128, 1, 1), graph: str = "g") -> Node:
    return Node(f"{graph}_n{i}", graph, i, NodeKind.KERNEL, name=name, demangled_name=name, short_name=name,
                family="ATen elementwise", grid=grid, block=block)


def _event(node: Node, start: float, dur: float, corr: int = 1, **kw) -> GpuEvent:
    return GpuEvent(node.demangled_name or "", "kernel", start, dur, grid=node.grid, block=node.block,
                    correlation=corr, **kw)


def _graph(nodes, edges, bodies=()) -> CudaGraph:
    return CudaGraph((Graph("g", tuple(nodes), tuple(Edge(a, b) for a, b in edges)), *bodies))


def _diamond():
    """a -> (b, c) -> d, with b and c the same kernel: the DAG, not the name, tells them apart."""
    a, b, c, d = _kernel(0, "k_a"), _kernel(1, "k_same"), _kernel(2, "k_same"), _kernel(3, "k_d")
    return _graph([a, b, c, d], [("g_n0", "g_n1"), ("g_n0", "g_n2"), ("g_n1", "g_n3"), ("g_n2", "g_n3")])


def test_a_chain_matches_every_node_in_order_and_the_times_are_the_events():
    nodes = [_kernel(i, f"void k{i % 3}<float>(float*)") for i in range(9)]
    cg = _graph(nodes, [(f"g_n{i}", f"g_n{i + 1}") for i in range(8)])
    events = [_event(n, 10.0 * i, 1.0 + i) for i, n in enumerate(nodes)]
    m = match_replay(cg, events)
    assert {nid: idx for nid, idx in m.by_node.items()} == {f"g_n{i}": [i] for i in range(9)}
    assert set(m.matched_by.values()) == {BY_SIGNATURE} and not m.unmatched and not m.extra
    prof = build_profile(cg, [events], name="chain")
    assert prof.node("g_n4").median_us == 5.0 and prof.node("g_n4").start_us == 40.0
    assert prof.span_us == pytest.approx(80.0 + 9.0) and prof.busy_us == pytest.approx(sum(1.0 + i for i in range(9)))


def test_same_kernel_on_two_branches_and_grid_tells_kernels_apart():
    cg = _diamond()
    a, b, c, d = (cg.node(f"g_n{i}") for i in range(4))
    events = [_event(a, 0, 1), _event(c, 2, 3), _event(b, 2.5, 4), _event(d, 7, 1)]
    m = match_replay(cg, events)
    assert len(m.by_node) == 4 and not m.unmatched
    other = _kernel(0, "k_a", grid=(2, 1, 1))
    assert match_replay(_graph([other], []), [_event(a, 0, 1)]).unmatched == {"g_n0": NO_KERNEL_EVENT}


def test_trace_names_are_compared_without_spaces_and_loosely_by_function_path():
    node = _kernel(0, "void at::native::k<4, float>(int, float*)")
    ev = GpuEvent("void at::native::k<4,float>(int,float*)", "kernel", 0, 1, grid=node.grid, block=node.block)
    assert match_replay(_graph([node], []), [ev]).matched_by["g_n0"] == BY_SIGNATURE
    ev2 = GpuEvent("void at::native::k<8, float>(int, float*)", "kernel", 0, 1, grid=node.grid, block=node.block)
    assert match_replay(_graph([node], []), [ev2]).matched_by["g_n0"] == "function name"


def test_real_node_ids_are_used_when_the_trace_has_them():
    cg = _diamond()
    b = cg.node("g_n2")
    events = [_event(cg.node("g_n0"), 0, 1), _event(b, 2, 1, node_id=(7 << 32) | 2)]
    m = match_replay(cg, events)
    assert m.matched_by["g_n2"] == BY_NODE_ID and "g_n1" in m.unmatched


def test_untimed_nodes_pass_through_and_say_why():
    a = _kernel(0, "k_a")
    empty = Node("g_n1", "g", 1, NodeKind.EMPTY)
    b = _kernel(2, "k_b")
    cg = _graph([a, empty, b], [("g_n0", "g_n1"), ("g_n1", "g_n2")])
    prof = build_profile(cg, [[_event(a, 0, 1), _event(b, 1.5, 1)]])
    assert prof.unmatched == {NO_GPU_WORK.format(kind="empty"): ["g_n1"]}
    assert prof.matched_fraction == 1.0 and prof.node("g_n2").gap_us == pytest.approx(0.5)


def test_a_conditional_body_that_did_not_run_is_its_own_reason():
    a = _kernel(0, "k_a")
    cond = Node("g_n1", "g", 1, NodeKind.CONDITIONAL, body_graph_ids=("b",))
    inner = _kernel(0, "k_body", graph="b")
    body = Graph("b", (inner,), (), parent_node_id="g_n1")
    cg = _graph([a, cond], [("g_n0", "g_n1")], bodies=(body,))
    prof = build_profile(cg, [[_event(a, 0, 1)]])
    assert prof.unmatched[BODY_NOT_REPORTED] == ["b_n0"]
    ran = build_profile(cg, [[_event(a, 0, 1), _event(inner, 2, 3), _event(inner, 6, 3)]])
    assert ran.node("b_n0").median_us == 6.0  # two iterations, summed
    assert ran.critical_path().span_us >= 6.0


def test_p10_median_p90_over_replays():
    a = _kernel(0, "k")
    cg = _graph([a], [])
    prof = build_profile(cg, [[_event(a, 0, float(d))] for d in range(1, 12)])
    n = prof.node("g_n0")
    assert (n.p10_us, n.median_us, n.p90_us, prof.replays) == (2.0, 6.0, 10.0, 11)


def test_critical_path_and_what_if_on_a_known_dag():
    order = ["a", "b", "c", "d"]
    preds = {"a": (), "b": ("a",), "c": ("a",), "d": ("b", "c")}
    dur = {"a": 1.0, "b": 10.0, "c": 4.0, "d": 1.0}
    gap = {"a": 0.0, "b": 0.1, "c": 0.1, "d": 0.1}
    path = critical_path(order, preds, dur, gap)
    assert path.node_ids == ("a", "b", "d") and path.span_us == pytest.approx(12.2)
    assert what_if(order, preds, dur, gap, {"b": 0.5}) == pytest.approx(7.2)  # c-branch: 1 + .1 + 5 ... b now 5
    assert what_if(order, preds, dur, gap, {"b": 0.1}) == pytest.approx(1 + 0.1 + 4 + 0.1 + 1)  # c now critical
    with pytest.raises(BadInputError, match="not a node"):
        what_if(order, preds, dur, gap, {"zz": 0.5})
    with pytest.raises(BadInputError, match="negative"):
        what_if(order, preds, dur, gap, {"a": -1})


def test_the_model_gives_back_the_measured_span():
    cg = _diamond()
    a, b, c, d = (cg.node(f"g_n{i}") for i in range(4))
    prof = build_profile(cg, [[_event(a, 0, 1), _event(b, 1.1, 5), _event(c, 1.2, 2), _event(d, 6.2, 1)]])
    assert prof.critical_path().span_us == pytest.approx(prof.span_us)
    assert prof.critical_path().node_ids == ("g_n0", "g_n1", "g_n3")


def test_module_spans_give_the_innermost_module():
    spans = [ModuleSpan("", 0, 7), ModuleSpan("0", 0, 1), ModuleSpan("1", 1, 4), ModuleSpan("1.0", 1, 3),
             ModuleSpan("1.1", 3, 4), ModuleSpan("2", 4, 7)]
    got = assign_modules(spans, range(8))
    assert [got[i] for i in range(8)] == ["0", "1.0", "1.0", "1.1", "2", "2", "2", None]
    with pytest.raises(BadInputError, match="ends"):
        ModuleSpan.from_list(["x", 3, 1])
    with pytest.raises(BadInputError, match="path, start, end"):
        ModuleSpan.from_list(["x", 3])


def test_time_by_module_splits_a_fused_kernel_between_its_modules():
    cg = _diamond()
    evs = [[_event(cg.node("g_n0"), 0, 2), _event(cg.node("g_n1"), 2, 4), _event(cg.node("g_n2"), 2, 4),
            _event(cg.node("g_n3"), 6, 2)]]
    prof = build_profile(cg, evs, node_modules={"g_n0": ["emb"], "g_n1": ["a.x", "a.y"], "g_n2": ["a.x"],
                                                "g_n3": ["head"]})
    rows = {r["module"]: r["gpu_us"] for r in prof.module_rows()}
    assert rows == {"a.x": 6.0, "a.y": 2.0, "emb": 2.0, "head": 2.0}
    assert {r["module"]: r["gpu_us"] for r in prof.module_rows(depth=1)}["a"] == 8.0


def test_profile_round_trips_through_json_and_refuses_a_wrong_graph():
    cg = _diamond()
    evs = [[_event(cg.node(f"g_n{i}"), 2.0 * i, 1) for i in range(4)]]
    prof = build_profile(cg, evs, name="d")
    again = Profile.from_dict(prof.to_dict(), cg)
    assert again.to_dict() == prof.to_dict()
    with pytest.raises(BadInputError, match="does not have"):
        Profile.from_dict(prof.to_dict(), _graph([_kernel(0, "x")], []))
    with pytest.raises(BadInputError, match="not a profile"):
        Profile.from_dict({"name": "x"}, cg)


def test_bad_traces_are_refused_with_one_clear_line():
    with pytest.raises(BadInputError, match="traceEvents"):
        replays_from_chrome({"nope": 1})
    with pytest.raises(BadInputError, match="no cudaGraphLaunch"):
        replays_from_chrome({"traceEvents": []})
    with pytest.raises(BadInputError, match="no GPU events"):
        build_profile(_diamond(), [[]])
    with pytest.raises(BadInputError, match="not a GPU event"):
        GpuEvent.from_dict({"name": "x"})


def test_replays_are_cut_out_of_a_chrome_trace_by_launch_correlation():
    trace = {"traceEvents": [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "ts": 0, "dur": 5, "args": {"correlation": 7}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "ts": 50, "dur": 5, "args": {"correlation": 9}},
        {"ph": "X", "cat": "kernel", "name": "k", "ts": 61, "dur": 2, "args": {"correlation": 9, "grid": [1, 1, 1],
                                                                              "block": [32, 1, 1], "stream": 7}},
        {"ph": "X", "cat": "kernel", "name": "k", "ts": 10, "dur": 2, "args": {"correlation": 7}},
        {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "ts": 12, "dur": 1,
         "args": {"correlation": 7, "bytes": 64}},
        {"ph": "X", "cat": "kernel", "name": "other", "ts": 30, "dur": 2, "args": {"correlation": 8}},
    ]}
    replays = replays_from_chrome(trace)
    assert [[e.name for e in r] for r in replays] == [["k", "Memset (Device)"], ["k"]]
    assert replays[1][0].grid == (1, 1, 1) and replays[0][1].bytes == 64
    # a conditional body's kernels come without the launch's correlation: "by_time" gives them to their replay
    by_time = replays_from_chrome({"traceEvents": trace["traceEvents"] + [
        {"ph": "X", "cat": "kernel", "name": "body", "ts": 70, "dur": 2, "args": {"correlation": 99}},
        {"ph": "X", "cat": "kernel", "name": "before any replay", "ts": 1, "dur": 1, "args": {"correlation": 98}}]},
        uncorrelated="by_time")
    assert [[e.name for e in r] for r in by_time] == [["k", "Memset (Device)", "other"], ["k", "body"]]
    with pytest.raises(gl.BadInputError, match="'drop' or 'by_time'"):
        replays_from_chrome(trace, uncorrelated="guess")


def test_matching_a_recorded_dot_against_events_made_from_it_shuffled_within_levels():
    """A real graph (the zoo GPT, 47 nodes): events in any order the DAG allows are matched back exactly."""
    cg = gl.load_recording("gpt").graph("b1")
    dag = Dag(cg)
    rng = random.Random(0)
    t, events, truth = 0.0, [], {}
    for nid in dag.order:
        node = cg.node(nid)
        if node.kind is NodeKind.KERNEL:
            events.append(GpuEvent(node.demangled_name or "", "kernel", t, rng.uniform(1, 4), grid=node.grid,
                                   block=node.block))
        elif node.kind is NodeKind.MEMSET:
            events.append(GpuEvent("Memset (Device)", "memset", t, 1.0, bytes=node.memset_bytes))
        else:
            continue
        truth[nid] = len(events) - 1
        t += 5.0
    m = match_replay(cg, events)
    assert {k: v[0] for k, v in m.by_node.items()} == truth


# -- on traces recorded on the H200 (graphlab record --models profile) ----------------------------------------------
PROFILED = [k for k in gl.load_recording("profile").graph_names if k != "counted"]


@pytest.fixture(scope="module")
def rec():
    return gl.load_recording("profile")


@pytest.mark.parametrize("key", PROFILED)
def test_recorded_replays_match_every_gpu_node_and_give_back_the_recorded_modules(rec, key):
    trace = rec.results(f"events_{key}")
    graph = rec.graph(key)
    spans = [ModuleSpan.from_list(s) for s in trace["module_spans"]]
    prof = build_profile(graph, [[GpuEvent.from_dict(e) for e in r] for r in trace["replays"]], module_spans=spans)
    assert prof.matched_fraction >= 0.99 and prof.replays == len(trace["replays"])
    assert all(n.matched_by == BY_SIGNATURE for n in prof.nodes if n.matched_by)
    recorded = {n["node_id"]: tuple(n["modules"]) for n in rec.results(key)["nodes"]}
    assert {n.node_id: n.modules for n in prof.nodes} == recorded
    assert all(n.modules and n.modules[0] != "(outside any module)" for n in prof.nodes if n.kind == "kernel")
    # single-stream captures are chains: the critical path's model gives back the measured span
    assert prof.critical_path().span_us == pytest.approx(prof.span_us, rel=0.02)


def test_a_raw_chrome_trace_from_the_h200_is_cut_into_replays_and_matched(rec):
    replays = replays_from_chrome(rec.results("chrome_mlp_b1"))
    assert len(replays) == 3 and all(len(r) == 5 for r in replays)
    assert len({e.correlation for e in replays[0]}) == 1 and replays[0][0].grid is not None
    prof = build_profile(rec.graph("mlp_b1"), replays)
    assert prof.matched_fraction == 1.0 and prof.extra_events == 0


def test_module_attribution_was_exact_on_the_h200(rec):
    check = rec.results("attribution_check")
    assert check["exact"] and check["found"] == check["expected"]


def test_recorded_mode_answers_gl_profile_for_a_zoo_model(rec):
    gl.set_mode("recorded")
    try:
        zoo = gl.get_model("gpt")
        prof = gl.profile(zoo.build(), *zoo.make_inputs(1))
        assert prof.name == "gpt b1" and "Recorded on NVIDIA H200" in prof.conditions["recorded"]
        assert gl.profile("resnet50 b64").matched_fraction == 1.0
        with pytest.raises(gl.RecordingError, match="has no 'gpt_b3'"):
            gl.profile("gpt b3")
    finally:
        gl.set_mode("auto")


def test_the_heat_map_colours_nodes_by_time_sums_repeats_and_outlines_the_critical_path(rec):
    prof = gl.profile.recorded("gpt b1")
    drawing = gl.render(prof.graph, heat=prof)
    src = drawing.source
    assert "GPU time per replay" in src and "µs in all" in src and "critical-path" in src
    slow, fast = max(prof.heat(), key=prof.heat().get), min(prof.heat(), key=prof.heat().get)
    from graphlab.viz.heat import HeatScale

    scale = HeatScale.of(prof.heat())
    assert scale.position(prof.heat()[slow]) > scale.position(prof.heat()[fast])
    # dark fills carry white text (black on dark red cannot be read), pale ones keep black
    from graphlab.viz.style import is_dark

    nodes = [line for line in src.splitlines() if "fillcolor=" in line and "id=graph_" in line]
    white = [line for line in nodes if "fontcolor=white" in line]
    assert white and len(white) < len(nodes)
    for line in nodes:
        fill = re.search(r'fillcolor="(#[0-9A-Fa-f]{6})"', line)[1]
        assert ("fontcolor=white" in line) == is_dark(fill), line[:120]


def test_the_inspector_shows_times_and_modules_and_searches_modules(rec):
    pytest.importorskip("anywidget")
    prof = gl.profile.recorded("gpt b1")
    ins = gl.inspect(prof.graph, profile=prof)
    node = max((n for n in prof.nodes if n.median_us is not None), key=lambda n: n.median_us).node_id
    details = ins.details_for(node)
    assert "µs median" in details["gpu_time"] and details["module"] == ", ".join(prof.node(node).modules)
    assert ins.find("blocks.1.mlp") and all("blocks.1.mlp" in ", ".join(prof.node(n).modules)
                                             for n in ins.find("blocks.1.mlp"))


def test_the_capture_hooks_record_each_modules_nodes(monkeypatch):
    """The hooks' bookkeeping on the CPU: a stand-in for the capture's node count that grows by one per
    elementwise op, as a capture would; outside a capture (None) nothing is recorded."""
    torch = pytest.importorskip("torch")
    from graphlab.capture import module_recorder as api
    from graphlab.studies.profile import EXPECTED, counted_model

    count = {"n": 0, "capturing": False}
    real_mul, real_add = torch.Tensor.__mul__, torch.Tensor.__add__

    def mul(self, other):
        count["n"] += 1
        return real_mul(self, other)

    def add(self, other):
        count["n"] += 1
        return real_add(self, other)

    monkeypatch.setattr(torch.Tensor, "__mul__", mul)
    monkeypatch.setattr(torch.Tensor, "__add__", add)
    monkeypatch.setattr(api, "has_cuda_bindings", lambda: True)
    monkeypatch.setattr(api, "capture_node_count", lambda: (5, count["n"]) if count["capturing"] else None)
    model = counted_model()
    with api.record_modules(model) as recorder:
        model(torch.ones(2))  # a warm-up: not capturing
        count["capturing"], count["n"] = True, 0  # a capture's graph starts empty
        model(torch.ones(2))
    assert len(recorder.captures) == 1
    found = assign_modules(recorder.last, range(count["n"]))
    assert [found[i] for i in range(count["n"])] == EXPECTED
    assert not model._forward_hooks and not model._forward_pre_hooks  # the hooks are gone
    with pytest.raises(BadInputError, match="nn.Module"):
        with api.record_modules(lambda x: x):
            pass


def test_a_collapsed_block_is_filled_by_the_mean_of_its_repeats_not_their_sum(rec):
    """The node drawn for a collapsed block's repeats stands for N nodes: filled by their sum it would be the
    darkest node of the graph and stretch the scale past every real node. Its fill is the mean of its repeats
    on the same scale as the others; the block's label gives the total."""
    from graphlab.viz.heat import HeatScale

    prof = gl.profile.recorded("gpt b1")
    times = prof.heat()
    drawing = gl.render(prof.graph, heat=prof)
    assert drawing.collapsed, "the zoo GPT's three blocks are collapsed by default"
    block = next(b for b in drawing.blocks if b.id in drawing.collapsed)
    means = {}
    for position, rep_id in enumerate(block.representative):
        same = [rep[position] for rep in block.node_ids if rep[position] in times]
        if same:
            means[rep_id] = sum(times[n] for n in same) / len(same)
    assert len(means) >= 3
    # the scale runs over every node's own time (collapsed or not, the legend's ends stay put)
    scale = HeatScale.of(times)
    assert scale.high_us <= max(times.values()), "no drawn node is hotter than the hottest real node"
    src = drawing.source
    for rep_id, mean in means.items():
        line = next(line for line in src.splitlines() if re.search(rf'\bid="?{rep_id}"?[\s\]]', line))
        fill = re.search(r'fillcolor="(#[0-9A-Fa-f]{6})"', line)[1]
        assert fill.upper() == scale.color(mean).upper(), (rep_id, fill, scale.color(mean), mean)
    assert f"{sum(times.get(n, 0.0) for rep in block.node_ids for n in rep):,.1f} µs in all" in src


def test_a_copy_the_driver_runs_as_a_kernel_is_the_copy_nodes_time():
    """Inside a conditional body the H200's driver (580) ran a device-to-device copy node as a kernel,
    `memcpy32_post`, reported with no size: it was left over as an extra event and the copy node unmatched.
    It is the copy node's event; any other unknown kernel stays extra."""
    from graphlab.profile.match import BY_COPY_KERNEL

    a, b = _kernel(0, "void k_a<float>(float*)"), _kernel(2, "void k_b<float>(float*)")
    copy = Node("g_n1", "g", 1, NodeKind.MEMCPY, copy_bytes=4096)
    cg = _graph([a, copy, b], [("g_n0", "g_n1"), ("g_n1", "g_n2")])
    events = [_event(a, 0, 1), GpuEvent("memcpy32_post", "kernel", 2, 0.5, grid=(1, 1, 1), block=(256, 1, 1),
                                        correlation=1), _event(b, 3, 1)]
    m = match_replay(cg, events)
    assert m.by_node == {"g_n0": [0], "g_n1": [1], "g_n2": [2]} and not m.extra and not m.unmatched
    assert m.matched_by["g_n1"] == BY_COPY_KERNEL
    assert build_profile(cg, [events], name="copy").node("g_n1").median_us == 0.5
    stranger = [events[0], GpuEvent("some_other_kernel", "kernel", 2, 0.5, correlation=1), events[2]]
    m = match_replay(cg, stranger)
    assert m.extra == [1] and "g_n1" in m.unmatched
