"""Figures of the service: the pipeline diagram, the load curves, the batch sizes, the stages, a timeline.

Built from `LoadTest` results only, so they draw the same from a recording on a machine without a GPU
as from a live run. plotly and graphviz (the project's drawing dependencies) are imported inside the
functions; nothing else in graphlab.serve needs them.

Colours stay fixed: eager orange, graphs blue (as in the latency figures), graphs+batching green,
eager+batching purple.

    >>> import graphlab as gl
    >>> result = gl.run_loadtest("gpt")            # recorded without a GPU    # doctest: +SKIP
    >>> gl.plot_load_curves(result)                                            # doctest: +SKIP
    >>> gl.plot_serving_timeline(result, "graphs+batching")                    # doctest: +SKIP
"""
from __future__ import annotations

import html
from typing import Any

from graphlab.errors import GraphvizMissingError
from graphlab.serve.config import ServeConfig
from graphlab.serve.report import LoadTest

COLORS = {"eager": "#E4572E", "graphs": "#2E86AB", "graphs+batching": "#6A994E", "eager+batching": "#8E7DBE"}
STAGE_COLORS = {"pre": "#F2A541", "queue": "#BBBBBB", "gpu": "#2E86AB", "post": "#8E7DBE", "outside": "#DDDDDD"}
STAGE_LABELS = {"pre": "pre-processing", "queue": "queue (incl. batching window)", "gpu": "GPU worker (batch cut -> "
                "scores on host)", "post": "post-processing", "outside": "event loop / transport"}


def _go() -> Any:
    import plotly.graph_objects as go

    return go


def _color(setting: str) -> str:
    return COLORS.get(setting, "#3B1F2B")


# -- the pipeline -------------------------------------------------------------------------------------------
class PipelineDiagram:
    """The service drawn with Graphviz; shows as SVG in a notebook, `.source` is the DOT text."""

    def __init__(self, source: str):
        self.source = source

    def svg(self) -> str:
        import graphviz

        try:
            return graphviz.Source(self.source).pipe(format="svg").decode("utf-8")
        except graphviz.ExecutableNotFound:
            raise GraphvizMissingError() from None

    def _repr_svg_(self) -> str:
        return self.svg()

    def __repr__(self) -> str:
        return f"PipelineDiagram({len(self.source)} characters of DOT; .svg() draws it)"


def serving_diagram(config: ServeConfig | None = None) -> PipelineDiagram:
    """The pipeline as a diagram: which thread does what, where requests wait, where they are refused."""
    cfg = config or ServeConfig()
    buckets = ", ".join(map(str, cfg.bucket_list()))
    worker = ("gl.GraphCache: pad to a bucket, replay, slice" if cfg.uses_graphs else "the model, eagerly")
    batching = (f"merge requests: max {cfg.max_batch_size} rows, max wait {cfg.max_wait_us} µs"
                if cfg.batches_requests else "one request per batch")

    def node(name: str, title: str, lines: list[str], fill: str) -> str:
        body = "".join(f"<BR/><FONT POINT-SIZE='10'>{html.escape(line)}</FONT>" for line in lines)
        return f'  {name} [label=<<B>{html.escape(title)}</B>{body}>, fillcolor="{fill}"];'

    lines = [
        "digraph serving {",
        '  rankdir=LR; bgcolor="transparent"; node [shape=box, style="rounded,filled", fontname="Helvetica"];',
        '  edge [fontname="Helvetica", fontsize=9];',
        node("client", "clients", ["HTTP POST /v1/infer", "(load test: Poisson arrivals)"], "#FFFFFF"),
        node("router", "router", ["Starlette app on uvicorn", "event loop thread", "checks body: 422 / 413"],
             "#EEEEEE"),
        node("pre", "pre-processing", [f"thread pool x{cfg.preprocess_threads}", "tokenize + pad / resize",
                                       "CPU tensors"], "#FBE3C0"),
        node("queue", "dynamic batcher", [f"bounded: {cfg.max_pending} requests in service", batching], "#E6E6E6"),
        node("gpu", "GPU worker", ["own thread + own CUDA stream", worker, f"buckets {buckets}" if cfg.uses_graphs
                                   else "no padding", f"{cfg.max_in_flight} batches in flight"], "#CFE3EE"),
        node("post", "post-processing", [f"thread pool x{cfg.postprocess_threads}", "waits on the batch's event",
                                         "softmax + top-k"], "#E2DDF0"),
        '  client -> router; router -> pre [label="accepted"]; pre -> queue [label="rows"];',
        '  queue -> gpu [label="batch"]; gpu -> post [label="pinned scores\\n+ CUDA event"];',
        '  post -> router [label="answer", constraint=false];',
        '  router -> client [label="422 malformed, 413 too large,\\n503 full / warming up", style=dashed, '
        'color="#BC4749", fontcolor="#BC4749", constraint=false];',
        "}",
    ]
    return PipelineDiagram("\n".join(lines))


