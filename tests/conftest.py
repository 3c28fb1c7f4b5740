"""Shared test set-up: GPU tests skip themselves where no CUDA GPU is visible; a helper for thread tests."""
from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, Callable, Iterable

import pytest

from graphlab.env import has_cuda

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
PUBLIC_SAMPLES = FIXTURES / "public"  # third-party dumps, kept in the repository (see its README)
PACKAGE = REPO / "graphlab"


def files_under(root: Path) -> frozenset[str]:
    """Every file under `root`, as a path relative to it; `__pycache__` folders left out."""
    found = set()
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        found.update(os.path.relpath(os.path.join(folder, f), root) for f in files)
    return frozenset(found)


@pytest.fixture(scope="session", autouse=True)
def _the_tests_write_nothing_into_the_package():
    """The package is what ships: a test writes under `tmp_path`, never into graphlab/. Fails the run (an error at
    the last test's teardown) naming every file that was not there when the run began."""
    before = files_under(PACKAGE)
    yield
    written = sorted(files_under(PACKAGE) - before)
    assert written == [], (f"the tests wrote {len(written)} file(s) into graphlab/: {written} (write under tmp_path; "
                           "a module you created yourself while the tests ran shows here too)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if has_cuda():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (run `pytest -m gpu` on a GPU machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def _run_threads(work: Callable[[Any], None], args: Iterable[Any], timeout_s: float) -> list[BaseException]:
    """Run `work(arg)` in one thread per arg, all at once; the exceptions they raised, in no order.

    Fails the test if a thread is still running `timeout_s` after the joins began (a hang or deadlock).
    """
    failures: list[BaseException] = []

    def guarded(arg: Any) -> None:
        try:
            work(arg)
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            failures.append(exc)

    threads = [threading.Thread(target=guarded, args=(arg,)) for arg in args]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=timeout_s)
    hung = sum(t.is_alive() for t in threads)
    assert not hung, f"{hung} of {len(threads)} threads still running after {timeout_s:g} s: a hang or deadlock"
    return failures


@pytest.fixture(autouse=True)
def _mode_is_restored_after_each_test():
    """A test that calls `gl.set_mode` must not leave the mode it chose to the next test: "auto" on a machine
    without a GPU is recorded mode, so a test that "restored" with set_mode("auto") switched the rest of the
    run to recordings. Put back exactly what was there (no set_mode call, in a fresh process)."""
    from graphlab import mode

    before = mode._current
    yield
    mode._current = before


@pytest.fixture
def recorded() -> None:
    """Recorded mode, from the committed recordings, for one test (the autouse fixture above puts the mode back)."""
    from graphlab.mode import set_mode

    set_mode("recorded")


@pytest.fixture
def run_threads() -> Callable[[Callable[[Any], None], Iterable[Any], float], list[BaseException]]:
    """`run_threads(work, args, timeout_s)`: see `_run_threads`."""
    return _run_threads


@pytest.fixture(scope="module")
def eager_mlp_server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """`python -m graphlab.serve` of the zoo MLP, eager, on the CPU: a process of its own on a free port, for one
    test module (a `graphlab.loadtest.external.ServerProcess`: `base_url`, `get_json`, its log)."""
    pytest.importorskip("uvicorn")
    import sys

    from graphlab.loadtest.external import ServerProcess

    folder = tmp_path_factory.mktemp("eager_mlp_server")
    cmd = [sys.executable, "-m", "graphlab.serve", "--device", "cpu", "--model", "mlp", "--setting", "eager"]
    with ServerProcess(cmd, folder / "server.log") as server:
        yield server
