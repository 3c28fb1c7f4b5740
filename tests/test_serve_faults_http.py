"""A faulty model and deadlines over a real socket: `python -m graphlab.serve` in a subprocess, plain HTTP clients.

The model (tests/serve_fault_models.py) raises on marked rows. Every request gets a JSON answer: 200, 500 (only the
requests the model fails on), 503 or 504; a worker that stays down makes /healthz 503 and the process exit
EXIT_WORKER_DOWN on its own. And the flood of the issue: `hey` at 1,000 clients for 3 s against the mlp service."""
from __future__ import annotations

import http.client
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from graphlab.loadtest.external import ServerProcess, find_hey, run_flood
from graphlab.serve.service import EXIT_WORKER_DOWN
from serve_fault_models import CUDA_ERROR, EXIT, POISON, row

pytest.importorskip("uvicorn")
REPO = Path(__file__).resolve().parents[1]
HEY = find_hey()


def _server(tmp_path, *flags, sleep_ms=20, model="serve_fault_models:faulty"):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")]),
           "SERVE_TEST_SLEEP_MS": str(sleep_ms), "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "graphlab.serve", "--model", model, "--device", "cpu", "--preprocess-threads", "1",
           *flags]
    return ServerProcess(cmd, tmp_path / "server.log", env=env, cwd=REPO, ready_timeout_s=120)


def _post(server, body, headers=None, timeout_s=30.0):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=timeout_s)
    try:
        conn.request("POST", "/v1/infer", json.dumps(body), {"Content-Type": "application/json", **(headers or {})})
        answer = conn.getresponse()
        return answer.status, answer.getheader("content-type"), json.loads(answer.read()), dict(answer.getheaders())
    finally:
        conn.close()


def _health(server):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request("GET", "/healthz")
        answer = conn.getresponse()
        return answer.status, json.loads(answer.read())
    finally:
        conn.close()


def _wait_exit(server, timeout_s=30.0):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end and server._proc.poll() is None:
        time.sleep(0.1)
    return server._proc.poll()


def test_over_http_a_poisoned_request_gets_500_and_the_seven_others_of_its_batch_200(tmp_path):
    with _server(tmp_path, "--setting", "graphs+batching", "--max-wait-us", "2000000") as server:
        marks = [0.0] * 5 + [POISON] + [0.0] * 2
        with ThreadPoolExecutor(8) as pool:  # 8 at once: one batch of 8 (max batch size) within the 2 s window
            answers = list(pool.map(lambda m: _post(server, {"inputs": [row(m)]}), marks))
        stats = server.get_json("/v1/stats")
    statuses = [a[0] for a in answers]
    assert statuses == [200] * 5 + [500] + [200] * 2, statuses
    status, kind, body, _ = answers[5]
    assert kind == "application/json" and body["error"] == "inference_failed"
    assert "secret" not in body["detail"] and "markup" not in body["detail"]
    assert stats["counters"]["answered_ok"] == 7 and stats["counters"]["answered_error"] == 1
    assert "Traceback" not in (tmp_path / "server.log").read_text()


def test_over_http_a_model_that_exits_is_survived_once_then_the_service_goes_down_and_exits_non_zero(tmp_path):
    with _server(tmp_path, "--setting", "graphs+batching", "--max-wait-us", "0") as server:
        status, kind, body, _ = _post(server, {"inputs": [row(EXIT)]})  # before: no answer, ever
        assert (status, kind, body["error"]) == (500, "application/json", "inference_failed")
        assert _post(server, {"inputs": [row()]})[0] == 200 and _health(server)[0] == 200  # restarted
        assert _post(server, {"inputs": [row(EXIT)]})[0] == 500  # a second death within 60 s
        code = _wait_exit(server)  # it stops by itself: a supervisor sees it and starts another
        log = (tmp_path / "server.log").read_text()
    assert code == EXIT_WORKER_DOWN, log
    assert log.count("the GPU worker died") == 1 and log.count("the service is down") == 1, log
    assert "Traceback" not in log


