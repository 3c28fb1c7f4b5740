"""The HTTP face of the service: an ASGI app (Starlette for the small routes), served by uvicorn.

    POST /v1/infer    a request body (see graphlab.serve.payload) -> {"id", "results" | "outputs", "batch", "timing_us"}
    GET  /healthz     200 {"state": "ready"} when it takes traffic, else 503 (warming up, shutting down)
    GET  /v1/stats    counters, queue, the batch sizes formed, the runner
    GET  /metrics     the same in the Prometheus text format (graphlab.serve.metrics)
    /v2/...           the Open Inference Protocol (KServe v2; graphlab.serve.oip): health, server and model
                      metadata, readiness, POST /v2/models/{name}/infer with JSON or binary tensors; refusals
                      are the protocol's `{"error": "<message>"}`, 400 for a request that is wrong

Every answer is JSON, `{"error": <reason>, "detail": <one line>}` when refused, whatever went wrong:
    415 unsupported_media_type  a Content-Type that is not JSON (a web page's form or text/plain post)
    422 malformed_request       not JSON, an unknown or missing field, a wrong type, NaN, Infinity, a number
                                the model's dtype cannot hold (named: "inputs[0][3] is 1e+300 ...")
    413 request_too_large       a body over the model's largest valid request as JSON with margin (at most
                                max_body_bytes), too many rows, a prompt or image too long
    504 request_timeout         no answer within the request's deadline (request_timeout_ms, or less with the
                                X-Request-Timeout-Ms header); 503 at once if its expected wait is longer
    408 request_timeout         the body did not arrive within body_timeout_ms (the connection is closed)
    404 / 405                   no such path, or the wrong method
    503 overloaded              admission: max_pending HTTP requests already inside, the service full, warming
                                up or shutting down; Retry-After: 1, at once, before the body is read or parsed
    500 inference_failed        the GPU worker, a stage, or the JSON of an answer failed on this request: the
                                detail names the request and the stage, never the exception's text (logged,
                                once, under the same request name)
A failure inside a request never escapes the app, so uvicorn never answers text/plain and never resets the
keep-alive connection. A client that disconnects mid-request changes nothing for the others: its request,
once accepted, runs to the end and the answer is counted as abandoned; one that leaves while still
uploading is counted as `client_gone_before_accept`.

`POST /v1/infer` is answered by the app's own ASGI code (no Starlette Request/Response objects, no
routing): it is the hot path, and each layer costs event-loop time that every request waits for.

Run it (one process per GPU; docs/serving.md) with `python -m graphlab.serve` (graphlab.serve.http: the
timeouts and the bounded SIGTERM drain), or as a plain ASGI app:

    GRAPHLAB_SERVE_MODEL=gpt uvicorn --factory graphlab.serve.app:app_from_env --host 127.0.0.1 --port 8000

Starlette, not FastAPI: the service checks its own bodies (graphlab.serve.payload), so pydantic would add
a compiled dependency and a second set of rules for nothing. Starlette is imported here only.
"""
from __future__ import annotations

import asyncio
import itertools
import json
import logging
import time
from typing import Any

from graphlab._version import __version__
from graphlab.clock import timestamp_ns
from graphlab.errors import (BadRequestError, BodyTimeoutError, OverloadedError, RequestTooLargeError,
                             InferenceFailedError, ServeError, UnsupportedError,
                             UnsupportedMediaTypeError)
from graphlab.serve import oip
from graphlab.serve.config import INFER_PATH, REQUEST_TIMEOUT_HEADER, ServeConfig
from graphlab.serve.metrics import HttpMetrics
from graphlab.serve.payload import ParsedRequest, largest_body_bytes
from graphlab.serve.service import InferenceService

_HAS_TIMEOUT = hasattr(asyncio, "timeout")
_TIMEOUT_HEADER = REQUEST_TIMEOUT_HEADER.lower().encode()
_OIP_HEADER_LENGTH = oip.HEADER_LENGTH.lower().encode()
log = logging.getLogger("graphlab.serve")


def _dumps(value: Any) -> bytes:
    return json.dumps(value, allow_nan=False, separators=(",", ":")).encode()


