"""GPU: the overhead benchmark's ways, the dense and sequence sweeps, and `graphlab repro`, end to end.

Only what must hold on any CUDA GPU is asserted (every way runs and matches eager, graph ways launch
one graph, the records have the right shape); the figures themselves are for the recordings. About
15-20 s on an H200 (no torch.compile here: the overhead recorder covers it).
"""
from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.gpu


def test_every_way_of_the_tiny_graph_runs_and_graph_ways_launch_one_graph():
    import torch

    from graphlab.studies.overhead import _tiny, build_case, time_case, verify_graph_launches

    model, x, x2 = _tiny()
    with torch.no_grad():
        ways = build_case(model, x, x2, compile_too=False)
        for way in ("eager", "raw_replay", "raw_copy_replay", "captured_call", "captured_unchecked",
                    "captured_replay", "make_graphed_callables"):
            assert "call" in ways[way], ways[way].get("error")
            assert ways[way]["notes"]["max_abs_err"] <= 1e-5, way
        timed = time_case(ways, rounds=3, block_ms=5.0)
        verify_graph_launches(ways, timed)
    for way in ("raw_copy_replay", "captured_call", "captured_unchecked", "captured_replay", "make_graphed_callables"):
        notes = timed["ways"][way]["notes"]
        assert notes["graph_launches_in_profiled_call"] == 1, (way, notes)
    for way, entry in timed["ways"].items():
        assert 0 < entry["host_us"]["best"] <= entry["host_us"]["median"], way
        assert 0 < entry["latency_us"]["best"] <= entry["latency_us"]["median"], way
    assert timed["ways"]["make_graphed_callables"]["notes"]["replays_in_3_calls"] == 3


def test_dense_and_sequence_sweeps_have_every_size():
    from graphlab.studies.dense import dense_sweep, seq_sweep

    dense = dense_sweep("mlp", (1, 2, 3))
    assert dense.batch_sizes == [1, 2, 3] and all(dense.is_paired(b) for b in (1, 2, 3))
    assert all(dense.point(b, "graph").capture_ms > 0 for b in (1, 2, 3))
    seq = seq_sweep((8, 64), (1, 2))
    assert seq.seq_lens == [8, 64] and seq.batch_sizes == [1, 2]
    assert seq.at_seq(8).point(2, "graph").p50_us > 0


def test_repro_reruns_a_recording(tmp_path, monkeypatch, capsys):
    from graphlab.cli import main
    from graphlab.recordings import write_recording
    from graphlab.timing.options import SweepOptions
    from graphlab.timing.sweep import sweep
    from graphlab.zoo import get_model

    zm = get_model("mlp")
    recorded = sweep("mlp", batch_sizes=[1, 4], options=SweepOptions(pairs=4, block_ms=10.0, profile=False,
                                                                      check_weights=False), progress=False)
    provenance = {"gpu": "Test GPU", "driver": "1", "torch": "9.9", "cuda": "1", "graphlab_version": "0",
                  "git_commit": "x", "command": "test", "date": "2026-01-01T00:00:00Z"}
    write_recording(tmp_path / "test-gpu" / "mlp", name="mlp", description=zm.description, provenance=provenance,
                    graphs={}, results={"sweep": recorded.to_dict()})
    monkeypatch.setenv("GRAPHLAB_RECORDINGS", str(tmp_path))
    out = tmp_path / "repro.json"
    assert main(["repro", "mlp", "--quiet", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert [r["batch_size"] for r in data["rows"]] == [1, 4]
    assert all(r["graph_p50_now_us"] > 0 and r["speedup_now"] > 0 for r in data["rows"])
    assert "now vs recorded" in capsys.readouterr().out
