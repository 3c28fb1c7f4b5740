"""The latency lab widget, driven headless: build it, click, read what the figure and table show.

Recordings here are written to a temporary folder from hand-written test inputs, not measurements.
"""
from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("ipywidgets")
pytest.importorskip("anywidget")

from graphlab.recordings import write_recording  # noqa: E402
from graphlab.timing.results import LatencyPoint, Sweep  # noqa: E402
from graphlab.errors import GraphlabError  # noqa: E402
from graphlab.ui.latency_lab import LatencyLab, latency_lab, parse_batch_sizes  # noqa: E402


def _p(batch_size, mode, p50, **kw):
    return LatencyPoint(batch_size=batch_size, mode=mode, p10_us=p50 * 0.9, p50_us=p50, p90_us=p50 * 1.1,
                        spread_pct=1.0, **kw)


def _sweep(model, scale):
    pts = []
    for b in (1, 8, 64):
        pts += [_p(b, "eager", 100.0 * scale + b), _p(b, "graph", 50.0 * scale + b, kernel_count=5, capture_ms=3.0)]
    return Sweep(model, tuple(pts), conditions={"date": "2026-01-01T00:00:00Z"})


@pytest.fixture
def root(tmp_path):
    for gpu, name, scale in (("gpu-a", "GPU A", 1.0), ("gpu-b", "GPU B", 2.0)):
        provenance = {"gpu": name, "driver": "1.2", "torch": "9.9", "cuda": "1", "graphlab_version": "0",
                      "git_commit": "x", "command": "test", "date": "2026-01-02T00:00:00Z"}
        for model in ("mlp", "gpt"):
            write_recording(tmp_path / gpu / model, name=model, description="", provenance=provenance, graphs={},
                            results={"sweep": json.loads(_sweep(model, scale).to_json())})
    write_recording(tmp_path / "gpu-a" / "graph-only", name="graph-only", description="", provenance=provenance,
                    graphs={}, results={})
    return tmp_path


def _lines(lab):
    return [t for t in lab.figure_widget.data if t.mode == "lines+markers"]


def test_recorded_mode_lists_models_with_sweeps_and_shows_a_banner(root):
    lab = latency_lab(live=False, recordings_root=root)
    assert [v for _, v in lab.model_choice.options] == ["gpt", "mlp"]  # graph-only recording left out
    assert lab.run_button.description == "Show recording"
    assert [s.model for s in lab.sweeps] == ["gpt"]  # the first recording is on screen at once
    assert "gpt on <b>GPU A</b>" in lab.banner.value
    lab.model_choice.value = "mlp"
    assert list(lab.gpu_choice.options) == ["gpu-a", "gpu-b"] and lab.gpu_choice.value == ("gpu-a",)
    assert [s.model for s in lab.sweeps] == ["mlp"]  # shown on change, without pressing the button
    lab.run_button.click()
    assert [s.model for s in lab.sweeps] == ["mlp"]
    eager = _lines(lab)[0]
    assert list(eager.x) == [1, 8, 64] and list(eager.y) == [101.0, 108.0, 164.0]
    assert "GPU A" in lab.banner.value and "driver 1.2" in lab.banner.value and "2026-01-01" in lab.banner.value
    assert ">1.98</td>" in lab.table.value and "speedup (x)" in lab.table.value  # 101 / 51
    assert lab.progress.value == lab.progress.max == 1


def test_recorded_mode_follows_the_dropdowns_at_once(root, monkeypatch):
    """Issue 10: changing the model did nothing until "Show recording" was pressed."""
    lab = latency_lab(live=False, recordings_root=root)
    shows = []
    monkeypatch.setattr(lab, "_show", lambda sweeps: shows.append([(s.model, s.conditions["gpu"]) for s in sweeps]))
    lab.model_choice.value = "mlp"
    assert shows == [[("mlp", "GPU A")]]  # one redraw for the model, none for the GPU list it refilled
    lab.gpu_choice.value = ("gpu-a", "gpu-b")
    assert shows[-1] == [("mlp", "GPU A"), ("mlp", "GPU B")]
    lab.model_choice.value = "gpt"
    assert shows[-1] == [("gpt", "GPU A")] and len(shows) == 3


