"""The dynamic batcher: a bounded FIFO of pre-processed requests, cut into batches for the GPU worker.

With merging on, the worker takes the oldest request and waits until either `max_batch_rows` rows
are queued or the oldest request has waited `max_wait_us`, then takes requests in arrival order
while they fit (a request is never split across batches). With merging off, every request is its
own batch, at once. The queue is bounded: `put` refuses with `OverloadedError` (HTTP 503) when
`capacity` requests are waiting, so a flood costs a fast answer, not memory. A request may carry a
deadline (`put(..., deadline_ns=)`): one still queued past it is never run but handed to `on_expired`
when it reaches the head of the queue (its client gets 504 from the service, not a late answer).

`BatchTimes` keeps the recent batches' durations (the GPU worker's pace): the service's estimate of how
long a new request would wait (`expected_wait_s`), so it refuses at once (503) a request that could not be answered
within its deadline.

The batcher also counts requests still in pre-processing (`expect` / `put` / `forget`), so each
batch says how many were on their way when the worker started waiting for it: a worker that waits
on an empty queue while that count is positive is a worker that pre-processing starves.

    >>> from graphlab.serve.batcher import DynamicBatcher
    >>> b = DynamicBatcher(max_batch_rows=8, max_wait_us=0, merge=True, capacity=16)
    >>> b.put("a", rows=3); b.put("b", rows=4); b.put("c", rows=2)
    >>> [p.item for p in b.get(timeout_s=0).items]         # 3 + 4 fit in 8; "c" waits for the next batch
    ['a', 'b']

Pure Python (threading only): no torch here.
"""
from __future__ import annotations

import math
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

from graphlab.errors import BadInputError, OverloadedError


@dataclass
class Pending:
    """One request waiting in the queue."""

    item: Any
    rows: int
    enqueued_ns: int
    deadline_ns: int = 0  # monotonic ns past which it is not run (0: none)


@dataclass
class Batch:
    """Requests the worker runs together, with when and how the batch was formed (monotonic ns).

    Attributes:
        wait_start_ns: the worker asked for a batch.
        first_ready_ns: the batch's first request was there for the worker (>= wait_start_ns).
        formed_ns: the batch was cut (after the batching window, if any).
        queue_depth: requests left in the queue after this batch was cut.
        pre_in_flight: requests in pre-processing when the worker started waiting.
    """

    items: list[Pending] = field(default_factory=list)
    rows: int = 0
    wait_start_ns: int = 0
    first_ready_ns: int = 0
    formed_ns: int = 0
    queue_depth: int = 0
    pre_in_flight: int = 0


