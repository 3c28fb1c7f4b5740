"""What one call costs, eight ways: summaries and tables of the overhead benchmark's results.

Pure (no torch): standard library only. The benchmark itself runs on a GPU (`graphlab.studies.overhead`,
`bench/bench_overhead.py`, `graphlab record --models overhead`); this module turns its JSON into
the figures docs/overhead.md and notebook 03 show, so every figure comes from the recording file.
The recorded benchmark is an `OverheadBenchmark`, read through the loader like every recorded result:

    >>> bench = gl.load(OverheadBenchmark)     # doctest: +SKIP
    >>> print(bench.markdown())                # doctest: +SKIP
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

from graphlab import present
from graphlab.loader import load
from graphlab.present import ShownAsTable
from graphlab.recordings import made_on
from graphlab.results_types import recorded_result, results_type
from graphlab.stats import median, percentile
from graphlab.errors import ResultsError

SCHEMA = "graphlab.overhead/1"
#: the ways one call is run, in table order, with what a timed call does
WAYS: dict[str, str] = {
    "eager": "model(x)",
    "raw_replay": "graph.replay() on a torch.cuda.CUDAGraph, inputs already in place",
    "raw_copy_replay": "static_x.copy_(x); graph.replay(): the least a request needs",
    "captured_call": "CapturedGraph(x): check, copy in, replay",
    "captured_unchecked": "CapturedGraph.unchecked(x): copy in, replay, no checks",
    "captured_replay": "CapturedGraph.replay(): replay as is",
    "make_graphed_callables": "torch.cuda.make_graphed_callables(model, (x,))(x)",
    "compile_reduce_overhead": 'torch.compile(model, mode="reduce-overhead")(x): Inductor kernels in CUDA Graph Trees',
}
#: goal of issue 8: CapturedGraph(x) host cost at most raw copy_ + replay + this, at batch 1
CALL_GAP_GOAL_US = 3.0


def summarize_blocks(values: Sequence[float]) -> dict[str, Any]:
    """Best, median, p10, p90 and spread (p90 - p10 as % of the median) of per-block figures (µs).

    >>> s = summarize_blocks([10.0, 11.0, 10.5, 12.0])
    >>> s["best"], s["median"], round(s["spread_pct"], 1)
    (10.0, 10.75, 14.4)
    """
    vals = [float(v) for v in values]
    if not vals:
        raise ResultsError("no blocks to summarise")
    mid = median(vals)
    p10, p90 = percentile(vals, 10.0), percentile(vals, 90.0)
    return {"best": min(vals), "median": mid, "p10": p10, "p90": p90,
            "spread_pct": 100.0 * (p90 - p10) / mid if mid > 0 else 0.0, "blocks": vals}


def paired_gap_us(a_blocks: Sequence[float], b_blocks: Sequence[float]) -> dict[str, float]:
    """a - b round by round (the two were timed in the same round, so in the same host state).

    >>> paired_gap_us([14.0, 14.5, 15.0], [12.0, 12.5, 12.5])["median"]
    2.0
    """
    if len(a_blocks) != len(b_blocks) or not a_blocks:
        raise ResultsError(f"paired gaps need the same number of blocks, got {len(a_blocks)} and {len(b_blocks)}")
    diffs = [a - b for a, b in zip(a_blocks, b_blocks)]
    return {"median": median(diffs), "p10": percentile(diffs, 10.0), "p90": percentile(diffs, 90.0)}


def call_gaps(case: dict[str, Any]) -> dict[str, dict[str, float] | None]:
    """Host cost of graphlab's call paths above raw copy_ + replay, paired round by round (µs)."""
    ways = case.get("ways", {})
    raw = ways.get("raw_copy_replay", {}).get("host_us")
    out: dict[str, dict[str, float] | None] = {}
    for way in ("captured_call", "captured_unchecked"):
        mine = ways.get(way, {}).get("host_us")
        out[way] = paired_gap_us(mine["blocks"], raw["blocks"]) if mine and raw else None
    return out


def _cell(summary: dict[str, Any] | None) -> str:
    if not summary:
        return "-"
    return f"{summary['best']:.1f} / {summary['median']:.1f} ({summary['p10']:.1f}-{summary['p90']:.1f})"


