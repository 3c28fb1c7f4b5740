"""Notebooks 00-03 teach, and recorded mode never pretends (issue 37, the first four lessons).

Each test would have failed before: a recorded graph answered a batch-2, a seq-32 and an int32 input that the
live graph refuses; 01 printed "same buffer as last time: True" where nothing was replayed; 02's panels showed the
H200's messages without saying so; 03 printed five-digit µs, "host launches (2)" under "one launch for the whole
graph", "runs agreed within 106.5%"; 00 listed every key of every recording. Real recordings, no timing asserts.
"""
from __future__ import annotations

import re

import pytest
import torch

import graphlab as gl
from graphlab import mode, present
from graphlab.capture.input_plan import InputPlan
from graphlab.env import has_cuda
from graphlab.output_check import html_problems, label_problems, text_problems

recorded_only = pytest.mark.skipif(has_cuda(), reason="recorded mode is what a machine without a GPU sees")


def _clean(html: str, text: str = "") -> None:
    problems = html_problems(html, "html") + (text_problems(text, "text") if text else [])
    assert problems == [], problems


# -- recorded mode refuses what live refuses ------------------------------------------------------------------
@recorded_only
def test_a_recorded_graph_refuses_other_shapes_and_dtypes_with_the_live_message(recorded):
    zoo = gl.get_model("gpt")
    model = zoo.build()
    (ids,) = zoo.make_inputs(4)
    cg = gl.capture(model, ids)
    live_plan = InputPlan((ids.clone(),), cg.name)  # what the live graph checks, on the same static input
    for bad in (zoo.make_inputs(2)[0], ids[:, :32].contiguous(), ids.to(torch.int32)):
        with pytest.raises(gl.BadInputError) as live:
            live_plan.feed((bad,))
        with pytest.raises(gl.BadInputError) as info:
            cg(bad)
        message = str(info.value)
        assert message.startswith(str(live.value)), message  # the same error, the same message...
        assert "fixed shapes" in message and "recorded on NVIDIA H200 on 2026-12-01" in message  # ...plus where
        with pytest.raises(gl.BadInputError):
            cg.check_call(bad)
    torch.testing.assert_close(cg(ids), model(ids))  # the captured shape still answers


@recorded_only
def test_a_recorded_capture_of_shapes_the_recording_lacks_says_what_it_has(recorded):
    zoo = gl.get_model("gpt")
    model = zoo.build()
    (ids,) = zoo.make_inputs(4)
    with pytest.raises(gl.GPUUnavailableError, match="asked for a gpt graph of inputs 4 x 32 int64, the recording "
                                                     "has 4 x 64 int64"):
        gl.capture(model, ids[:, :32].contiguous())
    with pytest.raises(gl.GPUUnavailableError, match="4 x 64 int32, the recording has 4 x 64 int64"):
        gl.capture(model, ids.to(torch.int32))


@recorded_only
def test_a_recorded_call_check_says_nothing_was_replayed_and_never_claims_a_fresh_result(recorded):
    mlp = gl.get_model("mlp")
    cg = gl.capture(mlp.build(), *mlp.make_inputs(8))
    check = cg.check_call(torch.randn(8, 256))
    text, html = str(check), check._repr_html_()
    assert "recorded on NVIDIA H200 on 2026-12-01: nothing was replayed here" in text
    assert "ran the model eagerly on this CPU" in text and "the same tensors on every call" in text
    assert "same result" not in text and "PASS" not in text and check.returned_static is None
    _clean(html)
    verify = str(cg.verify())
    assert "PASS" not in verify and "nothing was replayed here" in verify and "it passed" in verify
    census = str(cg.check_census())
    assert census.startswith("Recorded on NVIDIA H200 on 2026-12-01 (nothing was read here)") and "agreed" in census


def test_a_live_call_check_shows_the_static_buffer_is_returned_and_overwritten():
    from test_capture_cpu import _stand_in

    cg, _ = _stand_in(torch.nn.Linear(4, 3).eval(), torch.randn(2, 4))
    new_x = torch.randn(2, 4)
    check = cg.check_call(new_x)
    assert check.matched and check.max_abs_err == 0.0
    assert check.returned_static and check.same_next_call and check.overwritten
    assert "returned the same tensors and overwrote their values" in str(check)
    torch.testing.assert_close(cg.outputs, cg._fn(new_x))  # the learner's call is what the outputs hold
    _clean(check._repr_html_())


# -- what a learner reads ----------------------------------------------------------------------------------------
@recorded_only
def test_captured_graphs_show_shapes_and_counts_in_words(recorded):
    gpt = gl.get_model("gpt")
    cg = gl.capture(gpt.build(), *gpt.make_inputs(1))
    html, text = cg._repr_html_(), repr(cg)
    assert "47 nodes: 44 kernels and 3 memsets" in html and "1 x 64 int64" in html and "1 x 64 x 512 float32" in html
    assert "recorded on NVIDIA H200 on 2026-12-01" in html and "[0]" not in html + text
    _clean(html, text)


def test_the_graph_model_says_its_nodes_in_words():
    graph = gl.load_recording("mlp").graph("b8")
    assert graph.kinds() == "5 nodes, all kernels"
    assert graph.families() == "5 kernels: 3 cuBLAS and 2 ATen elementwise"
    assert graph.sequence().startswith("5 nodes: gemm small-N (cuBLAS), gelu (elementwise)")
    table = graph.table()
    assert table.column("grid") == ["64", "4", "64", "4", "2"] and table.column("block") == ["128"] * 5
    _clean(table._repr_html_(), str(table))
    gpt = gl.load_recording("gpt").graph("b1")
    assert gpt.kinds() == "47 nodes: 44 kernels and 3 memsets"
    big = gl.load_recording("resnet18").graph("b1")
    assert "and 97 more (`graph.table(limit=None)`" in big.sequence()
    assert "and 79 more rows" in str(big.table())
    for text in (gpt.kinds(), gpt.families(), big.sequence()):
        assert text_problems(text, "text") == []


