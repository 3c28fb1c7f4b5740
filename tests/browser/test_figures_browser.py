"""The notebooks' plotly figures in a real browser: no two labels on top of each other.

Issue 37: `plot_http_capacity` printed its client counts over each other (in JupyterLab and in the tour's HTML), which
no check on the figure's JSON can see: only a browser knows where the text lands. Each figure the notebooks draw is
made here as the notebook makes it, in recorded mode (notebook 09's six, and figures of 03, 06 and 11 and the latency
lab), drawn in Debian's headless Chromium at a notebook's width (`drive_figures.mjs`, playwright-core), and every
tick label, annotation, legend entry and text label on the data is measured: no two may intersect (beyond 1 px).

Needs chromium, node and `npm ci` in tests/browser, like the other browser tests (`scripts/browser_test.sh`).
Screenshots go to GRAPHLAB_SCREENSHOT_DIR (default out/browser) as figure-<name>.png.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, Callable

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS = Path(os.environ.get("GRAPHLAB_SCREENSHOT_DIR", REPO / "out" / "browser"))
#: the width of a notebook's output area that the figures are drawn at (JupyterLab at 1,300 px, side bar closed)
WIDTH_PX = 900

pytestmark = pytest.mark.browser


def _missing() -> str | None:
    if not CHROMIUM.exists():
        return "needs Debian's chromium (apt-get install chromium)"
    if shutil.which("node") is None:
        return "needs node (apt-get install nodejs npm)"
    if not (HERE / "node_modules" / "playwright-core").is_dir():
        return "needs playwright-core: run scripts/browser_test.sh (npm ci in tests/browser)"
    return None


if _missing():
    pytestmark = [pytest.mark.browser, pytest.mark.skip(reason=_missing())]


# -- the figures, as the notebooks make them (recorded mode) -----------------------------------------------------
def _loadtest(gl: Any) -> Any:
    return gl.run_loadtest("gpt", settings=["eager", "graphs", "graphs+batching"],
                           rates=[250, 500, 1000, 2000, 4000, 8000], duration_s=1.0)


def _sweep(gl: Any) -> Any:
    return gl.sweep("resnet18", batch_sizes=[1, 2, 4, 8, 16, 32, 64], progress=False)


def _advice(gl: Any) -> Any:
    from graphlab.studies.traffic import traffic_replay

    replay = traffic_replay()
    return gl.advise_buckets(replay.sizes, replay.latency_table, max_graphs=6)


def _profile(gl: Any) -> Any:
    zoo = gl.get_model("gpt")
    (ids,) = zoo.make_inputs(1)
    return gl.profile(zoo.build(), ids, replays=20)


#: name -> what makes the figure, given graphlab (09: every figure; the others: the notebook's figures)
FIGURES: dict[str, Callable[[Any], Any]] = {
    "09_load_curves": lambda gl: gl.plot_load_curves(_loadtest(gl)),
    "09_batch_sizes": lambda gl: gl.plot_batch_sizes(_loadtest(gl)),
    "09_stages": lambda gl: gl.plot_stages(_loadtest(gl), rate_rps=500),
    "09_serving_timeline": lambda gl: gl.plot_serving_timeline(_loadtest(gl), "graphs+batching"),
    "09_http_capacity": lambda gl: gl.plot_http_capacity(gl.load(gl.HttpServing)),
    "09_http_beside_in_process": lambda gl: gl.plot_load_curves(gl.load(gl.HttpServing).beside_in_process()),
    "03_latency": lambda gl: gl.plot_latency(_sweep(gl)),
    "03_overhead": lambda gl: gl.plot_overhead(_sweep(gl)),
    "03_gpu_time": lambda gl: gl.plot_latency(_sweep(gl), gpu_time=True, speedup=False),
    "03_timeline": lambda gl: gl.plot_timeline(gl.record_timeline("gpt", batch_size=1)),
    "03_speedup": lambda gl: gl.plot_speedup([gl.sweep(m, batch_sizes=[1, 2, 4, 8, 16, 32, 64], progress=False)
                                              for m in ("mlp", "cnn", "gpt", "encoder", "resnet18")]),
    "03_latency_lab": lambda gl: gl.latency_lab("mlp").figure(),
    "06_buckets": lambda gl: gl.plot_buckets(_advice(gl)),
    "11_modules": lambda gl: gl.plot_modules(_profile(gl), depth=3),
}


def _figures() -> dict[str, Any]:
    """Each figure's JSON, made in recorded mode (the mode every notebook runs in without a GPU); a figure whose
    call fails is reported as the error it raised."""
    import graphlab as gl
    from graphlab import mode

    before = mode._current
    out: dict[str, Any] = {}
    try:
        gl.set_mode("recorded")
        cache: dict[str, Any] = {}
        for name, make in FIGURES.items():
            try:
                out[name] = json.loads(make(_Cached(gl, cache)).to_json())
            except Exception as exc:  # reported per figure by its test
                out[name] = {"error": f"{type(exc).__name__}: {exc}"}
    finally:
        mode._current = before
    return out


class _Cached:
    """graphlab, with the slow recorded results made once (the load test, the sweeps, the profile)."""

    def __init__(self, gl: Any, cache: dict[str, Any]):
        self._gl, self._cache = gl, cache

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._gl, name)
        if name not in ("run_loadtest", "sweep", "profile", "load", "record_timeline"):
            return value

        def once(*args: Any, **kwargs: Any) -> Any:
            key = repr((name, args, sorted(kwargs.items()))) if name != "profile" else "profile"
            if key not in self._cache:
                self._cache[key] = value(*args, **kwargs)
            return self._cache[key]

        return once


def _page(figures: dict[str, Any], path: Path) -> None:
    """One HTML page: plotly.js once, each figure in a <div class="gl-figure"> at a notebook's width."""
    from plotly.offline import get_plotlyjs

    drawable = {name: fig for name, fig in figures.items() if "error" not in fig}
    divs = "\n".join(f'<h3>{name}</h3><div class="gl-figure" id="{name}" style="width:{WIDTH_PX}px"></div>'
                     for name in drawable)
    data = json.dumps(drawable).replace("</", "<\\/")
    path.write_text(
        "<!doctype html><html><head><meta charset='utf-8'><title>graphlab figures</title>"
        f"<script>{get_plotlyjs()}</script></head><body style='font-family:sans-serif'>{divs}"
        f"<script>const FIGURES = {data};\n"
        "Promise.all(Object.entries(FIGURES).map(([id, f]) => Plotly.newPlot(id, f.data, f.layout, "
        "{responsive: false}))).then(() => { window.__figuresDrawn = true; });</script></body></html>",
        encoding="utf-8",
    )