def _notes(entry: dict[str, Any]) -> str:
    if entry.get("error"):
        return f"not run: {entry['error']}"
    notes = entry.get("notes") or {}
    parts = []
    if "graph_launches_in_profiled_call" in notes:
        parts.append(f"cudaGraphLaunch per profiled call: {notes['graph_launches_in_profiled_call']}")
    if "cudagraph_skips" in notes:
        parts.append(f"cudagraph_skips: {notes['cudagraph_skips']}")
    if "replays_in_3_calls" in notes:
        parts.append(f"CUDAGraph.replay in 3 calls: {notes['replays_in_3_calls']}")
    if "compile_s" in notes:
        parts.append(f"compile + record {notes['compile_s']:.1f} s")
    if "max_abs_err" in notes and notes["max_abs_err"] is not None:
        parts.append(f"max abs err vs eager {notes['max_abs_err']:.2g}")
    return "; ".join(parts)


def case_markdown(case: dict[str, Any]) -> str:
    """One case (a model at a batch size) as a markdown table: every way, host and synced latency."""
    lines = [f"### {case['title']}", "",
             "| way to run one call | host µs per call, back to back: best / median (p10-p90) | "
             "latency µs, synchronised: best / median (p10-p90) | notes |", "|---|---|---|---|"]
    for way in WAYS:
        entry = case.get("ways", {}).get(way)
        if entry is None:
            continue
        lines.append(f"| {way} | {_cell(entry.get('host_us'))} | {_cell(entry.get('latency_us'))} | {_notes(entry)} |")
    return "\n".join(lines)


def gaps_markdown(data: OverheadBenchmark | dict[str, Any]) -> str:
    """The issue-8 question in one table: CapturedGraph(x) and .unchecked(x) above raw copy_ + replay."""
    data = _as_dict(data)
    lines = [f"| case | CapturedGraph(x) - raw copy+replay, µs (p10-p90) | unchecked(x) - raw copy+replay, µs "
             f"(p10-p90) | within {CALL_GAP_GOAL_US:g} µs |", "|---|---|---|---|"]
    for case in data.get("cases", []):
        gaps = call_gaps(case)
        call, fast = gaps.get("captured_call"), gaps.get("captured_unchecked")

        def cell(g: dict[str, float] | None) -> str:
            return "-" if g is None else f"{g['median']:+.1f} ({g['p10']:+.1f} to {g['p90']:+.1f})"

        within = "-" if call is None else ("yes" if call["median"] <= CALL_GAP_GOAL_US else "no")
        lines.append(f"| {case['title']} | {cell(call)} | {cell(fast)} | {within} |")
    return "\n".join(lines)


def _as_dict(data: Any) -> Any:
    """An `OverheadBenchmark` as the dict the tables read (its file's, with the recording's provenance)."""
    if isinstance(data, OverheadBenchmark):
        return {**data.to_dict(), "provenance": dict(data.provenance)}
    return data


def overhead_markdown(data: OverheadBenchmark | dict[str, Any]) -> str:
    """The whole benchmark as markdown: how it was measured, the gaps table, one table per case."""
    data = _as_dict(data)
    if not isinstance(data, dict) or "cases" not in data:
        raise ResultsError("not an overhead benchmark result: expected a JSON object with 'cases'")
    c = data.get("conditions", {})
    head = (f"Measured {c.get('date', '?')} on {c.get('gpu', '?')} (driver {c.get('driver', '?')}), torch "
            f"{c.get('torch', '?')}, CUDA {c.get('cuda', '?')}; {c.get('rounds', '?')} rounds, every way once per "
            f"round in rotating order, blocks of ~{c.get('block_ms', '?')} ms; host time per call = a block of "
            f"back-to-back calls timed without synchronising, divided by the calls; latency = synchronised calls.")
    parts = [head, "", gaps_markdown(data)]
    parts += ["", *(case_markdown(case) + "\n" for case in data["cases"])]
    return "\n".join(parts).rstrip() + "\n"


