"""A learner can trust every line: recorded mode says what it replays, errors give advice that applies, outputs
are for people. Each test would have caught one of the untrue or unreadable things issue 23 lists."""
from __future__ import annotations

import subprocess
import sys
import warnings

import pytest
import torch

import graphlab as gl
from conftest import REPO
from graphlab.cli import main as cli_main
from graphlab.env import has_cuda

pytestmark = pytest.mark.skipif(has_cuda(), reason="recorded mode is what a machine without a GPU sees")


def test_a_recorded_verify_says_it_is_the_gpus_check_not_one_run_here(recorded):
    zoo = gl.get_model("mlp")
    text = str(gl.capture(zoo.build(), *zoo.make_inputs(8)).verify())
    assert text.startswith("recorded on NVIDIA H200") and "nothing was replayed here" in text
    assert "matches eager" not in text  # the present tense was the lie: nothing was compared here


def test_an_eager_backend_cache_counts_stand_ins_not_captures(recorded, monkeypatch):
    zoo = gl.get_model("gpt")
    cache = gl.GraphCache(zoo.build(), buckets=[1, 2, 4], max_size=None)
    with torch.inference_mode():
        for n in (3, 1, 3):
            cache(zoo.make_inputs(n)[0])
    text = str(cache.stats())
    assert "2 misses that made an eager stand-in" in text and "no CUDA graph was captured" in text
    assert "captures" not in text and "capture time" not in text.replace("no capture time", "")
    labels = []
    import graphlab.cache.graph_cache as graph_cache

    monkeypatch.setattr(graph_cache, "progress_bar", lambda total, label, **kw: labels.append(label))
    gl.GraphCache(zoo.build(), buckets=[1, 2], max_size=None).warm_up(zoo.make_inputs(1)[0])
    assert labels and not labels[0].startswith("Capturing") and "nothing captured" in labels[0]


def test_a_recorded_load_test_says_what_it_shows_instead_of_what_was_asked(recorded):
    result = gl.run_loadtest("gpt", settings=["eager", "graphs"], rates=[250, 8000], duration_s=1.0)
    text = str(result)
    assert "recorded mode: asked for settings eager, graphs" in text and "eager+batching" in text
    assert "asked for rates 250, 8000 req/s" in text and "asked for 1 s per rate" in text
    exact = gl.run_loadtest("gpt", settings=result.settings(), rates=result.conditions["rates_rps"],
                            duration_s=result.conditions["duration_s"])
    assert exact.notes == []  # nothing to say when the recording is what was asked


def test_gpu_errors_in_recorded_mode_do_not_ask_for_recorded_mode(recorded):
    for enter in (lambda: gl.capturing().__enter__(), lambda: gl.watch().__enter__()):
        with pytest.raises(gl.GPUUnavailableError) as err:
            enter()
        assert "set_mode('recorded')" not in str(err.value) and "Recorded mode is on" in str(err.value)
    with pytest.raises(gl.GPUUnavailableError, match="estimate_launches"):
        gl.capture(torch.nn.Linear(4, 4), torch.randn(2, 4))


def test_cli_errors_give_flags_not_python(capsys):
    assert cli_main(["loadtest", "--duration", "0.1"]) == 2
    err = capsys.readouterr().err
    assert "--device cpu" in err and "device='cpu'" not in err and "set_mode" not in err
    from graphlab.env import gpu_hint

    assert "set_mode" in gpu_hint() or "Recorded mode" in gpu_hint()  # Python advice again after the command


