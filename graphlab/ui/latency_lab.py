"""The latency lab: eager vs CUDA-graph latency by batch size, live on a GPU or from recordings.

ipywidgets + a plotly FigureWidget (needs anywidget). Everything it draws comes from
`graphlab.viz.plots`, everything it measures from `graphlab.timing.sweep.sweep`; whether it measures or
shows recordings is what `gl.set_mode` chose (`graphlab.mode.pick`).

    >>> import graphlab as gl
    >>> lab = gl.latency_lab()              # pick a zoo model, batch sizes, repetitions; press Run
    >>> lab                                 # doctest: +SKIP
    >>> lab.sweeps[-1].table()              # doctest: +SKIP

Live, Run measures; the progress bar advances per batch size and mode (eager at every batch
size first, then the graphs) while the figure and table fill in. Recorded, the lab shows the
recordings (with a banner naming the GPU, driver, torch and date) and follows the model and GPU
choices as they change; several GPUs' recordings of the same model can be compared in one figure.
"""
from __future__ import annotations

import html
import uuid
from pathlib import Path
from typing import Any, Callable

from graphlab import present
from graphlab.errors import BadInputError, GraphlabError, RecordingError
from graphlab.mode import pick
from graphlab.recordings import list_recordings
from graphlab.timing.results import LatencyPoint, Sweep
from graphlab.viz.plots import plot_latency
from graphlab.zoo import DEFAULT_BATCH_SIZES, ZOO, get_model

REPETITION_CHOICES = (("auto", 0), ("100", 100), ("300", 300), ("1000", 1000))


def parse_batch_sizes(text: str) -> list[int]:
    """ "1, 2, 8" -> [1, 2, 8]; BadInputError naming the bad entry otherwise."""
    out: list[int] = []
    for part in text.replace(";", ",").replace(" ", ",").split(","):
        if not part:
            continue
        if not part.isdigit() or int(part) < 1:
            raise BadInputError(f"batch sizes must be whole numbers >= 1 separated by commas; {part!r} is not")
        out.append(int(part))
    if not out:
        raise BadInputError("give at least one batch size, e.g. 1, 8, 64")
    return out


def recorded_sweeps(root: str | Path | None = None) -> dict[str, dict[str, tuple[Sweep, Any]]]:
    """{model: {gpu folder: (Sweep, Recording)}} for every recording that holds a sweep."""
    found: dict[str, dict[str, tuple[Sweep, Any]]] = {}
    for rec in list_recordings(root):
        key = next((k for k in rec.result_names if k.startswith(("sweep", "latency"))), None)
        if key is None:
            continue
        sweep = Sweep.from_dict(rec.results(key))
        sweep = Sweep(rec.name, sweep.points, {**rec.provenance, **sweep.conditions}, sweep.weight_update)
        found.setdefault(rec.name, {})[rec.path.parent.name] = (sweep, rec)
    return found


def _pair_range(sweep: Sweep, batch_size: int) -> str | None:
    """"2.77 to 3.59": the middle 80% (p10 to p90) of the paired speedups at one batch size; None without pairs."""
    if not sweep.is_paired(batch_size):
        return None
    pairs = sweep.paired(batch_size)
    return f"{present.number(pairs.p10)} to {present.number(pairs.p90)}"


def _capture_ms(point: Any) -> float | None:
    """The capture time in ms, to 0.1 ms (what a capture's run-to-run noise leaves of it; "1.9", as graphlab quotes a
    capture everywhere)."""
    if not point.capture_ms:
        return None
    return round(point.capture_ms, 1) if point.capture_ms >= 0.1 else point.capture_ms


