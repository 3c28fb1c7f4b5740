"""Latency statistics: percentiles, spread between repeated runs, honest one-line summaries.

Pure: standard library only; must not import torch, numpy or plotting libraries.

Why these and not mean +- stdev: latency distributions have long right tails (a context switch, a
clock change, a page fault), so the mean moves with every outlier and the standard deviation says
little. The median (p50) is what a typical request sees; p10 and p90 show how wide the typical
range is; and repeating the whole measurement a few times (`runs`) shows whether the median itself
is reproducible. We report those three things and no confidence interval we did not measure.

Example:
    >>> s = summarize([10.0, 11.0, 12.0, 13.0, 50.0])
    >>> s.p50_us, s.p10_us, s.p90_us
    (12.0, 10.4, 35.2)
    >>> round(run_spread_pct([100.0, 102.0, 101.0]), 2)
    1.98
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Sequence

from graphlab.errors import StatsError
from graphlab.present import duration, size



def _clean(samples: Iterable[float], what: str = "samples") -> list[float]:
    values = [float(v) for v in samples]
    if not values:
        raise StatsError(f"no {what} to summarise: time at least one repetition")
    if any(math.isnan(v) or math.isinf(v) for v in values):
        raise StatsError(f"{what} contain NaN or infinity: check the timer that produced them")
    return values


def percentile(samples: Iterable[float], q: float) -> float:
    """The q-th percentile (0..100) with linear interpolation between order statistics.

    Same definition as numpy's default (`method="linear"`), so figures agree with pandas/numpy.
    """
    if not 0.0 <= q <= 100.0:
        raise StatsError(f"percentile {q} is outside 0..100")
    values = sorted(_clean(samples))
    position = (len(values) - 1) * q / 100.0
    lower = math.floor(position)
    upper = min(lower + 1, len(values) - 1)
    weight = position - lower
    return values[lower] + (values[upper] - values[lower]) * weight


def median(samples: Iterable[float]) -> float:
    """The 50th percentile."""
    return percentile(samples, 50.0)


@dataclass(frozen=True)
class Summary:
    """Order statistics of one set of timings, in microseconds."""

    count: int
    min_us: float
    p10_us: float
    p50_us: float
    p90_us: float
    max_us: float

    @property
    def width_us(self) -> float:
        """p90 - p10: how wide the typical range is."""
        return self.p90_us - self.p10_us

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def summarize(samples_us: Iterable[float]) -> Summary:
    """Summarise timings (µs) as count, min, p10, p50, p90, max."""
    values = _clean(samples_us)
    return Summary(
        count=len(values),
        min_us=min(values),
        p10_us=percentile(values, 10.0),
        p50_us=percentile(values, 50.0),
        p90_us=percentile(values, 90.0),
        max_us=max(values),
    )


def run_spread_pct(run_medians_us: Sequence[float]) -> float:
    """Spread between repeated runs: (max - min) of the per-run medians, as % of their median.

    0 means every run found the same median; 5 means the runs disagree by 5% of the median, so a
    difference smaller than that between two configurations is noise. One run has no spread (0).
    """
    values = _clean(run_medians_us, "run medians")
    centre = median(values)
    if centre <= 0:
        raise StatsError("run medians must be positive to express their spread as a percentage")
    return 100.0 * (max(values) - min(values)) / centre


def median_converged(samples_us: Sequence[float], rel_tol: float = 0.01, chunk: int = 50) -> bool:
    """True once adding the last `chunk` samples moved the median by less than `rel_tol` (a fraction).

    A simple, honest stopping rule for "enough repetitions for a stable median".
    """
    values = _clean(samples_us)
    if len(values) < 2 * chunk:
        return False
    before = median(values[:-chunk])
    after = median(values)
    return abs(after - before) <= rel_tol * abs(before)


def speedup(eager_us: float, graph_us: float) -> float:
    """eager / graph: 2.0 means the graph takes half the time; below 1 the graph is slower."""
    if graph_us <= 0 or eager_us <= 0:
        raise StatsError("latencies must be positive to compare them")
    return eager_us / graph_us


def latency_drop_pct(eager_us: float, graph_us: float) -> float:
    """How much lower graph latency is than eager, in % of eager (negative: the graph is slower)."""
    if eager_us <= 0 or graph_us <= 0:
        raise StatsError("latencies must be positive to compare them")
    return 100.0 * (eager_us - graph_us) / eager_us


def overhead_share_pct(busy_us: float, elapsed_us: float) -> float:
    """Share of elapsed time the GPU was *not* running kernels, in % (clamped to 0..100).

    With `busy_us` the summed kernel durations of one forward and `elapsed_us` its end-to-end time,
    this is the part lost to launch overhead, Python and synchronisation.
    """
    if elapsed_us <= 0:
        raise StatsError("elapsed time must be positive")
    return min(100.0, max(0.0, 100.0 * (1.0 - busy_us / elapsed_us)))


def format_us(value_us: float) -> str:
    """A latency with a sensible unit: "8.40 µs", "312 µs", "1.25 ms", "2.10 s" (`present.duration`)."""
    return duration(value_us)


def format_bytes(value_bytes: float) -> str:
    """A size in binary units: "512 B", "384 KiB", "2.00 MiB" (`present.size`)."""
    return size(value_bytes)


def describe(summary: Summary, spread_pct: float | None = None, runs: int | None = None) -> str:
    """One honest line: median, typical range, how many samples, how reproducible.

    >>> describe(Summary(500, 9.0, 10.0, 10.5, 12.0, 40.0), spread_pct=1.2, runs=5)
    'p50 10.5 µs (p10-p90 10.0-12.0 µs, 500 samples; medians of 5 runs within 1.2%)'
    """
    text = (
        f"p50 {format_us(summary.p50_us)} (p10-p90 {summary.p10_us:.1f}-{format_us(summary.p90_us)}, "
        f"{summary.count} samples"
    )
    if spread_pct is not None and runs is not None and runs > 1:
        text += f"; medians of {runs} runs within {spread_pct:.1f}%"
    return text + ")"


__all__ = [
    "StatsError",
    "Summary",
    "describe",
    "format_bytes",
    "format_us",
    "latency_drop_pct",
    "median",
    "median_converged",
    "overhead_share_pct",
    "percentile",
    "run_spread_pct",
    "speedup",
    "summarize",
]
