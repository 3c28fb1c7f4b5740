"""The service over real sockets: uvicorn with deadlines for slow and idle clients, and a bounded drain on SIGTERM.

    >>> from graphlab.serve.http import run_server
    >>> run_server(service)      # on service.config.host:port; blocks until SIGTERM / Ctrl-C   # doctest: +SKIP

What it adds to a plain `uvicorn.run(app)`, each for a loss seen over a socket (docs/serving.md):

- **Slow or idle clients.** A connection must send a request's whole head within `header_timeout_ms`
  (counted from when it connects, or from its first byte after an answer), and its body within
  `body_timeout_ms` (the app): else a JSON 408 and the connection is closed. uvicorn alone times out only
  keep-alive connections that already had an answer; one that connects and says nothing, or sends its head
  at 1 byte/s, stays forever (and holds a SIGTERM with it). Keep-alive: `idle_timeout_ms`.
- **A bounded drain.** On SIGTERM: stop listening (new connections are refused), answer every request
  from then on with 503 and `Connection: close` (`GuardedApp.draining`), keep open connections for
  `drain_linger_ms` so a request already on the wire gets that 503 rather than a closed socket, then close
  the idle ones, let the accepted requests finish, and close the service (which drains what it accepted).
  Nothing takes longer than `shutdown_timeout_ms` in all: a request still running just before it is answered
  503 JSON (never a closed socket), and the process exits `EXIT_DRAIN_CUT` instead of 0.
- **Admission** happens in the app (`GuardedApp`: `max_pending` HTTP requests inside, then 503 at once,
  before the body is read or parsed), and the kernel's accept queue is `backlog` deep.
- **The fast stack where installed**: uvloop for the event loop, httptools for the HTTP parser (uvicorn's
  "standard" extras); else asyncio and h11. `describe_stack()` says which.

The deadlines here are the event loop's own timers (`call_later`, `asyncio.sleep`); the app's per-request
durations for `/metrics` are `graphlab.clock.timestamp_ns` stamps, like the service's request timestamps.
"""
from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import time
from typing import Any

from graphlab.errors import UnsupportedError
from graphlab.serve.app import create_app
from graphlab.serve.config import ServeConfig
from graphlab.serve.metrics import HttpMetrics
from graphlab.serve.service import EXIT_WORKER_DOWN, InferenceService

log = logging.getLogger("graphlab.serve")

#: the exit code of `python -m graphlab.serve` when SIGTERM's drain ran out of shutdown_timeout_ms: accepted
#: requests still running were answered 503 (a supervisor may want a longer timeout); 0: all answered normally
EXIT_DRAIN_CUT = 4

_PHRASES = {400: b"Bad Request", 408: b"Request Timeout", 414: b"URI Too Long",
            431: b"Request Header Fields Too Large"}


def raw_answer(status: int, reason: str, detail: str) -> bytes:
    """A whole JSON answer that closes its connection, as bytes for the transport: what the protocol says before
    (or instead of) the app."""
    body = json.dumps({"error": reason, "detail": detail}, separators=(",", ":")).encode()
    return (b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: %d\r\n\r\n"
            % (status, _PHRASES[status], len(body)) + body)


RESPONSE_408 = raw_answer(408, "request_timeout", "the request head did not arrive in time: send it at once")
#: the answer to bytes that are not HTTP/1.1 (an unknown method, a bad or duplicate Content-Length, both
#: Content-Length and Transfer-Encoding, a bad chunk size, control bytes in a header, TLS): uvicorn's is text/plain
RESPONSE_400 = raw_answer(400, "bad_http_request", "the request is not valid HTTP/1.1 (its request line, a header, "
                          "its framing or a chunk); this server speaks plain HTTP, not TLS")


