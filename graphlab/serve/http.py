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
  Nothing takes longer than `shutdown_timeout_ms` in all: what is still running then is cancelled.
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
import logging
from typing import Any

from graphlab.errors import UnsupportedError
from graphlab.serve.app import create_app
from graphlab.serve.metrics import HttpMetrics
from graphlab.serve.service import InferenceService

log = logging.getLogger("graphlab.serve")

_TIMEOUT_408 = b'{"error":"request_timeout","detail":"the request head did not arrive in time: send it at once"}'
RESPONSE_408 = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n"
                b"content-length: " + str(len(_TIMEOUT_408)).encode() + b"\r\n\r\n" + _TIMEOUT_408)


def describe_stack() -> dict[str, str]:
    """The event loop and HTTP parser `run_server` uses here: uvloop/httptools where installed."""
    return {"loop": "uvloop" if importlib.util.find_spec("uvloop") else "asyncio",
            "http": "httptools" if importlib.util.find_spec("httptools") else "h11"}


def guarded_protocol(http: str, header_timeout_s: float, metrics: HttpMetrics) -> type:
    """uvicorn's HTTP protocol ("httptools" or "h11") with a deadline on each request's head."""
    if http == "httptools":
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as base
    else:
        from uvicorn.protocols.http.h11_impl import H11Protocol as base

    class HeadDeadline(base):  # type: ignore[misc, valid-type]
        """Arms a timer when a connection starts waiting for a request's head; if no new request has begun by
        then (its head complete), answers 408 and closes. One timer per request: a few µs."""

        _head_timer: Any = None
        _head_cycle: Any = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            if self.cycle is None or self.cycle.response_complete:  # between requests: this is a new head
                if self._head_timer is None or self._head_cycle is not self.cycle:
                    self._arm()
            super().data_received(data)

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
    protocol = guarded_protocol(stack["http"], cfg.header_timeout_ms / 1000.0, guard.metrics)
    config = uvicorn.Config(app, host=cfg.host, port=cfg.port, loop=stack["loop"], http=protocol, lifespan="on",
                            log_level=log_level, backlog=cfg.backlog, timeout_keep_alive=cfg.idle_timeout_ms / 1000.0,
                            timeout_graceful_shutdown=cfg.shutdown_timeout_ms / 1000.0, access_log=False)

    class DrainingServer(uvicorn.Server):
        """uvicorn's Server with the bounded drain of the module docstring in place of its shutdown."""

        async def shutdown(self, sockets: Any = None) -> None:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + cfg.shutdown_timeout_ms / 1000.0
            for server in self.servers:
                server.close()  # new connections are refused from here on
            for sock in sockets or []:
                sock.close()
            guard.draining = True
            await asyncio.sleep(cfg.drain_linger_ms / 1000.0)  # requests on the wire: answered 503, closed
            for connection in list(self.server_state.connections):
                connection.shutdown()  # idle: closed now; busy: closed after its answer
            while (self.server_state.connections or self.server_state.tasks) and loop.time() < deadline \
                    and not self.force_exit:
                await asyncio.sleep(0.02)
            if self.server_state.tasks:
                log.warning("graphlab.serve: %d request(s) still running after shutdown_timeout_ms; cancelled",
                            len(self.server_state.tasks))
                for task in list(self.server_state.tasks):
                    task.cancel()
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
    host and port until SIGTERM or Ctrl-C, drain; 0 when it ended cleanly."""
    if service.state == "new":
        service.start()
    server = make_server(service, log_level=log_level)
    server.run()
    return 0 if service.state == "closed" else 1


__all__ = ["RESPONSE_408", "describe_stack", "guarded_protocol", "make_server", "run_server"]
