"""Which modules each torch.compile kernel fuses: the pure matching (paths, provenance, DOT nodes) on made-up input,
then real Inductor compiles on the CPU (C++ kernels come out of the same scheduler and provenance record as Triton's),
and the watch's records filled from them. About 20-40 s on a 2-core machine with a cold Inductor cache (the C++
kernels' builds), a few seconds warm."""
from __future__ import annotations

import pytest

import graphlab as gl
from graphlab.errors import BadInputError
from graphlab.watch.frames import COMPILE_TREES, TORCH_CUDA_GRAPH
from graphlab.watch.kernel_modules import (ROOT, innermost_module, kernel_modules, launches_from_provenance,
                                           module_path, node_modules)
from graphlab.watch.records import WatchedGraphs


def dot_of(*names: str) -> str:
    """A DOT dump of one graph: a chain of kernel nodes with these function names."""
    nodes = "".join(
        f'"graph_1_node_{i}"[style="bold" shape="record" label="{{KERNEL\n| {{ID | {i} (topoId: {i}) | '
        f'{name}\\<\\<\\<1,64,0\\>\\>\\>}}\n}}"];\n' for i, name in enumerate(names))
    edges = "".join(f'"graph_1_node_{i}" -> "graph_1_node_{i + 1}" [headlabel=0];\n' for i in range(len(names) - 1))
    return f'digraph dot {{\nsubgraph cluster_1 {{\nlabel="graph_1" graph[style="dashed"];\n{nodes}{edges}}}\n}}\n'


GEMM = "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas"
GELU, ADD, NORM = "triton_poi_fused_addmm_gelu_0", "triton_poi_fused_add_1", "triton_per_fused_add_native_layer_norm_2"
#: one compile of a two-block model: extern gemms, a GELU kernel used by both blocks, a residual fused into the norm
COMPILE = [("extern_kernels.addmm", ("blocks.0.fc1",)), (GELU, ("blocks.0.fc1", "blocks.0.act")),
           ("extern_kernels.addmm", ("blocks.0.fc2",)), (ADD, ("blocks.0",)),
           ("extern_kernels.addmm", ("blocks.1.fc1",)), (GELU, ("blocks.1.fc1", "blocks.1.act")),
           ("extern_kernels.addmm", ("blocks.1.fc2",)), (NORM, ("blocks.1", "norm"))]


# -- pure -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dynamo, path", [
    ("L['self'].blocks.0.attn.qkv", "blocks.0.attn.qkv"),
    ("L['self'].blocks[0].fc1", "blocks.0.fc1"),
    ("L['self']._modules['blocks']._modules['0']", "blocks.0"),
    ("L['self'].heads['main']", "heads.main"),
    ("L[\"self\"].fc", "fc"),
    ("G['model'].fc1", "model.fc1"),
    ("self.layers.2", "layers.2"),
    ("L['self']", ROOT),
    ("", ROOT),
])
def test_dynamo_module_names_become_dotted_paths(dynamo, path):
    assert module_path(dynamo) == path


def test_innermost_module_of_a_stack():
    stack = {"1": ("L['self'].blocks.0", object), "2": ("L['self'].blocks.0.fc1", object)}
    assert innermost_module(stack) == "blocks.0.fc1"
    assert innermost_module({}) == ROOT and innermost_module(None) == ROOT
    assert innermost_module([("L['self'].norm", object)]) == "norm"


def test_provenance_becomes_launches_in_order_with_modules_in_graph_order():
    mapping = {"cppCodeToPost": {"triton_poi_fused_gelu_0:2": ["mul", "erf"], "extern_kernels.addmm:1": ["addmm"],
                                 "triton_per_fused_add_native_layer_norm_1:3": ["var_mean", "add_1", "mul_7"],
                                 "triton_poi_orphan_4:4": ["made_by_a_pass"]},
               "postToPre": {"addmm": ["linear"], "mul": ["gelu"], "erf": ["gelu"], "add_1": ["x"],
                             "var_mean": ["layer_norm"], "mul_7": ["layer_norm"]}}
    pre = {"linear": "fc1", "gelu": "act", "x": ROOT, "layer_norm": "norm"}
    assert launches_from_provenance(mapping, pre) == [
        ("extern_kernels.addmm", ("fc1",)), ("triton_poi_fused_gelu_0", ("act",)),
        ("triton_per_fused_add_native_layer_norm_1", (ROOT, "norm")), ("triton_poi_orphan_4", ())]


