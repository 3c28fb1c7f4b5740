"""Figures are built from results (no GPU) and carry what a learner needs: traces, bands, log axis, line at 1.

The results here are hand-written test inputs, not measurements.
"""
from __future__ import annotations

import pytest

from graphlab.timing.results import LatencyPoint, Span, Sweep, Timeline, Trace

pytest.importorskip("plotly")
from graphlab.viz import plots  # noqa: E402


def _p(batch_size, mode, p50, **kw):
    return LatencyPoint(batch_size=batch_size, mode=mode, p10_us=p50 * 0.9, p50_us=p50, p90_us=p50 * 1.3,
                        gpu_p10_us=p50 * 0.5, gpu_p50_us=p50 * 0.6, gpu_p90_us=p50 * 0.7, **kw)


def _sweep(gpu="GPU A", scale=1.0):
    pts = []
    for b, e, g in ((1, 100.0, 60.0), (8, 120.0, 100.0), (64, 400.0, 390.0)):
        pts += [_p(b, "eager", e * scale, gpu_busy_us=30.0, launch_overhead_pct=70.0),
                _p(b, "graph", g * scale, gpu_busy_us=30.0, launch_overhead_pct=50.0)]
    return Sweep("mlp", tuple(pts), conditions={"gpu": gpu})


def test_latency_figure_has_lines_bands_and_a_log_batch_axis():
    fig = plots.plot_latency(_sweep())
    lines = [t for t in fig.data if t.mode == "lines+markers"]
    bands = [t for t in fig.data if t.fill == "toself"]
    assert [t.name for t in lines[:2]] == [plots.LABELS["eager"], plots.LABELS["graph"]]
    assert len(bands) == 2
    eager_line = lines[0]
    assert list(eager_line.x) == [1, 8, 64] and list(eager_line.y) == [100.0, 120.0, 400.0]
    band = bands[0]  # closed polygon: p90 forward, p10 backward
    assert list(band.y) == pytest.approx([130.0, 156.0, 520.0, 360.0, 108.0, 90.0])
    assert fig.layout.xaxis2.type == "log" and list(fig.layout.xaxis2.tickvals) == [1, 8, 64]
    assert fig.layout.xaxis.type == "log"  # both panels: a shared axis with two types misplaces points
    assert fig.layout.xaxis.title.text is None and "batch size" in fig.layout.xaxis2.title.text
    assert fig.layout.yaxis.type == "log"
    speedup = lines[2]
    assert list(speedup.y) == pytest.approx([100 / 60, 1.2, 400 / 390])
    assert any(shape.y0 == 1.0 and shape.y1 == 1.0 for shape in fig.layout.shapes)  # the line at 1
    assert "eager vs CUDA graph" in fig.layout.title.text


def test_the_log_latency_axis_reads_as_durations_with_units():
    """Issue 10: the cnn sweep (70-700 µs) read "7 6 5 4 3 2 100 9 8 7" on plotly's own log ticks."""
    pts = []
    for b, e, g in ((1, 520.0, 86.7), (8, 443.7, 81.3), (64, 599.3, 107.2)):  # the shape of the H200 cnn sweep
        pts += [_p(b, "eager", e), _p(b, "graph", g)]
    fig = plots.plot_latency(Sweep("cnn", tuple(pts)))
    axis = fig.layout.yaxis
    assert axis.type == "log" and "log scale" in axis.title.text
    assert list(axis.ticktext) == ["100 µs", "200 µs", "500 µs"] and list(axis.tickvals) == [100, 200, 500]
    assert plots.log_ticks(5, 5000) == [10, 100, 1000]  # three decades: powers of ten
    assert plots.log_ticks(80, 110) == [80, 90, 100]  # narrow: finer steps
    assert [plots.format_us(v) for v in (0.5, 50, 1000, 1500, 2e6)] == ["0.5 µs", "50 µs", "1 ms", "1.5 ms", "2 s"]
    for low, high in ((1, 10), (7, 700), (30, 4e5), (99, 101)):
        ticks = plots.log_ticks(low, high)
        assert 1 <= len(ticks) <= plots.MAX_LOG_TICKS and all(low <= t <= high for t in ticks)
        assert ticks == sorted(ticks)


