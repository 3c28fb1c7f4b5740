"""GPU: a short paired sweep gives sane numbers; it captures each batch size once; kernel counts agree.

Timing *targets* live in bench/ and scripts/gpu_repro_check.sh; these tests only assert what must hold
on any CUDA GPU: the numbers are positive and ordered, the blocks alternate and are all kept, the
reported capture cost is that of the graph that was timed, the MLP at batch size 1 is faster as a
graph than eagerly (it is launch-bound: five small kernels), and profiler and graph agree on the
kernels. About 15 s on an H200.
"""
from __future__ import annotations

import json

import pytest

from graphlab.timing.options import SweepOptions
from graphlab.timing.results import Sweep, Timeline

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def mlp():
    from graphlab.zoo import get_model

    zm = get_model("mlp")
    return zm.build(), zm.make_inputs


@pytest.fixture(scope="module")
def captured_by_sweep():
    """Every CapturedGraph made while the module's sweep ran (to check it captured each batch size once)."""
    return []


@pytest.fixture(scope="module")
def mlp_sweep(mlp, captured_by_sweep):
    import graphlab.timing.sweep as sweep_module
    from graphlab.timing.sweep import sweep

    real = sweep_module.capture  # gl.capture, as the sweep calls it

    def counting(*args, **kwargs):
        cg = real(*args, **kwargs)
        captured_by_sweep.append((cg.name, cg.capture_ms, cg.pool_bytes))
        return cg

    model, make_inputs = mlp
    sweep_module.capture = counting
    try:
        return sweep(model, make_inputs, [1, 8], name="mlp", options=SweepOptions(pairs=6, block_ms=10.0),
                     progress=False)
    finally:
        sweep_module.capture = real


def test_sweep_numbers_are_sane(mlp_sweep):
    assert mlp_sweep.batch_sizes == [1, 8]
    assert len(mlp_sweep) == 4
    for p in mlp_sweep:
        assert 0 < p.p10_us <= p.p50_us <= p.p90_us < 1_000_000
        assert 0 < p.gpu_p50_us <= 1.05 * p.p50_us  # events on every other call, inside its host-timed window
        assert p.runs == 6 and len(p.block_p50_us) == 6 and len(p.block_start_ms) == 6
        assert p.repetitions >= 3 and p.warmup_calls >= 20
        assert p.spread_pct is not None and p.spread_pct >= 0
        assert p.kernel_count and p.kernel_count >= 3
        assert p.gpu_busy_us and 0 < p.gpu_busy_us < p.p50_us
        assert 0 <= p.launch_overhead_pct <= 100
        assert len(p.block_gpu_mhz) in (0, 6) and len(p.block_cpu_mhz) in (0, 6)
    graph = mlp_sweep.point(1, "graph")
    assert graph.capture_ms and graph.capture_ms > 0 and graph.instantiate_ms is not None
    assert graph.pool_bytes is not None and graph.pool_bytes >= 0


def test_sweep_captures_each_batch_size_once_and_reports_that_graphs_cost(mlp_sweep, captured_by_sweep):
    timed = [c for c in captured_by_sweep if c[0].startswith("mlp-b")]
    assert [c[0] for c in timed] == ["mlp-b1", "mlp-b8"]  # one capture per batch size, no second path
    for (_, capture_ms, pool_bytes), batch_size in zip(timed, (1, 8)):
        point = mlp_sweep.point(batch_size, "graph")
        assert point.capture_ms == capture_ms and point.pool_bytes == pool_bytes


def test_pairs_alternate_and_the_modes_are_reported(mlp_sweep):
    eager, graph = mlp_sweep.point(1, "eager"), mlp_sweep.point(1, "graph")
    assert eager.block_start_ms[0] < graph.block_start_ms[0] and graph.block_start_ms[1] < eager.block_start_ms[1]
    pairs = mlp_sweep.paired(1)
    assert pairs.pairs == 6 and pairs.p10 <= pairs.p50 <= pairs.p90
    assert eager.host_modes.count >= 1 and eager.fastest_mode_p50_us <= max(eager.block_p50_us)
    report = mlp_sweep.modes_report()
    assert report.rows[0]["batch"] == 1 and "host speed modes" in str(report)
    assert mlp_sweep.conditions["method"] == "paired blocks" and mlp_sweep.conditions["pairs"] == 6


def test_graph_beats_eager_at_batch_1_for_the_mlp(mlp_sweep):
    assert mlp_sweep.point(1, "graph").p50_us < mlp_sweep.point(1, "eager").p50_us
    assert mlp_sweep.speedup(1) > 1.0 and mlp_sweep.paired(1).p10 > 1.0


def test_sweep_round_trips_through_json(mlp_sweep):
    again = Sweep.from_dict(json.loads(json.dumps(mlp_sweep.to_dict())))
    assert again == mlp_sweep
    assert again.conditions["gpu"] and again.weight_update is not None


def test_inplace_weight_copy_reaches_the_graph_but_rebinding_does_not(mlp_sweep):
    probe = mlp_sweep.weight_update
    assert probe["output_change_rel"] > 10 * probe["tolerance_rel"]  # the new weights matter
    assert probe["inplace_copy"]["replay_follows_new_weights"] is True
    assert probe["rebind_parameter"]["replay_follows_new_weights"] is False
    assert probe["rebind_parameter"]["replay_vs_old_weights_rel"] <= probe["tolerance_rel"]


def test_kernel_counts_match_the_captured_graph(mlp):
    from graphlab.capture.api import capture
    from graphlab.timing.timeline import kernel_count, profile_call

    import torch

    model, make_inputs = mlp
    (x,) = make_inputs(8)
    with torch.no_grad():
        for _ in range(3):
            model(x)
        cg = capture(model, x)
        nodes = len(cg.graph.kernels())
        eager = profile_call(lambda: model(x), "eager")
        replay = profile_call(lambda: cg(x), "graph")
    assert nodes >= 3
    assert kernel_count(eager) == nodes
    _assert_replay_runs_the_graph(replay, nodes)


def _assert_replay_runs_the_graph(trace, nodes):
    """The replay ran the graph's kernels; some torch versions add two RNG-state fill kernels before it
    (CUDAGraph::replay's generator prologue), which are real work of the call, so they may appear."""
    from graphlab.timing.timeline import is_copy, kernel_count

    extra = kernel_count(trace) - nodes
    names = [k.name for k in trace.kernels if not is_copy(k.name)]
    assert extra in (0, 2), names
    if extra:
        assert sum("fill" in n.lower() for n in names) >= 2, names


def test_timeline_shows_fewer_launches_and_less_idle_time_for_the_graph(mlp):
    from graphlab.timing.timeline import kernel_count, record_timeline

    model, make_inputs = mlp
    tl = record_timeline(model, make_inputs(1), name="mlp")
    assert Timeline.from_dict(json.loads(tl.to_json())) == tl
    assert kernel_count(tl.eager) >= 3
    _assert_replay_runs_the_graph(tl.graph, kernel_count(tl.eager))
    assert any("GraphLaunch" in s.name for s in tl.graph.launches)
    assert len(tl.eager.launches) > len(tl.graph.launches)
    assert tl.graph.idle_us < tl.eager.idle_us
    assert tl.eager.busy_us > 0 and tl.graph.host_us > 0


def test_zero_inputs_are_refused(mlp):
    import torch

    from graphlab.timing.sweep import TimingError, sweep

    model, _ = mlp
    with pytest.raises(TimingError, match="all-zero"):
        sweep(model, lambda b: torch.zeros(b, 256, device="cuda"), [1], progress=False,
              options=SweepOptions(profile=False))