class DynamicBatcher:
    """Bounded FIFO + batching policy; thread-safe (one condition variable).

    Args:
        max_batch_rows: most rows in one batch (a single larger request still forms a batch on its own).
        max_wait_us: how long the oldest request may wait for company (merging only).
        merge: False gives one request per batch ("eager" and "graphs" settings).
        capacity: most requests waiting at once.
        on_expired: called with each `Pending` whose deadline passed before it was cut into a batch (on the
            consumer's thread, outside the lock); it is dropped from the queue either way.
    """

    def __init__(self, max_batch_rows: int, max_wait_us: int, merge: bool, capacity: int,
                 on_expired: Callable[[Pending], None] | None = None):
        if max_batch_rows < 1 or capacity < 1 or max_wait_us < 0:
            raise BadInputError(f"max_batch_rows and capacity must be positive and max_wait_us non-negative, got "
                                f"{max_batch_rows}, {capacity} and {max_wait_us}")
        self.max_batch_rows = max_batch_rows
        self.max_wait_ns = int(max_wait_us) * 1000
        self.merge = merge
        self.capacity = capacity
        self._queue: deque[Pending] = deque()
        self._queued_rows = 0
        self._expected = 0
        self._closed = False
        self._cond = threading.Condition()
        self._on_expired = on_expired

    # -- producers (pre-processing threads) ------------------------------------------------------------
    def expect(self) -> None:
        """A request entered pre-processing (it will be `put` or `forget`-ten)."""
        with self._cond:
            self._expected += 1

    def forget(self) -> None:
        """A request `expect`-ed earlier will not come (its pre-processing failed)."""
        with self._cond:
            self._expected = max(0, self._expected - 1)

    def put(self, item: Any, rows: int, *, expected: bool = False, deadline_ns: int = 0) -> None:
        """Queue one request of `rows` rows; `expected=True` if `expect()` was called for it; `deadline_ns`
        (monotonic): past it, the request is handed to `on_expired` instead of a batch.

        Raises:
            OverloadedError: the queue holds `capacity` requests, or the batcher is closed.
        """
        with self._cond:
            if expected:
                self._expected = max(0, self._expected - 1)
            if self._closed:
                raise OverloadedError("the service is shutting down: retry on another replica")
            if len(self._queue) >= self.capacity:
                raise OverloadedError(f"the queue is full ({self.capacity} requests waiting): retry later")
            self._queue.append(Pending(item, rows, time.monotonic_ns(), deadline_ns))
            self._queued_rows += rows
            self._cond.notify_all()

    # -- the consumer (the GPU worker) -----------------------------------------------------------------
    def get(self, timeout_s: float | None = None) -> Batch | None:
        """The next batch; None if nothing came within `timeout_s`, or the batcher is closed and empty.
        Requests whose deadline passed are left out of it (handed to `on_expired`)."""
        expired: list[Pending] = []
        try:
            with self._cond:
                return self._next_batch(timeout_s, expired)
        finally:
            for pending in expired:
                if self._on_expired is not None:
                    self._on_expired(pending)

    def _next_batch(self, timeout_s: float | None, expired: list[Pending]) -> Batch | None:
        batch = Batch(wait_start_ns=time.monotonic_ns(), pre_in_flight=self._expected)
        end = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            remaining = None if end is None else max(0.0, end - time.monotonic())
            if not self._cond.wait_for(lambda: self._queue or self._closed, timeout=remaining):
                return None
            self._drop_expired(expired)
            if not self._queue:
                if self._closed or (end is not None and time.monotonic() >= end):
                    return None  # closed and drained, or only expired requests came
                continue
            batch.first_ready_ns = batch.first_ready_ns or time.monotonic_ns()
            if self.merge and self.max_wait_ns > 0:
                deadline = self._queue[0].enqueued_ns + self.max_wait_ns
                while self._queued_rows < self.max_batch_rows and not self._closed:
                    remaining_ns = deadline - time.monotonic_ns()
                    if remaining_ns <= 0:
                        break
                    self._cond.wait(remaining_ns / 1e9)
            self._cut(batch, expired)
            if batch.items:
                batch.formed_ns = time.monotonic_ns()
                return batch

    def _drop_expired(self, expired: list[Pending]) -> None:
        """Move the expired requests at the head of the queue to `expired` (the others expire at their turn)."""
        now = time.monotonic_ns()
        while self._queue and 0 < self._queue[0].deadline_ns <= now:
            head = self._queue.popleft()
            self._queued_rows -= head.rows
            expired.append(head)

    def _cut(self, batch: Batch, expired: list[Pending]) -> None:
        while True:
            self._drop_expired(expired)
            if not self._queue:
                break
            head = self._queue[0]
            if batch.items and (not self.merge or batch.rows + head.rows > self.max_batch_rows):
                break
            self._queue.popleft()
            self._queued_rows -= head.rows
            batch.items.append(head)
            batch.rows += head.rows
        batch.queue_depth = len(self._queue)

    # -- state -----------------------------------------------------------------------------------------
    def close(self) -> None:
        """Refuse new requests; `get` hands out what is queued, then returns None."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    @property
    def closed(self) -> bool:
        return self._closed

    def __len__(self) -> int:
        return len(self._queue)

    @property
    def queued_rows(self) -> int:
        return self._queued_rows

    @property
    def in_preprocessing(self) -> int:
        return self._expected


class BatchTimes:
    """The durations of the last `window` batches: how long the requests already inside will take.

    A batch's duration is what the GPU worker gives it (`GPUWorker.batch_times`: from one batch to the next, its
    idle waits for work left out): the pace the pipeline drains at when the queue is never empty. The typical
    batch is the median of the window (one batch held up by a pause moves it little). `expected_wait_s` is the
    drain time of the rows ahead at that pace.

        >>> times = BatchTimes(window=4)
        >>> times.add(0.010); times.add(0.020); times.add(0.900)
        >>> times.expected_wait_s(rows_ahead=20, max_batch_rows=8, merge=True)   # 3 batches of 20 ms
        0.06
    """

    def __init__(self, window: int = 32):
        self._times_s: deque[float] = deque(maxlen=window)
        self._typical_s = 0.0
        self._lock = threading.Lock()

    def add(self, duration_s: float) -> None:
        with self._lock:
            self._times_s.append(duration_s)
            ordered = sorted(self._times_s)
            self._typical_s = ordered[len(ordered) // 2]

    @property
    def typical_s(self) -> float:
        """The recent batches' median duration; 0.0 before the first batch."""
        return self._typical_s

    def expected_wait_s(self, rows_ahead: int, max_batch_rows: int, merge: bool, requests_ahead: int = 0) -> float:
        """Seconds until the requests ahead of a new one (`rows_ahead` rows, `requests_ahead` requests) are answered:
        in full batches of `max_batch_rows` when merging, one batch per request when not; 0.0 before any batch."""
        batches = math.ceil(rows_ahead / max_batch_rows) if merge else requests_ahead
        return round(batches * self._typical_s, 6)


__all__ = ["Batch", "BatchTimes", "DynamicBatcher", "Pending"]
