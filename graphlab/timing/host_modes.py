"""Host speed modes and paired speedups: what short interleaved timing blocks say about a noisy host.

Pure (no torch): standard library only.

A GPU host's CPU can switch between speed modes every few hundred milliseconds (on the H200 host of
this project, eager calls of the same model flipped between three levels). Eager calls are
host-bound at small batch, so they follow the mode; graph replays are GPU-bound and barely move. So
graphlab times eager and graph in short blocks that alternate
(`graphlab.timing.schedulers.round_order`), pairs block i of one
with block i of the other (both saw the same machine state), and reports:

- `detect_modes(block_medians)`: how many speed levels the blocks fell into, their levels, shares
  and how often the host switched between them (shown, not averaged away);
- `paired_speedup(eager_blocks, graph_blocks)`: the speedup of every pair, its median and spread,
  and the median within each eager mode (the fastest mode's is the figure that comes back).

Example (hand-written block medians in µs, not measurements):
    >>> m = detect_modes([700, 710, 880, 695, 890, 870, 705, 885])
    >>> m.count, [round(v) for v in m.levels_us], m.switches
    (2, [702, 882], 5)
    >>> s = paired_speedup([700, 880, 705, 890, 698, 885], [200, 201, 199, 200, 200, 201])
    >>> round(s.p50, 2), [round(v, 2) for v in s.by_mode]
    (3.96, [3.5, 4.4])
"""
from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import asdict, dataclass
from typing import Any, Sequence

from graphlab.stats import median, percentile
from graphlab.errors import StatsError

#: defaults of `detect_modes` (stored with every sweep's conditions so a reader knows the rule)
MAX_MODES = 4
MIN_STEP_PCT = 10.0
MIN_SEPARATION = 3.0
MIN_SHARE = 0.05
MIN_BLOCKS = 3
#: the narrowest spread (in log units, ~0.5%) a mode is assumed to have, so that perfectly flat
#: blocks do not make every split look infinitely separated
SPREAD_FLOOR = 0.005


@dataclass(frozen=True)
class HostModes:
    """Speed levels found in a sequence of block medians.

    Attributes:
        count: number of modes (1: a stable host, or too few blocks to tell).
        levels_us: median block time of each mode, fastest first.
        shares: fraction of the blocks in each mode (same order).
        labels: the mode (0 = fastest) of every block, in measurement order.
        switches: how many times consecutive blocks changed mode.
        rule: the detection parameters, for the record.
    """

    count: int
    levels_us: tuple[float, ...]
    shares: tuple[float, ...]
    labels: tuple[int, ...]
    switches: int
    rule: dict[str, float] | None = None

    @property
    def blocks(self) -> int:
        return len(self.labels)

    @property
    def fastest_us(self) -> float:
        """The median block time of the fastest mode."""
        return self.levels_us[0]

    @property
    def switched(self) -> bool:
        """True when the host was seen in more than one mode."""
        return self.count > 1

    def describe(self) -> str:
        """One line, e.g. '2 modes: 702 µs (50%), 882 µs (50%); 5 switches in 8 blocks'."""
        levels = ", ".join(f"{lv:.0f} µs ({100 * sh:.0f}%)" for lv, sh in zip(self.levels_us, self.shares))
        if self.count == 1:
            return f"1 mode: {levels.split(' (')[0]} over {self.blocks} blocks"
        return f"{self.count} modes: {levels}; {self.switches} switches in {self.blocks} blocks"

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["levels_us"], out["shares"], out["labels"] = list(self.levels_us), list(self.shares), list(self.labels)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HostModes:
        return cls(int(data["count"]), tuple(data["levels_us"]), tuple(data["shares"]), tuple(data["labels"]),
                   int(data["switches"]), data.get("rule"))


