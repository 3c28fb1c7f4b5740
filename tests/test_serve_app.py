"""The HTTP app on the CPU: in process through httpx.ASGITransport, and a real uvicorn on a free localhost port
for what only a socket shows (clients that disconnect mid-request)."""
from __future__ import annotations

import asyncio
import json
import socket
import threading
import time

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("starlette")

from graphlab.serve.app import create_app  # noqa: E402
from graphlab.serve.config import ServeConfig  # noqa: E402
from graphlab.serve.payload import largest_body_bytes  # noqa: E402
from graphlab.serve.service import InferenceService  # noqa: E402

from test_serve_service import GatedRunner, _config, _vectors  # noqa: E402


async def _post(app, body=None, content=None, headers=None, path="/v1/infer"):
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        if body is None and content is None:
            return await client.get(path)
        return await client.post(path, json=body, content=content, headers=headers)


@pytest.fixture(scope="module")
def app():
    service = InferenceService(_config(setting="graphs+batching", max_batch_size=4, max_body_bytes=120_000)).start()
    yield create_app(service)
    service.close()


def _call(*args, **kwargs):
    return asyncio.run(_post(*args, **kwargs))


def test_a_good_request_is_200_with_results_batch_and_timings(app):
    r = _call(app, {"vectors": _vectors(2), "top_k": 2})
    assert r.status_code == 200
    data = r.json()
    assert len(data["results"]) == 2 and len(data["results"][0]) == 2
    assert data["batch"]["bucket"] in (2, 4) and data["timing_us"]["in_service_us"] > 0


@pytest.mark.parametrize("content, status, reason, detail", [
    (b"{not json", 422, "malformed_request", "the body is not JSON: Expecting property name"),
    (b"\xff\xfe", 422, "malformed_request", "the body is not JSON"),
    (b'{"vectors": 3}', 422, "malformed_request", "vectors must be a list, got a number"),
    (b"[" * 30_000 + b"]" * 30_000, 422, "malformed_request", "nested too deeply"),
    (b'{"texts": ["a"]}', 422, "malformed_request", "unknown field 'texts'; this model takes vectors, top_k"),
    (json.dumps({"vectors": _vectors(5)}).encode(), 413, "request_too_large", "vectors has 5 rows"),
])
def test_bad_requests_get_one_clear_json_error(app, content, status, reason, detail):
    r = _call(app, content=content, headers={"content-type": "application/json"})
    assert r.status_code == status
    assert r.json()["error"] == reason and detail in r.json()["detail"]


def test_a_body_over_the_limit_is_413_before_it_is_read(app):
    # the model's own limit (4 rows of 256 numbers as JSON, with margin), below max_body_bytes (120,000)
    limit = largest_body_bytes(4 * 256)
    assert limit < 120_000 and app.max_body == limit
    r = _call(app, content=b"x" * (limit + 1), headers={"content-type": "application/json"})
    assert r.status_code == 413 and f"reads at most {limit}" in r.json()["detail"]
    # the largest valid request, written with more whitespace than needed, is read
    padded = json.dumps({"vectors": [[-0.12345678901234567] * 256] * 4}, indent=4).encode()
    assert _call(app, content=padded, headers={"content-type": "application/json"}).status_code == 200


def test_health_stats_and_wrong_method(app):
    health = _call(app, path="/healthz")
    assert health.status_code == 200 and health.json()["state"] == "ready"
    stats = _call(app, path="/v1/stats").json()
    assert stats["setting"] == "graphs+batching" and stats["counters"]["refused_malformed"] >= 1
    assert _call(app, path="/v1/infer").status_code == 405


def test_warming_up_and_full_are_503_with_retry_after():
    runner = GatedRunner()
    service = InferenceService(_config(setting="eager", max_pending=2), runner=runner)
    app = create_app(service)
    r = _call(app, {"vectors": _vectors(1)})
    assert r.status_code == 503 and "not started" in r.json()["detail"] and r.headers["retry-after"] == "1"
    assert _call(app, path="/healthz").status_code == 503
    service.start()
    runner.gate.clear()

    async def flood():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
            tasks = [asyncio.create_task(client.post("/v1/infer", json={"vectors": _vectors(1)})) for _ in range(6)]
            await asyncio.sleep(0.3)
            runner.gate.set()
            return await asyncio.gather(*tasks)

    codes = sorted(r.status_code for r in asyncio.run(flood()))
    assert codes == [200, 200, 503, 503, 503, 503]
    service.close()


