"""Now vs recorded: a sweep re-run compared with the recording it reproduces, batch size by batch size.

Pure (no torch): standard library only. `graphlab repro NAME` (graphlab.timing.repro) makes the new sweep
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
- the host modes each run saw (eager-block modes at that batch size; host-speed modes of the sweep);
- a *prediction* of eager and the speedup from the host reading (`predict_row`): the host reading's
  ratio now / recorded (`host_ratio`, the dispatcher's where both have it) scales each call's submit
  (host) part, the wait (GPU) part stays: eager_pred = submit * k + wait, graph_pred likewise,
  speedup_pred = speedup_rec * (eager_pred / eager_rec) / (graph_pred / graph_rec).

The verdict (`ReproReport.verdict`, `graphlab repro --check`) judges only what should not move, the
graph's GPU part, within 3%, on any host; it explains what should move, eager and the speedup, with the
prediction beside the measured value (docs/latency-method.md, "A verdict on any host").

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
    host_ratio: float | None = None
    eager_predicted_us: float | None = None
    graph_predicted_us: float | None = None
    speedup_predicted: float | None = None

    @property
    def eager_vs_predicted(self) -> float | None:
        """Eager measured now / predicted from the host reading (1.0: the prediction held)."""
        return _ratio(self.eager_p50_now_us, self.eager_predicted_us)

    @property
    def speedup_vs_predicted(self) -> float | None:
        """Paired speedup measured now / predicted from the host reading."""
        return _ratio(self.speedup_now, self.speedup_predicted)

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
        out.update(eager_vs_predicted=self.eager_vs_predicted, speedup_vs_predicted=self.speedup_vs_predicted)
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


#: the prediction's goal: eager and the speedup within this of the prediction at batch <= PREDICT_MAX_BATCH
PREDICTION_TOLERANCE_PCT = 10.0
PREDICT_MAX_BATCH = 16


def host_ratio(now: Sweep, recorded: Sweep, batch_size: int) -> tuple[float | None, str | None]:
    """(host reading now / recorded at this batch size, which reading): the median reading after the
    point's eager and graph blocks in each run; the dispatcher's (tiny torch CPU ops: what eager pays per
    op) where both runs have it, else the pure-Python workload's; (None, None) without readings.

    Lower readings are faster: 0.82 means this host ran 18% faster than the recording's.
    """
    for reading in ("dispatch", "host"):
        if now.has_readings(reading) and recorded.has_readings(reading):
            field_name = {"dispatch": "block_dispatch_us", "host": "block_host_us"}[reading]
            values = []
            for sweep in (now, recorded):
                both = [v for mode in ("eager", "graph") for v in getattr(sweep.point(batch_size, mode), field_name)]
                values.append(median(both) if both else None)
            if values[0] and values[1]:
                return values[0] / values[1], reading
    return None, None


def predicted_us(point: Any, k: float) -> float:
    """A call's wall time on a host whose reading is k times the recording's: its submit (host) part
    scales by k, its wait (GPU) part stays; without a split, all of it scales (a host-bound call)."""
    submit, wait = point.submit_p50_us, point.wait_p50_us
    if submit is None or wait is None:
        return point.p50_us * k
    return submit * k + max(0.0, wait)


def predict_row(recorded: Sweep, batch_size: int, k: float | None, speedup_recorded: float
                ) -> tuple[float | None, float | None, float | None]:
    """(eager, graph, speedup) predicted for this host from the recording and the host ratio `k`."""
    if k is None:
        return None, None, None
    e_rec, g_rec = recorded.point(batch_size, "eager"), recorded.point(batch_size, "graph")
    eager, graph = predicted_us(e_rec, k), predicted_us(g_rec, k)
    speedup = speedup_recorded * (eager / e_rec.p50_us) / (graph / g_rec.p50_us)
    return eager, graph, speedup


@dataclass(frozen=True)
class Verdict:
    """What `graphlab repro --check` concludes: `status` ("passed", "failed", "not comparable"), the
    judged line (the graph's GPU part) and the explained lines (eager and the speedup vs prediction)."""

    status: str
    judged: str
    explained: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def __str__(self) -> str:
        return "\n".join([f"check: {self.status}: {self.judged}", *(f"  {line}" for line in self.explained)])

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "judged": self.judged, "explained": list(self.explained)}


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

    def verdict(self) -> Verdict:
        """Judge the graph's GPU part (within 3% at every batch size); explain eager and the speedup by
        the host reading. Sweeps without the submit/wait split are judged on graph p50 at the recording's
        host speed, then on graph p50 in the fastest host mode, then on graph p50."""
        judged = [("graph wait (GPU part)", [r.graph_wait_ratio for r in self.rows]),
                  ("graph p50 at the recorded host speed", [r.matched_graph_ratio for r in self.rows]),
                  ("graph p50 in the fastest host mode", [r.graph_fastest_ratio for r in self.rows]),
                  ("graph p50", [r.graph_ratio for r in self.rows])]
        what, ratios = next(((w, v) for w, v in judged if all(x is not None for x in v)), (None, []))
        explained = self._explained()
        if what is None:
            return Verdict("not comparable", "no graph figure in both runs at every batch size", explained)
        off = [(r.batch_size, x) for r, x in zip(self.rows, ratios) if not _within(x, GRAPH_TOLERANCE_PCT)]
        span = f"{min(ratios):.3f}-{max(ratios):.3f}"
        if off:
            where = ", ".join(f"batch {b} {x:.3f}" for b, x in off)
            return Verdict("failed", f"{what} not within {GRAPH_TOLERANCE_PCT:g}% ({where}; now / recorded)",
                           explained)
        return Verdict("passed", f"{what} came back within {GRAPH_TOLERANCE_PCT:g}% at every batch size "
                                 f"(now / recorded {span})", explained)

    def _explained(self) -> tuple[str, ...]:
        rows = [r for r in self.rows if r.host_ratio is not None]
        if not rows:
            return ("eager and the speedup are not predicted: a run has no host reading after its blocks",)
        k = [r.host_ratio for r in rows]
        lines = [f"host reading now / recorded {min(k):.2f}-{max(k):.2f} (below 1: this host runs Python and "
                 f"torch's dispatcher faster): eager and the speedup move with it, the GPU part does not"]
        small = [r for r in rows if r.batch_size <= PREDICT_MAX_BATCH]
        for what, values in (("eager", [r.eager_vs_predicted for r in small]),
                             ("speedup", [r.speedup_vs_predicted for r in small])):
            held = [v for v in values if _within(v, PREDICTION_TOLERANCE_PCT)]
            if values:
                lines.append(f"{what} measured / predicted from the host reading: {min(values):.3f}-{max(values):.3f} "
                             f"at batch <= {PREDICT_MAX_BATCH} ({len(held)}/{len(values)} within "
                             f"{PREDICTION_TOLERANCE_PCT:g}%)")
        return tuple(lines)

    def prediction_table(self) -> str:
        """Point by point: eager and the speedup, measured now beside predicted from the recording and the
        host reading, and the recording's own."""
        def fmt(value: float | None, spec: str) -> str:
            return "-" if value is None else format(value, spec)

        lines = [f"{self.model}: what should move, predicted from the host reading (eager_pred = submit x k + wait)",
                 f"{'batch':>5} | {'k':>5} | {'eager µs':^28} | {'speedup':^27}",
                 f"{'':>5} | {'':>5} | {'rec':>7} {'pred':>7} {'now':>7} {'n/p':>5} | {'rec':>6} {'pred':>6} "
                 f"{'now':>6} {'n/p':>6}"]
        for r in self.rows:
            lines.append(f"{r.batch_size:>5} | {fmt(r.host_ratio, '>5.2f')} | {r.eager_p50_recorded_us:>7.1f} "
                         f"{fmt(r.eager_predicted_us, '>7.1f')} {r.eager_p50_now_us:>7.1f} "
                         f"{fmt(r.eager_vs_predicted, '>5.2f')} | {r.speedup_recorded:>5.2f}x "
                         f"{fmt(r.speedup_predicted, '>5.2f')}x {r.speedup_now:>5.2f}x {fmt(r.speedup_vs_predicted, '>6.3f')}")
        lines.append("  k = host reading now / recorded; n/p = measured now / predicted")
        return "\n".join(lines)

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
                "verdict": self.verdict().to_dict(),
                "tolerances_pct": {"graph_p50": GRAPH_TOLERANCE_PCT, "speedup": SPEEDUP_TOLERANCE_PCT},
                "host_now": self.host_now, "host_recorded": self.host_recorded,
                "rows": [r.to_dict() for r in self.rows],
                "target": self.target.to_dict() if self.target is not None else None,
                "conditions_now": dict(self.conditions_now), "conditions_recorded": dict(self.conditions_recorded)}


