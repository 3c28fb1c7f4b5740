"""`SweepOptions`: how a latency sweep is measured, one frozen set of settings for the live and the recorded path.

`gl.sweep` and `sweep_cases` take one; the paired blocks (`graphlab.timing.blocks.prepare_pair`) read their part of
it; the sweep stores what it used in its conditions; `graphlab repro` builds one from a recording's conditions; the
recorded stand-in (`graphlab.timing.recorded.recorded_sweep`) takes it and ignores it (the recording's own options
are in its conditions). docs/latency-method.md explains each setting.

    >>> SweepOptions(pairs=5, repetitions=3).block_ms
    20.0

Pure: importing it needs no torch.
"""
from __future__ import annotations

from dataclasses import dataclass

from graphlab.errors import TimingError
from graphlab.timing.host_modes import HostTarget

#: defaults of the paired method (a sweep stores the values it used in its conditions)
PAIRS = 15
BLOCK_MS = 20.0
MIN_BLOCK_CALLS = 4
MAX_BLOCK_CALLS = 2000
WARMUP_CALLS = 20
WARMUP_MAX_MS = 200.0
WARMUP_BLOCK_MS = 5.0
SETTLE_PCT = 5.0
#: `host_target="fastest"`: collect pairs at the fastest host speed seen so far
FASTEST = "fastest"


@dataclass(frozen=True)
class SweepOptions:
    """How a sweep times eager against graph replay (docs/latency-method.md).

    Attributes:
        pairs: (eager block, graph block) pairs per batch size.
        block_ms: the length of one block (10-30 ms: much shorter than a host speed mode lasts).
        repetitions: calls per block (None: enough for ~`block_ms`, from the warm-up's last median).
        warmup_calls: untimed calls at least, per mode and batch size; then warm-up goes on in short blocks
            until the median settles (within `SETTLE_PCT` %), for at most `warmup_max_ms`.
        warmup_max_ms: the longest warm-up per mode and batch size.
        min_rounds_s: time the rounds for at least this long (a recording gives the host time to show its states).
        host_target: a host speed (`graphlab.timing.host_modes.HostTarget`) to collect pairs at: after the
            `pairs` rounds, more rounds run until every batch size has `host_target.min_pairs` pairs at that
            speed, for at most `max_extra_s` seconds (`graphlab repro` passes its recording's). "fastest": the
            fastest speed seen so far (the 10th percentile of the dispatcher readings, ±10%), so that a host that
            shows a faster state late still gets enough pairs in it (`graphlab record` uses this).
        max_extra_s: how long the extra rounds of `host_target` may take.
        profile: also profile one call per point (kernel count, GPU-busy time, overhead share), after all timings.
        count_kernels: count the graph's kernel nodes from its DOT dump (needs cuda-bindings).
        check_weights: also probe what a graph does when weights change (`probe_weight_update`).

    Raises:
        TimingError: a setting out of range (checked when the options are made).
    """

    pairs: int = PAIRS
    block_ms: float = BLOCK_MS
    repetitions: int | None = None
    warmup_calls: int = WARMUP_CALLS
    warmup_max_ms: float = WARMUP_MAX_MS
    min_rounds_s: float = 0.0
    host_target: HostTarget | str | None = None
    max_extra_s: float = 0.0
    profile: bool = True
    count_kernels: bool = True
    check_weights: bool = True

    def __post_init__(self) -> None:
        if self.pairs < 1 or self.block_ms <= 0 or (self.repetitions is not None and self.repetitions < 1):
            raise TimingError(f"sweep() needs pairs >= 1, block_ms > 0 and repetitions >= 1; got pairs={self.pairs}, "
                              f"block_ms={self.block_ms}, repetitions={self.repetitions}")
        if self.max_extra_s < 0 or self.min_rounds_s < 0:
            raise TimingError(f"max_extra_s and min_rounds_s must be >= 0, got {self.max_extra_s} and "
                              f"{self.min_rounds_s}")
        if isinstance(self.host_target, str) and self.host_target != FASTEST:
            raise TimingError(f"host_target must be a HostTarget, {FASTEST!r} or None, got {self.host_target!r}")


__all__ = ["BLOCK_MS", "FASTEST", "MAX_BLOCK_CALLS", "MIN_BLOCK_CALLS", "PAIRS", "SETTLE_PCT", "WARMUP_BLOCK_MS",
           "WARMUP_CALLS", "WARMUP_MAX_MS", "SweepOptions"]
