"""The capture engine's logic on CPU: no-GPU errors, static buffers, verify, DOT export paths, census
comparison, the zoo and `graphlab record`'s guard rails. GPU behaviour is tested in tests/gpu/."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest
import torch

from conftest import FIXTURES
from graphlab.graph.dot_parser import parse_dot
from graphlab.errors import BadInputError, ConfigurationError, GPUUnavailableError, GraphlabError, UnsupportedError
from graphlab.capture import api as cap
from graphlab.capture import cell as cell_capture
from graphlab.capture import tensors
from graphlab.graph import export as dot_export
from graphlab.graph.census import Census, CensusNode
from graphlab.capture.engine import CaptureCost
from graphlab.zoo import ZOO, get_model

H200_MLP = FIXTURES / "h200" / "models" / "mlp_b8__verbose.dot"


# -- without a GPU ------------------------------------------------------------------------------------------
def test_capture_without_gpu_says_what_is_missing_and_how_to_use_recordings():
    with pytest.raises(GPUUnavailableError) as info:
        cap.capture(torch.nn.Linear(4, 4), torch.randn(2, 4))
    text = str(info.value)
    assert "gl.capture needs a CUDA GPU" in text and "load_recording" in text


def test_capturing_and_cell_capture_without_gpu_raise_the_same_error():
    with pytest.raises(GPUUnavailableError, match="gl.capturing"):
        with cap.capturing():
            pass
    with pytest.raises(GPUUnavailableError, match="%%cudagraph"):
        cell_capture.capture_cell("y = 1", {})


def test_top_level_names_resolve_lazily():
    import graphlab as gl

    assert gl.capture is cap.capture and gl.capturing is cap.capturing and gl.CapturedGraph is cap.CapturedGraph


# -- nested inputs and random inputs ------------------------------------------------------------------------
def test_map_and_flatten_handle_nested_tuples_lists_and_dicts():
    a, b, c = torch.ones(2), torch.zeros(3), torch.full((1,), 5.0)
    tree = (a, {"mask": b, "extra": [c, 7]}, "text")
    doubled = tensors.map_tensors(lambda t: t * 2, tree)
    assert torch.equal(doubled[1]["extra"][0], c * 2) and doubled[1]["extra"][1] == 7 and doubled[2] == "text"
    paths = [p for p, _ in tensors.flatten(tree)]
    assert paths == ["[0]", "[1]['mask']", "[1]['extra'][0]", "[1]['extra'][1]", "[2]"]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.int64, torch.bool])
def test_random_like_keeps_shape_and_dtype_and_is_never_all_zeros(dtype):
    template = torch.tensor([[3, 9, 5], [4, 8, 6]]).to(dtype)
    fresh = tensors.random_like(template, seed=1)
    assert fresh.shape == template.shape and fresh.dtype == dtype
    if dtype == torch.int64:
        assert int(fresh.min()) >= 3 and int(fresh.max()) <= 9
    elif dtype != torch.bool:
        assert fresh.abs().sum() > 0
    assert torch.equal(fresh, tensors.random_like(template, seed=1))


# -- CapturedGraph with a stand-in graph (replay = run the function into the static outputs) -------------------
class StandInGraph:
    """Behaves like a replayable CUDA graph on CPU: replay recomputes fn(static inputs) in place."""

    def __init__(self, fn, inputs, outputs, stale=False):
        self.fn, self.inputs, self.outputs, self.stale, self.replays = fn, inputs, outputs, stale, 0

    def replay(self):
        self.replays += 1
        if not self.stale:
            for out, new in zip(tensors.flatten(self.outputs), tensors.flatten(self.fn(*self.inputs))):
                out[1].copy_(new[1])

    def reset(self):
        pass


def _stand_in(fn, *example, stale=False, dtype=torch.float32):
    static = tensors.map_tensors(lambda t: t.detach().clone().to(dtype), example)
    with torch.no_grad():
        outputs = fn(*static)
    graph = StandInGraph(fn, static, outputs, stale)
    cg = cap.CapturedGraph(torch_graph=graph, static_inputs=static, static_outputs=outputs, fn=fn,
                           name="stand-in", device_index=-1,
                           cost=CaptureCost(1.0, 0.5, 2**20, 2**19, None))
    return cg, graph


def test_call_copies_into_static_inputs_and_returns_static_outputs():
    model = torch.nn.Linear(4, 3).eval()
    cg, graph = _stand_in(model, torch.randn(2, 4))
    static_in, static_out = cg.inputs[0], cg.outputs
    x = torch.randn(2, 4)
    out = cg(x)
    assert out is static_out and torch.equal(static_in, x) and graph.replays == 1
    assert torch.allclose(out, model(x))


def test_call_rejects_a_new_shape_and_a_changed_python_argument():
    cg, _ = _stand_in(lambda x, k: x * k, torch.randn(2, 4), 3)
    with pytest.raises(BadInputError, match=r"must be 2 x 4 float32 as captured, got 5 x 4"):
        cg(torch.randn(5, 4), 3)
    with pytest.raises(BadInputError, match="bakes in non-tensor arguments"):
        cg(torch.randn(2, 4), 4)
    with pytest.raises(BadInputError, match="same structure"):
        cg(torch.randn(2, 4))


def test_nested_dict_inputs_and_outputs_round_trip():
    fn = lambda batch: {"sum": batch["a"] + batch["b"], "pair": (batch["a"] * 2, batch["b"] - 1)}  # noqa: E731
    cg, _ = _stand_in(fn, {"a": torch.randn(3), "b": torch.randn(3)})
    new = {"a": torch.randn(3), "b": torch.randn(3)}
    out = cg(new)
    assert torch.allclose(out["sum"], new["a"] + new["b"]) and torch.allclose(out["pair"][1], new["b"] - 1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_verify_passes_when_replay_recomputes(dtype):
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU()).eval().to(dtype)
    cg, _ = _stand_in(model, torch.randn(4, 8), dtype=dtype)
    before = cg.inputs[0].clone()
    result = cg.verify(trials=2)
    assert result.passed and result.max_abs_err == 0.0 and result.outputs_checked == 1
    assert torch.equal(cg.inputs[0], before), "verify must restore the static inputs"


def test_verify_catches_a_graph_that_replays_stale_outputs():
    cg, _ = _stand_in(lambda x: x * 3, torch.randn(4, 8), stale=True)
    result = cg.verify(trials=1)
    assert not result.passed and result.max_abs_err > 0.1
    assert "FAIL" in str(result)


def test_verify_with_custom_inputs_and_without_code():
    cg, _ = _stand_in(lambda x: x + 1, torch.randn(2, 2))
    assert cg.verify(make_inputs=lambda: (torch.full((2, 2), 2.0),), trials=1).passed
    block = cap.CapturedGraph.pending("block", device_index=-1)
    with pytest.raises(BadInputError, match="still being captured"):
        block.replay()


def test_a_with_block_graph_is_usable_once_complete_and_not_after_reset():
    block = cap.CapturedGraph.pending("block", device_index=-1)
    assert "capturing" in repr(block) and block.origin == "live"
    with pytest.raises(BadInputError, match="still being captured"):
        block.outputs  # noqa: B018
    out = {"y": torch.zeros(2)}
    block.complete(StandInGraph(lambda: {"y": torch.ones(2)}, (), out), CaptureCost(1.0, 0.5, 0, 0, None), out)
    assert block.replay() is out and torch.equal(out["y"], torch.ones(2)) and block.capture_ms == 1.0
    block.reset()
    with pytest.raises(BadInputError, match="was reset"):
        block.replay()


def test_named_inputs_for_cell_graphs():
    cg, _ = _stand_in(lambda x, w: x @ w, torch.randn(2, 3), torch.randn(3, 3))
    cg.input_names = ("x", "w")
    x = torch.randn(2, 3)
    out = cg(x=x)
    assert torch.allclose(out, x @ cg.inputs[1])
    with pytest.raises(BadInputError, match="takes inputs"):
        cg(z=x)


def test_summary_and_reprs_describe_the_graph():
    cg, _ = _stand_in(lambda x: x * 2, torch.randn(2, 4))
    cg._parsed = parse_dot(H200_MLP.read_text(), source=str(H200_MLP))
    s = cg.summary()
    assert s["nodes"] == len(cg._parsed) and s["count_by_kind"]["kernel"] > 0
    assert "2 x 4 float32" in repr(cg) and "6 nodes, all kernels" in repr(cg)
    html = cg._repr_html_()
    assert "<table" in html and "pool 1.00 MiB" in html and "static inputs" in html
    assert "(2, 4)" not in repr(cg) + html and "[0]" not in repr(cg) + html  # shapes in words, no Python reprs


# -- DOT export ----------------------------------------------------------------------------------------------
class DumpOnlyGraph:
    """A torch graph without raw_cuda_graph access: only torch's debug_dump path is open."""

    def __init__(self, text):
        self.text = text

    def raw_cuda_graph(self):
        raise RuntimeError("You cannot access the raw cudaGraph_t instance unless CUDAGraph was initialized "
                           "with keep_graph=true")

    def debug_dump(self, path):
        Path(path).write_text(self.text)

    def replay(self):
        pass


