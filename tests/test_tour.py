"""`graphlab tour` writes HTML that opens offline: nothing is fetched from a CDN.

Issue 10: nbconvert's lab template pulled require.js and MathJax from cdnjs; the project promises offline.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import pytest
from conftest import REPO

from graphlab.tour import OFFLINE_TEMPLATE, execute_notebook, notebook_html

# a script, stylesheet, module import or frame that a browser would fetch from another host
REMOTE = re.compile(r"""<(?:script|link|iframe|img)\b[^>]*\b(?:src|href)\s*=\s*["']?(?:https?:)?//"""
                    r"""|\bimport\s*(?:[\w{}\s,*]+from\s*)?\(?\s*["'](?:https?:)?//|@import\s+(?:url\()?["']?(?:https?:)?//""",
                    re.IGNORECASE)


def _remote(html: str) -> list[str]:
    return [html[max(0, m.start() - 20): m.end() + 60] for m in REMOTE.finditer(html)]


def test_nbconverts_own_lab_template_would_fetch_from_a_cdn() -> None:
    """The check below can fail: the stock template trips it."""
    from nbconvert import HTMLExporter

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("$x$")])
    html, _ = HTMLExporter().from_notebook_node(nb)
    assert any("require" in hit for hit in _remote(html)) and any("mathjax" in hit.lower() for hit in _remote(html))


def test_the_tour_html_of_an_executed_notebook_fetches_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TQDM_DISABLE", "1")
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# A figure and a drawing\nInline math: $x^2$."),
        nbformat.v4.new_code_cell("import graphlab as gl\ngl.plot_latency(gl.load(gl.Sweep, 'mlp'))"),
        nbformat.v4.new_code_cell("gl.render(gl.load_recording('mlp').graph('b1'))"),
    ])
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    path = tmp_path / "small.ipynb"
    nbformat.write(nb, path)
    out = tmp_path / "out"
    out.mkdir()
    execute_notebook(path, out, timeout_s=300)
    html = (out / "small.html").read_text(encoding="utf-8")
    assert _remote(html) == []
    assert "Plotly.newPlot" in html and "<svg" in html  # the figure (plotly.js inlined) and the drawing are there
    assert html.count("plotly.js v") >= 1


def test_the_offline_template_ships_with_the_package_and_nbconvert_is_declared() -> None:
    assert OFFLINE_TEMPLATE.is_file() and OFFLINE_TEMPLATE.parent.name == "graphlab"
    assert notebook_html(nbformat.v4.new_notebook()).lstrip().lower().startswith("<!doctype html>")
    if sys.version_info < (3, 11):
        pytest.skip("tomllib is Python 3.11+")
    import tomllib

    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    assert any(re.match(r"nbconvert\b", d) for d in deps), "graphlab tour imports nbconvert"


def _figure_output(title: str) -> dict:
    """A plotly figure as JupyterLab's default renderer keeps it: JSON only, no HTML."""
    figure = {"data": [{"type": "scatter", "x": [1, 2, 3], "y": [3, 1, 2], "name": title}],
              "layout": {"title": {"text": title}}}
    return nbformat.v4.new_output("display_data", data={"application/vnd.plotly.v1+json": figure,
                                                        "text/plain": f"Figure {title}"})


def test_figures_kept_as_json_are_drawn_in_the_page_with_plotly_js_once() -> None:
    """Issue 37: the tour's pages drew no figure kept as JSON; each page now holds plotly.js once, before the first
    figure, however many figures (and latency labs, which draw with the page's plotly.js) it has."""
    from graphlab.tour import PLOTLY_JS_MARK
    from graphlab.ui.latency_lab import page_plotly_figure

    cells = []
    for title in ("first", "second", "third"):
        cell = nbformat.v4.new_code_cell("fig")
        cell.outputs = [_figure_output(title)]
        cells.append(cell)
    lab = nbformat.v4.new_code_cell("lab")
    lab.outputs = [nbformat.v4.new_output("display_data", data={
        "text/html": page_plotly_figure('{"data": [], "layout": {}}', "no plotly.js here"), "text/plain": "lab"})]
    nb = nbformat.v4.new_notebook(cells=cells + [lab])
    html = notebook_html(nb)
    assert html.count(PLOTLY_JS_MARK) == 1
    assert html.index(PLOTLY_JS_MARK) < html.index('"text":"first"') < html.index('"text":"third"')
    assert html.count("Plotly.newPlot") >= 4 and _remote(html) == []
    assert len(html) < len(_plotly_js()) + 400_000  # the template's own CSS is about 270 KB
    assert "text/html" not in nb.cells[0].outputs[0]["data"]  # the notebook itself is left as it was


def _plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def test_the_tours_notebooks_keep_figures_as_json_and_its_pages_plotly_js_once(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 37: `graphlab tour` wrote 47 MB for 13 notebooks (plotly.js in the .ipynb and again in the .html of
    every notebook with a figure). Its .ipynb now keeps figures as plotly's JSON, and its .html carries plotly.js
    once, with every figure and the latency lab drawn."""
    from graphlab.tour import PLOTLY_JS_MARK

    monkeypatch.setenv("TQDM_DISABLE", "1")
    monkeypatch.delenv("PLOTLY_RENDERER", raising=False)
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import graphlab as gl\ngl.set_mode('recorded')\nsweep = gl.load(gl.Sweep, 'mlp')"),
        nbformat.v4.new_code_cell("gl.plot_latency(sweep)"),
        nbformat.v4.new_code_cell("gl.plot_overhead(sweep)"),
        nbformat.v4.new_code_cell("gl.latency_lab('mlp')"),
    ])
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    path = tmp_path / "figures.ipynb"
    nbformat.write(nb, path)
    out = tmp_path / "out"
    out.mkdir()
    execute_notebook(path, out, timeout_s=300, figures="json")
    notebook = (out / "figures.ipynb").read_text(encoding="utf-8")
    page = (out / "figures.html").read_text(encoding="utf-8")
    print(f"\n[tour size] .ipynb {len(notebook):,} B, .html {len(page):,} B (plotly.js {len(_plotly_js()):,} B)")
    assert PLOTLY_JS_MARK not in notebook and len(notebook) < 300_000
    assert page.count(PLOTLY_JS_MARK) == 1 and len(page) < len(_plotly_js()) + 600_000
    assert page.count("Plotly.newPlot") >= 3 and _remote(page) == []
    assert "PLOTLY_RENDERER" not in __import__("os").environ  # the kernel's setting did not leak into this process
