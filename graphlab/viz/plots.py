"""Plotly figures of latency results: latency and speedup by batch size, launch overhead, kernel timeline.

No torch: built from `graphlab.timing.results` objects only, so they work from recordings on a
machine without a GPU. plotly is imported inside functions.

Colours stay fixed across figures: eager is orange, graph replay is blue; idle GPU time is grey.

Example:
    >>> import graphlab as gl
    >>> from graphlab.timing.results import Sweep
    >>> sweep = Sweep.from_dict(gl.load_recording("mlp").results("sweep"))   # doctest: +SKIP
    >>> gl.plot_latency(sweep)                                                # doctest: +SKIP
"""
from __future__ import annotations

import math
from typing import Any, Sequence, Union

from graphlab.present import duration
from graphlab.timing.results import MODES, Sweep, Timeline, Trace
from graphlab.viz.banner import recorded_banner

COLORS = {"eager": "#E4572E", "graph": "#2E86AB"}
BANDS = {"eager": "rgba(228,87,46,0.18)", "graph": "rgba(46,134,171,0.18)"}
IDLE = "rgba(150,150,150,0.35)"
SERIES = ("#3B1F2B", "#6A994E", "#8E7DBE", "#BC4749", "#F2A541", "#386641")
DASHES = ("solid", "dash", "dot", "dashdot")
LABELS = {"eager": "eager (model(x))", "graph": "CUDA graph (copy in + replay)"}

Sweeps = Union[Sweep, Sequence[Sweep]]


def _go() -> Any:
    import plotly.graph_objects as go

    return go


def _as_list(sweeps: Sweeps) -> list[Sweep]:
    return [sweeps] if isinstance(sweeps, Sweep) else list(sweeps)


def _tag(sweep: Sweep, items: list[Sweep]) -> str:
    """Legend suffix when several sweeps share a figure: the model if they differ, else the GPU."""
    if len(items) < 2:
        return ""
    if len({s.model for s in items}) > 1:
        return f" · {sweep.model}"
    return f" · {sweep.conditions.get('gpu') or sweep.model}"


def _batch_axis(fig: Any, batch_sizes: list[int], row: int | None = None) -> None:
    """Log batch-size axis on every panel (shared axes must agree on type), titled on `row` only."""
    fig.update_xaxes(type="log", tickvals=batch_sizes, ticktext=[str(b) for b in batch_sizes])
    kwargs = {"row": row, "col": 1} if row else {}
    fig.update_xaxes(title_text="batch size (inputs per call, log scale)", **kwargs)


# mantissas of log-axis ticks, sparse to dense: 10-100-1000, 1-2-5, then finer for a narrow range
_LOG_TICK_SETS = ((1.0,), (1.0, 2.0, 5.0), (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 7.0), (1.0, 1.2, 1.4, 1.6, 1.8, 2.0, 2.5, 3.0,
                                                                                 3.5, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0))
MAX_LOG_TICKS = 8


def log_ticks(low: float, high: float) -> list[float]:
    """Tick values for a log axis that shows `low` to `high`: the sparsest of 10-100-1000, 1-2-5
    (50, 100, 200, 500, ...) and finer steps that puts three ticks in the range, without going
    past `MAX_LOG_TICKS`. Plotly's own log ticks label 70-700 as "7 8 9 100 2 3 4 5 6 7"; these read
    as numbers.

    >>> log_ticks(70, 702)
    [100.0, 200.0, 500.0]
    """
    if not (low > 0 and high > 0):
        return []
    low, high = min(low, high), max(low, high)
    decades = range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1)
    best: list[float] = []
    for mantissas in _LOG_TICK_SETS:
        ticks = [round(m * 10.0**e, 12) for e in decades for m in mantissas]
        ticks = [t for t in ticks if low * (1 - 1e-9) <= t <= high * (1 + 1e-9)]
        if len(ticks) > MAX_LOG_TICKS:
            return best or ticks
        best = ticks
        if len(ticks) >= 3:
            break
    return best


def format_us(value_us: float) -> str:
    """A duration for a tick label, with its unit: "50 µs", "1.5 ms", "2 s"."""
    for scale, unit in ((1e6, "s"), (1e3, "ms")):
        if value_us >= scale:
            return f"{value_us / scale:g} {unit}"
    return f"{value_us:g} µs"


def _log_time_axis(fig: Any, values: list[float], title: str, row: int | None = None) -> None:
    """A log y axis over `values` (µs) whose ticks read as durations with units."""
    kwargs = {"row": row, "col": 1} if row else {}
    values = [v for v in values if v is not None and v > 0]
    ticks = log_ticks(min(values), max(values)) if values else []
    fig.update_yaxes(type="log", title_text=title, tickvals=ticks or None,
                     ticktext=[format_us(t) for t in ticks] or None, **kwargs)


