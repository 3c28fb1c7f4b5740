"""Now vs recorded: a sweep re-run compared with the recording it reproduces, batch size by batch size.

Layer 0 (pure): standard library only. `graphlab repro NAME` (graphlab.timing.repro) makes the new sweep
on a GPU; this module compares it with the recorded one and says whether it came back.

What is compared, per batch size (ratio = now / recorded):
- graph p50, and its two parts (sweeps that keep `block_submit_us`): the *submit* part (host work until
  the call returns: copy in, launch) and the *wait* part (until the GPU is done). The wait is GPU-bound
  and comes back (goal: within `GRAPH_TOLERANCE_PCT`, 3%); the submit part moves with the host's speed
  as eager does, so the whole graph p50 of a small, host-bound graph moves with it
  (docs/latency-method.md, "The graph call in two parts"); also graph p50 over the pairs in the
  fastest host mode;
- eager p50: host-bound at small batch, so it moves with the host's speed state; shown, not judged;
- paired speedup, the median over block pairs (goal: within `SPEEDUP_TOLERANCE_PCT`, 10%), and the
  same in the fastest host mode each run saw (the like-for-like figure when the two runs spent
  different shares of their time in the host's slow state);
- the same figures over the pairs that ran at the recording's host speed (`HostTarget`: the fastest
  level of the recording's host readings, ±10%; both blocks of a pair in the band): the comparison
  made at one host speed. `graphlab repro` runs extra rounds until the re-run has enough such pairs;
  a run that never reached that speed says so instead of comparing two machine states;
- the host modes each run saw (eager-block modes at that batch size; host-speed modes of the sweep).

    >>> report = compare_sweeps(now, recorded)          # doctest: +SKIP
    >>> print(report.table()); report.goals_met()       # doctest: +SKIP
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from graphlab.timing.host_modes import HostMatched, HostTarget
from graphlab.timing.results import Sweep
from graphlab.stats import median
from graphlab.errors import ResultsError

GRAPH_TOLERANCE_PCT = 3.0
SPEEDUP_TOLERANCE_PCT = 10.0
#: how long `graphlab repro` goes on by default waiting for the recording's host speed (s)
REPRO_MAX_EXTRA_S = 40.0


def _ratio(now: float | None, then: float | None) -> float | None:
    if now is None or then is None or then == 0:
        return None
    return now / then


def _within(ratio: float | None, pct: float) -> bool | None:
    return None if ratio is None else abs(ratio - 1.0) * 100.0 <= pct


@dataclass(frozen=True)
class ReproRow:
    """One batch size, now vs recorded (None where a run has no such figure, e.g. an old recording)."""

    batch_size: int
    graph_p50_now_us: float
    graph_p50_recorded_us: float
    eager_p50_now_us: float
    eager_p50_recorded_us: float
    speedup_now: float
    speedup_recorded: float
    speedup_basis_recorded: str
    fastest_speedup_now: float | None
    fastest_speedup_recorded: float | None
    graph_fastest_now_us: float | None
    graph_fastest_recorded_us: float | None
    modes_now: int | None
    modes_recorded: int | None
    mode_levels_now_us: tuple[float, ...]
    mode_levels_recorded_us: tuple[float, ...]
    matched_now: HostMatched | None = None
    matched_recorded: HostMatched | None = None
    graph_submit_now_us: float | None = None
    graph_submit_recorded_us: float | None = None
    graph_wait_now_us: float | None = None
    graph_wait_recorded_us: float | None = None

    @property
    def graph_wait_ratio(self) -> float | None:
        """Graph wait part now / recorded (None unless both sweeps kept the submit times)."""
        return _ratio(self.graph_wait_now_us, self.graph_wait_recorded_us)

    @property
    def graph_submit_ratio(self) -> float | None:
        return _ratio(self.graph_submit_now_us, self.graph_submit_recorded_us)

    @property
    def matched_enough(self) -> bool:
        """Both runs have the target's `min_pairs` pairs at the recording's host speed (else the
        matched figures rest on a block or two, and the comparison is not made)."""
        return (self.matched_now is not None and self.matched_recorded is not None
                and self.matched_now.enough and self.matched_recorded.enough)

    @property
    def matched_speedup_ratio(self) -> float | None:
        """Paired speedup now / recorded, both over the pairs at the recording's host speed (None unless
        both runs have enough such pairs)."""
        if not self.matched_enough:
            return None
        return _ratio(self.matched_now.speedup, self.matched_recorded.speedup)

    @property
    def matched_graph_ratio(self) -> float | None:
        if not self.matched_enough:
            return None
        return _ratio(self.matched_now.graph_us, self.matched_recorded.graph_us)

    @property
    def graph_ratio(self) -> float:
        return self.graph_p50_now_us / self.graph_p50_recorded_us

    @property
    def eager_ratio(self) -> float:
        return self.eager_p50_now_us / self.eager_p50_recorded_us

    @property
    def speedup_ratio(self) -> float:
        return self.speedup_now / self.speedup_recorded

    @property
    def fastest_speedup_ratio(self) -> float | None:
        return _ratio(self.fastest_speedup_now, self.fastest_speedup_recorded)

    @property
    def graph_fastest_ratio(self) -> float | None:
        return _ratio(self.graph_fastest_now_us, self.graph_fastest_recorded_us)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ("matched_now", "matched_recorded"):
            value = getattr(self, key)
            out[key] = value.to_dict() if value is not None else None
        out.update(graph_wait_ratio=self.graph_wait_ratio, graph_submit_ratio=self.graph_submit_ratio,
                   graph_wait_within_goal=_within(self.graph_wait_ratio, GRAPH_TOLERANCE_PCT))
        out.update(matched_speedup_ratio=self.matched_speedup_ratio, matched_graph_ratio=self.matched_graph_ratio,
                   matched_speedup_within_goal=_within(self.matched_speedup_ratio, SPEEDUP_TOLERANCE_PCT))
        out.update(graph_ratio=self.graph_ratio, eager_ratio=self.eager_ratio, speedup_ratio=self.speedup_ratio,
                   fastest_speedup_ratio=self.fastest_speedup_ratio, graph_fastest_ratio=self.graph_fastest_ratio,
                   graph_within_goal=_within(self.graph_ratio, GRAPH_TOLERANCE_PCT),
                   speedup_within_goal=_within(self.speedup_ratio, SPEEDUP_TOLERANCE_PCT),
                   fastest_speedup_within_goal=_within(self.fastest_speedup_ratio, SPEEDUP_TOLERANCE_PCT))
        out["mode_levels_now_us"] = list(self.mode_levels_now_us)
        out["mode_levels_recorded_us"] = list(self.mode_levels_recorded_us)
        return out


def _speedups(sweep: Sweep, batch_size: int) -> tuple[float, str, float | None, float | None]:
    """(speedup, its basis, fastest-mode speedup, graph block median in the fastest-mode pairs)."""
    if sweep.is_paired(batch_size):
        pairs = sweep.paired(batch_size)
        graph = sweep.point(batch_size, "graph").block_p50_us
        in_fastest = [g for g, label in zip(graph, pairs.modes.labels) if label == 0]
        return pairs.p50, "pairs", pairs.by_mode[0], median(in_fastest)
    return sweep.speedup(batch_size, basis="medians"), "medians", None, None


@dataclass(frozen=True)
class ReproReport:
    """A re-run sweep against its recording: one `ReproRow` per batch size both measured."""

    model: str
    rows: tuple[ReproRow, ...]
    host_now: str | None
    host_recorded: str | None
    conditions_now: dict[str, Any]
    conditions_recorded: dict[str, Any]
    target: HostTarget | None = None

    def goals_met(self) -> dict[str, bool | None]:
        """Whether every batch size met each goal (None when no batch size has the figure)."""

        def every(values: list[bool | None]) -> bool | None:
            known = [v for v in values if v is not None]
            return all(known) if known else None

        def every_point(values: list[bool | None]) -> bool | None:  # None unless every batch size has it
            return None if any(v is None for v in values) else all(values)

        return {
            "graph_p50_within_3pct": every([_within(r.graph_ratio, GRAPH_TOLERANCE_PCT) for r in self.rows]),
            "graph_wait_within_3pct": every_point(
                [_within(r.graph_wait_ratio, GRAPH_TOLERANCE_PCT) for r in self.rows]),
            "graph_p50_in_fastest_mode_within_3pct": every(
                [_within(r.graph_fastest_ratio, GRAPH_TOLERANCE_PCT) for r in self.rows]),
            "paired_speedup_within_10pct": every([_within(r.speedup_ratio, SPEEDUP_TOLERANCE_PCT) for r in self.rows]),
            "fastest_mode_speedup_within_10pct": every(
                [_within(r.fastest_speedup_ratio, SPEEDUP_TOLERANCE_PCT) for r in self.rows]),
            "graph_p50_at_recorded_host_speed_within_3pct": every_point(
                [_within(r.matched_graph_ratio, GRAPH_TOLERANCE_PCT) for r in self.rows]),
            "speedup_at_recorded_host_speed_within_10pct": every_point(
                [_within(r.matched_speedup_ratio, SPEEDUP_TOLERANCE_PCT) for r in self.rows]),
        }

    def matched_table(self) -> str:
        """Point by point, over the pairs at the recording's host speed: pairs, graph, eager and speedup."""
        if self.target is None:
            return "  no comparison at one host speed: the recording has no host reading after every block"

        def fmt(value: float | None, spec: str) -> str:
            return "-" if value is None else format(value, spec)

        lines = [f"{self.model}: at the recording's host speed ({self.target.describe()}; pairs whose two blocks "
                 "both read in the band)",
                 f"{'batch':>5} | {'pairs':^9} | {'graph µs':^21} | {'eager µs':^21} | {'speedup':^22}",
                 f"{'':>5} | {'now':>4} {'rec':>4} | {'now':>6} {'rec':>6} {'ratio':>7} | {'now':>6} {'rec':>6} "
                 f"{'ratio':>7} | {'now':>6} {'rec':>6} {'ratio':>7}"]
        for r in self.rows:
            a, b = r.matched_now, r.matched_recorded
            if a is None or b is None:
                continue
            flag = "" if _within(r.matched_speedup_ratio, SPEEDUP_TOLERANCE_PCT) in (True, None) else "!"
            eager_ratio = _ratio(a.eager_us, b.eager_us) if r.matched_enough else None
            lines.append(f"{r.batch_size:>5} | {a.pairs:>4} {b.pairs:>4} | {fmt(a.graph_us, '>6.1f')} "
                         f"{fmt(b.graph_us, '>6.1f')} {fmt(r.matched_graph_ratio, '>7.3f')} | "
                         f"{fmt(a.eager_us, '>6.1f')} {fmt(b.eager_us, '>6.1f')} "
                         f"{fmt(eager_ratio, '>7.3f')} | {fmt(a.speedup, '>5.2f')}x "
                         f"{fmt(b.speedup, '>5.2f')}x {fmt(r.matched_speedup_ratio, '>6.3f')}{flag}"
                         f"{'' if r.matched_enough else f'  (fewer than {self.target.min_pairs} pairs: not compared)'}")
        if not any(r.matched_enough for r in self.rows):
            lines.append("  the re-run never ran long enough at the recording's host speed: the two runs saw "
                         "different machine states, and no speedup of one can be compared with the other's")
        return "\n".join(lines)

    def split_table(self) -> str:
        """Point by point, the graph call in its two parts: submit (host work until the call returned) and
        wait (until the GPU was done); now / recorded. One line saying so when a sweep has no split."""
        rows = [r for r in self.rows if r.graph_wait_ratio is not None]
        if not rows:
            return "  no submit/wait split: a sweep was recorded without block_submit_us (an older recording)"
        lines = [f"{self.model}: the graph call in two parts (median over blocks; goal: wait within "
                 f"{GRAPH_TOLERANCE_PCT:g}%)",
                 f"{'batch':>5} | {'graph p50 µs':^22} | {'submit (host) µs':^22} | {'wait (GPU) µs':^22}",
                 f"{'':>5} | {'now':>6} {'rec':>6} {'ratio':>7} | {'now':>6} {'rec':>6} {'ratio':>7} | "
                 f"{'now':>6} {'rec':>6} {'ratio':>7}"]
        for r in rows:
            flag = "" if _within(r.graph_wait_ratio, GRAPH_TOLERANCE_PCT) else "!"
            lines.append(f"{r.batch_size:>5} | {r.graph_p50_now_us:>6.1f} {r.graph_p50_recorded_us:>6.1f} "
                         f"{r.graph_ratio:>7.3f} | {r.graph_submit_now_us:>6.1f} {r.graph_submit_recorded_us:>6.1f} "
                         f"{r.graph_submit_ratio:>7.3f} | {r.graph_wait_now_us:>6.1f} {r.graph_wait_recorded_us:>6.1f} "
                         f"{r.graph_wait_ratio:>6.3f}{flag}")
        lines.append("  the submit part moves with the host's speed (as eager does); the wait part is the GPU's")
        return "\n".join(lines)

    def table(self) -> str:
        """Point by point: graph p50, eager p50, paired speedup, fastest-mode speedup, modes; now / recorded."""

        def fmt(value: float | None, spec: str) -> str:
            return "-" if value is None else format(value, spec)

        lines = [f"{self.model}: now vs recorded (ratio = now / recorded; goals: graph within "
                 f"{GRAPH_TOLERANCE_PCT:g}%, speedup within {SPEEDUP_TOLERANCE_PCT:g}%)",
                 f"{'batch':>5} | {'graph p50 µs':^24} | {'fast':^7} | {'eager p50 µs':^24} | "
                 f"{'paired speedup':^22} | {'fastest-mode speedup':^22} | modes",
                 f"{'':>5} | {'now':>7} {'rec':>7} {'ratio':>7} | {'ratio':>7} | {'now':>7} {'rec':>7} {'ratio':>7} | "
                 f"{'now':>6} {'rec':>6} {'ratio':>7} | {'now':>6} {'rec':>6} {'ratio':>7} | now/rec"]
        for r in self.rows:
            flag_g = "" if _within(r.graph_ratio, GRAPH_TOLERANCE_PCT) else "!"
            flag_s = "" if _within(r.speedup_ratio, SPEEDUP_TOLERANCE_PCT) else "!"
            fast_ok = _within(r.fastest_speedup_ratio, SPEEDUP_TOLERANCE_PCT)
            flag_f = "" if fast_ok in (True, None) else "!"
            lines.append(
                f"{r.batch_size:>5} | {r.graph_p50_now_us:>7.1f} {r.graph_p50_recorded_us:>7.1f} "
                f"{r.graph_ratio:>6.3f}{flag_g or ' '} | {fmt(r.graph_fastest_ratio, '>6.3f')}  | "
                f"{r.eager_p50_now_us:>7.1f} {r.eager_p50_recorded_us:>7.1f} "
                f"{r.eager_ratio:>6.3f}  | {r.speedup_now:>5.2f}x {r.speedup_recorded:>5.2f}x "
                f"{r.speedup_ratio:>6.3f}{flag_s or ' '} | {fmt(r.fastest_speedup_now, '>5.2f')}x "
                f"{fmt(r.fastest_speedup_recorded, '>5.2f')}x {fmt(r.fastest_speedup_ratio, '>6.3f')}{flag_f or ' '} | "
                f"{fmt(r.modes_now, 'd')}/{fmt(r.modes_recorded, 'd')}")
        lines.append("  ! = outside the goal; fast = graph p50 over the pairs in the fastest host mode, now / "
                     "recorded; modes = host speed modes of the eager blocks at that batch size")
        if self.host_now or self.host_recorded:
            lines.append(f"  host speed now:      {self.host_now or 'not read'}")
            recorded = self.host_recorded or "not read (recorded before the paired method)"
            lines.append(f"  host speed recorded: {recorded}")
        goals = self.goals_met()
        lines.append("  goals: " + ", ".join(f"{k} {'yes' if v else 'no' if v is False else 'n/a'}"
                                              for k, v in goals.items()))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()

    def to_dict(self) -> dict[str, Any]:
        return {"schema": "graphlab.repro/1", "model": self.model, "goals": self.goals_met(),
                "tolerances_pct": {"graph_p50": GRAPH_TOLERANCE_PCT, "speedup": SPEEDUP_TOLERANCE_PCT},
                "host_now": self.host_now, "host_recorded": self.host_recorded,
                "rows": [r.to_dict() for r in self.rows],
                "target": self.target.to_dict() if self.target is not None else None,
                "conditions_now": dict(self.conditions_now), "conditions_recorded": dict(self.conditions_recorded)}


