"""Timing eager and graph calls in short interleaved blocks, so that both see the same machine state.

Needs torch (imported at the top) and a GPU. The statistics (pairing, host modes, paired speedups) are pure and
live in `graphlab.timing.host_modes`; this module only runs the calls and keeps every number.

A *block* is `calls` synchronised calls of one mode in a row, ~`block_ms` long (10-30 ms). Every
call is timed on the host (perf_counter from the call until `torch.cuda.synchronize()` returns);
every other call also carries a CUDA event pair for the GPU-side time, and the wall-time statistics
use only the calls without events (an event pair cost ~9 µs per call on the H200). One untimed call
opens each block (the first call after another model or batch size ran is not typical).

A *pair* is an eager block and a graph block back to back, eager first in even pairs; `time_rounds` times
round r's pair for every batch size before
round r+1, forwards in even rounds and backwards in odd ones: a host that sits in one speed state
for seconds then lands in every batch size's pairs alike, instead of in a few batch sizes only.

    >>> plan = prepare_pair({"eager": eager, "graph": graph}, input_sets, SweepOptions())   # doctest: +SKIP
    >>> time_rounds([plan], pairs=15, clocks=ClockReader())                                 # doctest: +SKIP
    >>> plan.series["eager"].block_p50_us                                          # doctest: +SKIP
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple, Sequence

import torch

from graphlab.errors import TimingError
from graphlab.stats import median
from graphlab.clock import now_ns, now_s
from graphlab.timing.options import (BLOCK_MS, MAX_BLOCK_CALLS, MIN_BLOCK_CALLS, PAIRS, SETTLE_PCT, WARMUP_BLOCK_MS,
                                     WARMUP_CALLS, WARMUP_MAX_MS, SweepOptions)
from graphlab.timing.schedulers import gc_paused, round_order

Call = Callable[[Sequence[Any]], Any]
#: the two modes of a pair, in the order of even rounds (`round_order` alternates them)
MODES = ("eager", "graph")


class BlockTimes(NamedTuple):
    """The timed calls of one block, in µs."""

    wall_us: list[float]    # call to `torch.cuda.synchronize()` returning, the calls without events
    gpu_us: list[float]     # CUDA-event time of the calls with events
    submit_us: list[float]  # call to the call returning (host work, before the wait), same calls as wall_us


class BlockTimer:
    """Times blocks of synchronised calls of one callable, rotating through the input sets.

    CUDA events come from `events`, a list shared by the timers of one sweep (their blocks never
    overlap), grown on demand and reused, so a block allocates nothing once the pool is large enough.
    """

    def __init__(self, call: Call, input_sets: Sequence[Sequence[Any]], max_calls: int = MAX_BLOCK_CALLS,
                 events: list[Any] | None = None):
        if not input_sets:
            raise TimingError("timing needs at least one input set")
        self.call, self.input_sets, self.max_calls = call, list(input_sets), max_calls
        self._events: list[Any] = [] if events is None else events
        self._next = 0  # which input set the next call uses (continues across blocks)

    def block(self, calls: int, gpu_time: bool = True, lead_in: int = 0) -> BlockTimes:
        """Run `lead_in` untimed calls, then `calls` synchronised timed ones.

        Returns the host wall µs and the submit µs (until the call returned, before the wait) of the
        calls without events, and the CUDA-event µs of the calls with events. With `gpu_time`,
        odd-numbered calls carry the event pair; without, every call is wall-timed.
        """
        if not 1 <= calls <= self.max_calls:
            raise TimingError(f"a block needs 1 to {self.max_calls} calls, got {calls}")
        call, sets, sync = self.call, self.input_sets, torch.cuda.synchronize
        evented = calls // 2 if gpu_time else 0
        while len(self._events) < evented:
            self._events.append((torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)))
        count, offset = len(sets), self._next
        for i in range(lead_in):
            call(sets[(offset + i) % count])
        offset += lead_in
        wall: list[float] = []
        submit: list[float] = []
        used: list[Any] = []
        clock = now_ns
        sync()
        for i in range(calls):
            inputs = sets[(offset + i) % count]
            if gpu_time and i % 2 == 1:
                start, end = self._events[i // 2]
                start.record()
                call(inputs)
                end.record()
                sync()
                used.append((start, end))
                continue
            t0 = clock()
            call(inputs)
            t1 = clock()
            sync()
            wall.append((clock() - t0) / 1e3)
            submit.append((t1 - t0) / 1e3)
        self._next = (offset + calls) % count
        return BlockTimes(wall, [s.elapsed_time(e) * 1e3 for s, e in used], submit)


@dataclass
class BlockSeries:
    """Every timed call and block of one mode at one batch size."""

    mode: str
    calls_per_block: int
    warmup_calls: int
    wall_us: list[float] = field(default_factory=list)
    gpu_us: list[float] = field(default_factory=list)
    block_p50_us: list[float] = field(default_factory=list)
    block_start_ms: list[float] = field(default_factory=list)
    block_gpu_mhz: list[float] = field(default_factory=list)
    block_cpu_mhz: list[float] = field(default_factory=list)
    block_host_us: list[float] = field(default_factory=list)
    block_dispatch_us: list[float] = field(default_factory=list)
    block_submit_us: list[float] = field(default_factory=list)

    def add(self, start_ms: float, times: BlockTimes, readings: dict[str, float | None]) -> None:
        wall = times.wall_us
        self.wall_us += wall
        self.gpu_us += times.gpu_us
        self.block_p50_us.append(round(median(wall), 3))
        if times.submit_us:
            self.block_submit_us.append(round(median(times.submit_us), 3))
        self.block_start_ms.append(round(start_ms, 3))
        for key, values in (("gpu_mhz", self.block_gpu_mhz), ("cpu_mhz", self.block_cpu_mhz),
                            ("host_us", self.block_host_us), ("dispatch_us", self.block_dispatch_us)):
            value = readings.get(key)
            if value is not None:
                values.append(value)


@dataclass
class PairPlan:
    """One batch size's eager and graph timers, warmed up and sized, and the blocks timed so far."""

    timers: dict[str, BlockTimer]
    series: dict[str, BlockSeries]