def overhead_table(data: OverheadBenchmark | dict[str, Any] | None = None) -> present.Table:
    """What graphlab's own call path costs above the least a request needs (`static.copy_(x); graph.replay()`),
    per model and batch size, as a table for people: the paired difference's median and its p10 to p90 over the
    rounds, for `CapturedGraph(x)` (checks, copies, replays) and `.unchecked(x)`. `data`: an overhead result
    (default: the recorded one, `gl.load(OverheadBenchmark)`)."""
    data = _as_dict(load(OverheadBenchmark) if data is None else data)
    if not isinstance(data, dict) or "cases" not in data:
        raise ResultsError("not an overhead benchmark result: expected a JSON object with 'cases'")

    def median_of(gap: dict[str, float] | None) -> str | None:
        return None if gap is None else present.signed(gap["median"])

    def spread(gap: dict[str, float] | None) -> str | None:
        return None if gap is None else f"{present.signed(gap['p10'])} to {present.signed(gap['p90'])}"

    rows = []
    for case in data["cases"]:
        gaps = call_gaps(case)
        call, fast = gaps.get("captured_call"), gaps.get("captured_unchecked")
        rows.append({"case": case["title"], "call": median_of(call), "call_spread": spread(call),
                     "fast": median_of(fast), "fast_spread": spread(fast),
                     "within": None if call is None else call["median"] <= CALL_GAP_GOAL_US})
    missing = "not measured in this case"
    columns = [present.Column("case", "model and batch size", kind="text"),
               present.Column("call", "`CapturedGraph(x)`, above raw (µs)", kind="text", missing=missing),
               present.Column("call_spread", "its p10 to p90 (µs)", kind="text", missing=missing),
               present.Column("fast", "`.unchecked(x)`, above raw (µs)", kind="text", missing=missing),
               present.Column("fast_spread", "its p10 to p90 (µs)", kind="text", missing=missing),
               present.Column("within", f"within {present.number(CALL_GAP_GOAL_US)} µs", kind="bool", missing=missing)]
    c = data.get("conditions", {})
    provenance = data.get("provenance") or c
    where = made_on(provenance) if provenance.get("command") else made_on(provenance, "measured")
    notes = [f"Host time per call: a block of back-to-back calls timed without synchronising, divided by the calls; "
             f"every way once per round in rotating order, {c.get('rounds', 'several')} rounds. Each figure is the "
             "difference to a raw `static.copy_(x); graph.replay()` timed in the same round (negative: faster, "
             "within the noise)."]
    return present.Table(rows, columns, title=f"What graphlab's call adds to a raw copy + replay, {where}", notes=notes)


@recorded_result(entry="overhead", recording="overhead", schema=1, fields={"conditions": 1, "cases": 1})
@dataclass(frozen=True)
class OverheadBenchmark(ShownAsTable):
    """The overhead benchmark's result: every way to run one call, timed per case (a model at a batch size).

    Written by `graphlab record --models overhead` (`graphlab.studies.overhead`) as the `overhead` entry of the
    `overhead` recording; `gl.load(OverheadBenchmark)` reads it back. Shown as `overhead_table`; `markdown()` is
    the whole benchmark as docs/overhead.md prints it.

    Attributes:
        cases: one per model and batch size: its `title`, and per way its host and synchronised timings (every
            block kept) and notes, as the benchmark wrote them.
        conditions: how it was measured (GPU, torch, rounds, block length, date, ...).
        provenance: the recording's (GPU, driver, torch, command, date), when read from one.
    """

    cases: tuple[dict[str, Any], ...]
    conditions: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict, compare=False)

    def table(self) -> present.Table:
        return overhead_table(self)

    def markdown(self) -> str:
        return overhead_markdown(self)

    def to_dict(self) -> dict[str, Any]:
        """As its file holds it (the provenance is the recording's, not the file's)."""
        return {"schema": SCHEMA, "conditions": dict(self.conditions), "cases": [dict(c) for c in self.cases]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OverheadBenchmark:
        """The benchmark as `to_dict()` (or `run_overhead`) wrote it; a `provenance` it carries is kept."""
        if not isinstance(data, Mapping) or not isinstance(data.get("cases"), list):
            raise ResultsError("not an overhead benchmark result: expected a JSON object with 'cases'")
        return cls(tuple(dict(c) for c in data["cases"]), dict(data.get("conditions") or {}),
                   dict(data.get("provenance") or {}))

    @classmethod
    def from_recording(cls, data: Mapping[str, Any], recording: Any) -> OverheadBenchmark:
        """The benchmark read by `gl.load`, with the recording's provenance."""
        return replace(cls.from_dict(data), provenance=dict(recording.provenance))


#: the recording's name: the type's own (`graphlab.studies.overhead` records it)
NAME = str(results_type(OverheadBenchmark).recording)


def load_overhead(gpu: str | None = None) -> dict[str, Any]:
    """Deprecated: `gl.load(OverheadBenchmark)` reads the recorded overhead benchmark (`.to_dict()` and
    `.provenance` are what this returned, in one dict)."""
    warnings.warn("load_overhead() is gl.load(OverheadBenchmark) (from graphlab.studies.overhead_report): call that",
                  DeprecationWarning, stacklevel=2)
    return _as_dict(load(OverheadBenchmark, gpu=gpu))


__all__ = ["CALL_GAP_GOAL_US", "NAME", "WAYS", "OverheadBenchmark", "call_gaps", "case_markdown", "gaps_markdown",
           "load_overhead", "overhead_markdown", "overhead_table", "paired_gap_us", "summarize_blocks"]
