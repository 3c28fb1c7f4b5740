"""The paired timing method on CPU: block timer, warm-up, pair order, and the sweep's bookkeeping.

A stand-in for `torch.cuda` (events that report a fixed time, a synchronize that does nothing), put in place
of the timing modules' `torch`, and one for `gl.capture` (a "graph" that calls the model) let the whole sweep
run without a GPU; the timings it produces are of CPU calls and only checked for structure, never for values.
`install_fake_gpu` sets both up (tests/test_dense.py and tests/test_repro.py use it too).
"""
from __future__ import annotations

import gc
import json
import types

import pytest

torch = pytest.importorskip("torch")

import graphlab.timing.repro as repro_module  # noqa: E402
import graphlab.timing.sweep as sweep_module  # noqa: E402
from graphlab.errors import TimingError  # noqa: E402
from graphlab.timing import blocks, machine, timeline, weights  # noqa: E402
from graphlab.timing.blocks import BlockTimer, calls_for, prepare_pair, time_pairs, time_rounds, warm_up  # noqa: E402
from graphlab.timing.options import SweepOptions  # noqa: E402
from graphlab.timing.results import Sweep  # noqa: E402

#: the timing modules that use torch: each gets the stand-in as its `torch`
from graphlab.timing import sync as sync_module  # noqa: E402

TORCH_MODULES = (blocks, machine, sweep_module, timeline, weights, repro_module, sync_module)


class FakeEvent:
    made = 0

    def __init__(self, enable_timing: bool = False):
        FakeEvent.made += 1

    def record(self, stream=None):
        pass

    def elapsed_time(self, other):
        return 0.004  # ms


class FakeCuda:
    Event = FakeEvent

    def __init__(self):
        self.syncs = 0

    def synchronize(self):
        self.syncs += 1

    def current_device(self):
        return 0

    def empty_cache(self):
        pass


class FakeTorch:
    """Real CPU torch for tensors, a stand-in for torch.cuda."""

    def __init__(self):
        self.cuda = FakeCuda()

    def __getattr__(self, name):
        return getattr(torch, name)


class FakeGraph:
    def __init__(self, fn, *inputs, **kw):
        self.fn, self.resets = fn, 0
        self.capture_ms, self.instantiate_ms = 1.5, 0.25
        self.pool_bytes, self.peak_bytes, self.exec_bytes = 2 << 20, 1 << 20, 0

    def __call__(self, *xs):
        return self.fn(*xs)

    @property
    def graph(self):
        raise RuntimeError("no DOT export on CPU")

    def reset(self):
        self.resets += 1


#: one-call blocks after a one-call warm-up (the scheduling tests count blocks, not time)
ONE_CALL = SweepOptions(repetitions=1, warmup_calls=1, warmup_max_ms=0.0)


def install_fake_torch(monkeypatch) -> FakeTorch:
    """A `FakeTorch` as the `torch` of every timing module that uses torch; returns it."""
    fake = FakeTorch()
    for module in TORCH_MODULES:
        monkeypatch.setattr(module, "torch", fake)
    return fake


def install_fake_gpu(monkeypatch) -> types.SimpleNamespace:
    """`install_fake_torch`, a CUDA check that passes, and `FakeGraph` for every capture the timing modules make.

    Returns a namespace: `torch` (the stand-in) and `graphs` (every FakeGraph made, in order).
    """
    fake = install_fake_torch(monkeypatch)
    graphs: list[FakeGraph] = []

    def capture(fn, *inputs, **kw):
        graphs.append(FakeGraph(fn, *inputs, **kw))
        return graphs[-1]

    for module in (sweep_module, timeline, repro_module):
        monkeypatch.setattr(module, "require_cuda", lambda what: fake)
    for module in (sweep_module, timeline, weights):
        monkeypatch.setattr(module, "capture", capture)
    return types.SimpleNamespace(torch=fake, graphs=graphs)


@pytest.fixture
def fake_torch(monkeypatch):
    return install_fake_torch(monkeypatch)


