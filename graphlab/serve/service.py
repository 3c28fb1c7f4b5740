"""The service: pre-processing pool -> dynamic batcher -> GPU worker thread -> post-processing pool.

    >>> from graphlab.serve import InferenceService, ServeConfig
    >>> service = InferenceService(ServeConfig(model="gpt", setting="graphs+batching")).start()   # doctest: +SKIP
    >>> await service.infer({"texts": ["CUDA graphs "], "top_k": 3})                             # doctest: +SKIP
    {'id': 0, 'results': [[{'id': 116, 'label': 's', 'prob': 0.0031}, ...]], 'batch': {...}, 'timing_us': {...}}

An answer is a plain dict to code and JSON; in a notebook it shows as tables (`graphlab.serve.answer.ServiceAnswer`).

What the service promises, whatever the load:
- a bad request is refused before it costs anything: 422 (malformed) or 413 (too large), one line saying why;
- at most `max_pending` requests are inside at once; one more is refused at once with 503 (bounded memory);
- each request has a deadline (`request_timeout_ms`, or less if the caller asks): one that would wait longer
  (the rows ahead of it at the worker's recent pace, `GPUWorker.batch_times`) is refused at once with 503; an accepted
  one not answered by then gets 504 at its deadline, and is not run if it is still queued;
- an accepted request is always answered, with its result or with a clear error: never dropped, even if
  its client has gone (then the answer is counted as abandoned) or the service is shutting down
  (`close()` drains what it accepted before it stops);
- a model that raises fails only the requests it raises on (the worker's docstring); a GPU worker that stays
  down (a CUDA error, or two deaths within a minute) makes the service "failed" and calls `when_down`'s callbacks;
- each stage runs on its own threads: the event loop only checks and hands off, pre-processing runs in a
  thread pool, the GPU worker in its own thread and stream, post-processing in another pool.

Settings (`ServeConfig.setting`) change only what the worker calls and whether the batcher merges, so
they compare fairly. `runner=` injects what the worker calls (CPU tests use a stand-in).
"""
from __future__ import annotations

import asyncio
import copy
import enum
import itertools
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

import torch

from graphlab.env import require_cuda
from graphlab.errors import (BadInputError, BadRequestError, ConfigurationError, OverloadedError, PaddingError,
                             InferenceFailedError, RequestTimeoutError, RequestTooLargeError,
                             ServeError)
from graphlab.serve.batcher import Batch, DynamicBatcher, Pending
from graphlab.serve.config import REQUEST_TIMEOUT_HEADER, ServeConfig
from graphlab.serve.payload import ParsedRequest
from graphlab.serve.answer import ServiceAnswer
from graphlab.serve.runners import EagerRunner, make_cache_runner
from graphlab.serve.models import resolve_model
from graphlab.serve.served_model import ServedModel
from graphlab.serve.trace import BatchRecord, RequestRecord, TraceLog
from graphlab.serve.worker import GPUWorker

Callback = Callable[[Any, BaseException | None], None]


class ServiceState(str, enum.Enum):
    """Where a service is in its life: new -> warming_up -> ready -> closing -> closed; failed when its GPU
    worker stopped. A `str`, so it compares equal to its value (`service.state == "ready"`) and reads as it."""

    NEW = "new"
    WARMING_UP = "warming_up"
    READY = "ready"
    FAILED = "failed"
    CLOSING = "closing"
    CLOSED = "closed"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


#: the exit code of `python -m graphlab.serve` when its GPU worker stayed down (a CUDA error, or two deaths within
#: a minute): a supervisor should start a fresh process (docs/serving.md, "When the model fails")
EXIT_WORKER_DOWN = 3
#: every state's name, in life-cycle order
STATES = tuple(state.value for state in ServiceState)
#: what a refusal says about a service that is not ready (closing and closed: "shutting down")
_NOT_READY = {ServiceState.NEW: "not started", ServiceState.WARMING_UP: "warming up (capturing graphs)"}


@dataclass
class _Queued:
    """What travels through the batcher: the record, the tensors, who to tell."""

    record: RequestRecord
    inputs: tuple[Any, ...]
    request: ParsedRequest
    callback: Callback