def latency_table(sweeps: list[Sweep]) -> present.Table | None:
    """What the lab's table shows, as a `graphlab.present.Table`: per batch size, eager and graph p50, the speedup and
    how much the paired runs agree on it, the kernels one replay launches and the capture time. The GPU is a column
    only when several GPUs are compared. None when nothing was measured yet."""
    gpus = {str(s.conditions.get("gpu", "")) for s in sweeps if s.points}
    rows, paired, cold = [], 0, False
    for s in sweeps:
        for b in s.batch_sizes:
            if not s.has(b):
                continue
            e, g = s.point(b, "eager"), s.point(b, "graph")
            paired += s.is_paired(b)
            cold = cold or getattr(g, "capture_state", None) == "cold"
            rows.append({"gpu": str(s.conditions.get("gpu", "")) or None, "batch": b, "eager_p50_us": e.p50_us,
                         "graph_p50_us": g.p50_us, "speedup": s.speedup(b), "pairs": _pair_range(s, b),
                         "kernels": g.kernel_count, "capture_ms": _capture_ms(g)})
    if not rows:
        return None
    columns = [present.Column("gpu", "GPU", kind="text")] if len(gpus) > 1 else []
    columns += [
        present.Column("batch", "batch", kind="count"),
        present.Column("eager_p50_us", "eager p50", kind="time"),
        present.Column("graph_p50_us", "graph p50", kind="time"),
        present.Column("speedup", "speedup", kind="ratio"),
        present.Column("pairs", "p10 to p90 of pairs (x)", kind="text",
                       missing="timed without paired blocks (an older recording): no spread of the speedup"),
        present.Column("kernels", "kernels per replay", kind="count", missing="not counted"),
        present.Column("capture_ms", "capture", kind="number", unit="ms", missing="not measured"),
    ]
    notes = ["p50: the median call, end to end. speedup: eager ÷ graph"
             + (", the median over pairs of neighbouring timed blocks (one eager, one graph: each pair saw the same "
                "state of the machine); p10 to p90 of pairs: the middle 80% of those pairs' speedups. Where even "
                "p10 is above 1, the graph was faster in nearly every pair."
                if paired else " p50.")
             + " kernels per replay: the launches one graph replay makes at once."]
    if cold:
        notes.append("A capture marked cold was its process's first: one-time set-up included.")
    return present.Table(rows, columns, index="gpu" if len(gpus) > 1 else "batch",
                         title="eager vs CUDA graph, per call", notes=notes)


def _table_html(sweeps: list[Sweep]) -> str:
    table = latency_table(sweeps)
    if table is None:
        return "<i>No measurements yet: press Run.</i>"
    # one line per row: a narrow widget must scroll the table, not wrap "eager p50 (µs)" or a GPU's name
    return f"<div class='graphlab-latency' style='white-space:nowrap;overflow-x:auto'>{table._repr_html_()}</div>"


def _banner_html(live: bool, sweeps: list[Sweep]) -> str:
    if live and not any("driver" in s.conditions and "command" in s.conditions for s in sweeps):
        gpu = sweeps[0].conditions.get("gpu") if sweeps else None
        return f"<b>Live</b>: measuring on this machine's GPU{f' ({html.escape(str(gpu))})' if gpu else ''}."
    if not sweeps:
        return "<b>Recorded mode</b> (no GPU here): choose a model to see its recording."
    lines = []
    for s in sweeps:
        c = s.conditions
        lines.append(f"{html.escape(s.model)} on <b>{html.escape(str(c.get('gpu', '?')))}</b>, driver "
                     f"{html.escape(str(c.get('driver', '?')))}, torch {html.escape(str(c.get('torch', '?')))}, "
                     f"recorded {html.escape(str(c.get('date', '?'))[:10])}")
    return "<b>Recorded</b> (no GPU here, these numbers were measured earlier):<br>" + "<br>".join(lines)


def _figure_html(fig: Any) -> str:
    """HTML of a static figure that never carries plotly.js itself (4.6 MB: a saved notebook held one copy per lab
    output). Where plotly's active renderers make HTML (`graphlab tour` and the docs use "plotly_mimetype+notebook",
    which inlines plotly.js once per page), that HTML is used; otherwise the figure is drawn by the page's own
    plotly.js if it has one (`window.Plotly`: the tour's and the docs' pages), and without one it says where to see
    the figure. plotly's `_build_mime_bundle` is private: feature-detected."""
    import plotly.io as pio

    build = getattr(pio.renderers, "_build_mime_bundle", None)
    if build is not None:
        try:
            html_text = build(fig.to_dict()).get("text/html")
        except Exception:  # a renderer that cannot run here
            html_text = None
        if html_text:
            return str(html_text)
    return page_plotly_figure(fig.to_json(), "the live widget draws this figure; in a page without plotly.js, "
                              "lab.figure() shows it")


def page_plotly_figure(figure_json: str, missing: str) -> str:
    """A figure drawn by the page's plotly.js (`window.Plotly`), without a copy of its own; `missing` is said where the
    page has none. The figure's JSON sits in a script of its own type, read when the page draws it."""
    div = f"graphlab-figure-{uuid.uuid4().hex}"
    data = figure_json.replace("</", "<\\/")  # the JSON cannot end the script early
    return (f'<div id="{div}" class="graphlab-page-figure"><p style="color:#555;font-size:90%">'
            f"{html.escape(missing)}</p></div>"
            f'<script type="application/json" id="{div}-data">{data}</script>'
            '<script type="text/javascript">(function () {'
            f'var el = document.getElementById("{div}"), data = document.getElementById("{div}-data");'
            "if (!el || !data || !window.Plotly) return;"
            "var fig = JSON.parse(data.textContent); el.innerHTML = \"\";"
            "window.Plotly.newPlot(el, fig.data, fig.layout, {responsive: true});"
            "})();</script>")


