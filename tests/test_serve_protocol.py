"""The HTTP protocol over real sockets, with both parsers uvicorn runs on (h11, and httptools where installed):
head limits answered 431 / 414 JSON while the head is still arriving, protocol errors answered 400 JSON, no
redirect built from the client's Host header.

Each case is a loss seen before this code existed (issue 42): a header streamed for seconds stalled every
connection (the parser's cost grows with the square of a header's length), a 1 MiB header and 10,000 headers
were accepted, nine kinds of bad HTTP got text/plain, and `/v1/infer/` a 307 to the client's own Host.
"""
from __future__ import annotations

import importlib
import importlib.util
import json
import select
import socket
import threading
import time

import pytest
import torch

pytest.importorskip("uvicorn")
pytest.importorskip("starlette")

from graphlab.serve.config import ServeConfig  # noqa: E402
from graphlab.serve.http import HeadMeter, make_server  # noqa: E402
from graphlab.serve.service import InferenceService  # noqa: E402

PARSERS = ["h11"] + (["httptools"] if importlib.util.find_spec("httptools") else [])
BODY = json.dumps({"inputs": [[0.5] * 8]}).encode()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ThreadServer:
    """`make_server` for the `slow` test model (tests/serve_test_models.py) in a thread, with one HTTP parser."""

    def __init__(self, http: str, served: object = None, **config: object):
        import serve_test_models

        served = served if served is not None else serve_test_models.slow()
        cfg = ServeConfig.for_model(served, device="cpu", setting="eager", port=_free_port(), **config)
        self.port, self.http = cfg.port, http
        self.service = InferenceService(cfg, model=served).start()
        self.server = make_server(self.service, stack={"loop": "asyncio", "http": http})
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 60
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise AssertionError("the server did not start")
            time.sleep(0.05)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)


