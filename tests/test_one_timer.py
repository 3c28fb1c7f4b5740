"""One timer: `graphlab.clock` is the only module that reads a clock to time work, and `graphlab.stats` the only
one that computes percentiles and medians. Everything else times through the clock's loops and the schedulers of
`graphlab.timing.schedulers`. The only exceptions: the service's per-request timestamps (`time.monotonic_ns`, the
clock of `graphlab.clock.timestamp_ns`), which the service's threads stamp on each request as it moves, and its
deadlines (`time.monotonic`: how long is left to wait), which time nothing."""
from __future__ import annotations

import ast

from conftest import REPO

PACKAGE = REPO / "graphlab"
#: the functions of `time` that read a clock
CLOCKS = {"perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time", "time_ns", "process_time",
          "process_time_ns", "thread_time", "thread_time_ns"}
#: module -> the clocks it may read, and why
ALLOWED = {
    "graphlab/clock.py": (CLOCKS, "the one clock"),
    "graphlab/serve/service.py": ({"monotonic_ns", "monotonic"}, "request timestamps and the shutdown deadline"),
    "graphlab/serve/worker.py": ({"monotonic_ns", "monotonic"}, "request timestamps, join's and the restart "
                                                                "window's deadlines"),
    "graphlab/serve/batcher.py": ({"monotonic_ns", "monotonic"}, "request timestamps and the wait for a batch"),
    "graphlab/serve/app.py": ({"monotonic"}, "what is left of the shutdown deadline"),
    "graphlab/serve/http.py": ({"monotonic"}, "the shutdown deadline"),
}
#: ways to compute order statistics outside graphlab.stats
OWN_STATS = {("statistics", "median"), ("statistics", "quantiles"), ("statistics", "fmean"), ("statistics", "mean"),
             ("np", "percentile"), ("numpy", "percentile"), ("np", "median"), ("np", "quantile")}


def clock_reads(source: str) -> list[tuple[int, str]]:
    """(line, clock) for every read of a `time` clock: `time.perf_counter()`, `from time import monotonic`."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in CLOCKS and isinstance(node.value, ast.Name) \
                and node.value.id == "time":
            found.append((node.lineno, node.attr))
        elif isinstance(node, ast.ImportFrom) and node.module == "time":
            found += [(node.lineno, a.name) for a in node.names if a.name in CLOCKS]
    return found


def own_statistics(source: str) -> list[tuple[int, str]]:
    """(line, what) for every median/percentile computed outside graphlab.stats, and functions named like one."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and (node.value.id, node.attr) in OWN_STATS:
            found.append((node.lineno, f"{node.value.id}.{node.attr}"))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.strip("_") in (
                "median", "quantile", "percentile", "p50", "p99"):
            found.append((node.lineno, f"def {node.name}"))
        elif isinstance(node, ast.Import) and any(a.name == "statistics" for a in node.names):
            found.append((node.lineno, "import statistics"))
    return found


def _sources() -> dict[str, str]:
    return {p.relative_to(REPO).as_posix(): p.read_text() for p in sorted(PACKAGE.rglob("*.py"))}


def test_no_module_but_the_clock_reads_a_clock():
    wrong = []
    for path, source in _sources().items():
        allowed = ALLOWED.get(path, (set(), ""))[0]
        wrong += [f"{path}:{line} time.{name}" for line, name in clock_reads(source) if name not in allowed]
    assert wrong == [], "time work with graphlab.clock (Stopwatch, synced_us, ...) and graphlab.timing.schedulers"


def test_no_module_but_stats_computes_its_own_statistics():
    wrong = []
    for path, source in _sources().items():
        if path == "graphlab/stats.py":
            continue
        wrong += [f"{path}:{line} {what}" for line, what in own_statistics(source)]
    assert wrong == [], "use graphlab.stats (median, percentile, summarize)"


def test_every_allowed_exception_is_still_needed():
    """An exception nobody uses any more is a hole in the rule: remove it."""
    sources = _sources()
    for path, (allowed, _why) in ALLOWED.items():
        if path == "graphlab/clock.py":
            continue
        assert path in sources, f"{path} is gone: drop it from ALLOWED"
        assert {name for _, name in clock_reads(sources[path])} & allowed, f"{path} reads no clock any more"


def test_the_checks_can_fail():
    source = ("import time\nfrom time import monotonic\nimport statistics\n"
              "def f():\n    t0 = time.perf_counter_ns()\n    return statistics.median([1.0])\n"
              "def _quantile(v, q):\n    return v\n")
    assert [name for _, name in clock_reads(source)] == ["monotonic", "perf_counter_ns"] or \
        sorted(name for _, name in clock_reads(source)) == ["monotonic", "perf_counter_ns"]
    assert sorted(w for _, w in own_statistics(source)) == ["def _quantile", "import statistics", "statistics.median"]
    assert clock_reads("import time\ntime.sleep(1)\n") == []


def test_the_clock_and_schedulers_time_real_work():
    from graphlab.clock import Stopwatch, block_per_call_us, no_sync, split_us, submit_us, synced_us
    from graphlab.timing.schedulers import interleave, throughput_window

    work = lambda: sum(range(2000))  # noqa: E731
    assert all(us > 0 for us in synced_us(work, 5, no_sync))
    submit, wall = split_us(work, 4, no_sync)
    assert len(submit) == len(wall) == 4 and all(w >= s for s, w in zip(submit, wall))
    assert len(submit_us(work, 3, no_sync)) == 3 and block_per_call_us(work, 10, no_sync) > 0
    with Stopwatch() as sw:
        work()
    assert sw.ns > 0 and sw.ms == sw.ns / 1e6
    order: list[str] = []
    out = interleave({k: (lambda k=k: order.append(k) or len(order)) for k in "abc"}, 3, order="rotate")
    assert order == list("abc" "bca" "cab") and out["a"] == [1, 6, 8]
    done = throughput_window(lambda r: r, lambda r: None, [1, 2], 0.05, 2)
    assert done["requests"] > 0 and done["requests_per_s"] > 0


def test_bad_timing_arguments_get_a_timing_error():
    import pytest

    from graphlab.clock import Stopwatch, no_sync, synced_us
    from graphlab.errors import TimingError
    from graphlab.timing.schedulers import interleave, throughput_window

    with pytest.raises(TimingError, match="at least one call"):
        synced_us(lambda: None, 0, no_sync)
    with pytest.raises(TimingError, match="unknown order"):
        interleave({"a": lambda: 1}, 2, order="random")
    with pytest.raises(TimingError, match="never started"):
        Stopwatch().stop()
    with pytest.raises(TimingError, match="window"):
        throughput_window(lambda r: r, lambda r: None, [], 1.0, 1)
