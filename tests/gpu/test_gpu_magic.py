"""%%cudagraph through IPython's InteractiveShell on a GPU: capture, replay, verify, failure, recovery."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("IPython")

from IPython.core.interactiveshell import InteractiveShell  # noqa: E402

import graphlab as gl  # noqa: E402
from graphlab.zoo import get_model  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.extension_manager.load_extension("graphlab")
    zm = get_model("gpt")
    ip.user_ns.update(torch=torch, model=zm.build(), ids=zm.make_inputs(8)[0], zm=zm)
    return ip


def test_cell_capture_replay_and_verify(shell):
    result = shell.run_cell("%%cudagraph step --warmup-calls 2\nlogits = model(ids)\nprobs = logits.softmax(-1)\n")
    assert result.error_in_exec is None, result.error_in_exec
    ns = shell.user_ns
    step, logits = ns["step"], ns["logits"]
    assert isinstance(step, gl.CapturedGraph)
    assert set(step.outputs) == {"logits", "probs"} and step.outputs["logits"] is logits
    assert step.input_names == ("ids",)
    new_ids = get_model("gpt").make_inputs(8, seed=3)[0]
    ns["ids"].copy_(new_ids)
    step.replay()
    with torch.no_grad():
        assert torch.allclose(logits, ns["model"](new_ids), atol=1e-3)
    other = get_model("gpt").make_inputs(8, seed=4)[0]
    step(ids=other)
    with torch.no_grad():
        assert torch.allclose(ns["probs"], ns["model"](other).softmax(-1), atol=1e-4)
    assert step.verify(trials=2).passed
    assert step.graph.count_by_kind()["kernel"] > 10


def test_failing_cell_names_the_line_and_the_next_cell_captures(shell):
    result = shell.run_cell("%%cudagraph bad --no-show\nh = model(ids)\nn = int(h.argmax())\n")
    err = result.error_in_exec
    assert isinstance(err, gl.CaptureError), err
    assert err.cause == "host_sync" and err.diagnosis.line.where() == "cell line 2"
    assert "bad" not in shell.user_ns
    result = shell.run_cell("%%cudagraph good --no-show\nh = model(ids)\n")
    assert result.error_in_exec is None and isinstance(shell.user_ns["good"], gl.CapturedGraph)
    assert shell.user_ns["good"].verify(trials=1).passed
