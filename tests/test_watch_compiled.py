"""What torch.compile did, read from its own log records: recordings, re-recordings with their shapes, recompiles and
skips with torch's reason and a one-line fix. The records below are in the words torch 2.13's cudagraph_trees,
cudagraph_utils and dynamo guards write; the listener runs for real on the CPU (recompiles), and the records the
H200 run kept are read back (tests/test_decode_recording.py)."""
from __future__ import annotations

import logging

import pytest

from graphlab.output_check import html_problems
from graphlab.present import Code
from graphlab.watch.compiled import (CompileSummary, compile_summary, fix_for, parse_event, reason_in_words,
                                     shapes_in, short_reason)

T = "Tensor(size={}, stride=(1,), dtype=torch.int64, data_ptr=0x7F00)"
RECORDS = [
    {"message": f"[0/0] Recording function=decode_step, mode=INFERENCE, cuda_graph_id=0, inputs: [0]: {T.format([1, 1])}, "
                f"[1]: {T.format([1])}"},
    {"message": "Recompiling function _ro_body in /x/ways.py:80\n    triggered by the following guard failure(s):\n"
                "    - 0/0: tensor 'ids' size mismatch at index 0. expected 1, actual 4"},
    {"message": "[0/1] Re-recording function=decode_step, mode=INFERENCE, reason=static input data pointer changed.\n"
                "input name: arg3_1. data pointer changed from 0x1 to 0x2."},
    {"message": f"[0/1] Recording function=decode_step, mode=INFERENCE, cuda_graph_id=1, inputs: [0]: {T.format([4, 1])}"},
    {"message": "skipping cudagraphs due to mutated inputs (1 instances). Found from : \n   File \"x.py\", line 3"},
    {"message": "something else torch says"},
]


def test_each_record_becomes_its_event():
    kinds = [getattr(parse_event(r), "kind", None) for r in RECORDS]
    assert kinds == ["recording", "recompile", "re-recording", "recording", "skip", None]
    first = parse_event(RECORDS[0])
    assert first.function == "decode_step" and first.graph_id == 0 and first.input_shapes == [[1, 1], [1]]
    assert parse_event(RECORDS[1]).reason.startswith("0/0: tensor 'ids' size mismatch")


def test_summary_per_function_with_shapes_reasons_and_fixes():
    watched = [{"library": "torch.compile (CUDAGraph Trees)", "role": "recording", "capture_ms": 12.5,
                "pool_bytes": 2 << 20, "input_shapes": [[1, 1], [1]]},
               {"library": "torch.compile (CUDAGraph Trees)", "role": "pool keeper"},
               {"library": "torch.compile (CUDAGraph Trees)", "role": "recording", "capture_ms": 10.0,
                "pool_bytes": 0, "input_shapes": [[4, 1], [1]]}]
    s = compile_summary(RECORDS, counters={"inductor.cudagraph_skips": 2}, watched=watched, sources=["test"])
    fn = s.functions["decode_step"]
    assert len(fn.recordings) == 2 and len(fn.rerecordings) == 1
    assert fn.capture_ms == 22.5 and fn.pool_bytes == 2 << 20
    assert fn.rerecordings[0].input_shapes == [[4, 1], [1]]  # the shape of the recording it caused
    assert "same tensor" in fn.rerecordings[0].fix
    assert s.functions["_ro_body"].recompiles[0].fix.startswith("a new input size")
    (skip,) = s.skips
    assert skip.reason.startswith("mutated inputs") and "mark_static_address" in skip.fix
    assert s.unexplained_skips() == 1
    text = str(s)
    assert "`decode_step`" in text and "torch counted 1 more skip without a log record here" in text
    again = CompileSummary.from_dict(s.to_dict())
    assert again.to_dict() == s.to_dict() and "<table" in again._repr_html_()


def test_torch_2_11_words_and_frame_names():
    """torch 2.11 writes no mode= and names Inductor's piece ("partition_0"); the frame's recompile names the function."""
    records = [{"message": f"[0/0] Recording function=partition_0, cuda_graph_id=0, inputs: [0]: {T.format([1, 1])}"},
               {"message": "Recompiling function _ro_body in ways.py:87\n    triggered by the following guard failure(s):"
                           "\n    - 0/0: tensor 'ids' size mismatch at index 0. expected 1, actual 4",
                "compile_id": "0/1"},
               {"message": f"[0/1] Recording function=partition_0, cuda_graph_id=1, inputs: [0]: {T.format([4, 1])}, "
                           f"[1]: {T.format([8, 8])}"}]
    s = compile_summary(records)
    fn = s.functions["_ro_body"]
    assert len(fn.recordings) == 2 and fn.recordings[0].mode == "piece partition_0"
    assert fn.varying_shapes() == ["1x1", "4x1"] and len(fn.recompiles) == 1