# -- load curves --------------------------------------------------------------------------------------------
def plot_load_curves(result: LoadTest, latency: str = "p99") -> Any:
    """Throughput and latency against the offered rate, one line per setting, knees marked.

    Args:
        latency: which percentile to draw next to the p50 ("p90" or "p99").
    """
    from plotly.subplots import make_subplots

    go = _go()
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.14,
                        subplot_titles=("answered req/s", f"latency p50 (solid), {latency} (dashed)"))
    knees = result.knees()
    top = max((p.offered_rps for p in result.points), default=1.0)
    low = min((p.offered_rps for p in result.points), default=1.0)
    # the diagonal over the rates swept, sampled along the log axis (a log axis has no x=0, and two points
    # joined by a straight segment would not be y = x there)
    diagonal = [low * (top / low) ** (i / 40) for i in range(41)] if top > low else [low]
    fig.add_trace(go.Scatter(x=diagonal, y=diagonal, mode="lines", line=dict(color="#AAAAAA", dash="dot"),
                             name="offered = answered", hoverinfo="skip"), row=1, col=1)
    for setting in result.settings():
        points = result.for_setting(setting)
        color = _color(setting)
        xs = [p.offered_rps for p in points]
        fig.add_trace(go.Scatter(x=xs, y=[p.achieved_rps for p in points], mode="lines+markers", name=setting,
                                 legendgroup=setting, line=dict(color=color),
                                 hovertemplate="%{x:g} req/s offered: %{y:g} answered<extra>" + setting + "</extra>"),
                      row=1, col=1)
        for q, dash in (("p50", "solid"), (latency, "dash")):
            fig.add_trace(go.Scatter(x=xs, y=[p.latency_us.get(q, float("nan")) / 1000.0 for p in points],
                                     mode="lines+markers", name=f"{setting} {q}", legendgroup=setting,
                                     showlegend=False, line=dict(color=color, dash=dash),
                                     hovertemplate="%{x:g} req/s: " + q + " %{y:.2f} ms<extra>" + setting + "</extra>"),
                          row=1, col=2)
        if knees.get(setting) is not None:
            knee = next(p for p in points if p.offered_rps == knees[setting])
            fig.add_trace(go.Scatter(x=[knee.offered_rps], y=[knee.achieved_rps], mode="markers",
                                     marker=dict(symbol="star", size=14, color=color), legendgroup=setting,
                                     showlegend=False,
                                     hovertemplate=f"knee of {setting}: %{{x:g}} req/s<extra></extra>"),
                          row=1, col=1)
    fig.update_xaxes(type="log", title_text="offered rate (req/s, log)")
    fig.update_yaxes(type="log", title_text="ms (log)", row=1, col=2)
    fig.update_yaxes(title_text="req/s", row=1, col=1)
    # two short title lines: a narrow page (the docs site) cuts one long line
    fig.update_layout(title=f"{result.model} under open-loop load, per setting<br><sup>{_source(result)}</sup>",
                      height=460, margin=dict(t=100), legend=dict(orientation="h", y=-0.25))
    return fig