def test_gpu_time_variant_uses_event_times():
    fig = plots.plot_latency(_sweep(), gpu_time=True, speedup=False)
    line = [t for t in fig.data if t.mode == "lines+markers"][0]
    assert list(line.y) == pytest.approx([60.0, 72.0, 240.0])
    assert "CUDA events" in fig.layout.yaxis.title.text
    assert all(t.mode == "lines" for t in fig.data if t.fill == "toself")  # bands: no markers


def test_several_gpus_compare_in_one_figure():
    fig = plots.plot_latency([_sweep("GPU A"), _sweep("GPU B", 2.0)])
    names = [t.name for t in fig.data if t.mode == "lines+markers"]
    assert f"{plots.LABELS['eager']} · GPU A" in names and f"{plots.LABELS['graph']} · GPU B" in names
    dashes = {t.line.dash for t in fig.data if t.mode == "lines+markers"}
    assert {"solid", "dash"} <= dashes


def test_speedup_and_overhead_figures():
    sp = plots.plot_speedup(_sweep())
    assert list(sp.data[0].y) == pytest.approx([100 / 60, 1.2, 400 / 390])
    assert sp.layout.xaxis.type == "log"
    ov = plots.plot_overhead(_sweep())
    assert [t.name for t in ov.data] == [plots.LABELS["eager"], plots.LABELS["graph"]]
    assert list(ov.data[0].x) == ["1", "8", "64"] and list(ov.data[1].y) == [50.0, 50.0, 50.0]
    assert ov.layout.xaxis.type == "category" and list(ov.layout.yaxis.range) == [0, 100]


def test_timeline_draws_kernels_gaps_and_launches_on_one_axis():
    tl = Timeline("mlp", 1,
                  eager=Trace("eager", (Span("gemm", 5, 8), Span("Memset (Device)", 12, 13)),
                              (Span("cudaLaunchKernel", 1, 4), Span("cudaLaunchKernel", 9, 11)), 20.0),
                  graph=Trace("graph", (Span("gemm", 3, 6), Span("gemm", 6, 9)), (Span("cudaGraphLaunch", 0.5, 2),), 12.0))
    fig = plots.plot_timeline(tl)
    by_name = {t.name: t for t in fig.data}
    eager_k = by_name["eager kernels"]
    assert list(eager_k.base) == [5, 12] and list(eager_k.x) == [3, 1]
    assert list(eager_k.text) == [plots._short("gemm"), "Memset"]
    idle = [t for t in fig.data if t.name == "GPU idle"]
    assert len(idle) == 2
    eager_idle = [t for t in idle if t.y[0].startswith("eager")][0]
    assert sum(eager_idle.x) == pytest.approx(9.0)  # 0-5 and 8-12
    assert "idle 9.00 µs of 13.0 µs" in eager_idle.y[0]  # durations in words, three digits (present.duration)
    graph_idle = [t for t in idle if t.y[0].startswith("graph")][0]
    assert sum(graph_idle.x) == pytest.approx(3.0)
    assert "µs since the host called" in fig.layout.xaxis.title.text
    assert fig.layout.barmode == "overlay"
    order = list(fig.layout.yaxis.categoryarray)  # bottom to top: eager's rows end up on top
    assert [r.split(" (")[0] for r in order] == ["graph: GPU", "graph: host launch calls", "eager: GPU",
                                                 "eager: host launch calls"]
    # the title counts what the graph call launched, as its host row does
    assert "graph: 1 (1 graph launch, which runs the whole graph)" in fig.layout.title.text


def test_several_models_are_told_apart_by_name():
    other = Sweep("gpt", _sweep().points, conditions={"gpu": "GPU A"})
    fig = plots.plot_speedup([_sweep(), other])
    assert [t.name for t in fig.data] == ["speedup · mlp", "speedup · gpt"]
    assert fig.data[0].line.color != fig.data[1].line.color
