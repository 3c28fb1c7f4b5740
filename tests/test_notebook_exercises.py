"""The exercise convention: answers start as None, checks never raise, and the tests fill the answers in."""
from __future__ import annotations

import json

import nbformat
import pytest
from conftest import REPO
from notebook_answers import ANSWERS

from graphlab.errors import BadInputError
from graphlab.tour import execute_notebook, fill_answers
from graphlab.ui.exercise import NOT_ANSWERED, RIGHT, WRONG, check_answer

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


def _exercise_cells(path):
    nb = nbformat.read(path, as_version=4)
    return [c for c in nb.cells if "exercise" in c.get("metadata", {}).get("tags", [])]


def test_check_answer_says_where_an_answer_stands_and_never_raises(capsys):
    assert check_answer(None, 13, hint="add bucket minus size").state == NOT_ANSWERED
    assert capsys.readouterr().out.startswith("Not answered yet: add bucket minus size")
    wrong = check_answer(12, 13, hint="add bucket minus size")
    assert wrong.state == WRONG and not wrong and "you wrote 12" in wrong.line
    assert check_answer(13, 13, hint="h", right="13 rows").line == "Right: 13 rows"
    assert check_answer(0.1 + 0.2, 0.3, hint="h").state == RIGHT
    assert check_answer("x", 3.0, hint="h").state == WRONG  # a string for a float: wrong, no TypeError
    assert check_answer({2, 1}, {1, 2}, hint="h").right
    assert check_answer(5, None, hint="h", judge=lambda a: a > 4).right
    assert check_answer(5, None, hint="h", judge=lambda a: a.nope).state == WRONG


def test_fill_answers_replaces_the_none_line_and_refuses_a_stale_name():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = None  # hint\ny = None", metadata={"tags": ["exercise"]}),
                nbformat.v4.new_code_cell("z = None")]
    fill_answers(nb, {"x": "3"})
    assert nb.cells[0].source == "x = 3\ny = None" and nb.cells[1].source == "z = None"
    with pytest.raises(BadInputError, match="'z'"):
        fill_answers(nb, {"z": "1"})  # not in an exercise cell
    raw = {"cells": [{"cell_type": "code", "metadata": {"tags": ["exercise"]}, "source": ["x = None  # hint\n", "y = 2"]}]}
    fill_answers(raw, {"x": "3"})  # plain JSON, as scripts/run_notebooks_live.py reads it on a GPU machine
    assert raw["cells"][0]["source"] == "x = 3\ny = 2"


def test_the_live_runner_fills_the_answers_when_asked(tmp_path, capsys):
    """scripts/run_notebooks_live.py --answers: the check cell judges the filled-in answer (here on the CPU)."""
    pytest.importorskip("IPython")
    import importlib.util

    spec = importlib.util.spec_from_file_location("run_live", REPO / "scripts" / "run_notebooks_live.py")
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("my_bucket = None  # hint\nmy_padding = None  # hint",
                                          metadata={"tags": ["exercise"]}),
                nbformat.v4.new_code_cell("print('answer:', my_padding)")]
    path = tmp_path / "07_multi_gpu.ipynb"  # its answers in notebook_answers.py: my_padding = 4 * 16 - (5 + 2 + 9 + 3)
    nbformat.write(nb, path)
    failed, problems = runner.run(str(path), answers=True, out_dir=tmp_path / "out")
    assert failed == 0 and problems == []
    executed = json.loads((tmp_path / "out" / path.name).read_text())
    assert executed["cells"][1]["outputs"][0]["text"] == "answer: 45\n"  # the cell's own output, kept


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_exercise_starts_unanswered_and_has_an_answer_here(path):
    cells = _exercise_cells(path)
    names = {line.split(" = ")[0] for c in cells for line in c.source.splitlines() if line.endswith("None")
             or " = None " in line}
    assert names == set(ANSWERS.get(path.name, {})), "every exercise answer starts as None and has its answer in notebook_answers.py"
    for cell in cells:
        assert "= None" in cell.source, "an exercise cell starts its answer as None"


@pytest.mark.parametrize("name", sorted(ANSWERS), ids=str)
def test_the_filled_in_answers_are_right(name, tmp_path, monkeypatch):
    monkeypatch.setenv("TQDM_DISABLE", "1")
    execute_notebook(REPO / "notebooks" / name, tmp_path, timeout_s=600, answers=ANSWERS[name])
    out = json.loads((tmp_path / name).read_text())
    lines = [line for c in out["cells"] for o in c.get("outputs", []) for line in "".join(o.get("text", "")).splitlines()]
    checks = [line for line in lines if line.startswith(("Right", "Not yet", "Not answered yet"))]
    assert checks and all(line.startswith("Right") for line in checks), checks