def test_dump_falls_back_to_debug_dump_and_the_parser_reads_it():
    text = H200_MLP.read_text()
    assert dot_export.dump_dot(DumpOnlyGraph(text)) == text
    cg = cap.CapturedGraph(torch_graph=DumpOnlyGraph(text), static_inputs=(), static_outputs={}, fn=None,
                           name="mlp", device_index=-1,
                           cost=CaptureCost(0.0, 0.0, 0, 0, None))
    assert cg.graph.count_by_kind() == parse_dot(text).count_by_kind()
    assert cg.graph is cg.graph  # parsed once


def test_dump_without_cuda_bindings_refuses_other_flags():
    with pytest.raises(UnsupportedError, match="need cuda-bindings"):
        dot_export.dump_dot(DumpOnlyGraph("digraph dot {}"), flags="kernel_node_params|handles")


def test_debug_dump_that_writes_nothing_is_explained():
    class Silent(DumpOnlyGraph):
        def debug_dump(self, path):
            pass

    with pytest.raises(UnsupportedError, match="keep_graph=True"):
        dot_export.dump_dot(Silent(""))


@pytest.mark.parametrize("flags, value", [(None, 1), (5, 5), ("verbose", 1), ("verbose|handles", 1025),
                                          (["kernel_node_params", "memcpy-node-params"], 12), ("1", 1)])
