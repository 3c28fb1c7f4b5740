"""The live/recorded switch: chosen once, said out loud, and never chosen silently."""
from __future__ import annotations

import pytest

import graphlab as gl
from graphlab import mode
from graphlab.env import has_cuda


@pytest.fixture(autouse=True)
def _fresh_mode():
    saved = mode._current
    mode._current = None
    yield
    mode._current = saved


def test_no_mode_until_one_is_set():
    assert gl.current_mode() is None
    assert mode.is_recorded() is False


@pytest.mark.skipif(has_cuda(), reason="checks the CPU-machine answer")
def test_auto_without_a_gpu_is_recorded_and_says_why():
    chosen = gl.set_mode("auto")
    assert chosen.recorded and chosen.gpu == "h200"
    assert str(chosen).startswith("recorded: no CUDA GPU here")
    assert "recorded" in chosen._repr_html_()
    assert mode.is_recorded() and mode.recorded_gpu() == "h200"


def test_recorded_can_be_forced_and_names_its_gpu_folder():
    chosen = gl.set_mode("recorded", gpu="h200")
    assert chosen.recorded and "asked for recorded mode" in str(chosen)


@pytest.mark.skipif(has_cuda(), reason="checks the CPU-machine answer")
def test_live_without_a_gpu_is_one_clear_error():
    with pytest.raises(gl.GPUUnavailableError, match="set_mode"):
        gl.set_mode("live")
    assert gl.current_mode() is None


def test_unknown_mode_is_refused():
    with pytest.raises(gl.GraphlabError, match="auto, live, recorded"):
        gl.set_mode("sometimes")