def check_verdict(goals: dict[str, bool | None]) -> str:
    """What `graphlab repro --check` says of a comparison's goals: "passed", or why not.

    It judges the figures that are like for like between two processes: the graph call's wait part
    (GPU-bound) within 3%, and the paired speedup over the pairs at the recording's host speed within
    10%. The graph call's submit part is host work and moves with the host's speed as eager does, so
    the whole graph p50 is shown but not judged; for a recording without the split (older sweeps) the
    graph p50 at the recording's host speed is judged instead (docs/latency-method.md).

    >>> check_verdict({"graph_wait_within_3pct": True, "speedup_at_recorded_host_speed_within_10pct": True})
    'passed'
    >>> check_verdict({"graph_wait_within_3pct": False, "speedup_at_recorded_host_speed_within_10pct": True})
    'failed: graph wait (GPU part) not within 3%'
    >>> check_verdict({"graph_wait_within_3pct": True, "speedup_at_recorded_host_speed_within_10pct": None})
    "not comparable: too few pairs at the recording's host speed (fewer than the target's min_pairs at some batch size)"
    """
    graph_key = "graph_wait_within_3pct"
    graph_what = "graph wait (GPU part)"
    if goals.get(graph_key) is None:
        graph_key, graph_what = "graph_p50_at_recorded_host_speed_within_3pct", "graph p50 at the recorded host speed"
    speed_ok = goals.get("speedup_at_recorded_host_speed_within_10pct")
    if speed_ok is None or goals.get(graph_key) is None:
        return ("not comparable: too few pairs at the recording's host speed (fewer than the target's min_pairs at "
                "some batch size)")
    missed = [what for what, ok in ((f"{graph_what} not within 3%", goals[graph_key]),
                                    ("speedup at the recorded host speed not within 10%", speed_ok)) if not ok]
    return "failed: " + "; ".join(missed) if missed else "passed"


