"""Claims check: each claim's verdict follows the measured figures, and says when it cannot decide.

The sweeps here are hand-written test inputs, not measurements.
"""
from __future__ import annotations

import json

import pytest

from graphlab.timing.claims import DEPENDS, FAILS, HOLDS, UNSETTLED, check_claims, claims_markdown
from graphlab.recordings import list_recordings, write_recording
from graphlab.timing.results import LatencyPoint, Sweep

PROBE_REAL = {
    "tolerance_rel": 1e-3, "output_change_rel": 0.8,
    "inplace_copy": {"replay_vs_eager_new_rel": 0.0, "replay_follows_new_weights": True},
    "rebind_parameter": {"replay_vs_eager_new_rel": 1.1, "replay_vs_old_weights_rel": 0.0,
                         "replay_follows_new_weights": False},
}


def _p(batch_size, mode, p50, **kw):
    return LatencyPoint(batch_size=batch_size, mode=mode, p10_us=p50, p50_us=p50, p90_us=p50, spread_pct=1.5, **kw)


def _sweep(model, eager1, graph1, eager8, graph8, capture_ms=20.0, pool=256 * 1024, exec_bytes=0, probe=PROBE_REAL):
    return Sweep(model, (
        _p(1, "eager", eager1), _p(1, "graph", graph1, capture_ms=capture_ms, pool_bytes=pool,
                                  graph_exec_bytes=exec_bytes, kernel_count=5),
        _p(8, "eager", eager8), _p(8, "graph", graph8, capture_ms=capture_ms * 2, pool_bytes=pool * 8,
                                  kernel_count=5),
    ), conditions={"gpu": "Test GPU", "torch": "9.9", "date": "2026-01-01T00:00:00Z"}, weight_update=probe)


def _by_key(verdicts):
    return {v.key: v for v in verdicts}


def test_claims_hold_when_figures_are_inside_the_ranges():
    v = _by_key(check_claims([_sweep("a", 100, 60, 100, 90), _sweep("b", 200, 130, 100, 92)]))
    assert v["batch1"].verdict == HOLDS and v["batch1"].per_model == pytest.approx({"a": 40.0, "b": 35.0})
    assert "a 40%" in v["batch1"].measured and "Test GPU" in v["batch1"].condition
    assert v["batch8"].verdict == HOLDS
    assert v["capture"].verdict == HOLDS and v["capture"].per_model == {"a": 40.0, "b": 40.0}
    assert v["memory"].verdict == HOLDS
    assert v["memory"].measured == ("smallest graph: a 256 KiB, b 256 KiB (each at batch 1); "
                                    "largest: a 2 MiB, b 2 MiB (each at batch 8); instantiating added 0 B")


def test_claims_fail_or_depend_on_the_model():
    v = _by_key(check_claims([_sweep("small", 100, 40, 100, 90, capture_ms=150.0, pool=4 << 20),
                              _sweep("big", 1000, 950, 1000, 990, capture_ms=150.0, pool=4 << 20)]))
    assert v["batch1"].verdict == FAILS  # 60% and 5%: both outside 30-45%
    assert v["batch8"].verdict == DEPENDS  # 10% for one model, 1% for the other
    assert v["batch8"].per_model == pytest.approx({"small": 10.0, "big": 1.0})
    assert v["capture"].verdict == FAILS
    assert v["memory"].verdict == FAILS


def test_weights_claim_reads_the_probe():
    weights = _by_key(check_claims([_sweep("a", 100, 60, 100, 90)]))["weights"]
    assert weights.verdict == DEPENDS
    assert "in-place" in weights.measured and "old weights" in weights.measured
    ignored = dict(PROBE_REAL, inplace_copy={"replay_follows_new_weights": False})
    assert _by_key(check_claims([_sweep("a", 100, 60, 100, 90, probe=ignored)]))["weights"].verdict == HOLDS


def test_nothing_recorded_is_unsettled_not_false():
    verdicts = check_claims([])
    assert [v.verdict for v in verdicts] == [UNSETTLED] * 5
    assert "no recording has batch size 1" in verdicts[0].measured
    only_eager = Sweep("e", (_p(1, "eager", 10.0),))
    assert _by_key(check_claims([only_eager]))["batch1"].verdict == UNSETTLED


def test_claims_read_recordings_from_disk(tmp_path):
    from graphlab.graph.model import CudaGraph

    provenance = {"gpu": "Test GPU", "driver": "1", "torch": "9.9", "cuda": "1", "graphlab_version": "0",
                  "git_commit": "x", "command": "test", "date": "2026-01-01T00:00:00Z"}
    write_recording(tmp_path / "test-gpu" / "a", name="a", description="", provenance=provenance, graphs={},
                    results={"sweep": json.loads(_sweep("a", 100, 60, 100, 90).to_json()), "timeline": {"x": 1}})
    assert CudaGraph  # the model import keeps recordings importable
    verdicts = check_claims(list_recordings(tmp_path))
    assert _by_key(verdicts)["batch1"].per_model == pytest.approx({"a": 40.0})
    assert claims_markdown(list(verdicts)).startswith("| claim | verdict | measured |")
    table = verdicts.table()
    assert [r["verdict"] for r in table.rows] == [v.verdict for v in verdicts] and "Test GPU" in table.title
    assert "[HOLDS]" in str(verdicts)


def test_memory_claim_uses_each_models_cheapest_graph():
    # the first capture in a process can hold library workspaces: batch 1 costs more than batch 8 here
    sweep = Sweep("m", (
        _p(1, "eager", 10.0), _p(1, "graph", 5.0, pool_bytes=36 << 20, graph_exec_bytes=2 << 20,
                                 graph_peak_bytes=1 << 20),
        _p(8, "eager", 10.0), _p(8, "graph", 5.0, pool_bytes=512 * 1024, graph_exec_bytes=0,
                                 graph_peak_bytes=300 * 1024),
    ))
    memory = _by_key(check_claims([sweep]))["memory"]
    assert memory.per_model == {"m": 512 * 1024} and memory.verdict == HOLDS
    assert memory.measured == (
        "smallest graph: m 512 KiB (batch 8); largest: m 38 MiB (batch 1); the work inside them peaked at 300 KiB; "
        "the pool rounds that up to whole allocator segments; instantiating added 0 B")


def test_the_memory_row_reads_as_sentences_on_the_shipped_recordings():
    """Issue 10: "mlp 2.00 MiB at batch 2 (pool 2.00 MiB + driver 0 B, ...), up to 36.00 MiB at batch 1; ..."."""
    memory = _by_key(check_claims(list_recordings()))["memory"]
    parts = memory.measured.split("; ")
    assert parts[0].startswith("smallest graph: ") and parts[1].startswith("largest: ")
    assert parts[2].startswith("the work inside them peaked at ") and parts[-1].startswith("instantiating added ")
    assert ".00 " not in memory.measured and "pool 2" not in memory.measured  # sizes as "2 MiB", "13.4 MiB"
    for model in memory.per_model:
        assert f"{model} " in parts[0] and f"{model} " in parts[1]
