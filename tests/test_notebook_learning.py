"""The notebooks teach with the code a learner would write: one mode cell, public names, a checked exercise."""
from __future__ import annotations

import json
import re

import pytest
from conftest import REPO

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
MODE_WORDS = re.compile(r"\b(set_mode|has_cuda|is_recorded|current_mode|LIVE)\b")


def _cells(path):
    return json.loads(path.read_text())["cells"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_at_most_one_code_cell_mentions_the_mode(path):
    code = ["".join(c["source"]) for c in _cells(path) if c["cell_type"] == "code"]
    mentions = [src for src in code if MODE_WORDS.search(src)]
    assert len(mentions) <= 1, mentions
    assert not any(re.search(r"^\s*if\s+LIVE\b", src, re.M) for src in code)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_cells_use_public_names(path):
    code = "\n".join("".join(c["source"]) for c in _cells(path) if c["cell_type"] == "code")
    # the studies (the experiments behind the recordings) are called from graphlab.studies, on purpose
    private = [m for m in re.findall(r"^\s*(?:from|import)\s+graphlab\.[\w.]+", code, re.M)
               if not re.match(r"\s*from\s+graphlab\.studies(\.|$)", m.strip())]
    assert private == [], "notebooks call gl.<name> or a study of graphlab.studies: add the name to graphlab.__all__"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_ends_with_an_exercise_that_a_cell_checks(path):
    cells = _cells(path)
    heads = [i for i, c in enumerate(cells) if c["cell_type"] == "markdown" and "## Exercise" in "".join(c["source"])]
    assert heads, "end with a short exercise"
    after = ["".join(c["source"]) for c in cells[heads[-1]:] if c["cell_type"] == "code"]
    assert any("gl.check_answer(" in src for src in after), "a cell checks the answer with gl.check_answer"
    assert not any(re.search(r"^\s*assert\b", src, re.M) for src in after), "a check never raises: Run All goes on"


def test_magic_is_shown_as_a_real_cell_magic():
    cells = _cells(REPO / "notebooks" / "01_first_capture.ipynb")
    code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    assert any(src.startswith("%%cudagraph ") for src in code)
    assert not any("run_cell_magic" in src for src in code)
