"""The GPU worker: one thread, one CUDA stream, batches in, scores out, never waiting on the CPU stages.

For each batch the worker thread
  1. takes an in-flight slot (at most `max_in_flight` batches between launch and post-processing),
  2. asks the batcher for a batch (so a batch keeps growing while the GPU is busy with the last one),
  3. stacks the rows into pinned host memory (the slot's own buffers, made once),
  4. calls the runner (eager model or graph cache) on its own stream: the graph cache copies the pinned rows
     straight into its graph's static inputs without blocking (`from_host`); the eager model gets them moved
     to the device without blocking,
  5. copies the scores back into pinned memory without blocking and records a CUDA event,
  6. hands (batch, host scores, event) to the post-processing pool and goes back to 1.
A post-processing thread waits on the event, not the worker. CUDA timing events around steps 3-5
give each batch's GPU time; host timestamps (time.monotonic_ns, one clock for every thread and
process of the machine) give the rest of its timeline.

On a CPU device the same loop runs without streams, pinned memory or events (CPU tests).

When the model raises (docs/serving.md, "When the model fails"):
- a Python exception (`Exception`) fails no one but the guilty: a batch of several requests is run again
  one request at a time, so only the requests that make the model raise are answered 500;
- any other `BaseException` (`SystemExit`, `KeyboardInterrupt`) answers the batch 500 and the worker thread
  dies; it is restarted once, and if it dies again within `RESTART_WINDOW_S` it stays down;
- a CUDA error (`torch.AcceleratorError`, `torch.cuda.CudaError`, a RuntimeError saying "CUDA error") answers
  the batch 500 and stops the worker at once: the CUDA context can no longer be trusted.
A worker that stays down answers every queued request 503 and calls `on_down(reason)`; the service then says
it is failed (`/healthz` 503) and `python -m graphlab.serve` exits non-zero. Each death is logged once, in one
line; a model's Python exception is counted, never logged (a client can cause it).

    >>> worker = GPUWorker(batcher, runner, device="cuda", finish=finish, post_pool=pool)   # doctest: +SKIP
    >>> worker.start(); worker.wait_ready()                                                 # doctest: +SKIP
"""
from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from concurrent.futures import Executor
from typing import Any, Callable

import torch

from graphlab.clock import Stopwatch
from graphlab.errors import ConfigurationError, InferenceFailedError, OverloadedError
from graphlab.serve.batcher import Batch, BatchTimes, DynamicBatcher
from graphlab.serve.trace import BatchRecord

POLL_S = 0.05
#: a worker that dies again within this many seconds of its last restart stays down
RESTART_WINDOW_S = 60.0

log = logging.getLogger("graphlab.serve")

Finish = Callable[[Batch, BatchRecord, Any, BaseException | None], None]


def is_cuda_error(exc: BaseException) -> bool:
    """True for an error after which the CUDA context cannot be trusted (an illegal address, a device-side assert):
    `torch.AcceleratorError`, `torch.cuda.CudaError`, or a RuntimeError whose message says "CUDA error"."""
    kinds = tuple(k for k in (getattr(torch, "AcceleratorError", None), getattr(torch.cuda, "CudaError", None))
                  if isinstance(k, type))
    return isinstance(exc, kinds) or (isinstance(exc, RuntimeError) and "CUDA error" in str(exc))


def failure_kind(exc: BaseException) -> str:
    """"cuda" (the context is lost: stop), "fatal" (a BaseException that is no Exception: the worker dies) or
    "model" (a Python exception: retry the batch one request at a time)."""
    if is_cuda_error(exc):
        return "cuda"
    return "model" if isinstance(exc, Exception) else "fatal"