def test_a_post_grad_node_without_a_way_to_the_dynamo_graph_takes_its_own_module():
    """Where `postToPre` leads nowhere (a torch that writes it empty, say), the post-grad graph's own
    nn_module_stack names the module; where it leads somewhere, that wins."""
    mapping = {"cppCodeToPost": {"triton_poi_fused_addmm_gelu_0:1": ["addmm", "mul", "erf"], "k_1:2": ["add"]},
               "postToPre": {"add": ["x"]}}
    post = {"addmm": "fc1", "mul": "act", "erf": "act", "add": "blocks.0"}
    assert launches_from_provenance(mapping, {"x": ROOT}, post) == [
        ("triton_poi_fused_addmm_gelu_0", ("fc1", "act")), ("k_1", (ROOT,))]
    assert launches_from_provenance(mapping, {"x": ROOT}) == [("triton_poi_fused_addmm_gelu_0", ()), ("k_1", (ROOT,))]


def test_provenance_of_another_shape_is_a_bad_input():
    for bad in ({}, {"cppCodeToPost": ["a"]}, [], "text"):
        with pytest.raises(BadInputError, match="provenance mapping"):
            launches_from_provenance(bad, {})  # type: ignore[arg-type]


def test_kernel_names_gather_every_launch():
    assert kernel_modules([COMPILE])[GELU] == ("blocks.0.fc1", "blocks.0.act", "blocks.1.fc1", "blocks.1.act")
    assert kernel_modules([COMPILE])[NORM] == ("blocks.1", "norm")


def test_dot_nodes_get_their_own_launch_when_the_graph_runs_the_compile_in_order():
    graph = gl.parse_dot(dot_of(GEMM, GELU, GEMM, ADD, GEMM, GELU, GEMM, NORM))
    found, how = node_modules(graph, [COMPILE])
    assert how == "by launch"
    assert found == {"graph_1_node_1": ["blocks.0.fc1", "blocks.0.act"], "graph_1_node_3": ["blocks.0"],
                     "graph_1_node_5": ["blocks.1.fc1", "blocks.1.act"], "graph_1_node_7": ["blocks.1", "norm"],
                     # the cuBLAS kernels, each the extern gemm launched between the same two Triton kernels
                     "graph_1_node_0": ["blocks.0.fc1"], "graph_1_node_2": ["blocks.0.fc2"],
                     "graph_1_node_4": ["blocks.1.fc1"], "graph_1_node_6": ["blocks.1.fc2"]}


SPLITK_REDUCE = "_Z21splitKreduce_kernelILi32ELi16EiffffLb1ELb1ELb0EEv18cublasSplitKParamsIT4_EPKT2_PKT3_PT5_"


def test_library_kernels_between_inductors_take_the_launches_between_the_same_two():
    # blocks.0.fc2's gemm runs as two cuBLAS kernels (split-K and its reduction); blocks.1.fc1's gemm is missing
    # from the graph, so the stretch between ADD and the second GELU has no node; an extra kernel after NORM has
    # no launch after NORM to take modules from
    graph = gl.parse_dot(dot_of(GEMM, GELU, GEMM, SPLITK_REDUCE, ADD, GELU, GEMM, NORM, GEMM))
    found, how = node_modules(graph, [COMPILE])
    assert how == "by launch"
    assert found["graph_1_node_0"] == ["blocks.0.fc1"]
    assert found["graph_1_node_2"] == found["graph_1_node_3"] == ["blocks.0.fc2"]
    assert found["graph_1_node_6"] == ["blocks.1.fc2"]
    assert "graph_1_node_8" not in found
    gap = [("extern_kernels.mm", ("a",)), ("extern_kernels.mm", ("b",)), (GELU, ("act",))]
    two_for_three = gl.parse_dot(dot_of(GEMM, SPLITK_REDUCE, GEMM, GELU))  # 3 library kernels for 2 launches
    assert node_modules(two_for_three, [gap])[0] == {
        "graph_1_node_0": ["a", "b"], "graph_1_node_1": ["a", "b"], "graph_1_node_2": ["a", "b"],
        "graph_1_node_3": ["act"]}


