"""Typed results: validation, queries, JSON round-trip, pandas view, timeline gaps.

The numbers here are hand-written test inputs, not measurements.
"""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from conftest import REPO
import graphlab as gl
from graphlab import present
from graphlab.timing.results import LatencyPoint, ResultsError, Span, Sweep, Timeline, Trace


def _point(batch_size: int, mode: str, p50: float, **kw) -> LatencyPoint:
    return LatencyPoint(batch_size=batch_size, mode=mode, p10_us=p50 * 0.9, p50_us=p50, p90_us=p50 * 1.2,
                        gpu_p50_us=p50 * 0.8, run_p50_us=(p50, p50 * 1.01), runs=2, repetitions=100, **kw)


@pytest.fixture
def sweep() -> Sweep:
    points = (
        _point(1, "eager", 100.0, kernel_count=5),
        _point(1, "graph", 60.0, kernel_count=5, capture_ms=12.5, pool_bytes=2 << 20),
        _point(8, "eager", 110.0),
        _point(8, "graph", 99.0),
        _point(64, "eager", 300.0),
    )
    return Sweep("mlp", points, conditions={"gpu": "test GPU"}, weight_update={"inplace_copy": {}})


def test_queries(sweep):
    assert sweep.batch_sizes == [1, 8, 64]
    assert [p.batch_size for p in sweep.by_mode("graph")] == [1, 8]
    assert sweep.has(1) and not sweep.has(64)
    assert sweep.speedup(1) == pytest.approx(100 / 60)
    assert sweep.speedup(1, gpu=True) == pytest.approx(100 / 60)
    assert sweep.latency_drop_pct(1) == pytest.approx(40.0)
    assert sweep.latency_drop_pct(8) == pytest.approx(10.0)
    with pytest.raises(ResultsError, match="no graph point at batch size 64"):
        sweep.point(64, "graph")


def test_json_round_trip_keeps_everything(sweep):
    text = sweep.to_json()
    again = Sweep.from_json(text)
    assert again == sweep
    assert again.conditions == {"gpu": "test GPU"}
    assert again.weight_update == {"inplace_copy": {}}
    assert again.point(1, "graph").run_p50_us == (60.0, 60.6)
    rows = json.loads(text)["rows"]
    assert {"batch_size", "mode", "p10_us", "p50_us", "p90_us"} <= set(rows[0])


def test_unknown_keys_are_ignored_and_missing_ones_explained():
    row = {"batch_size": 2, "mode": "eager", "p10_us": 1.0, "p50_us": 2.0, "p90_us": 3.0, "from_the_future": 1}
    assert LatencyPoint.from_dict(row).p50_us == 2.0
    with pytest.raises(ResultsError, match="rows need batch_size"):
        LatencyPoint.from_dict({"batch_size": 2, "mode": "eager"})
    with pytest.raises(ResultsError, match="not a sweep"):
        Sweep.from_dict({"model": "x"})


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"mode": "replay"}, "mode must be"),
        ({"batch_size": 0}, "batch_size"),
        ({"p10_us": 5.0, "p50_us": 4.0}, "out of order"),
    ],
)
def test_bad_points_are_refused(kwargs, match):
    base = {"batch_size": 1, "mode": "eager", "p10_us": 1.0, "p50_us": 2.0, "p90_us": 3.0}
    with pytest.raises(ResultsError, match=match):
        LatencyPoint(**{**base, **kwargs})


def test_pandas_view(sweep):
    df = sweep.to_pandas()
    assert len(df) == 5
    assert list(df["mode"])[:2] == ["eager", "graph"]
    assert (df["model"] == "mlp").all()
    pivot = df.pivot(index="batch_size", columns="mode", values="p50_us")
    assert pivot.loc[1, "eager"] == 100.0