def test_parse_flags(flags, value):
    assert dot_export.parse_flags(flags) == value


# -- census comparison ---------------------------------------------------------------------------------------
def _census_from(parsed) -> Census:
    nodes = [CensusNode(0, i, n.kind.value, n.name, n.grid, n.block, n.shared_bytes)
             for i, n in enumerate(parsed.nodes())]
    return Census(nodes=nodes, edge_count=sum(1 for _ in parsed.edges()), graph_count=len(parsed.graphs))


def test_census_agrees_with_the_same_graph_and_names_each_disagreement():
    parsed = parse_dot(H200_MLP.read_text())
    census = _census_from(parsed)
    assert census.compare(parsed) == []
    kernel = census.kernels()[0]
    census.nodes[census.nodes.index(kernel)] = CensusNode(0, kernel.index, "kernel", "other_kernel", kernel.grid,
                                                          kernel.block, kernel.shared_bytes)
    census.edge_count += 1
    problems = census.compare(parsed)
    assert any("kernel names differ" in p for p in problems) and any("edge count" in p for p in problems)


def test_a_census_without_cuda_bindings_says_what_to_install(monkeypatch):
    from graphlab.graph.census import take_census

    monkeypatch.setitem(sys.modules, "cuda.bindings", None)  # as if cuda-bindings were not installed
    with pytest.raises(UnsupportedError, match="pip install cuda-bindings"):
        take_census(0)


# -- zoo ------------------------------------------------------------------------------------------------------
def test_zoo_interface():
    assert set(ZOO) == {"mlp", "cnn", "gpt", "encoder", "resnet18"}
    for name, zm in ZOO.items():
        assert zm.name == name and zm.description and zm.default_batch_sizes
    with pytest.raises(BadInputError, match="choose one of"):
        get_model("vgg")


@pytest.mark.parametrize("name", ["mlp", "cnn", "gpt", "encoder"])
def test_zoo_models_build_seeded_on_cpu_and_take_their_inputs(name):
    zm = get_model(name)
    a, b = zm.build(device="cpu"), zm.build(device="cpu")
    assert not a.training
    for pa, pb in zip(a.parameters(), b.parameters()):
        assert torch.equal(pa, pb)
    (x,) = zm.make_inputs(2, device="cpu")
    assert x.shape[0] == 2 and x.abs().sum() > 0
    assert torch.equal(x, zm.make_inputs(2, device="cpu")[0]) and not torch.equal(x, zm.make_inputs(2, "cpu", seed=1)[0])
    with torch.no_grad():
        y = a(x)
    assert y.shape[0] == 2 and torch.isfinite(y).all()