def test_the_table_aligns_numbers_right_and_headers_with_their_columns(root):
    lab = latency_lab("mlp", live=False, recordings_root=root)
    table = lab.table.value
    heads = re.findall(r'<th style="([^"]*)">([^<]*)</th>', table)
    assert [name for _, name in heads][:3] == ["batch", "eager p50 (µs)", "graph p50 (µs)"]  # units in headers
    first_row = re.search(r"<tbody><tr>(.*?)</tr>", table).group(1)
    cells = re.findall(r'<t[hd] style="([^"]*)">([^<]*)</t[hd]>', first_row)
    assert [text for _, text in cells[:3]] == ["1", "101", "51"]
    for (head_style, name), (cell_style, _) in zip(heads, cells):
        align = "left" if name.startswith("p10 to p90") else "right"  # numbers right, under their headers
        assert f"text-align:{align}" in head_style and f"text-align:{align}" in cell_style
        assert "padding" in cell_style


def test_recorded_mode_compares_gpus(root):
    lab = latency_lab("mlp", live=False, recordings_root=root)
    lab.gpu_choice.value = ("gpu-a", "gpu-b")
    lab.run_button.click()
    names = [t.name for t in _lines(lab)]
    assert any(n.endswith("· GPU A") for n in names) and any(n.endswith("· GPU B") for n in names)
    assert lab.table.value.count("<tr>") == 1 + 6  # header + 3 batch sizes x 2 GPUs
    assert ">GPU</th>" in lab.table.value  # the GPU is a column only when GPUs are compared
    assert "GPU B" in lab.banner.value


def test_live_mode_fills_in_point_by_point(root):
    seen = []

    def fake_runner(model, make_inputs, batch_sizes, *, name, repetitions, runs, progress, on_point):
        seen.append((model, batch_sizes, repetitions, runs, progress))
        points = []
        for mode, base in (("eager", 100.0), ("graph", 40.0)):  # the order sweep() uses
            for b in batch_sizes:
                p = _p(b, mode, base + b)
                points.append(p)
                on_point(p)
                snapshots.append((lab.progress.value, [t.name for t in _lines(lab)]))
        return Sweep(name, tuple(points), conditions={"gpu": "Fake GPU"})

    snapshots = []
    lab = LatencyLab(object(), make_inputs=lambda b, seed=0: None, live=True, runner=fake_runner,
                     batch_sizes=(1, 4), runs=2)
    assert lab.model_choice.value == "custom" and lab.run_button.description == "Run"
    lab.batch_text.value = "1, 2, 4"
    lab.repetitions_choice.value = 100
    lab.run_button.click()
    assert seen[0][1:] == ([1, 2, 4], 100, 2, False)
    assert [s[0] for s in snapshots] == [1, 2, 3, 4, 5, 6] and lab.progress.max == 6  # one step per point
    assert not any(n.startswith("CUDA graph") for n in snapshots[2][1])  # eager line first, then graph
    assert any(n.startswith("CUDA graph") for n in snapshots[3][1])
    assert list(_lines(lab)[1].y) == [41.0, 42.0, 44.0]
    assert lab.status.value.startswith("done") and "Fake GPU" in lab.banner.value
    assert not lab.run_button.disabled


def test_bad_batch_sizes_show_an_error_instead_of_raising(root):
    lab = LatencyLab(object(), make_inputs=lambda b, seed=0: None, live=True, runner=lambda *a, **k: None)
    lab.batch_text.value = "1, eight"
    lab.run_button.click()
    assert lab.status.value.startswith("error:") and "'eight'" in lab.status.value


def test_parse_batch_sizes():
    assert parse_batch_sizes("1, 2 ,8;64") == [1, 2, 8, 64]
    for bad in ("", "0", "-1", "x"):
        with pytest.raises(GraphlabError):
            parse_batch_sizes(bad)


def test_static_twin_and_mimebundle(root):
    lab = latency_lab("gpt", live=False, recordings_root=root)
    lab.run()
    fig = lab.figure()
    assert type(fig).__name__ == "Figure" and len(fig.data) == len(lab.figure_widget.data)
    bundle = lab._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "plotly" in bundle["text/html"] and "<table" in bundle["text/html"]
    import plotly.io as pio

    default = pio.renderers.default
    try:  # what `graphlab tour` uses for exports: the figure's HTML needs no CDN
        pio.renderers.default = "plotly_mimetype+notebook"
        offline = lab._repr_mimebundle_()["text/html"]
    finally:
        pio.renderers.default = default
    assert "cdn.plot.ly" not in offline and "Plotly.newPlot" in offline and "<table" in offline


def test_no_recordings_and_no_gpu_is_a_clear_error(tmp_path, root):
    tmp_path = tmp_path / "empty"
    with pytest.raises(GraphlabError, match="graphlab record"):
        latency_lab(live=False, recordings_root=tmp_path)
    with pytest.raises(GraphlabError, match="choose one of"):
        latency_lab("nope", live=False, recordings_root=root)