def test_table_lists_batch_sizes_measured_in_both_modes_only(sweep):
    table = sweep.table()
    assert table.column("batch") == [1, 8]
    text = str(table)
    assert "speedup (x)" in text and "1.67" in text and "1.11" in text
    assert "eager p50 (µs)" in text and "mlp, measured on test GPU: one call" in text


def test_trace_gaps_merge_overlapping_kernels():
    trace = Trace("eager", (Span("a", 5, 10), Span("b", 8, 12), Span("c", 20, 25)), host_us=30.0)
    assert trace.gaps() == [(0.0, 5), (12, 20)]
    assert trace.idle_us == pytest.approx(13.0)
    assert trace.busy_us == pytest.approx(12.0)
    assert trace.end_us == 25
    assert Trace("graph", ()).gaps() == [] and Trace("graph", ()).end_us == 0.0


def test_timeline_round_trip():
    tl = Timeline(
        "mlp", 1,
        eager=Trace("eager", (Span("gemm", 4.0, 6.0),), (Span("cudaLaunchKernel", 1.0, 3.5),), 9.0),
        graph=Trace("graph", (Span("gemm", 2.0, 4.0),), (Span("cudaGraphLaunch", 0.5, 1.5),), 5.0),
        conditions={"gpu": "test GPU"},
    )
    again = Timeline.from_json(tl.to_json())
    assert again == tl and again.conditions == {"gpu": "test GPU"}
    assert again.trace("graph").launches[0].name == "cudaGraphLaunch"
    with pytest.raises(ResultsError):
        tl.trace("other")
    with pytest.raises(ResultsError, match="not a timeline"):
        Timeline.from_dict({"eager": {}})


def test_trace_from_chrome_cuts_the_last_marked_call():
    from graphlab.timing.timeline import ANNOTATION, TimelineError, kernel_count, trace_from_chrome

    def ev(cat, name, ts, dur):
        return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur}

    trace = {"traceEvents": [
        {"ph": "M", "name": "process_name"},
        ev("user_annotation", ANNOTATION, 1000.0, 50.0),   # first call: ignored
        ev("kernel", "early", 1010.0, 5.0),
        ev("user_annotation", ANNOTATION, 2000.0, 40.0),   # last call: time zero
        ev("cuda_runtime", "cudaMemcpyAsync", 2001.0, 2.0),
        ev("cuda_runtime", "cudaGraphLaunch", 2004.0, 3.0),
        ev("cuda_runtime", "cudaStreamSynchronize", 2008.0, 30.0),  # not a launch
        ev("gpu_memcpy", "Memcpy DtoD (Device -> Device)", 2006.0, 1.0),
        ev("kernel", "gemm", 2010.0, 4.0),
        ev("kernel", "gelu", 2015.0, 2.0),
        ev("kernel", "after", 2100.0, 2.0),               # outside the range
    ]}
    t = trace_from_chrome(trace, "graph")
    assert [k.name for k in t.kernels] == ["Memcpy DtoD (Device -> Device)", "gemm", "gelu"]
    assert t.kernels[1].start_us == 10.0 and t.kernels[1].end_us == 14.0
    assert [s.name for s in t.launches] == ["cudaMemcpyAsync", "cudaGraphLaunch"]
    assert t.host_us == 40.0
    assert kernel_count(t) == 2
    assert t.gaps() == [(0.0, 6.0), (7.0, 10.0), (14.0, 15.0)]
    with pytest.raises(TimelineError, match="record_function"):
        trace_from_chrome({"traceEvents": []}, "eager")


def test_trace_from_chrome_reads_a_real_profiler_trace_on_cpu(tmp_path):
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile, record_function

    from graphlab.timing.timeline import ANNOTATION, trace_from_chrome

    model = torch.nn.Linear(8, 8)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(2):
            with record_function(ANNOTATION):
                model(torch.randn(2, 8))
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    t = trace_from_chrome(json.loads(path.read_text()), "eager")
    assert t.host_us and t.host_us > 0
    assert t.kernels == ()  # a CPU run has no GPU activity