def add_latency_traces(fig: Any, sweeps: Sweeps, row: int | None = None, gpu_time: bool = False) -> None:
    """Add median lines and p10-p90 bands of each mode (and each sweep) to `fig`."""
    go = _go()
    items = _as_list(sweeps)
    where = {"row": row, "col": 1} if row else {}
    prefix = "gpu_" if gpu_time else ""
    for i, sweep in enumerate(items):
        for mode in MODES:
            points = [p for p in sweep.by_mode(mode) if getattr(p, f"{prefix}p50_us") is not None]
            if not points:
                continue
            x = [p.batch_size for p in points]
            p10 = [getattr(p, f"{prefix}p10_us") for p in points]
            p50 = [getattr(p, f"{prefix}p50_us") for p in points]
            p90 = [getattr(p, f"{prefix}p90_us") for p in points]
            name = LABELS[mode] + _tag(sweep, items)
            fig.add_trace(go.Scatter(x=x + x[::-1], y=p90 + p10[::-1], mode="lines", fill="toself", fillcolor=BANDS[mode],
                                     line={"width": 0}, hoverinfo="skip", showlegend=False,
                                     name=f"{name} p10-p90", legendgroup=name), **where)
            fig.add_trace(go.Scatter(
                x=x, y=p50, mode="lines+markers", name=name, legendgroup=name,
                line={"color": COLORS[mode], "dash": DASHES[i % len(DASHES)]},
                customdata=list(zip(p10, p90)),
                hovertemplate="batch %{x}<br>p50 %{y:.1f} µs<br>p10-p90 %{customdata[0]:.1f}-%{customdata[1]:.1f} µs"
                "<extra>" + name + "</extra>",
            ), **where)


def add_speedup_traces(fig: Any, sweeps: Sweeps, row: int | None = None) -> None:
    """Add eager/graph p50 ratio per batch size, and a reference line at 1 (no gain)."""
    go = _go()
    items = _as_list(sweeps)
    where = {"row": row, "col": 1} if row else {}
    for i, sweep in enumerate(items):
        x = [b for b in sweep.batch_sizes if sweep.has(b)]
        fig.add_trace(go.Scatter(
            x=x, y=[sweep.speedup(b) for b in x], mode="lines+markers", name="speedup" + _tag(sweep, items),
            line={"color": SERIES[i % len(SERIES)], "dash": DASHES[i % len(DASHES)]},
            hovertemplate="batch %{x}<br>%{y:.2f}x faster with the graph<extra></extra>",
        ), **where)
    fig.add_hline(y=1.0, line={"color": "grey", "dash": "dot"}, annotation_text="1x = no gain",
                  annotation_position="bottom right", **where)


@recorded_banner
def plot_latency(sweeps: Sweeps, gpu_time: bool = False, speedup: bool = True) -> Any:
    """Latency vs batch size, eager and graph (median line, p10-p90 band), with speedup below.

    Args:
        sweeps: one `Sweep`, or several (e.g. the same model on different GPUs) to compare.
        gpu_time: plot CUDA-event (GPU-side) time instead of end-to-end wall time.
        speedup: add the speedup panel under the latency panel.
    """
    from plotly.subplots import make_subplots

    items = _as_list(sweeps)
    batch_sizes = sorted({b for s in items for b in s.batch_sizes})
    rows = 2 if speedup else 1
    fig = make_subplots(rows=rows, cols=1, shared_xaxes=True, vertical_spacing=0.08,
                        row_heights=[0.68, 0.32] if speedup else [1.0])
    add_latency_traces(fig, items, row=1, gpu_time=gpu_time)
    what = "GPU time, CUDA events (log scale)" if gpu_time else "latency per call (log scale)"
    prefix = "gpu_" if gpu_time else ""
    shown = [getattr(p, f"{prefix}{q}_us") for s in items for p in s.points for q in ("p10", "p50", "p90")]
    _log_time_axis(fig, shown, what, row=1)
    if speedup:
        add_speedup_traces(fig, items, row=2)
        fig.update_yaxes(title_text="speedup", row=2, col=1)
    _batch_axis(fig, batch_sizes, row=rows)
    models = ", ".join(sorted({s.model for s in items}))
    fig.update_layout(
        title=f"{models}: how long one call takes, eager vs CUDA graph<br><sup>line = median, band = p10 to p90 "
        "of all timed calls; lower is better</sup>",
        hovermode="x unified", height=560 if speedup else 420, legend={"orientation": "h", "y": -0.15},
    )
    return fig


@recorded_banner
def plot_speedup(sweeps: Sweeps) -> Any:
    """Speedup (eager p50 ÷ graph p50) by batch size, with a line at 1."""
    go = _go()
    items = _as_list(sweeps)
    fig = go.Figure()
    add_speedup_traces(fig, items)
    _batch_axis(fig, sorted({b for s in items for b in s.batch_sizes}))
    fig.update_layout(title="How many times faster one call is with a CUDA graph<br><sup>above 1: the graph wins; "
                      "the gain fades once the GPU's work, not the launching, sets the pace</sup>",
                      yaxis_title="speedup (eager ÷ graph)", height=380)
    return fig