def test_watched_recordings_stand_in_when_torch_logs_no_recording():
    watched = [{"library": "torch.compile (CUDAGraph Trees)", "role": "recording", "capture_ms": 3.0, "pool_bytes": 5,
                "input_shapes": [[2, 1]], "details": {"compile_id": "0/0"}}]
    s = compile_summary([], watched=watched)
    assert len(s.recordings) == 1 and s.recordings[0].capture_ms == 3.0 and "gl.watch (recordings)" in s.sources


@pytest.mark.parametrize("reason, words", [
    ("mutated inputs (2 instances)", "mark_static_address"), ("cpu device (arg0)", "GPU first"),
    ("dynamic shape ops", "buckets"), ("multiple devices", "one GPU"), ("incompatible op aten.nonzero", "graph break"),
    ("function 3 exceeding max re-recording limit (=128)", "re-recording"), (None, "TORCH_LOGS")])
def test_every_reason_gets_a_fix(reason, words):
    assert words in fix_for(reason)


def test_shapes_in_reads_sizes_in_order():
    assert shapes_in(f"[0]: {T.format([2, 3])}, [1]: None, [2]: {T.format([])}") == [[2, 3], []]


def test_listener_keeps_real_recompiles_on_the_cpu_and_restores_the_loggers():
    torch = pytest.importorskip("torch")
    from graphlab.watch.compile_log import watch_compile

    def f(x):
        return x * 2 + 1

    compiled = torch.compile(f, backend="eager")
    with watch_compile() as log:
        levels = {n: logging.getLogger(n).level for n in log.loggers}
        compiled(torch.ones(3))
        compiled(torch.ones(5))
    assert log.loggers and all(logging.getLogger(n).level == 0 or n in levels for n in log.loggers)
    assert not any(log._handler in logging.getLogger(n).handlers for n in log.loggers)
    recompiles = log.summary().functions["f"].recompiles
    assert recompiles and "size mismatch" in recompiles[0].reason


def test_records_are_kept_without_the_machines_paths():
    from graphlab.watch.compiled import clean_message, keeps_record

    msg = "Recompiling function f in /srv/x/graphlab/decode/ways.py:87 via /opt/v/lib/python3.12/site-packages/torch/a.py"
    assert clean_message(msg, "/srv/x") == "Recompiling function f in graphlab/decode/ways.py:87 via torch/a.py"
    assert not keeps_record("torch._inductor.scheduler.__cudagraphs", "         File \"a.py\", line 1")
    assert keeps_record("torch._inductor.scheduler.__cudagraphs", "Created 1 graph partitions: 1 cudagraphable")


GUARD = ("1/1: 2 <= ids.size()[0] <= 2147483647  # self.values.index_copy_(2, cache_position, value_states)  # "
         "transformers/cache_utils.py:483 in update (user code shown is first use of this value--the guard itself is "
         "not due user code but due to 0/1 specialization in the framework; to avoid specialization try "
         "torch._dynamo.decorators.mark_unbacked(tensor, dim))")


def test_torchs_reason_is_shortened_and_said_in_words():
    assert short_reason(GUARD) == "2 <= ids.size()[0] <= 2147483647"
    assert short_reason("0/0: tensor 'ids' size mismatch at index 0. expected 1, actual 4") == \
        "tensor 'ids' size mismatch at index 0. expected 1, actual 4"
    long = "x " * 200
    assert short_reason(long).endswith("more characters: the event's reason has all of it)")
    recompile = parse_event({"message": "Recompiling function f in a.py:1\n    triggered by the following guard "
                                        f"failure(s):\n    - {GUARD}"})
    assert recompile.reason == GUARD.split("\n")[0]  # torch's words kept whole on the event
    assert "dimension 0 of `ids` as dynamic for sizes 2 and up" in reason_in_words(recompile)
    assert "mark_unbacked" in recompile.fix and "size of 1" in recompile.fix
    mismatch = parse_event(RECORDS[1])
    assert reason_in_words(mismatch) == ("`ids` came with size 4 in dimension 0, where the code compiled before "
                                         "expects 1")


def test_the_summary_shows_as_tables_for_people_with_torchs_words_as_code():
    records = RECORDS[:2] + [{"message": "Recompiling function _ro_body in ways.py:87\n    triggered by the following "
                                         f"guard failure(s):\n    - {GUARD}"}]
    s = compile_summary(records)
    table = s.table({"_ro_body": "reduce-overhead"})
    assert table.column("function") == [Code("decode_step"), Code("_ro_body")]
    assert "?" not in str(table) and "[0]" not in str(table)
    events = s.events_table({"_ro_body": "reduce-overhead"})
    assert [r["said"] for r in events.rows] == [Code("tensor 'ids' size mismatch at index 0. expected 1, actual 4"),
                                                 Code("2 <= ids.size()[0] <= 2147483647")]
    assert all(r["runs"] == "reduce-overhead" for r in events.rows)
    for shown in (table, events):
        assert html_problems(shown._repr_html_(), "summary") == []
    assert "torch did not compile again" in str(compile_summary(RECORDS[:1]).events_table())