def plot_batch_sizes(result: LoadTest, rate_rps: float | None = None) -> Any:
    """The batch sizes the batcher formed, per setting, at `rate_rps` (default: each setting's knee)."""
    go = _go()
    fig = go.Figure()
    for setting in result.settings():
        try:
            sizes = result.batch_sizes(setting, rate_rps)
        except Exception:  # noqa: BLE001 - that setting did not run at this rate: leave it out
            continue
        total = sum(sizes.values()) or 1
        rate = rate_rps if rate_rps is not None else result.knees().get(setting)
        fig.add_trace(go.Bar(x=[str(k) for k in sizes], y=[100.0 * v / total for v in sizes.values()],
                             name=f"{setting} @ {rate:g} req/s" if rate else setting, marker_color=_color(setting),
                             hovertemplate="%{x} rows: %{y:.1f}% of batches<extra>" + setting + "</extra>"))
    fig.update_layout(barmode="group", title=f"batch sizes formed ({_source(result)})",
                      xaxis_title="rows in the batch (before padding)", yaxis_title="% of batches", height=380)
    fig.update_xaxes(type="category", categoryorder="array",
                     categoryarray=[str(n) for n in range(1, 1 + max((max(p.batch_rows, default=1) for p in
                                                                         result.points), default=1))])
    return fig


def plot_stages(result: LoadTest, rate_rps: float) -> Any:
    """Where a request's time went, per setting, at one offered rate: median of each stage, stacked."""
    go = _go()
    fig = go.Figure()
    ran = [s for s in result.settings() if any(p.offered_rps == rate_rps for p in result.for_setting(s))]
    # an overloaded setting's queue (seconds) would squash every other bar: it is named, not drawn
    settings = [s for s in ran if next(p for p in result.for_setting(s) if p.offered_rps == rate_rps).sustained]
    overloaded = [s for s in ran if s not in settings]
    for stage, label in STAGE_LABELS.items():
        values = []
        for s in settings:
            point = next(p for p in result.for_setting(s) if p.offered_rps == rate_rps)
            values.append(point.stages_us.get(stage, {}).get("p50", 0.0) / 1000.0)
        fig.add_trace(go.Bar(y=settings, x=values, name=label, orientation="h", marker_color=STAGE_COLORS[stage],
                             hovertemplate="%{y}: " + label + " %{x:.3f} ms (median)<extra></extra>"))
    fig.update_layout(barmode="stack", legend_traceorder="normal",
                      title=f"where a request's time goes at {rate_rps:g} req/s (medians, {_source(result)})"
                      + (f"<br><sup>not drawn: {', '.join(overloaded)}, overloaded at this rate (its queue is "
                         "in the load curves)</sup>" if overloaded else ""),
                      xaxis_title="ms", height=340, margin=dict(t=90), legend=dict(orientation="h", y=-0.3))
    return fig


