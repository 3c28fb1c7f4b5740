"""The %%cudagraph magic on CPU, through IPython's InteractiveShell: argument parsing, the no-GPU error,
and the wiring (namespace, display) with the capture step stood in."""
from __future__ import annotations

import pytest
from IPython.core.interactiveshell import InteractiveShell

from graphlab.errors import GPUUnavailableError, GraphlabError
from graphlab.ui import magic


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.extension_manager.load_extension("graphlab")
    return ip


def run(shell, line, cell="y = x * 2\n"):
    result = shell.run_cell(f"%%cudagraph {line}\n{cell}")
    return result.error_in_exec


def test_load_ext_registers_the_cell_magic(shell):
    assert "cudagraph" in shell.magics_manager.magics["cell"]


def test_parse_defaults_and_options():
    args = magic.parse_cudagraph_args("step")
    assert (args.name, args.warmup_calls, args.no_show, args.flags, args.grad_mode, args.mode) == (
        "step", 3, False, None, "no_grad", "global")
    args = magic.parse_cudagraph_args("g2 --warmup-calls 0 --no-show --flags verbose|handles --grad-mode inference_mode")
    assert (args.name, args.warmup_calls, args.no_show, args.flags, args.grad_mode) == (
        "g2", 0, True, "verbose|handles", "inference_mode")


@pytest.mark.parametrize("line, message", [
    ("", "Usage: %%cudagraph NAME"),
    ("1bad", "not a valid Python name"),
    ("g --warmup-calls -1", "--warmup-calls must be 0 or more"),
    ("g --warmup-calls many", "invalid int value"),
    ("g --flags bogus", "unknown DOT flag 'bogus'"),
    ("g --grad-mode train", "invalid choice"),
])
def test_bad_lines_give_one_clear_error(shell, line, message):
    err = run(shell, line)
    assert isinstance(err, GraphlabError) and message in str(err)


def test_without_gpu_the_magic_says_what_is_missing_and_how_to_explore_a_recording(shell):
    shell.user_ns.pop("step", None)
    err = run(shell, "step --warmup-calls 2")
    assert isinstance(err, GPUUnavailableError)
    assert "%%cudagraph needs a CUDA GPU" in str(err) and "load_recording" in str(err)
    assert "step" not in shell.user_ns


def test_magic_passes_its_options_and_stores_the_graph(shell, monkeypatch):
    import torch

    from graphlab.capture import cell as cell_capture

    seen = {}

    class Captured:
        def _repr_html_(self):
            return "<b>stand-in</b>"

    def fake_capture_cell(code, namespace, options, **kwargs):
        seen.update(kwargs, code=code, namespace=namespace, options=options)
        return Captured()

    monkeypatch.setattr("graphlab.env.require_cuda", lambda what: torch)
    monkeypatch.setattr(cell_capture, "capture_cell", fake_capture_cell)
    err = run(shell, "step --warmup-calls 5 --flags 5 --no-show", "y = x + 1\n")
    assert err is None
    assert isinstance(shell.user_ns["step"], Captured)
    assert seen["code"] == "y = x + 1\n" and seen["namespace"] is shell.user_ns
    assert (seen["options"].warmup_calls, seen["options"].dot_flags, seen["name"]) == (5, 5, "step")
    shown = []
    monkeypatch.setattr(magic, "_show", shown.append)
    assert run(shell, "other") is None and len(shown) == 1


def test_pool_must_name_an_existing_variable(shell, monkeypatch):
    import torch

    monkeypatch.setattr("graphlab.env.require_cuda", lambda what: torch)
    err = run(shell, "g --pool nowhere")
    assert isinstance(err, GraphlabError) and "--pool nowhere" in str(err)


def test_a_capture_error_shows_as_cause_where_why_fix_not_a_long_traceback(shell, capsys):
    from graphlab.capture.diagnose import CAUSES, Diagnosis, UserLine, capture_error

    line = UserLine("<cudagraph cell step>", 2, "if y.sum().item() > 0:")
    shell.user_ns["err"] = capture_error(Diagnosis(CAUSES["host_sync"], "CUDA error: ...", line, "`.item()`"))
    capsys.readouterr()
    result = shell.run_cell("raise err")
    shown = capsys.readouterr().out
    assert result.error_in_exec is shell.user_ns["err"]
    assert "CaptureError" in shown and "cell line 2: if y.sum().item() > 0:" in shown and "fix:" in shown
    assert "Traceback" not in shown and "capture.py" not in shown