@recorded_banner
def plot_overhead(sweeps: Sweeps) -> Any:
    """Share of each call's time the GPU ran no kernel (launch overhead), eager vs graph, by batch size."""
    go = _go()
    items = _as_list(sweeps)
    fig = go.Figure()
    for sweep in items:
        for mode in MODES:
            points = [p for p in sweep.by_mode(mode) if p.launch_overhead_pct is not None]
            if points:
                fig.add_trace(go.Bar(
                    x=[str(p.batch_size) for p in points], y=[p.launch_overhead_pct for p in points],
                    name=LABELS[mode] + _tag(sweep, items), marker_color=COLORS[mode],
                    customdata=[[p.gpu_busy_us, p.p50_us] for p in points],
                    hovertemplate="batch %{x}: %{y:.0f}% idle<br>kernels ran %{customdata[0]:.1f} µs "
                    "of %{customdata[1]:.1f} µs<extra></extra>",
                ))
    fig.update_layout(
        title="Where the time goes: share of each call the GPU sat idle<br><sup>100% minus (summed kernel time ÷ "
        "end-to-end p50); idle time is launch overhead, Python and synchronisation</sup>",
        xaxis={"title": "batch size", "type": "category"}, yaxis={"title": "GPU idle (% of the call)", "range": [0, 100]},
        barmode="group", height=400,
    )
    return fig


def _short(name: str) -> str:
    if name.startswith(("Memcpy", "Memset")):
        return name.split(" (")[0]
    try:
        from graphlab.graph.kernel_names import short_kernel_name

        return short_kernel_name(name)
    except Exception:  # naming is cosmetic; never fail a figure over it
        return name[:60]


def _trace_rows(fig: Any, trace: Trace, mode: str) -> None:
    go = _go()
    gpu_row = f"{mode}: GPU (idle {duration(trace.idle_us)} of {duration(trace.end_us)})"
    host_row = f"{mode}: host launch calls ({len(trace.launches)})"
    if trace.launches:
        fig.add_trace(go.Bar(
            y=[host_row] * len(trace.launches), x=[s.duration_us for s in trace.launches],
            base=[s.start_us for s in trace.launches], orientation="h", marker_color="#8A8A8A",
            name=f"{mode} launch calls", text=[s.name for s in trace.launches], textposition="none",
            hovertemplate="%{text}<br>%{base:.1f} µs + %{x:.1f} µs<extra>host</extra>", showlegend=False,
        ))
    gaps = trace.gaps()
    if gaps:
        fig.add_trace(go.Bar(
            y=[gpu_row] * len(gaps), x=[b - a for a, b in gaps], base=[a for a, _ in gaps], orientation="h",
            marker={"color": IDLE, "pattern": {"shape": "/"}}, name="GPU idle",
            hovertemplate="idle %{x:.1f} µs<extra></extra>", legendgroup="idle", showlegend=mode == "eager",
        ))
    if trace.kernels:
        fig.add_trace(go.Bar(
            y=[gpu_row] * len(trace.kernels), x=[k.duration_us for k in trace.kernels],
            base=[k.start_us for k in trace.kernels], orientation="h", marker_color=COLORS[mode],
            marker_line={"width": 0}, name=f"{mode} kernels",
            text=[_short(k.name) for k in trace.kernels], textposition="none",
            hovertemplate="%{text}<br>starts %{base:.1f} µs, runs %{x:.1f} µs<extra></extra>",
        ))


def _row_order(fig: Any) -> list[str]:
    """Rows bottom to top: graph GPU, graph host, eager GPU, eager host (eager reads first, on top)."""
    rows = list(dict.fromkeys(t.y[0] for t in fig.data if t.y is not None))
    return sorted(rows, key=lambda r: (r.startswith("eager"), "host" in r))


@recorded_banner
def plot_timeline(timeline: Timeline) -> Any:
    """One eager forward and one graph replay on a shared time axis: kernels as bars, idle gaps grey.

    Time 0 is the moment the host called the model. Rows: the host's launch calls and the GPU's
    kernels for each mode; the GPU rows' labels sum the idle gaps.
    """
    go = _go()
    fig = go.Figure()
    for mode in MODES:
        _trace_rows(fig, timeline.trace(mode), mode)
    e, g = timeline.eager, timeline.graph
    fig.update_layout(
        title=f"{timeline.model}, batch {timeline.batch_size}: what the GPU did during one call<br><sup>eager: "
        f"{len(e.launches)} host launch calls ({e.launches_in_words()}), GPU idle {duration(e.idle_us)}; graph: "
        f"{len(g.launches)} ({g.launches_in_words()}, which runs the whole graph), GPU idle "
        f"{duration(g.idle_us)} (grey hatched: GPU idle)</sup>",
        barmode="overlay", xaxis_title="µs since the host called the model", height=360,
        yaxis={"title": "", "categoryorder": "array", "categoryarray": _row_order(fig)},
        legend={"orientation": "h", "y": -0.25},
    )
    return fig


__all__ = ["COLORS", "add_latency_traces", "add_speedup_traces", "format_us", "log_ticks", "plot_latency",
           "plot_overhead", "plot_speedup", "plot_timeline"]
