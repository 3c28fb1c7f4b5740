"""Figures of the service: the pipeline diagram, the load curves, the batch sizes, the stages, a timeline.

Built from `LoadTest` results only, so they draw the same from a recording on a machine without a GPU
as from a live run. plotly and graphviz (the project's drawing dependencies) are imported inside the
functions; nothing else in graphlab.serve needs them.

Colours stay fixed: eager orange, graphs blue (as in the latency figures), graphs+batching green,
eager+batching purple; a second series of one setting in the same figure takes the setting's darker shade.

    >>> import graphlab as gl
    >>> result = gl.run_loadtest("gpt")            # recorded without a GPU    # doctest: +SKIP
    >>> gl.plot_load_curves(result)                                            # doctest: +SKIP
    >>> gl.plot_serving_timeline(result, "graphs+batching")                    # doctest: +SKIP
"""
from __future__ import annotations

import html
import math
import re
from typing import Any

from graphlab import present
from graphlab.errors import GraphvizMissingError
from graphlab.serve.config import INFER_PATH, ServeConfig
from graphlab.loadtest.report import LoadTest

COLORS = {"eager": "#E4572E", "graphs": "#2E86AB", "graphs+batching": "#6A994E", "eager+batching": "#8E7DBE"}
#: a second shade per setting, for a second series of the same setting in one figure (in process beside over HTTP)
SECOND_COLORS = {"eager": "#9C2C13", "graphs": "#17476B", "graphs+batching": "#2F5233", "eager+batching": "#4F3F8A"}
#: colours for series of no known setting, in order
OTHER_COLORS = ("#3B1F2B", "#D4A017", "#00A6A6", "#B5838D", "#606C38", "#5E548E")
#: the suffixes `HttpServing.beside_in_process` gives its series
SUFFIXES = (" over HTTP", " in process")
STAGE_COLORS = {"pre": "#F2A541", "queue": "#BBBBBB", "gpu": "#2E86AB", "post": "#8E7DBE", "outside": "#DDDDDD"}
STAGE_LABELS = {"pre": "pre-processing", "queue": "queue (incl. batching window)", "gpu": "GPU worker (batch cut -> "
                "scores on host)", "post": "post-processing", "outside": "event loop / transport"}
#: the worker lanes of the timeline: waiting for a batch, launching it, the batch's device time
LANE_COLORS = {"wait": "#F3C9C3", "launch": "#9EC5DA", "device": "#0B3C5D"}


def _go() -> Any:
    import plotly.graph_objects as go

    return go


def _color(setting: str) -> str:
    return COLORS.get(setting, OTHER_COLORS[0])


def _base(setting: str) -> str:
    for suffix in SUFFIXES:
        if setting.endswith(suffix):
            return setting[: -len(suffix)]
    return setting


def series_colors(settings: list[str]) -> dict[str, str]:
    """One distinct colour per series: the setting's own colour, its second shade for a second series of the same
    setting ("graphs+batching in process" beside "graphs+batching over HTTP"), then colours of no setting."""
    out: dict[str, str] = {}
    spare = [c for c in OTHER_COLORS]
    for setting in settings:
        base = _base(setting)
        for colour in (COLORS.get(base), SECOND_COLORS.get(base), *spare):
            if colour and colour not in out.values():
                out[setting] = colour
                if colour in spare:
                    spare.remove(colour)
                break
    return out


def _stage_labels(result: LoadTest) -> dict[str, str]:
    """The stages as a legend names them; on a CPU the worker's stage is the model, eager (no GPU)."""
    if not result.on_cpu:
        return dict(STAGE_LABELS)
    return {**STAGE_LABELS, "gpu": "worker (the model, eager on the CPU)"}


#: mantissas of a log axis's ticks, sparsest first
_LOG_STEPS = ((1.0,), (1.0, 3.0), (1.0, 2.0, 5.0), (1.0, 2.0, 3.0, 5.0))