class HeadMeter:
    r"""A connection's request heads, counted as their bytes arrive, before the parser reads them: a head that
    grows past a limit is refused while it is still small, whatever the parser's own cost per byte.

    It follows the connection's framing as far as the limits need: a head ends at its empty line, then a
    Content-Length body is skipped and the next head (pipelined) is counted; after a chunked body it waits for
    `reset()` (the protocol calls it once that request's answer is sent).

        >>> meter = HeadMeter(max_head_bytes=64, max_headers=2, max_url_bytes=16)
        >>> meter.feed(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n") is None
        True
        >>> meter.feed(b"GET /" + b"a" * 20 + b" HTTP/1.1\r\n")[0]
        414
    """

    def __init__(self, max_head_bytes: int, max_headers: int, max_url_bytes: int):
        self.max_head_bytes = max_head_bytes
        self.max_headers = max_headers
        self.max_url_bytes = max_url_bytes
        self.reset()

    def reset(self) -> None:
        """Count a new head from its first byte."""
        self.state = "head"  # "head", "body" (body_left bytes to skip), "wait" (until reset())
        self.head_bytes = 0
        self.headers = 0
        self.line = bytearray()
        self.seen_request_line = False
        self.body_left = 0
        self.content_length: bytes | None = None
        self.chunked = False

    def feed(self, data: bytes) -> tuple[int, str, str] | None:
        """Count `data`; the first limit it breaks as (status, reason, detail), else None."""
        pos, end = 0, len(data)
        while pos < end:
            if self.state == "wait":
                return None
            if self.state == "body":
                step = min(self.body_left, end - pos)
                self.body_left -= step
                pos += step
                if self.body_left == 0:
                    self.reset()
                continue
            newline = data.find(b"\n", pos)
            stop = end if newline < 0 else newline + 1
            self.head_bytes += stop - pos
            self.line += data[pos:stop]
            pos = stop
            if self.head_bytes > self.max_head_bytes:
                return (431, "request_header_too_large", f"the request head is over {self.max_head_bytes} bytes; "
                        f"this server reads at most {self.max_head_bytes}: send less in headers")
            if not self.seen_request_line and len(self.line) > self.max_url_bytes + 64:
                return self._url_too_long()  # the request line alone is longer than any URL it may carry
            if newline >= 0:
                breach = self._line_done(bytes(self.line).rstrip(b"\r\n"))
                self.line.clear()
                if breach is not None:
                    return breach
        return None

    def _line_done(self, line: bytes) -> tuple[int, str, str] | None:
        if not self.seen_request_line:
            if line:  # empty lines before a request line are allowed (RFC 9112 2.2); they count as head bytes
                parts = line.split(b" ")
                if len(parts) > 1 and len(parts[1]) > self.max_url_bytes:
                    return self._url_too_long()
                self.seen_request_line = True
            return None
        if not line:  # the head's end
            length = (self.content_length or b"0").strip()
            if self.chunked or not length.isdigit():
                self.state = "wait"  # a chunked body (or a framing the parser will refuse): until the answer
            elif int(length) > 0:
                self.state, self.body_left = "body", int(length)
            else:
                self.reset()
            return None
        self.headers += 1
        if self.headers > self.max_headers:
            return (431, "request_header_too_large", f"the request has more than {self.max_headers} headers; this "
                    f"server reads at most {self.max_headers}")
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            self.content_length = value
        elif name == b"transfer-encoding":
            self.chunked = True
        return None

    def _url_too_long(self) -> tuple[int, str, str]:
        return (414, "uri_too_long", f"the request URL is over {self.max_url_bytes} bytes; this server reads at "
                f"most {self.max_url_bytes}")


def describe_stack() -> dict[str, str]:
    """The event loop and HTTP parser `run_server` uses here: uvloop/httptools where installed."""
    return {"loop": "uvloop" if importlib.util.find_spec("uvloop") else "asyncio",
            "http": "httptools" if importlib.util.find_spec("httptools") else "h11"}


