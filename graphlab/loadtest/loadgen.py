"""An open-loop load generator: Poisson arrivals at a fixed rate, request sizes from a distribution, fixed seeds.

Open loop means a request is sent when its arrival time comes, whether or not earlier ones have been
answered, the way independent users arrive. (A closed loop, N clients each waiting for its answer,
slows down with the server and so never shows it overloaded.) Latency is measured from the
*scheduled* arrival, so any lag of the generator itself counts against the result, never for it;
the lag is reported too (`lag_us`).

Arrivals are timed by a clock thread (time.sleep wakes within tens of µs on Linux) that hands each
due request to the event loop; the loop's own timers round to milliseconds, too coarse for requests
that take a few hundred µs.

Transports (`send(body) -> (status, json)`):
- `DirectTransport(service)`: calls `InferenceService.infer` in this process: the pipeline alone.
- `ASGITransport(app)`: the Starlette app in this process through httpx.ASGITransport: the same HTTP
  app and JSON, no sockets.
- `HTTPTransport(url)`: real sockets to a uvicorn server (another process): keep-alive connections written by
  hand and parsed by httptools where installed (a fraction of httpx's cost per request), else httpx. It speaks
  graphlab's JSON or the Open Inference Protocol, JSON or binary tensors (`protocol=`; `graphlab.loadtest.protocols`).

    >>> from graphlab.loadtest.loadgen import LoadSpec, poisson_arrivals
    >>> import random
    >>> times = poisson_arrivals(1000.0, 1.0, random.Random(0))
    >>> 900 < len(times) < 1100, times == sorted(times)
    (True, True)

Pure Python plus httpx or httptools (only for the HTTP transports, imported there).
"""
from __future__ import annotations

import asyncio
import base64
import json
import random
import string
import threading
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from graphlab.clock import timestamp_ns
from graphlab.timing.schedulers import start_arrival_clock
from graphlab.cache.traces import poisson_arrivals  # one copy: request traces use it too
from graphlab.errors import BadInputError, ConfigurationError, ServeError
from graphlab.loadtest.protocols import HttpRequest, check_protocol, http_request

Send = Callable[[dict[str, Any]], Awaitable[tuple[int, dict[str, Any]]]]
#: rows per request -> weight: mostly single rows, a tail of larger requests (mean 2.0 rows)
DEFAULT_ROWS = ((1, 0.6), (2, 0.2), (4, 0.15), (8, 0.05))
BODIES_PER_SIZE = 16  # distinct bodies per request size, reused in seeded order (bounded memory)
MAX_REQUESTS = 200_000


@dataclass(frozen=True)
class LoadSpec:
    """One load-test point.

    Attributes:
        rate_rps: mean arrival rate (requests per second); gaps are exponential (Poisson arrivals).
        duration_s: how long arrivals go on (answers are then awaited up to `drain_timeout_s`).
        seed: seeds arrivals, sizes and contents: the same spec gives the same requests.
        rows: (rows, weight) pairs: the distribution of rows per request.
        text_bytes: (min, max) prompt length in bytes (= tokens), uniform (text models).
        image_sides: (min, max) image side in pixels, uniform per side (image models).
        top_k: asked of every request.
    """

    rate_rps: float
    duration_s: float = 2.0
    seed: int = 0
    rows: tuple[tuple[int, float], ...] = DEFAULT_ROWS
    text_bytes: tuple[int, int] = (8, 64)
    image_sides: tuple[int, int] = (64, 192)
    top_k: int = 5
    drain_timeout_s: float = 30.0

    def __post_init__(self) -> None:
        if not self.rate_rps > 0 or not self.duration_s > 0:
            raise BadInputError(f"rate_rps and duration_s must be positive, got {self.rate_rps} and {self.duration_s}")
        if self.rate_rps * self.duration_s > MAX_REQUESTS:
            raise BadInputError(f"{self.rate_rps:g} req/s for {self.duration_s:g} s is over {MAX_REQUESTS} requests: "
                                "shorten the run")
        if not self.rows or any(r < 1 or w < 0 for r, w in self.rows) or sum(w for _, w in self.rows) <= 0:
            raise BadInputError(f"rows must be (rows >= 1, weight >= 0) pairs with a positive total, got {self.rows}")

    @property
    def mean_rows(self) -> float:
        total = sum(w for _, w in self.rows)
        return sum(r * w for r, w in self.rows) / total