def log_axis_ticks(low: float, high: float, most: int = 5) -> list[float]:
    """Ticks for a log axis from `low` to `high`: the sparsest of 1-10-100, 1-3-10, 1-2-5 and 1-2-3-5 steps that
    puts at least three ticks in the range without passing `most` (a narrow panel has room for a few labels only);
    failing that, the sparsest with two.

        >>> log_axis_ticks(250, 3000), log_axis_ticks(100, 8000), log_axis_ticks(1.75, 1715)
        ([300.0, 1000.0, 3000.0], [100.0, 300.0, 1000.0, 3000.0], [10.0, 100.0, 1000.0])
    """
    if not (low > 0 and high > 0):
        return []
    low, high = min(low, high), max(low, high)
    decades = range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1)
    found = []
    for steps in _LOG_STEPS:
        ticks = [round(m * 10.0**e, 9) for e in decades for m in steps]
        ticks = [t for t in ticks if low * (1 - 1e-9) <= t <= high * (1 + 1e-9)]
        if len(ticks) > most:
            break
        found.append(ticks)
        if len(ticks) >= 3:
            return ticks
    two = [t for t in found if len(t) >= 2]
    return two[0] if two else (found[-1] if found else [])


def _log_axis(values: list[float], label: Any, most: int = 5) -> dict[str, Any]:
    """A log axis's ticks over `values` (`log_axis_ticks`) as numbers with their unit, not plotly's own
    "2 3 4 5 ... 1000 2" minor labels; `label(v)` writes one tick."""
    finite = [v for v in values if v and v > 0 and v == v]
    ticks = log_axis_ticks(min(finite), max(finite), most) if finite else []
    return dict(type="log", tickmode="array", tickvals=ticks, ticktext=[label(t) for t in ticks]) if ticks \
        else dict(type="log")


def _rate(value: float) -> str:
    return present.number(value)


def _ms(value: float) -> str:
    return present.duration(value * 1000.0).replace(".00 ", " ").replace(".0 ", " ")


def _legend_below(fig: Any, below_px: float = 70.0) -> None:
    """A horizontal legend under the plot, its top `below_px` under the plotting area (clear of the x tick labels
    and the axis title), so no legend entry lies on a label."""
    layout = fig.layout
    height = layout.height or 450
    margin = layout.margin
    area = height - (margin.t if margin.t is not None else 100) - (margin.b if margin.b is not None else 80)
    fig.update_layout(legend=dict(orientation="h", x=0, xanchor="left", y=-below_px / max(area, 100.0),
                                  yanchor="top"))


# -- the pipeline -------------------------------------------------------------------------------------------
class PipelineDiagram:
    """The service drawn with Graphviz; shows as SVG in a notebook, `.source` is the DOT text."""

    def __init__(self, source: str):
        self.source = source

    def svg(self) -> str:
        import graphviz

        try:
            svg = graphviz.Source(self.source).pipe(format="svg").decode("utf-8")
        except graphviz.ExecutableNotFound:
            raise GraphvizMissingError() from None
        # as wide as the page at most (its viewBox keeps the proportions): six boxes in a row are wider than a
        # notebook's column, and shown at their size in pt the last ones were cut off
        return re.sub(r"<svg ", '<svg style="max-width:100%;height:auto" ', svg, count=1)

    def _repr_svg_(self) -> str:
        return self.svg()

    def __repr__(self) -> str:
        return f"PipelineDiagram({len(self.source)} characters of DOT; .svg() draws it)"


