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

    >>> worker = GPUWorker(batcher, runner, device="cuda", finish=finish, post_pool=pool)   # doctest: +SKIP
    >>> worker.start(); worker.wait_ready()                                                 # doctest: +SKIP
"""
from __future__ import annotations

import contextlib
import queue
import threading
import time
from concurrent.futures import Executor
from typing import Any, Callable

import torch

from graphlab.clock import Stopwatch
from graphlab.errors import ConfigurationError, InferenceFailedError
from graphlab.serve.batcher import Batch, DynamicBatcher
from graphlab.serve.trace import BatchRecord

POLL_S = 0.05


Finish = Callable[[Batch, BatchRecord, Any, BaseException | None], None]


class GPUWorker:
    """Runs batches from `batcher` through `runner` on `device`, in its own thread and stream.

    Args:
        finish: called on a post-processing thread as finish(batch, record, host_scores, error) once the
            batch's scores are on the host (error set, scores None, when the batch failed).
        post_pool: where `finish` runs.
        max_in_flight: batches launched and not yet finished (bounds pinned memory and GPU queueing).
    """

    def __init__(self, batcher: DynamicBatcher, runner: Any, *, device: str, finish: Finish, post_pool: Executor,
                 max_in_flight: int = 2, name: str = "graphlab-gpu-worker"):
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
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._ready = threading.Event()
        self._error: Exception | None = None
        self._next_batch_id = 0
        self.warmup_s = 0.0

    # -- control ---------------------------------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def wait_ready(self, timeout_s: float | None = None) -> None:
        """Block until warm-up is done; re-raise what warm-up raised."""
        if not self._ready.wait(timeout_s):
            raise ConfigurationError(f"the GPU worker did not finish warming up within {timeout_s} s (capturing "
                                     "every bucket): allow more time (start(timeout_s=...)) or serve fewer buckets")
        if self._error is not None:
            raise self._error

    def join(self, timeout_s: float | None = None) -> None:
        self._thread.join(timeout_s)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    # -- the thread ------------------------------------------------------------------------------------
    def _run(self) -> None:
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
                warming = Stopwatch().start()
                warm_up = getattr(self.runner, "warm_up", None)
                if callable(warm_up):
                    warm_up()
                if stream is not None:
                    stream.synchronize()
                self.warmup_s = warming.stop()
                self._ready.set()
                self._serve(device, stream)
        except Exception as exc:  # noqa: BLE001 - reported through wait_ready, or to every waiting request
            self._error = exc
            if self._ready.is_set():
                self._fail_the_rest(exc)
        finally:  # SystemExit and KeyboardInterrupt go on, but never leave wait_ready() waiting
            self._ready.set()

    def _fail_the_rest(self, exc: BaseException) -> None:
        """The loop itself broke after warm-up: refuse new work, answer everything queued with the error."""
        self.batcher.close()
        error = InferenceFailedError(f"the GPU worker stopped: {type(exc).__name__}: {exc}")
        while True:
            batch = self.batcher.get(timeout_s=0)
            if batch is None:
                return
            record = BatchRecord(self._next_batch_id, len(batch.items), batch.rows, batch.rows, batch.wait_start_ns,
                                 batch.wait_start_ns, batch.first_ready_ns, batch.formed_ns, error=str(error))
            self._next_batch_id += 1
            self.finish(batch, record, None, error)

    @property
    def error(self) -> Exception | None:
        """What stopped the worker, if something did."""
        return self._error

    def _serve(self, device: torch.device, stream: torch.cuda.Stream | None) -> None:
        while True:
            slot_wait_start = time.monotonic_ns()
            slot = self._free_slots.get()
            batch = None
            while batch is None:
                batch = self.batcher.get(timeout_s=POLL_S)
                if batch is None and self.batcher.closed and len(self.batcher) == 0:
                    self._free_slots.put(slot)
                    return
            record = BatchRecord(self._next_batch_id, len(batch.items), batch.rows, batch.rows, slot_wait_start,
                                 batch.wait_start_ns, batch.first_ready_ns, batch.formed_ns,
                                 queue_depth=batch.queue_depth, pre_in_flight=batch.pre_in_flight)
            self._next_batch_id += 1
            try:
                host, events = self._launch(device, stream, batch, record, slot)
                error = None
            except Exception as exc:  # noqa: BLE001 - one failed batch answers its requests, the rest go on
                if stream is not None:  # copies it queued may still read the slot's buffers: let them finish
                    with contextlib.suppress(Exception):
                        stream.synchronize()
                record.error = f"{type(exc).__name__}: {exc}"
                host, events = None, None
                error = InferenceFailedError(f"inference failed on the GPU worker: {record.error}")
            try:
                self.post_pool.submit(self._done, batch, record, host, events, error, slot)
            except RuntimeError:  # the pool is gone (shut down under us): answer this batch here, then stop
                self._done(batch, record, host, events, error, slot)
                raise

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
              error: BaseException | None, slot: _Slot) -> None:
        try:
            if error is None and events is not None:
                events[3].synchronize()
                record.gpu_us = events[0].elapsed_time(events[3]) * 1000.0
                record.compute_us = events[1].elapsed_time(events[2]) * 1000.0
        except Exception as exc:  # noqa: BLE001 - a failed kernel surfaces here
            error = InferenceFailedError(f"inference failed on the GPU: {type(exc).__name__}: {exc}")
            record.error = str(error)
            host = None
        record.done_ns = time.monotonic_ns()
        try:
            self.finish(batch, record, host, error)
        finally:
            self._free_slots.put(slot)  # its copies are done (or it failed): its buffers may be reused


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