def test_config_from_environment():
    cfg = ServeConfig.from_env({"GRAPHLAB_SERVE_MODEL": "mlp", "GRAPHLAB_SERVE_SETTING": "graphs",
                           "GRAPHLAB_SERVE_DEVICE": "cpu", "GRAPHLAB_SERVE_MAX_BATCH_SIZE": "16",
                           "GRAPHLAB_SERVE_BUCKETS": "1,4,16"})
    assert (cfg.model, cfg.setting, cfg.max_batch_size, cfg.bucket_list()) == ("mlp", "graphs", 16, [1, 4, 16])
    from graphlab.errors import GraphlabError

    with pytest.raises(GraphlabError, match="GRAPHLAB_SERVE_MAX_WAIT_US must be an integer"):
        ServeConfig.from_env({"GRAPHLAB_SERVE_MAX_WAIT_US": "soon"})


# -- a real server on a free localhost port ------------------------------------------------------------
uvicorn = pytest.importorskip("uvicorn")


@pytest.fixture(scope="module")
def server():
    runner = GatedRunner()
    service = InferenceService(_config(setting="graphs+batching", max_wait_us=1000), runner=runner)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = uvicorn.Config(create_app(service), host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not srv.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert srv.started, "uvicorn did not start"
    yield f"http://127.0.0.1:{port}", service, runner
    srv.should_exit = True
    thread.join(30)
    assert service.state == "closed"  # the lifespan closed the service


def _raw(port, data: bytes):
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.sendall(data)
    return sock


def test_clients_that_disconnect_mid_request_change_nothing_for_the_others(server):
    url, service, runner = server
    port = int(url.rsplit(":", 1)[1])
    body = json.dumps({"vectors": _vectors(1)}).encode()
    head = (f"POST /v1/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    before = dict(service.stats()["counters"])
    # 1. gone while uploading: half a body, then close
    _raw(port, head + body[: len(body) // 2]).close()
    # 2. gone while its request is on the GPU: the worker is held, the client closes, then the worker goes on
    runner.gate.clear()
    waiting = _raw(port, head + body)
    time.sleep(0.3)
    waiting.close()
    time.sleep(0.1)
    runner.gate.set()
    assert service.wait_idle(10)
    # 3. everyone else is still served, with answers
    with httpx.Client(base_url=url, timeout=10) as client:
        answers = [client.post("/v1/infer", json={"vectors": _vectors(1, i)}) for i in range(3)]
        assert [a.status_code for a in answers] == [200, 200, 200]
        stats = client.get("/v1/stats").json()["counters"]
    deadline = time.monotonic() + 5
    while stats.get("client_gone_before_accept", 0) <= before.get("client_gone_before_accept", 0) and \
            time.monotonic() < deadline:
        time.sleep(0.05)
        stats = service.stats()["counters"]
    assert stats.get("client_gone_before_accept", 0) == before.get("client_gone_before_accept", 0) + 1
    assert stats["abandoned"] == before.get("abandoned", 0) + 1
    # nothing accepted was lost: every accepted request was answered
    assert stats["accepted"] == stats["answered_ok"] + stats.get("answered_error", 0)


def test_a_real_http_load_burst_is_answered(server):
    url, service, _ = server

    async def burst():
        async with httpx.AsyncClient(base_url=url, timeout=10) as client:
            return await asyncio.gather(*(client.post("/v1/infer", json={"vectors": _vectors(1, i)})
                                          for i in range(20)))

    codes = [r.status_code for r in asyncio.run(burst())]
    assert codes == [200] * 20
    assert max(service.stats()["batch_rows"]) > 1  # concurrent requests were batched