def test_load_merges_recording_provenance(tmp_path, monkeypatch, sweep):
    from graphlab.recordings import write_recording

    provenance = {"gpu": "Test GPU", "driver": "1", "torch": "9.9", "cuda": "1", "graphlab_version": "0",
                  "git_commit": "x", "command": "test", "date": "2026-01-01T00:00:00Z"}
    tl = Timeline("mlp", 1, Trace("eager", (Span("k", 1.0, 2.0),)), Trace("graph", (Span("k", 0.5, 1.5),)))
    write_recording(tmp_path / "test-gpu" / "mlp", name="mlp", description="", provenance=provenance, graphs={},
                    results={"sweep": sweep.to_dict(), "timeline": tl.to_dict()})
    monkeypatch.setenv("GRAPHLAB_RECORDINGS", str(tmp_path))
    loaded = gl.load(Sweep, "mlp")
    assert loaded == sweep and loaded.conditions["driver"] == "1" and loaded.conditions["gpu"] == "test GPU"
    assert gl.load(Timeline, "mlp", gpu="test-gpu") == tl
    with pytest.warns(DeprecationWarning, match=r"gl.load\(gl.Sweep, 'mlp'\)"):
        assert Sweep.load("mlp") == sweep  # the old call still works, and says what to call instead


# -- the paired method: block medians, host modes, paired speedups ------------------------------------------------

EAGER_BLOCKS = (700.0, 705.0, 880.0, 890.0, 698.0, 885.0, 702.0, 875.0, 710.0, 882.0)
GRAPH_BLOCKS = (200.0, 201.0, 200.5, 199.5, 200.0, 201.0, 199.0, 200.0, 200.2, 200.8)