def error_body(exc: ServeError) -> bytes:
    return _dumps({"error": exc.reason, "detail": " ".join(str(exc).split())})


def failure_body(exc: ServeError, ref: str) -> bytes:
    """A 500's JSON: the request (`ref`) and where it failed (`exc.stage`), never the exception's message (it may
    hold the model's text, paths, markup); the server's log has the message under the same `ref`."""
    return _dumps({"error": exc.reason, "detail": failure_detail(exc, ref)})


def failure_detail(exc: ServeError, ref: str) -> str:
    """A 500's one line: the request and the stage it failed in (`failure_body`)."""
    where = exc.stage or "inference"
    return f"request {ref} failed in {where}; the server's log has the detail under {ref}"


def decode_body(raw: bytes) -> Any:
    """A request body's JSON; BadRequestError (422) saying where it is not JSON."""
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        if isinstance(exc, json.JSONDecodeError):
            msg = f"{exc.msg} (line {exc.lineno}, column {exc.colno})"
        elif isinstance(exc, RecursionError):
            msg = "nested too deeply"
        else:
            msg = str(exc)
        raise BadRequestError(f"the body is not JSON: {msg}") from None


def body_limit(service: InferenceService) -> int:
    """The most body bytes the app reads for `service`: its model's largest valid request as JSON, with margin
    (`largest_body_bytes`), within the `max_body_bytes` ceiling (an image model, or a model that cannot say how
    many numbers a request holds: the ceiling)."""
    ceiling = service.config.max_body_bytes
    model = service.model
    if getattr(model, "kind", "tensor") == "image":
        return ceiling
    largest = ParsedRequest(getattr(model, "kind", "tensor"), (), 0, count=service.config.max_request_rows)
    try:
        numbers = int(model.prepare_size(largest))
    except Exception:  # noqa: BLE001 - a model of one's own with its own prepare_size: keep the ceiling
        return ceiling
    return min(ceiling, largest_body_bytes(numbers))


def is_json_type(value: bytes | None) -> bool:
    """application/json or application/<x>+json, parameters (charset) allowed."""
    if not value:
        return False
    media = value.split(b";", 1)[0].strip().lower()
    return media == b"application/json" or (media.startswith(b"application/") and media.endswith(b"+json"))


