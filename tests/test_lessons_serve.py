"""Notebook 09 as a lesson: what its outputs show a learner, read from the shipped H200 recordings (serving and
serving_http) and from a small live run on the CPU. Each test holds one item of "every notebook teaches": readable
figures (no axis stretched to 10^50, one colour per legend entry, bars inside their window, no labels on top of each
other), numbers and words for people (no 538.45, no NaN, no 'gpu ms' on a CPU), library views instead of formatting
in the notebook's cells."""
from __future__ import annotations

import json
import math
import re

import pytest
from conftest import REPO

import graphlab as gl
from graphlab.output_check import figure_problems, html_problems, text_problems
from graphlab.loadtest.api import recorded_loadtest, run_loadtest
from graphlab.loadtest.report import LoadTest
from graphlab.serve.answer import ServiceAnswer
from graphlab.serve.config import ServeConfig

pytest.importorskip("plotly")

NOTEBOOK = REPO / "notebooks" / "09_serving.ipynb"


@pytest.fixture(scope="module")
def sweep() -> LoadTest:
    """The load test notebook 09 shows without a GPU: the serving recording of the H200."""
    return recorded_loadtest("gpt", gpu="h200")


@pytest.fixture(scope="module")
def http():
    return gl.load(gl.HttpServing, gpu="h200")


@pytest.fixture(scope="module")
def cpu_sweep() -> LoadTest:
    return run_loadtest("mlp", settings=["eager", "graphs+batching"], rates=[60], duration_s=0.4, progress=False,
                        timeline_rates=[60], config=ServeConfig(device="cpu", max_batch_size=8, preprocess_threads=2))


def _figure(fig) -> dict:
    return json.loads(fig.to_json())


def _problems_of(view) -> list[str]:
    return html_problems(view._repr_html_(), "view") + text_problems(str(view), "view")


# -- figures -----------------------------------------------------------------------------------------------------
def test_the_http_capacity_figure_puts_its_p99_bound_at_50_ms_not_10_to_the_50(http):
    fig = gl.plot_http_capacity(http)
    data = _figure(fig)
    assert figure_problems(data, "capacity") == []
    (note,) = [a for a in data["layout"]["annotations"] if "p99" in a["text"]]
    assert note["yref"] == "y" and note["y"] == pytest.approx(math.log10(50.0))  # a log axis takes log10
    assert data["layout"]["yaxis"]["type"] == "log"


def test_the_http_capacity_figure_prints_no_label_that_could_cover_another(http):
    """The client counts were text beside each point, printed over each other where points lie close: they are in
    each marker's size and in its hover text, and the title says so."""
    data = _figure(gl.plot_http_capacity(http))
    for trace in data["data"]:
        assert "text" not in trace.get("mode", ""), trace["name"]
        assert trace["customdata"] == [r["clients"] for r in http.capacity_rows() if r["server"] == trace["name"]]
        sizes = trace["marker"]["size"]
        assert sizes == sorted(sizes) and sizes[0] < sizes[-1]  # more clients, a larger marker
    assert "8, 32, 128 and 256" in data["layout"]["title"]["text"]
    ticks = data["layout"]["xaxis"]["ticktext"]
    assert ticks and all(re.fullmatch(r"[\d,]+", t) for t in ticks)  # numbers, not plotly's "2 5 1000 2" minor labels


def test_the_load_curves_beside_in_process_give_each_series_its_own_colour_and_name(http):
    fig = gl.plot_load_curves(http.beside_in_process())
    data = _figure(fig)
    assert figure_problems(data, "beside") == []
    legend = [t for t in data["data"] if t.get("showlegend") is not False]
    names = [t["name"] for t in legend]
    colours = [t["line"]["color"] for t in legend]
    assert len(set(names)) == len(names) == 5 and len(set(colours)) == len(colours)
    assert {"graphs+batching over HTTP", "graphs+batching in process"} <= set(names)


def test_every_serving_figure_of_notebook_09_passes_the_figure_check(sweep, http):
    figures = {"load": gl.plot_load_curves(sweep), "batches": gl.plot_batch_sizes(sweep),
               "stages": gl.plot_stages(sweep, 500), "timeline": gl.plot_serving_timeline(sweep, "graphs+batching"),
               "capacity": gl.plot_http_capacity(http), "beside": gl.plot_load_curves(http.beside_in_process())}
    for name, fig in figures.items():
        assert figure_problems(_figure(fig), name, recorded=True) == [], name


def test_the_serving_timeline_cuts_its_bars_to_the_window(sweep):
    """A batch that began waiting before the window (at -2.6 ms in the recording) started left of the x range."""
    window = sweep.timeline("graphs+batching")
    assert min(b[4] for b in window["batches"]) < 0  # the recording holds such a bar
    data = _figure(gl.plot_serving_timeline(sweep, "graphs+batching"))
    low, high = data["layout"]["xaxis"]["range"]
    assert (low, high) == (0, pytest.approx(window["window_us"] / 1000.0))
    for trace in data["data"]:
        for base, width in zip(trace["base"], trace["x"]):
            assert low <= base and base + width <= high + 1e-3, trace["name"]
    colours = [t["marker"]["color"] for t in data["data"]]
    assert len(set(colours)) == len(colours)  # the GPU lane no longer shares the GPU worker stage's blue


