"""Every tutorial notebook is committed as JupyterLab saves it, without outputs (scripts/normalize_notebooks.py).

Issue 10: opening 00_start_here in JupyterLab dirtied the clone (its autosave rewrote the notebook's
metadata). The real-browser test checks that a normalised notebook opened in JupyterLab stays unchanged.
"""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import nbformat
import pytest
from conftest import REPO


def _normalizer():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("normalize_notebooks", REPO / "scripts" / "normalize_notebooks.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


NORMALIZE = _normalizer()
NOTEBOOKS = NORMALIZE.notebooks()


def test_there_are_notebooks() -> None:
    assert NOTEBOOKS and all(p.parent == REPO / "notebooks" for p in NOTEBOOKS)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_normalised(path: Path) -> None:
    nb = json.loads(path.read_text(encoding="utf-8"))
    assert nb["metadata"] == NORMALIZE.JUPYTERLAB_METADATA, (
        f"{path.name}: notebook metadata is not what JupyterLab writes, so opening it changes the file; "
        "run .venv/bin/python scripts/normalize_notebooks.py")
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None, f"{path.name}: strip outputs"
    assert path.read_text(encoding="utf-8") == NORMALIZE.normalized_text(path), (
        f"{path.name}: not written as nbformat/JupyterLab write notebooks; run .venv/bin/python "
        "scripts/normalize_notebooks.py")


def test_the_normaliser_changes_only_outputs_and_notebook_metadata(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}, "widgets": {"state": {}}})
    nb.cells = [nbformat.v4.new_markdown_cell("# Title", metadata={"tags": ["keep"]}),
                nbformat.v4.new_code_cell("1 + 1", execution_count=3,
                                          outputs=[nbformat.v4.new_output("execute_result", {"text/plain": "2"},
                                                                          execution_count=3)])]
    path = tmp_path / "x.ipynb"
    nbformat.write(nb, path)
    assert NORMALIZE.main(["--check", str(path)]) == 1
    assert NORMALIZE.main([str(path)]) == 0
    again = json.loads(path.read_text())
    assert again["metadata"] == NORMALIZE.JUPYTERLAB_METADATA  # "widgets" gone, kernelspec as JupyterLab writes it
    assert [c["id"] for c in again["cells"]] == [c["id"] for c in nb.cells]
    assert again["cells"][0]["metadata"] == {"tags": ["keep"]} and again["cells"][0]["source"] == ["# Title"]
    assert again["cells"][1]["outputs"] == [] and again["cells"][1]["execution_count"] is None
    assert NORMALIZE.main(["--check", str(path)]) == 0  # idempotent
    assert path.read_text().endswith("}\n")
