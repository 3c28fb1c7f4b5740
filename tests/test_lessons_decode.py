"""Notebook 12 (an LLM's decode step) as a lesson: the recorded report shows what the call asked for and says what
the recording lacks or holds beyond it; every view of the report (latency, tokens per second, tokens, memory,
start-up, what torch.compile did) is a table for people that the output check passes; the step's kernels are
counted in words; the exercise asks about a difference far outside the noise."""
from __future__ import annotations

import pytest

import graphlab as gl
from graphlab.decode.options import DecodeOptions
from graphlab.decode.results import VIEWS, DecodeReport
from graphlab.errors import BadInputError
from graphlab.output_check import html_problems, text_problems
from graphlab.present import DASH, Code


@pytest.fixture()
def recorded():
    gl.set_mode("recorded")


@pytest.fixture()
def report(recorded):
    return gl.decode_report("llama", batch_sizes=[1, 4, 16, 64])


# -- recorded mode shows what was asked for -------------------------------------------------------------------
def test_a_recorded_report_shows_only_the_batch_sizes_and_ways_asked_for_and_says_so(recorded):
    report = gl.decode_report("llama", batch_sizes=[1, 4], ways=("eager", "reduce-overhead", "graphlab"),
                              token_batches=[1], options=DecodeOptions(rounds=3))
    assert report.batch_sizes == [1, 4]
    assert report.ways == ["eager", "reduce-overhead", "graphlab"]
    assert list(report.tokens_equal) == ["graphlab"] and list(report.tokens_equal["graphlab"]) == ["1"]
    with pytest.raises(BadInputError, match="no timing of 'graphlab\\+compile'"):
        report.timing("graphlab+compile", 1)
    notes = "\n".join(report.notes)
    assert "Asked for batch sizes 1 and 4; the recording has 1, 4, 16 and 64" in notes
    assert "Asked for ways eager, reduce-overhead and graphlab; the recording has eager, reduce-overhead, graphlab " \
           "and graphlab+compile" in notes and "graphlab+compile left out" in notes
    assert "Asked for rounds 3; the recording has 6" in notes
    assert "gl.set_mode('live')" in notes
    shown = str(report.table("latency"))
    assert "Asked for batch sizes 1 and 4" in shown and "graphlab+compile (ms)" not in shown
    assert "all buckets, one call" not in str(report.table("start-up"))  # covers all four recorded sizes: left out
    assert "_compiled_body" not in str(report.table("compile"))  # graphlab+compile was not asked for


def test_a_batch_size_the_recording_lacks_is_named_and_the_rest_shown(recorded):
    report = gl.decode_report("llama", batch_sizes=[1, 8])
    assert report.batch_sizes == [1]
    assert any("Asked for batch sizes 1 and 8; the recording has 1, 4, 16 and 64: shown are 1 (no 8; 4, 16 and 64 "
               "left out)" in n for n in report.notes), report.notes


def test_asking_for_everything_the_recording_has_adds_no_note(report):
    assert report.notes == [] and report.batch_sizes == [1, 4, 16, 64] and len(report.ways) == 4


def test_recorded_mode_refuses_what_a_live_run_refuses_in_its_words(recorded, monkeypatch):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import graphlab.decode.ways as ways

    monkeypatch.setattr(ways, "require_cuda", lambda what: None)  # the checks come before any GPU work
    with pytest.raises(BadInputError) as live:
        ways.compare_decode("llama", ways=("eager", "fastest"))
    with pytest.raises(BadInputError) as stand_in:
        gl.decode_report("llama", ways=("eager", "fastest"))
    assert str(stand_in.value).startswith(str(live.value)) and "recorded mode" in str(stand_in.value)
    with pytest.raises(BadInputError, match="exceed max_cache_len"):  # the lengths: one check, in DecodeOptions
        DecodeOptions(new_tokens=200)
    with pytest.raises(BadInputError, match="buckets must be positive"):
        gl.decode_report("llama", batch_sizes=[0, 4])


