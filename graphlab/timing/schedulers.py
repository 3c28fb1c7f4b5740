"""When the timed loops of `graphlab.clock` run: three named schedulers every study uses.

Pure (no torch). A noisy host changes speed for seconds at a time, so the order of the work matters as
much as the clock:

- `interleave`: blocks of several variants (eager vs graph, raw vs cached, watched vs not) in rounds,
  the order changing round by round (`rotate`: variant k starts round k; `alternate`: forwards, then
  backwards), so a host that switches speed lands in every variant alike. The latency sweep's own
  rounds (`graphlab.timing.blocks.time_rounds`) are this schedule with its pairs and readings.
- `open_loop`: arrivals at planned times, never waiting for answers (traffic replay, load tests): a
  clock thread fires each request when it is due, so a slow answer cannot delay the next arrival.
- `throughput_window`: as many requests as fit in `duration_s`, at most `window` in flight (replicas,
  tensor parallel): requests per second over a closed loop.

Python's garbage collector is paused while interleaved blocks run (as `timeit` does).

    >>> calls = []
    >>> out = interleave({"a": lambda: calls.append("a") or 1, "b": lambda: calls.append("b") or 2}, 3)
    >>> out, calls
    ({'a': [1, 1, 1], 'b': [2, 2, 2]}, ['a', 'b', 'b', 'a', 'a', 'b'])
"""
from __future__ import annotations

import contextlib
import gc
import threading
import time
from collections import deque
from typing import Any, Callable, Iterator, Sequence, TypeVar

from graphlab.errors import TimingError
from graphlab.clock import now_ns, timestamp_ns

__all__ = ["ORDERS", "arrival_clock", "gc_paused", "interleave", "round_order", "start_arrival_clock",
           "throughput_window"]

T = TypeVar("T")

#: how `interleave` orders the variants of each round
ORDERS = ("rotate", "alternate")


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Collect once, then keep Python's garbage collector off inside the block (restored after)."""
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def round_order(names: Sequence[T], r: int, order: str = "alternate") -> list[T]:
    """The variants' order in round `r`: the one round-order rule of every interleaved measurement (the sweep's
    eager/graph pairs and its batch sizes, decode's ways, `interleave`).

    >>> round_order("abc", 1, "rotate"), round_order("abc", 1, "alternate")
    (['b', 'c', 'a'], ['c', 'b', 'a'])
    >>> [round_order(("eager", "graph"), r) for r in (0, 1)]
    [['eager', 'graph'], ['graph', 'eager']]
    """
    names = list(names)
    if order == "rotate":
        k = r % len(names)
        return names[k:] + names[:k]
    if order == "alternate":
        return names if r % 2 == 0 else names[::-1]
    raise TimingError(f"unknown order {order!r}: one of {', '.join(ORDERS)}")


def interleave(blocks: dict[str, Callable[[], T]], rounds: int, *, order: str = "alternate",
               after_round: Callable[[int], Any] | None = None, pause_gc: bool = True) -> dict[str, list[T]]:
    """Run every variant's block once per round for `rounds` rounds; each block's result, by variant.

    `blocks[name]()` times one block and returns what it measured (a median, a list of samples, a
    dict). `after_round(r)` runs after each round, outside every block (a host-speed reading).
    """
    if rounds < 1:
        raise TimingError(f"rounds must be at least 1, got {rounds}")
    if not blocks:
        raise TimingError("interleave needs at least one variant")
    names = list(blocks)
    round_order(names, 0, order)  # an unknown order fails before any work
    out: dict[str, list[T]] = {name: [] for name in names}
    with gc_paused() if pause_gc else contextlib.nullcontext():
        for r in range(rounds):
            for name in round_order(names, r, order):
                out[name].append(blocks[name]())
            if after_round is not None:
                after_round(r)
    return out


def arrival_clock(scheduled_ns: Sequence[int], fire: Callable[[list[int]], Any]) -> None:
    """The open loop's clock: call `fire(indices)` with the requests due, in order, at their planned
    `timestamp_ns()` times, sleeping until the next is due; never waits for an answer.

    `scheduled_ns` must be sorted. Run it in its own thread (it returns after the last arrival).
    """
    i, n = 0, len(scheduled_ns)
    while i < n:
        now = timestamp_ns()
        due = []
        while i < n and scheduled_ns[i] <= now:
            due.append(i)
            i += 1
        if due:
            fire(due)
        if i < n:
            time.sleep(max(0.0, (scheduled_ns[i] - timestamp_ns()) / 1e9))


def start_arrival_clock(scheduled_ns: Sequence[int], fire: Callable[[list[int]], Any],
                        done: Callable[[], Any]) -> threading.Thread:
    """`arrival_clock` in a daemon thread; `done()` after the last arrival. Returns the thread."""
    def run() -> None:
        try:
            arrival_clock(scheduled_ns, fire)
        finally:
            done()

    thread = threading.Thread(target=run, name="graphlab-arrival-clock", daemon=True)
    thread.start()
    return thread


def throughput_window(submit: Callable[[Any], Any], wait: Callable[[Any], Any], requests: Sequence[Any],
                      duration_s: float, window: int) -> dict[str, float]:
    """Requests per second of a closed loop: submit requests (rotating through `requests`) for
    `duration_s`, with at most `window` in flight (the oldest is waited for first), then drain.
    """
    if window < 1 or duration_s <= 0 or not requests:
        raise TimingError(f"a throughput window needs window >= 1, duration_s > 0 and requests; got "
                          f"{window}, {duration_s}, {len(requests)}")
    pending: deque[Any] = deque()
    done = 0
    i = 0
    t0 = now_ns()
    end = t0 + int(duration_s * 1e9)
    while now_ns() < end:
        if len(pending) >= window:
            wait(pending.popleft())
            done += 1
        pending.append(submit(requests[i % len(requests)]))
        i += 1
    while pending:
        wait(pending.popleft())
        done += 1
    elapsed = (now_ns() - t0) / 1e9
    return {"requests": done, "seconds": round(elapsed, 4), "requests_per_s": round(done / elapsed, 1)}