def serving_diagram(config: ServeConfig | None = None) -> PipelineDiagram:
    """The pipeline as a diagram: which thread does what, where requests wait, where they are refused."""
    cfg = config or ServeConfig()
    buckets = ", ".join(map(str, cfg.bucket_list()))
    worker = (["gl.GraphCache:", "pad to a bucket, replay, slice"] if cfg.uses_graphs else ["the model, eagerly"])
    batching = ([f"merges requests: max {cfg.max_batch_size} rows,", f"max wait {cfg.max_wait_us} µs"]
                if cfg.batches_requests else ["one request per batch"])

    def node(name: str, title: str, lines: list[str], fill: str) -> str:
        body = "".join(f"<BR/><FONT POINT-SIZE='10'>{html.escape(line)}</FONT>" for line in lines)
        return f'  {name} [label=<<B>{html.escape(title)}</B>{body}>, fillcolor="{fill}"];'

    lines = [
        "digraph serving {",
        '  rankdir=TB; nodesep=0.3; ranksep=0.5; bgcolor="transparent";',
        '  node [shape=box, style="rounded,filled", fontname="Helvetica"];',
        '  edge [fontname="Helvetica", fontsize=9];',
        node("client", "clients", [f"HTTP POST {INFER_PATH}", "(load test: Poisson arrivals)"], "#FFFFFF"),
        node("router", "router", ["Starlette app on uvicorn", "event loop thread", "checks body: 422 / 413"],
             "#EEEEEE"),
        node("pre", "pre-processing", [f"thread pool x{cfg.preprocess_threads}", "tokenize + pad / resize",
                                       "CPU tensors"], "#FBE3C0"),
        node("queue", "dynamic batcher", [f"bounded: {cfg.max_pending} requests inside", *batching], "#E6E6E6"),
        node("gpu", "GPU worker", ["own thread + own CUDA stream", *worker, f"buckets {buckets}" if cfg.uses_graphs
                                   else "no padding", f"{cfg.max_in_flight} batches in flight"], "#CFE3EE"),
        node("post", "post-processing", [f"thread pool x{cfg.postprocess_threads}", "waits on the batch's event",
                                         "softmax + top-k"], "#E2DDF0"),
        # two rows of three, one row of six being twice a page's width: the way in from left to right, then down
        # into the batcher and back from right to left through the GPU (an edge written backwards with dir=back
        # keeps its arrow the right way round and puts its head on the left)
        "  { rank=same; client; router; pre; }",
        "  { rank=same; post; gpu; queue; }",
        '  client -> router; router -> pre [label="accepted"]; pre -> queue [label="rows"];',
        '  gpu -> queue [label="batch", dir=back]; post -> gpu [label="scores +\\nCUDA event", dir=back];',
        '  post -> router [label="answer", constraint=false];',
        '  router -> client [label="refused: 422 malformed,\\n413 too large, 503 full", style=dashed, '
        'color="#BC4749", fontcolor="#BC4749", constraint=false];',
        "}",
    ]
    return PipelineDiagram("\n".join(lines))


# -- load curves --------------------------------------------------------------------------------------------
def plot_load_curves(result: LoadTest, latency: str = "p99") -> Any:
    """Throughput and latency against the offered rate, one line per setting, knees marked.

    Every series has a colour and a name of its own (a second series of one setting, such as "graphs+batching in
    process" beside "graphs+batching over HTTP", gets the setting's second shade and square markers).

    Args:
        latency: which percentile to draw next to the p50 ("p90" or "p99").
    """
    from plotly.subplots import make_subplots

    go = _go()
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.14,
                        subplot_titles=("answered vs offered", f"latency: p50 solid, {latency} dashed"))
    knees = result.knees()
    top = max((p.offered_rps for p in result.points), default=1.0)
    low = min((p.offered_rps for p in result.points), default=1.0)
    # the diagonal over the rates swept, sampled along the log axis (a log axis has no x=0, and two points
    # joined by a straight segment would not be y = x there)
    diagonal = [low * (top / low) ** (i / 40) for i in range(41)] if top > low else [low]
    fig.add_trace(go.Scatter(x=diagonal, y=diagonal, mode="lines", line=dict(color="#AAAAAA", dash="dot"),
                             name="answered = offered", hoverinfo="skip"), row=1, col=1)
    colors = series_colors(result.settings())
    for setting in result.settings():
        points = result.for_setting(setting)
        color = colors[setting]
        name = result.label(setting)
        symbol = "square" if setting.endswith(" in process") else "circle"
        xs = [p.offered_rps for p in points]
        fig.add_trace(go.Scatter(x=xs, y=[p.achieved_rps for p in points], mode="lines+markers", name=name,
                                 legendgroup=setting, line=dict(color=color), marker=dict(symbol=symbol),
                                 hovertemplate="%{x:,.0f} req/s offered: %{y:,.0f} answered<extra>" + name
                                 + "</extra>"),
                      row=1, col=1)
        for q, dash in (("p50", "solid"), (latency, "dash")):
            fig.add_trace(go.Scatter(x=xs, y=[p.latency_us.get(q, float("nan")) / 1000.0 for p in points],
                                     mode="lines+markers", name=f"{name}, {q}", legendgroup=setting,
                                     showlegend=False, line=dict(color=color, dash=dash), marker=dict(symbol=symbol),
                                     hovertemplate="%{x:,.0f} req/s: " + q + " %{y:.3g} ms<extra>" + name
                                     + "</extra>"),
                          row=1, col=2)
        if knees.get(setting) is not None:
            knee = next(p for p in points if p.offered_rps == knees[setting])
            fig.add_trace(go.Scatter(x=[knee.offered_rps], y=[knee.achieved_rps], mode="markers",
                                     marker=dict(symbol="star", size=14, color=color), legendgroup=setting,
                                     showlegend=False, name=f"knee of {name}",
                                     hovertemplate=f"knee of {name}: %{{x:,.0f}} req/s<extra></extra>"),
                          row=1, col=1)
    rates = [p.offered_rps for p in result.points]
    latencies = [p.latency_us.get(q, 0.0) / 1000.0 for p in result.points for q in ("p50", latency)]
    fig.update_xaxes(title_text="offered rate (req/s, log)", **_log_axis(rates, _rate))
    fig.update_yaxes(title_text="latency (ms, log)", row=1, col=2, **_log_axis(latencies, _ms))
    fig.update_yaxes(title_text="answered (req/s)", row=1, col=1)
    # two short title lines: a narrow page (the docs site) cuts one long line
    fig.update_layout(title=f"{result.model} under open-loop load: a star marks each setting's knee<br>"
                            f"<sup>{_source(result)}</sup>",
                      height=480, margin=dict(t=100, b=80))
    _legend_below(fig)
    return fig


