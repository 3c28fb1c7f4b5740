"""The decode step against its roofline: per-token time of each way by batch size, the memory and compute floors,
and the regions where a step is launch-bound, memory-bound or compute-bound.

    >>> gl.plot_roofline(gl.load(ScaleReport))          # doctest: +SKIP

x: batch size (log); y: time per step (log). The floor is the larger of the memory floor (rising slowly with
the batch: K/V rows) and the compute floor (rising with it); the background is shaded memory-bound where the
memory floor is the larger, compute-bound where the compute floor is. Each way is a line; a point more than
twice a graph of the same step (`graphlab.decode.roofline.LAUNCH_BOUND_RATIO`) is marked launch-bound (an open
marker): there graphs matter; where the ways meet, the kernels set the time and graphs stop mattering.
No torch: built from a `ScaleReport` only; plotly imported inside the function.
"""
from __future__ import annotations

from typing import Any

from graphlab.decode.results import WAYS
from graphlab.present import duration, listing
from graphlab.viz.banner import recorded_banner
from graphlab.viz.plots import format_us, log_ticks

COLORS = {"eager": "#E4572E", "reduce-overhead": "#F2A541", "graphlab": "#2E86AB", "graphlab+compile": "#1B998B"}
WORDS = {"eager": "HF eager", "reduce-overhead": "torch.compile reduce-overhead", "graphlab": "graphlab (eager step)",
         "graphlab+compile": "graphlab + compiled step"}
REGIONS = {"memory": "rgba(46,134,171,0.08)", "compute": "rgba(142,68,173,0.10)"}


@recorded_banner
def plot_roofline(report: Any, title: str | None = None) -> Any:
    """A plotly figure of a `graphlab.decode.scale.ScaleReport` (see the module doc)."""
    import plotly.graph_objects as go

    batches = report.batch_sizes
    fig = go.Figure()
    floors = {b: report.floor(b) for b in batches}
    shown: list[float] = []
    for bound in ("memory", "compute"):  # shaded regions, each over its run of batch sizes (in log x: halfway)
        runs = [b for b in batches if floors[b].bound == bound]
        if not runs:
            continue
        low, high = _edge(batches, runs[0], -1), _edge(batches, runs[-1], +1)
        fig.add_vrect(x0=low, x1=high, fillcolor=REGIONS[bound], line_width=0, layer="below",
                      annotation_text=f"{bound}-bound", annotation_position="top left")
    for what, key, dash in (("memory floor", "memory_us", "dot"), ("compute floor", "compute_us", "dash")):
        ys = [getattr(floors[b], key) for b in batches]
        shown += ys
        fig.add_trace(go.Scatter(x=batches, y=ys, mode="lines", name=what, line={"color": "#555", "dash": dash},
                                 hovertemplate=f"{what} at batch %{{x}}: %{{customdata}}<extra></extra>",
                                 customdata=[duration(y) for y in ys]))
    hf = [floors[b].kernel_bytes_us for b in batches]
    if all(v is not None for v in hf):
        shown += hf
        fig.add_trace(go.Scatter(x=batches, y=hf, mode="lines", name="HF's own reads (every cache position)",
                                 line={"color": "#999", "dash": "dashdot"},
                                 customdata=[duration(y) for y in hf],
                                 hovertemplate="HF's reads at batch %{x}: %{customdata}<extra></extra>"))
    launch_bound = []
    for way in WAYS:
        rows = [r for r in report.rows if r.way == way and r.p50_us]
        if not rows:
            continue
        xs, ys = [r.batch for r in rows], [r.p50_us for r in rows]
        shown += ys
        bounds = [report.bound(r) for r in rows]
        symbols = ["circle-open" if b == "launch-bound" else "circle" for b in bounds]
        launch_bound += [f"{WORDS[way]} at {r.batch}" for r, b in zip(rows, bounds) if b == "launch-bound"]
        text = [f"{WORDS[way]}, batch {r.batch}: {duration(r.p50_us)} per step, {report.ratio(way, r.batch):.3g}x "
                f"the floor, {b.replace('-', ' ')}" for r, b in zip(rows, bounds)]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers", name=WORDS[way],
                                 line={"color": COLORS[way]}, marker={"symbol": symbols, "size": 10},
                                 hovertext=text, hoverinfo="text"))
    ticks = log_ticks(min(shown), max(shown)) if shown else []
    fig.update_yaxes(type="log", title_text="time per decode step (log scale)", tickvals=ticks or None,
                     ticktext=[format_us(t) for t in ticks] or None)
    fig.update_xaxes(type="log", tickvals=batches, ticktext=[str(b) for b in batches],
                     title_text="batch size (sequences per step, log scale)")
    value, which = report.bandwidth
    fig.update_layout(
        title=title or (f"Decode step against its roofline: bandwidth {value / 1e12:.3g} TB/s ({which}), "
                        f"matmul {float(report.machine['mm_flops_per_s']) / 1e12:.3g} TFLOP/s"),
        template="plotly_white", height=560, legend={"orientation": "h", "y": -0.2},
        annotations=[*fig.layout.annotations,
                     {"text": ("Open markers: launch-bound (" + listing(launch_bound) + ")") if launch_bound
                      else "No way is launch-bound here", "xref": "paper", "yref": "paper", "x": 0, "y": 1.06,
                      "showarrow": False, "font": {"size": 11}}])
    return fig


def _edge(batches: list[int], batch: int, side: int) -> float:
    """The x where `batch`'s region ends on `side` (-1 left, +1 right): halfway (in log) to the next batch size,
    or half a step past the last."""
    i = batches.index(batch)
    j = i + side
    if 0 <= j < len(batches):
        return (batch * batches[j]) ** 0.5
    return batch * (2 ** (0.5 * side))


__all__ = ["plot_roofline"]
