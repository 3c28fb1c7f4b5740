"""Capture and replay on a real GPU: every zoo model and dtype against eager, nested inputs, grad modes,
shared pools, the `with` form, and the DOT export."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import graphlab as gl  # noqa: E402
from graphlab.capture.api import CapturedGraph, capture, capturing  # noqa: E402
from graphlab.zoo import ZOO, get_model  # noqa: E402

pytestmark = pytest.mark.gpu

DTYPES = [torch.float32, torch.bfloat16, torch.float16]
TOL = {torch.float32: 1e-3, torch.bfloat16: 3e-2, torch.float16: 1e-2}


def _close(got, want, dtype):
    scale = float(want.abs().max()) or 1.0
    return float((got.float() - want.float()).abs().max()) <= TOL[dtype] * scale


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).replace("torch.", ""))
@pytest.mark.parametrize("name", list(ZOO))
def test_zoo_model_replay_matches_eager(name, dtype):
    zm = get_model(name)
    if not zm.available():
        pytest.skip(f"{name} needs {zm.needs}")
    model = zm.build(device="cuda", dtype=dtype)
    cg = capture(model, *zm.make_inputs(8, device="cuda", dtype=dtype), name=name)
    for seed in (1, 2):
        new = zm.make_inputs(8, device="cuda", dtype=dtype, seed=seed)
        got = cg(*new).clone()
        with torch.no_grad():
            want = model(*new)
        assert _close(got, want, dtype), f"{name} {dtype}: replay differs from eager"
    result = cg.verify(trials=2)
    assert result.passed, str(result)
    assert cg.graph.count_by_kind().get("kernel", 0) > 0
    cg.reset()


def test_capture_reports_time_memory_and_parsed_graph():
    zm = get_model("mlp")
    cg = capture(zm.build(), *zm.make_inputs(8))
    assert cg.capture_ms > 0 and cg.instantiate_ms >= 0
    assert cg.origin == "live" and cg.pool_bytes > 0, "a private pool must have grown"
    graph = cg.graph
    assert graph is cg.graph
    assert len(graph.kernels()) >= 3  # three linear layers at least
    assert "digraph" in cg.dot(flags=0) and cg.dot(flags=0) != cg.dot()
    assert "kernel" in repr(cg) and "<table" in cg._repr_html_()
    cg.reset()
    with pytest.raises(gl.BadInputError, match="was reset"):
        cg.replay()


def test_plain_function_with_nested_dict_inputs_and_outputs_in_inference_mode():
    def fn(batch):
        return {"sum": batch["a"] + batch["b"], "parts": (batch["a"].relu(), batch["b"] * 3)}

    example = {"a": torch.randn(4, 16, device="cuda"), "b": torch.randn(4, 16, device="cuda")}
    cg = capture(fn, example, grad_mode="inference_mode")
    new = {"a": torch.randn(4, 16, device="cuda"), "b": torch.randn(4, 16, device="cuda")}
    out = cg(new)
    assert torch.allclose(out["sum"], new["a"] + new["b"]) and torch.allclose(out["parts"][1], new["b"] * 3)
    assert cg.verify().passed


def test_inputs_are_copied_not_aliased_and_shapes_are_fixed():
    x = torch.randn(2, 8, device="cuda")
    cg = capture(lambda t: t * 2, x)
    assert cg.inputs[0].data_ptr() != x.data_ptr()
    with pytest.raises(gl.GraphlabError, match="fixed shapes"):
        cg(torch.randn(3, 8, device="cuda"))


def test_shared_pool_and_replay_on_the_default_stream():
    zm = get_model("mlp")
    model = zm.build()
    big = capture(model, *zm.make_inputs(64))
    small = capture(model, *zm.make_inputs(8), pool=big)
    assert torch.cuda.current_stream() == torch.cuda.default_stream()
    new = zm.make_inputs(8, seed=5)
    with torch.no_grad():
        assert torch.allclose(small(*new), model(*new), atol=1e-4)


def test_with_block_captures_code_over_tensors_prepared_outside():
    model = get_model("mlp").build()
    x = torch.randn(8, 256, device="cuda")
    with torch.no_grad():
        model(x)  # eager warm-up: a with block runs only once
    with capturing(name="block") as cg:
        y = model(x)
        z = y.relu()
        for use in (lambda: cg.outputs, cg.replay):  # the graph exists only once the block has ended
            with pytest.raises(gl.BadInputError, match="still being captured"):
                use()
        assert "capturing" in repr(cg)
    assert isinstance(cg, CapturedGraph) and set(cg.outputs) == {"y", "z"}
    assert cg.outputs["y"] is y
    new = torch.randn(8, 256, device="cuda")
    x.copy_(new)
    cg.replay()
    with torch.no_grad():
        assert torch.allclose(y, model(new), atol=1e-4) and torch.allclose(z, model(new).relu(), atol=1e-4)
    assert cg.graph.count_by_kind()["kernel"] >= 4
    with pytest.raises(gl.GraphlabError, match="cannot be re-run"):
        cg.verify()