def test_gpt_attention_is_causal():
    zm = get_model("gpt")
    model = zm.build(device="cpu")
    (ids,) = zm.make_inputs(1, device="cpu")
    changed = ids.clone()
    changed[0, -1] = (changed[0, -1] % 500) + 1
    with torch.no_grad():
        before, after = model(ids), model(changed)
    assert torch.allclose(before[0, :-1], after[0, :-1], atol=1e-5), "earlier positions must not see later tokens"
    assert not torch.allclose(before[0, -1], after[0, -1])


def test_resnet18_builds_where_torchvision_exists():
    zm = get_model("resnet18")
    if not zm.available():
        with pytest.raises(UnsupportedError, match="torchvision"):
            zm.build(device="cpu")
        pytest.skip("torchvision is not installed here")
    model = zm.build(device="cpu")
    with torch.no_grad():
        assert model(*zm.make_inputs(1, device="cpu")).shape == (1, 1000)


# -- record ---------------------------------------------------------------------------------------------------
def test_record_without_gpu_exits_2_with_one_line(capsys):
    from graphlab.cli import main

    assert main(["record", "--out", "unused", "--models", "mlp"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "graphlab record needs a CUDA GPU" in err


def test_record_git_commit_prefers_the_environment_then_git(monkeypatch):
    from graphlab.studies import record

    full = "a19b70a4cd087c50d9f097083a41a991bca9958e"
    monkeypatch.setenv("GRAPHLAB_GIT_COMMIT", full)
    assert record.git_commit() == full  # a GPU machine's copy may carry a stale .git: the caller knows better
    monkeypatch.setenv("GRAPHLAB_GIT_COMMIT", "a19b70a")  # a short hash: refused, before any GPU time is spent
    with pytest.raises(ConfigurationError, match="not a full commit hash"):
        record.git_commit()
    monkeypatch.delenv("GRAPHLAB_GIT_COMMIT")
    monkeypatch.setattr(record.subprocess, "run", lambda *a, **k: (_ for _ in ()).throw(OSError("no git")))
    assert record.git_commit() == "unknown"


def test_record_command_keeps_the_output_folder_out():
    from graphlab.studies.record import recorded_command

    assert recorded_command(["record", "--out", "/root/out/rec", "--models", "gpt"]) == "graphlab record --models gpt"
    assert recorded_command(["record", "--out=/x", "--models", "a b"]) == "graphlab record --models 'a b'"


def test_record_main_rejects_unknown_models(monkeypatch):
    from graphlab.studies import record

    monkeypatch.setattr("graphlab.env.require_cuda", lambda what: torch)
    args = argparse.Namespace(out="x", models=["vgg"], batch_sizes=None, no_sweep=True, repeats=None)
    with pytest.raises(GraphlabError, match="unknown recording"):
        record.record_main(args)


def test_record_main_records_each_model_in_a_fresh_process(monkeypatch):
    """Profiling and failed captures slow later eager launches in a process: one process per model."""
    from graphlab.studies import record

    monkeypatch.setattr("graphlab.env.require_cuda", lambda what: torch)
    calls = []
    monkeypatch.setattr(record.subprocess, "run", lambda argv: calls.append(argv) or argparse.Namespace(returncode=0))
    args = argparse.Namespace(out="rec", models=["mlp", "pitfalls"], batch_sizes=[1, 8], no_sweep=False, repeats=None)
    assert record.record_main(args) == 0
    assert [c[c.index("--models") + 1] for c in calls] == ["mlp", "pitfalls"]
    assert all(c[1:4] == ["-m", "graphlab", "record"] and c[c.index("--batch-sizes") + 1:][:2] == ["1", "8"]
               for c in calls)
    monkeypatch.setattr(record.subprocess, "run", lambda argv: argparse.Namespace(returncode=3))
    assert record.record_main(args) == 1


def test_zoo_defaults_are_the_sweep_batch_sizes():
    assert all(zm.default_batch_sizes == (1, 2, 4, 8, 16, 32, 64) for zm in ZOO.values())


def test_cell_inputs_and_outputs_are_read_from_the_code():
    import ast

    tree = ast.parse("h = model(ids)\nfor i in range(2):\n    h = h + bias\nprobs = h.softmax(-1)\n")
    assert cell_capture._assigned_names(tree) == ["h", "i", "probs"]
    assert set(cell_capture._loaded_names(tree)) == {"model", "ids", "range", "h", "bias"}