def test_dot_nodes_fall_back_to_every_launch_of_their_name_for_part_of_a_compile():
    graph = gl.parse_dot(dot_of(GELU, GEMM, NORM))  # e.g. one partition of the compile: the order does not match
    found, how = node_modules(graph, [COMPILE])
    assert how == "by name"
    assert found == {"graph_1_node_0": ["blocks.0.fc1", "blocks.0.act", "blocks.1.fc1", "blocks.1.act"],
                     "graph_1_node_2": ["blocks.1", "norm"]}
    assert node_modules(gl.parse_dot(dot_of(GEMM)), [COMPILE]) == ({}, "no kernel matched")
    assert node_modules(graph, []) == ({}, "no kernel matched")


def test_node_modules_refuses_what_is_not_a_graph_or_launches():
    graph = gl.parse_dot(dot_of(GELU))
    with pytest.raises(BadInputError, match="parsed graph"):
        node_modules("digraph {}", [COMPILE])
    for bad in ("launches", [("kernel", ("m",))], [[("kernel", "m")]], [[("kernel",)]], [[(1, ("m",))]], 7):
        with pytest.raises(BadInputError):
            node_modules(graph, bad)  # type: ignore[arg-type]


def test_watched_compile_graphs_get_node_modules_and_keep_them_in_their_dict():
    seen = WatchedGraphs()
    dot = dot_of(GEMM, GELU, GEMM, ADD, GEMM, GELU, GEMM, NORM)
    base = {"library": COMPILE_TREES, "role": "recording", "dot": dot}
    g = seen.add({**base, "kernel_launches": (tuple(COMPILE),), "kernel_modules_reason": None})
    assert g.node_modules["graph_1_node_7"] == ["blocks.1", "norm"] and g.node_modules_note == "by launch"
    back = WatchedGraphs.from_dicts(seen.to_dicts())[0]
    assert back.node_modules == g.node_modules
    none = seen.add({**base, "kernel_launches": (), "kernel_modules_reason": "torch 2.6 has no provenance"})
    assert none.node_modules is None and none.node_modules_note == "torch 2.6 has no provenance"
    broken = seen.add({**base, "dot": "not a dot", "kernel_launches": (tuple(COMPILE),)})
    assert broken.node_modules is None and "could not match" in broken.node_modules_note
    other = seen.add({**base, "library": TORCH_CUDA_GRAPH, "kernel_launches": (tuple(COMPILE),)})
    assert other.node_modules is None and other.node_modules_note is None
    unkept = WatchedGraphs(keep_dot=False).add({**base, "kernel_launches": (tuple(COMPILE),)})
    assert unkept.dot is None and unkept.node_modules["graph_1_node_3"] == ["blocks.0"]


# -- real compiles on the CPU ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def compiled():
    """Two models compiled by Inductor inside one recorder, then the second again from the FX graph cache."""
    torch = pytest.importorskip("torch")
    nn = torch.nn
    from graphlab.watch.inductor_modules import record_kernel_modules

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.act, self.fc2 = nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16)

        def forward(self, x):
            return x + self.fc2(self.act(self.fc1(x)))  # the residual add belongs to the block itself

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([Block(), Block()])
            self.norm = nn.LayerNorm(16)

        def forward(self, x):
            for block in self.blocks:
                x = block(x)
            return self.norm(x)

    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16)).eval()
    net = Net().eval()
    x = torch.randn(4, 16)
    import torch._inductor.config as config

    level = config.trace.provenance_tracking_level
    torch._dynamo.reset()
    with record_kernel_modules() as first, torch.no_grad():
        torch.compile(mlp, backend="inductor")(x)
        torch.compile(net, backend="inductor")(x)
    torch._dynamo.reset()  # Dynamo and Inductor again (the recorder keeps the compile caches off)
    with record_kernel_modules() as again, torch.no_grad():
        torch.compile(net, backend="inductor")(x)
    torch._dynamo.reset()
    return first, again, (config, level)