def test_the_recordings_table_says_what_each_holds_in_words_not_every_key():
    table = gl.recordings_table()
    rows = {row["name"]: row for row in table}
    assert rows["profile"]["holds"] == "13 graphs (batch sizes 1 and 64), 28 result files"
    assert rows["gpt"]["holds"] == "7 graphs (batch sizes 1 to 64), 3 result files"
    assert "mlp_b1, events_mlp_b1" not in str(table)  # the keys are in the rows, for code, not in the table
    assert [c.key for c in table.columns] == ["recording", "holds", "what", "gpu", "torch", "date"]
    assert "`weights=None`" in rows["resnet18"]["what"]
    _clean(table._repr_html_())
    for column in table.columns:
        assert label_problems(table.header_of(column), "header") == []


@recorded_only
def test_pitfall_panels_say_where_and_when_they_were_recorded(recorded):
    from graphlab.studies import pitfalls

    diagnosis = pitfalls.run_example("pageable_copy")
    html = diagnosis._repr_html_()
    assert "Recorded on NVIDIA H200 on 2026-12-01 with torch 2.11.0+cu130" in html and "Nothing was captured here" in html
    assert "bias = torch.tensor([0.5] * 256, device=&#x27;cuda&#x27;)" in html  # the cell itself, in the panel
    assert "x = torch.randn(8, 256, device=&#x27;cuda&#x27;)" in html  # and what ran before it
    _clean(html)
    table = pitfalls.causes_table()
    assert isinstance(table, present.Table) and "`host_sync`" in str(table)
    _clean(table._repr_html_())


@recorded_only
def test_the_latency_tables_read_in_few_digits_with_units_and_no_unexplained_columns(recorded):
    sweep = gl.sweep("resnet18", batch_sizes=[1, 2, 4, 8, 16, 32, 64])
    table = sweep.table()
    text = str(table)
    assert "1595.1" not in text and "1,595" in text and "eager p50 (µs)" in text
    assert "fastest" not in text and "modes" not in text.split("\n")[1]  # no unexplained columns
    assert table.title.startswith("resnet18, recorded on NVIDIA H200 on 2026-12-01")
    _clean(table._repr_html_(), text)
    report = sweep.modes_report()
    assert "speedup in the fastest state (x)" in str(report) and "1 switches" not in str(report)
    _clean(report._repr_html_(), str(report))


@recorded_only
def test_the_timeline_counts_what_the_graph_call_launches_and_says_it_in_its_title(recorded):
    pytest.importorskip("plotly")
    timeline = gl.record_timeline("gpt", batch_size=1)
    figure = gl.plot_timeline(timeline)
    title = figure.layout.title.text
    rows = {t.y[0] for t in figure.data}
    assert "2037.7" not in title and "GPU idle 2.04 ms" in title
    # the graph row counts 2 host calls, and the title says what they are instead of "one launch" alone
    assert "graph: host launch calls (2)" in rows and "graph: 2 (1 copy and 1 graph launch" in title
    assert text_problems(re.sub(r"<[^>]+>", " ", title), "title") == []
    table = timeline.table()
    assert table.rows[1]["launched"] == "2: 1 copy and 1 graph launch"
    _clean(table._repr_html_(), str(table))


@recorded_only
def test_the_claims_show_the_spread_of_the_pairs_not_a_run_spread_over_100_percent(recorded):
    sweeps = [gl.sweep(name, batch_sizes=[1, 8], progress=False) for name in ("mlp", "gpt", "resnet18")]
    claims = gl.check_claims(sweeps)
    text = str(claims) + str(claims.table())
    assert "runs agreed within" not in text and "over the pairs" in text
    assert "recorded on NVIDIA H200 on 2026-12-01" in claims.table().title
    _clean(claims._repr_html_())
    figures = claims.figures(batch_size=1)
    assert [r["model"] for r in figures.rows] == ["mlp", "gpt", "resnet18"]
    _clean(figures._repr_html_(), str(figures))


def test_the_overhead_table_is_a_library_view_with_signed_gaps():
    from graphlab.studies.overhead_report import overhead_table

    table = overhead_table()
    assert table.title.startswith("What graphlab's call adds to a raw copy + replay, recorded on NVIDIA H200")
    assert all(re.fullmatch(r"0|[+-]\d+\.\d", cell) for cell in table.column("call"))
    _clean(table._repr_html_(), str(table))


# -- the same refusal live (run on a GPU by the lead) ----------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.skipif(not has_cuda(), reason="needs a CUDA GPU")
def test_live_and_recorded_graphs_refuse_a_wrong_shape_with_the_same_message():
    saved = mode._current
    try:
        zoo = gl.get_model("gpt")
        gl.set_mode("live")
        live = gl.capture(zoo.build(), *zoo.make_inputs(4))
        gl.set_mode("recorded")
        recorded_graph = gl.capture(zoo.build(), *zoo.make_inputs(4))
        (ids,) = zoo.make_inputs(4)
        for bad in (ids[:2], ids[:, :32].contiguous(), ids.to(torch.int32)):
            with pytest.raises(gl.BadInputError) as a:
                live(bad.cuda())
            with pytest.raises(gl.BadInputError) as b:
                recorded_graph(bad.cpu())
            assert str(b.value).startswith(str(a.value).replace("cuda:0", "cpu"))
    finally:
        mode._current = saved
