"""The Ray deployment's two ASGI layers, without Ray: the replica's name on every answer, and Ray's own plain-text
refusals (and a request whose replica died) turned into graphlab's JSON by the proxy middleware."""
from __future__ import annotations

import asyncio
import json

from graphlab.serve.ray_deployment import _NameReplica
from graphlab.serve.ray_proxy import REPLICA_HEADER, JSONErrors


def _app(status, body, content_type=b"text/plain; charset=utf-8", extra=()):
    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", content_type), *extra]})
        await send({"type": "http.response.body", "body": body})
    return app


def _call(app):
    sent = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    asyncio.run(app({"type": "http", "path": "/v1/infer", "method": "POST", "headers": []}, receive, send))
    start = sent[0]
    return start["status"], dict(start["headers"]), b"".join(m.get("body", b"") for m in sent[1:])


def test_rays_plain_text_refusals_become_graphlab_json():
    for status, reason in ((503, "overloaded"), (500, "replica_failed"), (408, "request_timeout")):
        code, headers, body = _call(JSONErrors(_app(status, b"Request  dropped\n by Ray.", extra=[(b"retry-after", b"1")])))
        assert code == status and headers[b"content-type"] == b"application/json"
        assert json.loads(body) == {"error": reason, "detail": "Request dropped by Ray."}
        assert headers[b"retry-after"] == b"1" and int(headers[b"content-length"]) == len(body)


def test_the_replicas_own_answers_pass_unchanged():
    own = _app(503, b'{"error":"overloaded","detail":"full"}', b"application/json")
    assert _call(JSONErrors(own))[2] == b'{"error":"overloaded","detail":"full"}'
    named = _NameReplica(_app(500, b"text from the app"), "r1")
    code, headers, body = _call(JSONErrors(named))
    assert (code, body, headers[REPLICA_HEADER.encode()]) == (500, b"text from the app", b"r1")
    assert _call(JSONErrors(_app(200, b"ok")))[2] == b"ok"


def test_a_request_whose_replica_died_is_answered_with_json_500():
    async def dies(scope, receive, send):
        raise RuntimeError("ActorDiedError")

    code, headers, body = _call(JSONErrors(dies))
    assert code == 500 and json.loads(body)["error"] == "replica_failed"


def test_a_request_the_proxy_left_unanswered_is_answered_with_json_500():
    async def silent(scope, receive, send):  # what Ray's proxy does when the replica died under the request
        return None

    code, headers, body = _call(JSONErrors(silent))
    assert code == 500 and json.loads(body)["error"] == "replica_failed"
    assert "no answer from the replica" in json.loads(body)["detail"]