class GPUWorker:
    """Runs batches from `batcher` through `runner` on `device`, in its own thread and stream.

    Args:
        finish: called on a post-processing thread as finish(batch, record, host_scores, error) once the
            batch's scores are on the host (error set, scores None, when the batch failed).
        post_pool: where `finish` runs.
        max_in_flight: batches launched and not yet finished (bounds pinned memory and GPU queueing).
        on_down: called once, with a one-line reason, when the worker stops for good after warm-up (a CUDA error,
            or a second death within `RESTART_WINDOW_S`); every request still queued has been answered 503.
    """

    def __init__(self, batcher: DynamicBatcher, runner: Any, *, device: str, finish: Finish, post_pool: Executor,
                 max_in_flight: int = 2, name: str = "graphlab-gpu-worker",
                 on_down: Callable[[str], None] | None = None):
        self.batcher = batcher
        self.runner = runner
        self.device_name = device
        self.finish = finish
        self.post_pool = post_pool
        # one _Slot per batch that may be in flight: its pinned buffers and CUDA events are made once and reused
        # (a batch's slot goes back only after its copies finished, in _done)
        self._free_slots: queue.SimpleQueue[_Slot] = queue.SimpleQueue()
        for _ in range(max_in_flight):
            self._free_slots.put(_Slot())
        self._name = name
        self._on_down = on_down
        self._thread = threading.Thread(target=self._run, args=(True,), name=name, daemon=True)
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._next_batch_id = 0
        self._last_restart_s: float | None = None
        self._lost: BaseException | None = None  # a CUDA error seen after launch (post-processing thread)
        self.restarts = 0
        self.warmup_s = 0.0
        #: the pace of the worker's recent batches: from one batch to the next, its idle waits for work left out
        #: (a slot it waits for counts: post-processing is then what paces it); the service's expected waits
        self.batch_times = BatchTimes()

    # -- control ---------------------------------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def wait_ready(self, timeout_s: float | None = None) -> None:
        """Block until warm-up is done; re-raise what warm-up raised."""
        if not self._ready.wait(timeout_s):
            raise ConfigurationError(f"the GPU worker did not finish warming up within {timeout_s} s (capturing "
                                     "every bucket): allow more time (start(timeout_s=...)) or serve fewer buckets")
        if isinstance(self._error, Exception):
            raise self._error
        if self._error is not None:  # SystemExit, KeyboardInterrupt: not for the caller's thread to act on
            raise ConfigurationError(f"warming up raised {type(self._error).__name__}: the model or runner exits "
                                     "while it runs; make it raise an exception instead") from self._error

    def join(self, timeout_s: float | None = None) -> None:
        """Wait for the worker thread to end (a restarted worker's new thread included)."""
        end = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            thread = self._thread
            thread.join(None if end is None else max(0.0, end - time.monotonic()))
            if thread is self._thread or (end is not None and time.monotonic() >= end):
                return

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    # -- the thread ------------------------------------------------------------------------------------
    def _run(self, warm: bool) -> None:
        try:
            device = torch.device(self.device_name)
            if device.type == "cuda":
                # "cuda" names no index, and torch.cuda.set_device refuses that: resolve it first
                index = device.index if device.index is not None else torch.cuda.current_device()
                device = torch.device("cuda", index)
                torch.cuda.set_device(index)  # per thread: this worker's device
                # torch's streams do not wait for the default stream: let whatever built the model there finish
                torch.cuda.synchronize(index)
                stream = torch.cuda.Stream(device=index)
                context: Any = torch.cuda.stream(stream)
            else:
                stream, context = None, contextlib.nullcontext()
            with context, torch.no_grad():
                if warm:
                    warming = Stopwatch().start()
                    warm_up = getattr(self.runner, "warm_up", None)
                    if callable(warm_up):
                        warm_up()
                    if stream is not None:
                        stream.synchronize()
                    self.warmup_s = warming.stop()
                    self._ready.set()
                self._serve(device, stream)
        except BaseException as exc:  # noqa: BLE001 - reported through wait_ready, or the worker died after warm-up
            if not self._ready.is_set():
                self._error = exc
            else:
                self._died(exc)
        finally:  # never leave wait_ready() waiting
            self._ready.set()

    def _died(self, exc: BaseException) -> None:
        """This thread ends with `exc`: restart once, or stay down (a CUDA error, or a second death too soon)."""
        what = f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
        now = time.monotonic()
        kind = failure_kind(exc)
        if kind != "cuda" and (self._last_restart_s is None or now - self._last_restart_s > RESTART_WINDOW_S):
            self._last_restart_s = now
            self.restarts += 1
            log.error("graphlab.serve: the GPU worker died (%s); restarted (a second death within %g s stops the "
                      "service)", what, RESTART_WINDOW_S)
            thread = threading.Thread(target=self._run, args=(False,), name=self._name, daemon=True)
            thread.start()
            self._thread = thread  # before this one ends: `alive` stays true
            return
        self._error = exc
        reason = (f"a CUDA error ({what}): the CUDA context can no longer be trusted" if kind == "cuda" else
                  f"its GPU worker died twice within {RESTART_WINDOW_S:g} s (last: {what})")
        log.error("graphlab.serve: the service is down: %s", reason)
        self._fail_the_rest()
        if self._on_down is not None:
            self._on_down(reason)

    def _fail_the_rest(self) -> None:
        """The worker stays down: refuse new work, answer everything queued 503 (it never ran: retry elsewhere)."""
        self.batcher.close()
        while True:
            batch = self.batcher.get(timeout_s=0)
            if batch is None:
                return
            error = OverloadedError("the service is down (its GPU worker stopped before running this request): "
                                    "retry on another replica")
            record = BatchRecord(self._next_batch_id, len(batch.items), batch.rows, batch.rows, batch.wait_start_ns,
                                 batch.wait_start_ns, batch.first_ready_ns, batch.formed_ns, error="worker down")
            self._next_batch_id += 1
            self.finish(batch, record, None, error)

    @property
    def error(self) -> BaseException | None:
        """What stopped the worker for good (or failed its warm-up), if something did."""
        return self._error

    def _serve(self, device: torch.device, stream: torch.cuda.Stream | None) -> None:
        previous: tuple[int, int] | None = None  # the last batch's (slot_wait_start_ns, idle ns waiting for work)
        while True:
            slot_wait_start = time.monotonic_ns()
            if previous is not None:
                self.batch_times.add((slot_wait_start - previous[0] - previous[1]) / 1e9)
            slot = self._free_slots.get()
            idle_from = time.monotonic_ns()
            batch = None
            while batch is None:
                if self._lost is not None:  # a batch's kernels failed with a CUDA error: the context is gone
                    self._free_slots.put(slot)
                    raise self._lost
                batch = self.batcher.get(timeout_s=POLL_S)
                if batch is None and self.batcher.closed and len(self.batcher) == 0:
                    self._free_slots.put(slot)
                    return
            previous = (slot_wait_start, max(0, batch.first_ready_ns - idle_from))
            record = self._record(batch, slot_wait_start)
            try:
                host, events = self._launch(device, stream, batch, record, slot)
            except BaseException as exc:  # noqa: BLE001 - answered here; the worker dies only as the docstring says
                _settle(stream)
                kind = failure_kind(exc)
                if kind == "model" and len(batch.items) > 1:
                    self._free_slots.put(slot)  # its copies are done (_settle)
                    self._retry_alone(device, stream, batch, record)
                    continue
                record.error = f"the model raised {type(exc).__name__}"
                self._hand_on(batch, record, None, None, _failed(exc, len(batch.items)), slot)
                if kind != "model":
                    raise
                continue
            self._hand_on(batch, record, host, events, None, slot)

    def _record(self, batch: Batch, slot_wait_start_ns: int, retry_of: int = -1) -> BatchRecord:
        record = BatchRecord(self._next_batch_id, len(batch.items), batch.rows, batch.rows, slot_wait_start_ns,
                             batch.wait_start_ns, batch.first_ready_ns, batch.formed_ns,
                             queue_depth=batch.queue_depth, pre_in_flight=batch.pre_in_flight, retry_of=retry_of)
        self._next_batch_id += 1
        return record

    def _hand_on(self, batch: Batch, record: BatchRecord, host: Any, events: Any, error: BaseException | None,
                 slot: _Slot | None) -> None:
        try:
            self.post_pool.submit(self._done, batch, record, host, events, error, slot)
        except RuntimeError:  # the pool is gone (shut down under us): answer this batch here, then stop
            self._done(batch, record, host, events, error, slot)
            raise

    def _retry_alone(self, device: torch.device, stream: torch.cuda.Stream | None, failed: Batch,
                     failed_record: BatchRecord) -> None:
        """The model raised a Python exception on `failed`: run its requests again one at a time, each its own batch
        (`retry_of` set), so only those that make it raise are answered 500. A CUDA error or a BaseException on the
        way answers the rest 500 and goes on up (the worker dies)."""
        items = list(failed.items)
        for i, pending in enumerate(items):
            alone = Batch([pending], pending.rows, failed.wait_start_ns, failed.first_ready_ns, failed.formed_ns,
                          failed.queue_depth, failed.pre_in_flight)
            slot = self._free_slots.get()
            record = self._record(alone, time.monotonic_ns(), retry_of=failed_record.batch_id)
            try:
                host, events = self._launch(device, stream, alone, record, slot)
            except BaseException as exc:  # noqa: BLE001 - this request is the guilty one (or the device is lost)
                _settle(stream)
                record.error = f"the model raised {type(exc).__name__}"
                self._hand_on(alone, record, None, None, _failed(exc, 1), slot)
                if failure_kind(exc) == "model":
                    continue
                rest = items[i + 1:]
                if rest:
                    left = Batch(rest, sum(p.rows for p in rest), failed.wait_start_ns, failed.first_ready_ns,
                                 failed.formed_ns, failed.queue_depth, failed.pre_in_flight)
                    left_record = self._record(left, time.monotonic_ns(), retry_of=failed_record.batch_id)
                    left_record.error = "its retry was cut short"
                    self._hand_on(left, left_record, None, None, _failed(exc, len(rest)), None)
                raise
            self._hand_on(alone, record, host, events, None, slot)

    def _launch(self, device: torch.device, stream: torch.cuda.Stream | None, batch: Batch,
                record: BatchRecord, slot: _Slot) -> tuple[torch.Tensor, tuple[Any, ...] | None]:
        """Stack, copy in, run, copy out; (the host scores, the slot's timing events: None on a CPU)."""
        record.launch_start_ns = time.monotonic_ns()
        per_request = [p.item.inputs for p in batch.items]
        cuda = stream is not None
        inputs = []
        events = None
        if cuda:
            events = slot.timing_events()
            events[0].record(stream)
        for position in range(len(per_request[0])):
            parts = [own[position] for own in per_request]
            if cuda:
                staged = slot.pinned(("in", position), batch.rows, parts[0])
                if len(parts) == 1:
                    staged.copy_(parts[0])
                else:
                    torch.cat(parts, out=staged)
                inputs.append(staged)
            else:
                inputs.append(parts[0] if len(parts) == 1 else torch.cat(parts))
        record.bucket = int(getattr(self.runner, "bucket_for", lambda n: n)(batch.rows))
        if cuda:
            events[1].record(stream)
            from_host = getattr(self.runner, "from_host", None)
            if callable(from_host):  # the graph cache copies the pinned rows straight into its static inputs
                scores = from_host(*inputs)
            else:
                scores = self.runner(*(x.to(device, non_blocking=True) for x in inputs))
            events[2].record(stream)
            host = slot.pinned("out", scores.shape[0], scores)
            host.copy_(scores, non_blocking=True)
            events[3].record(stream)
        else:
            scores = self.runner(*inputs)
            host = scores.detach().clone()
        record.launch_end_ns = time.monotonic_ns()
        return host, events

    def _done(self, batch: Batch, record: BatchRecord, host: Any, events: tuple[Any, ...] | None,
              error: BaseException | None, slot: _Slot | None) -> None:
        try:
            if error is None and events is not None:
                events[3].synchronize()
                record.gpu_us = events[0].elapsed_time(events[3]) * 1000.0
                record.compute_us = events[1].elapsed_time(events[2]) * 1000.0
        except Exception as exc:  # noqa: BLE001 - a failed kernel surfaces here
            if is_cuda_error(exc):
                self._lost = exc  # the worker stops before its next batch
            error = _failed(exc, len(batch.items))
            record.error = f"the GPU raised {type(exc).__name__}"
            host = None
        record.done_ns = time.monotonic_ns()
        try:
            self.finish(batch, record, host, error)
        finally:
            if slot is not None:
                self._free_slots.put(slot)  # its copies are done (or it failed): its buffers may be reused