@dataclass
class ClientRecord:
    """What the client saw of one request (monotonic ns; `answer` holds the service's batch and timings)."""

    index: int
    rows: int
    scheduled_ns: int
    sent_ns: int = 0
    done_ns: int = 0
    status: int = 0
    reason: str = ""
    answer: dict[str, Any] = field(default_factory=dict)


def make_bodies(spec: LoadSpec, kind: str, count: int, rng: random.Random) -> list[dict[str, Any]]:
    """`count` request bodies for a model of `kind`, sizes drawn from `spec.rows` (deterministic for a seed)."""
    sizes = [r for r, _ in spec.rows]
    weights = [w for _, w in spec.rows]
    pools = {rows: [_body(kind, rows, spec, rng) for _ in range(BODIES_PER_SIZE)] for rows in sizes}
    picks = rng.choices(sizes, weights=weights, k=count)
    return [pools[rows][rng.randrange(BODIES_PER_SIZE)] for rows in picks]


def body_rows(body: dict[str, Any]) -> int:
    for key in ("texts", "images", "vectors"):
        if key in body:
            return len(body[key])
    return 1


def _body(kind: str, rows: int, spec: LoadSpec, rng: random.Random) -> dict[str, Any]:
    if kind == "text":
        letters = string.ascii_letters + string.digits + " .,"
        texts = ["".join(rng.choices(letters, k=rng.randint(*spec.text_bytes))) for _ in range(rows)]
        return {"texts": texts, "top_k": spec.top_k}
    if kind == "image":
        images = []
        for _ in range(rows):
            height, width = rng.randint(*spec.image_sides), rng.randint(*spec.image_sides)
            pixels = rng.randbytes(height * width * 3)
            images.append({"height": height, "width": width, "pixels_b64": base64.b64encode(pixels).decode("ascii")})
        return {"images": images, "top_k": spec.top_k}
    if kind == "vector":
        return {"vectors": [[round(rng.gauss(0, 1), 4) for _ in range(256)] for _ in range(rows)], "top_k": spec.top_k}
    raise BadInputError(f"unknown request kind {kind!r}: expected text, image or vector")


