"""The HTTP face of the service: a Starlette (ASGI) app, served by uvicorn.

    POST /v1/infer    a request body (see graphlab.serve.payload) -> {"id", "results", "batch", "timing_us"}
    GET  /healthz     200 {"state": "ready"} when it takes traffic, else 503 (warming up, shutting down)
    GET  /v1/stats    counters, queue, the batch sizes formed, the runner

Every refusal is JSON, `{"error": <reason>, "detail": <one line>}`:
    422 malformed_request    not JSON, an unknown or missing field, a wrong type
    413 request_too_large    a body over max_body_bytes, too many rows, a prompt or image too long
    503 overloaded           the service is full (bounded queue), warming up or shutting down; Retry-After: 1
    500 inference_failed     the GPU worker or a stage failed on this request (the service keeps serving)
A client that disconnects mid-request changes nothing for the others: its request, once accepted,
runs to the end and the answer is counted as abandoned; one that leaves while still uploading is
counted as `client_gone_before_accept`.

Run it (one process per GPU; docs/serving.md):

    GRAPHLAB_SERVE_MODEL=gpt GRAPHLAB_SERVE_SETTING=graphs+batching \\
        uvicorn --factory graphlab.serve.app:app_from_env --host 127.0.0.1 --port 8000
    python -m graphlab.serve --model gpt --setting graphs+batching --port 8000      # the same

Starlette, not FastAPI: the service checks its own bodies (graphlab.serve.payload, with messages that
name the field), so pydantic would add a compiled dependency and a second set of rules for nothing.
Starlette and uvicorn are imported here only; the rest of graphlab.serve works without them.
"""
from __future__ import annotations

import json
import os
from typing import Any

from graphlab.errors import BadInputError, BadRequestError, RequestTooLargeError, ServeError, UnsupportedError
from graphlab.serve.config import ServeConfig
from graphlab.serve.service import InferenceService

ENV_PREFIX = "GRAPHLAB_SERVE_"


def create_app(service: InferenceService | ServeConfig) -> Any:
    """A Starlette app around `service` (or a new service for a config); starts and closes it with the app.

    An in-process client (httpx.ASGITransport) sends no lifespan events: start the service yourself first.
    """
    try:
        from starlette.applications import Starlette
        from starlette.requests import ClientDisconnect, Request
        from starlette.responses import JSONResponse, Response
        from starlette.routing import Route
    except ImportError:
        raise UnsupportedError("the HTTP app needs starlette: pip install 'graphlab[serve]' "
                               "(the in-process service, InferenceService, works without it)") from None
    import contextlib

    import anyio

    svc = service if isinstance(service, InferenceService) else InferenceService(service)
    limit = svc.config.max_body_bytes

    def refuse(exc: ServeError) -> Any:
        headers = {"Retry-After": "1"} if exc.status == 503 else None
        return JSONResponse({"error": exc.reason, "detail": " ".join(str(exc).split())}, status_code=exc.status,
                            headers=headers)

    async def read_body(request: Request) -> bytes:
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            svc.count("refused_too_large")
            raise RequestTooLargeError(f"the body is {int(declared)} bytes; this service reads at most {limit}")
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                svc.count("refused_too_large")
                raise RequestTooLargeError(f"the body is over {limit} bytes; this service reads at most {limit}")
            chunks.append(chunk)
        return b"".join(chunks)

    async def infer(request: Request) -> Any:
        try:
            raw = await read_body(request)
            try:
                body = json.loads(raw)
            except (ValueError, UnicodeDecodeError, RecursionError) as exc:
                svc.count("refused_malformed")
                if isinstance(exc, json.JSONDecodeError):
                    msg = f"{exc.msg} (line {exc.lineno}, column {exc.colno})"
                elif isinstance(exc, RecursionError):
                    msg = "nested too deeply"
                else:
                    msg = str(exc)
                raise BadRequestError(f"the body is not JSON: {msg}") from None
            answer = await svc.infer(body, disconnected=request.is_disconnected)
        except ClientDisconnect:
            svc.count("client_gone_before_accept")
            return Response(status_code=400)  # goes nowhere: the client left while uploading
        except ServeError as exc:
            return refuse(exc)
        except Exception as exc:  # noqa: BLE001 - one clear line, and the service keeps serving
            return refuse(ServeError(f"unexpected error: {type(exc).__name__}: {exc}"))
        return JSONResponse(answer)

    async def healthz(request: Request) -> Any:
        state = "failed" if svc.state == "ready" and not svc.worker_alive else svc.state.value
        return JSONResponse({"state": state, "setting": svc.config.setting, "model": svc.config.model},
                            status_code=200 if state == "ready" else 503)

    async def stats(request: Request) -> Any:
        return JSONResponse(svc.stats())

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> Any:
        if svc.state == "new":
            await anyio.to_thread.run_sync(svc.start)
        try:
            yield
        finally:
            await anyio.to_thread.run_sync(svc.close)

    app = Starlette(routes=[Route("/v1/infer", infer, methods=["POST"]), Route("/healthz", healthz),
                            Route("/v1/stats", stats)], lifespan=lifespan)
    app.state.service = svc
    return app


def config_from_env(environ: dict[str, str] | None = None) -> ServeConfig:
    """A ServeConfig from GRAPHLAB_SERVE_<FIELD> variables (e.g. GRAPHLAB_SERVE_MAX_WAIT_US=500)."""
    env = os.environ if environ is None else environ
    fields = ServeConfig.__dataclass_fields__
    kwargs: dict[str, Any] = {}
    for name, spec in fields.items():
        value = env.get(ENV_PREFIX + name.upper())
        if value is None:
            continue
        if name == "buckets":
            kwargs[name] = [int(v) for v in value.split(",")] if "," in value or value.isdigit() else value
        elif spec.type in ("int", int):
            try:
                kwargs[name] = int(value)
            except ValueError:
                raise BadInputError(f"{ENV_PREFIX}{name.upper()} must be an integer, got {value!r}") from None
        else:
            kwargs[name] = value
    return ServeConfig(**kwargs)


def app_from_env() -> Any:
    """`uvicorn --factory graphlab.serve.app:app_from_env`: the app for the config in the environment."""
    return create_app(config_from_env())


__all__ = ["ENV_PREFIX", "app_from_env", "config_from_env", "create_app"]
