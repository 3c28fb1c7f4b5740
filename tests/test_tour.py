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
        nbformat.v4.new_code_cell("import graphlab as gl\ngl.plot_latency(gl.Sweep.load('mlp'))"),
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
