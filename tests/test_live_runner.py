"""scripts/run_notebooks_live.py is the GPU machine's kernel: it keeps every output a notebook shows and checks them
with the same output check as `graphlab tour`."""
from __future__ import annotations

import importlib.util
import json

import nbformat
import pytest
from conftest import REPO


def _runner():
    spec = importlib.util.spec_from_file_location("run_notebooks_live", REPO / "scripts" / "run_notebooks_live.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_the_live_runner_keeps_streams_displays_and_values_and_checks_them(tmp_path, capsys):
    pytest.importorskip("IPython")
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("import graphlab as gl\nprint('hello')"),
        nbformat.v4.new_code_cell("from IPython.display import HTML, display\ndisplay(HTML('<b>shown</b>'))"),
        nbformat.v4.new_code_cell("gl.readable([{'p50_us': 12.5}])"),
        nbformat.v4.new_code_cell("{'a_key': 1}"),
        nbformat.v4.new_code_cell("raise gl.BadInputError('no')"),
    ]
    path = tmp_path / "probe.ipynb"
    nbformat.write(nb, path)
    failed, problems = _runner().run(str(path), out_dir=tmp_path / "out")
    executed = json.loads((tmp_path / "out" / "probe.ipynb").read_text())
    outs = [c["outputs"] for c in executed["cells"]]
    assert outs[0] == [{"output_type": "stream", "name": "stdout", "text": "hello\n"}]
    assert outs[1][0]["output_type"] == "display_data" and "<b>shown</b>" in outs[1][0]["data"]["text/html"]
    assert outs[2][0]["output_type"] == "execute_result" and "p50 (µs)" in outs[2][0]["data"]["text/html"]
    assert outs[4][-1]["output_type"] == "error" and failed == 1
    assert len(problems) == 2 and all("cell 3" in p for p in problems)  # the raw dict, as text and as a value
    from IPython.core.interactiveshell import InteractiveShell

    # the runner leaves no patched shell behind: the next shell shows tracebacks again (test_magic's did not)
    assert "keep_traceback" not in repr(InteractiveShell.instance().showtraceback)
    printed = capsys.readouterr().out
    assert "NOTEBOOK FAIL" in printed and "NOTEBOOK FINDING" in printed and "output check: 2 finding(s)" in printed