def _positive(values: Sequence[float], what: str) -> list[float]:
    out = [float(v) for v in values]
    if not out:
        raise StatsError(f"no {what}: time at least one block")
    if any(math.isnan(v) or math.isinf(v) or v <= 0 for v in out):
        raise StatsError(f"{what} must be positive finite times, got {[v for v in out if not v > 0][:3]}")
    return out


def optimal_partition(sorted_values: Sequence[float], k: int, min_size: int = 1) -> list[int]:
    """Split sorted values into `k` contiguous groups of at least `min_size` with the least squared error.

    Exact (dynamic programming over the sorted values, O(k n^2)); returns the start index of each
    group. This is 1-D k-means solved to optimality, so the result does not depend on a random start.
    Equal values always share a group (no cut between them).

    >>> optimal_partition([1, 1.1, 1.2, 5, 5.1, 9], 3)
    [0, 3, 5]
    """
    x = [float(v) for v in sorted_values]
    n = len(x)
    if k < 1 or k * min_size > n:
        raise StatsError(f"cannot split {n} values into {k} groups of at least {min_size}")
    s1, s2 = [0.0], [0.0]
    for v in x:
        s1.append(s1[-1] + v)
        s2.append(s2[-1] + v * v)

    def sse(i: int, j: int) -> float:  # values x[i:j]
        total = s1[j] - s1[i]
        return (s2[j] - s2[i]) - total * total / (j - i)

    inf = float("inf")
    # cost[g][j]: best error of the first j values in g groups; start[g][j]: where the last group starts
    cost = [[inf] * (n + 1) for _ in range(k + 1)]
    start = [[0] * (n + 1) for _ in range(k + 1)]
    cost[0][0] = 0.0
    for g in range(1, k + 1):
        for j in range(g * min_size, n - (k - g) * min_size + 1):
            best, arg = inf, 0
            for i in range((g - 1) * min_size, j - min_size + 1):
                if cost[g - 1][i] == inf or (0 < i and x[i - 1] == x[i]):
                    continue
                c = cost[g - 1][i] + sse(i, j)
                if c < best:
                    best, arg = c, i
            cost[g][j], start[g][j] = best, arg
    if cost[k][n] == inf:
        raise StatsError(f"cannot split {n} values into {k} groups of at least {min_size} without parting equal values")
    starts, j = [], n
    for g in range(k, 0, -1):
        starts.append(start[g][j])
        j = start[g][j]
    return starts[::-1]


def _spread(log_values: Sequence[float]) -> float:
    """Half the interquartile range of log times (robust: a few straddling blocks do not move it)."""
    if len(log_values) < 2:
        return 0.0
    return (percentile(log_values, 75.0) - percentile(log_values, 25.0)) / 2.0


def _groups_pass(groups: list[list[float]], min_step_pct: float, min_separation: float) -> bool:
    for lo, hi in zip(groups, groups[1:]):
        distance = median(hi) - median(lo)
        if math.expm1(distance) * 100.0 < min_step_pct:
            return False
        spread = max(SPREAD_FLOOR, _spread(lo) + _spread(hi))
        if distance / spread < min_separation:
            return False
    return True


