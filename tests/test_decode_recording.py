"""The H200 decode recording, read back without a GPU: what it holds, the recorded stand-ins of the notebook calls,
and torch's own log records (kept in the recording) read again into the same compile summary: every
re-recording and skip torch logged appears with its reason."""
from __future__ import annotations

import pytest

import graphlab as gl
from graphlab.decode.recorded import decode_recording
from graphlab.decode.results import DecodeReport
from graphlab.mode import set_mode
from graphlab.watch.compiled import compile_summary


@pytest.fixture()
def recorded():
    set_mode("recorded")
    yield decode_recording()
    set_mode("auto")


def test_the_recording_says_where_it_was_made(recorded):
    prov = recorded.provenance
    assert "H200" in prov["gpu"] and prov["torch"] and prov["command"].startswith("graphlab record")
    assert set(recorded.results("reports")) >= {"llama", "gpt2"}


def test_graphlab_tokens_equal_hf_eager_in_the_recording(recorded):
    for arch, data in recorded.results("reports").items():
        report = DecodeReport.from_dict(data)
        assert report.tokens_equal["graphlab"] and all(report.tokens_equal["graphlab"].values()), arch
        assert all(p["tokens_equal"] for p in report.padding), arch


def test_recorded_stand_ins_answer_the_notebook_calls(recorded):
    report = gl.decode_report("llama", batch_sizes=[1, 4])
    assert report.source.startswith("recorded") and 1 in report.batch_sizes
    assert report.speedup("graphlab", "eager", 1) > 0
    graph = gl.decode_graph("llama", batch=1)
    assert gl.kv_cache_writes(graph), "the KV cache update is in the graph"


def test_every_rerecording_and_skip_torch_logged_is_in_the_summary(recorded):
    for arch, data in recorded.results("reports").items():
        records = data["conditions"].get("compile_records", [])
        said = [r["message"] for r in records if "Re-recording" in r["message"] or "skipping cudagraph" in r["message"]]
        summary = compile_summary(records)
        found = summary.rerecordings + summary.skips
        assert len(found) == len(said), arch
        assert all(e.reason and e.fix for e in found), arch
        stored = DecodeReport.from_dict(data).compile.get("all")
        if stored is not None:
            assert len(stored.rerecordings) + len(stored.skips) == len(said)