def plot_serving_timeline(result: LoadTest, setting: str, rate_rps: float | None = None) -> Any:
    """A window of the run: each request's stages as a bar, and the GPU worker's batches underneath.

    The bottom lanes answer "does the GPU wait on pre-processing?": the worker lane shows when it waited
    for a batch (pink) and launched one (light blue); the GPU lane the batch's CUDA-event time.
    """
    go = _go()
    window = result.timeline(setting, rate_rps)
    rcol = {name: i for i, name in enumerate(window["request_columns"])}
    bcol = {name: i for i, name in enumerate(window["batch_columns"])}
    fig = go.Figure()
    requests = sorted(window["requests"], key=lambda r: (r[rcol["accepted"]] is None, r[rcol["accepted"]] or 0))
    spans = (("pre", "pre_start", "pre_end"), ("queue", "pre_end", "dispatched"), ("gpu", "dispatched", "done"),
             ("post", "done", "post_end"))
    for stage, start, end in spans:
        ys, xs, bases = [], [], []
        for row in requests:
            a, b = row[rcol[start]], row[rcol[end]]
            if a is not None and b is not None:
                ys.append(f"req {row[rcol['request_id']]}")
                bases.append(a)
                xs.append(max(b - a, 0.5))
        fig.add_trace(go.Bar(y=ys, x=xs, base=bases, orientation="h", name=STAGE_LABELS[stage],
                             marker_color=STAGE_COLORS[stage], hovertemplate="%{y}: %{base:.0f} µs +%{x:.0f} µs<extra>"
                             + stage + "</extra>"))
    worker = {"waiting for a batch": ([], [], "#F3C9C3"), "launching (host)": ([], [], "#9EC5DA"),
              "GPU (CUDA events)": ([], [], "#2E86AB")}
    for b in window["batches"]:
        if b[bcol["wait_start"]] is not None and b[bcol["formed"]] is not None:
            worker["waiting for a batch"][0].append(b[bcol["wait_start"]])
            worker["waiting for a batch"][1].append(max(b[bcol["formed"]] - b[bcol["wait_start"]], 0.5))
        if b[bcol["launch_start"]] is not None and b[bcol["launch_end"]] is not None:
            worker["launching (host)"][0].append(b[bcol["launch_start"]])
            worker["launching (host)"][1].append(max(b[bcol["launch_end"]] - b[bcol["launch_start"]], 0.5))
            if b[bcol["gpu_us"]]:
                worker["GPU (CUDA events)"][0].append(b[bcol["launch_start"]])
                worker["GPU (CUDA events)"][1].append(b[bcol["gpu_us"]])
    for lane, (bases, widths, color) in worker.items():
        label = "worker thread" if lane != "GPU (CUDA events)" else "GPU"
        fig.add_trace(go.Bar(y=[label] * len(bases), x=widths, base=bases, orientation="h", name=lane,
                             marker_color=color, hovertemplate=lane + ": %{base:.0f} µs +%{x:.0f} µs<extra></extra>"))
    order = ["GPU", "worker thread", *[f"req {r[rcol['request_id']]}" for r in reversed(requests)]]
    fig.update_yaxes(categoryorder="array", categoryarray=order, tickmode="array",
                     tickvals=["GPU", "worker thread"], title_text="requests (one bar each, by arrival)")
    fig.update_xaxes(range=[0, window["window_us"]])
    fig.update_layout(barmode="overlay", title=f"{setting} at {window['rate_rps']:g} req/s: "
                      f"{window['window_us'] / 1000:g} ms of the run ({_source(result)})",
                      xaxis_title="µs from the window's start", height=520, legend=dict(orientation="h", y=-0.15))
    return fig


def plot_http_capacity(http: Any) -> Any:
    """Throughput against p99 as `hey`'s clients grow (8..256), per server with a sweep (`gl.load_http_serving()`):
    the floor (a bare app) and graphs+batching; the 50 ms p99 bound of the capacity drawn across."""
    go = _go()
    fig = go.Figure()
    by_server: dict[str, list[dict[str, Any]]] = {}
    for row in http.capacity_rows():
        by_server.setdefault(row["server"], []).append(row)
    for server, rows in by_server.items():
        fig.add_trace(go.Scatter(x=[r["req/s"] for r in rows], y=[r["p99 ms"] for r in rows], mode="lines+markers+text",
                                 name=server, text=[f"{r['clients']} clients" for r in rows], textposition="top center",
                                 hovertemplate="%{text}: %{x:,.0f} req/s, p99 %{y:.1f} ms<extra>" + server + "</extra>"))
    limit = http.conditions.get("p99_limit_ms", 50.0)
    fig.add_hline(y=limit, line=dict(color="#AAAAAA", dash="dot"), annotation_text=f"p99 {limit:g} ms")
    fig.update_xaxes(type="log", title_text="answered req/s (hey, closed loop; log)")
    fig.update_yaxes(type="log", title_text="p99 ms (log)")
    fig.update_layout(title=f"{http.model} over HTTP: throughput vs p99 as clients grow<br><sup>{http.source}</sup>",
                      height=440, margin=dict(t=100), legend=dict(orientation="h", y=-0.25))
    return fig


def _source(result: LoadTest) -> str:
    gpu = result.conditions.get("gpu") or result.conditions.get("device") or "?"
    return f"{gpu}, {'recorded' if result.source != 'live' else 'live'}"


__all__ = ["COLORS", "PipelineDiagram", "plot_batch_sizes", "plot_http_capacity", "plot_load_curves", "plot_serving_timeline",
           "plot_stages", "serving_diagram"]