def detect_modes(block_us: Sequence[float], *, max_modes: int = MAX_MODES, min_step_pct: float = MIN_STEP_PCT,
                 min_separation: float = MIN_SEPARATION, min_share: float = MIN_SHARE,
                 min_blocks: int = MIN_BLOCKS) -> HostModes:
    """How many speed modes a sequence of block medians fell into, and which block was in which.

    The rule, on log times (so that a mode 10% above another counts the same at 50 µs and 5 ms):
    for k = `max_modes` down to 2, split the sorted values optimally into k groups of at least
    max(`min_blocks`, `min_share` of the blocks) each (`optimal_partition`); accept the first k for
    which every two neighbouring groups differ by at least `min_step_pct` % in median *and* by at
    least `min_separation` times their combined spread (half-IQRs added). Otherwise one mode. The
    first test ignores small steps (a 3% wobble is not a mode); the second refuses to cut one wide
    mode in two. A block that straddles a switch lands in the nearer mode.

    Args:
        block_us: block medians in measurement order (µs, positive).

    >>> detect_modes([100.0, 101.0, 99.0, 100.5]).count
    1
    """
    values = _positive(block_us, "block medians")
    rule = {"max_modes": max_modes, "min_step_pct": min_step_pct, "min_separation": min_separation,
            "min_share": min_share, "min_blocks": min_blocks}
    logs = [math.log(v) for v in values]
    order = sorted(range(len(values)), key=lambda i: logs[i])
    sorted_logs = [logs[i] for i in order]
    min_size = max(min_blocks, math.ceil(min_share * len(values)))
    starts = [0]
    for k in range(min(max_modes, len(values) // min_size), 1, -1):
        try:
            candidate = optimal_partition(sorted_logs, k, min_size)
        except StatsError:  # too many equal values for k groups
            continue
        bounds = candidate[1:] + [len(values)]
        groups = [sorted_logs[a:b] for a, b in zip(candidate, bounds)]
        if _groups_pass(groups, min_step_pct, min_separation):
            starts = candidate
            break
    labels = [0] * len(values)
    for group, first in enumerate(starts):
        for rank in range(first, len(values)):
            labels[order[rank]] = group
    count = len(starts)
    levels = tuple(median([values[i] for i in range(len(values)) if labels[i] == g]) for g in range(count))
    shares = tuple(sum(1 for lb in labels if lb == g) / len(values) for g in range(count))
    switches = sum(1 for a, b in zip(labels, labels[1:]) if a != b)
    return HostModes(count, levels, shares, tuple(labels), switches, rule)


def assign_modes(values_us: Sequence[float], levels_us: Sequence[float],
                 rule: dict[str, float] | None = None) -> HostModes:
    """Label each value with the nearest of known mode levels (nearest in log time).

    Used to put one batch size's blocks into the host modes found over a whole sweep, so that "the
    fastest host mode" is the same state at every batch size. Levels without a value keep a share of 0.

    >>> assign_modes([70.0, 120.0, 68.0], [69.0, 125.0]).labels
    (0, 1, 0)
    """
    values = _positive(values_us, "values")
    levels = tuple(sorted(_positive(levels_us, "mode levels")))
    logs = [math.log(v) for v in levels]
    labels = tuple(min(range(len(levels)), key=lambda g: abs(math.log(v) - logs[g])) for v in values)
    shares = tuple(sum(1 for lb in labels if lb == g) / len(values) for g in range(len(levels)))
    switches = sum(1 for a, b in zip(labels, labels[1:]) if a != b)
    return HostModes(len(levels), levels, shares, labels, switches, rule)


@dataclass(frozen=True)
class PairedSpeedup:
    """eager / graph per pair of neighbouring blocks, summarised.

    Attributes:
        ratios: the speedup of every pair, in measurement order.
        p10, p50, p90: order statistics of `ratios`.
        spread_pct: (p90 - p10) / p50 in %: how much the pairs disagree.
        by_mode: median pair speedup within each mode of `modes`, fastest mode first (None for a mode
            no pair fell into, possible when the modes come from elsewhere: `assign_modes`).
        modes: the modes the pairs were put into (by default, those of the eager blocks).
    """

    ratios: tuple[float, ...]
    p10: float
    p50: float
    p90: float
    spread_pct: float
    by_mode: tuple[float | None, ...]
    modes: HostModes

    @property
    def pairs(self) -> int:
        return len(self.ratios)

    @property
    def fastest_mode(self) -> float | None:
        """The median speedup of the pairs that ran in the fastest mode (None if no pair did)."""
        return self.by_mode[0]

    def describe(self) -> str:
        """One line, e.g. "3.96x (p10-p90 3.50-4.43x over 6 pairs; fastest host mode 3.50x)"."""
        text = f"{self.p50:.2f}x (p10-p90 {self.p10:.2f}-{self.p90:.2f}x over {self.pairs} pairs"
        if self.modes.count > 1:
            fastest = "not seen" if self.fastest_mode is None else f"{self.fastest_mode:.2f}x"
            text += f"; fastest host mode {fastest}"
        return text + ")"

    def to_dict(self) -> dict[str, Any]:
        return {"ratios": list(self.ratios), "p10": self.p10, "p50": self.p50, "p90": self.p90,
                "spread_pct": self.spread_pct, "by_mode": list(self.by_mode), "modes": self.modes.to_dict()}


def paired_speedup(eager_blocks_us: Sequence[float], graph_blocks_us: Sequence[float],
                   modes: HostModes | None = None) -> PairedSpeedup:
    """The speedup of every (eager block i, graph block i) pair, with its spread and per-mode medians.

    Args:
        eager_blocks_us, graph_blocks_us: block medians, paired by index (same length).
        modes: the eager blocks' modes (default: `detect_modes(eager_blocks_us)`).
    """
    eager = _positive(eager_blocks_us, "eager block medians")
    graph = _positive(graph_blocks_us, "graph block medians")
    if len(eager) != len(graph):
        raise StatsError(f"blocks pair up one to one: got {len(eager)} eager and {len(graph)} graph blocks")
    modes = modes or detect_modes(eager)
    if modes.blocks != len(eager):
        raise StatsError(f"the modes describe {modes.blocks} blocks but there are {len(eager)} pairs")
    ratios = tuple(e / g for e, g in zip(eager, graph))
    p10, p50, p90 = (percentile(ratios, q) for q in (10.0, 50.0, 90.0))
    in_mode = [[r for r, lb in zip(ratios, modes.labels) if lb == g] for g in range(modes.count)]
    by_mode = tuple(median(rs) if rs else None for rs in in_mode)
    return PairedSpeedup(ratios, p10, p50, p90, 100.0 * (p90 - p10) / p50, by_mode, modes)


#: how far from a reference host speed a block's reading may lie and still count as "at" it (± %)
HOST_BAND_PCT = 10.0
#: pairs at the reference host speed that `graphlab repro` waits for at every batch size
MIN_MATCHED_PAIRS = 8
#: the host readings a block can carry, by name: a sweep point's field for each
READINGS = {"host": "block_host_us", "dispatch": "block_dispatch_us"}


def in_band(value_us: float, level_us: float, band_pct: float = HOST_BAND_PCT) -> bool:
    """True when a reading lies within ±`band_pct` % (on a log scale) of `level_us`.

    >>> in_band(66.0, 63.0), in_band(71.0, 63.0), in_band(58.0, 63.0)
    (True, False, True)
    """
    factor = 1.0 + band_pct / 100.0
    return level_us / factor <= value_us <= level_us * factor


@dataclass(frozen=True)
class HostTarget:
    """A host speed to compare at: `reading` ("host" or "dispatch") within ±`band_pct` % of `level_us`,
    and how many pairs at that speed a run should collect (`min_pairs`)."""

    reading: str
    level_us: float
    band_pct: float = HOST_BAND_PCT
    min_pairs: int = MIN_MATCHED_PAIRS

    def __post_init__(self) -> None:
        if self.reading not in READINGS:
            raise StatsError(f"reading must be one of {', '.join(READINGS)}, got {self.reading!r}")
        if self.level_us <= 0 or self.band_pct <= 0 or self.min_pairs < 1:
            raise StatsError(f"a host target needs level_us > 0, band_pct > 0 and min_pairs >= 1, got {self}")

    def matching(self, eager_readings: Sequence[float], graph_readings: Sequence[float],
                 before: Sequence[float | None] | None = None) -> list[int]:
        """Indices of the pairs whose eager *and* graph block readings both lie in the band, and, given
        `before` (the reading taken just before each pair, `readings_before_pairs`), that one too: the
        host was at the target speed before, between and after the pair's two blocks, so a pair that
        straddles a switch of host speed does not count.

        >>> t = HostTarget("host", 63.0)
        >>> t.matching([64, 110, 62], [63, 108, 65]), t.matching([64, 110, 62], [63, 108, 65], [None, 64, 109])
        ([0, 2], [])
        """
        band = self.level_us, self.band_pct
        return [i for i, (e, g) in enumerate(zip(eager_readings, graph_readings))
                if in_band(e, *band) and in_band(g, *band)
                and (before is None or (before[i] is not None and in_band(before[i], *band)))]

    def describe(self) -> str:
        return f"{self.reading} reading {self.level_us:.1f} µs ±{self.band_pct:g}%"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class HostMatched:
    """The pairs of one batch size that ran at a target host speed: how many, and their medians
    (None when no pair did)."""

    target: HostTarget
    pairs: int
    speedup: float | None
    eager_us: float | None
    graph_us: float | None

    @property
    def enough(self) -> bool:
        """True when the run has the target's `min_pairs` pairs at that speed: enough to compare."""
        return self.pairs >= self.target.min_pairs

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target.to_dict(), "pairs": self.pairs, "speedup": self.speedup,
                "eager_us": self.eager_us, "graph_us": self.graph_us}


def readings_before_pairs(eager_start_ms: Sequence[float], graph_start_ms: Sequence[float],
                          timeline: Sequence[tuple[float, float]]) -> list[float | None]:
    """For each pair of one batch size: the reading taken just before the pair's first block began.

    `timeline` is (block start ms, the reading taken after that block) for every block of the sweep,
    at every batch size (one clock); the reading before a block is the one after the block before it
    in time. None for a pair that opened the sweep.

    >>> readings_before_pairs([10.0, 50.0], [20.0, 40.0], [(0, 60.0), (10, 61.0), (20, 62.0), (30, 99.0),
    ...                                                      (40, 63.0), (50, 64.0)])
    [60.0, 99.0]
    """
    ordered = sorted(timeline)
    starts = [t for t, _ in ordered]
    out: list[float | None] = []
    for e, g in zip(eager_start_ms, graph_start_ms):
        first = bisect_left(starts, min(e, g))
        out.append(ordered[first - 1][1] if first > 0 else None)
    return out


def host_matched(eager_blocks_us: Sequence[float], graph_blocks_us: Sequence[float],
                 eager_readings: Sequence[float], graph_readings: Sequence[float], target: HostTarget,
                 before: Sequence[float | None] | None = None) -> HostMatched:
    """Speedup, eager and graph block medians over the pairs that ran at `target`'s host speed.

    >>> t = HostTarget("host", 63.0)
    >>> m = host_matched([700, 1100, 720], [180, 190, 182], [64, 110, 62], [63, 108, 65], t)
    >>> m.pairs, round(m.speedup, 2), m.eager_us
    (2, 3.92, 710.0)
    """
    if not len(eager_blocks_us) == len(graph_blocks_us) == len(eager_readings) == len(graph_readings):
        raise StatsError("blocks and readings pair up one to one: got "
                         f"{len(eager_blocks_us)}/{len(graph_blocks_us)} blocks and "
                         f"{len(eager_readings)}/{len(graph_readings)} readings")
    idx = target.matching(eager_readings, graph_readings, before)
    if not idx:
        return HostMatched(target, 0, None, None, None)
    eager = [eager_blocks_us[i] for i in idx]
    graph = [graph_blocks_us[i] for i in idx]
    return HostMatched(target, len(idx), median([e / g for e, g in zip(eager, graph)]), median(eager), median(graph))


__all__ = ["HOST_BAND_PCT", "MIN_MATCHED_PAIRS", "READINGS", "HostMatched", "HostModes", "HostTarget",
           "PairedSpeedup", "assign_modes", "detect_modes", "host_matched", "in_band", "optimal_partition",
           "paired_speedup", "readings_before_pairs"]