def warm_up(timer: BlockTimer, *, min_calls: int = WARMUP_CALLS, max_ms: float = WARMUP_MAX_MS,
            block_ms: float = WARMUP_BLOCK_MS, settle_pct: float = SETTLE_PCT) -> tuple[int, float]:
    """Untimed calls until the median has settled: at least `min_calls`, then short blocks until the
    last three block medians lie within `settle_pct` % of each other, or `max_ms` has passed.

    Returns (calls made, the last block's median µs per call), which sizes the timed blocks.
    """
    start = now_s()
    wall = timer.block(max(1, min(min_calls, timer.max_calls)), gpu_time=False).wall_us
    calls = len(wall)
    per_call = median(wall[len(wall) // 2:])
    medians: list[float] = []
    while (now_s() - start) * 1e3 < max_ms:
        n = calls_for(per_call, block_ms, 3, timer.max_calls)
        wall = timer.block(n, gpu_time=False).wall_us
        calls += n
        per_call = median(wall)
        medians.append(per_call)
        last = medians[-3:]
        if len(last) == 3 and (max(last) - min(last)) <= settle_pct / 100.0 * median(last):
            break
    return calls, per_call


def calls_for(per_call_us: float, block_ms: float, min_calls: int = MIN_BLOCK_CALLS,
              max_calls: int = MAX_BLOCK_CALLS) -> int:
    """Calls in one block of ~`block_ms` for a call of `per_call_us`, within [min_calls, max_calls].

    >>> calls_for(800.0, 20.0), calls_for(5.0, 20.0), calls_for(50_000.0, 20.0)
    (25, 2000, 4)
    """
    return max(min_calls, min(max_calls, int(round(block_ms * 1e3 / max(per_call_us, 1e-3)))))


def prepare_pair(calls: dict[str, Call], input_sets: Sequence[Sequence[Any]],
                 options: SweepOptions = SweepOptions(), *, events: list[Any] | None = None) -> PairPlan:
    """Warm eager and graph up until each median settles, and size their blocks to ~`options.block_ms`.

    Args:
        calls: {"eager": call, "graph": call}; each takes one input set (a tuple) and runs one forward.
        input_sets: input tuples, rotated call by call.
        options: the warm-up (`warmup_calls`, `warmup_max_ms`) and the block size (`repetitions` calls per
            block, default enough for ~`block_ms` from the warm-up's last median).
        events: a shared pool of CUDA event pairs (one per sweep).
    """
    if set(calls) != set(MODES):
        raise TimingError(f"timing pairs needs an 'eager' and a 'graph' call, got {sorted(calls)}")
    block_calls = options.repetitions
    size_limit = max(MAX_BLOCK_CALLS, block_calls or 0, options.warmup_calls)
    pool: list[Any] = [] if events is None else events
    timers = {mode: BlockTimer(calls[mode], input_sets, size_limit, pool) for mode in MODES}
    series = {}
    for mode, timer in timers.items():
        made, per_call = warm_up(timer, min_calls=options.warmup_calls, max_ms=options.warmup_max_ms)
        series[mode] = BlockSeries(mode, block_calls or calls_for(per_call, options.block_ms), made)
    return PairPlan(timers, series)


def time_rounds(plans: Sequence[PairPlan], pairs: int = PAIRS, clocks: Any = None,
                progress: Callable[[int], None] | None = None, *, until: Callable[[], bool] | None = None,
                max_extra_s: float = 0.0, min_s: float = 0.0) -> float:
    """Time `pairs` rounds; in each, one (eager, graph) pair of blocks per plan.

    Plans are visited forwards in even rounds and backwards in odd ones; within a pair, eager goes
    first in even rounds (both orders are `graphlab.timing.schedulers.round_order`, "alternate"). `clocks` (a `ClockReader`) is read after every block,
    outside the timing. Python's garbage collector is off during the rounds (as `timeit` does).
    With `until`, more rounds follow the `pairs` planned ones, each a whole round, until `until()`
    says enough or `max_extra_s` more seconds have passed (`graphlab repro` waits this way for the
    host speed its recording ran at). With `min_s`, rounds go on for at least that long in all (a
    recording gives the host time to show its states). Returns the seconds the rounds took.
    """
    if pairs < 1:
        raise TimingError(f"pairs must be at least 1, got {pairs}")
    with gc_paused():
        t0 = now_s()
        r = 0
        deadline = None
        while True:
            if r >= pairs and now_s() - t0 >= min_s:
                if until is None or until():
                    break
                deadline = deadline or now_s() + max_extra_s
                if now_s() >= deadline:
                    break
            for plan in round_order(plans, r):
                for mode in round_order(MODES, r):
                    start_ms = (now_s() - t0) * 1e3
                    times = plan.timers[mode].block(plan.series[mode].calls_per_block, lead_in=1)
                    plan.series[mode].add(start_ms, times, _readings(clocks))
            if progress is not None:
                progress(r)
            r += 1
    return now_s() - t0


def _readings(clocks: Any) -> dict[str, float | None]:
    if clocks is None:
        return {}
    out = {"gpu_mhz": clocks.gpu_mhz(), "cpu_mhz": clocks.cpu_mhz(), "host_us": clocks.host_speed_us()}
    dispatch = getattr(clocks, "dispatch_speed_us", None)
    if dispatch is not None:
        out["dispatch_us"] = dispatch()
    return out


def time_pairs(calls: dict[str, Call], input_sets: Sequence[Sequence[Any]], options: SweepOptions = SweepOptions(),
               *, clocks: Any = None) -> dict[str, BlockSeries]:
    """`prepare_pair` + `time_rounds` (`options.pairs` rounds) for one batch size alone; returns
    {"eager": ..., "graph": ...}."""
    plan = prepare_pair(calls, input_sets, options)
    time_rounds([plan], options.pairs, clocks)
    return plan.series


__all__ = ["BLOCK_MS", "MODES", "PAIRS", "BlockSeries", "BlockTimer", "BlockTimes", "PairPlan", "calls_for", "prepare_pair",
           "time_pairs", "time_rounds", "warm_up"]
