"""Per-request and per-batch timestamps: where each request's time went, and what the worker did.

Every timestamp is `time.monotonic_ns()`: on Linux one system-wide clock (CLOCK_MONOTONIC) shared by
every thread and process, so a load generator in another process can line its own times up with the
service's. A field left at 0 means the request never reached that stage (refused, failed earlier).

Request stages, in order:   accepted -> pre_start -> pre_end (queued) -> dispatched (its batch was cut)
                            -> done (its batch's scores on the host) -> post_end -> responded
Batch stages:               slot_wait_start -> wait_start -> first_ready -> formed -> launch_start
                            -> launch_end -> done -> post_end, plus gpu_us/compute_us from CUDA events

`TraceLog` keeps the most recent `capacity` of each (a ring: memory stays bounded however long the
service runs).

    >>> log = TraceLog(capacity=2)
    >>> for i in range(3):
    ...     log.add_request(RequestRecord(request_id=i, rows=1))
    >>> [r["request_id"] for r in log.requests()]
    [1, 2]

Pure Python: no torch here.
"""
from __future__ import annotations

import threading
from collections import deque
from dataclasses import asdict, dataclass
from typing import Any

REQUEST_STAGES = ("accepted_ns", "pre_start_ns", "pre_end_ns", "dispatched_ns", "done_ns", "post_end_ns",
                  "responded_ns")
BATCH_STAGES = ("slot_wait_start_ns", "wait_start_ns", "first_ready_ns", "formed_ns", "launch_start_ns",
                "launch_end_ns", "done_ns", "post_end_ns")


@dataclass
class RequestRecord:
    """One request's path through the service.

    Attributes:
        outcome: "pending", "ok", "failed" (an error after it was accepted), "abandoned" (answered, but the
            client had gone), "timed_out" (answered 504: past its deadline).
        batch_id, batch_rows: the batch it ran in (-1 / 0 if none).
        deadline_ns: when it is answered 504 if its answer is not ready (0: no deadline).
    """

    request_id: int
    rows: int
    accepted_ns: int = 0
    pre_start_ns: int = 0
    pre_end_ns: int = 0
    dispatched_ns: int = 0
    done_ns: int = 0
    post_end_ns: int = 0
    responded_ns: int = 0
    batch_id: int = -1
    batch_rows: int = 0
    outcome: str = "pending"
    status: int = 0
    deadline_ns: int = 0

    def timing_us(self) -> dict[str, float]:
        """Stage durations in µs (pre-processing, queueing, GPU and hand-off, post-processing, total)."""
        def span(a: int, b: int) -> float:
            return round((b - a) / 1000.0, 1) if a and b else 0.0

        return {"pre_us": span(self.pre_start_ns, self.pre_end_ns),
                "queue_us": span(self.pre_end_ns, self.dispatched_ns),
                "gpu_us": span(self.dispatched_ns, self.done_ns),
                "post_us": span(self.done_ns, self.post_end_ns),
                "in_service_us": span(self.accepted_ns, self.post_end_ns)}


@dataclass
class BatchRecord:
    """One batch's timeline and sizes. `gpu_us` spans copy-in, runner, copy-out (CUDA events); `compute_us`
    the runner, its copy of the inputs to the device included (the graph cache copies them into its static
    inputs); both 0.0 on a CPU device. `pre_in_flight`: requests in pre-processing when the worker
    started waiting for this batch. `retry_of`: the batch whose failure this one retries, one request alone
    (-1: none)."""

    batch_id: int
    requests: int
    rows: int
    bucket: int
    slot_wait_start_ns: int
    wait_start_ns: int
    first_ready_ns: int
    formed_ns: int
    launch_start_ns: int = 0
    launch_end_ns: int = 0
    done_ns: int = 0
    post_end_ns: int = 0
    gpu_us: float = 0.0
    compute_us: float = 0.0
    queue_depth: int = 0
    pre_in_flight: int = 0
    error: str | None = None
    retry_of: int = -1


class TraceLog:
    """The last `capacity` request records and batch records, appended from any thread."""

    def __init__(self, capacity: int = 100_000):
        self.capacity = capacity
        self._requests: deque[RequestRecord] = deque(maxlen=capacity)
        self._batches: deque[BatchRecord] = deque(maxlen=capacity)
        self._lock = threading.Lock()

    def add_request(self, record: RequestRecord) -> None:
        with self._lock:
            self._requests.append(record)

    def add_batch(self, record: BatchRecord) -> None:
        with self._lock:
            self._batches.append(record)

    def requests(self, since_ns: int = 0) -> list[dict[str, Any]]:
        """Finished requests accepted at or after `since_ns`, as dicts."""
        with self._lock:
            items = list(self._requests)
        return [asdict(r) for r in items if r.accepted_ns >= since_ns]

    def batches(self, since_ns: int = 0) -> list[dict[str, Any]]:
        """Finished batches cut at or after `since_ns`, as dicts."""
        with self._lock:
            items = list(self._batches)
        return [asdict(b) for b in items if b.formed_ns >= since_ns]

    def clear(self) -> None:
        with self._lock:
            self._requests.clear()
            self._batches.clear()


__all__ = ["BATCH_STAGES", "BatchRecord", "REQUEST_STAGES", "RequestRecord", "TraceLog"]