def test_block_timer_rotates_inputs_and_puts_events_on_every_other_call(fake_torch):
    seen = []
    events: list = []
    timer = BlockTimer(lambda xs: seen.append(xs[0]), [("a",), ("b",), ("c",)], max_calls=10, events=events)
    wall, gpu, submit = timer.block(5)
    assert seen == ["a", "b", "c", "a", "b"]
    assert len(wall) == 3 and gpu == [4.0, 4.0]  # calls 0, 2, 4 wall-timed; 1 and 3 carry events
    assert len(submit) == 3 and all(0 <= s <= w for s, w in zip(submit, wall))  # host part of the same calls
    assert len(events) == 2
    wall, gpu, _ = timer.block(2, gpu_time=False, lead_in=1)
    assert seen[5:] == ["c", "a", "b"] and len(wall) == 2 and gpu == []  # rotation goes on; lead-in untimed
    timer.block(4)
    assert len(events) == 2  # reused
    with pytest.raises(TimingError, match="1 to 10 calls"):
        timer.block(11)
    with pytest.raises(TimingError, match="at least one input set"):
        BlockTimer(lambda xs: None, [], 3)


def test_block_timer_splits_each_call_into_submit_and_wait(fake_torch):
    import time as _time

    class SlowSync(FakeCuda):  # the "GPU" takes 3 ms after the host work returns
        def synchronize(self):
            _time.sleep(0.003)

    fake_torch.cuda = SlowSync()
    timer = BlockTimer(lambda xs: _time.sleep(0.001), [(1,)], max_calls=10)
    wall, gpu, submit = timer.block(3, gpu_time=False)
    assert len(submit) == len(wall) == 3 and gpu == []
    for s, w in zip(submit, wall):
        # submit: the call only (at least its 1 ms sleep); wall: call + the 3 ms wait. No upper bound on submit: a
        # 1 ms sleep took 4.3 ms on a loaded 2-core machine, and `w >= s + 3000` already fails if submit held the wait
        assert s >= 1000 and w >= s + 3000


def test_calls_for_sizes_a_block():
    assert calls_for(800.0, 20.0) == 25
    assert calls_for(0.5, 20.0) == blocks.MAX_BLOCK_CALLS
    assert calls_for(1e6, 20.0) == blocks.MIN_BLOCK_CALLS


def test_warm_up_stops_once_settled_or_at_the_cap(fake_torch):
    timer = BlockTimer(lambda xs: None, [(1,)], max_calls=50)
    made, per_call = warm_up(timer, min_calls=10, max_ms=500.0, block_ms=0.05)
    assert made >= 10 and per_call > 0
    made, _ = warm_up(timer, min_calls=5, max_ms=0.0)
    assert made == 5  # no time left for settling blocks


class Clocks:
    def gpu_mhz(self):
        return 1980.0

    def cpu_mhz(self):
        return None  # a host that does not say

    def host_speed_us(self):
        return 50.0


def test_time_pairs_alternates_and_keeps_every_block(fake_torch):
    order = []
    calls = {"eager": lambda xs: order.append("e"), "graph": lambda xs: order.append("g")}
    gc.enable()
    series = time_pairs(calls, [(1,), (2,)], SweepOptions(pairs=4, repetitions=3, warmup_calls=2, warmup_max_ms=0.0))
    assert gc.isenabled()  # restored after the pairs
    timed = order[4:]  # after 2 + 2 warm-up calls; each block: 1 untimed lead-in call + 3 timed
    assert timed == list("eeee" "gggg" "gggg" "eeee" "eeee" "gggg" "gggg" "eeee")
    for mode in ("eager", "graph"):
        s = series[mode]
        assert s.calls_per_block == 3 and len(s.block_p50_us) == 4
        assert len(s.wall_us) == 8 and len(s.gpu_us) == 4  # 2 wall + 1 evented call per block
        assert s.warmup_calls == 2 and s.block_gpu_mhz == [] and s.block_host_us == []
    starts = [(series["eager"].block_start_ms[i], series["graph"].block_start_ms[i]) for i in range(4)]
    assert starts[0][0] < starts[0][1] and starts[1][1] < starts[1][0]  # eager first in pair 0, graph in pair 1


def test_rounds_visit_every_batch_size_forwards_then_backwards(fake_torch):
    order = []

    def calls(tag):
        return {"eager": lambda xs: order.append(tag + "e"), "graph": lambda xs: order.append(tag + "g")}

    plans = [prepare_pair(calls(t), [(1,)], ONE_CALL) for t in "AB"]
    order.clear()
    time_rounds(plans, pairs=3)
    blocks_run = order[::2]  # every block is one lead-in call and one timed call
    assert blocks_run == ["Ae", "Ag", "Be", "Bg",   # round 0: forwards, eager first
                          "Bg", "Be", "Ag", "Ae",   # round 1: backwards, graph first
                          "Ae", "Ag", "Be", "Bg"]
    assert plans[1].series["eager"].block_start_ms[0] > plans[0].series["graph"].block_start_ms[0]


