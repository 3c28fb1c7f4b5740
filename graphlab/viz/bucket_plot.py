"""The bucket advisor's picture: the latency curve, the chosen buckets, and the padding each size pays.

    >>> gl.plot_buckets(advice)         # doctest: +SKIP

Top panel: graph latency by size (and eager, when known), the chosen buckets as markers, and for each
observed size an arrow-free step from its own size to the bucket that serves it (what padding costs).
Bottom panel: how many requests had each size. No torch: built from a `BucketAdvice` only.
"""
from __future__ import annotations

from typing import Any

from graphlab.cache.advisor import BucketAdvice
from graphlab.present import duration, listing, number, percent
from graphlab.viz.banner import recorded_banner

GRAPH, EAGER, CHOSEN, PAID = "#2E86AB", "#E4572E", "#1B998B", "rgba(142,68,173,0.45)"


@recorded_banner
def plot_buckets(advice: BucketAdvice, title: str | None = None) -> Any:
    """A plotly figure of `advice` (see the module docstring)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    cost, sizes, chosen = advice.cost, advice.sizes, list(advice.buckets)
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.75, 0.25], vertical_spacing=0.06)
    xs = sorted(cost.graph_us)
    fig.add_trace(go.Scatter(x=xs, y=[cost.graph_us[x] for x in xs], mode="lines", name="graph latency",
                             line={"color": GRAPH}), row=1, col=1)
    if cost.eager_us:
        ex = sorted(cost.eager_us)
        fig.add_trace(go.Scatter(x=ex, y=[cost.eager_us[x] for x in ex], mode="lines", name="eager latency",
                                 line={"color": EAGER, "dash": "dot"}), row=1, col=1)
    fig.add_trace(go.Scatter(x=chosen, y=[cost.graph_us[b] for b in chosen], mode="markers",
                             name="chosen buckets", marker={"color": CHOSEN, "size": 11, "symbol": "diamond"}),
                  row=1, col=1)
    paid_x, paid_y, hover = [], [], []
    for s in sizes:
        bucket = next((b for b in chosen if b >= s), None)
        if bucket is None or s not in cost.graph_us:
            continue
        paid_x += [s, bucket, None]
        paid_y += [cost.graph_us[s], cost.graph_us[bucket], None]
        extra = cost.graph_us[bucket] - cost.graph_us[s]
        hover += [f"size {s} runs on bucket {bucket}: {'+' if extra >= 0 else ''}{duration(extra)}"] * 2 + [""]
    fig.add_trace(go.Scatter(x=paid_x, y=paid_y, mode="lines", name="padding paid (size → its bucket)",
                             line={"color": PAID, "width": 4}, hovertext=hover, hoverinfo="text"), row=1, col=1)
    fig.add_trace(go.Bar(x=list(sizes), y=list(sizes.values()), name="requests", marker={"color": "#888"}),
                  row=2, col=1)
    best = advice.chosen
    fig.update_layout(
        title=title or (f"Buckets {listing(chosen) if chosen else 'none'}: predicted mean {duration(best.expected_us)}, "
                        f"p99 {duration(best.p99_us)}, pad waste {percent(100 * best.pad_waste)}"),
        template="plotly_white", height=600, legend={"orientation": "h", "y": -0.15})
    # a log axis: eager can be several times the graphs' latency, and a linear axis flattens the graph curve
    # (the bumps and the padding strokes this figure is about) against the floor
    shown = [*cost.graph_us.values(), *cost.eager_us.values()]
    ticks = [v for v in (10, 20, 50, 100, 150, 200, 300, 500, 700, 1000, 1500, 2000, 3000, 5000, 10_000, 20_000,
                         50_000, 100_000) if min(shown) / 1.2 <= v <= max(shown) * 1.2]
    fig.update_yaxes(title_text="latency (µs, log scale)", type="log", tickvals=ticks,
                     ticktext=[number(v) for v in ticks], row=1, col=1)
    fig.update_yaxes(title_text="requests", row=2, col=1)
    fig.update_xaxes(title_text="request size (batch)", row=2, col=1)
    return fig


__all__ = ["plot_buckets"]
