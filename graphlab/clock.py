"""The one clock: every measurement in graphlab reads time here, and times calls with these loops.

Pure (no torch): the device's synchronisation comes in as `sync`, a function that returns once the
work issued so far is done (`graphlab.timing.sync.cuda_sync()` on a GPU, `no_sync` on the CPU), so the
same loops time a GPU replay, a CPU stand-in and a test's fake.

Three ways to time a call, each with its own name for what it measures:

- **wall** (`synced_us`): from the call to `sync()` returning, one call at a time: what a request sees;
- **submit** (`submit_us`): from the call to its return, with the device idle before each call and the
  wait outside the timing: what the CPU pays to issue the work (a launch's host cost);
- **per call in a block** (`block_per_call_us`): a block of back-to-back calls divided by the calls, the
  wait at its end in the timing (`include_wait=True`: throughput of the device) or not (host cost when
  calls queue up).

`split_us` gives submit and wall of the same calls. Statistics of the samples come from
`graphlab.stats` (median, percentiles, spread); the schedulers that interleave these loops between
variants, send open-loop arrivals and count throughput in a window live in `graphlab.timing.schedulers`.

Every loop takes the clock from here: `now_ns` (time.perf_counter_ns, monotonic, ns resolution) for
durations and `timestamp_ns` (time.monotonic_ns, one system-wide clock) for timestamps that other
threads and processes compare. A test (tests/test_one_timer.py) holds that no other module reads a
clock, except the service's per-request timestamps (`graphlab.serve`: `time.monotonic_ns`, the clock
of `timestamp_ns`).

    >>> sw = Stopwatch()
    >>> with sw:
    ...     _ = sum(range(1000))
    >>> sw.ms >= 0.0
    True
    >>> len(synced_us(lambda: None, 5, no_sync))
    5
"""
from __future__ import annotations

import time
from typing import Any, Callable, Iterable

from graphlab.errors import TimingError

__all__ = ["Stopwatch", "block_per_call_us", "each_synced_us", "no_sync", "now_ns", "now_s", "split_us",
           "submit_us", "synced_us", "timestamp_ns"]

#: the clock for durations (ns): monotonic, the finest resolution Python offers
now_ns: Callable[[], int] = time.perf_counter_ns
#: the clock for timestamps compared across threads and processes (ns): CLOCK_MONOTONIC on Linux
timestamp_ns: Callable[[], int] = time.monotonic_ns

Sync = Callable[[], Any]


def now_s() -> float:
    """`now_ns()` in seconds (for deadlines and phase times)."""
    return now_ns() / 1e9


def no_sync() -> None:
    """The `sync` of work that is done when the call returns (the CPU)."""


class Stopwatch:
    """Times a phase: `with Stopwatch() as sw: ...`, then `sw.s`, `sw.ms`; or `start()` / `stop()`.

    Reads the elapsed time while running too (`sw.s` inside the block: time so far). With `sync`, the
    stop waits for the device first, so a phase that issued GPU work is timed to its end.
    """

    def __init__(self, sync: Sync | None = None):
        self.sync = sync
        self._start: int | None = None
        self._stop: int | None = None

    def start(self) -> Stopwatch:
        self._start, self._stop = now_ns(), None
        return self

    def stop(self) -> float:
        """Stop and return the seconds elapsed."""
        if self._start is None:
            raise TimingError("this stopwatch was never started")
        if self.sync is not None:
            self.sync()
        self._stop = now_ns()
        return self.s

    def __enter__(self) -> Stopwatch:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def ns(self) -> int:
        if self._start is None:
            return 0
        return (self._stop if self._stop is not None else now_ns()) - self._start

    @property
    def s(self) -> float:
        return self.ns / 1e9

    @property
    def ms(self) -> float:
        return self.ns / 1e6

    @property
    def us(self) -> float:
        return self.ns / 1e3


def _check(repeats: int) -> None:
    if repeats < 1:
        raise TimingError(f"timing needs at least one call, got {repeats}")


def synced_us(call: Callable[[], Any], repeats: int, sync: Sync) -> list[float]:
    """Wall µs of `repeats` calls, each from the call to `sync()` returning (the device idle before each)."""
    _check(repeats)
    out = []
    sync()
    for _ in range(repeats):
        t0 = now_ns()
        call()
        sync()
        out.append((now_ns() - t0) / 1e3)
    return out


def each_synced_us(call: Callable[[Any], Any], inputs: Iterable[Any], sync: Sync) -> list[float]:
    """Wall µs of `call(x)` for every `x` in `inputs`, in order, each synchronised (a trace replayed)."""
    out = []
    sync()
    for x in inputs:
        t0 = now_ns()
        call(x)
        sync()
        out.append((now_ns() - t0) / 1e3)
    return out


def submit_us(call: Callable[[], Any], repeats: int, sync: Sync) -> list[float]:
    """Submit µs of `repeats` calls: the call until it returns; the wait for the device is outside."""
    _check(repeats)
    out = []
    for _ in range(repeats):
        sync()
        t0 = now_ns()
        call()
        out.append((now_ns() - t0) / 1e3)
    sync()
    return out


def split_us(call: Callable[[], Any], repeats: int, sync: Sync, *, setup: Callable[[], Any] | None = None,
             around: tuple[Callable[[], Any], Callable[[], Any]] | None = None
             ) -> tuple[list[float], list[float]]:
    """(submit µs, wall µs) of the same `repeats` calls: until the call returns, and until `sync()` does.

    `setup()` runs before every call and is synchronised, outside the timing (resets what a call
    consumes). `around` = (before, after) run just inside the timing around the call (CUDA events).
    """
    _check(repeats)
    submit, wall = [], []
    before, after = around if around is not None else (None, None)
    sync()
    for _ in range(repeats):
        if setup is not None:
            setup()
            sync()
        t0 = now_ns()
        if before is not None:
            before()
        call()
        t1 = now_ns()
        if after is not None:
            after()
        sync()
        t2 = now_ns()
        submit.append((t1 - t0) / 1e3)
        wall.append((t2 - t0) / 1e3)
    return submit, wall


def block_per_call_us(call: Callable[[], Any], calls: int, sync: Sync, *, include_wait: bool = True) -> float:
    """µs per call of `calls` back-to-back calls (the device idle at the start).

    `include_wait`: the final `sync()` is inside the timing (what the device sustains); without, the
    block ends when the last call returns (what the host pays per call when calls queue up).
    """
    _check(calls)
    sync()
    t0 = now_ns()
    for _ in range(calls):
        call()
    t1 = now_ns()
    sync()
    end = now_ns() if include_wait else t1
    return (end - t0) / 1e3 / calls

