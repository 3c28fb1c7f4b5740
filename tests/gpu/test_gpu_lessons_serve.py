"""Notebook 09's views on a real GPU: a live load test and a live answer shown through the presentation layer, with
no output-check finding, the GPU named where they were measured, the settings by their names (not the CPU's "eager
(CPU)"), and figures that pass the figure check. About 30 s on an H200 (two services warm up)."""
from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

import graphlab as gl  # noqa: E402
from graphlab.output_check import figure_problems, html_problems  # noqa: E402
from graphlab.loadtest.api import run_loadtest  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def live():
    return run_loadtest("gpt", settings=["graphs", "graphs+batching"], rates=[250, 500], duration_s=1.0,
                        progress=False)


def test_a_live_load_test_reads_like_the_recorded_one(live):
    for view in ("latency", "batches", "stages", "generator"):
        table = live.table(view)
        assert html_problems(table._repr_html_(), view) == [], view
        assert "Recorded on" not in str(table) and f"measured here on {torch.cuda.get_device_name()}" in str(table)
    assert [r["setting"] for r in live.table().rows] == ["graphs", "graphs", "graphs+batching", "graphs+batching"]
    assert "GPU worker p50" in str(live.table("batches")) and "(CPU)" not in str(live)
    assert html_problems(live.knee_table()._repr_html_(), "knees") == []
    # the notebook's timeline and stage figures are at 500 req/s, live as recorded
    assert live.timeline("graphs+batching")["rate_rps"] == 500
    for name, fig in (("load", gl.plot_load_curves(live)), ("batches", gl.plot_batch_sizes(live)),
                      ("stages", gl.plot_stages(live, 500)), ("timeline", gl.plot_serving_timeline(live, "graphs"))):
        assert figure_problems(json.loads(fig.to_json()), name) == [], name


def test_a_live_answer_on_the_gpu_names_the_gpu_worker():
    service = gl.InferenceService(gl.ServeConfig(model="gpt", setting="graphs+batching", device="cuda")).start()
    try:
        answer = service.infer_sync({"texts": ["CUDA graphs replay "], "top_k": 3})
    finally:
        service.close()
    html = answer._repr_html_()
    assert html_problems(html, "answer") == [] and "GPU worker" in html and "on the GPU" in html
    assert json.loads(json.dumps(answer)) == dict(answer)