def test_a_legend_below_a_figure_hangs_from_its_top(sweep):
    """A legend under the plot anchored at its bottom grows upwards, onto the tick labels and the axis title."""
    for fig in (gl.plot_load_curves(sweep), gl.plot_stages(sweep, 500), gl.plot_serving_timeline(sweep, "graphs")):
        legend = fig.layout.legend
        assert legend.yanchor == "top" and legend.y < 0


# -- the load test's views -------------------------------------------------------------------------------------------
def test_the_load_test_shows_numbers_for_people(sweep):
    """It printed 538.45 and 1151.17 ms, five-digit numbers, and 'gpu ms' and 'busy%' as headers."""
    text = str(sweep)
    assert text_problems(text, "load test") == [] and html_problems(sweep._repr_html_(), "load test") == []
    assert "538.45" not in text and "1151.17" not in text
    assert re.search(r"^eager +500 +332 +538 +728 +0 +no$", text, re.M)
    assert "p50 (ms)" in text and "offered (req/s)" in text
    assert "knee (the highest rate a setting kept up with): eager 250 req/s, graphs 1,000 req/s" in text
    assert "Recorded on NVIDIA H200" in text and "2026-12-01" in text


def test_the_batches_view_replaces_the_notebooks_to_pandas_columns(sweep):
    """Notebook 09 showed `gl.readable(result.to_pandas()[[...]])`: queue_p50_us as 1,142,547, keys as headers."""
    table = sweep.table("batches")
    assert _problems_of(table) == []
    headers = [table.header_of(c) for c in table.columns]
    assert headers == ["setting", "offered (req/s)", "answered (req/s)", "rows per batch", "padding (%)",
                       "queue p50 (ms)", "GPU worker p50 (ms)", "GPU busy (%)", "worker starved (%)"]
    assert "1,143" in str(table) and "1,142,547" not in str(table)
    for view in ("stages", "generator"):
        assert _problems_of(sweep.table(view)) == []
    with pytest.raises(gl.ResultsError, match="asked for the view 'nope'"):
        sweep.table("nope")


def test_the_knee_table_says_what_happened_past_each_knee(sweep):
    table = sweep.knee_table()
    assert _problems_of(table) == []
    eager = next(r for r in table.rows if r["setting"] == "eager")
    assert (eager["knee"], eager["next"], eager["next_answered"]) == (250.0, 500.0, 332.0)
    assert sweep.point("graphs", 1500).refused_total == 150
    with pytest.raises(gl.ResultsError, match="asked for graphs at 5 req/s; this load test has graphs at 250"):
        sweep.point("graphs", 5)


