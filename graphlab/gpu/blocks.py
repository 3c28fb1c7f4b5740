"""Timing two ways of running a model in short interleaved blocks, so both see the same machine state.

Layer 2 (GPU): torch is passed in. The statistics (pairing, host modes, paired speedups) are pure and
live in `graphlab.core.modes`; this module only runs the calls and keeps every number.

One *block* is `calls` synchronised calls of one mode in a row (each call: host perf_counter, a CUDA
event pair around the call, `torch.cuda.synchronize()`); blocks last ~`block_ms` (10-30 ms, much
shorter than the few hundred ms a host speed mode lasts). Pair i is one eager block and one graph
block back to back, eager first in even pairs (`pair_order`). Before the pairs, each mode is warmed
up until its block median settles.

    >>> series = time_pairs(torch, {"eager": eager, "graph": graph}, input_sets, pairs=15)   # doctest: +SKIP
    >>> series["eager"].block_p50_us                                                        # doctest: +SKIP
"""
from __future__ import annotations

import gc
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from graphlab.core.modes import pair_order
from graphlab.core.stats import median
from graphlab.errors import TimingError

#: defaults of the paired method (the sweep stores the values it used in its conditions)
PAIRS = 15
BLOCK_MS = 20.0
MIN_BLOCK_CALLS = 3
MAX_BLOCK_CALLS = 2000
WARMUP_CALLS = 20
WARMUP_MAX_MS = 200.0
WARMUP_BLOCK_MS = 5.0
SETTLE_PCT = 5.0

Call = Callable[[Sequence[Any]], Any]


class BlockTimer:
    """Times blocks of synchronised calls of one callable, rotating through the input sets.

    CUDA events come from `events` (a list shared by the timers of one pair, grown on demand and
    reused), so a block allocates nothing once the pool is large enough.
    """

    def __init__(self, torch: Any, call: Call, input_sets: Sequence[Sequence[Any]], max_calls: int = MAX_BLOCK_CALLS,
                 events: list[Any] | None = None):
        if not input_sets:
            raise TimingError("time needs at least one input set")
        self.torch, self.call, self.input_sets, self.max_calls = torch, call, list(input_sets), max_calls
        self._events: list[Any] = [] if events is None else events
        self._next = 0  # which input set the next call uses (continues across blocks)

    def block(self, calls: int, gpu_time: bool = True) -> tuple[list[float], list[float]]:
        """Run `calls` synchronised calls; return (host wall µs per call, CUDA-event µs per call, or [])."""
        if not 1 <= calls <= self.max_calls:
            raise TimingError(f"a block needs 1 to {self.max_calls} calls, got {calls}")
        torch, call, sets, sync = self.torch, self.call, self.input_sets, self.torch.cuda.synchronize
        while gpu_time and len(self._events) < calls:
            self._events.append((torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)))
        events = self._events[:calls] if gpu_time else None
        wall: list[float] = []
        clock = time.perf_counter_ns
        offset, count = self._next, len(sets)
        sync()
        for i in range(calls):
            inputs = sets[(offset + i) % count]
            if events is not None:
                start, end = events[i]
                t0 = clock()
                start.record()
                call(inputs)
                end.record()
            else:
                t0 = clock()
                call(inputs)
            sync()
            wall.append((clock() - t0) / 1e3)
        self._next = (offset + calls) % count
        gpu = [s.elapsed_time(e) * 1e3 for s, e in events] if events is not None else []
        return wall, gpu


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

    def add(self, start_ms: float, wall: list[float], gpu: list[float], gpu_mhz: float | None,
            cpu_mhz: float | None) -> None:
        self.wall_us += wall
        self.gpu_us += gpu
        self.block_p50_us.append(round(median(wall), 3))
        self.block_start_ms.append(round(start_ms, 3))
        if gpu_mhz is not None:
            self.block_gpu_mhz.append(gpu_mhz)
        if cpu_mhz is not None:
            self.block_cpu_mhz.append(round(cpu_mhz, 1))


def warm_up(timer: BlockTimer, *, min_calls: int = WARMUP_CALLS, max_ms: float = WARMUP_MAX_MS,
            block_ms: float = WARMUP_BLOCK_MS, settle_pct: float = SETTLE_PCT) -> tuple[int, float]:
    """Untimed calls until the median has settled: at least `min_calls`, then short blocks until the
    last three block medians lie within `settle_pct` % of each other, or `max_ms` has passed.

    Returns (calls made, the last block's median µs per call), which sizes the timed blocks.
    """
    start = time.perf_counter()
    wall, _ = timer.block(max(1, min(min_calls, timer.max_calls)), gpu_time=False)
    calls = len(wall)
    per_call = median(wall[len(wall) // 2:])
    medians: list[float] = []
    while (time.perf_counter() - start) * 1e3 < max_ms:
        n = calls_for(per_call, block_ms, 3, timer.max_calls)
        wall, _ = timer.block(n, gpu_time=False)
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
    (25, 2000, 3)
    """
    return max(min_calls, min(max_calls, int(round(block_ms * 1e3 / max(per_call_us, 1e-3)))))


def time_pairs(torch: Any, calls: dict[str, Call], input_sets: Sequence[Sequence[Any]], *, pairs: int = PAIRS,
               block_ms: float = BLOCK_MS, block_calls: int | None = None, warmup: int = WARMUP_CALLS,
               warmup_max_ms: float = WARMUP_MAX_MS, min_block_calls: int = MIN_BLOCK_CALLS,
               max_block_calls: int = MAX_BLOCK_CALLS, clocks: Any = None) -> dict[str, BlockSeries]:
    """Warm each mode until settled, then time `pairs` pairs of blocks, alternating which goes first.

    Args:
        calls: {"eager": call, "graph": call}; each takes one input set (a tuple) and runs one forward.
        input_sets: input tuples, rotated call by call.
        block_calls: calls per block (default: enough for ~`block_ms`, from the warm-up's last median).
        clocks: a `graphlab.gpu.conditions.ClockReader`, read after every block (outside the timing).

    Python's garbage collector is off during the pairs (as `timeit` does) and restored afterwards.
    """
    if set(calls) != {"eager", "graph"}:
        raise TimingError(f"time_pairs needs an 'eager' and a 'graph' call, got {sorted(calls)}")
    if pairs < 1:
        raise TimingError(f"pairs must be at least 1, got {pairs}")
    size_limit = max(max_block_calls, block_calls or 0, warmup)
    events: list[Any] = []  # one pool for both timers: their blocks never overlap
    timers = {mode: BlockTimer(torch, call, input_sets, size_limit, events) for mode, call in calls.items()}
    series: dict[str, BlockSeries] = {}
    for mode in ("eager", "graph"):
        made, per_call = warm_up(timers[mode], min_calls=warmup, max_ms=warmup_max_ms)
        size = block_calls or calls_for(per_call, block_ms, min_block_calls, max_block_calls)
        series[mode] = BlockSeries(mode, size, made)
    gc_was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter()
        for i in range(pairs):
            for mode in pair_order(i):
                start_ms = (time.perf_counter() - t0) * 1e3
                wall, gpu = timers[mode].block(series[mode].calls_per_block)
                gpu_mhz = clocks.gpu_mhz() if clocks is not None else None
                cpu_mhz = clocks.cpu_mhz() if clocks is not None else None
                series[mode].add(start_ms, wall, gpu, gpu_mhz, cpu_mhz)
    finally:
        if gc_was_enabled:
            gc.enable()
    return series


__all__ = ["BLOCK_MS", "PAIRS", "BlockSeries", "BlockTimer", "calls_for", "time_pairs", "warm_up"]