@pytest.fixture(scope="module")
def drawn(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every figure drawn once in Chromium: {name: {"counts", "overlaps", "drawn"} or {"error"}}."""
    figures = _figures()
    page = tmp_path_factory.mktemp("figures") / "figures.html"
    _page(figures, page)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    args = {"page": page.as_uri(), "screenshot_dir": str(SCREENSHOTS), "timeout_ms": 150_000, "slop_px": 1}
    done = subprocess.run(["node", str(HERE / "drive_figures.mjs"), json.dumps(args)], capture_output=True, text=True,
                          timeout=300, cwd=HERE)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    assert lines, f"driver printed no report:\n{done.stdout}\n{done.stderr}"
    report = json.loads(lines[-1])
    assert report["ok"], report.get("error")
    assert report["external_requests"] == [] and report["console_errors"] == [], report
    out = {name: {"error": fig["error"]} for name, fig in figures.items() if "error" in fig}
    out.update(report["figures"])
    (SCREENSHOTS / "figures.json").write_text(json.dumps(out, indent=1, ensure_ascii=False), encoding="utf-8")
    for name, seen in sorted(out.items()):
        print(f"\n[figures] {name}: {seen.get('error') or seen['counts']}, "
              f"{len(seen.get('overlaps', []))} overlapping pair(s)")
    return out


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_no_two_labels_of_a_figure_lie_on_top_of_each_other(drawn: dict[str, Any], name: str) -> None:
    seen = drawn[name]
    assert "error" not in seen, f"{name}: the notebook's call failed: {seen.get('error')}"
    assert seen["drawn"] and seen["counts"].get("tick", 0) > 0, f"{name}: nothing drawn: {seen}"
    overlaps = seen["overlaps"]
    assert overlaps == [], f"{name}: {len(overlaps)} pair(s) of labels overlap:\n" + "\n".join(
        f"  {o['a']} and {o['b']} ({o['overlap_px'][0]} x {o['overlap_px'][1]} px)" for o in overlaps[:20])