class LatencyLab:
    """The widget behind `latency_lab()`. Attributes worth reading: `sweeps` (what is shown),
    `widget` (the ipywidgets VBox), `figure_widget` (the plotly FigureWidget)."""

    def __init__(self, model: Any = None, *, make_inputs: Callable[..., Any] | None = None,
                 batch_sizes: Any = DEFAULT_BATCH_SIZES, repetitions: int | None = None, runs: int = 3,
                 live: bool | None = None, recordings_root: str | Path | None = None,
                 runner: Callable[..., Sweep] | None = None):
        import ipywidgets as w
        import plotly.graph_objects as go

        self.live = pick(live=True, recorded=False) if live is None else live
        self.sweeps: list[Sweep] = []
        self._custom = None if model is None or isinstance(model, str) else (model, make_inputs)
        self._runner = runner
        self._recorded = {} if self.live else recorded_sweeps(recordings_root)
        if self.live:
            names = [("your model", "custom")] if self._custom else []
            names += [(n, n) for n in ZOO]
        else:
            names = [(n, n) for n in sorted(self._recorded)]
            if not names:
                raise RecordingError("recorded mode, and no recordings with latency sweeps were found: "
                                     "run `graphlab record` on a GPU machine, or set GRAPHLAB_RECORDINGS")
        start = "custom" if self._custom else model if isinstance(model, str) else names[0][1]
        if start not in [v for _, v in names]:
            raise BadInputError(f"no model {start!r} here; choose one of {', '.join(v for _, v in names)}")
        style = {"description_width": "initial"}
        self.model_choice = w.Dropdown(options=names, value=start, description="model", style=style)
        self.batch_text = w.Text(value=", ".join(str(b) for b in batch_sizes), description="batch sizes", style=style)
        choices = list(REPETITION_CHOICES)
        if repetitions and repetitions not in [v for _, v in choices]:
            choices.append((str(repetitions), repetitions))
        self.repetitions_choice = w.Dropdown(options=choices, value=repetitions or 0,
                                             description="timed calls per run", style=style)
        self.runs_slider = w.IntSlider(value=runs, min=1, max=10, description="runs", style=style)
        self.gpu_choice = w.SelectMultiple(description="compare GPUs", style=style, rows=3)
        self.run_button = w.Button(description="Run" if self.live else "Show recording", button_style="primary",
                                   icon="play")
        self.progress = w.IntProgress(value=0, min=0, max=1, description="measured" if self.live else "")
        self.status = w.Label(value="")
        self.banner = w.HTML(_banner_html(self.live, []))
        self.table = w.HTML(_table_html([]))
        self.figure_widget = go.FigureWidget(self._static([]))
        controls = [self.model_choice, self.batch_text, self.repetitions_choice, self.runs_slider] if self.live \
            else [self.model_choice, self.gpu_choice]
        self.widget = w.VBox([self.banner, w.HBox(controls[:2]), w.HBox(controls[2:]),
                              w.HBox([self.run_button, self.progress, self.status]), self.figure_widget, self.table])
        self.run_button.on_click(lambda _button: self.run())
        self._refreshing = False
        self.model_choice.observe(self._on_model_change, names="value")
        self.gpu_choice.observe(self._on_gpu_change, names="value")
        self._refresh_gpus()
        if not self.live:  # recordings cost nothing to show: start with the chosen one on screen
            self.run()

    # -- actions ------------------------------------------------------------------------------------
    def run(self) -> list[Sweep]:
        """Measure (live) or load (recorded) the chosen model; update figure, table and progress."""
        self.run_button.disabled = True
        try:
            if self.live:
                self._run_live()
            else:
                self._show_recorded()
        except GraphlabError as exc:
            self.status.value = f"error: {exc}"
        finally:
            self.run_button.disabled = False
        return self.sweeps

    def _run_live(self) -> None:
        batch_sizes = parse_batch_sizes(self.batch_text.value)
        choice = self.model_choice.value
        if choice == "custom":
            model, make_inputs = self._custom  # type: ignore[misc]
            if make_inputs is None:
                raise BadInputError("pass make_inputs=lambda batch_size, seed=0: ... with your own model")
            name = type(model).__name__
        else:
            zoo_model = get_model(choice)
            model, make_inputs, name = zoo_model.build(), zoo_model.make_inputs, choice
        points: list[LatencyPoint] = []
        self.progress.max, self.progress.value = 2 * len(batch_sizes), 0
        self.status.value = f"measuring {name}: eager first, then graphs, then one profiled call each..."

        def on_point(point: LatencyPoint) -> None:
            points.append(point)
            self.progress.value += 1
            self.status.value = f"{point.mode}, batch {point.batch_size}: p50 {present.duration(point.p50_us)}"
            self._show([Sweep(name, tuple(points))])

        runner = self._runner
        if runner is None:
            from graphlab.timing.sweep import sweep as runner
        result = runner(model, make_inputs, batch_sizes, name=name, repetitions=self.repetitions_choice.value or None,
                        runs=self.runs_slider.value, progress=False, on_point=on_point)
        self._show([result])
        self.status.value = f"done: {len(batch_sizes)} batch sizes"

    def _show_recorded(self) -> None:
        by_gpu = self._recorded[self.model_choice.value]
        gpus = list(self.gpu_choice.value) or sorted(by_gpu)[:1]
        self.progress.max, self.progress.value = len(gpus), len(gpus)
        self._show([by_gpu[g][0] for g in gpus])
        self.status.value = f"showing {len(gpus)} recording(s)"

    def _refresh_gpus(self) -> None:
        if self.live:
            return
        gpus = sorted(self._recorded.get(self.model_choice.value, {}))
        self._refreshing = True  # one redraw for the new model, not one per GPU list change
        try:
            self.gpu_choice.options = gpus
            self.gpu_choice.value = tuple(gpus[:1])
        finally:
            self._refreshing = False

    def _on_model_change(self, _change: dict[str, Any]) -> None:
        self._refresh_gpus()
        if not self.live:  # a recording shows at once: no need to press "Show recording"
            self.run()

    def _on_gpu_change(self, _change: dict[str, Any]) -> None:
        if not self.live and not self._refreshing:
            self.run()

    # -- drawing ------------------------------------------------------------------------------------
    def _static(self, sweeps: list[Sweep]) -> Any:
        if sweeps and any(s.points for s in sweeps):
            return plot_latency(sweeps)
        import plotly.graph_objects as go

        return go.Figure(layout={"title": "Press Run to measure eager vs CUDA-graph latency" if self.live else
                                 "Choose a model to see its recording", "height": 420})

    def _show(self, sweeps: list[Sweep]) -> None:
        if not self.live and sweeps == self.sweeps:
            return  # the same recordings again (the button after a change already showed them): no redraw, so
            # the browser never gets two delete-and-add rounds back to back (seen: an empty legend under load)
        self.sweeps = sweeps
        fig = self._static(sweeps)
        fw = self.figure_widget
        with fw.batch_update():
            fw.data = ()
            fw.layout = fig.layout
            fw.add_traces(list(fig.data))
        self.table.value = _table_html(sweeps)
        self.banner.value = _banner_html(self.live, sweeps)

    def figure(self) -> Any:
        """A static `plotly.graph_objects.Figure` of what the lab shows (stays in exported notebooks)."""
        return self._static(self.sweeps)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        """The live widget, plus a static HTML twin (banner, figure, table) for front ends and exports
        without widget state. The figure's HTML carries no plotly.js of its own (`_figure_html`): plotly.js comes
        once per page, from plotly's notebook renderer or the page (`graphlab tour`, the docs)."""
        data = dict(self.widget._repr_mimebundle_(**kwargs))
        figure_html = _figure_html(self.figure()) if self.sweeps else ""
        data["text/html"] = self.banner.value + figure_html + self.table.value
        table = latency_table(self.sweeps)
        data["text/plain"] = f"{self!r}\n{table}" if table is not None else repr(self)  # not the VBox's repr
        return data

    def __repr__(self) -> str:
        shown = present.listing(f"{s.model} on {s.conditions.get('gpu') or 'this GPU'}" for s in self.sweeps)
        return (f"latency lab ({'live' if self.live else 'recorded'}), model {self.model_choice.value}: "
                + (f"showing {shown}" if self.sweeps else "nothing measured yet"))