# -- every view is for people ---------------------------------------------------------------------------------
@pytest.mark.parametrize("view", VIEWS)
def test_every_view_passes_the_output_check(report, view):
    table = report.table(view)
    assert html_problems(table._repr_html_(), view) == []
    assert text_problems(str(table), view) == []
    assert "recorded on NVIDIA H200 on 2026-12-02" in table.title


def test_an_unknown_view_names_the_views(report):
    with pytest.raises(BadInputError, match="'latency'"):
        report.table("speed")


def test_latency_is_one_unit_per_table_rows_by_batch_size(report):
    table = report.table("latency")
    text = str(table)
    assert "eager (ms)" in text and "5.83" in text and "5825" not in text and "us" not in text.split("\n")[1]
    assert table.column("batch") == [1, 4, 16, 64]
    assert "p99 (the slowest step in a hundred) is at most 31% above p50" in text
    per_s = str(report.table("tokens per second"))
    assert "graphlab+compile (tokens/s)" in per_s and "10,295" in per_s and "10295.0" not in per_s


def test_tokens_say_yes_and_why_a_cell_is_missing(report):
    table = report.table("tokens")
    text = str(table)
    assert "True" not in text and "NaN" not in text and "yes" in text
    assert "graphlab+compile was checked at batch size 1 only" in text
    assert "A batch of 3 padded to the 4 bucket: the same tokens, logits within 3.7e-5" in text


def test_memory_rows_by_batch_and_the_shared_pool_footnoted(report):
    table = report.table("memory")
    assert table.column("batch") == [1, 4, 16, 64, "all together"]
    text = str(table)
    assert "NaN" not in text and "KV cache (MiB)" in text
    assert f"{DASH} in reduce-overhead pool growth (MiB): reduce-overhead's graphs share one pool" in text
    assert table.rows[-1]["kv"] == sum(report.kv_cache_bytes.values())


def test_start_up_in_words_and_fitting_units(report):
    text = str(report.table("start-up"))
    assert "capture_all_buckets" not in text and "all buckets, one call" in text
    assert "reduce-overhead: first 3 calls (s)" in text and "11.3" in text and "11281" not in text
    assert "timed batch size by batch size only" in text and "NaN" not in text


def test_what_compile_did_is_said_in_words_with_torchs_reason_shortened(report):
    functions = report.table("compile")
    text = str(functions)
    assert "`_ro_body`" in text and "`_compiled_body`" in text and "?" not in text and "[0]" not in text
    assert "reduce-overhead" in text and "graphlab+compile" in text
    events = report.table("compile events")
    guard = next(r for r in events.rows if "dynamic" in r["why"])
    assert guard["said"] == Code("2 <= ids.size()[0] <= 2147483647")  # torch's words, shown as code
    assert "sizes 2 and up" in guard["why"] and "mark_unbacked" in guard["fix"]
    whole = [e.reason for e in report.compile["all"].events if e.reason and "specialization" in e.reason]
    assert whole and "user code shown" in whole[0]  # kept whole on the event


# -- the step's kernels in words ---------------------------------------------------------------------------------
def test_the_steps_kernels_by_family_with_the_cache_writes(recorded):
    graph = gl.decode_graph("llama", batch=1)
    kernels = gl.decode_step_kernels(graph)
    assert kernels.kernels == len(graph.kernels()) and kernels.cache_writes == len(gl.kv_cache_writes(graph))
    table = kernels.table()
    assert f"{kernels.kernels} kernels, {kernels.cache_writes} of them write the KV cache" in table.title
    assert "recorded on NVIDIA H200" in table.title
    assert html_problems(kernels._repr_html_(), "kernels") == [] and text_problems(repr(kernels), "kernels") == []
    assert not repr(kernels).startswith("StepKernels(")


# -- the exercise --------------------------------------------------------------------------------------------------
def test_the_exercise_asks_about_a_difference_far_outside_the_noise(report):
    eager, graph = report.timing("eager", 1), report.timing("graphlab", 1)
    assert report.speedup("graphlab", "eager", 1) > 10
    assert graph.p99_us * 5 < eager.p50_us  # the graph's slowest call in a hundred beats eager's median fivefold


def test_a_report_without_a_recording_shows_live_source():
    report = DecodeReport("llama", source="measured here on a GPU")
    assert "measured here" in report.table("latency").title
