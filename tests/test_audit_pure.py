"""The audit's pure parts on synthetic data: argument words and the baked rule, the launch comparison, where a step
replaces an input, the findings schema and its table, recorded mode (with a recording marked synthetic), and the
kept-output guard of captured graphs."""
from __future__ import annotations

import gc
import json
import warnings

import pytest
import torch

from audit_doubles import cpu_graph
from graphlab.audit.arg_words import AddressSpace, baked_words, classify, param_blob, words_of
from graphlab.audit.findings import AuditReport, Finding, Location
from graphlab.audit.launch_diff import KernelLaunch, compare_launches
from graphlab.audit.recorded import WORKED_EXAMPLES, recorded_audit
from graphlab.audit.step_source import replaced_inputs
from graphlab.capture.kept_outputs import KeptOutputGuard, KeptOutputWarning
from graphlab.errors import BadInputError, RecordingError, ResultsError
from graphlab.loader import dump
from graphlab.mode import set_mode
from graphlab.recordings import write_recording

POOL_A, POOL_B, WEIGHTS = (0x7F0000000000, 0x100000), (0x7F0000200000, 0x100000), (0x7F1000000000, 0x400000)
SPACE = AddressSpace(segments=(POOL_A, POOL_B, WEIGHTS), owned_a=(POOL_A,), owned_b=(POOL_B,))


# -- argument words ------------------------------------------------------------------------------------------------
def test_words_are_little_endian_and_a_partial_word_is_padded():
    assert words_of((1).to_bytes(8, "little") + b"\x02") == (1, 2)
    assert words_of(b"") == ()


def test_a_parameter_layout_puts_each_parameter_at_its_offset_and_refuses_overlaps():
    blob = param_blob([(0, (7).to_bytes(4, "little")), (8, (0x1234).to_bytes(8, "little"))])
    assert words_of(blob) == (7, 0x1234)
    with pytest.raises(BadInputError, match="overlap at byte 4"):
        param_blob([(0, bytes(8)), (4, bytes(4))])


def test_a_word_is_a_pointer_inside_a_segment_or_when_the_driver_accepts_it():
    assert classify(POOL_A[0] + 64, SPACE) == "pointer"
    assert classify(12345, SPACE) == "integer" and classify(0, SPACE) == "integer"
    driver_says = AddressSpace(is_device_address=lambda v: v == 0xDEAD0000)
    assert classify(0xDEAD0000, driver_says) == "pointer" and classify(0xDEAD0008, driver_says) == "integer"


def test_an_integer_that_differs_is_baked():
    found = baked_words((POOL_A[0], 4, 0x3F000000), (POOL_B[0], 4, 0x3FC00000), SPACE)
    assert [(w.index, w.kind) for w in found] == [(2, "integer")]
    assert found[0].where() == "argument word 2 (bytes 16-23)"


def test_pointers_into_each_graph_s_own_memory_are_not_baked_but_one_outside_both_is():
    assert baked_words((POOL_A[0] + 8,), (POOL_B[0] + 8,), SPACE) == []
    outside = baked_words((WEIGHTS[0] + 0x100,), (WEIGHTS[0] + 0x200,), SPACE)
    assert [w.kind for w in outside] == ["pointer"] and "outside both graphs' pools" in outside[0].reason


def test_an_integer_that_also_differs_between_two_captures_of_one_draw_is_noise():
    assert baked_words((5, 9), (6, 9), SPACE, words_again=(7, 9)) == []
    assert [w.index for w in baked_words((5, 9), (6, 8), SPACE, words_again=(5, 9))] == [0, 1]
    with pytest.raises(BadInputError, match="not the same kernel"):
        baked_words((1, 2), (1,), SPACE)


# -- launches ----------------------------------------------------------------------------------------------------------
def _k(index, name, grid=(4, 1, 1), words=(POOL_A[0], 3)):
    return KernelLaunch(index, name, grid, (128, 1, 1), 0, words)


