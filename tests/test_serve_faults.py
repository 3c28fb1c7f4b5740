"""A model that fails, and requests that outlive their deadline: through the real service (in process here; over a
real socket in tests/test_serve_faults_http.py).

The model (tests/serve_fault_models.py) raises on marked rows: a poisoned request fails alone, not its batch; a
SystemExit or KeyboardInterrupt kills the worker, which is restarted once and stays down after a second death
within a minute; a CUDA error stops it at once. Every request is answered: 200, 500, 503 or 504."""
from __future__ import annotations

import asyncio
import time

import pytest

from graphlab.errors import BadRequestError, InferenceFailedError, OverloadedError, RequestTimeoutError
from graphlab.serve.config import ServeConfig
from graphlab.serve.service import InferenceService
from serve_fault_models import ACCELERATOR_ERROR, CUDA_ERROR, EXIT, INTERRUPT, POISON, faulty, row


def _service(monkeypatch, sleep_ms=5, **settings):
    monkeypatch.setenv("SERVE_TEST_SLEEP_MS", str(sleep_ms))
    served = faulty()
    base = {"device": "cpu", "setting": "graphs+batching", "max_wait_us": 0, "preprocess_threads": 1}
    return InferenceService(ServeConfig.for_model(served, **{**base, **settings}), model=served).start()


def _body(mark=0.0):
    return {"inputs": [row(mark)]}


async def _together(service, marks):
    return await asyncio.gather(*(service.infer(_body(m)) for m in marks), return_exceptions=True)


def test_a_poisoned_request_fails_alone_and_the_seven_innocent_ones_of_its_batch_are_answered(monkeypatch):
    # the 8 requests fill one batch (max_batch_size 8) inside the 2 s window, so they run together first
    with _service(monkeypatch, max_wait_us=2_000_000) as service:
        answers = asyncio.run(_together(service, [0.0] * 3 + [POISON] + [0.0] * 4))
        batches = service.traces.batches()
        counters = service.stats()["counters"]
    guilty = answers[3]
    assert isinstance(guilty, InferenceFailedError) and guilty.status == 500
    assert "ValueError" in str(guilty) and "secret" not in str(guilty)  # the kind of failure, not the model's text
    innocent = answers[:3] + answers[4:]
    assert all(isinstance(a, dict) and len(a["outputs"]) == 1 for a in innocent), innocent
    retried = [b for b in batches if b["retry_of"] >= 0]
    assert len(retried) == 8 and len({b["retry_of"] for b in retried}) == 1  # one failed batch, run one by one
    assert [b["requests"] for b in retried] == [1] * 8 and sum(1 for b in retried if b["error"]) == 1
    assert counters["answered_ok"] == 7 and counters["answered_error"] == 1


@pytest.mark.parametrize("mark, kind", [(EXIT, "SystemExit"), (INTERRUPT, "KeyboardInterrupt")])
def test_a_model_that_exits_gets_its_batch_500_the_worker_restarted_once_then_down(monkeypatch, caplog, mark, kind):
    with _service(monkeypatch) as service:
        down = []
        service.when_down(down.append)
        with pytest.raises(InferenceFailedError, match=f"the model raised {kind}") as info:
            service.infer_sync(_body(mark), timeout_s=20)  # before: no answer, ever
        assert info.value.status == 500
        assert service.infer_sync(_body(), timeout_s=20)["outputs"]  # the restarted worker serves
        assert service.state == "ready" and service.worker_alive and down == []
        with pytest.raises(InferenceFailedError, match=kind):  # a second death within 60 s: down for good
            service.infer_sync(_body(mark), timeout_s=20)
        service._worker.join(10)
        assert not service.worker_alive and service.state == "failed"
        assert len(down) == 1 and "died twice within 60 s" in down[0] and kind in down[0]
        with pytest.raises(OverloadedError, match="down"):
            service.infer_sync(_body(), timeout_s=20)
        assert service.pending == 0
    deaths = [r for r in caplog.records if r.name == "graphlab.serve"]
    assert len(deaths) == 2 and all(r.exc_info is None for r in deaths)  # one line per death, no traceback


