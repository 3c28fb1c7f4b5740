"""The tutorial notebooks: committed without outputs, thin, and runnable top to bottom here.

On this CPU machine they run in recorded mode; on a GPU machine they run live. `graphlab tour` is
the same runner.
"""
from __future__ import annotations

import ast
import json
import re

import pytest
from conftest import REPO

from graphlab.env import has_cuda
from graphlab.tour import execute_notebook, find_notebooks

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


def _code_cells(path):
    nb = json.loads(path.read_text())
    return nb, [c for c in nb["cells"] if c["cell_type"] == "code"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_committed_stripped_and_thin(path):
    nb, cells = _code_cells(path)
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in cells), "strip outputs"
    assert "widgets" not in nb.get("metadata", {}), "strip widget state"
    for cell in cells:
        source = "".join(cell["source"])
        if source.lstrip().startswith("%"):
            continue  # a magic cell is IPython, not Python
        body = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
        tree = ast.parse(body)
        defined = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))]
        assert not defined, f"notebooks call the library; move {defined[0].name!r} into graphlab"


def test_tour_finds_every_notebook_in_order():
    assert find_notebooks() == NOTEBOOKS
    assert NOTEBOOKS and NOTEBOOKS[0].name.startswith("00_")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_top_to_bottom(path, tmp_path, monkeypatch):
    monkeypatch.setenv("TQDM_DISABLE", "1")
    execute_notebook(path, tmp_path, timeout_s=600)
    executed = json.loads((tmp_path / path.name).read_text())
    errors = [o for c in executed["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    assert (tmp_path / path.with_suffix(".html").name).stat().st_size > 0
    assert output_problems(executed, recorded=not has_cuda()) == []
    checks = [line for line in _lines(executed) if line.startswith(("Right", "Not yet", "Not answered yet"))]
    assert checks and all(line.startswith("Not answered yet") for line in checks), "exercises start unanswered"


def _text(value):
    return "".join(value) if isinstance(value, list) else str(value)


def _lines(executed):
    return [line for c in executed["cells"] for o in c.get("outputs", [])
            for line in _text(o.get("text", "")).splitlines()]


def output_problems(executed, recorded):
    """What a reader should not meet in an executed notebook: raw dicts and tuples, object reprs, µs in
    scientific notation, bytes as integers, cut cells, "(output output)", warnings that point into graphlab, and
    (in recorded mode) a figure without the recorded banner. One line per problem, naming the cell."""
    found = []
    for i, cell in enumerate(executed["cells"]):
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            texts = [_text(out.get("text", ""))] + [_text(v) for k, v in data.items() if k.startswith("text/")]
            plain = _text(data.get("text/plain", ""))
            if out.get("output_type") == "execute_result" and set(data) == {"text/plain"} and \
                    re.match(r"\s*(\{|\(|\[\(|\[\{)", plain):
                found.append(f"cell {i}: a raw dict, tuple or list of them: {plain[:60]!r}")
            if re.search(r"<[\w.]+ (object )?at 0x[0-9a-f]+>", plain) and "text/html" not in data:
                found.append(f"cell {i}: an object repr instead of a table: {plain[:60]!r}")
            for text in texts:
                big = re.search(r"\d\.\d+e\+\d+", text)
                if big:
                    found.append(f"cell {i}: a number in scientific notation: {big[0]}")
                if "(output output)" in text:
                    found.append(f"cell {i}: '(output output)'")
                if str(REPO) + "/" in text or re.search(r"/ipykernel_\d+/", text):
                    found.append(f"cell {i}: a path of the machine that ran it (the docs site would show it)")
                if re.search(r"graphlab/[\w/]+\.py:\d+: \w*Warning", text):
                    found.append(f"cell {i}: a warning that points into graphlab, not the cell")
            html = _text(data.get("text/html", ""))
            if "<table" in html and (re.search(r"<th[^>]*>[^<]*_bytes</th>", html) or re.search(r">[^<]*\.\.\.</td>", html)
                                      or "…</td>" in html):
                found.append(f"cell {i}: a table with bytes as integers or cells cut short")
            svg = _text(data.get("image/svg+xml", ""))
            schematic = plain.startswith("PipelineDiagram(")  # a drawing of the service's parts, no measured data
            if recorded and svg and not schematic and "recorded" not in svg.lower():
                found.append(f"cell {i}: a drawing in recorded mode without the recorded banner: {plain[:60]!r}")
            figure = data.get("application/vnd.plotly.v1+json")
            if recorded and figure is not None:
                title = figure.get("layout", {}).get("title", {})
                title = title.get("text", "") if isinstance(title, dict) else str(title or "")
                if "recorded" not in title.lower():
                    found.append(f"cell {i}: a figure in recorded mode without the recorded banner: {title[:60]!r}")
    return found


def test_the_output_check_finds_what_it_looks_for():
    cell = {"outputs": [
        {"output_type": "execute_result", "data": {"text/plain": "{'a': 1}"}},
        {"output_type": "stream", "name": "stdout", "text": "first pass 1.194974e+05 us (output output)"},
        {"output_type": "display_data", "data": {"application/vnd.plotly.v1+json": {"layout": {"title": {"text": "x"}}},
                                                  "text/html": "<table><th>pool_bytes</th></table>"}},
        {"output_type": "stream", "name": "stderr", "text": "graphlab/cache/graph_cache.py:158: UserWarning: x"},
        {"output_type": "stream", "name": "stderr", "text": "/tmp/ipykernel_7407/3421.py:2: UserWarning: x"}]}
    problems = output_problems({"cells": [cell]}, recorded=True)
    assert len(problems) == 7, problems


def test_no_cell_changes_an_inspector_an_earlier_cell_showed():
    """After Run All, an inspector shows what its own cell did: a later cell that set its search or filters
    would change the drawing above it (notebook 04's first inspector did)."""
    for path in NOTEBOOKS:
        shown = set()
        for cell in _code_cells(path)[1]:
            source = "".join(cell["source"])
            if source.lstrip().startswith("%"):
                continue
            tree = ast.parse(source)
            changed = {ast.unparse(t.value) for n in ast.walk(tree) if isinstance(n, ast.Assign)
                       for t in n.targets if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)}
            assert not changed & shown, f"{path.name}: a cell changes inspector {sorted(changed & shown)} of an earlier cell"
            shown |= {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) and "inspect(" in ast.unparse(n.value)
                      for t in n.targets if isinstance(t, ast.Name)}