def plot_batch_sizes(result: LoadTest, rate_rps: float | None = None) -> Any:
    """The batch sizes the batcher formed, per setting, at `rate_rps` (default: each setting's knee)."""
    go = _go()
    fig = go.Figure()
    colors = series_colors(result.settings())
    for setting in result.settings():
        try:
            sizes = result.batch_sizes(setting, rate_rps)
        except Exception:  # noqa: BLE001 - that setting did not run at this rate: leave it out
            continue
        total = sum(sizes.values()) or 1
        rate = rate_rps if rate_rps is not None else result.knees().get(setting)
        name = result.label(setting)
        label = f"{name} at {rate:,.0f} req/s" if rate else name
        fig.add_trace(go.Bar(x=[str(k) for k in sizes], y=[100.0 * v / total for v in sizes.values()],
                             name=label, marker_color=colors[setting],
                             hovertemplate="%{x} rows: %{y:.2g}% of batches<extra>" + label + "</extra>"))
    fig.update_layout(barmode="group", title=f"batch sizes formed, each setting at its knee<br><sup>{_source(result)}"
                      "</sup>" if rate_rps is None else f"batch sizes formed at {rate_rps:,.0f} req/s<br><sup>"
                      f"{_source(result)}</sup>",
                      xaxis_title="rows in the batch (before padding)", yaxis_title="share of batches (%)",
                      height=400, margin=dict(t=90, b=80))
    fig.update_xaxes(type="category", categoryorder="array",
                     categoryarray=[str(n) for n in range(1, 1 + max((max(p.batch_rows, default=1) for p in
                                                                         result.points), default=1))])
    # y ticks from the first step up: a "0" at the corner would touch the first category's label
    top = max((max(t.y, default=0.0) for t in fig.data), default=0.0)
    step = next((s for s in (5, 10, 20, 25, 50) if top / s <= 5), 50)
    fig.update_yaxes(tickmode="array", tickvals=[step * i for i in range(1, int(top // step) + 2)], rangemode="tozero")
    _legend_below(fig)
    return fig


def plot_stages(result: LoadTest, rate_rps: float) -> Any:
    """Where a request's time went, per setting, at one offered rate: median of each stage, stacked."""
    go = _go()
    fig = go.Figure()
    ran = [s for s in result.settings() if any(p.offered_rps == rate_rps for p in result.for_setting(s))]
    # an overloaded setting's queue (seconds) would squash every other bar: it is named, not drawn
    settings = [s for s in ran if next(p for p in result.for_setting(s) if p.offered_rps == rate_rps).sustained]
    overloaded = [s for s in ran if s not in settings]
    for stage, label in _stage_labels(result).items():
        values = []
        for s in settings:
            point = next(p for p in result.for_setting(s) if p.offered_rps == rate_rps)
            values.append(point.stages_us.get(stage, {}).get("p50", 0.0) / 1000.0)
        fig.add_trace(go.Bar(y=[result.label(s) for s in settings], x=values, name=label, orientation="h",
                             marker_color=STAGE_COLORS[stage],
                             hovertemplate="%{y}: " + label + " %{x:.3g} ms (median)<extra></extra>"))
    named = ", ".join(result.label(s) for s in overloaded)
    fig.update_layout(barmode="stack", legend_traceorder="normal",
                      title=f"where a request's time goes at {rate_rps:,.0f} req/s (medians)<br>"
                      + (f"<sup>not drawn: {named}, overloaded at this rate (its queue is in the load curves)</sup><br>"
                         if overloaded else "") + f"<sup>{_source(result)}</sup>",
                      xaxis_title="median time per request (ms)", height=400,
                      margin=dict(t=110 if overloaded else 90, b=80))
    _legend_below(fig)
    return fig


def _clip(start: float | None, end: float | None, window_us: float) -> tuple[float, float] | None:
    """A bar from `start` to `end` cut to the window [0, window_us]; None when nothing of it is inside."""
    if start is None or end is None:
        return None
    a, b = max(float(start), 0.0), min(float(end), window_us)
    if b <= a:
        return None
    return a, b


def plot_serving_timeline(result: LoadTest, setting: str, rate_rps: float | None = None) -> Any:
    """A window of the run: each request's stages as a bar, and the worker's batches underneath.

    The bottom lanes answer "does the GPU wait on pre-processing?": the worker lane shows when it waited
    for a batch (pink) and launched one (light blue); the GPU lane the batch's CUDA-event time. Bars that
    began before the window or end after it are cut at its edges.
    """
    go = _go()
    window = result.timeline(setting, rate_rps)
    width = float(window["window_us"])
    rcol = {name: i for i, name in enumerate(window["request_columns"])}
    bcol = {name: i for i, name in enumerate(window["batch_columns"])}
    fig = go.Figure()
    requests = sorted(window["requests"], key=lambda r: (r[rcol["accepted"]] is None, r[rcol["accepted"]] or 0))
    spans = (("pre", "pre_start", "pre_end"), ("queue", "pre_end", "dispatched"), ("gpu", "dispatched", "done"),
             ("post", "done", "post_end"))
    labels = _stage_labels(result)
    shown: list[Any] = []
    for stage, start, end in spans:
        ys, xs, bases = [], [], []
        for row in requests:
            bar = _clip(row[rcol[start]], row[rcol[end]], width)
            if bar is not None:
                ys.append(f"request {row[rcol['request_id']]}")
                bases.append(bar[0] / 1000.0)  # drawn in ms
                xs.append(max(bar[1] - bar[0], 0.5) / 1000.0)
                shown.append(row[rcol["request_id"]])
        fig.add_trace(go.Bar(y=ys, x=xs, base=bases, orientation="h", name=labels[stage],
                             marker_color=STAGE_COLORS[stage], hovertemplate="%{y}: from %{base:.3g} ms for "
                             "%{x:.3g} ms<extra>" + labels[stage] + "</extra>"))
    device_lane = "model (CPU)" if result.on_cpu else "GPU (CUDA events)"
    worker = {"waiting for a batch": ([], [], LANE_COLORS["wait"]), "launching (host)": ([], [], LANE_COLORS["launch"]),
              device_lane: ([], [], LANE_COLORS["device"])}

    def add(lane: str, start: float | None, end: float | None) -> None:
        bar = _clip(start, end, width)
        if bar is not None:
            worker[lane][0].append(bar[0] / 1000.0)
            worker[lane][1].append(max(bar[1] - bar[0], 0.5) / 1000.0)

    for b in window["batches"]:
        if b[bcol["formed"]] is not None:
            add("waiting for a batch", b[bcol["wait_start"]], b[bcol["formed"]])
        launch = b[bcol["launch_start"]]
        add("launching (host)", launch, b[bcol["launch_end"]])
        if launch is not None and b[bcol["gpu_us"]]:
            add(device_lane, launch, launch + b[bcol["gpu_us"]])
    device_row = "model" if result.on_cpu else "GPU"
    for lane, (bases, widths, color) in worker.items():
        row = device_row if lane == device_lane else "worker thread"
        fig.add_trace(go.Bar(y=[row] * len(bases), x=widths, base=bases, orientation="h", name=lane,
                             marker_color=color, hovertemplate=lane + ": from %{base:.3g} ms for %{x:.3g} ms"
                             "<extra></extra>"))
    kept = list(dict.fromkeys(shown))
    order = [device_row, "worker thread", *[f"request {r}" for r in reversed(kept)]]
    fig.update_yaxes(categoryorder="array", categoryarray=order, tickmode="array",
                     tickvals=[device_row, "worker thread"], title_text="requests (one bar each, by arrival)")
    fig.update_xaxes(range=[0, width / 1000.0])
    fig.update_layout(barmode="overlay", title=f"{result.label(setting)} at {window['rate_rps']:,.0f} req/s: "
                      f"{present.duration(width)} of the run<br><sup>{_source(result)}</sup>",
                      xaxis_title="time from the window's start (ms)", height=540, margin=dict(t=90, b=80))
    _legend_below(fig)
    return fig


def plot_http_capacity(http: Any) -> Any:
    """Throughput against p99 as `hey`'s clients grow (8..256), per server with a sweep (`gl.load(gl.HttpServing)`):
    the floor (a bare app) and graphs+batching; the p99 bound of the capacity drawn across.

    The client count of each point is in its size (more clients, a larger marker) and in its hover text, not
    printed beside it: points of one sweep lie close together and their labels would cover each other."""
    import math

    go = _go()
    fig = go.Figure()
    by_server: dict[str, list[dict[str, Any]]] = {}
    for row in http.capacity_rows():
        by_server.setdefault(row["server"], []).append(row)
    clients = sorted({r["clients"] for rows in by_server.values() for r in rows})
    low, high = (clients[0], clients[-1]) if clients else (1, 1)

    def size(n: int) -> float:  # 8 px for the fewest clients, 22 px for the most, on a log scale
        return 8.0 if high <= low else 8.0 + 14.0 * math.log(n / low) / math.log(high / low)

    palette = ("#555555", COLORS["graphs+batching"], *OTHER_COLORS[1:])
    for (server, rows), colour in zip(by_server.items(), palette):
        fig.add_trace(go.Scatter(x=[r["req/s"] for r in rows], y=[r["p99 ms"] for r in rows], mode="lines+markers",
                                 name=server, line=dict(color=colour),
                                 marker=dict(size=[size(r["clients"]) for r in rows], color=colour),
                                 customdata=[r["clients"] for r in rows],
                                 hovertemplate="%{customdata} clients: %{x:,.0f} req/s, p99 %{y:.3g} ms<extra>"
                                 + server + "</extra>"))
    limit = http.conditions.get("p99_limit_ms", 50.0)
    fig.add_hline(y=limit, line=dict(color="#AAAAAA", dash="dot"))
    # on a log axis an annotation's y is the log10 of the value (y=50 would sit at 10^50)
    fig.add_annotation(x=0, xref="paper", xanchor="left", y=math.log10(limit), yref="y", yanchor="bottom",
                       text=f"p99 bound: {present.number(limit)} ms", showarrow=False, font=dict(color="#777777"))
    rows = http.capacity_rows()
    fig.update_xaxes(title_text="answered (req/s, log; hey, closed loop)",
                     **_log_axis([r["req/s"] for r in rows], _rate))
    fig.update_yaxes(title_text="p99 latency (ms, log)", **_log_axis([r["p99 ms"] for r in rows] + [limit], _ms))
    counts = present.listing([present.count(c) for c in clients])
    fig.update_layout(title=f"{http.model} over HTTP: throughput vs p99 as clients grow ({counts}; the larger the "
                            f"marker, the more clients)<br><sup>{http.source}</sup>",
                      height=460, margin=dict(t=100, b=80))
    _legend_below(fig)
    return fig


def _source(result: LoadTest) -> str:
    """Where the numbers come from: the recording's banner ("Recorded on <GPU> ... <date> by ...") or "measured
    here on ..."."""
    return result.where()


__all__ = ["COLORS", "PipelineDiagram", "plot_batch_sizes", "plot_http_capacity", "plot_load_curves",
           "plot_serving_timeline", "plot_stages", "series_colors", "serving_diagram"]
