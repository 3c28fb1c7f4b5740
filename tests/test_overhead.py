"""The overhead benchmark's pure parts (summaries, paired gaps, markdown) and its timing loop on CPU.

The timings here are of CPU stand-ins (or hand-written), checked for structure only; the real figures
are recorded on the H200 by `graphlab record --models overhead`.
"""
from __future__ import annotations

import pytest

import graphlab as gl
from graphlab.studies.overhead_report import (WAYS, OverheadBenchmark, call_gaps, gaps_markdown, load_overhead,
                                              overhead_markdown, overhead_table, paired_gap_us, summarize_blocks)
from graphlab.errors import RecordingError, ResultsError


def _entry(host, latency, **notes):
    return {"host_us": summarize_blocks(host), "latency_us": summarize_blocks(latency), "calls_per_block": 100,
            "notes": notes}


@pytest.fixture
def data():
    ways = {
        "eager": _entry([30.0, 31.0, 32.0], [40.0, 41.0, 42.0]),
        "raw_replay": _entry([4.2, 4.3, 4.4], [9.0, 9.1, 9.2]),
        "raw_copy_replay": _entry([12.0, 12.5, 12.4], [14.0, 14.1, 14.2], graph_launches_in_profiled_call=1),
        "captured_call": _entry([14.0, 14.2, 14.9], [16.0, 16.1, 16.3], graph_launches_in_profiled_call=1),
        "captured_unchecked": _entry([13.0, 13.4, 13.5], [15.0, 15.1, 15.2]),
        "captured_replay": _entry([4.4, 4.5, 4.6], [9.2, 9.3, 9.4]),
        "make_graphed_callables": _entry([22.0, 23.0, 23.5], [25.0, 25.5, 26.0], replays_in_3_calls=3),
        "compile_reduce_overhead": {"error": "RuntimeError: no compiler"},
    }
    case = {"case": "tiny", "title": "tiny graph (16x16 Linear + ReLU), batch 1", "batch_size": 1, "ways": ways,
            "host_speed_us": [50.0, 51.0, 50.5]}
    case["gaps"] = call_gaps(case)
    return {"schema": "graphlab.overhead/1", "cases": [case],
            "conditions": {"date": "2026-01-01T00:00:00Z", "gpu": "Test GPU", "driver": "1", "torch": "9.9",
                           "cuda": "1", "rounds": 3, "block_ms": 10.0}}


def test_summaries_and_paired_gaps():
    s = summarize_blocks([10.0, 12.0, 11.0])
    assert s["best"] == 10.0 and s["median"] == 11.0 and s["blocks"] == [10.0, 12.0, 11.0]
    gap = paired_gap_us([14.0, 14.2, 14.9], [12.0, 12.5, 12.4])
    assert gap["median"] == pytest.approx(2.0) and gap["p10"] <= gap["median"] <= gap["p90"]
    with pytest.raises(ResultsError, match="same number of blocks"):
        paired_gap_us([1.0], [1.0, 2.0])
    with pytest.raises(ResultsError, match="no blocks"):
        summarize_blocks([])


def test_call_gaps_pair_rounds(data):
    gaps = data["cases"][0]["gaps"]
    assert gaps["captured_call"]["median"] == pytest.approx(2.0)
    assert gaps["captured_unchecked"]["median"] == pytest.approx(1.0)


def test_markdown_has_every_way_and_the_gap_verdict(data):
    text = overhead_markdown(data)
    assert "### tiny graph (16x16 Linear + ReLU), batch 1" in text
    for way in WAYS:
        assert f"| {way} |" in text
    assert "not run: RuntimeError: no compiler" in text
    assert "cudaGraphLaunch per profiled call: 1" in text and "CUDAGraph.replay in 3 calls: 3" in text
    assert "| tiny graph (16x16 Linear + ReLU), batch 1 | +2.0 (" in gaps_markdown(data)
    assert "| yes |" in gaps_markdown(data)
    assert text.startswith("Measured 2026-01-01T00:00:00Z on Test GPU")
    with pytest.raises(ResultsError, match="not an overhead benchmark"):
        overhead_markdown({"rows": []})


def test_a_missing_recording_names_the_command(tmp_path, monkeypatch):
    monkeypatch.setenv("GRAPHLAB_RECORDINGS", str(tmp_path))
    with pytest.raises(RecordingError, match="graphlab record --models overhead"):
        gl.load(OverheadBenchmark)


