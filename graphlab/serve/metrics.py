"""`GET /metrics`: the service in the Prometheus text format (version 0.0.4), counted by the HTTP app.

    graphlab_http_requests_total{path="/v1/infer",status="200"} 1042      every answer, by path and status
    graphlab_http_request_duration_seconds_bucket{le="0.001"} 917          head received -> answer sent
    graphlab_http_in_flight 3                                              HTTP requests being handled now
    graphlab_service_pending 2 / graphlab_queue_depth 0                   inside the service / in the batcher
    graphlab_batch_rows_bucket{le="4"} 880                                 rows per batch formed
    graphlab_service_events_total{event="refused_overloaded"} 12          the service's own counters
    graphlab_graph_cache_hits_total 1040                                   the graph cache (graph settings)

Only the HTTP app writes these counters, from the event loop thread: no lock needed.

    >>> m = HttpMetrics(paths=("/v1/infer", "/healthz"))
    >>> m.observe("/v1/infer", 200, 350_000)
    >>> 'graphlab_http_requests_total{path="/v1/infer",status="200"} 1' in m.render()
    True

Pure Python: no torch here.
"""
from __future__ import annotations

import bisect
from collections import Counter
from typing import Any

#: latency bucket bounds, seconds
LATENCY_BOUNDS_S = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)
#: batch size bucket bounds, rows
ROWS_BOUNDS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


class HttpMetrics:
    """Request counts by (path, status) and a latency histogram; `render(service)` adds the service's figures."""

    def __init__(self, paths: tuple[str, ...] = ()) -> None:
        """`paths`: the app's routes, counted by name; any other path counts as "other" (bounded label values)."""
        self.paths = frozenset(paths)
        self.requests: Counter[tuple[str, int]] = Counter()
        self.latency_buckets = [0] * (len(LATENCY_BOUNDS_S) + 1)
        self.latency_sum_s = 0.0
        self.latency_count = 0
        self.in_flight = 0
        self.timeouts: Counter[str] = Counter()
        self.refused: Counter[str] = Counter()  # by the HTTP protocol, before the app: head limits, not HTTP

    def observe(self, path: str, status: int, duration_ns: int) -> None:
        """One answer sent: `path` (unknown paths count as "other"), its status, how long it took."""
        self.requests[(path if path in self.paths else "other", status)] += 1
        seconds = duration_ns / 1e9
        self.latency_buckets[bisect.bisect_left(LATENCY_BOUNDS_S, seconds)] += 1
        self.latency_sum_s += seconds
        self.latency_count += 1

    def render(self, service: Any = None) -> str:
        lines = ["# HELP graphlab_http_requests_total HTTP answers by path and status.",
                 "# TYPE graphlab_http_requests_total counter"]
        for (path, status), n in sorted(self.requests.items()):
            lines.append(f'graphlab_http_requests_total{{path="{path}",status="{status}"}} {n}')
        lines += ["# HELP graphlab_http_timeouts_total Connections closed with 408 (head or body too slow).",
                  "# TYPE graphlab_http_timeouts_total counter"]
        for what, n in sorted(self.timeouts.items()):
            lines.append(f'graphlab_http_timeouts_total{{stage="{what}"}} {n}')
        lines += ["# HELP graphlab_http_refused_total Requests the HTTP protocol refused before the app (431, 414, "
                  "400: not HTTP).", "# TYPE graphlab_http_refused_total counter"]
        for what, n in sorted(self.refused.items()):
            lines.append(f'graphlab_http_refused_total{{reason="{what}"}} {n}')
        lines += ["# HELP graphlab_http_request_duration_seconds From the request's head to its answer.",
                  "# TYPE graphlab_http_request_duration_seconds histogram"]
        total = 0
        for bound, n in zip((*LATENCY_BOUNDS_S, float("inf")), self.latency_buckets):
            total += n
            le = "+Inf" if bound == float("inf") else f"{bound:g}"
            lines.append(f'graphlab_http_request_duration_seconds_bucket{{le="{le}"}} {total}')
        lines += [f"graphlab_http_request_duration_seconds_sum {self.latency_sum_s:.6f}",
                  f"graphlab_http_request_duration_seconds_count {self.latency_count}",
                  "# TYPE graphlab_http_in_flight gauge", f"graphlab_http_in_flight {self.in_flight}"]
        if service is not None:
            lines += _service_lines(service.stats())
        return "\n".join(lines) + "\n"


def _service_lines(stats: dict[str, Any]) -> list[str]:
    lines = ["# TYPE graphlab_service_pending gauge", f"graphlab_service_pending {stats['pending']}",
             "# TYPE graphlab_queue_depth gauge", f"graphlab_queue_depth {stats['queued']}",
             "# TYPE graphlab_service_ready gauge", f"graphlab_service_ready {int(stats['state'] == 'ready')}",
             "# HELP graphlab_service_events_total The service's counters (accepted, answered_ok, refused_...).",
             "# TYPE graphlab_service_events_total counter"]
    for event, n in sorted(stats["counters"].items()):
        lines.append(f'graphlab_service_events_total{{event="{event}"}} {n}')
    lines += ["# HELP graphlab_batch_rows Rows per batch the GPU worker ran.", "# TYPE graphlab_batch_rows histogram"]
    rows = stats["batch_rows"]
    total = 0
    for bound in (*ROWS_BOUNDS, float("inf")):
        total = sum(n for r, n in rows.items() if r <= bound)
        le = "+Inf" if bound == float("inf") else str(bound)
        lines.append(f'graphlab_batch_rows_bucket{{le="{le}"}} {total}')
    lines += [f"graphlab_batch_rows_sum {sum(r * n for r, n in rows.items())}", f"graphlab_batch_rows_count {total}"]
    runner = stats.get("runner") or {}
    for key, name in (("hits", "graphlab_graph_cache_hits_total"), ("captures", "graphlab_graph_cache_captures_total"),
                      ("fallbacks", "graphlab_graph_cache_fallbacks_total")):
        if isinstance(runner.get(key), (int, float)):
            lines += [f"# TYPE {name} counter", f"{name} {runner[key]}"]
    if isinstance(runner.get("graphs"), int):
        lines += ["# TYPE graphlab_graph_cache_graphs gauge", f"graphlab_graph_cache_graphs {runner['graphs']}"]
    return lines


__all__ = ["HttpMetrics", "LATENCY_BOUNDS_S", "ROWS_BOUNDS"]