class InferenceService:
    """One model on one device, behind a bounded, batched, staged pipeline.

    Args:
        config: what to serve and how (`ServeConfig`).
        model: the `ServedModel` to serve (your own model); default: the one `config.model` names (a zoo
            name, or "package.module:factory").
        runner: what the GPU worker calls on a batch; default: built from the config (eager model or
            `gl.GraphCache`). Inject one to test the pipeline without a GPU.
    """

    def __init__(self, config: ServeConfig, *, model: ServedModel | None = None, runner: Any = None):
        self.config = config
        self.model = resolve_model(model if model is not None else config.model)
        if getattr(self.model, "max_top_k", 0):
            self.model.max_top_k = min(self.model.max_top_k, config.max_top_k)
        self.traces = TraceLog(config.trace_capacity)
        self.counters: Counter[str] = Counter()
        self.batch_rows: Counter[int] = Counter()
        self.batch_buckets: Counter[int] = Counter()
        self.state: ServiceState = ServiceState.NEW
        self.runner = runner
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self._pending = 0
        self._pending_rows = 0
        self._idle = threading.Condition(self._lock)
        self._batcher = DynamicBatcher(config.max_batch_size, config.max_wait_us, config.batches_requests,
                                       capacity=config.max_pending, on_expired=self._expired_in_queue)
        self.failure: str | None = None
        self._down_callbacks: list[Callable[[str], None]] = []
        self._pre_pool: ThreadPoolExecutor | None = None
        self._post_pool: ThreadPoolExecutor | None = None
        self._worker: GPUWorker | None = None

    # -- life cycle ------------------------------------------------------------------------------------
    def start(self, timeout_s: float = 600.0) -> InferenceService:
        """Build the model and runner, warm up (capture every bucket) on the worker's thread, then take traffic."""
        if self.state is not ServiceState.NEW:
            raise BadInputError(f"the service is {self.state}: start() runs once; make a new InferenceService")
        self.state = ServiceState.WARMING_UP
        if self.config.device.startswith("cuda"):
            require_cuda(f"serving {self.model.name} on {self.config.device} (or serve it with device='cpu', "
                         "--device cpu)")
        if self.runner is None:
            self.runner = self._build_runner()
        self._pre_pool = (ThreadPoolExecutor(self.config.preprocess_threads, thread_name_prefix="graphlab-pre")
                          if self.config.preprocess_threads > 0 else _Inline())
        self._post_pool = ThreadPoolExecutor(self.config.postprocess_threads, thread_name_prefix="graphlab-post")
        self._worker = GPUWorker(self._batcher, self.runner, device=self.config.device, finish=self._finish_batch,
                                 post_pool=self._post_pool, max_in_flight=self.config.max_in_flight,
                                 on_down=self._worker_down)
        self._worker.start()
        try:
            self._worker.wait_ready(timeout_s)
        except BaseException as exc:  # whatever stopped the warm-up (Ctrl-C included): close, then let it go on
            self.state = ServiceState.CLOSED
            self._batcher.close()
            if isinstance(exc, PaddingError):
                dim = exc.dim_name or "batch"
                raise ConfigurationError(
                    f"{self.model.name} cannot be served with padded batches: padding dim {dim!r} changes its answer "
                    f"(by up to {exc.max_abs_err:.3g}: its rows see each other). Fix: make rows independent (eval "
                    f"mode, no batch statistics), or list every batch size as a bucket (buckets=list(range(1, "
                    f"{self.config.max_batch_size + 1}))), or setting='eager'") from None
            raise
        self.state = ServiceState.READY
        return self

    def _build_runner(self) -> Any:
        device = torch.device(self.config.device)
        module = self.model.build(device=str(device))

        def examples(rows: int) -> tuple[Any, ...]:
            return self.model.example_inputs(rows, device=str(device))

        if self.config.uses_graphs:
            return make_cache_runner(module, examples, max_batch_size=self.config.max_batch_size,
                                     buckets=self.config.buckets, device=device,
                                     name=f"serve-{self.model.name}-{self.config.setting}")
        return EagerRunner(module, examples, self.config.max_batch_size)

    def close(self, timeout_s: float = 60.0) -> None:
        """Refuse new requests (503), finish every accepted one, then stop the threads."""
        if self.state in (ServiceState.CLOSED, ServiceState.NEW):
            self.state = ServiceState.CLOSED
            return
        self.state = ServiceState.CLOSING
        deadline = time.monotonic() + timeout_s
        if self._pre_pool is not None:
            self._pre_pool.shutdown(wait=True)  # everything accepted reaches the queue (or fails, answered)
        self._batcher.close()
        if self._worker is not None:
            self._worker.join(max(0.0, deadline - time.monotonic()))
        if self._post_pool is not None:
            self._post_pool.shutdown(wait=True)
        self.state = ServiceState.CLOSED

    def when_down(self, callback: Callable[[str], None]) -> None:
        """Call `callback(reason)` once if the GPU worker stops for good (at once if it already has): the HTTP
        server stops and exits non-zero (docs/serving.md, "When the model fails")."""
        with self._lock:
            failure = self.failure
            if failure is None:
                self._down_callbacks.append(callback)
        if failure is not None:
            callback(failure)

    def _worker_down(self, reason: str) -> None:
        with self._lock:
            self.failure = reason
            callbacks, self._down_callbacks = self._down_callbacks, []
        if self.state is ServiceState.READY:
            self.state = ServiceState.FAILED
        for callback in callbacks:
            try:
                callback(reason)
            except Exception:  # noqa: BLE001 - one listener's bug must not keep the others from hearing it
                self.count("callback_errors")

    def __enter__(self) -> InferenceService:
        return self.start() if self.state is ServiceState.NEW else self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- requests --------------------------------------------------------------------------------------
    async def infer(self, body: Any, disconnected: Callable[[], Awaitable[bool]] | None = None, *,
                    timeout_ms: int | None = None, off_loop: bool = False) -> dict[str, Any]:
        """Answer one request body (a decoded JSON object); raises a `ServeError` subclass when refused.

        `timeout_ms` lowers the request's deadline below `request_timeout_ms` (never raises it); past the deadline
        it raises `RequestTimeoutError` (504). If the caller is cancelled, or `disconnected()` says its client went
        away by the time the answer is ready, the request still ran to the end (it was accepted) and its answer is
        counted as abandoned. `off_loop`: pre-process it on the pool whatever its size (the app says so for a
        body over `inline_body_bytes`).
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[dict[str, Any]] = loop.create_future()

        holder: dict[str, RequestRecord] = {}

        def callback(result: Any, error: BaseException | None) -> None:
            # may run inside submit() (inline pre-processing that failed), before `record` exists here:
            # _settle reads it from the holder later, on the loop
            loop.call_soon_threadsafe(_settle, future, holder, result, error)

        record = self.submit(body, callback, timeout_ms=timeout_ms, off_loop=off_loop)
        holder["record"] = record
        timer = loop.call_later(max(0.0, (record.deadline_ns - time.monotonic_ns()) / 1e9), self._time_out,
                                future, record)
        try:
            answer = await asyncio.shield(future)
        except asyncio.CancelledError:
            self.mark_abandoned(record)
            future.add_done_callback(lambda f: f.cancelled() or f.exception())  # nobody else will read it
            raise
        finally:
            timer.cancel()
        if disconnected is not None and await disconnected():
            self.mark_abandoned(record)
        return answer

    def infer_sync(self, body: Any, timeout_s: float = 60.0) -> dict[str, Any]:
        """`infer` for code without an event loop (scripts, notebook cells): block until the answer.

        Raises the same errors as `infer`, and RequestTimeoutError (504) if no answer came within `timeout_s`
        (or the request's deadline, `request_timeout_ms`, if that is sooner).
        """
        done = threading.Event()
        box: dict[str, Any] = {}

        def callback(result: Any, error: BaseException | None) -> None:
            box["result"], box["error"] = result, error
            done.set()

        record = self.submit(body, callback, timeout_ms=max(1, int(timeout_s * 1000)))
        if not done.wait(max(0.0, (record.deadline_ns - time.monotonic_ns()) / 1e9)):
            self.mark_abandoned(record)
            limit_s = (record.deadline_ns - record.accepted_ns) / 1e9
            raise RequestTimeoutError(f"no answer within {limit_s:g} s (the request still runs; its answer is "
                                      "dropped): allow a longer timeout_s (request_timeout_ms is the most), or send "
                                      "less at once")
        if box["error"] is not None:
            raise box["error"]
        return box["result"]

    def submit(self, body: Any, callback: Callback, *, timeout_ms: int | None = None,
               off_loop: bool = False) -> RequestRecord:
        """Check and accept one request; `callback(result, error)` is called once from a service thread.

        `timeout_ms` lowers its deadline (`request_timeout_ms`); still queued past it, it is not run and the
        callback gets RequestTimeoutError (504). Raises (before accepting, callback not called): BadRequestError
        (422), RequestTooLargeError (413), OverloadedError (503: full, its expected wait past its deadline,
        warming up, down or shutting down).
        """
        if self.state is ServiceState.READY and self._worker is not None and not self._worker.alive:
            self.state = ServiceState.FAILED
        pool = self._pre_pool  # a ready service always has its pool (start() made it): checked, not assumed
        if self.state is not ServiceState.READY or pool is None:
            self.count("refused_not_ready")
            if self.state is ServiceState.FAILED:
                what = "down (its GPU worker stopped)"
            else:
                what = _NOT_READY.get(self.state, "shutting down")
            raise OverloadedError(f"the service is {what}: retry on another replica")
        try:
            parsed = self.model.parse(body, self.config.max_request_rows)
        except RequestTooLargeError:
            self.count("refused_too_large")
            raise
        except BadRequestError:
            self.count("refused_malformed")
            raise
        timeout_ms = self._deadline_ms(timeout_ms)
        with self._lock:
            if self._pending >= self.config.max_pending:
                self.counters["refused_overloaded"] += 1
                raise OverloadedError(f"the service holds {self._pending} requests (max_pending): retry later or "
                                      "on another replica")
            wait_s = self._worker.batch_times.expected_wait_s(self._pending_rows, self.config.max_batch_size,
                                                              self.config.batches_requests, self._pending)
            if wait_s * 1000.0 > timeout_ms:
                self.counters["refused_deadline"] += 1
                raise OverloadedError(f"the service would answer this request in about {wait_s:.2f} s, past its "
                                      f"deadline of {timeout_ms} ms: retry later or on another replica")
            self._pending += 1
            self._pending_rows += parsed.rows
            self.counters["accepted"] += 1
        accepted_ns = time.monotonic_ns()
        record = RequestRecord(next(self._ids), parsed.rows, accepted_ns=accepted_ns,
                               deadline_ns=accepted_ns + timeout_ms * 1_000_000)
        self._batcher.expect()
        if not off_loop and self.model.prepare_size(parsed) <= self.config.inline_preprocess_max:
            # a small body and a few µs of work: a hop to a pre-processing thread would cost more than it (H200:
            # -0.5 ms at 50 req/s over HTTP, docs/serving.md); a large body or a large tensor goes to the pool
            self._preprocess(record, parsed, callback)
            return record
        try:
            pool.submit(self._preprocess, record, parsed, callback)
        except (RuntimeError, OverloadedError):  # close() shut the pool after the state check: not accepted after all
            self._batcher.forget()
            with self._lock:
                self._pending -= 1
                self._pending_rows -= parsed.rows
                self.counters["accepted"] -= 1
                self.counters["refused_not_ready"] += 1
            raise OverloadedError("the service is shutting down: retry on another replica") from None
        return record

    def _deadline_ms(self, timeout_ms: int | None) -> int:
        """The request's deadline: `request_timeout_ms`, or less if its caller asks (never more)."""
        most = self.config.request_timeout_ms
        if timeout_ms is None:
            return most
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or timeout_ms < 1:
            raise BadRequestError(f"the request's timeout ({REQUEST_TIMEOUT_HEADER}) must be a positive whole number "
                                  f"of milliseconds, got {timeout_ms!r}")
        return min(timeout_ms, most)

    def count(self, key: str) -> None:
        """Add one to counter `key` (the HTTP app counts what only it sees, e.g. client_gone_before_accept)."""
        with self._lock:
            self.counters[key] += 1

    def mark_abandoned(self, record: RequestRecord) -> None:
        """The client of `record` went away; its answer (when it comes) goes nowhere."""
        with self._lock:
            if record.outcome in ("pending", "ok"):
                record.outcome = "abandoned"
                self.counters["abandoned"] += 1

    def _time_out(self, future: asyncio.Future[Any], record: RequestRecord) -> None:
        """The deadline of `record` passed with no answer (on the loop): answer 504; it runs on if it already left
        the queue, and its answer goes nowhere."""
        if future.done():
            return
        with self._lock:
            if record.outcome == "pending":
                record.outcome, record.status = "timed_out", 504
            self.counters["timed_out"] += 1
        record.responded_ns = time.monotonic_ns()
        limit_ms = (record.deadline_ns - record.accepted_ns) // 1_000_000
        error = RequestTimeoutError(f"no answer within this request's deadline of {limit_ms} ms: the service is busy; "
                                    "retry later or on another replica")
        error.request_id = record.request_id
        future.set_exception(error)

    def _expired_in_queue(self, pending: Pending) -> None:
        """A request still queued at its deadline (the GPU worker's thread): answered 504, never run."""
        queued: _Queued = pending.item
        self.count("expired_in_queue")
        limit_ms = (queued.record.deadline_ns - queued.record.accepted_ns) // 1_000_000
        self._complete(queued.record, queued.callback, None, RequestTimeoutError(
            f"no answer within this request's deadline of {limit_ms} ms (it was still queued): the service is busy; "
            "retry later or on another replica"))

    # -- stages (service threads) ----------------------------------------------------------------------
    def _preprocess(self, record: RequestRecord, parsed: ParsedRequest, callback: Callback) -> None:
        record.pre_start_ns = time.monotonic_ns()
        try:
            inputs = self.model.prepare(parsed)
        except Exception as exc:  # noqa: BLE001 - answered, never lost
            self._batcher.forget()
            record.pre_end_ns = time.monotonic_ns()
            error = exc if isinstance(exc, ServeError) else InferenceFailedError(
                f"pre-processing failed on this request ({type(exc).__name__})")
            error.stage = error.stage or "pre-processing"
            self._complete(record, callback, None, error)
            return
        record.pre_end_ns = time.monotonic_ns()
        try:
            self._batcher.put(_Queued(record, inputs, parsed, callback), parsed.rows, expected=True,
                              deadline_ns=record.deadline_ns)
        except OverloadedError as exc:  # only when closed mid-way: close() waits for this pool, so never in practice
            self._complete(record, callback, None, exc)

    def _finish_batch(self, batch: Batch, batch_record: BatchRecord, host: Any, error: BaseException | None) -> None:
        """Post-processing of one batch (a post-processing thread): one softmax + top-k for all its rows."""
        queued: list[_Queued] = [pending.item for pending in batch.items]
        for q in queued:
            q.record.batch_id, q.record.batch_rows = batch_record.batch_id, batch.rows
            q.record.dispatched_ns, q.record.done_ns = batch.formed_ns, batch_record.done_ns
        answers: list[Any] = []
        if error is None:
            try:
                answers = self.model.answer(host, [q.request for q in queued])
            except ServeError as exc:
                error = exc
            except Exception as exc:  # noqa: BLE001 - the batch's requests are answered with it
                error = InferenceFailedError(f"post-processing failed on this request's batch ({type(exc).__name__})")
                error.stage = "post-processing"
        batch_record.post_end_ns = time.monotonic_ns()
        with self._lock:
            self.counters["batches"] += 1
            self.batch_rows[batch.rows] += 1
            self.batch_buckets[batch_record.bucket] += 1
        self.traces.add_batch(batch_record)
        for i, q in enumerate(queued):
            record = q.record
            own = _for_request(error, record.request_id) if error is not None else answers[i]
            if isinstance(own, BaseException):
                self._complete(record, q.callback, None, own)
                continue
            record.post_end_ns = batch_record.post_end_ns
            # the JSON answer; a notebook shows it as tables (ServiceAnswer: a dict, the same to code and JSON)
            answer = ServiceAnswer({"id": record.request_id, **own,
                                    "batch": {"id": batch_record.batch_id, "requests": batch_record.requests,
                                              "rows": batch.rows, "bucket": batch_record.bucket},
                                    "timing_us": record.timing_us()},
                                   device=self.config.device, setting=self.config.setting)
            self._complete(record, q.callback, answer, None)

    def _complete(self, record: RequestRecord, callback: Callback, result: Any, error: BaseException | None) -> None:
        with self._lock:
            self._pending -= 1
            self._pending_rows -= record.rows
            if record.outcome == "pending":
                record.outcome = "ok" if error is None else \
                    "timed_out" if isinstance(error, RequestTimeoutError) else "failed"
            if record.outcome != "timed_out" or not record.status:  # a 504 already sent stays what it was
                record.status = 200 if error is None else getattr(error, "status", 500)
            self.counters["answered_ok" if error is None else "answered_error"] += 1
            self._idle.notify_all()
        self.traces.add_request(record)
        if isinstance(error, ServeError) and error.request_id is None:
            error.request_id = record.request_id  # each request's error is its own object (_for_request)
        try:
            callback(result, error)
        except Exception:  # noqa: BLE001 - a caller's closed loop must not stop the pipeline
            self.count("callback_errors")

    # -- looking at it ---------------------------------------------------------------------------------
    @property
    def worker_alive(self) -> bool:
        """True while the GPU worker thread runs (False before start, after close, or if it broke)."""
        return self._worker is not None and self._worker.alive

    @property
    def pending(self) -> int:
        """Requests inside the service now (accepted, not yet answered)."""
        return self._pending

    def wait_idle(self, timeout_s: float = 30.0) -> bool:
        """Block until every accepted request is answered; False on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout=timeout_s)

    def stats(self) -> dict[str, Any]:
        """Counters, queue state, the batch sizes formed so far and what the runner is."""
        with self._lock:
            counters = dict(self.counters)
            rows = dict(sorted(self.batch_rows.items()))
            buckets = dict(sorted(self.batch_buckets.items()))
        describe = getattr(self.runner, "describe", None)
        return {"state": self.state.value, "model": self.model.name, "setting": self.config.setting,
                "pending": self._pending, "queued": len(self._batcher),
                "in_preprocessing": self._batcher.in_preprocessing, "counters": counters,
                "batch_rows": rows, "batch_buckets": buckets,
                "runner": describe() if callable(describe) else {"runner": type(self.runner).__name__},
                "warmup_s": round(self._worker.warmup_s, 3) if self._worker else None,
                "config": self.config.to_dict()}

    def reset_stats(self) -> None:
        """Forget counters, batch sizes and traces (between load-test points)."""
        with self._lock:
            self.counters.clear()
            self.batch_rows.clear()
            self.batch_buckets.clear()
        self.traces.clear()


class _Inline:
    """preprocess_threads=0: pre-processing runs on the caller's thread (the event loop), one hop fewer; for
    requests whose pre-processing costs a few µs (short prompts, small vectors), not for images."""

    def __init__(self) -> None:
        self._closed = False

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        if self._closed:  # as a shut-down pool refuses: submit() turns it into a 503
            raise OverloadedError("the service is shutting down: retry on another replica")
        fn(*args)

    def shutdown(self, wait: bool = True) -> None:
        self._closed = True


def _for_request(error: BaseException, request_id: int) -> BaseException:
    """A batch's error as one request's answer: its own copy, naming the request (`ServeError.request_id`)."""
    if not isinstance(error, ServeError):
        return error
    own = copy.copy(error)
    own.request_id = request_id
    return own


def _settle(future: asyncio.Future[Any], holder: dict[str, RequestRecord], result: Any,
            error: BaseException | None) -> None:
    record = holder.get("record")
    if record is not None:
        record.responded_ns = time.monotonic_ns()
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


__all__ = ["EXIT_WORKER_DOWN", "InferenceService", "STATES", "ServiceState"]