def test_the_benchmark_is_read_through_the_loader_with_its_provenance(tmp_path, monkeypatch, data):
    from graphlab.loader import dump
    from graphlab.recordings import write_recording

    provenance = {"gpu": "Test GPU", "driver": "1", "torch": "9.9", "cuda": "1", "graphlab_version": "0",
                  "git_commit": "x", "command": "graphlab record --models overhead", "date": "2026-01-01T00:00:00Z"}
    written = dump(OverheadBenchmark.from_dict(data))  # what the study writes: the same file
    assert written == data
    write_recording(tmp_path / "test-gpu" / "overhead", name="overhead", description="", provenance=provenance,
                    graphs={}, results={"overhead": written})
    monkeypatch.setenv("GRAPHLAB_RECORDINGS", str(tmp_path))
    bench = gl.load(OverheadBenchmark)
    assert bench.provenance["command"] == "graphlab record --models overhead"
    assert bench.markdown() == overhead_markdown(data) == overhead_markdown(bench)
    assert gaps_markdown(bench) == gaps_markdown(data)
    assert "recorded on Test GPU on 2026-01-01" in overhead_table().title == overhead_table(bench).title
    assert str(bench) == str(overhead_table(bench))
    with pytest.warns(DeprecationWarning, match=r"gl.load\(OverheadBenchmark\)"):
        loaded = load_overhead()
    assert loaded == {**data, "provenance": provenance}  # what it always returned
    with pytest.raises(ResultsError, match="not an overhead benchmark"):
        OverheadBenchmark.from_dict({"rows": []})


def test_time_case_rotates_ways_and_keeps_every_block(monkeypatch):
    pytest.importorskip("torch")
    from test_timing_cpu import FakeTorch

    from graphlab.studies import overhead
    from graphlab.studies.overhead import time_case

    from graphlab.timing import sync

    fake = FakeTorch()
    monkeypatch.setattr(overhead, "torch", fake)  # real CPU tensors, a stand-in torch.cuda
    monkeypatch.setattr(sync, "torch", fake)

    order = []
    ways = {w: {"call": (lambda w=w: order.append(w)), "notes": {"max_abs_err": 0.0}}
            for w in ("eager", "raw_replay", "captured_call")}
    ways["compile_reduce_overhead"] = {"error": "skipped here"}

    class Clocks:
        def host_speed_us(self):
            return 50.0

    out = time_case(ways, rounds=3, block_ms=0.001, clocks=Clocks())
    assert out["host_speed_us"] == [50.0] * 3
    assert out["ways"]["compile_reduce_overhead"] == {"error": "skipped here"}
    for way in ("eager", "raw_replay", "captured_call"):
        entry = out["ways"][way]
        assert len(entry["host_us"]["blocks"]) == 3 and len(entry["latency_us"]["blocks"]) == 3
        assert entry["calls_per_block"] == 10  # the minimum
    firsts = []  # the first way of each round rotates
    timed = order[3 * (20 + 11):]  # after warm-up and the sizing block of each way
    for r in range(3):
        firsts.append(timed[r * 3 * 20])  # each way runs 10 host + 10 latency calls per round
    assert firsts == ["eager", "raw_replay", "captured_call"]


def test_verify_counts_graph_launches_and_judges_compile(monkeypatch):
    pytest.importorskip("torch")
    from graphlab.studies import overhead
    from graphlab.studies.overhead import verify_graph_launches
    from graphlab.timing.results import Span, Trace

    monkeypatch.setattr(overhead, "profile_call", lambda call, mode, calls=2: Trace(
        mode, (Span("k", 1.0, 2.0),), (Span("cudaGraphLaunch", 0.0, 1.0),)))
    ways = {"captured_call": {"call": lambda: None}, "compile_reduce_overhead": {"call": lambda: None}}
    timed = {"ways": {"captured_call": {"notes": {}},
                      "compile_reduce_overhead": {"notes": {"cudagraph_skips": 0, "replays_in_3_calls": 3}}}}
    verify_graph_launches(ways, timed)
    assert timed["ways"]["captured_call"]["notes"]["graph_launches_in_profiled_call"] == 1
    assert timed["ways"]["compile_reduce_overhead"]["notes"]["used_graphs"] is True