# -- in a real browser: JupyterLab 4 + headless Chromium, offline -------------------------------------------

DRIVER = r"""
import { createRequire } from "module";
const require = createRequire(process.argv[3]);
const { chromium } = require("playwright-core");
const args = JSON.parse(process.argv[2]);
const browser = await chromium.launch({ executablePath: "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"] });
const result = { ok: false, requests_outside: [] };
try {
  const page = await browser.newPage({ viewport: { width: 1300, height: 1100 } });
  page.setDefaultTimeout(120000);
  page.on("request", (r) => { if (!r.url().startsWith(args.base) && !/^(data|blob):/.test(r.url())) result.requests_outside.push(r.url()); });
  await page.goto(`${args.base}/lab/workspaces/latency/tree/${args.notebook}?reset&token=${args.token}`);
  await page.waitForFunction(() => window.jupyterapp);
  await page.evaluate(() => window.jupyterapp.started);
  await page.waitForFunction((nb) => { const w = window.jupyterapp.shell.currentWidget;
    return w?.context?.path === nb && w?.sessionContext?.session?.kernel?.status === "idle"; }, args.notebook);
  await page.evaluate(() => window.jupyterapp.commands.execute("notebook:run-all-cells"));
  const plot = page.locator(".widget-vbox .js-plotly-plot").first();
  await plot.locator(".scatterlayer .trace").first().waitFor({ state: "attached" });
  result.title = await plot.locator(".gtitle").first().textContent();
  result.traces_before = await plot.locator(".scatterlayer .trace").count();
  result.rows_before = await page.locator(".graphlab-latency table tbody tr").count();
  await page.locator(".widget-select-multiple select").first().selectOption(["gpu-a", "gpu-b"]);
  await page.locator("button:has-text('Show recording')").first().click();
  await page.waitForFunction(() => document.querySelectorAll(".graphlab-latency table tbody tr").length === 6);
  result.rows_after = await page.locator(".graphlab-latency table tbody tr").count();
  // the table is HTML and updates at once; the figure redraws after its own message: wait for it
  await page.waitForFunction(() => [...document.querySelectorAll(".widget-vbox .js-plotly-plot .legendtext")]
    .some((t) => t.textContent.endsWith("GPU B")), null, { timeout: 30000 }).catch(() => {});
  result.legend = await plot.locator(".legendtext").allTextContents();
  result.traces_after = await plot.locator(".scatterlayer .trace").count();
  await page.locator(".widget-vbox").first().screenshot({ path: args.screenshot });
  result.ok = true;
} catch (err) { result.error = String(err && err.stack ? err.stack : err).slice(0, 1500); }
finally { await browser.close(); console.log(JSON.stringify(result)); }
"""


@pytest.mark.browser
def test_lab_renders_offline_in_jupyterlab_and_compares_gpus(tmp_path, root):
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    import nbformat

    browser_dir = Path(__file__).resolve().parent / "browser"
    if not Path("/usr/bin/chromium").exists() or shutil.which("node") is None or \
            not (browser_dir / "node_modules" / "playwright-core").is_dir():
        pytest.skip("needs chromium, node and `npm ci` in tests/browser (scripts/browser_test.sh)")
    sys.path.insert(0, str(browser_dir))
    from test_inspector_browser import SCREENSHOTS, Lab  # the JupyterLab server the inspector test uses

    server_root = tmp_path / "root"
    server_root.mkdir()
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                          "language": "python"}})
    nb.cells = [nbformat.v4.new_code_cell(f"import graphlab as gl\nlab = gl.latency_lab('mlp', live=False, "
                                          f"recordings_root={str(root)!r})\nlab")]
    nbformat.write(nb, server_root / "lab.ipynb")
    lab = Lab(server_root)
    try:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        args = {"base": lab.base, "token": lab.token, "notebook": "lab.ipynb",
                "screenshot": str(SCREENSHOTS / "latency_lab.png")}
        script = tmp_path / "drive_latency_lab.mjs"
        script.write_text(DRIVER)
        done = subprocess.run(["node", str(script), json.dumps(args), str(browser_dir / "package.json")],
                              capture_output=True, text=True, timeout=300)
    finally:
        lab.stop()
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    assert lines, done.stdout + done.stderr
    report = json.loads(lines[-1])
    print(f"\n[latency lab] screenshot: {args['screenshot']}")
    assert report["ok"], report.get("error")
    assert "eager vs CUDA graph" in report["title"]
    assert report["rows_before"] == 3 and report["rows_after"] == 6  # one GPU, then two
    assert any(t.endswith("GPU B") for t in report["legend"]), report
    assert report["requests_outside"] == []  # nothing from a CDN