def test_a_cpu_load_test_says_what_ran_not_graphs_and_gpu_ms(cpu_sweep, capsys):
    """`loadtest --device cpu` labelled its rows "graphs" and a column "gpu ms": nothing is captured on a CPU."""
    text = str(cpu_sweep)
    assert "GPU" not in text and "gpu" not in text
    labels = [row["setting"] for row in cpu_sweep.table().rows]
    assert labels == ["eager (CPU)", "buckets + batching, eager (CPU)"]
    batches = str(cpu_sweep.table("batches"))
    assert "worker p50 (µs)" in batches or "worker p50 (ms)" in batches
    assert "model busy" in batches and "GPU" not in batches
    assert "nothing captured" in text
    from graphlab.cli import main

    rc = main(["loadtest", "--model", "mlp", "--device", "cpu", "--settings", "graphs", "--rates", "30",
               "--duration", "0.3", "--max-batch-size", "4", "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0 and "padded to buckets, eager (CPU)" in out and "GPU" not in out and "gpu ms" not in out


def test_a_cpu_figure_names_the_worker_not_a_gpu(cpu_sweep):
    for fig in (gl.plot_stages(cpu_sweep, 60), gl.plot_serving_timeline(cpu_sweep, "graphs+batching")):
        names = [t.name for t in fig.data]
        assert not any("GPU" in n for n in names), names


# -- one answer -------------------------------------------------------------------------------------------------------
def test_an_answer_is_the_same_dict_to_code_and_a_view_in_a_notebook():
    """The notebook formatted `answer["timing_us"]` by hand (`k.removesuffix('_us')`, 1,076,666 µs)."""
    service = gl.InferenceService(gl.ServeConfig(model="gpt", setting="eager+batching", device="cpu")).start()
    try:
        answer = service.infer_sync({"texts": ["CUDA graphs replay ", "a service batches "], "top_k": 3})
    finally:
        service.close()
    assert isinstance(answer, dict) and isinstance(answer, ServiceAnswer)
    plain = json.loads(json.dumps(answer))
    assert plain == dict(answer) and set(plain) == {"id", "results", "batch", "timing_us"}
    html = answer._repr_html_()
    assert html_problems(html, "answer") == []
    assert "token id" in html and "probability" in html and "worker (from a batch being cut" in html
    assert "GPU" not in html and "alone, 2 rows (no padding)" in html
    assert len(answer.tokens().rows) == 6


def test_an_answer_of_a_batch_says_who_it_ran_with():
    answer = ServiceAnswer({"id": 7, "results": [[{"id": 5, "label": "a", "prob": 0.5}]],
                            "batch": {"id": 3, "requests": 4, "rows": 5, "bucket": 8},
                            "timing_us": {"pre_us": 12.0, "queue_us": 1_142_547.0, "gpu_us": 480.0,
                                          "post_us": 30.0, "in_service_us": 1_143_100.0}}, device="cuda")
    text = str(answer.stages())
    assert "batch 3: with 3 other requests, 5 rows (padded to 8)" in text
    assert "1.14 s" in text and "GPU worker" in text and text_problems(text, "stages") == []


# -- over HTTP ---------------------------------------------------------------------------------------------------------
def test_the_http_table_has_dashes_with_a_reason_not_nan_and_no_long_numbers(http):
    table = http.table()
    html = table._repr_html_()
    assert html_problems(html, "http") == [] and "NaN" not in html and "7,346.9" not in html
    assert "7,347" in html and "17,006" in html
    assert "capacity not measured: hey's client sweep ran on bare Starlette app (the floor) and graphs+batching only" \
        in str(table)
    assert http._repr_html_() == html


def test_the_flood_and_the_summary_are_views(http):
    flood = http.flood_table()
    assert _problems_of(flood) == []
    assert "512 clients at once" in flood.title and "at most 64 requests inside" in flood.title
    assert [r["status"] for r in flood.rows][-1] == "no answer (lost)"
    summary = http.summary()
    assert _problems_of(summary) == []
    assert "0.612x" in str(summary) and "1.10 ms over the floor" in str(summary)
    assert all(text_problems(line, "goals") == [] for line in http.goals()) and len(http.goals()) == 3


# -- the notebook ------------------------------------------------------------------------------------------------------
def _cells(kind: str) -> list[str]:
    return ["".join(c["source"]) for c in json.loads(NOTEBOOK.read_text())["cells"] if c["cell_type"] == kind]


def test_notebook_09_cells_call_views_and_format_nothing_by_hand():
    code = "\n".join(_cells("code"))
    for hand_made in ("removesuffix", "to_pandas", "print(f", ":,.0f", ":.4f", "flood_rows", "knees().items()",
                      "gl.readable(", "Sweep.from_dict"):
        assert hand_made not in code, hand_made
    for view in ("result.knee_table()", 'result.table("batches")', "over_http.summary()", "over_http.flood_table()",
                 'over_http.open_loop.table("generator")', "over_http.protocol_table()", "over_http.protocol_goals()",
                 "over_http.ray_table()", "gl.ProtocolAnswer.from_triton(", "gl.ProtocolAnswer.from_http("):
        assert view in code, view


def test_notebook_09_shows_the_protocols_and_ray_as_recorded_and_never_more():
    """Section 9 and 8 read the serving_http recording: what it holds, or in words that it holds none (a recording
    without the protocols' comparison has an empty table saying so and goals "not measured")."""
    http = gl.load(gl.HttpServing, gpu="h200")
    table, goals, ray = http.protocol_table(), http.protocol_goals(), http.ray_table()
    for shown in (table, goals, ray):
        assert _problems_of(shown) == []
    if not http.protocols:
        assert table.rows == [] and "no comparison of the protocols is recorded" in str(table)
        assert {row["verdict"] for row in goals.rows} == {"not measured"}
    else:
        assert {row["verdict"] for row in goals.rows} <= {"goal met", "goal missed"}
    if not http.ray:
        assert ray.rows == [] and "Ray Serve has not run on a GPU in this recording" in str(ray)


def test_notebook_09_text_has_no_project_history_and_the_exercise_is_no_noise():
    text = "\n".join(_cells("markdown"))
    assert "lent" not in text and "has not run on a GPU yet" in text
    exercise = text[text.index("## Exercise"):]
    assert "eager+batching" in exercise and "knee" in exercise
    # the answer: 1,500 / 250 req/s, a difference no run-to-run spread explains
    sweep = recorded_loadtest("gpt", gpu="h200")
    knees = sweep.knees()
    assert knees["eager+batching"] / knees["eager"] == 6.0
    assert sweep.point("eager", 500).achieved_rps < 0.7 * 500


def test_the_pipeline_drawing_fits_the_page():
    """Six boxes in a row, 1,532 pt wide: a notebook page showed the first three and cut off the rest."""
    try:
        svg = gl.serving_diagram(gl.ServeConfig(model="gpt", setting="graphs+batching")).svg()
    except gl.GraphvizMissingError:
        pytest.skip("needs Graphviz's dot")
    root = re.search(r"<svg[^>]*>", svg).group(0)
    assert "max-width:100%" in root and "height:auto" in root and "viewBox" in root
    width_pt = float(re.search(r'width="([\d.]+)pt"', root).group(1))
    assert width_pt <= 660  # two rows of three boxes: about a notebook column (860 px), where one row was 1,532 pt
