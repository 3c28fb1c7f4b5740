"""`graphlab repro`: the now-vs-recorded comparison (pure), and the command on CPU.

Sweeps here are hand-made test inputs or CPU runs of the paired method with a stand-in for
torch.cuda (tests/test_timing_cpu.py); no number is a measurement.
"""
from __future__ import annotations

import json
import types

import pytest

from graphlab.timing.host_modes import HostTarget
from graphlab.timing.repro_report import ReproReport, compare_sweeps, recorded_target
from graphlab.timing.results import LatencyPoint, Sweep
from graphlab.errors import ResultsError


def _point(b, mode, blocks, host=()):
    s = sorted(blocks)
    return LatencyPoint(batch_size=b, mode=mode, p10_us=s[0], p50_us=s[len(s) // 2], p90_us=s[-1], runs=len(blocks),
                        block_p50_us=tuple(blocks), block_start_ms=tuple(float(i) for i in range(len(blocks))),
                        block_host_us=tuple(host))


def _sweep(eager_scale=1.0, graph_scale=1.0, slow_share=0.5):
    n = 10
    slow = int(n * slow_share)
    points = []
    for b, e_fast, e_slow, g in ((1, 700.0, 1200.0, 185.0), (8, 720.0, 1210.0, 190.0)):
        eager = [e_slow * eager_scale] * slow + [e_fast * eager_scale] * (n - slow)
        host = [125.0] * slow + [69.0] * (n - slow)
        points += [_point(b, "eager", eager, host), _point(b, "graph", [g * graph_scale] * n, host)]
    return Sweep("gpt", tuple(points), {"method": "paired blocks", "pairs": n})


def test_the_same_sweep_reproduces_itself():
    report = compare_sweeps(_sweep(), _sweep())
    assert isinstance(report, ReproReport) and [r.batch_size for r in report.rows] == [1, 8]
    assert all(r.graph_ratio == 1.0 and r.speedup_ratio == 1.0 for r in report.rows)
    assert report.goals_met() == {"graph_p50_within_3pct": True, "graph_wait_within_3pct": None,
                                  "graph_p50_in_fastest_mode_within_3pct": True,
                                  "paired_speedup_within_10pct": True, "fastest_mode_speedup_within_10pct": True,
                                  # 5 pairs at the fast host speed, fewer than the 8 a comparison needs
                                  "graph_p50_at_recorded_host_speed_within_3pct": None,
                                  "speedup_at_recorded_host_speed_within_10pct": None}
    # (4 of them count: the first fast pair follows a slow block and may straddle the switch)
    five = compare_sweeps(_sweep(), _sweep(), HostTarget("host", 69.0, min_pairs=4)).goals_met()
    assert five["graph_p50_at_recorded_host_speed_within_3pct"] and five["speedup_at_recorded_host_speed_within_10pct"]
    text = report.table()
    assert "now vs recorded" in text and "!" not in text.split("\n", 3)[3].split("  ! =")[0]
    assert "host speed now:      2 modes" in text


def _split_sweep(submit_scale=1.0, wait_scale=1.0, eager_scale=1.0):
    """A small host-bound graph: each graph call = submit (host work) + wait (GPU); eager all host."""
    n, points = 10, []
    for b, submit, wait, eager in ((1, 11.0, 16.5, 72.0), (8, 12.0, 18.0, 73.0)):
        graph = [submit * submit_scale + wait * wait_scale] * n
        eager_blocks = [eager * eager_scale] * n
        host = [69.0] * n
        points += [_point(b, "eager", eager_blocks, host),
                   LatencyPoint.from_dict({**_point(b, "graph", graph, host).to_dict(),
                                           "block_submit_us": [submit * submit_scale] * n})]
    return Sweep("mlp", tuple(points), {"method": "paired blocks", "pairs": n})


def test_the_graph_call_is_compared_in_its_two_parts():
    from graphlab.timing.repro_report import check_verdict

    # the host ran 8% slower in the re-run: eager and the graph's submit part moved, its wait part did not
    report = compare_sweeps(_split_sweep(submit_scale=1.08, eager_scale=1.08), _split_sweep())
    row = report.rows[0]
    assert row.graph_submit_ratio == pytest.approx(1.08) and row.graph_wait_ratio == pytest.approx(1.0)
    assert row.graph_ratio == pytest.approx((11 * 1.08 + 16.5) / 27.5)  # 3.2%: over the goal as a whole
    goals = report.goals_met()
    assert goals["graph_wait_within_3pct"] is True and goals["graph_p50_within_3pct"] is False
    assert check_verdict(goals) == "passed"
    table = report.split_table()
    assert "submit (host)" in table and "wait (GPU)" in table and "!" not in table
    assert report.to_dict()["rows"][0]["graph_wait_within_goal"] is True
    # the GPU part itself slower by 5%: the check fails and says which goal
    slow_gpu = compare_sweeps(_split_sweep(wait_scale=1.05), _split_sweep())
    assert slow_gpu.goals_met()["graph_wait_within_3pct"] is False
    assert check_verdict(slow_gpu.goals_met()) == "failed: graph wait (GPU part) not within 3%"
    assert "!" in slow_gpu.split_table()


def test_a_recording_without_the_split_is_judged_on_graph_p50_at_its_host_speed():
    from graphlab.timing.repro_report import check_verdict

    old = _split_sweep()
    old = Sweep(old.model, tuple(LatencyPoint.from_dict({**p.to_dict(), "block_submit_us": []}) for p in old.points),
                old.conditions)  # recorded before the split existed
    report = compare_sweeps(_split_sweep(submit_scale=1.08, eager_scale=1.08), old)
    assert report.rows[0].graph_wait_ratio is None and "no submit/wait split" in report.split_table()
    goals = report.goals_met()
    assert goals["graph_wait_within_3pct"] is None and goals["graph_p50_at_recorded_host_speed_within_3pct"] is False
    assert check_verdict(goals) == "failed: graph p50 at the recorded host speed not within 3%"
    # the speedup is not judged: it moves with the host (the verdict explains it instead)
    assert check_verdict({"graph_p50_at_recorded_host_speed_within_3pct": True,
                          "speedup_at_recorded_host_speed_within_10pct": False}) == "passed"


def test_submit_and_wait_of_a_point():
    p = LatencyPoint.from_dict({**_point(1, "graph", [27.0, 28.0, 29.0]).to_dict(), "block_submit_us": [11.0, 12.0, 11.5]})
    assert p.submit_p50_us == 11.5 and p.wait_p50_us == 16.0  # median of 16, 16, 17.5
    assert LatencyPoint.from_dict(p.to_dict()).block_submit_us == (11.0, 12.0, 11.5)
    assert _point(1, "graph", [27.0, 28.0]).submit_p50_us is None
    torn = LatencyPoint.from_dict({**_point(1, "graph", [27.0, 28.0]).to_dict(), "block_submit_us": [11.0]})
    assert torn.submit_p50_us is None and torn.wait_p50_us is None  # one per block, or none at all


def test_runs_are_compared_at_the_recordings_host_speed():
    # recorded: 80% slow (host reading 125 µs), 20% fast (69 µs); now: 20% slow. The target is the recording's
    # fastest host level; only pairs whose two blocks read within ±10% of it count, in both runs.
    report = compare_sweeps(_sweep(slow_share=0.2), _sweep(slow_share=0.8))
    assert report.target == HostTarget("host", 69.0)
    row = report.rows[0]
    assert row.speedup_ratio < 0.7  # all pairs: two different machine states
    # 8 and 2 pairs read fast, less the first of each, which follows a slow block (it may straddle the switch)
    assert row.matched_now.pairs == 7 and row.matched_recorded.pairs == 1
    # one recorded pair is fewer than the 8 a comparison needs: not compared, and the table says so
    assert not row.matched_enough and row.matched_speedup_ratio is None and row.matched_graph_ratio is None
    assert report.goals_met()["speedup_at_recorded_host_speed_within_10pct"] is None
    assert "fewer than 8 pairs: not compared" in report.matched_table()
    report = compare_sweeps(_sweep(slow_share=0.2), _sweep(slow_share=0.8), HostTarget("host", 69.0, min_pairs=1))
    row = report.rows[0]
    assert row.matched_speedup_ratio == pytest.approx(1.0) and row.matched_graph_ratio == pytest.approx(1.0)
    goals = report.goals_met()
    assert goals["speedup_at_recorded_host_speed_within_10pct"] and not goals["paired_speedup_within_10pct"]
    table = report.matched_table()
    assert "host reading 69.0 µs ±10%" in table and "never ran" not in table and "not compared" not in table


def test_a_rerun_that_never_reached_the_recorded_host_speed_says_so():
    report = compare_sweeps(_sweep(slow_share=1.0), _sweep(slow_share=0.5))
    row = report.rows[0]
    assert row.matched_now.pairs == 0 and row.matched_now.speedup is None and row.matched_speedup_ratio is None
    assert report.goals_met()["speedup_at_recorded_host_speed_within_10pct"] is None
    assert "never ran long enough at the recording's host speed" in report.matched_table()
    assert report.to_dict()["rows"][0]["matched_now"]["pairs"] == 0


def test_the_dispatcher_reading_is_the_target_where_the_recording_has_it():
    base = _sweep()
    points = tuple(LatencyPoint.from_dict({**p.to_dict(), "block_dispatch_us": [140.0] * len(p.block_p50_us)})
                   for p in base.points)
    with_dispatch = Sweep(base.model, points, base.conditions)
    assert recorded_target(with_dispatch) == HostTarget("dispatch", 140.0)
    assert recorded_target(base) == HostTarget("host", 69.0)
    assert recorded_target(Sweep("x", tuple(_point(1, m, [1.0, 2.0]) for m in ("eager", "graph")), {})) is None


def test_a_run_that_spent_longer_in_the_slow_state_moves_the_median_but_not_the_fastest_mode():
    # recorded: 30% of the time in the slow state; now: 70%. The graph barely moves, eager does.
    report = compare_sweeps(_sweep(slow_share=0.7, graph_scale=1.01), _sweep(slow_share=0.3))
    row = report.rows[0]
    assert row.graph_ratio == pytest.approx(1.01)
    assert row.speedup_ratio > 1.5  # the all-pairs median went from the fast state's speedup to the slow one's
    assert row.fastest_speedup_ratio == pytest.approx(1 / 1.01)
    assert row.graph_fastest_ratio == pytest.approx(1.01)
    goals = report.goals_met()
    assert goals["graph_p50_within_3pct"] and not goals["paired_speedup_within_10pct"]
    assert goals["fastest_mode_speedup_within_10pct"]
    assert "!" in report.table()


def test_a_graph_that_got_slower_misses_its_goal():
    report = compare_sweeps(_sweep(graph_scale=1.05), _sweep())
    assert report.goals_met()["graph_p50_within_3pct"] is False


def test_an_old_recording_is_compared_on_medians():
    row = {"batch_size": 1, "mode": "eager", "p10_us": 700.0, "p50_us": 800.0, "p90_us": 900.0}
    old = Sweep("gpt", (LatencyPoint.from_dict(row), LatencyPoint.from_dict({**row, "mode": "graph", "p10_us": 190.0,
                                                                             "p50_us": 200.0, "p90_us": 210.0})))
    report = compare_sweeps(_sweep(), old)
    r = report.rows[0]
    assert r.speedup_basis_recorded == "medians" and r.speedup_recorded == pytest.approx(4.0)
    assert r.fastest_speedup_recorded is None and r.fastest_speedup_ratio is None and r.modes_recorded is None
    assert r.graph_fastest_recorded_us is None and r.graph_fastest_ratio is None
    assert report.goals_met()["fastest_mode_speedup_within_10pct"] is None
    assert "not read (recorded before the paired method)" in report.table()
    data = json.loads(json.dumps(report.to_dict()))
    assert data["rows"][0]["fastest_speedup_within_goal"] is None and data["schema"] == "graphlab.repro/1"


def test_nothing_in_common_is_an_error():
    other = Sweep("gpt", tuple(p for p in _sweep().points if p.batch_size == 8))
    only1 = Sweep("gpt", tuple(p for p in _sweep().points if p.batch_size == 1))
    with pytest.raises(ResultsError, match="nothing to compare"):
        compare_sweeps(other, only1)


def test_sweep_arguments_carry_the_recorded_conditions():
    from graphlab.timing.repro import sweep_arguments

    assert sweep_arguments({"method": "paired blocks", "pairs": 7, "block_ms": 10.0, "warmup": 5,
                            "warmup_max_ms": 30.0, "repetitions": 12}) == {
        "pairs": 7, "block_ms": 10.0, "warmup_calls": 5, "warmup_max_ms": 30.0, "repetitions": 12}
    assert sweep_arguments({"runs": 5}) == {}


def test_repro_without_a_gpu_is_one_line_and_nonzero(capsys):
    from graphlab.cli import main

    pytest.importorskip("torch")
    code = main(["repro", "gpt"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "needs a CUDA GPU" in err


@pytest.fixture
def cpu_repro(monkeypatch, tmp_path):
    """A recorded paired sweep of a tiny stand-in zoo model, and a stand-in GPU to re-run it on."""
    torch = pytest.importorskip("torch")
    from test_timing_cpu import install_fake_gpu

    import graphlab.zoo
    from graphlab.recordings import write_recording

    fake = install_fake_gpu(monkeypatch).torch
    fake.cuda.is_initialized = lambda: False
    net = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()).eval()
    stand_in = types.SimpleNamespace(
        name="mlp", needs=(), available=lambda: True, build=lambda device="cuda": net,
        make_inputs=lambda b, device="cuda", seed=0: (
            torch.randn(b, 8, generator=torch.Generator().manual_seed(seed + 1)),))
    monkeypatch.setitem(graphlab.zoo.ZOO, "mlp", stand_in)
    from graphlab.timing.sweep import sweep

    from graphlab.timing.options import SweepOptions

    options = SweepOptions(pairs=4, repetitions=3, warmup_calls=2, warmup_max_ms=0.0, profile=False, check_weights=False)
    recorded = sweep(net, lambda b, seed=0: stand_in.make_inputs(b, seed=seed), [1, 2], name="mlp", options=options,
                     progress=False)
    provenance = {"gpu": "Test GPU", "driver": "1", "torch": "9.9", "cuda": "1", "graphlab_version": "0",
                  "git_commit": "x", "command": "test", "date": "2026-01-01T00:00:00Z"}
    write_recording(tmp_path / "test-gpu" / "mlp", name="mlp", description="", provenance=provenance, graphs={},
                    results={"sweep": recorded.to_dict()})
    monkeypatch.setenv("GRAPHLAB_RECORDINGS", str(tmp_path))
    return recorded


def test_repro_reruns_with_the_recorded_conditions(cpu_repro, tmp_path, capsys):
    from graphlab.cli import main

    out = tmp_path / "repro.json"
    assert main(["repro", "mlp", "--json", str(out), "--quiet", "--max-extra-s", "2"]) == 0
    printed = capsys.readouterr().out
    assert "mlp: now vs recorded" in printed and "host speed modes seen" in printed
    assert "at the recording's host speed (dispatch reading" in printed
    data = json.loads(out.read_text())
    assert data["target"]["reading"] == "dispatch" and data["target"]["level_us"] > 0
    assert data["sweep_now"]["conditions"]["host_target"]["max_extra_s"] == 2.0
    assert data["sweep_now"]["conditions"]["rounds"] >= 4
    now = Sweep.from_dict(data["sweep_now"])
    assert now.batch_sizes == [1, 2] and now.conditions["pairs"] == 4 and now.conditions["repetitions"] == 3
    assert now.conditions["repro_of"] == "test-gpu/mlp/sweep" and now.conditions["fresh_process"] is True
    assert sorted(now.conditions["carried_from_recording"]) == ["block_ms", "pairs", "repetitions", "warmup",
                                                                  "warmup_max_ms"]
    assert [r["batch_size"] for r in data["rows"]] == [1, 2]


def test_repro_refuses_a_recording_of_a_model_outside_the_zoo(cpu_repro, tmp_path):
    from graphlab.recordings import write_recording
    from graphlab.errors import RecordingError
    from graphlab.timing.repro import repro

    provenance = {"gpu": "Test GPU", "driver": "1", "torch": "9.9", "cuda": "1", "graphlab_version": "0",
                  "git_commit": "x", "command": "test", "date": "2026-01-01T00:00:00Z"}
    mine = Sweep("MyNet", cpu_repro.points, cpu_repro.conditions)
    write_recording(tmp_path / "test-gpu" / "mine", name="mine", description="", provenance=provenance, graphs={},
                    results={"sweep": mine.to_dict()})
    with pytest.raises(RecordingError, match="not a zoo model"):
        repro("mine", progress=False)


def _host_sweep(k=1.0, eager_scale=1.0, wait_scale=1.0, model="gpt"):
    """A GPU-bound graph (submit 15 µs + wait 185 µs) and a host-bound eager call (all submit), with a
    dispatcher reading of 77 µs x k after every block: a host k times as slow as the recording's."""
    n, points = 10, []
    for b, eager in ((1, 700.0), (16, 760.0), (64, 1500.0)):
        reading = [77.0 * k] * n
        e = [eager * eager_scale] * n
        g = [15.0 * k + 185.0 * wait_scale] * n
        points += [LatencyPoint.from_dict({**_point(b, "eager", e).to_dict(), "block_submit_us": [v - 5.0 for v in e],
                                           "block_dispatch_us": reading}),
                   LatencyPoint.from_dict({**_point(b, "graph", g).to_dict(), "block_submit_us": [15.0 * k] * n,
                                           "block_dispatch_us": reading})]
    return Sweep(model, tuple(points), {"method": "paired blocks", "pairs": n})


def test_a_faster_host_gets_a_verdict_and_its_eager_and_speedup_are_predicted():
    """The gpt case of issue 22: dispatcher reading 63 µs vs 77 recorded (0.82x); eager came back at 0.76-0.79x,
    the GPU part within 1.5%. The verdict passes on the GPU part and predicts eager from the reading."""
    from graphlab.timing.repro_report import host_ratio

    now, recorded = _host_sweep(k=63 / 77, eager_scale=0.78), _host_sweep()
    k, reading = host_ratio(now, recorded, 1)
    assert reading == "dispatch" and k == pytest.approx(63 / 77)
    report = compare_sweeps(now, recorded)
    row = report.rows[0]
    assert row.eager_predicted_us == pytest.approx(695.0 * 63 / 77 + 5.0)  # submit x k + wait
    assert row.graph_predicted_us == pytest.approx(15.0 * 63 / 77 + 185.0)
    assert row.eager_vs_predicted == pytest.approx(700 * 0.78 / (695 * 63 / 77 + 5), rel=1e-6)
    assert abs(row.speedup_vs_predicted - 1.0) < 0.10
    verdict = report.verdict()
    assert verdict.passed and "graph wait (GPU part) came back within 3%" in verdict.judged
    text = str(verdict)
    assert "host reading now / recorded 0.82-0.82" in text and "at batch <= 16 (2/2 within 10%)" in text
    assert "not comparable" not in text
    assert "pred" in report.prediction_table() and report.to_dict()["verdict"]["status"] == "passed"


def test_a_slower_host_passes_but_a_slower_gpu_fails():
    """The resnet18 case: reading 110 vs 73 (1.51x), eager 1.47-1.53x, graph p50 1.007-1.027: passed. The same host
    with the GPU part 5% slower: failed, naming the batch sizes."""
    report = compare_sweeps(_host_sweep(k=1.51, eager_scale=1.50), _host_sweep())
    assert report.verdict().passed
    assert all(abs(r.eager_vs_predicted - 1.0) < 0.10 for r in report.rows if r.batch_size <= 16)
    slow = compare_sweeps(_host_sweep(k=1.51, eager_scale=1.50, wait_scale=1.05), _host_sweep()).verdict()
    assert slow.status == "failed" and "batch 1 1.050" in slow.judged and "batch 64" in slow.judged


def test_without_readings_the_verdict_still_judges_and_says_why_nothing_is_predicted():
    report = compare_sweeps(_split_sweep(submit_scale=1.08, eager_scale=1.08), _split_sweep())
    assert all(r.host_ratio == pytest.approx(1.0) for r in report.rows)  # the pure-Python reading, 69 both times
    bare = _split_sweep()
    bare = Sweep(bare.model, tuple(LatencyPoint.from_dict({**p.to_dict(), "block_host_us": []}) for p in bare.points),
                 bare.conditions)
    verdict = compare_sweeps(bare, bare).verdict()
    assert verdict.passed and "not predicted" in verdict.explained[0]
