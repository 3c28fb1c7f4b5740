"""Capture-failure diagnosis on CPU: real torch 2.11 messages, real tracebacks through fake torch frames."""
from __future__ import annotations

import linecache
import os

import pytest
import torch

from graphlab.errors import BadInputError, CaptureError
from graphlab.capture import diagnose as dg
from graphlab.studies import pitfalls

# The exact text torch 2.11 raised on the H200 (reference notes, section 6), with its CUDA boilerplate.
BOILERPLATE = (
    "\nCUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
    "might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
)
NOT_PERMITTED = "CUDA error: operation not permitted when stream is capturing" + BOILERPLATE

# A function that lives "inside torch": compiled with a file name in torch's package folder, so the
# traceback looks like a real one (user frame -> torch internals -> error).
_FAKE_TORCH_FILE = os.path.join(os.path.dirname(torch.__file__), "_graphlab_fake_internals.py")
_FAKE_TORCH_SOURCE = (
    "class FakeTensor:\n"
    "    def item(self):\n"
    "        raise RuntimeError(MESSAGE)\n"
    "\n"
    "    def query(self):\n"
    "        raise RuntimeError(MESSAGE)\n"
)
_fake_ns: dict = {"MESSAGE": NOT_PERMITTED}
exec(compile(_FAKE_TORCH_SOURCE, _FAKE_TORCH_FILE, "exec"), _fake_ns)
FakeTensor = _fake_ns["FakeTensor"]  # tensor-like methods that fail the way torch does during capture


def user_step(t):
    y = t
    return y.item()


def raised(fn, *args):
    with pytest.raises(Exception) as info:
        fn(*args)
    return info.value


@pytest.mark.parametrize(
    "message, line, cause",
    [
        (NOT_PERMITTED, "if y.sum().item() > 0:", "host_sync"),
        (NOT_PERMITTED, "print(y)", "host_sync"),
        (NOT_PERMITTED, "torch.cuda.synchronize()", "host_sync"),
        (NOT_PERMITTED, "idx = torch.nonzero(x > 0)", "host_sync"),
        (NOT_PERMITTED, "y = (x * 2).cpu()", "host_sync"),
        # on torch 2.11 `.cpu()` in capture trips torch's own copy check, not CUDA's: still a host sync
        (dg.RECORDED_MESSAGES["pageable_copy"], "y = (x * 2).cpu()", "host_sync"),
        (NOT_PERMITTED, "done = torch.cuda.current_stream().query()", "forbidden_op"),
        (NOT_PERMITTED, "buf = torch.empty(10, pin_memory=True)", "forbidden_op"),
        (NOT_PERMITTED, None, "host_sync"),
        (dg.RECORDED_MESSAGES["default_stream"], None, "default_stream"),
        ("RuntimeError: " + dg.RECORDED_MESSAGES["pageable_copy"], "b = torch.tensor([1.0], device='cuda')",
         "pageable_copy"),
        (dg.RECORDED_MESSAGES["library_handle"] + BOILERPLATE, "y = x @ w", "library_handle"),
        ("CUDA error: operation failed due to a previous error during capture" + BOILERPLATE, None, "invalidated"),
        (dg.RECORDED_MESSAGES["empty"], None, "empty"),
        ("CUDA error: capturing stream has unjoined work", None, "unjoined_stream"),  # torch 2.11 on the H200
        ("CUDA error: operation would make the legacy stream depend on a capturing blocking stream", None,
         "legacy_stream"),
        ("TypeError: 'CUDAGraph' object does not support the context manager protocol", None, "graph_context"),
        ("You cannot access the raw cudaGraph_t instance unless CUDAGraph was initialized with keep_graph=true",
         None, "keep_graph"),
        ("CUDA out of memory. Tried to allocate 2.00 GiB", None, "unknown"),
    ],
)
def test_classify_real_messages(message, line, cause):
    found, _ = dg.classify(message, line)
    assert found.key == cause