def test_over_http_a_cuda_error_gets_500_healthz_503_and_the_process_exits_non_zero(tmp_path):
    flags = ("--setting", "eager", "--shutdown-timeout-ms", "5000", "--drain-linger-ms", "2000")
    with _server(tmp_path, *flags) as server:
        watcher = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)  # kept alive: it sees the drain
        watcher.request("GET", "/healthz")
        before = watcher.getresponse()
        before.read()
        status, _, body, _ = _post(server, {"inputs": [row(CUDA_ERROR)]})
        watcher.request("GET", "/healthz")  # the service is down: it no longer says ready
        after = watcher.getresponse()
        after_body = json.loads(after.read())
        watcher.close()
        code = _wait_exit(server)
    assert before.status == 200 and (status, body["error"]) == (500, "inference_failed")
    assert after.status == 503 and after_body["state"] in ("failed", "closing"), after_body
    assert code == EXIT_WORKER_DOWN


def test_over_http_a_deadline_header_gets_504_at_it_and_a_bad_one_422(tmp_path):
    with _server(tmp_path, "--setting", "eager", "--request-timeout-ms", "5000", sleep_ms=1500) as server:
        with ThreadPoolExecutor(2) as pool:
            busy = pool.submit(_post, server, {"inputs": [row()]})  # holds the worker 1.5 s
            time.sleep(0.3)
            t0 = time.monotonic()
            status, kind, body, _ = _post(server, {"inputs": [row()]}, {"X-Request-Timeout-Ms": "200"})
            waited_s = time.monotonic() - t0
            assert busy.result()[0] == 200
        assert (status, kind, body["error"]) == (504, "application/json", "request_timeout") and waited_s < 1.2
        assert "deadline of 200 ms" in body["detail"]
        for bad in ("soon", "-1", "0"):
            status, _, body, _ = _post(server, {"inputs": [row()]}, {"X-Request-Timeout-Ms": bad})
            assert (status, body["error"]) == (422, "malformed_request"), bad
        # the busy model's batch times make a 100 ms deadline hopeless behind a queue: refused at once, Retry-After
        with ThreadPoolExecutor(3) as pool:
            ahead = [pool.submit(_post, server, {"inputs": [row()]}) for _ in range(2)]
            time.sleep(0.3)
            status, _, body, headers = _post(server, {"inputs": [row()]}, {"X-Request-Timeout-Ms": "100"})
            assert [f.result()[0] for f in ahead] == [200, 200]
        assert (status, body["error"]) == (503, "overloaded") and "past its deadline of 100 ms" in body["detail"]
        assert headers.get("retry-after") == "1"


@pytest.mark.skipif(HEY is None, reason="needs hey (apt-get install hey; scripts/setup.sh does it)")
@pytest.mark.parametrize("setting", ["eager", "graphs+batching"])
def test_a_flood_of_1000_clients_loses_nothing_and_no_answer_outlives_its_deadline(tmp_path, setting):
    deadline_ms = 2000
    body_file = tmp_path / "body.json"
    body_file.write_text(json.dumps({"vectors": [[0.25] * 256]}))
    with _server(tmp_path, "--setting", setting, "--request-timeout-ms", str(deadline_ms), model="mlp") as server:
        flood = run_flood(HEY, server.url, body_file, concurrency=1000, duration_s=3.0)
        health = _health(server)
        counters = server.get_json("/v1/stats")["counters"]
    assert flood["lost"] == 0, flood
    by_status = flood["by_status"]
    assert set(by_status) <= {"200", "503", "504"} and by_status.get("200", {}).get("count", 0) > 0, by_status
    slowest_ms = max(s["max_ms"] for s in by_status.values())
    assert slowest_ms <= deadline_ms + 2000, by_status
    assert health[0] == 200 and counters["accepted"] >= by_status["200"]["count"]