def _paired_point(mode: str, blocks: tuple[float, ...], batch_size: int = 1, **kw) -> LatencyPoint:
    ordered = sorted(blocks)
    return LatencyPoint(batch_size=batch_size, mode=mode, p10_us=ordered[1], p50_us=ordered[len(ordered) // 2],
                        p90_us=ordered[-2], repetitions=20, runs=len(blocks), block_p50_us=blocks,
                        block_start_ms=tuple(40.0 * i + (0 if mode == "eager" else 20.0) for i in range(len(blocks))),
                        block_gpu_mhz=(1980.0,) * len(blocks), block_cpu_mhz=(2400.0,) * len(blocks),
                        warmup_calls=30, **kw)


@pytest.fixture
def paired_sweep() -> Sweep:
    return Sweep("gpt", (_paired_point("eager", EAGER_BLOCKS),
                         _paired_point("graph", GRAPH_BLOCKS, capture_ms=6.0, instantiate_ms=0.4)),
                 conditions={"method": "paired blocks"})


def test_paired_points_round_trip_with_every_block(paired_sweep):
    data = json.loads(paired_sweep.to_json())
    assert data["schema"] == "graphlab.sweep/3"
    assert data["rows"][0]["block_p50_us"] == list(EAGER_BLOCKS)
    again = Sweep.from_dict(data)
    assert again == paired_sweep
    graph = again.point(1, "graph")
    assert graph.block_p50_us == GRAPH_BLOCKS and graph.instantiate_ms == 0.4 and graph.warmup_calls == 30
    assert graph.block_gpu_mhz[0] == 1980.0 and len(graph.block_start_ms) == 10


def test_old_recordings_still_load():
    row = {"batch_size": 1, "mode": "eager", "p10_us": 704.2, "p50_us": 809.6, "p90_us": 1159.1, "repetitions": 57,
           "runs": 5, "run_p50_us": [727.4, 768.3, 1032.2, 847.3, 862.5], "spread_pct": 36.0, "capture_ms": None}
    old = Sweep.from_dict({"schema": "graphlab.sweep/1", "model": "gpt", "rows": [row, {**row, "mode": "graph",
                                                                                       "p50_us": 900.0}]})
    assert old.point(1, "eager").block_p50_us == () and old.point(1, "eager").host_modes is None
    assert not old.is_paired(1)
    assert old.speedup(1) == pytest.approx(809.6 / 900.0)  # auto falls back to the medians
    with pytest.raises(ResultsError, match="no paired blocks"):
        old.paired(1)
    assert "no blocks (recorded before the paired method)" in str(old.modes_report())
    assert "0.900" in str(old.table()) and "pairs" not in str(old.table())


def test_the_shipped_recordings_load():
    for path in sorted((REPO / "data" / "recordings").glob("*/*/sweep.json")):
        sweep = Sweep.from_json(path.read_text(encoding="utf-8"))
        assert sweep.batch_sizes and all(sweep.speedup(b) > 0 for b in sweep.batch_sizes if sweep.has(b))
        str(sweep.table()), str(sweep.modes_report()), sweep.rows()


def test_a_shipped_recording_with_the_older_name_reads_pool_bytes():
    """Recordings made before the one name call the pool's memory `graph_memory_bytes`: it loads as `pool_bytes`,
    and what is written again uses the one name."""
    raw = json.loads((REPO / "data" / "recordings" / "h200" / "mlp" / "sweep.json").read_text(encoding="utf-8"))
    older = {row["batch_size"]: row["graph_memory_bytes"] for row in raw["rows"] if row["mode"] == "graph"}
    assert "pool_bytes" not in raw["rows"][0] and all(v and v > 0 for v in older.values())
    for sweep in (Sweep.from_dict(raw), gl.load(Sweep, "mlp", gpu="h200")):
        assert {p.batch_size: p.pool_bytes for p in sweep.by_mode("graph")} == older
        assert all(p.pool_bytes is None for p in sweep.by_mode("eager"))
    rows = Sweep.from_dict(raw).to_dict()["rows"]
    assert all("pool_bytes" in row and "graph_memory_bytes" not in row for row in rows)
    assert "pool_bytes" in Sweep.from_dict(raw).rows()[1]
    # the one name wins where a row has both
    both = {"batch_size": 1, "mode": "graph", "p10_us": 1.0, "p50_us": 2.0, "p90_us": 3.0,
            "pool_bytes": 7, "graph_memory_bytes": 9}
    assert LatencyPoint.from_dict(both).pool_bytes == 7


def test_paired_speedup_and_its_bases(paired_sweep):
    s = paired_sweep
    assert s.is_paired(1)
    pairs = s.paired(1)
    assert pairs.pairs == 10 and pairs.modes.count == 2
    assert s.speedup(1) == pytest.approx(pairs.p50)
    assert s.speedup(1, basis="pairs") == pytest.approx(pairs.p50)
    assert s.speedup(1, basis="fastest_mode") == pytest.approx(pairs.by_mode[0])
    assert pairs.by_mode[0] == pytest.approx(703.5 / 200.0, rel=0.01)
    assert s.speedup(1, basis="medians") == pytest.approx(s.point(1, "eager").p50_us / s.point(1, "graph").p50_us)
    with pytest.raises(ResultsError, match="basis must be"):
        s.speedup(1, basis="best")


def test_host_modes_and_fastest_mode_of_a_point(paired_sweep):
    eager = paired_sweep.point(1, "eager")
    modes = eager.host_modes
    assert modes.count == 2 and modes.switches == 7
    assert eager.fastest_mode_p50_us == pytest.approx(702.0)
    assert paired_sweep.host_modes(1, "graph").count == 1
    report = paired_sweep.modes_report()
    row = report.rows[0]
    assert (row["states"], row["switches"], row["blocks"], row["graph_states"]) == (2, 7, 10, 1)
    assert row["fastest"] == pytest.approx(702.0) and row["slowest"] == pytest.approx(882.0)
    assert row["share"] == pytest.approx(50.0)
    assert "eager states" in str(report) and "702" in str(report) and "882" in str(report)
    row = paired_sweep.rows()[0]
    assert row["host_modes"] == 2 and row["fastest_mode_p50_us"] == pytest.approx(702.0)


def test_paired_table_shows_the_spread_and_the_modes_the_fastest_state(paired_sweep):
    table = paired_sweep.table()
    text = str(table)
    assert "the median over block pairs" in text
    pairs = paired_sweep.paired(1)
    row = table.rows[0]
    assert row["speedup"] == pytest.approx(pairs.p50) and row["pairs"] == pairs.pairs
    assert row["spread"] == f"{present.ratio(pairs.p10)[:-1]} to {present.ratio(pairs.p90)[:-1]}"
    assert paired_sweep.modes_report().rows[0]["fastest_speedup"] == pytest.approx(pairs.fastest_mode)


def test_a_sweep_over_sequence_length():
    points = tuple(_paired_point(mode, blocks, batch_size=b, seq_len=seq)
                   for b in (1, 8) for seq in (16, 64)
                   for mode, blocks in (("eager", EAGER_BLOCKS), ("graph", GRAPH_BLOCKS)))
    s = Sweep("gpt-seq", points)
    assert s.seq_lens == [16, 64] and s.batch_sizes == [1, 8]
    assert s.point(8, "graph", seq_len=16).seq_len == 16
    with pytest.raises(ResultsError, match="pass seq_len"):
        s.point(8, "graph")
    at16 = s.at_seq(16)
    assert at16.batch_sizes == [1, 8] and at16.point(1, "eager").seq_len == 16
    assert s.speedup(1, seq_len=64) == pytest.approx(s.paired(1, seq_len=64).p50)
    table = s.table()
    assert "sequence length" in str(table) and [(r["batch"], r["seq"]) for r in table.rows] == [
        (1, 16), (8, 16), (1, 64), (8, 64)]
    report = s.modes_report()
    assert "sequence length" in str(report) and report.rows[-1]["states"] == 2
    with pytest.raises(ResultsError, match="no points at sequence length 32"):
        s.at_seq(32)
    assert Sweep.from_json(s.to_json()) == s


def test_host_speed_modes_put_every_batch_size_in_the_same_states():
    # two host states (fast ~70 µs, slow ~125 µs for the fixed workload) that both batch sizes saw in turn
    host = (70.0, 71.0, 124.0, 126.0, 69.0, 125.0, 70.0, 127.0, 70.5, 124.5)
    points = []
    for b, eager_blocks in ((1, EAGER_BLOCKS), (64, tuple(400.0 for _ in EAGER_BLOCKS))):
        for mode, blocks in (("eager", eager_blocks), ("graph", GRAPH_BLOCKS)):
            points.append(replace(_paired_point(mode, blocks, batch_size=b), block_host_us=host))
    s = Sweep("gpt", tuple(points))
    modes = s.host_speed_modes()
    assert modes.count == 2 and modes.levels_us[0] == pytest.approx(70.0, abs=1) and modes.blocks == 40
    by_host = s.paired(1, modes_from="host")
    assert by_host.modes.levels_us == modes.levels_us and by_host.modes.labels[:3] == (0, 0, 1)
    assert s.paired(64).modes.count == 1  # eager is GPU-bound there: no modes of its own...
    assert s.paired(64, modes_from="host").modes.count == 2  # ...but the host's states still label its pairs
    assert "The host's own speed (a fixed pure-Python workload timed after every block; lower is faster): 2 states" \
        in str(s.modes_report())
    with pytest.raises(ResultsError, match="modes_from must be"):
        s.paired(1, modes_from="gpu")


def test_host_modes_need_a_reading_after_every_block(paired_sweep):
    assert paired_sweep.host_speed_modes() is None
    with pytest.raises(ResultsError, match="no host-speed reading"):
        paired_sweep.paired(1, modes_from="host")
