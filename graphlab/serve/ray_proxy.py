"""Ray's own refusals in graphlab's JSON: the ASGI middleware Ray Serve's HTTP proxies load.

A replica that died under a request (500), a full proxy queue (503) or a request past Ray's `request_timeout_s`
(408) is answered by Ray itself, as plain text. `proxy_middlewares` rewrites those into graphlab's
`{"error", "detail"}`, when the proxies start with

    RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH=graphlab.serve.ray_proxy:proxy_middlewares

Every proxy imports this module when it starts, so it stays light: no torch, no Ray, no graphlab service (it was
in ray_deployment, which imports torch: a proxy on a loaded 2-core machine then missed Serve's readiness
deadline). Pure: json and starlette's Middleware only.
"""
from __future__ import annotations

import json
from typing import Any

#: the response header that names the replica that answered (set by each replica; graphlab's own answers)
REPLICA_HEADER = "x-graphlab-replica"
#: Ray's plain-text refusals, and the graphlab reason each becomes in JSON
RAY_REASONS = {408: "request_timeout", 500: "replica_failed", 503: "overloaded", 504: "request_timeout"}


class JSONErrors:
    """ASGI middleware for Ray's proxy: a plain-text 408/500/503/504 from Ray becomes
    `{"error": <reason>, "detail": <Ray's message>}` as application/json; graphlab's own answers pass as they are."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        held: dict[str, Any] = {"started": False}

        async def rewrite(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                held["started"] = True
            if message["type"] == "http.response.start" and _is_ray_text_error(message):
                held["start"], held["body"] = message, b""
                return
            if message["type"] == "http.response.body" and "start" in held:
                held["body"] += message.get("body", b"")
                if message.get("more_body", False):
                    return
                start = held.pop("start")
                detail = " ".join(held.pop("body").decode("utf-8", "replace").split()) or "Ray Serve refused it"
                status = start["status"]
                body = json.dumps({"error": RAY_REASONS[status], "detail": detail[:500]}).encode()
                headers = [(k, v) for k, v in start.get("headers", [])
                           if k.lower() not in (b"content-type", b"content-length")]
                headers += [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
                await send({"type": "http.response.start", "status": status, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                return
            await send(message)

        try:
            await self.app(scope, receive, rewrite)
        except Exception as exc:  # noqa: BLE001 - Ray's proxy can raise when the replica died under the request
            if held["started"]:
                raise
            await _replica_failed(send, type(exc).__name__)
            return
        if not held["started"]:  # Ray's proxy returns without an answer when the replica died (uvicorn: text 500)
            await _replica_failed(send, "no answer from the replica")


async def _replica_failed(send: Any, what: str) -> None:
    body = json.dumps({"error": RAY_REASONS[500], "detail": f"the replica serving this request failed ({what}); "
                       "Ray replaces it: retry"}).encode()
    await send({"type": "http.response.start", "status": 500,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def _is_ray_text_error(start: dict[str, Any]) -> bool:
    if start.get("status") not in RAY_REASONS:
        return False
    headers = {k.lower(): v for k, v in start.get("headers", [])}
    return REPLICA_HEADER.encode() not in headers and not headers.get(b"content-type", b"").startswith(
        b"application/json")


def proxy_middlewares() -> list[Any]:
    """`RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH=graphlab.serve.ray_proxy:proxy_middlewares`: Ray's proxies
    answer in graphlab's JSON too."""
    from starlette.middleware import Middleware

    return [Middleware(JSONErrors)]


__all__ = ["JSONErrors", "RAY_REASONS", "REPLICA_HEADER", "proxy_middlewares"]