def test_time_pairs_reads_clocks_after_every_block(fake_torch):
    series = time_pairs({"eager": lambda xs: None, "graph": lambda xs: None}, [(1,)],
                        SweepOptions(pairs=3, repetitions=2, warmup_calls=1, warmup_max_ms=0.0), clocks=Clocks())
    assert series["eager"].block_gpu_mhz == [1980.0] * 3 and series["graph"].block_host_us == [50.0] * 3
    assert series["graph"].block_cpu_mhz == []


class SpeedStates:
    """Host readings that follow a script: one reading per block, in order (then the last one forever)."""

    def __init__(self, readings):
        self.readings, self.read = list(readings), 0

    def gpu_mhz(self):
        return None

    def cpu_mhz(self):
        return None

    def host_speed_us(self):
        value = self.readings[min(self.read, len(self.readings) - 1)]
        self.read += 1
        return value


def _plans(n=2):
    calls = {"eager": lambda xs: None, "graph": lambda xs: None}
    return [prepare_pair(calls, [(1,)], ONE_CALL) for _ in range(n)]


def _enough(plans, target):
    from graphlab.timing.sweep import _enough_at

    return lambda: _enough_at(plans, target)


def test_rounds_go_on_in_whole_rounds_until_every_batch_size_has_pairs_at_the_target_speed(fake_torch):
    from graphlab.timing.host_modes import HostTarget

    plans = _plans(2)
    target = HostTarget("host", 50.0, min_pairs=2)
    clocks = SpeedStates([120.0] * 4 * 3 + [50.0] * 1000)  # 3 rounds of 4 blocks in the slow state, then fast
    time_rounds(plans, pairs=2, clocks=clocks, until=_enough(plans, target), max_extra_s=30.0)
    # 2 planned + 1 more slow + 3 at the target: round 3's first pair followed a slow block, so it does not
    # count (it may straddle the switch), and whole rounds go on until both batch sizes have 2 that do
    for plan in plans:
        assert len(plan.series["eager"].block_p50_us) == 6
        assert plan.series["eager"].block_host_us == [120.0] * 3 + [50.0] * 3


def test_extra_rounds_stop_at_max_extra_s_when_the_target_speed_never_comes(fake_torch):
    from graphlab.timing.host_modes import HostTarget

    plans = _plans(1)
    target = HostTarget("host", 50.0)
    time_rounds(plans, pairs=2, clocks=SpeedStates([120.0]), until=_enough(plans, target), max_extra_s=0.05)
    rounds = len(plans[0].series["eager"].block_p50_us)
    assert rounds > 2  # it tried
    plans = _plans(1)
    time_rounds(plans, pairs=2, clocks=SpeedStates([120.0]), until=_enough(plans, target), max_extra_s=0.0)
    assert len(plans[0].series["eager"].block_p50_us) == 2  # no time for more: exactly the planned rounds


def test_time_pairs_refuses_bad_arguments(fake_torch):
    with pytest.raises(TimingError, match="an 'eager' and a 'graph'"):
        time_pairs({"eager": lambda xs: None}, [(1,)])
    with pytest.raises(TimingError, match="pairs >= 1"):
        time_pairs({"eager": lambda xs: None, "graph": lambda xs: None}, [(1,)], SweepOptions(pairs=0))


@pytest.fixture
def fake_gpu(monkeypatch):
    return install_fake_gpu(monkeypatch)


def _mlp():
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)).eval()
    return model, (lambda b, seed=0: torch.randn(b, 8, generator=torch.Generator().manual_seed(seed + 1)))