def test_cpu_kernels_name_the_modules_they_fuse(compiled):
    first, _, _ = compiled
    assert first.reason is None, first.reason
    assert len(first.compiles) == 2, first.compiles
    mlp, net = ({name: mods for name, mods in c if name.startswith("cpp_")} for c in first.compiles)
    assert list(mlp.values()) == [("1",)], f"the GELU between two extern gemms: {first.compiles[0]}"
    found = [mods for name, mods in first.compiles[1] if name.startswith("cpp_")]
    assert found == [("blocks.0.act",), ("blocks.0",), ("blocks.1.act",), ("blocks.1", "norm")], first.compiles[1]
    gemms = [mods for name, mods in first.compiles[1] if not name.startswith("cpp_")]
    assert gemms == [("blocks.0.fc1",), ("blocks.0.fc2",), ("blocks.1.fc1",), ("blocks.1.fc2",)], first.compiles[1]
    gelu = next(name for name, mods in first.compiles[1] if mods == ("blocks.0.act",))
    assert first.kernel_modules[gelu] == ("1", "blocks.0.act", "blocks.1.act"), \
        "one C++ kernel serves both blocks, and the Sequential's GELU (a kernel name is per code, not per compile)"


def test_a_second_compile_of_the_same_model_attributes_the_same(compiled):
    first, again, _ = compiled
    assert again.reason is None, again.notes
    assert again.compiles == [first.compiles[1]]


def test_another_model_of_the_same_shape_gets_its_own_modules_not_the_cached_compiles():
    """Inductor's caches would hand the second model the first one's provenance, whose Dynamo node names
    (input_1, ...) are not the second's (linear, ...): every module lost (seen on the H200 in a GPU test's
    order). The recorder turns the caches off while it is open, and puts them back."""
    torch = pytest.importorskip("torch")
    nn = torch.nn
    import torch._inductor.config as inductor_config
    from graphlab.watch.inductor_modules import record_kernel_modules

    class Named(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.act, self.fc2 = nn.Linear(24, 40), nn.GELU(), nn.Linear(40, 24)

        def forward(self, x):
            return self.fc2(self.act(self.fc1(x)))

    x = torch.randn(3, 24)
    found = []
    before = inductor_config.fx_graph_cache
    for model in (nn.Sequential(nn.Linear(24, 40), nn.GELU(), nn.Linear(40, 24)), Named()):
        torch._dynamo.reset()
        with record_kernel_modules() as rec, torch.no_grad():
            torch.compile(model.eval(), backend="inductor")(x)
        found.append(rec.compiles)
    torch._dynamo.reset()
    assert [mods for _, mods in found[0][0]] == [("0",), ("1",), ("2",)], found
    assert [mods for _, mods in found[1][0]] == [("fc1",), ("act",), ("fc2",)], found
    assert inductor_config.fx_graph_cache == before


def test_the_recorder_puts_inductors_option_and_the_trace_logger_back(compiled):
    import logging

    _, _, (config, level) = compiled
    assert config.trace.provenance_tracking_level == level
    assert not any(type(h).__name__ == "_Listen" for h in logging.getLogger("torch.__trace").handlers)


def test_a_torch_without_provenance_tracking_records_nothing_and_says_why(monkeypatch):
    pytest.importorskip("torch")
    import logging

    from graphlab.watch import inductor_modules

    monkeypatch.setattr(inductor_modules, "provenance_option", lambda: (None, "torch 2.6 has no provenance tracking"))
    with inductor_modules.record_kernel_modules() as rec:
        assert rec._handler not in logging.getLogger("torch.__trace").handlers
    assert rec.compiles == [] and rec.kernel_modules == {} and not rec.supported
    assert rec.reason == "torch 2.6 has no provenance tracking"


def test_an_unreadable_dynamo_graph_leaves_the_compile_unattributed_and_says_why(monkeypatch):
    torch = pytest.importorskip("torch")
    from graphlab.watch import inductor_modules

    monkeypatch.setattr(inductor_modules, "_graph_module_of_payload", lambda: None)
    torch._dynamo.reset()
    with inductor_modules.record_kernel_modules() as rec:
        out = torch.compile(lambda x: (x * 2).relu() + 1, backend="inductor")(torch.randn(8))
    torch._dynamo.reset()
    assert out.shape == (8,)
    assert rec.compiles == [] and "Dynamo's graph could not be read" in rec.reason, rec.notes