def test_the_static_figure_stays_offline_without_plotlys_private_renderer(root, monkeypatch):
    import plotly.io as pio

    from graphlab.ui.latency_lab import _figure_html

    lab = latency_lab("gpt", live=False, recordings_root=root)
    monkeypatch.delattr(type(pio.renderers), "_build_mime_bundle", raising=False)
    page = _figure_html(lab.figure())
    assert "Plotly.newPlot" in page and not re.search(r"<script[^>]+src=[\"']https?://", page)
    assert "plotly.js v" not in page and len(page) < 100_000  # drawn by the page's plotly.js, not a copy of its own


def test_without_live_the_lab_follows_the_mode(root, monkeypatch):
    import graphlab.mode as mode

    monkeypatch.setattr(mode, "_current", None)
    mode.set_mode("recorded")
    lab = latency_lab("mlp", recordings_root=root)
    assert not lab.live and lab.run_button.description == "Show recording" and [s.model for s in lab.sweeps] == ["mlp"]
    monkeypatch.setattr(mode, "_current", None)  # no set_mode call: the live path, as everywhere in graphlab
    lab = latency_lab("mlp", recordings_root=root)
    assert lab.live and lab.run_button.description == "Run"


def test_a_saved_lab_holds_no_copy_of_plotly_js(root):
    """Issue 37: a saved notebook with the lab was 4.8 MB, plotly.js inlined in every lab output (JupyterLab's
    default renderer, "plotly_mimetype", makes no HTML, and the lab inlined plotly.js itself). Now the lab's static
    twin never carries plotly.js: under JupyterLab's renderer it is drawn by the page's plotly.js when there is one;
    under the notebook renderer (`graphlab tour`, the docs) plotly.js comes once per page."""
    import plotly.io as pio

    lab = latency_lab("gpt", live=False, recordings_root=root)
    default = pio.renderers.default
    sizes = {}
    try:
        for renderer in ("plotly_mimetype", "plotly_mimetype+notebook"):
            pio.renderers.default = renderer
            bundle = lab._repr_mimebundle_()
            sizes[renderer] = len(json.dumps(bundle))
            assert "<table" in bundle["text/html"] and "Plotly.newPlot" in bundle["text/html"]
            assert "plotly.js v" not in bundle["text/html"]
        again = lab._repr_mimebundle_()["text/html"]  # a second lab output on the same page: no second copy
        assert "plotly.js v" not in again
    finally:
        pio.renderers.default = default
    assert sizes["plotly_mimetype"] < 200_000, sizes  # was 4.8 MB


def test_the_table_is_honest_about_the_spread_of_the_speedup():
    """Issue 37: the table put "run spread ±204.9%" beside "3.46x" over a footnote saying a speedup smaller than the
    spread "is not a result". It now shows the spread of the paired speedup itself (no self-contradicting note)."""
    from graphlab.output_check import html_problems
    from graphlab.ui.latency_lab import latency_table, recorded_sweeps

    sweep = recorded_sweeps()["mlp"]["h200"][0]
    table = latency_table([sweep])
    text = str(table)
    assert "run spread" not in text and "±" not in text and "is not a result" not in text
    pairs = sweep.paired(4)
    row = next(r for r in table.rows if r["batch"] == 4)
    assert row["speedup"] == pairs.p50 and pairs.p10 <= row["speedup"] <= pairs.p90
    assert row["pairs"] == f"{gl_number(pairs.p10)} to {gl_number(pairs.p90)}" and pairs.p10 > 1
    assert "eager p50 (µs)" in text and "speedup (x)" in text and "capture (ms)" in text
    assert html_problems(table._repr_html_(), "the lab's table") == []


def gl_number(value):
    from graphlab.present import number

    return number(value)


def test_the_labs_text_is_its_table_not_a_widget_repr(root):
    """Where only text shows (a terminal, a plain-text export), the lab said `VBox(children=(HTML(value=...`."""
    from graphlab.output_check import text_problems

    lab = latency_lab("mlp", live=False, recordings_root=root)
    text = lab._repr_mimebundle_()["text/plain"]
    assert not text.startswith("VBox(") and "eager p50 (µs)" in text
    assert repr(lab) == "latency lab (recorded), model mlp: showing mlp on GPU A"
    assert text_problems(text, "the lab as text") == []
