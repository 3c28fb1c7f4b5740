"""What the notebooks' live runs showed on the H200 that recorded mode cannot: a worked example's own output and
torch's warnings stay out of the learner's cell, and the inspector's text form is words."""
from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")

import graphlab as gl  # noqa: E402
from graphlab.output_check import text_problems  # noqa: E402

pytestmark = pytest.mark.gpu


def test_the_print_pitfall_does_not_print_its_tensor_into_the_cell(capsys):
    """Notebook 02 live: the `print(y)` example's eager warm-up printed a 8 x 256 tensor above its diagnosis."""
    from graphlab.studies import pitfalls

    gl.set_mode("live")
    diagnosis = pitfalls.run_example("print")
    out = capsys.readouterr().out
    assert "tensor(" not in out and out == ""
    assert diagnosis.cause.key == "host_sync"


def test_make_graphed_callables_keeps_torch_warnings_as_facts(capsys):
    """Notebook 10 live: autograd's warnings (no CUDA context on the backward's thread, an AccumulateGrad stream
    mismatch) went to the cell's stderr with the machine's paths."""
    from graphlab.studies.watch_examples import run_example

    gl.set_mode("live")
    with warnings.catch_warnings(record=True) as leaked:
        warnings.simplefilter("always")
        example = run_example("make_graphed_callables")
    assert [str(w.message)[:60] for w in leaked] == []
    assert capsys.readouterr().err == ""
    assert text_problems(str(example), "make_graphed_callables") == []
