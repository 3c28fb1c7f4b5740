"""The bucket advisor: exact (checked against brute force), compares strategies, reads sweeps, bad input."""
from __future__ import annotations

import itertools
import random

import pytest

import graphlab as gl
from graphlab.cache.advisor import CostModel, histogram, optimal_buckets, score
from graphlab.timing.results import LatencyPoint, Sweep
from graphlab.errors import GraphlabError


def brute_force(hist, cost, k):
    sizes = sorted(cost.graph_us)
    best, best_cost = (), score("x", (), hist, cost).expected_us if all(s in cost.eager_us for s in hist) else float("inf")
    for r in range(1, k + 1):
        for combo in itertools.combinations(sizes, r):
            try:
                value = score("x", combo, hist, cost).expected_us
            except GraphlabError:
                continue
            if value < best_cost - 1e-9:
                best, best_cost = combo, value
    return best, best_cost


@pytest.mark.parametrize("seed", range(25))
def test_dynamic_programme_matches_brute_force(seed):
    rng = random.Random(seed)
    m = rng.randint(3, 9)
    graph = {s: 10 + 3 * s + rng.random() * 5 for s in range(1, m + 1)}
    eager = {s: 40 + 2 * s + rng.random() * 20 for s in range(1, m + 1)} if seed % 2 else {}
    hist = {s: rng.randint(0, 9) for s in range(1, m + 1)}
    hist = {s: n for s, n in hist.items() if n} or {1: 1}
    cost = CostModel(graph, eager)
    k = rng.randint(1, 4)
    chosen = optimal_buckets(hist, cost, k)
    want, want_cost = brute_force(hist, cost, k)
    got_cost = score("x", chosen, hist, cost).expected_us
    assert got_cost == pytest.approx(want_cost), (chosen, want)
    assert len(chosen) <= k


def test_one_bucket_per_size_is_free_and_the_advisor_finds_the_knee():
    # graph latency flat up to 8, then linear: the best two buckets for sizes 1..8 and 30..32 are 8 and 32
    graph = {s: 100.0 if s <= 8 else 100.0 + 10 * (s - 8) for s in range(1, 33)}
    hist = {**{s: 10 for s in range(1, 9)}, 30: 5, 31: 5, 32: 5}
    advice = gl.advise_buckets(hist, graph, max_graphs=2)
    assert advice.buckets == (8, 32)
    per_size = advice.strategy("one graph per size")
    assert per_size.graphs == len(hist) and per_size.pad_waste == 0.0
    assert advice.chosen.expected_us <= advice.strategy("powers of two").expected_us + 1e-9


def test_eager_wins_the_tail_where_a_graph_saves_nothing():
    graph = {s: 50.0 + s for s in range(1, 65)}
    eager = {s: 200.0 if s <= 32 else 40.0 + s for s in range(1, 65)}  # eager faster above 32
    hist = {1: 50, 4: 30, 64: 20}
    advice = gl.advise_buckets(hist, _sweep(graph, eager), max_graphs=4)
    assert max(advice.buckets) < 64 and advice.chosen.eager_share == pytest.approx(0.2)
    assert {"advisor (k=4)", "one graph per size", "powers of two", "vLLM ladder", "eager"} == {
        s.name for s in advice.strategies}


def _sweep(graph, eager, memory=None):
    points = []
    for b in sorted(graph):
        points.append(LatencyPoint(batch_size=b, mode="eager", p10_us=eager[b], p50_us=eager[b], p90_us=eager[b]))
        points.append(LatencyPoint(batch_size=b, mode="graph", p10_us=graph[b], p50_us=graph[b], p90_us=graph[b],
                                   capture_ms=1.0 + b / 10, pool_bytes=(memory or {}).get(b, 2**20 * b),
                                   graph_exec_bytes=2**16))
    return Sweep(model="toy", points=tuple(points))


def test_sweep_gives_memory_and_capture_time_and_the_budget_limits_the_graphs():
    graph = {s: 10.0 + s for s in range(1, 17)}
    eager = {s: 100.0 + s for s in range(1, 17)}
    hist = {s: 1 for s in range(1, 17)}
    sweep = _sweep(graph, eager)
    free = gl.advise_buckets(hist, sweep, max_graphs=8)
    assert free.chosen.pool_bytes == 16 * 2**20 and free.chosen.capture_ms == pytest.approx(
        sum(1.0 + b / 10 for b in free.buckets))
    tight = gl.advise_buckets(hist, sweep, max_graphs=8, memory_budget_bytes=8 * 2**20 + 3 * 2**16)
    assert (tight.chosen.pool_bytes or 0) + (tight.chosen.exec_bytes or 0) <= 8 * 2**20 + 3 * 2**16
    assert tight.chosen.eager_share > 0


def test_advice_round_trips_and_feeds_a_graph_cache():
    advice = gl.advise_buckets([1, 2, 3, 5, 8], {s: float(s) for s in range(1, 9)}, max_graphs=3)
    again = gl.BucketAdvice.from_dict(advice.to_dict())
    assert again.buckets == advice.buckets and again.strategies == advice.strategies
    cache = gl.GraphCache(lambda x: x, buckets=advice, backend="eager")
    assert list(cache.tables[0].buckets) == list(advice.buckets)
    assert "advisor (k=3)" in str(advice.table()) and "<table" in advice._repr_html_()


def test_bad_input_is_refused_clearly():
    with pytest.raises(GraphlabError, match="at least one observed request size"):
        gl.advise_buckets([], {1: 1.0})
    with pytest.raises(GraphlabError, match="sizes must be >= 1"):
        histogram([0, 3])
    with pytest.raises(GraphlabError, match="max_graphs must be at least 1"):
        gl.advise_buckets([1], {1: 1.0}, max_graphs=0)
    with pytest.raises(GraphlabError, match="up to 8 with no eager latency"):
        gl.advise_buckets([8], {1: 1.0, 4: 2.0})
    with pytest.raises(GraphlabError, match="latency must be a Sweep"):
        gl.advise_buckets([1], "fast")
    with pytest.raises(GraphlabError, match="needs memory figures"):
        gl.advise_buckets([1], {1: 1.0}, memory_budget_bytes=10)


def test_the_figure_shows_the_curve_the_buckets_and_the_padding():
    graph = {s: 100.0 if s <= 8 else 100.0 + 10 * (s - 8) for s in range(1, 33)}
    advice = gl.advise_buckets({3: 4, 8: 2, 30: 1}, graph, max_graphs=2)
    fig = gl.plot_buckets(advice)
    names = [t.name for t in fig.data]
    assert names == ["graph latency", "chosen buckets", "padding paid (size → its bucket)", "requests"]
    assert list(fig.data[1].x) == list(advice.buckets)
    assert advice.buckets == (8, 30)  # the largest request is 30: no need for 32
    assert [x for x in fig.data[2].x if x is not None] == [3, 8, 8, 8, 30, 30]


def test_a_latency_table_gives_eager_and_memory_too():
    table = {"graph_us": {"1": 10.0, "2": 11.0, "4": 30.0}, "eager_us": {"1": 50.0, "2": 50.0, "4": 52.0},
             "pool_bytes": {"1": 2**20, "2": 2**20, "4": 2**21}, "exec_bytes": {"1": 0, "2": 0, "4": 0},
             "capture_ms": {"1": 1.0, "2": 1.0, "4": 2.0}}
    advice = gl.advise_buckets([1, 2, 4, 4], table, max_graphs=2)
    assert advice.buckets == (2, 4) and advice.chosen.pool_bytes == 2**21 and advice.chosen.capture_ms == 3.0
    assert "eager" in {s.name for s in advice.strategies}