def test_sweep_runs_one_pass_per_batch_size(fake_gpu):
    from graphlab.timing.sweep import sweep

    model, make_inputs = _mlp()
    seen = []
    options = SweepOptions(pairs=5, repetitions=3, warmup_calls=2, warmup_max_ms=0.0, profile=False,
                           check_weights=False)
    result = sweep(model, make_inputs, [1, 4], name="tiny", options=options, progress=False, on_point=seen.append)
    assert [(p.batch_size, p.mode) for p in result.points] == [(1, "eager"), (1, "graph"), (4, "eager"), (4, "graph")]
    assert [(p.batch_size, p.mode) for p in seen] == [(p.batch_size, p.mode) for p in result.points]
    assert len(fake_gpu.graphs) == 2 and all(g.resets == 1 for g in fake_gpu.graphs)  # one capture each, released
    for p in result.points:
        assert len(p.block_p50_us) == 5 and len(p.block_start_ms) == 5 and p.repetitions == 3 and p.runs == 5
        assert len(p.block_host_us) == 5  # the host's speed after every block
        assert p.first_call_us > 0 and p.warmup_calls == 2 and p.spread_pct is not None
        assert p.p10_us <= p.p50_us <= p.p90_us and p.gpu_p50_us == pytest.approx(4.0)
    graph = result.point(1, "graph")
    assert graph.capture_ms == 1.5 and graph.instantiate_ms == 0.25
    assert graph.pool_bytes == 2 << 20 and graph.graph_peak_bytes == 1 << 20 and graph.graph_exec_bytes == 0
    assert graph.kernel_count is None  # no DOT export here
    assert result.is_paired(1) and result.paired(4).pairs == 5
    c = result.conditions
    assert c["method"] == "paired blocks" and c["pairs"] == 5 and c["repetitions"] == 3
    assert c["mode_detection"]["min_step_pct"] == 10.0 and "gpu_clock" in c and "cpu_clock" in c
    assert Sweep.from_json(json.dumps(result.to_dict())) == result
    result.table(), result.modes_report()


def test_sweep_keeps_graphs_for_profiling_last_and_then_frees_them(fake_gpu, monkeypatch):
    from graphlab.timing.results import Span, Trace
    from graphlab.timing.sweep import sweep

    order = []

    def profile_call(call, mode, calls=2):
        order.append(mode)
        call()
        return Trace(mode, (Span("gemm", 1.0, 3.0), Span("relu", 3.0, 4.0)))

    monkeypatch.setattr(sweep_module, "profile_call", profile_call)
    model, make_inputs = _mlp()
    result = sweep(model, make_inputs, [1, 2], options=SweepOptions(pairs=2, repetitions=2, warmup_calls=1,
                                                                    warmup_max_ms=0.0, check_weights=False),
                   progress=False)
    assert order == ["eager", "graph", "eager", "graph"]
    assert all(g.resets == 1 for g in fake_gpu.graphs)
    p = result.point(2, "eager")
    assert p.kernel_count == 2 and p.gpu_busy_us == pytest.approx(3.0) and p.launch_overhead_pct is not None


def test_sweep_refuses_bad_arguments(fake_gpu):
    from graphlab.timing.sweep import sweep

    model, make_inputs = _mlp()
    with pytest.raises(TimingError, match="at least one batch size"):
        sweep(model, make_inputs, [], progress=False)
    with pytest.raises(TimingError, match="needs make_inputs"):
        sweep(model, None, [1], progress=False)
    with pytest.raises(TimingError, match="pairs >= 1"):
        sweep(model, make_inputs, [1], options=SweepOptions(pairs=0), progress=False)
    with pytest.raises(TimingError, match="all-zero"):
        sweep(model, lambda b: torch.zeros(b, 8), [1], progress=False,
              options=SweepOptions(profile=False, check_weights=False))


def test_sweep_reads_the_dispatcher_after_every_block_and_stores_its_host_target(fake_gpu):
    from graphlab.timing.host_modes import HostTarget
    from graphlab.timing.sweep import sweep

    model, make_inputs = _mlp()
    never = HostTarget("host", 1e9)  # a speed this host never runs at: the extra rounds give up at once
    options = SweepOptions(pairs=3, repetitions=2, warmup_calls=2, warmup_max_ms=0.0, profile=False,
                           check_weights=False, host_target=never, max_extra_s=0.0)
    result = sweep(model, make_inputs, [1, 2], name="tiny", options=options, progress=False)
    for p in result.points:
        assert len(p.block_dispatch_us) == len(p.block_host_us) == len(p.block_submit_us) == p.runs == 3
        assert all(v > 0 for v in p.block_dispatch_us)
        assert all(0 < s <= w for s, w in zip(p.block_submit_us, p.block_p50_us))
    c = result.conditions
    assert c["rounds"] == 3 and c["host_target"]["level_us"] == 1e9 and c["host_target"]["max_extra_s"] == 0.0
    assert "dispatcher" in c["dispatch_speed"]
    assert result.at_host_speed(1, never).pairs == 0
    with pytest.raises(TimingError, match="max_extra_s and min_rounds_s must be >= 0"):
        SweepOptions(max_extra_s=-1)