def test_line_detail_names_the_operation():
    _, detail = dg.classify(NOT_PERMITTED, "value = y.sum().item()")
    assert ".item()" in detail
    _, detail = dg.classify(NOT_PERMITTED, "print(y)")
    assert "print" in detail


def test_user_line_skips_torch_frames_and_names_the_function():
    exc = raised(user_step, FakeTensor())
    diagnosis = dg.diagnose(exc)
    assert diagnosis.cause.key == "host_sync"
    assert diagnosis.line is not None
    assert diagnosis.line.text == "return y.item()"
    assert diagnosis.line.function == "user_step"
    assert diagnosis.line.filename == __file__
    assert diagnosis.message == "CUDA error: operation not permitted when stream is capturing"


def test_cell_line_is_found_through_linecache():
    code = "y = x\nok = 1\ndone = y.query()\n"
    filename = "<cudagraph cell step>"
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    ns = {"x": FakeTensor()}
    exc = raised(exec, compile(code, filename, "exec"), ns)
    diagnosis = dg.diagnose(exc, prefer_filename=filename)
    assert diagnosis.cause.key == "forbidden_op"
    assert diagnosis.line.is_cell
    assert diagnosis.line.where() == "cell line 3"
    assert "cell line 3" in diagnosis.summary() and "done = y.query()" in diagnosis.summary()


def test_capture_error_is_one_line_with_cause_line_and_fix():
    exc = raised(user_step, FakeTensor())
    err = dg.capture_error(dg.diagnose(exc), exc)
    assert isinstance(err, CaptureError)
    text = str(err)
    assert "\n" not in text
    assert "host sync" in text and "return y.item()" in text and "Fix:" in text
    assert err.cause == "host_sync" and err.original is exc
    assert "operation not permitted" in err.original_traceback


def test_diagnosis_round_trips_through_json_dict():
    exc = raised(user_step, FakeTensor())
    diagnosis = dg.diagnose(exc)
    again = dg.Diagnosis.from_dict(diagnosis.to_dict())
    assert again.cause is diagnosis.cause
    assert again.line.lineno == diagnosis.line.lineno and again.line.text == diagnosis.line.text
    html = again._repr_html_()
    assert "host sync" in html and "<code>return y.item()</code>" in html


def test_a_capture_error_is_not_diagnosed_twice():
    exc = raised(user_step, FakeTensor())
    err = dg.capture_error(dg.diagnose(exc), exc)
    assert dg.diagnose(err) is err.diagnosis


def test_every_example_demonstrates_a_catalogued_cause():
    keys = {c.key for c in dg.catalogue()}
    assert "unknown" not in keys
    for name, example in pitfalls.EXAMPLES.items():
        assert example.cause in keys, name
        compile(example.code, name, "exec")
        compile(example.setup, name, "exec")
    covered = {e.cause for e in pitfalls.EXAMPLES.values()}
    assert {"host_sync", "default_stream", "pageable_copy", "library_handle", "forbidden_op", "empty"} <= covered


@pytest.mark.parametrize("key", ["item", "print", "synchronize", "nonzero", "forbidden_op"])
def test_examples_classify_from_their_failing_line(key):
    example = pitfalls.EXAMPLES[key]
    causes = {dg.classify(NOT_PERMITTED, line)[0].key for line in example.code.splitlines()[1:] or
              example.code.splitlines()}
    assert example.cause in causes


def test_run_example_rejects_unknown_names():
    with pytest.raises(BadInputError, match="no example"):
        pitfalls.run_example("nope")


def test_an_ordinary_bug_keeps_its_type_and_message_in_the_one_line_error():
    def step(t):
        return t * undefined_scale  # noqa: F821

    exc = raised(step, 2)
    err = dg.capture_error(dg.diagnose(exc), exc)
    assert err.cause == "unknown"
    assert "NameError: name 'undefined_scale' is not defined" in str(err) and "\n" not in str(err)