def recorded_target(recorded: Sweep) -> HostTarget | None:
    """The host speed to compare at: the fastest level of the recording's readings (the dispatcher's
    where the recording has them, else the pure-Python workload's); None without readings."""
    for reading in ("dispatch", "host"):
        if recorded.has_readings(reading):
            modes = recorded.host_speed_modes(reading)
            if modes is not None:
                return HostTarget(reading, round(modes.fastest_us, 2))
    return None


def _matched(sweep: Sweep, b: int, target: HostTarget | None) -> HostMatched | None:
    if target is None or not sweep.is_paired(b) or not sweep.has_readings(target.reading):
        return None
    return sweep.at_host_speed(b, target)


def compare_sweeps(now: Sweep, recorded: Sweep, target: HostTarget | None = None) -> ReproReport:
    """Compare a re-run sweep with its recording at every batch size both measured in both modes.

    Args:
        target: the host speed to compare at (default: `recorded_target(recorded)`).
    """
    common = [b for b in recorded.batch_sizes if recorded.has(b) and now.has(b)]
    if not common:
        raise ResultsError(f"nothing to compare: the re-run measured batch sizes {now.batch_sizes}, the recording "
                           f"{recorded.batch_sizes}")
    target = target or recorded_target(recorded)
    rows = []
    for b in common:
        s_now, _, fast_now, g_fast_now = _speedups(now, b)
        s_rec, basis_rec, fast_rec, g_fast_rec = _speedups(recorded, b)
        modes_now, modes_rec = now.host_modes(b), recorded.host_modes(b)
        g_now, g_rec = now.point(b, "graph"), recorded.point(b, "graph")
        rows.append(ReproRow(
            b, g_now.p50_us, g_rec.p50_us,
            now.point(b, "eager").p50_us, recorded.point(b, "eager").p50_us,
            s_now, s_rec, basis_rec, fast_now, fast_rec, g_fast_now, g_fast_rec,
            modes_now.count if modes_now else None, modes_rec.count if modes_rec else None,
            tuple(round(v, 1) for v in modes_now.levels_us) if modes_now else (),
            tuple(round(v, 1) for v in modes_rec.levels_us) if modes_rec else (),
            _matched(now, b, target), _matched(recorded, b, target),
            g_now.submit_p50_us, g_rec.submit_p50_us, g_now.wait_p50_us, g_rec.wait_p50_us,
        ))
    host_now, host_rec = now.host_speed_modes(), recorded.host_speed_modes()
    return ReproReport(now.model, tuple(rows), host_now.describe() if host_now else None,
                       host_rec.describe() if host_rec else None, dict(now.conditions), dict(recorded.conditions),
                       target)


__all__ = ["GRAPH_TOLERANCE_PCT", "REPRO_MAX_EXTRA_S", "SPEEDUP_TOLERANCE_PCT", "ReproReport", "ReproRow",
           "check_verdict", "compare_sweeps", "recorded_target"]