def test_launches_are_aligned_by_name_and_changes_are_said_in_words():
    a = [_k(0, "fill"), _k(1, "mul"), _k(2, "add")]
    b = [_k(0, "fill"), _k(1, "mul", words=(POOL_B[0], 5)), _k(2, "add", grid=(8, 1, 1), words=(POOL_B[0], 3))]
    result = compare_launches(a, b, SPACE)
    assert [(c.a.name, c.changes, c.baked_kind) for c in result.changes] == [
        ("mul", (), "value"), ("add", ("grid 4x1x1 -> 8x1x1",), "value")]
    assert (result.kernels, result.compared, result.structure) == (3, 3, "")


def test_a_kernel_only_one_graph_launches_is_a_change_of_structure_and_unread_words_are_counted():
    a = [_k(0, "fill"), _k(1, "mul", words=None), _k(2, "add")]
    b = [_k(0, "fill"), _k(1, "mul", words=None), _k(2, "relu"), _k(3, "add")]
    result = compare_launches(a, b, SPACE)
    assert "different kernels" in result.structure and [k.name for k in result.only_b] == ["relu"]
    assert (result.kernels, result.compared) == (3, 2)


# -- where a step replaces its input -------------------------------------------------------------------------------------
def test_replacements_of_what_outlives_the_call_are_found_and_copies_are_not():
    source = '''def step(self, x, mask=None):
    global static_x
    static_x = x
    self.static_mask = mask.bool()
    state["y"] = x * 2
    local = x
    static_x.copy_(x)
'''
    found = replaced_inputs(source, first_line=20)
    assert [(r.line, r.target, r.value) for r in found] == [
        (22, "static_x", "x"), (23, "self.static_mask", "mask.bool()"), (24, "state['y']", "x * 2")]
    assert replaced_inputs("def step(x):\n    buf.copy_(x)\n") == []
    assert replaced_inputs("not python (") == [] and replaced_inputs("lambda x: x") == []


# -- the findings schema and its table -------------------------------------------------------------------------------
def _report(**kw):
    finding = Finding("baked_value", "model `Scale`: Python scalar positional argument 1 is 1.5 at draw 1",
                      Location(argument="positional argument 1", output="[0]", kernel="mul (ATen elementwise)",
                               module="head", line="model.py:12"), evidence={"draw": 1})
    return AuditReport(target="model `Scale`", findings=(finding,), tried=("6 draws",), not_varied=("shapes",),
                       draws=6, kernels_compared=40, kernels=47, seconds=1.25, seconds_per_draw=0.0123, **kw)


def test_a_finding_carries_its_cause_s_why_and_fix_and_refuses_an_unknown_cause():
    finding = _report().findings[0]
    assert "launch constant" in finding.why and "0-dim tensor" in finding.fix
    assert finding.title == "A value baked into the graph at capture"
    with pytest.raises(BadInputError, match="no audit cause 'nope'"):
        Finding("nope", "x")


def test_a_report_round_trips_and_its_table_is_for_people():
    report = _report()
    again = AuditReport.from_dict(json.loads(json.dumps(report.to_dict())))
    assert again == report and again.findings[0].where.module == "head"
    text = str(report)
    for header in ("cause", "what is wrong", "where", "why a replay goes wrong", "the fix"):
        assert header in text
    assert "argument bytes not compared for 7 of 47 kernels" in text
    assert "`head`" in text and "line model.py:12" in text and "12.3 ms per extra draw" in text
    assert "_" not in text.splitlines()[1]  # headers are words, not keys
    assert "<table" in report._repr_html_()


def test_a_clean_report_says_no_finding_with_what_was_tried_and_not_varied():
    clean = AuditReport(target="model `Mlp`", tried=("6 draws",), not_varied=("state outside the arguments",),
                        draws=6)
    text = str(clean)
    assert clean.clean and "no finding" in text and "Tried: 6 draws" in text and "Not varied: state" in text
    stopped = AuditReport(target="x", stopped="a CUDA error")
    assert not stopped.clean and "stopped before it finished" in str(stopped)


def test_a_malformed_report_is_a_results_error():
    with pytest.raises(ResultsError, match="not an audit report"):
        AuditReport.from_dict({"findings": []})
    with pytest.raises(ResultsError, match="not an audit finding"):
        AuditReport.from_dict({"target": "t", "findings": [{"what": "no cause"}]})