def _settle(stream: torch.cuda.Stream | None) -> None:
    """Let the copies a failed launch queued finish (they may still read the slot's buffers)."""
    if stream is not None:
        with contextlib.suppress(Exception):
            stream.synchronize()


def _failed(exc: BaseException, requests: int) -> InferenceFailedError:
    """The 500 of a request the model failed on: the kind of failure, never the exception's text (it may hold
    paths or internals; the server's log and counters keep what happened)."""
    if is_cuda_error(exc):
        what = "a CUDA error stopped the GPU worker while running this request"
    elif isinstance(exc, Exception):
        what = (f"the model raised {type(exc).__name__} on this request"
                if requests == 1 else f"the model raised {type(exc).__name__} on this request's batch")
    else:
        what = f"the model raised {type(exc).__name__} on this request's batch and the GPU worker was restarted"
    error = InferenceFailedError(f"inference failed: {what}")
    error.stage = "the GPU" if is_cuda_error(exc) else "the model"
    return error


class _Slot:
    """The reusable parts of one in-flight batch: pinned host buffers (by role, grown to the largest batch seen)
    and four timing events, made once per slot instead of once per batch (docs/serving.md, "Inside the
    worker"). A slot is reused only after its batch's copies are done."""

    def __init__(self) -> None:
        self._buffers: dict[Any, torch.Tensor] = {}
        self._events: tuple[Any, ...] | None = None

    def timing_events(self) -> tuple[Any, ...]:
        if self._events is None:
            self._events = tuple(torch.cuda.Event(enable_timing=True) for _ in range(4))
        return self._events

    def pinned(self, role: Any, rows: int, like: torch.Tensor) -> torch.Tensor:
        """A pinned host tensor of `rows` rows shaped and typed as `like` past its first dimension: a view of
        this slot's buffer for `role`, made (again) only when it is too small or of another shape or dtype."""
        buf = self._buffers.get(role)
        if buf is None or buf.shape[0] < rows or buf.shape[1:] != like.shape[1:] or buf.dtype != like.dtype:
            buf = torch.empty((rows, *like.shape[1:]), dtype=like.dtype, pin_memory=True)
            self._buffers[role] = buf
        return buf if buf.shape[0] == rows else buf[:rows]


__all__ = ["GPUWorker"]