def test_rounds_last_at_least_min_s(fake_torch):
    plans = _plans(1)
    took = time_rounds(plans, pairs=1, min_s=0.05)
    assert took >= 0.05 and len(plans[0].series["eager"].block_p50_us) > 1


def test_the_fastest_target_follows_the_fastest_readings_seen_so_far(fake_torch):
    from graphlab.timing.sweep import FASTEST, _enough_at, _target_now

    plans = _plans(1)
    # 4 rounds in the slow state, then the host turns fast: the target moves down to the fast level and the
    # rounds go on until 8 pairs ran there
    clocks = SpeedStates([120.0] * 2 * 4 + [60.0] * 1000)
    time_rounds(plans, pairs=4, clocks=clocks, until=lambda: _enough_at(plans, _target_now(plans, FASTEST)),
                max_extra_s=30.0)
    readings = plans[0].series["eager"].block_host_us
    assert readings[:4] == [120.0] * 4 and readings.count(60.0) >= 8
    assert _target_now(plans, FASTEST).level_us == 60.0 and _target_now(plans, FASTEST).reading == "host"


def test_sweep_with_the_fastest_target_stores_the_rule(fake_gpu):
    from graphlab.timing.sweep import sweep

    model, make_inputs = _mlp()
    options = SweepOptions(pairs=2, repetitions=2, warmup_calls=2, warmup_max_ms=0.0, profile=False,
                           check_weights=False, host_target="fastest", max_extra_s=0.5, min_rounds_s=0.01)
    result = sweep(model, make_inputs, [1], name="tiny", options=options, progress=False)
    c = result.conditions
    assert c["host_target"]["reading"] == "dispatch" and "fastest seen" in c["host_target"]["level"]
    assert c["min_rounds_s"] == 0.01
    with pytest.raises(TimingError, match="host_target must be"):
        SweepOptions(host_target="slowest")


def test_the_recorded_stand_ins_take_the_live_arguments():
    """`@stand_in` hands the live call's arguments to the stand-in unchanged, so every call the live function
    takes, the stand-in takes: the same positional parameters and defaults, the rest accepted and ignored."""
    import inspect

    from graphlab.mode import STAND_INS
    from graphlab.timing.recorded import recorded_sweep, recorded_timeline

    for live, recorded in ((sweep_module.sweep, recorded_sweep), (timeline.record_timeline, recorded_timeline)):
        assert STAND_INS[f"{live.__module__}.{live.__qualname__}"] is recorded and live.recorded is recorded
        params = inspect.signature(live.live).parameters
        positional = [p for p in params.values() if p.kind is p.POSITIONAL_OR_KEYWORD]
        stand = inspect.signature(recorded)
        assert [(p.name, p.default) for p in stand.parameters.values()][:len(positional)] == \
            [(p.name, p.default) for p in positional]
        stand.bind(*(p.default for p in positional),
                   **{p.name: p.default for p in params.values() if p.kind is p.KEYWORD_ONLY})


def test_record_timeline_profiles_eager_then_the_graph_and_refuses_missing_inputs(fake_gpu, monkeypatch):
    from graphlab.timing.results import Span, Trace

    order = []

    def profile_call(call, mode, calls=2):
        order.append(mode)
        call()
        return Trace(mode, (Span("gemm", 1.0, 3.0),))

    monkeypatch.setattr(timeline, "profile_call", profile_call)
    model, make_inputs = _mlp()
    tl = timeline.record_timeline(model, make_inputs(4), name="tiny", warmup_calls=1)
    assert order == ["eager", "graph"] and tl.model == "tiny" and tl.batch_size == 4
    assert len(fake_gpu.graphs) == 1 and fake_gpu.graphs[0].resets == 1  # one capture, released
    assert tl.conditions["graph_kernel_nodes"] is None and "torch" in tl.conditions  # no DOT export here
    with pytest.raises(TimingError, match="needs example inputs"):
        timeline.record_timeline(model)


def test_the_clock_reader_reads_the_dispatcher_only_when_asked():
    assert machine.ClockReader().dispatch_speed_us() is None and "dispatch_speed" not in machine.ClockReader().describe()
    clocks = machine.ClockReader(dispatch=True)
    assert clocks.dispatch_speed_us() > 0 and "dispatcher" in clocks.describe()["dispatch_speed"]
    assert machine.run_conditions()["torch"] == torch.__version__
