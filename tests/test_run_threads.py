"""The thread helper the thread-safety tests share (tests/conftest.py): it hands back what the threads
raised, and fails on a thread that does not finish."""
from __future__ import annotations

import threading

import pytest


def test_every_thread_runs_and_their_exceptions_come_back(run_threads):
    seen: list[int] = []

    def work(k: int) -> None:
        seen.append(k)
        if k == 3:
            raise ValueError("thread 3")

    failures = run_threads(work, range(5), 10)
    assert sorted(seen) == [0, 1, 2, 3, 4]
    assert [str(f) for f in failures] == ["thread 3"]


def test_a_thread_that_does_not_finish_fails_the_test(run_threads):
    release = threading.Event()
    try:
        with pytest.raises(AssertionError, match="1 of 2 threads still running after 0.05 s: a hang or deadlock"):
            run_threads(lambda k: release.wait(10) if k else None, range(2), 0.05)
    finally:
        release.set()
