"""Request traces: sizes from a realistic distribution and Poisson arrivals, from fixed seeds.

    >>> trace = make_trace(n_requests=5, seed=0)
    >>> len(trace.sizes), all(1 <= s <= 64 for s in trace.sizes), list(trace.arrivals_s) == sorted(trace.arrivals_s)
    (5, True, True)

Sizes follow a log-normal law (many small requests, a long tail of large ones: the shape request sizes
usually have in serving), rounded and clipped to [1, max_size]. Pure: no torch.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

from graphlab.errors import BadInputError, RecordingError

TRACE_SCHEMA = "graphlab.trace/1"


def poisson_arrivals(rate_rps: float, duration_s: float, rng: random.Random) -> list[float]:
    """Arrival offsets in seconds over [0, duration_s): exponential gaps of mean 1/rate."""
    if rate_rps <= 0:
        raise BadInputError(f"arrival rate must be positive (requests per second), got {rate_rps}")
    out, t = [], rng.expovariate(rate_rps)
    while t < duration_s:
        out.append(t)
        t += rng.expovariate(rate_rps)
    return out


def lognormal_sizes(n: int, median: float, sigma: float, max_size: int, rng: random.Random) -> list[int]:
    """`n` sizes from a log-normal law with this median, rounded and clipped to [1, max_size]."""
    mu = math.log(median)
    return [min(max_size, max(1, round(rng.lognormvariate(mu, sigma)))) for _ in range(n)]


@dataclass(frozen=True)
class RequestTrace:
    """A sequence of requests: their sizes and arrival times, and how they were drawn."""

    sizes: tuple[int, ...]
    arrivals_s: tuple[float, ...]
    seed: int
    description: str

    def histogram(self) -> dict[int, int]:
        hist: dict[int, int] = {}
        for s in self.sizes:
            hist[s] = hist.get(s, 0) + 1
        return dict(sorted(hist.items()))

    def to_dict(self) -> dict[str, Any]:
        return {"schema": TRACE_SCHEMA, "sizes": list(self.sizes), "arrivals_s": list(self.arrivals_s),
                "seed": self.seed, "description": self.description}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RequestTrace:
        if data.get("schema") != TRACE_SCHEMA:
            raise RecordingError(f"not a request trace (schema {data.get('schema')!r}, expected {TRACE_SCHEMA})")
        return cls(tuple(data["sizes"]), tuple(data["arrivals_s"]), data["seed"], data["description"])


def make_trace(n_requests: int = 400, rate_rps: float = 200.0, median: float = 6.0, sigma: float = 1.0,
               max_size: int = 64, seed: int = 0) -> RequestTrace:
    """`n_requests` requests with log-normal sizes and Poisson arrivals at `rate_rps`, from `seed`."""
    if n_requests < 1 or max_size < 1:
        raise BadInputError(f"a trace needs n_requests >= 1 and max_size >= 1, got {n_requests} and {max_size}")
    rng = random.Random(seed)
    sizes = lognormal_sizes(n_requests, median, sigma, max_size, rng)
    arrivals: list[float] = []
    t = 0.0
    for _ in range(n_requests):
        t += rng.expovariate(rate_rps)
        arrivals.append(t)
    return RequestTrace(tuple(sizes), tuple(arrivals), seed,
                        f"{n_requests} requests, log-normal sizes (median {median}, sigma {sigma}, 1..{max_size}), "
                        f"Poisson arrivals at {rate_rps:g}/s, seed {seed}")


__all__ = ["RequestTrace", "TRACE_SCHEMA", "lognormal_sizes", "make_trace", "poisson_arrivals"]