def guarded_protocol(http: str, config: ServeConfig, metrics: HttpMetrics) -> type:
    """uvicorn's HTTP protocol ("httptools" or "h11") with a deadline on each request's head, the head limits
    (`HeadMeter`: 431 / 414) and JSON for what the parser refuses (400), each answer closing the connection."""
    if http == "httptools":
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as base
    else:
        from uvicorn.protocols.http.h11_impl import H11Protocol as base
    header_timeout_s = config.header_timeout_ms / 1000.0

    class HeadDeadline(base):  # type: ignore[misc, valid-type]
        """Arms a timer when a connection starts waiting for a request's head; if no new request has begun by
        then (its head complete), answers 408 and closes. One timer per request: a few µs. Counts each head's
        bytes before the parser sees them (`HeadMeter`)."""

        _head_timer: Any = None
        _head_cycle: Any = None
        _refusal: bytes | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._meter = HeadMeter(config.max_head_bytes, config.max_headers, config.max_url_bytes)
            self._arm()

        def data_received(self, data: bytes) -> None:
            if self._refusal is not None:
                return  # refused: the rest is not read
            if self.cycle is None or self.cycle.response_complete:  # between requests: this is a new head
                if self._head_timer is None or self._head_cycle is not self.cycle:
                    self._arm()
                if self._meter.state == "wait":
                    self._meter.reset()
            breach = self._meter.feed(data)
            if breach is not None:
                status, reason, detail = breach
                metrics.refused[reason] += 1
                self._refuse(raw_answer(status, reason, detail))
                return
            super().data_received(data)

        def _refuse(self, answer: bytes) -> None:
            """Answer `answer` and close: now, or after the answer in progress (a pipelined request)."""
            if self.cycle is not None and not self.cycle.response_complete:
                self._refusal = answer
                self.transport.pause_reading()
                return
            self._refusal = answer
            self.transport.write(answer)
            self.transport.close()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self._refusal is not None and not self.transport.is_closing():
                self.transport.write(self._refusal)
                self.transport.close()

        def send_400_response(self, msg: str) -> None:
            """What the parser refused, as JSON (uvicorn's own is text/plain); the connection closes."""
            metrics.refused["bad_http_request"] += 1
            if self.cycle is not None and self.cycle.response_started:
                self.transport.close()  # an answer is on the wire already: nothing else can follow it
                return
            self.transport.write(RESPONSE_400)
            self.transport.close()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
            super().connection_lost(exc)

        def _arm(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
            self._head_cycle = self.cycle
            self._head_timer = self.loop.call_later(header_timeout_s, self._expire)

        def _expire(self) -> None:
            self._head_timer = None
            if self.cycle is self._head_cycle and not self.transport.is_closing():
                if self.cycle is None or self.cycle.response_complete:
                    metrics.timeouts["head"] += 1
                    self.transport.write(RESPONSE_408)
                    self.transport.close()

    HeadDeadline.__name__ = f"HeadDeadline{base.__name__}"
    return HeadDeadline


def make_server(service: InferenceService, *, log_level: str = "warning", stack: dict[str, str] | None = None) -> Any:
    """A `uvicorn.Server` for `service` (not started) on its config's host, port and backlog: the app, the deadlines,
    the drain. `server.run()` blocks."""
    try:
        import uvicorn
    except ImportError:
        raise UnsupportedError("serving over HTTP needs uvicorn and starlette: pip install 'graphlab[serve]'") \
            from None
    cfg = service.config
    app = create_app(service)
    guard = app
    stack = stack or describe_stack()
    protocol = guarded_protocol(stack["http"], cfg, guard.metrics)
    config = uvicorn.Config(app, host=cfg.host, port=cfg.port, loop=stack["loop"], http=protocol, lifespan="on",
                            h11_max_incomplete_event_size=cfg.max_head_bytes + 1024,  # the HeadMeter refuses first
                            log_level=log_level, backlog=cfg.backlog, timeout_keep_alive=cfg.idle_timeout_ms / 1000.0,
                            timeout_graceful_shutdown=cfg.shutdown_timeout_ms / 1000.0, access_log=False)

    class DrainingServer(uvicorn.Server):
        """uvicorn's Server with the bounded drain of the module docstring in place of its shutdown."""

        async def shutdown(self, sockets: Any = None) -> None:
            loop = asyncio.get_running_loop()
            timeout_s = cfg.shutdown_timeout_ms / 1000.0
            deadline = loop.time() + timeout_s
            guard.close_by_s = time.monotonic() + timeout_s  # the service's close gets what is left of it
            # what still runs this long before the deadline is answered 503, so that the answer is there in time
            answer_by = deadline - min(0.5, timeout_s / 10)
            for server in self.servers:
                server.close()  # new connections are refused from here on
            for sock in sockets or []:
                sock.close()
            guard.draining = True
            await asyncio.sleep(cfg.drain_linger_ms / 1000.0)  # requests on the wire: answered 503, closed
            for connection in list(self.server_state.connections):
                connection.shutdown()  # idle: closed now; busy: closed after its answer
            while (self.server_state.connections or self.server_state.tasks) and loop.time() < answer_by \
                    and not self.force_exit:
                await asyncio.sleep(0.02)
            tasks = list(self.server_state.tasks)
            if tasks:
                log.warning("graphlab.serve: %d request(s) still running after shutdown_timeout_ms; answered 503",
                            len(tasks))
                guard.cut_short_by_shutdown()
                for task in tasks:
                    task.cancel()  # GuardedApp answers each 503 (JSON) and ends the task normally
                await asyncio.wait(tasks, timeout=max(0.05, deadline - loop.time()))
            for connection in list(self.server_state.connections):
                connection.transport.close()
            if not self.force_exit:
                await self.lifespan.shutdown()
            # uvicorn raises the captured SIGTERM again once it is done, so the process would end "killed by
            # SIGTERM" after a clean drain; a drained server exits 0 instead (a second signal still forces)
            if hasattr(self, "_captured_signals") and not self.force_exit:
                self._captured_signals.clear()

    server = DrainingServer(config)
    server.guard = guard
    server.stack = stack
    return server


def run_server(service: InferenceService, *, log_level: str = "warning") -> int:
    """Start `service` (warm-up, here, so an error is one line before any socket opens), serve it on its config's
    host and port until SIGTERM or Ctrl-C (or its GPU worker stays down), drain; 0 when every accepted request
    was answered normally, `EXIT_WORKER_DOWN` when its worker went down, `EXIT_DRAIN_CUT` when the drain ran out
    of shutdown_timeout_ms and answered accepted requests 503."""
    if service.state == "new":
        service.start()
    server = make_server(service, log_level=log_level)
    service.when_down(lambda reason: setattr(server, "should_exit", True))  # its GPU worker is gone: drain, exit
    server.run()
    if service.failure is not None:
        return EXIT_WORKER_DOWN
    if server.guard.cut_short:
        return EXIT_DRAIN_CUT
    return 0 if service.state == "closed" else 1


class BackgroundServer:
    """The service over HTTP on a thread of this process, for a notebook or a script that goes on running:
    `gl.serve(model, port=0, background=True)`. The same server as `run_server` (deadlines, admission, drain);
    `close()` drains it as SIGTERM would, and it is a context manager.

    Attributes:
        service: the started `InferenceService`.
        port: the port it listens on (the one the OS chose for port 0).
        url: "http://HOST:PORT"; address: "HOST:PORT" (what tritonclient's `url=` takes).
    """

    def __init__(self, service: InferenceService, *, log_level: str = "warning", ready_timeout_s: float = 60.0):
        import threading

        if service.state == "new":
            service.start()
        self.service = service
        self._server = make_server(service, log_level=log_level)
        self._thread = threading.Thread(target=self._server.run, name="graphlab-http", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + ready_timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self._server.should_exit = True
                raise UnsupportedError(f"the HTTP server did not start on {service.config.host}:{service.config.port} "
                                       f"within {ready_timeout_s:g} s (is the port taken?)")
            time.sleep(0.01)
        host = service.config.host
        self.port = int(self._server.servers[0].sockets[0].getsockname()[1])
        self.address = f"{host}:{self.port}"
        self.url = f"http://{self.address}"

    def close(self, timeout_s: float | None = None) -> None:
        """Drain and stop (as SIGTERM: every accepted request answered, within `shutdown_timeout_ms`)."""
        self._server.should_exit = True
        wait_s = timeout_s if timeout_s is not None else self.service.config.shutdown_timeout_ms / 1000.0 + 5.0
        self._thread.join(wait_s)

    def __enter__(self) -> BackgroundServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(f"graphlab serving {self.service.model.name} ({self.service.config.setting}, "
                     f"{self.service.config.device}) at {self.url}")

    def __repr__(self) -> str:
        return f"BackgroundServer({self.service.model.name!r} at {self.url})"


__all__ = ["BackgroundServer", "EXIT_DRAIN_CUT", "HeadMeter", "RESPONSE_400", "RESPONSE_408", "describe_stack",
           "guarded_protocol", "make_server", "raw_answer", "run_server"]
