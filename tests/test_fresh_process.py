"""A measurement in a fresh process hands back its JSON, or says why it did not."""
from __future__ import annotations

import subprocess

import pytest

from graphlab.fresh_process import run_in_fresh_process


def test_the_last_result_line_comes_back():
    code = "from graphlab.fresh_process import result_line; print('noise'); print(result_line({'a': 1})); " \
           "print(result_line({'a': 2, 'b': [1, 2]}))"
    assert run_in_fresh_process(code, timeout_s=60) == {"a": 2, "b": [1, 2]}


def test_a_child_that_fails_says_why():
    out = run_in_fresh_process("import sys; print('working'); sys.exit('out of memory')", timeout_s=60)
    assert out == {"error": "exit 1: out of memory"}


def test_a_child_past_its_time_is_stopped():
    with pytest.raises(subprocess.TimeoutExpired):
        run_in_fresh_process("import time; time.sleep(30)", timeout_s=1)