def latency_lab(model: Any = None, *, make_inputs: Callable[..., Any] | None = None,
                batch_sizes: Any = DEFAULT_BATCH_SIZES, repetitions: int | None = None, runs: int = 3,
                live: bool | None = None, recordings_root: str | Path | None = None) -> LatencyLab:
    """Open the latency lab: eager vs CUDA-graph latency by batch size, with a Run button.

    Args:
        model: a zoo name ("mlp", "cnn", "gpt", "resnet18"), your own `nn.Module` (then also pass
            `make_inputs(batch_size, seed=0)`), or None to choose in the widget.
        batch_sizes: initial batch sizes (editable in the widget).
        repetitions: timed calls per run (None: automatic, about 0.05 s per run).
        runs: repeated runs per point (their spread is the noise floor).
        live: force live (GPU) or recorded mode; default: the mode `gl.set_mode` chose (live without a
            `set_mode` call: then Run on a machine without a GPU says how to switch to the recordings).
        recordings_root: where recordings are read in recorded mode (default: graphlab's own).
    """
    return LatencyLab(model, make_inputs=make_inputs, batch_sizes=batch_sizes, repetitions=repetitions, runs=runs,
                      live=live, recordings_root=recordings_root)


__all__ = ["LatencyLab", "latency_lab", "latency_table", "parse_batch_sizes", "recorded_sweeps"]