class GuardedApp:
    """The outermost ASGI app: admission, draining, the infer hot path, metrics; never lets an error out.

    Attributes:
        draining: set by the server on SIGTERM: every request from then on gets 503 and `Connection: close`.
    """

    def __init__(self, inner: Any, service: InferenceService, metrics: HttpMetrics):
        self.inner = inner
        self.service = service
        self.metrics = metrics
        self.limit = service.config.max_pending
        self.max_body = body_limit(service)
        self.inline_body = service.config.inline_body_bytes
        self.body_timeout_s = service.config.body_timeout_ms / 1000.0
        self.draining = False
        self.state = getattr(inner, "state", None)
        self._failures = itertools.count(1)
        self._cutting = False
        self.cut_short = 0
        self.close_by_s: float | None = None

    def cut_short_by_shutdown(self) -> None:
        """The drain ran out of time: the requests the server now cancels are answered 503 (counted in
        `cut_short`), not left to a closed socket or a CancelledError traceback."""
        self._cutting = True

    def failed(self, exc: BaseException, stage: str, *, protocol: bool = False) -> bytes:
        """Log a 500 once, with its message (and the traceback of an unexpected error); its JSON for the client
        (`protocol`: the Open Inference Protocol's error body)."""
        error = exc if isinstance(exc, ServeError) else InferenceFailedError("unexpected error")
        if isinstance(exc, ServeError) and exc.request_id is not None:
            ref = f"#{exc.request_id}"
        else:
            ref = f"http-{next(self._failures)}"
        if not error.stage:
            error.stage = stage
        message = " ".join(str(exc).split())
        log.error("graphlab.serve: request %s failed in %s: %s: %s", ref, error.stage, type(exc).__name__, message,
                  exc_info=exc if not isinstance(exc, ServeError) else None)
        return oip.error_body(failure_detail(error, ref)) if protocol else failure_body(error, ref)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        start_ns = timestamp_ns()
        path = scope.get("path", "")
        status = {"code": 0}
        v2 = oip.route(path) if path.startswith(oip.PREFIX) else None
        infers = path == INFER_PATH or (v2 is not None and v2.what == "infer")

        async def counted_send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        metrics = self.metrics
        metrics.in_flight += 1
        try:
            if self.draining or (metrics.in_flight > self.limit and infers):
                self.service.count("refused_draining" if self.draining else "refused_admission")
                what = "shutting down" if self.draining else f"full ({self.limit} requests inside)"
                refusal = OverloadedError(f"the service is {what}: retry later or on another replica")
                await _answer(counted_send, 503, oip.error_body(str(refusal)) if v2 else error_body(refusal),
                              close=True, retry=True)  # closed: see _infer
            elif path == INFER_PATH and scope.get("method") == "POST":
                await self._infer(scope, receive, counted_send)
            elif v2 is not None:
                await self._v2(v2, scope, receive, counted_send)
            else:
                await self.inner(scope, receive, counted_send)
        except asyncio.CancelledError:
            if not self._cutting:
                raise
            self.cut_short += 1  # the server's shutdown ran out of time: an answer, not a closed socket
            self.service.count("cut_short_by_shutdown")
            if status["code"] == 0:
                await _answer(counted_send, 503, error_body(OverloadedError(
                    "the service is shutting down and could not finish this request within its shutdown timeout: "
                    "retry on another replica")), close=True, retry=True)
        except Exception as exc:  # noqa: BLE001 - the connection stays usable: a JSON 500, never text/plain
            self.service.count("app_errors")
            body = self.failed(exc, "the HTTP app", protocol=v2 is not None)
            if status["code"] == 0:
                await _answer(counted_send, 500, body)
        finally:
            metrics.in_flight -= 1
            metrics.observe(v2.label if v2 is not None else path, status["code"], timestamp_ns() - start_ns)

    # -- the Open Inference Protocol (graphlab.serve.oip) --------------------------------------------------------
    async def _v2(self, route: oip.Route, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """A /v2 route: health, metadata and readiness answered here; infer through the same pipeline as /v1/infer."""
        svc = self.service
        method = scope.get("method")
        want = "POST" if route.what == "infer" else "GET"
        if method != want and not (want == "GET" and method == "HEAD"):
            await _answer(send, 405, oip.error_body(f"{method} is not allowed on {scope.get('path')}: {want} it"),
                          close=route.what == "infer", headers=((b"allow", want.encode()),))
            return
        if route.model and (route.model != svc.model.name or route.version not in ("", "1")):
            shown = route.model + (f" version {route.version}" if route.version else "")
            await _answer(send, 404, oip.error_body(f"no model {shown!r}: this server serves {svc.model.name!r} "
                                                    "(version 1)"), close=route.what == "infer")
            return
        ready = svc.state == "ready" and svc.worker_alive and not self.draining
        if route.what == "infer":
            await self._oip_infer(scope, receive, send)
        elif route.what == "live":
            await _answer(send, 200, _dumps({"live": True}))
        elif route.what in ("ready", "model_ready"):
            await _answer(send, 200 if ready else 503, _dumps({"ready": ready}))
        elif route.what == "server":
            await _answer(send, 200, _dumps({"name": "graphlab", "version": __version__,
                                             "extensions": list(oip.EXTENSIONS)}))
        else:
            model = svc.model
            await _answer(send, 200, _dumps({"name": model.name, "versions": ["1"], "platform": "pytorch_graphlab",
                                             "inputs": model.oip_inputs(), "outputs": model.oip_outputs()}))

    async def _oip_infer(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """POST /v2/models/{name}/infer: the body's guards as /v1/infer's (its size, its deadline, decoded off the
        loop when large), then the same service; the refusals a client caused are 400, by the protocol."""
        svc = self.service
        length = head_length = timeout = encoding = None
        for name, value in scope["headers"]:
            if name == b"content-length":
                length = value
            elif name == _OIP_HEADER_LENGTH:
                head_length = value
            elif name == _TIMEOUT_HEADER:
                timeout = value
            elif name == b"content-encoding":
                encoding = value
        read = False
        try:
            _check_timeout_header(timeout)
            self._check_declared_length(length)
            raw = await self._read_body(receive)
            read = True
            if raw is None:
                svc.count("client_gone_before_accept")
                return
            try:
                if encoding is not None and encoding.strip().lower() not in (b"", b"identity"):
                    raise BadRequestError(f"Content-Encoding {encoding.decode('latin-1')[:20]} is not supported: "
                                          "send the body uncompressed")
                head, tail = oip.split_body(raw, head_length)
                obj = await self._decode(head)
                request = oip.parse_request(obj, tail)
                if request.model_name not in (None, svc.model.name) or request.model_version not in (None, "", "1"):
                    said = f"{request.model_name or svc.model.name!r} version {request.model_version or '1'}"
                    raise BadRequestError(f"the body names model {said}; this path and server serve "
                                          f"{svc.model.name!r} version 1")
            except BadRequestError:
                svc.count("refused_malformed")
                raise
            answer = await svc.infer(request, disconnected=lambda: _peek_disconnect(receive),
                                     timeout_ms=_timeout_ms(timeout), off_loop=len(raw) > self.inline_body)
            try:
                payload, binary_from = oip.response_body(svc.model.name, request.id, answer["oip_outputs"])
            except (ValueError, TypeError) as exc:
                raise _not_encodable(exc, answer, "") from None
            if binary_from is None:
                await _answer(send, 200, payload)
            else:
                await _answer(send, 200, payload, content_type=b"application/octet-stream",
                              headers=((_OIP_HEADER_LENGTH, str(binary_from).encode()),))
        except BodyTimeoutError as exc:
            self._count_body_timeout()
            await _answer(send, exc.status, oip.error_body(str(exc)), close=True)
        except ServeError as exc:
            if exc.status == 503 and self.draining and exc.request_id is not None:
                self.cut_short += 1
            if exc.status == 500:
                await _answer(send, 500, self.failed(exc, "inference", protocol=True))
                return
            unread = exc.status == 413 and not read  # its body is not (all) read: the connection cannot go on
            status = 400 if exc.status in (413, 422) and not unread else exc.status
            await _answer(send, status, oip.error_body(str(exc)), close=unread or status == 503,
                          retry=status == 503)

    async def _infer(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        svc = self.service
        content_type = length = timeout = None
        for name, value in scope["headers"]:
            if name == b"content-type":
                content_type = value
            elif name == b"content-length":
                length = value
            elif name == _TIMEOUT_HEADER:
                timeout = value
        try:
            _check_timeout_header(timeout)
            if not is_json_type(content_type):
                svc.count("refused_media_type")
                shown = content_type.decode("latin-1") if content_type else "none"
                raise UnsupportedMediaTypeError(f"the body must be JSON (Content-Type: application/json), got "
                                                f"Content-Type {shown}")
            self._check_declared_length(length)
            raw = await self._read_body(receive)
            if raw is None:
                svc.count("client_gone_before_accept")
                return  # the client left while uploading: there is no one to answer
            try:
                body = await self._decode(raw)
            except BadRequestError:
                svc.count("refused_malformed")
                raise
            answer = await svc.infer(body, disconnected=lambda: _peek_disconnect(receive),
                                     timeout_ms=_timeout_ms(timeout), off_loop=len(raw) > self.inline_body)
            try:
                payload = _dumps(answer)
            except (ValueError, TypeError) as exc:
                raise _not_encodable(exc, answer, ": the model returned a value JSON cannot carry") from None
            await _answer(send, 200, payload)
        except BodyTimeoutError as exc:
            self._count_body_timeout()
            await _answer(send, exc.status, error_body(exc), close=True)
        except ServeError as exc:
            if exc.status == 503 and self.draining and exc.request_id is not None:
                self.cut_short += 1  # accepted, then refused by the closing service: not answered normally
            if exc.status == 500:
                await _answer(send, 500, self.failed(exc, "inference"))
                return
            # a 503 closes its connection: a client that retries at once must connect again and queue behind
            # the connections already waiting (kernel accept queue, first come first served), instead of taking
            # the event loop's next turn from them (a 512-client flood on 2 cores: max 2 s -> 0.23 s; docs/serving.md,
            # "A flood on the H200")
            # a 413's body is not (all) read: the connection cannot carry another request after it
            await _answer(send, exc.status, error_body(exc), close=exc.status in (413, 503), retry=exc.status == 503)

    def _check_declared_length(self, length: bytes | None) -> None:
        """Refuse (413, counted) a body whose Content-Length is over max_body_bytes, before a byte of it is read."""
        if length is not None and length.isdigit() and int(length) > self.max_body:
            self.service.count("refused_too_large")
            raise RequestTooLargeError(f"the body is {int(length)} bytes; this service reads at most "
                                       f"{self.max_body} (its largest valid request, with margin)")

    async def _decode(self, data: bytes) -> Any:
        """The JSON of `data`: on the loop when small, on a thread when over inline_body_bytes (on the loop it would
        stall every other connection)."""
        return decode_body(data) if len(data) <= self.inline_body else await asyncio.to_thread(decode_body, data)

    def _count_body_timeout(self) -> None:
        self.service.count("refused_body_timeout")
        self.metrics.timeouts["body"] += 1

    async def _read_body(self, receive: Any) -> bytes | None:
        """The whole body within body_timeout_ms (BodyTimeoutError), at most max_body_bytes (413); None if the
        client left."""
        chunks: list[bytes] = []
        size = [0]

        async def read() -> bytes | None:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return None
                chunk = message.get("body", b"")
                size[0] += len(chunk)
                if size[0] > self.max_body:
                    self.service.count("refused_too_large")
                    raise RequestTooLargeError(f"the body is over {self.max_body} bytes; this service reads "
                                               f"at most {self.max_body}")
                chunks.append(chunk)
                if not message.get("more_body", False):
                    return chunks[0] if len(chunks) == 1 else b"".join(chunks)

        try:
            if _HAS_TIMEOUT:  # Python 3.11+: a deadline on this task, no second task
                async with asyncio.timeout(self.body_timeout_s):
                    return await read()
            return await asyncio.wait_for(read(), self.body_timeout_s)
        except (TimeoutError, asyncio.TimeoutError):
            raise BodyTimeoutError(f"the body did not arrive within {self.body_timeout_s:g} s (got {size[0]} "
                                   "bytes): send it at once") from None


def _check_timeout_header(header: bytes | None) -> None:
    """Refuse an X-Request-Timeout-Ms that is not digits (the service checks the number: >= 1, at most its own)."""
    if header is not None and not header.isdigit():
        raise BadRequestError(f"{REQUEST_TIMEOUT_HEADER} must be a positive whole number of milliseconds, "
                              f"got {header.decode('latin-1')[:40]!r}")


def _not_encodable(exc: Exception, answer: dict[str, Any], why: str) -> InferenceFailedError:
    """The 500 of an answer that cannot be encoded as JSON (`why`: what to add after the exception)."""
    error = InferenceFailedError(f"the answer is not JSON ({exc}){why}")
    error.stage, error.request_id = "encoding the answer as JSON", answer.get("id")
    return error


def _timeout_ms(header: bytes | None) -> int | None:
    """The X-Request-Timeout-Ms header's digits as milliseconds (None: not sent); beyond 12 digits, more than any
    deadline (the service's own holds)."""
    if header is None:
        return None
    digits = header.lstrip(b"0") or b"0"
    return int(digits) if len(digits) <= 12 else 10**12


async def _answer(send: Any, status: int, payload: bytes, *, close: bool = False, retry: bool = False,
                  content_type: bytes = b"application/json", headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    headers = [(b"content-type", content_type), (b"content-length", str(len(payload)).encode()), *headers]
    if retry:
        headers.append((b"retry-after", b"1"))
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


async def _peek_disconnect(receive: Any) -> bool:
    """True if the client has gone, without waiting: one step of `receive()`, dropped if it would block.

    The body has been read, so the server's next message can only be http.disconnect; uvicorn returns it at
    once when the client has gone and otherwise waits on an event, which this step leaves.
    """
    step = receive()
    try:
        step.send(None)
    except StopIteration as done:
        return bool(done.value and done.value.get("type") == "http.disconnect")
    except Exception:  # noqa: BLE001 - a server whose receive is not a plain coroutine: assume still there
        return False
    step.close()
    return False


def create_app(service: InferenceService | ServeConfig) -> Any:
    """The ASGI app around `service` (or a new service for a config); starts and closes it with the app.

    An in-process client (httpx.ASGITransport) sends no lifespan events: start the service yourself first.
    `app.state.guard` is the outer layer (its `draining` flag is what the server sets on SIGTERM).
    """
    try:
        from starlette.applications import Starlette
        from starlette.exceptions import HTTPException
        from starlette.requests import Request
        from starlette.responses import JSONResponse, Response
        from starlette.routing import Route
    except ImportError:
        raise UnsupportedError("the HTTP app needs starlette: pip install 'graphlab[serve]' "
                               "(the in-process service, InferenceService, works without it)") from None
    import contextlib

    import anyio

    svc = service if isinstance(service, InferenceService) else InferenceService(service)

    async def healthz(request: Request) -> Any:
        state = "failed" if svc.state == "ready" and not svc.worker_alive else svc.state.value
        if guard.draining:
            state = "closing"
        return JSONResponse({"state": state, "setting": svc.config.setting, "model": svc.model.name},
                            status_code=200 if state == "ready" else 503)

    # on a thread: the runner's figures wait for its lock (a graph cache holds it for a whole eager call), and the
    # event loop must not wait with them (a scrape during a 3 s batch stalled every connection for 3 s)
    async def stats(request: Request) -> Any:
        return JSONResponse(await anyio.to_thread.run_sync(svc.stats))

    async def prometheus(request: Request) -> Any:
        text = await anyio.to_thread.run_sync(metrics.render, svc)
        return Response(text, media_type="text/plain; version=0.0.4; charset=utf-8")

    async def http_error(request: Request, exc: Any) -> Any:
        reason = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        detail = f"no route {request.url.path}" if exc.status_code == 404 else str(exc.detail)
        if exc.status_code == 405:
            detail = f"{request.method} is not allowed on {request.url.path}"
        return JSONResponse({"error": reason, "detail": detail}, status_code=exc.status_code,
                            headers=getattr(exc, "headers", None))

    async def infer_wrong_method(request: Request) -> Any:
        return JSONResponse({"error": "method_not_allowed", "detail": f"{request.method} is not allowed on "
                             f"{INFER_PATH}: POST a JSON body"}, status_code=405, headers={"Allow": "POST"})

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> Any:
        if svc.state == "new":
            await anyio.to_thread.run_sync(svc.start)
        try:
            yield
        finally:
            timeout_s = svc.config.shutdown_timeout_ms / 1000.0
            if guard.close_by_s is not None:  # the server's drain took part of it already
                timeout_s = max(0.0, guard.close_by_s - time.monotonic())
            await anyio.to_thread.run_sync(svc.close, timeout_s)

    routes = [Route(INFER_PATH, infer_wrong_method, methods=["GET", "PUT", "DELETE", "PATCH"]),
              Route("/healthz", healthz), Route("/v1/stats", stats), Route("/metrics", prometheus)]
    # each route by name, the /v2 routes by their pattern, the rest as "other"
    metrics = HttpMetrics(paths=(*(route.path for route in routes), *oip.ROUTES))
    inner = Starlette(routes=routes, lifespan=lifespan, exception_handlers={HTTPException: http_error})
    inner.router.redirect_slashes = False  # "/v1/infer/" is a 404, not a 307 to a Location built from the Host header
    guard = GuardedApp(inner, svc, metrics)
    inner.state.service = svc
    inner.state.guard = guard
    return guard


def app_from_env() -> Any:
    """`uvicorn --factory graphlab.serve.app:app_from_env`: the app for the config in the environment
    (`ServeConfig.from_env`: GRAPHLAB_SERVE_<FIELD> variables)."""
    return create_app(ServeConfig.from_env())


__all__ = ["GuardedApp", "INFER_PATH", "app_from_env", "body_limit", "create_app", "decode_body", "error_body",
           "failure_body", "failure_detail", "is_json_type"]
