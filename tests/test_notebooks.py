"""The tutorial notebooks: committed without outputs, thin, and runnable top to bottom here.

On this CPU machine they run in recorded mode; on a GPU machine they run live. `graphlab tour` is
the same runner.
"""
from __future__ import annotations

import ast
import json

import pytest
from conftest import REPO

from graphlab.env import has_cuda
from graphlab.output_check import output_problems
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
    problems = output_problems(executed, recorded=not has_cuda())
    assert problems == [], f"{len(problems)} finding(s):\n" + "\n".join(problems)
    checks = [line for line in _lines(executed) if line.startswith(("Right", "Not yet", "Not answered yet"))]
    assert checks and all(line.startswith("Not answered yet") for line in checks), "exercises start unanswered"


def _text(value):
    return "".join(value) if isinstance(value, list) else str(value)


def _lines(executed):
    return [line for c in executed["cells"] for o in c.get("outputs", [])
            for line in _text(o.get("text", "")).splitlines()]


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