@pytest.fixture(scope="module", params=PARSERS)
def server(request, monkeypatch_module):
    monkeypatch_module.setenv("SERVE_TEST_SLEEP_MS", "1")
    srv = ThreadServer(request.param)
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def _exchange(port: int, raw: bytes, timeout_s: float = 20.0) -> bytes:
    """Send `raw` (as much as the server reads before it answers), then read until the server closes."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.settimeout(timeout_s)
        try:
            sock.sendall(raw)
        except (BrokenPipeError, ConnectionResetError):
            pass
        return _read_until_closed(sock)


def _read_until_closed(sock: socket.socket) -> bytes:
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    return data


def _status_and_json(data: bytes) -> tuple[int, dict[str, str], dict]:
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:] if ": " in line)
    return int(lines[0].split()[1]), headers, json.loads(body)


def _post(path: str = "/v1/infer", extra: bytes = b"") -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(BODY)}\r\n"
            .encode() + extra + b"\r\n" + BODY)


# -- head limits ------------------------------------------------------------------------------------------
def test_a_header_streamed_without_end_is_cut_with_431_json_while_it_is_still_small(server):
    """The head never ends: the server must answer without its end (before, httptools read 1 MiB and more, at a
    cost growing with its square, and answered only once the head was complete)."""
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.settimeout(20)
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Long: ")
        sent, piece = 0, b"a" * 4096
        start = time.monotonic()
        try:
            while sent < 8 * 2**20 and time.monotonic() - start < 20:  # until the server answers
                if select.select([sock], [], [], 0)[0]:
                    break
                sock.sendall(piece)
                sent += len(piece)
                time.sleep(0.001)
        except (BrokenPipeError, ConnectionResetError):
            pass
        data = _read_until_closed(sock)
    status, headers, body = _status_and_json(data)
    assert (status, headers["content-type"], body["error"]) == (431, "application/json", "request_header_too_large")
    assert sent < 8 * 2**20 and "32768 bytes" in body["detail"]


def test_too_many_headers_get_431_and_a_long_url_414(server):
    many = b"".join(b"X-H%d: v\r\n" % i for i in range(101))
    status, _, body = _status_and_json(_exchange(server.port, _post(extra=many)))
    assert (status, body["error"]) == (431, "request_header_too_large") and "100 headers" in body["detail"]
    status, _, body = _status_and_json(_exchange(server.port, b"GET /healthz?q=" + b"a" * 9000 + b" HTTP/1.1\r\n"
                                                 b"Host: x\r\n\r\n"))
    assert (status, body["error"]) == (414, "uri_too_long")
    metrics = _exchange(server.port, b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").decode()
    assert 'graphlab_http_refused_total{reason="request_header_too_large"}' in metrics
    assert 'graphlab_http_refused_total{reason="uri_too_long"}' in metrics


def test_heads_within_the_limits_and_pipelined_requests_are_served(server):
    big = b"".join(b"X-H%d: %s\r\n" % (i, b"v" * 2000) for i in range(12))  # 24 KiB of headers: under 32 KiB
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.settimeout(20)
        sock.sendall(_post(extra=big) + _post(extra=big) + b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close"
                     b"\r\n\r\n")
        data = _read_until_closed(sock)
    assert data.count(b"HTTP/1.1 200") == 3, data[:300]


def test_the_meter_follows_content_length_bodies_to_the_next_head():
    meter = HeadMeter(max_head_bytes=200, max_headers=4, max_url_bytes=32)
    body = b"x" * 500  # a body may be larger than any head
    request = b"POST / HTTP/1.1\r\nContent-Length: 500\r\n\r\n" + body
    assert meter.feed(request * 3) is None and meter.state == "head"
    assert meter.feed(b"GET / HTTP/1.1\r\n" + b"X: y\r\n" * 5)[0] == 431


# -- every answer JSON ------------------------------------------------------------------------------------
BAD_HTTP = {
    "unknown method": b"FOO /v1/infer HTTP/1.1\r\nHost: x\r\n\r\n",
    "bad Content-Length": b"POST /v1/infer HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
    "duplicate Content-Length": b"POST /v1/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n"
                                b"\r\n{}",
    "Content-Length and Transfer-Encoding": b"POST /v1/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                                            b"\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n"
                                            b"0\r\n\r\n",
    "bad chunk size": b"POST /v1/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: "
                      b"chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
    "control byte in a header": b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\x01b\r\n\r\n",
    "TLS bytes": bytes.fromhex("16030100c4010000c00303") + b"\x00" * 40,
    "no HTTP version": b"GET /healthz\r\n\r\n",
    "space in the header name": b"GET /healthz HTTP/1.1\r\nHost: x\r\nX A: b\r\n\r\n",
}


#: what only one parser accepts (h11 takes any token as a method, a CL beside chunked, \x01 in a value; httptools
#: reads a line without a version as HTTP/0.9): then the app answers, in JSON too
LENIENT = {("h11", "unknown method"), ("h11", "Content-Length and Transfer-Encoding"),
           ("h11", "control byte in a header"), ("httptools", "no HTTP version")}


@pytest.mark.parametrize("what", list(BAD_HTTP))
def test_bad_http_is_answered_with_a_400_json(server, what):
    data = _exchange(server.port, BAD_HTTP[what])
    status, headers, body = _status_and_json(data)
    assert headers["content-type"] == "application/json", data
    if (server.http, what) not in LENIENT:
        assert (status, body["error"]) == (400, "bad_http_request"), data


def test_a_trailing_slash_is_a_404_json_not_a_redirect_to_the_clients_host(server):
    data = _exchange(server.port, _post("/v1/infer/", b"Connection: close\r\n").replace(b"Host: x", b"Host: evil.test"))
    status, headers, body = _status_and_json(data)
    assert (status, body["error"]) == (404, "not_found") and "location" not in headers


# -- exception text stays on the server -------------------------------------------------------------------
SECRET = "<b>/home/me/secret_model.py</b> line 7: weights key 'abc' missing"


class Leaky(torch.nn.Module):
    """Raises an exception whose message holds a path and markup when a row starts with 666."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if bool((x[:, 0] == 666).any()):
            raise RuntimeError(SECRET)
        return self.linear(x)


