"""Recorded mode: the live calls answer from recordings, visibly, and refuse what the recordings lack."""
from __future__ import annotations

import pytest
import torch

import graphlab as gl
from graphlab import mode
from graphlab.env import has_cuda

pytestmark = pytest.mark.skipif(has_cuda(), reason="recorded mode is what a machine without a GPU sees")


def test_without_a_mode_the_zoo_says_a_gpu_is_needed():
    saved = mode._current
    mode._current = None
    try:
        with pytest.raises(gl.GPUUnavailableError, match="set_mode"):
            gl.get_model("mlp").build()
        with pytest.raises(gl.GPUUnavailableError):
            gl.get_model("mlp").make_inputs(1)
    finally:
        mode._current = saved


def test_capture_of_a_zoo_model_is_the_recorded_graph(recorded):
    zoo = gl.get_model("mlp")
    model = zoo.build()
    (x,) = zoo.make_inputs(8)
    assert next(model.parameters()).device.type == "cpu"
    cg = gl.capture(model, x)
    rec = gl.load_recording("mlp")
    assert cg.graph.count_by_kind() == rec.graph("b8").count_by_kind()
    assert cg.dot() == rec.dot("b8") and cg.capture_ms == rec.graph_info("b8")["capture_ms"]
    assert cg.verify().passed is rec.graph_info("b8")["verify"]["passed"]
    assert "recorded on NVIDIA H200 on 2026-12-01" in repr(cg) and "recorded on NVIDIA H200" in cg._repr_html_()
    y = torch.randn(8, 256)
    torch.testing.assert_close(cg(y), model(y))  # runs eagerly here
    assert cg.census().compare(cg.graph) == rec.results("census")["b8"]["disagreements"]


def test_recorded_mode_refuses_what_the_recordings_lack(recorded):
    zoo = gl.get_model("mlp")
    with pytest.raises(gl.GPUUnavailableError, match="holds batch sizes 1, 2, 4, 8, 16, 32, 64, not 3"):
        gl.capture(zoo.build(), *zoo.make_inputs(3))
    with pytest.raises(gl.GPUUnavailableError, match="zoo models only"):
        gl.capture(torch.nn.Linear(4, 4), torch.randn(2, 4))
    cg = gl.capture(zoo.build(), *zoo.make_inputs(8))
    with pytest.raises(gl.GPUUnavailableError, match="flags 1 only"):
        cg.dot(flags="handles")


def test_graph_cache_runs_on_the_cpu_and_shows_recorded_graphs(recorded):
    zoo = gl.get_model("gpt")
    model = zoo.build()
    cache = gl.GraphCache(model, buckets=[1, 2, 4, 8], max_size=None)
    assert cache.backend.name == "eager"
    with torch.no_grad():
        (ids,) = zoo.make_inputs(3)
        torch.testing.assert_close(cache(ids), model(ids))
    assert cache.graph_for(3).graph.count_by_kind() == gl.load_recording("gpt").graph("b4").count_by_kind()


def test_sweep_and_timeline_answer_from_the_recordings(recorded):
    sweep = gl.sweep("gpt", batch_sizes=[1, 8])
    assert sweep.batch_sizes == [1, 8] and sweep.conditions["gpu"] == "NVIDIA H200"
    full = gl.load(gl.Sweep, "gpt")
    assert sweep.point(8, "graph") == full.point(8, "graph")
    with pytest.raises(gl.GPUUnavailableError, match="asked for batch sizes 3, the gpt recording has 1, 2, 4, 8, "
                                                     "16, 32 and 64"):
        gl.sweep("gpt", batch_sizes=[3])
    with pytest.raises(gl.GPUUnavailableError, match="asked for a gpt timeline at batch size 8, the recording has "
                                                     "one at batch size 1"):
        gl.record_timeline("gpt", batch_size=8)
    model = gl.get_model("mlp").build()
    assert gl.sweep(model).model == "mlp"
    assert gl.record_timeline("gpt", batch_size=1).model == "gpt"
    with pytest.raises(gl.GPUUnavailableError, match="zoo models only"):
        gl.sweep(torch.nn.Linear(2, 2), lambda b: torch.randn(b, 2))
