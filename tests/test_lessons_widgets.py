"""Notebook 04 (reading the graph) as a lesson: its words agree with the widgets it opens, and its cells are the calls
a learner writes. Issue 37: the markdown said "mint" where the diff view said "green"."""
from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parent.parent
NOTEBOOK = REPO / "notebooks" / "04_reading_the_graph.ipynb"


@pytest.fixture(scope="module")
def nb():
    return nbformat.read(NOTEBOOK, as_version=4)


def _markdown(nb) -> str:
    return "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


def _paragraph(text: str, start: str) -> str:
    at = text.index(start)
    end = text.find("\n\n", at)
    return re.sub(r"\s+", " ", text[at:end if end >= 0 else None])


def test_the_diff_colours_are_named_as_the_diff_view_names_them(nb) -> None:
    import graphlab as gl
    from graphlab.viz.style import STATUS_COLOUR_WORDS

    recording = gl.load_recording("gpt")
    view = gl.inspect(recording.graph("b1"), compare=recording.graph("b8"), names=("batch 1", "batch 8"))
    said = _paragraph(_markdown(nb), "The diff view draws both graphs")
    for status, words in STATUS_COLOUR_WORDS.items():
        if status == "fused":
            continue  # batch 1 vs batch 8 fuses nothing
        assert f"{words}:" in view.hint.lower(), (status, view.hint)
    assert "grey is the same" in said and "pale yellow the same kernel with another launch shape" in said
    assert "yellow another kernel" in said
    assert "mint only at batch 8 (added)" in said and "mint: only in batch 8 (added)" in view.hint
    assert "orange only at batch 1 (removed)" in said and "orange: only in batch 1 (removed)" in view.hint
    assert "green" not in said.lower() and "green" not in view.hint.lower()


def test_the_family_colours_are_named_as_the_drawing_paints_them(nb) -> None:
    import graphlab as gl
    from graphlab.viz.style import FAMILY_COLOUR_WORDS

    said = _paragraph(_markdown(nb), "- Colours are kernel *families*")
    families = gl.load_recording("gpt").graph("b1").count_by_family()
    for family in families:
        assert f"{FAMILY_COLOUR_WORDS[family]} {family}" in said, family


def test_every_code_cell_is_a_library_call(nb) -> None:
    """No formatting in the notebook: no f-strings, no pandas, no loops printing fields one by one."""
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        source = cell.source
        assert not re.search(r"\bf[\"']", source), source
        assert "pandas" not in source and "pd." not in source, source
        assert not re.search(r"^\s*for\b", source, re.MULTILINE), source
        assert ".details.get(" not in source and ".details[" not in source, source