def test_a_500_names_the_request_and_the_stage_never_the_exceptions_text(caplog):
    import graphlab as gl

    served = gl.ServedModel(Leaky(), torch.zeros(1, 8), buckets=[1, 2], name="leaky")
    srv = ThreadServer(PARSERS[-1], served)
    try:
        raw = json.dumps({"inputs": [[666] + [0] * 7]}).encode()
        with caplog.at_level("ERROR", logger="graphlab.serve"):
            data = _exchange(srv.port, b"POST /v1/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                             b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(raw), raw))
        status, headers, body = _status_and_json(data)
        assert (status, headers["content-type"], body["error"]) == (500, "application/json", "inference_failed")
        assert "secret" not in data.decode() and "<b>" not in data.decode() and "RuntimeError" not in data.decode()
        ref = body["detail"].split()[1]
        assert body["detail"].startswith("request ") and ref in body["detail"].split("under ")[-1]
        assert len([r for r in caplog.records if ref in r.getMessage()]) == 1  # the operator finds it, once
        status, _, body = _status_and_json(_exchange(srv.port, _post(extra=b"Connection: close\r\n")))
        assert status == 200  # and the service goes on
    finally:
        srv.stop()


def test_the_apps_catch_all_logs_the_exception_once_and_tells_the_client_only_where(server, caplog, monkeypatch):
    async def broken(body, *args, **kwargs):
        raise KeyError(SECRET)

    monkeypatch.setattr(server.service, "infer", broken)
    with caplog.at_level("ERROR", logger="graphlab.serve"):
        data = _exchange(server.port, _post(extra=b"Connection: close\r\n"))
    status, _, body = _status_and_json(data)
    assert (status, body["error"]) == (500, "inference_failed") and "the HTTP app" in body["detail"]
    assert "secret" not in data.decode() and "KeyError" not in data.decode()
    logged = [r for r in caplog.records if SECRET in r.getMessage()]
    assert len(logged) == 1 and logged[0].exc_info is not None  # once, with its traceback: a bug to fix


# -- bodies: each model's own limit, large ones decoded off the event loop -------------------------------
def test_a_body_over_the_models_largest_valid_request_is_413(server):
    padded = json.dumps({"inputs": [[0.5] * 8]}).encode() + b" " * 20_000  # valid JSON; `slow` takes 8 rows of 8
    data = _exchange(server.port, b"POST /v1/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n%s" % (len(padded), padded))
    status, _, body = _status_and_json(data)
    assert (status, body["error"]) == (413, "request_too_large") and "reads at most 8192" in body["detail"]


def test_a_body_over_64_kib_is_decoded_off_the_event_loop(monkeypatch):
    import graphlab as gl
    app_module = importlib.import_module("graphlab.serve.app")

    threads: list[tuple[int, str]] = []
    decode = app_module.decode_body

    def watched(raw):
        threads.append((len(raw), threading.current_thread().name))
        return decode(raw)

    monkeypatch.setattr(app_module, "decode_body", watched)
    served = gl.ServedModel(torch.nn.Linear(4096, 3), torch.zeros(1, 4096), buckets=[1, 2, 4], name="wide")
    srv = ThreadServer(PARSERS[-1], served)
    try:
        for rows in (1, 4):  # about 20 KB, then 80 KB
            raw = json.dumps({"inputs": [[0.5] * 4096] * rows}).encode()
            data = _exchange(srv.port, b"POST /v1/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                             b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(raw), raw))
            assert _status_and_json(data)[0] == 200
        loop_thread = srv.thread.name
        (small, small_thread), (large, large_thread) = threads
        assert small < 64 * 2**10 < large
        assert small_thread == loop_thread and large_thread != loop_thread
    finally:
        srv.stop()