# -- transports ----------------------------------------------------------------------------------------
class DirectTransport:
    """The service in this process, called directly (no HTTP): what the pipeline itself does."""

    name = "direct"

    def __init__(self, service: Any):
        self.service = service

    async def __call__(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        try:
            return 200, await self.service.infer(body)
        except ServeError as exc:
            return exc.status, {"error": exc.reason, "detail": str(exc)}

    async def aclose(self) -> None:
        return None


class _Encoder:
    """Each body (graphlab's own JSON) as the transport's protocol sends it, encoded once per body object (the
    generator reuses a few bodies per size: `BODIES_PER_SIZE`), so the client's cost per request stays a write."""

    def __init__(self, protocol: str, model: dict[str, Any] | None) -> None:
        self.protocol = check_protocol(protocol)
        self.model = model
        if protocol != "graphlab" and not model:
            raise BadInputError(f"protocol {protocol!r} needs the model's metadata (GET /v2/models/{{name}})")
        self._done: dict[int, tuple[dict[str, Any], HttpRequest]] = {}

    def __call__(self, body: dict[str, Any]) -> HttpRequest:
        kept = self._done.get(id(body))
        if kept is None or kept[0] is not body:
            kept = (body, http_request(body, self.protocol, self.model))
            self._done[id(body)] = kept
        return kept[1]

    def read(self, status: int, raw: bytes) -> dict[str, Any]:
        """The answer as the open loop keeps it: graphlab's JSON (its batch and timings), {} for a protocol answer
        of 200 (binary data or tensors: nothing of the service's own timings), the error's JSON otherwise."""
        if status == 200 and self.protocol != "graphlab":
            return {}
        try:
            data = dict(json.loads(raw))
        except (ValueError, TypeError):
            return {"error": "not_json", "detail": bytes(raw[:200]).decode("utf-8", "replace")}
        if self.protocol != "graphlab" and set(data) == {"error"}:  # the protocol's error: a message, no reason
            return {"error": f"protocol_{status}", "detail": str(data["error"])}
        return data


class _HttpxTransport:
    name = "http"

    def __init__(self, client: Any, encoder: _Encoder | None = None):
        self.client = client
        self.encoder = encoder or _Encoder("graphlab", None)

    async def __call__(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        request = self.encoder(body)
        response = await self.client.post(request.path, content=request.content,
                                          headers={"content-type": request.content_type, **dict(request.headers)})
        return response.status_code, self.encoder.read(response.status_code, response.content)

    async def aclose(self) -> None:
        await self.client.aclose()


def ASGITransport(app: Any) -> _HttpxTransport:
    """The ASGI app in this process through httpx.ASGITransport (start the service first: no lifespan)."""
    import httpx

    transport = _HttpxTransport(httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://serve",
                                                  timeout=60.0))
    transport.name = "asgi"
    return transport


class _Connection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection; httptools parses the answers; one request at a time."""

    def __init__(self, parser_class: Any) -> None:
        self.transport: Any = None
        self.parser = parser_class(self)
        self.waiter: asyncio.Future[tuple[int, bytes]] | None = None
        self.body: list[bytes] = []
        self.status = 0
        self.closed = False

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except Exception as exc:  # noqa: BLE001 - a malformed answer fails this request, never the generator
            self._fail(ConnectionError(f"bad HTTP answer: {exc}"))
            self.transport.close()

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        waiter, self.waiter = self.waiter, None
        body, self.body = b"".join(self.body), []
        if not self.parser.should_keep_alive():
            self.closed = True
            self.transport.close()
        if waiter is not None and not waiter.done():
            waiter.set_result((self.status, body))

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._fail(ConnectionError(f"connection closed{f': {exc}' if exc else ''}"))

    def _fail(self, exc: Exception) -> None:
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)


class _RawHTTPTransport:
    """POST /v1/infer over a pool of keep-alive sockets, written by hand and parsed by httptools (what uvicorn
    parses with): about a tenth of httpx's client cost per request (`bench/bench_loadgen_http.py`), so one
    process can offer thousands of requests a second. A failed connection answers status 0."""

    name = "http"

    def __init__(self, url: str, max_connections: int, parser_class: Any, encoder: _Encoder | None = None) -> None:
        rest = url.split("://", 1)[-1].rstrip("/")
        host, _, port = rest.partition(":")
        if not host or not port.isdigit():
            raise BadInputError(f"url must be http://HOST:PORT, got {url!r}")
        self.host, self.port = host, int(port)
        self.max_connections = max_connections
        self._parser_class = parser_class
        self._idle: list[_Connection] = []
        self._open = 0
        self._freed: asyncio.Condition | None = None
        self.encoder = encoder or _Encoder("graphlab", None)
        self._wire: dict[int, tuple[HttpRequest, bytes]] = {}

    def _message(self, request: HttpRequest) -> bytes:
        """The whole HTTP message of `request` (head and body), built once per request object."""
        kept = self._wire.get(id(request))
        if kept is None or kept[0] is not request:
            extra = "".join(f"{name}: {value}\r\n" for name, value in request.headers)
            head = (f"POST {request.path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nContent-Type: "
                    f"{request.content_type}\r\n{extra}Content-Length: {len(request.content)}\r\n\r\n")
            kept = (request, head.encode("ascii") + request.content)
            self._wire[id(request)] = kept
        return kept[1]

    async def _connection(self) -> _Connection:
        if self._freed is None:
            self._freed = asyncio.Condition()
        while True:
            while self._idle:
                conn = self._idle.pop()
                if not conn.closed:
                    return conn
                self._open -= 1
            if self._open < self.max_connections:
                self._open += 1
                try:
                    _, conn = await asyncio.get_running_loop().create_connection(
                        lambda: _Connection(self._parser_class), self.host, self.port)
                except OSError:
                    self._open -= 1
                    raise
                return conn
            async with self._freed:
                await self._freed.wait()

    async def _release(self, conn: _Connection) -> None:
        if conn.closed:
            self._open -= 1
        else:
            self._idle.append(conn)
        if self._freed is not None:
            async with self._freed:
                self._freed.notify()

    async def __call__(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        message = self._message(self.encoder(body))
        try:
            conn = await self._connection()
        except OSError as exc:
            return 0, {"error": "connect_failed", "detail": str(exc)}
        conn.waiter = asyncio.get_running_loop().create_future()
        conn.transport.write(message)
        try:
            status, raw = await conn.waiter
        except ConnectionError as exc:
            conn.closed = True
            await self._release(conn)
            return 0, {"error": "connection_lost", "detail": str(exc)}
        await self._release(conn)
        return status, self.encoder.read(status, raw)

    async def aclose(self) -> None:
        for conn in self._idle:
            conn.transport.close()
        self._idle.clear()


def HTTPTransport(url: str, max_connections: int = 1024, client: str = "auto", *, protocol: str = "graphlab",
                  model: dict[str, Any] | None = None) -> Any:
    """Real sockets to `url`; enough connections that the client itself never queues.

    client: "raw" (keep-alive sockets parsed by httptools: fast), "httpx", or "auto" (raw where httptools is
    installed, else httpx). protocol: "graphlab" (its JSON to /v1/infer), "oip_json" or "oip_binary" (the Open
    Inference Protocol, JSON tensors or binary data; `model`: the model's metadata, `GET /v2/models/{name}`), each
    body encoded once (`graphlab.loadtest.protocols`)."""
    if client not in ("auto", "raw", "httpx"):
        raise BadInputError(f"client must be 'auto', 'raw' or 'httpx', got {client!r}")
    encoder = _Encoder(protocol, model)
    if client != "httpx":
        try:
            from httptools import HttpResponseParser  # type: ignore[import-not-found]
        except ImportError:
            if client == "raw":
                raise ConfigurationError("client='raw' needs httptools (the serve extra)") from None
        else:
            return _RawHTTPTransport(url, max_connections, HttpResponseParser, encoder)
    import httpx

    limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
    return _HttpxTransport(httpx.AsyncClient(base_url=url, limits=limits, timeout=60.0), encoder)


# -- the open loop -------------------------------------------------------------------------------------
async def run_open_loop(send: Send, bodies: list[dict[str, Any]], offsets_s: list[float],
                        drain_timeout_s: float = 30.0) -> tuple[int, list[ClientRecord]]:
    """Send `bodies[i]` at `offsets_s[i]` after the start, never waiting for answers; await them all.

    Returns (start_ns, records). Requests still unanswered `drain_timeout_s` after the last arrival are
    cancelled and recorded with status 0, reason "client_timeout".
    """
    if len(bodies) != len(offsets_s):
        raise BadInputError(f"one body per arrival time: got {len(bodies)} bodies and {len(offsets_s)} times")
    loop = asyncio.get_running_loop()
    start_ns = timestamp_ns() + 20_000_000  # 20 ms to let the clock thread start
    records = [ClientRecord(i, body_rows(body), start_ns + int(t * 1e9))
               for i, (body, t) in enumerate(zip(bodies, offsets_s))]
    tasks: list[asyncio.Task[None]] = []

    async def one(record: ClientRecord) -> None:
        record.sent_ns = timestamp_ns()
        status, data = await send(bodies[record.index])
        record.done_ns = timestamp_ns()
        record.status = status
        if status == 200:
            record.answer = {"batch": data.get("batch", {}), "timing_us": data.get("timing_us", {})}
        else:
            record.reason = str(data.get("error", "error"))

    def launch(indices: list[int]) -> None:
        for i in indices:
            tasks.append(loop.create_task(one(records[i])))

    all_launched = asyncio.Event()

    thread = start_arrival_clock([r.scheduled_ns for r in records],
                                 lambda due: loop.call_soon_threadsafe(launch, due),
                                 lambda: loop.call_soon_threadsafe(all_launched.set))
    await all_launched.wait()
    thread.join()
    if tasks:
        _, late = await asyncio.wait(tasks, timeout=drain_timeout_s)
        for task in late:
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)
    for record, task in zip(records, tasks):
        if task.cancelled() and record.status == 0:
            record.reason = "client_timeout"
        elif not task.cancelled() and task.exception() is not None and record.status == 0:
            record.reason = f"client_error: {type(task.exception()).__name__}"
    return start_ns, records


def loop_name() -> str:
    """The event loop `run_in_fresh_loop` uses: "uvloop" where it is installed, else "asyncio"."""
    import importlib.util

    return "uvloop" if importlib.util.find_spec("uvloop") is not None else "asyncio"


def run_in_fresh_loop(coro_fn: Callable[[], Awaitable[Any]]) -> Any:
    """Run `coro_fn()` to the end on a new event loop in a new thread (uvloop where installed).

    A thread of its own, so this works the same from a script and from a notebook, whose kernel
    already runs a loop.
    """
    box: dict[str, Any] = {}

    def target() -> None:
        if loop_name() == "uvloop":
            import uvloop  # type: ignore[import-not-found]

            loop = uvloop.new_event_loop()
        else:
            loop = asyncio.new_event_loop()
        try:
            box["value"] = loop.run_until_complete(coro_fn())
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc
        finally:
            loop.close()

    thread = threading.Thread(target=target, name="graphlab-loadgen-loop")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


__all__ = ["ASGITransport", "ClientRecord", "DEFAULT_ROWS", "DirectTransport", "HTTPTransport", "LoadSpec",
           "loop_name", "make_bodies", "poisson_arrivals", "run_in_fresh_loop", "run_open_loop"]
