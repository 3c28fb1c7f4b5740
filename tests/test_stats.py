"""Statistics: percentiles agree with numpy's default, spreads and summaries say what they mean."""
from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphlab import stats
from graphlab.stats import StatsError

finite = st.floats(min_value=0.001, max_value=1e7, allow_nan=False, allow_infinity=False)


def test_percentile_interpolates_like_numpy_linear():
    values = [10.0, 11.0, 12.0, 13.0, 50.0]
    assert stats.percentile(values, 0) == 10.0
    assert stats.percentile(values, 100) == 50.0
    assert stats.percentile(values, 50) == 12.0
    assert stats.percentile(values, 10) == pytest.approx(10.4)
    assert stats.percentile(values, 90) == pytest.approx(35.2)


@given(st.lists(finite, min_size=1, max_size=200), st.floats(min_value=0, max_value=100))
def test_percentile_matches_numpy(values, q):
    np = pytest.importorskip("numpy")
    assert stats.percentile(values, q) == pytest.approx(float(np.percentile(values, q)), rel=1e-9, abs=1e-9)


@given(st.lists(finite, min_size=1, max_size=200))
def test_summary_is_ordered(values):
    s = stats.summarize(values)
    assert s.min_us <= s.p10_us <= s.p50_us <= s.p90_us <= s.max_us
    assert s.count == len(values)
    assert s.width_us >= 0


def test_order_of_samples_does_not_matter():
    assert stats.summarize([3.0, 1.0, 2.0]) == stats.summarize([1.0, 2.0, 3.0])


@pytest.mark.parametrize("bad", [[], [1.0, math.nan], [math.inf]])
def test_bad_samples_raise_one_clear_error(bad):
    with pytest.raises(StatsError):
        stats.summarize(bad)


def test_percentile_outside_range_raises():
    with pytest.raises(StatsError, match="outside 0..100"):
        stats.percentile([1.0], 101)


def test_run_spread_is_range_over_median():
    assert stats.run_spread_pct([100.0, 102.0, 101.0]) == pytest.approx(200 / 101)
    assert stats.run_spread_pct([5.0]) == 0.0
    with pytest.raises(StatsError):
        stats.run_spread_pct([0.0, 0.0])


def test_median_converged_needs_two_chunks_and_a_still_median():
    steady = [10.0, 10.1, 9.9] * 40
    assert stats.median_converged(steady, rel_tol=0.01, chunk=50)
    assert not stats.median_converged(steady[:60], chunk=50)  # too few samples to judge
    drifting = [10.0] * 60 + [20.0] * 60
    assert not stats.median_converged(drifting, rel_tol=0.01, chunk=50)


def test_speedup_and_drop_are_consistent():
    assert stats.speedup(100.0, 50.0) == 2.0
    assert stats.latency_drop_pct(100.0, 60.0) == pytest.approx(40.0)
    assert stats.latency_drop_pct(100.0, 125.0) == pytest.approx(-25.0)  # graph slower: negative
    with pytest.raises(StatsError):
        stats.speedup(1.0, 0.0)


def test_overhead_share_is_clamped():
    assert stats.overhead_share_pct(25.0, 100.0) == pytest.approx(75.0)
    assert stats.overhead_share_pct(150.0, 100.0) == 0.0  # profiler busy time can exceed a p50


def test_formatting_picks_units():
    assert stats.format_us(8.4) == "8.40 µs"
    assert stats.format_us(312.0) == "312 µs"
    assert stats.format_us(1250.0) == "1.25 ms"
    assert stats.format_bytes(512) == "512 B"
    assert stats.format_bytes(384 * 1024) == "384 KiB"
    assert stats.format_bytes(2 * 1024**2) == "2.00 MiB"


def test_describe_is_one_honest_line():
    s = stats.Summary(500, 9.0, 10.0, 10.5, 12.0, 40.0)
    assert stats.describe(s, 1.2, 5) == "p50 10.5 µs (p10-p90 10.0-12.0 µs, 500 samples; medians of 5 runs within 1.2%)"
    assert "runs" not in stats.describe(s)