def test_about_prints_in_a_script_and_says_no_conditional_nodes_on_a_cpu():
    out = subprocess.run([sys.executable, "-c", "import graphlab as gl; gl.about()"], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "CUDA graph features" in out.stdout, out.stderr
    assert "=yes" not in out.stdout  # a CPU build's API is not this machine's GPU feature
    line = next(x for x in out.stdout.splitlines() if x.startswith("conditional nodes"))
    assert line.split(None, 2)[2].startswith("none here") and "gl.conditional_support()" in line


def test_cache_warnings_point_at_the_users_line(recorded):
    zoo = gl.get_model("gpt")
    cache = gl.GraphCache(zoo.build(), buckets=[1, 2], max_size=None)
    with warnings.catch_warnings(record=True) as seen, torch.inference_mode():
        warnings.simplefilter("always")
        cache(zoo.make_inputs(4)[0])
    assert seen and seen[0].filename == __file__


def test_cache_keys_with_a_number_are_explained(recorded):
    zoo = gl.get_model("gpt")
    cache = gl.GraphCache(zoo.build(), buckets=[4], max_size=None)
    with torch.inference_mode():
        cache(zoo.make_inputs(3)[0])
        cache(zoo.make_inputs(3)[0][:, :32])
    text = str(cache.graph_keys())
    assert "`4#0`" in text and "`4#1`" in text and "one graph per other key" in text


def test_a_padding_error_names_a_lone_output_once():
    encoder = gl.get_model("encoder").build(device="cpu")
    cache = gl.GraphCache(encoder, dims=[gl.Pad("seq", dim=1, buckets=[32], max_size=None, out_dim=1)],
                          backend="eager")
    with pytest.raises(gl.PaddingError) as err, torch.inference_mode():
        cache(gl.get_model("encoder").make_inputs(2, device="cpu")[0][:, :20])
    assert "(output output)" not in str(err.value) and "the output" in str(err.value)


def test_eager_rows_of_a_conditional_study_do_not_read_launches_0(recorded):
    from graphlab.studies.conditional import early_exit_study

    table = early_exit_study().table()
    column = next(c for c in table.columns if c.key == "launches")
    eager = [r for r in table.rows if r["variant"] == "eager"]
    assert eager and all(table.cell(column, r["launches"]) == "\u2013" for r in eager)


def test_recorded_mode_offers_every_recorded_batch_size_and_an_estimate(recorded):
    models = gl.recorded_models()
    assert {r["model"] for r in models.rows} == {"mlp", "cnn", "gpt", "encoder", "resnet18"}
    assert all(r["latency_batch_sizes"] == list(range(1, 65)) for r in models.rows)
    assert "every one of 1-64" in str(models)
    own = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    estimate = gl.estimate_launches(own, torch.randn(3, 8))
    assert estimate.launches == 3 and estimate.ops == {"addmm": 2, "relu": 1}
    text = str(estimate)
    assert text.startswith("ESTIMATE (no GPU here, nothing was timed)") and "µs per launch" in text
    low, high = estimate.launch_us
    assert 0 < low <= high
    with pytest.raises(gl.BadInputError, match="inputs of one call"):
        gl.estimate_launches(own)


def test_readable_tables_use_units_in_headers_few_digits_and_cut_nothing():
    long = "x" * 200
    html = gl.readable([{"pool_bytes": 35651584, "first_pass_max_us": 119497.4, "max_abs_err": 4.8e-07,
                         "rule": long, "shape": (4, 64)}]).to_html()
    assert "pool (MiB)" in html and ">34.0<" in html and "35651584" not in html
    assert "first pass max (ms)" in html and ">119<" in html and "e+05" not in html and "4.8e-7" in html
    assert long in html and "…" not in html and "4 x 64" in html


def test_executed_notebooks_hold_no_path_of_the_machine_that_ran_them():
    import nbformat

    from graphlab.tour import scrub_paths

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [nbformat.v4.new_output("stream", name="stderr",
                                           text="/tmp/ipykernel_7407/3421072281.py:2: UserWarning: GraphCache 'x'"),
                    nbformat.v4.new_output("execute_result", data={"text/plain": f"{REPO}/graphlab/cache/x.py"})]
    nb.cells = [cell]
    scrub_paths(nb, root=REPO)
    assert cell.outputs[0]["text"] == "<cell>:2: UserWarning: GraphCache 'x'"
    assert cell.outputs[1]["data"]["text/plain"] == "graphlab/cache/x.py"


def test_a_changed_cell_in_recorded_mode_points_to_what_can_be_done_here(recorded):
    from graphlab.capture.recorded import recorded_cell

    with pytest.raises(gl.GPUUnavailableError, match="estimate_launches"):
        recorded_cell("logits = model(ids) * 2", {}, name="step")


def test_the_load_figures_draw_the_diagonal_on_the_log_axis_and_name_an_overloaded_setting(recorded):
    pytest.importorskip("plotly")
    result = gl.run_loadtest("gpt")
    curves = gl.plot_load_curves(result)
    diagonal = next(t for t in curves.data if t.name == "answered = offered")
    low = min(p.offered_rps for p in result.points)
    assert diagonal.x[0] == low > 0 and len(diagonal.x) > 2 and list(diagonal.x) == list(diagonal.y)
    assert "<br>" in curves.layout.title.text  # two short lines: a narrow page does not cut it
    stages = gl.plot_stages(result, rate_rps=500)
    drawn = set(stages.data[0].y)
    overloaded = {p.setting for p in result.points if p.offered_rps == 500 and not p.sustained}
    assert overloaded and not drawn & overloaded
    assert all(s in stages.layout.title.text for s in overloaded)
