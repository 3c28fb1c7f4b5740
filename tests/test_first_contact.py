"""What a new user meets first says true things clearly: gl.about(), set_mode('live') without a GPU, a missing DOT
file, an exercise answered with text where a number is asked for."""
from __future__ import annotations

import pytest

import graphlab as gl
from graphlab.about import Environment
from graphlab.env import has_cuda
from graphlab.ui.exercise import check_answer

FEATURES = {"keep_graph": True, "raw_cuda_graph": True, "get_graph_data": False, "conditional_nodes": True,
            "cond_if": False, "cond_while": False}


def _env(live):
    return Environment(python="3.11.7", torch="2.13.0+cpu" if not live else "2.11.0+cu130",
                       torch_cuda=None if not live else "13.0", cuda_available=live,
                       gpus=["NVIDIA H200"] if live else [], graph_features=dict(FEATURES))


def test_about_on_a_cpu_build_says_the_api_is_there_and_unusable_never_yes():
    text = str(_env(live=False))
    line = next(x for x in text.splitlines() if x.startswith("CUDA graph features"))
    assert "not usable here: no CUDA GPU" in line and "keep_graph and raw_cuda_graph" in line
    assert "=yes" not in text and "yes" not in line.split("(")[0]
    assert "none here" in next(x for x in text.splitlines() if x.startswith("conditional nodes"))


def test_about_on_a_gpu_lists_the_features_and_what_is_missing():
    line = next(x for x in str(_env(live=True)).splitlines() if x.startswith("CUDA graph features"))
    assert line.endswith("keep_graph and raw_cuda_graph (missing: get_graph_data)")
    html = _env(live=True)._repr_html_()
    assert "<table" in html and "CUDA graph features" in html and "_repr" not in html


@pytest.mark.skipif(has_cuda(), reason="live mode works on a GPU machine")
def test_live_mode_without_a_gpu_says_why_and_what_to_call():
    with pytest.raises(gl.GPUUnavailableError) as err:
        gl.set_mode("live")
    text = str(err.value)
    assert text.startswith("live mode needs a CUDA GPU, and this machine has ")
    assert "gl.set_mode('auto')" in text and "(the notebooks do this for you)" not in text
    assert text.count("live mode") == 1 and ". ." not in text
    assert gl.current_mode() is None or not gl.current_mode().live


def test_an_answer_in_quotes_is_told_that_it_is_text(capsys):
    assert not check_answer("3", 3, hint="count them")
    assert "That is text (in quotes); the answer is a number: write 3 without the quotes." in capsys.readouterr().out
    assert not check_answer(3, "blocks.0", hint="h")
    assert "the answer is text: put it in quotes" in capsys.readouterr().out
    assert not check_answer(4, 3, hint="count")
    assert "That is" not in capsys.readouterr().out  # a wrong number of the right kind gets no kind note


def test_a_missing_dot_file_names_the_path_and_where_dumps_come_from(tmp_path):
    with pytest.raises(gl.DotFileError, match="no such file; looked at .*nothing.dot.*cudaGraphDebugDotPrint"):
        gl.read_dot(tmp_path / "nothing.dot")