def check_verdict(goals: dict[str, bool | None]) -> str:
    """The verdict's status line from a comparison's goals: "passed", or which goal failed.

    Only what should not move between hosts is judged: the graph call's wait part (GPU-bound) within
    3%; for a sweep without the split, graph p50 at the recording's host speed, then in the fastest host
    mode, then graph p50 itself. Eager and the speedup move with the host and are explained by
    `ReproReport.verdict`, not judged (docs/latency-method.md, "A verdict on any host").

    >>> check_verdict({"graph_wait_within_3pct": True, "speedup_at_recorded_host_speed_within_10pct": None})
    'passed'
    >>> check_verdict({"graph_wait_within_3pct": False})
    'failed: graph wait (GPU part) not within 3%'
    >>> check_verdict({})
    'not comparable: no graph figure in both runs'
    """
    for key, what in (("graph_wait_within_3pct", "graph wait (GPU part)"),
                      ("graph_p50_at_recorded_host_speed_within_3pct", "graph p50 at the recorded host speed"),
                      ("graph_p50_in_fastest_mode_within_3pct", "graph p50 in the fastest host mode"),
                      ("graph_p50_within_3pct", "graph p50")):
        if goals.get(key) is not None:
            return "passed" if goals[key] else f"failed: {what} not within {GRAPH_TOLERANCE_PCT:g}%"
    return "not comparable: no graph figure in both runs"


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
        k, _ = host_ratio(now, recorded, b)
        prediction = predict_row(recorded, b, k, s_rec)
        rows.append(ReproRow(
            b, g_now.p50_us, g_rec.p50_us,
            now.point(b, "eager").p50_us, recorded.point(b, "eager").p50_us,
            s_now, s_rec, basis_rec, fast_now, fast_rec, g_fast_now, g_fast_rec,
            modes_now.count if modes_now else None, modes_rec.count if modes_rec else None,
            tuple(round(v, 1) for v in modes_now.levels_us) if modes_now else (),
            tuple(round(v, 1) for v in modes_rec.levels_us) if modes_rec else (),
            _matched(now, b, target), _matched(recorded, b, target),
            g_now.submit_p50_us, g_rec.submit_p50_us, g_now.wait_p50_us, g_rec.wait_p50_us,
            k, *prediction,
        ))
    host_now, host_rec = now.host_speed_modes(), recorded.host_speed_modes()
    return ReproReport(now.model, tuple(rows), host_now.describe() if host_now else None,
                       host_rec.describe() if host_rec else None, dict(now.conditions), dict(recorded.conditions),
                       target)


__all__ = ["GRAPH_TOLERANCE_PCT", "PREDICTION_TOLERANCE_PCT", "PREDICT_MAX_BATCH", "REPRO_MAX_EXTRA_S",
           "SPEEDUP_TOLERANCE_PCT", "ReproReport", "ReproRow", "Verdict", "check_verdict", "compare_sweeps",
           "host_ratio", "predict_row", "predicted_us", "recorded_target"]
