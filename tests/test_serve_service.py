"""The service on the CPU: same answers in every setting, batching, bounded queue, failures, cancellation, drain."""
from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter

import pytest
import torch

from graphlab.errors import GraphlabError, OverloadedError, RequestTooLargeError, ServeError
from graphlab.serve.config import ServeConfig
from graphlab.serve.runners import EagerRunner
from graphlab.serve.served_model import served_model
from graphlab.serve.service import InferenceService
from graphlab.serve.trace import RequestRecord

MLP = served_model("mlp")


def _config(**kw):
    base = {"model": "mlp", "device": "cpu", "max_batch_size": 8, "max_wait_us": 0, "preprocess_threads": 2}
    return ServeConfig(**{**base, **kw})


def _vectors(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [[round(v, 4) for v in torch.randn(256, generator=g).tolist()] for _ in range(n)]


class GatedRunner(EagerRunner):
    """The real model, but each batch waits for `gate` (so a test can hold the GPU worker busy)."""

    def __init__(self, fail_first: int = 0):
        super().__init__(MLP.build("cpu"), lambda n: MLP.example_inputs(n, "cpu"), 8)
        self.gate = threading.Event()
        self.gate.set()
        self.calls = 0
        self.fail_first = fail_first

    def __call__(self, *inputs):
        self.calls += 1
        if self.calls <= self.fail_first:
            raise RuntimeError("simulated device failure")
        assert self.gate.wait(10)
        return super().__call__(*inputs)

    def warm_up(self):
        return None


def _run(coro):
    return asyncio.run(coro)


def test_answers_are_the_models_top_k_in_every_setting():
    model = MLP.build("cpu")
    vectors = _vectors(3)
    with torch.no_grad():
        expected = model(torch.tensor(vectors)).argmax(dim=1).tolist()
    for setting in ("eager", "graphs", "graphs+batching", "eager+batching"):
        with InferenceService(_config(setting=setting)) as service:
            answer = _run(service.infer({"vectors": vectors, "top_k": 3}))
            assert [row[0]["id"] for row in answer["results"]] == expected, setting
            assert len(answer["results"][0]) == 3
            assert set(answer["timing_us"]) == {"pre_us", "queue_us", "gpu_us", "post_us", "in_service_us"}
            stats = service.stats()
        assert stats["runner"]["runner"] == ("graph_cache" if "graphs" in setting else "eager")
        if "graphs" in setting:
            assert stats["runner"]["buckets"] == [1, 2, 4, 8] and stats["runner"]["captures"] == 4


def test_batching_merges_concurrent_requests_and_no_batching_keeps_them_apart():
    async def burst(service, n):
        return await asyncio.gather(*(service.infer({"vectors": _vectors(1, i)}) for i in range(n)))

    with InferenceService(_config(setting="graphs+batching", max_wait_us=50_000)) as service:
        answers = _run(burst(service, 16))
        stats = service.stats()
    assert stats["counters"]["batches"] < 16 and max(stats["batch_rows"]) > 1
    assert sum(r * n for r, n in stats["batch_rows"].items()) == 16
    assert {a["batch"]["bucket"] for a in answers} <= {1, 2, 4, 8}
    with InferenceService(_config(setting="graphs")) as service:
        _run(burst(service, 6))
        assert service.stats()["batch_rows"] == {1: 6}


def test_a_flood_is_refused_at_once_with_503_and_every_accepted_request_is_answered():
    runner = GatedRunner()
    service = InferenceService(_config(setting="eager", max_pending=5), runner=runner).start()
    runner.gate.clear()  # the worker holds its first batch: requests pile up

    async def flood():
        tasks = [asyncio.create_task(service.infer({"vectors": _vectors(1, i)})) for i in range(20)]
        await asyncio.sleep(0.2)
        t0 = time.perf_counter()
        with pytest.raises(OverloadedError, match=r"holds 5 requests \(max_pending\)") as info:
            await service.infer({"vectors": _vectors(1)})
        assert time.perf_counter() - t0 < 0.05 and info.value.status == 503
        runner.gate.set()
        return await asyncio.gather(*tasks, return_exceptions=True)

    results = _run(flood())
    ok = [r for r in results if isinstance(r, dict)]
    refused = [r for r in results if isinstance(r, OverloadedError)]
    assert len(ok) == 5 and len(refused) == 15
    counters = service.stats()["counters"]
    assert counters["accepted"] == counters["answered_ok"] == 5
    assert counters["refused_overloaded"] == 16 and service.pending == 0
    service.close()


def test_a_failed_batch_answers_its_requests_with_500_and_the_service_goes_on():
    runner = GatedRunner(fail_first=1)
    with InferenceService(_config(setting="eager"), runner=runner) as service:
        with pytest.raises(ServeError, match="inference failed: the model raised RuntimeError on this request") as info:
            _run(service.infer({"vectors": _vectors(1)}))
        assert info.value.status == 500 and "simulated" not in str(info.value)  # the kind, not the model's words
        assert _run(service.infer({"vectors": _vectors(1)}))["results"]
        counters = service.stats()["counters"]
    assert counters["answered_error"] == 1 and counters["answered_ok"] == 1


def test_a_caller_that_goes_away_loses_nothing_and_the_answer_is_counted_abandoned():
    runner = GatedRunner()
    with InferenceService(_config(setting="eager"), runner=runner) as service:
        runner.gate.clear()

        async def leave():
            task = asyncio.create_task(service.infer({"vectors": _vectors(1)}))
            await asyncio.sleep(0.1)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        _run(leave())
        runner.gate.set()
        assert service.wait_idle(10)
        assert _run(service.infer({"vectors": _vectors(1)}))["results"]  # still serving
        counters = service.stats()["counters"]
        outcomes = [r["outcome"] for r in service.traces.requests()]
    assert counters["abandoned"] == 1 and counters["answered_ok"] == 2 and counters["accepted"] == 2
    assert sorted(outcomes) == ["abandoned", "ok"]


def test_not_started_and_shutting_down_are_503():
    service = InferenceService(_config(setting="eager"))
    with pytest.raises(OverloadedError, match="not started"):
        service.submit({"vectors": _vectors(1)}, lambda r, e: None)
    service.start()
    service.close()
    with pytest.raises(OverloadedError, match="shutting down"):
        service.submit({"vectors": _vectors(1)}, lambda r, e: None)


def test_close_answers_every_request_it_accepted():
    runner = GatedRunner()
    service = InferenceService(_config(setting="eager+batching", max_wait_us=1000), runner=runner).start()
    runner.gate.clear()
    answers: list = []
    for i in range(6):
        service.submit({"vectors": _vectors(1, i)}, lambda r, e: answers.append((r, e)))
    threading.Timer(0.2, runner.gate.set).start()
    service.close()
    assert len(answers) == 6 and all(e is None and r["results"] for r, e in answers)
    assert service.state == "closed"


def test_oversized_requests_413_or_run_alone_eagerly_by_setting():
    with InferenceService(_config(setting="graphs+batching", max_batch_size=4)) as service:
        with pytest.raises(RequestTooLargeError, match="vectors has 6 rows; this service takes at most 4"):
            _run(service.infer({"vectors": _vectors(6)}))
        assert service.stats()["counters"]["refused_too_large"] == 1
    config = _config(setting="graphs+batching", max_batch_size=4, oversize="eager", max_oversize_rows=16)
    with InferenceService(config) as service:
        with pytest.warns(UserWarning, match="above the largest bucket"):
            answer = _run(service.infer({"vectors": _vectors(6)}))
        assert len(answer["results"]) == 6 and answer["batch"]["rows"] == 6
        assert service.stats()["runner"]["fallbacks"] == 1
        with pytest.raises(RequestTooLargeError, match="at most 16"):
            _run(service.infer({"vectors": _vectors(17)}))


def test_a_warm_up_failure_surfaces_from_start():
    class Broken(GatedRunner):
        def warm_up(self):
            raise RuntimeError("capture failed here")

    service = InferenceService(_config(setting="eager"), runner=Broken())
    with pytest.raises(RuntimeError, match="capture failed here"):
        service.start()
    assert service.state == "closed"


def test_every_stage_is_timestamped_in_order():
    with InferenceService(_config(setting="graphs+batching", max_wait_us=2000)) as service:
        _run(service.infer({"vectors": _vectors(2)}))
        (request,) = service.traces.requests()
        (batch,) = service.traces.batches()
    stages = [request[k] for k in ("accepted_ns", "pre_start_ns", "pre_end_ns", "dispatched_ns", "done_ns",
                                   "post_end_ns", "responded_ns")]
    assert all(stages) and stages == sorted(stages)
    assert request["outcome"] == "ok" and request["status"] == 200 and request["batch_id"] == batch["batch_id"]
    order = [batch[k] for k in ("slot_wait_start_ns", "wait_start_ns", "first_ready_ns", "formed_ns",
                                "launch_start_ns", "launch_end_ns", "done_ns", "post_end_ns")]
    assert order == sorted(order) and batch["rows"] == 2 and batch["bucket"] == 2


@pytest.mark.parametrize("kwargs, message", [
    ({"setting": "turbo"}, "setting must be one of"),
    ({"buckets": [1, 2, 4]}, r"largest bucket \(4\) must equal max_batch_size \(8\)"),
    ({"max_wait_us": -1}, "max_wait_us must be a non-negative"),
    ({"oversize": "drop"}, "oversize must be 'reject'"),
    ({"max_pending": 0}, "max_pending must be a positive integer"),
])
def test_bad_configs_are_one_clear_error(kwargs, message):
    with pytest.raises(GraphlabError, match=message):
        _config(**kwargs)


def test_a_cuda_service_without_a_gpu_says_so():
    from graphlab.errors import GPUUnavailableError

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(GPUUnavailableError, match="serving mlp on cuda"):
        InferenceService(ServeConfig(model="mlp", device="cuda")).start()


def test_if_the_worker_loop_itself_breaks_it_is_restarted_once_then_the_rest_get_503_and_the_service_says_down():
    runner = GatedRunner()
    service = InferenceService(_config(setting="eager"), runner=runner).start()
    down: list = []
    service.when_down(down.append)
    service._post_pool.shutdown(wait=True)  # a bug: the worker can no longer hand batches on
    runner.gate.clear()
    first = service.submit({"vectors": _vectors(1)}, lambda r, e: None)  # in the worker's hands when it breaks
    time.sleep(0.2)
    answers: list = []
    for i in range(3):  # queued behind it
        service.submit({"vectors": _vectors(1, i)}, lambda r, e: answers.append(e))
    time.sleep(0.2)
    runner.gate.set()
    service._worker.join(5)
    assert first.outcome == "ok"  # answered where it was
    # the restarted worker answers the next one where it is, breaks again within 60 s and stays down: the rest 503
    assert len(answers) == 3 and answers[0] is None
    assert all(isinstance(e, OverloadedError) and "GPU worker stopped before running" in str(e) for e in answers[1:])
    assert not service.worker_alive and service._worker.restarts == 1
    assert down == [service.failure] and "died twice within 60 s" in service.failure
    with pytest.raises(OverloadedError, match="down \\(its GPU worker stopped"):
        service.infer_sync({"vectors": _vectors(1)})
    assert service.state == "failed" and service.pending == 0
    service.close()


def test_no_answer_in_time_is_a_504_request_timeout_and_the_request_still_runs():
    from graphlab.errors import RequestTimeoutError

    runner = GatedRunner()
    with InferenceService(_config(setting="eager"), runner=runner) as service:
        runner.gate.clear()
        with pytest.raises(RequestTimeoutError, match=r"no answer within 0.1 s \(the request still runs") as info:
            service.infer_sync({"vectors": _vectors(1)}, timeout_s=0.1)
        assert isinstance(info.value, ServeError)
        assert (info.value.status, info.value.reason) == (504, "request_timeout")
        assert ServeError.status == 500  # the class every other failure answers with is left as it was
        runner.gate.set()
        assert service.wait_idle(10)
        counters = service.stats()["counters"]
    assert counters["abandoned"] == 1 and counters["answered_ok"] == 1


def test_the_state_is_one_of_the_listed_states_and_reads_as_its_name():
    from graphlab.serve.service import STATES, ServiceState

    assert STATES == ("new", "warming_up", "ready", "failed", "closing", "closed")
    service = InferenceService(_config(setting="eager"))
    assert service.state is ServiceState.NEW and service.state == "new" and f"{service.state}" == "new"
    with service:
        assert service.state is ServiceState.READY and service.stats()["state"] == "ready"
        assert type(service.stats()["state"]) is str  # JSON-ready, as /v1/stats serves it
        with pytest.raises(GraphlabError, match="the service is ready: start\\(\\) runs once"):
            service.start()
    assert service.state is ServiceState.CLOSED


class _SlowReadCounter(Counter):
    """A Counter whose reads of one key wait (up to `wait_s`) for a second reader: so two unlocked `+= 1` on that
    key both read the old value and one update is lost, every time; under a lock the second never gets to read."""

    def __init__(self, key, wait_s=0.3):
        super().__init__()
        self.key = key
        self.meet = threading.Barrier(2, timeout=wait_s)

    def __missing__(self, key):
        if key == self.key:
            try:
                self.meet.wait()
            except threading.BrokenBarrierError:
                pass  # alone (the other thread waits for the lock): go on
        return 0


def test_counters_lose_no_update_when_two_threads_count_at_once(run_threads):
    """Two post-processing threads whose callbacks fail at once each count a callback error: both counts land."""
    service = InferenceService(_config(setting="eager"))
    service.counters = _SlowReadCounter("callback_errors")

    def broken_callback(result, error):
        raise RuntimeError("the caller's event loop is closed")

    def answer(i):
        service._complete(RequestRecord(i, rows=1), broken_callback, {"id": i}, None)

    assert run_threads(answer, range(2), 10.0) == []
    assert service.counters["callback_errors"] == 2


def test_small_requests_are_pre_processed_inline_and_answer_the_same_as_through_the_pool():
    vectors = _vectors(2)
    answers = []
    for inline_max in (4096, 0):  # 2 x 256 numbers: inline on the caller's thread; 0: always the pool
        with InferenceService(_config(setting="graphs+batching", inline_preprocess_max=inline_max)).start() as s:
            answers.append(s.infer_sync({"vectors": vectors, "top_k": 3})["results"])
            with pytest.raises(GraphlabError, match=r"vectors\[0\]\[0\] is NaN"):
                s.infer_sync({"vectors": [[float("nan")] + [0.0] * 255]})
            assert s.wait_idle(5) and s.pending == 0
    assert answers[0] == answers[1]