# -- recorded mode: a recording marked synthetic, written here ---------------------------------------------------------
SYNTHETIC = {"gpu": "SYNTHETIC TEST GPU (not a measurement)", "driver": "0", "torch": "0", "cuda": "0",
             "graphlab_version": "0", "git_commit": "0" * 40, "command": "tests/test_audit_pure.py (synthetic)",
             "date": "2000-01-01T00:00:00Z"}


@pytest.fixture
def recorded(monkeypatch, tmp_path):
    monkeypatch.setenv("GRAPHLAB_RECORDINGS", str(tmp_path))
    monkeypatch.setattr("graphlab.mode._current", None)  # put back as it was after the test
    set_mode("recorded", gpu="synthetic")
    return tmp_path


def test_recorded_mode_says_plainly_when_there_is_no_audit_recording(recorded):
    with pytest.raises(RecordingError, match="no audit recording yet") as err:
        recorded_audit("baked_scalar")
    assert "graphlab record --models audit" in str(err.value)


def test_recorded_mode_answers_a_worked_example_by_name_and_says_it_is_recorded(recorded):
    write_recording(recorded / "synthetic" / "audit", name="audit", description="synthetic test data",
                    provenance=SYNTHETIC, graphs={},
                    results={"baked_scalar": dump(_report()), "baked_scalar_fixed": dump(AuditReport("model `Scale`"))})
    import graphlab as gl

    report = gl.audit("baked_scalar")
    assert report.causes() == ["baked_value"] and report.where.startswith("recorded on SYNTHETIC TEST GPU")
    assert "nothing was run here" in str(report)
    assert gl.audit("baked_scalar_fixed").clean
    with pytest.raises(RecordingError, match="asked for 'rng_repeats'; the audit recording has baked_scalar and "
                                             "baked_scalar_fixed"):
        gl.audit("rng_repeats")
    with pytest.raises(RecordingError, match="by name, and was asked for a Linear"):
        gl.audit(torch.nn.Linear(2, 2), lambda i: ((torch.randn(2),), {}))
    assert "baked_scalar" in WORKED_EXAMPLES


# -- the kept-output guard -------------------------------------------------------------------------------------------------
def test_the_guard_is_off_by_default_and_a_call_returns_the_static_outputs():
    cg = cpu_graph(torch.nn.Linear(3, 2).eval(), torch.randn(4, 3))
    assert cg(torch.randn(4, 3)) is cg.outputs and cg.replay() is cg.outputs


def test_a_loop_that_reassigns_its_result_is_never_warned():
    cg = cpu_graph(torch.nn.Linear(3, 2).eval(), torch.randn(4, 3))
    guard = cg.warn_kept_outputs()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(5):
            y = cg(torch.randn(4, 3))
    assert guard.seen == [] and torch.equal(y, cg.outputs) and y is not cg.outputs


def test_an_output_held_across_replays_is_warned_at_the_user_s_line():
    cg = cpu_graph(torch.nn.Linear(3, 2).eval(), torch.randn(4, 3))
    cg.warn_kept_outputs()
    with pytest.warns(KeptOutputWarning, match="clone what you keep") as caught:
        kept = [cg(torch.randn(4, 3)) for _ in range(3)]
    assert caught[0].filename == __file__ and len(kept) == 3
    assert cg.warn_kept_outputs(False) is None and cg(torch.randn(4, 3)) is cg.outputs


def test_an_immediate_guard_reports_at_the_next_replay_and_forgets_released_views():
    cg = cpu_graph(torch.nn.Linear(3, 2).eval(), torch.randn(4, 3))
    guard = cg.warn_kept_outputs(guard=KeptOutputGuard(immediate=True, warn=False))
    first = cg(torch.randn(4, 3))
    cg.unchecked(torch.randn(4, 3))
    assert len(guard.seen) == 1 and guard.seen[0].held_line > 0
    del first
    gc.collect()
    cg.replay()
    cg.replay()  # the view of the previous call is not held by anyone here
    assert len(guard.seen) == 1