@pytest.mark.parametrize("mark", [CUDA_ERROR, ACCELERATOR_ERROR])
def test_a_cuda_error_answers_the_batch_500_and_stops_the_service_at_once(monkeypatch, mark):
    with _service(monkeypatch, sleep_ms=200, setting="eager") as service:
        down = []
        service.when_down(down.append)

        async def go():
            first = asyncio.ensure_future(service.infer(_body(mark)))
            await asyncio.sleep(0.05)  # it runs (200 ms); these wait in the queue behind it
            return await asyncio.gather(first, *(service.infer(_body()) for _ in range(3)), return_exceptions=True)

        first, *queued = asyncio.run(go())
        service._worker.join(10)
        assert isinstance(first, InferenceFailedError) and "CUDA error stopped the GPU worker" in str(first)
        assert all(isinstance(q, OverloadedError) and q.status == 503 for q in queued), queued  # never ran
        assert service._worker.restarts == 0 and service.state == "failed" and not service.worker_alive
        assert len(down) == 1 and "CUDA context can no longer be trusted" in down[0]


def test_a_request_still_queued_at_its_deadline_gets_504_and_never_runs(monkeypatch):
    with _service(monkeypatch, sleep_ms=600, setting="eager") as service:
        async def go():
            busy = asyncio.ensure_future(service.infer(_body()))  # holds the worker 600 ms
            await asyncio.sleep(0.05)
            t0 = time.monotonic()
            with pytest.raises(RequestTimeoutError, match="deadline of 150 ms") as info:
                await service.infer(_body(), timeout_ms=150)
            return info.value, time.monotonic() - t0, await busy

        error, waited_s, answer = asyncio.run(go())
        assert service.wait_idle(10)
        requests = sorted(service.traces.requests(), key=lambda r: r["request_id"])
        counters = service.stats()["counters"]
    assert error.status == 504 and waited_s < 0.5 and answer["outputs"]
    late = requests[1]
    assert late["outcome"] == "timed_out" and late["status"] == 504 and late["batch_id"] == -1  # not run
    assert counters["timed_out"] == 1 and counters["expired_in_queue"] == 1


def test_a_client_may_lower_its_deadline_but_never_raise_it(monkeypatch):
    with _service(monkeypatch, sleep_ms=800, setting="eager", request_timeout_ms=200) as service:
        t0 = time.monotonic()
        with pytest.raises(RequestTimeoutError, match="deadline of 200 ms"):
            asyncio.run(service.infer(_body(), timeout_ms=60_000))
        assert time.monotonic() - t0 < 0.6
        for bad in (0, -5, 1.5, True):
            with pytest.raises(BadRequestError, match="positive whole number"):
                asyncio.run(service.infer(_body(), timeout_ms=bad))
        assert service.wait_idle(10)


def test_a_request_that_would_wait_past_its_deadline_is_refused_at_once_with_503(monkeypatch):
    with _service(monkeypatch, sleep_ms=150, setting="eager") as service:
        for _ in range(3):  # the recent batch times: about 150 ms each
            service.infer_sync(_body())

        async def go():
            ahead = [asyncio.ensure_future(service.infer(_body())) for _ in range(4)]
            await asyncio.sleep(0.02)
            t0 = time.monotonic()
            with pytest.raises(OverloadedError, match=r"would answer this request in about .* past its deadline "
                                                      r"of 300 ms") as info:
                await service.infer(_body(), timeout_ms=300)  # 4 x 150 ms ahead of it
            refused_in = time.monotonic() - t0
            fits = await service.infer(_body(), timeout_ms=5_000)
            return info.value, refused_in, fits, await asyncio.gather(*ahead)

        refused, refused_in, fits, ahead = asyncio.run(go())
        counters = service.stats()["counters"]
    assert refused.status == 503 and refused_in < 0.1 and fits["outputs"] and len(ahead) == 4
    assert counters["refused_deadline"] == 1
