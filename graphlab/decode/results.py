"""What a decode comparison measured, as plain data: per way and batch size the per-step latency and tokens/s,
token equality with Hugging Face's eager decode, KV cache and graph memory, start-up cost, and what
torch.compile did. Loads from a recording on a machine without a GPU.

    >>> report = gl.load(DecodeReports).report("llama")     # the decode recording: one report per model
    >>> report.table("latency"), report.speedup("graphlab", "eager", batch=1), report.rows()

`report.table(view)` shows one idea per table (`VIEWS`): "steps" (every way and batch size: p50, p99, tokens/s),
"latency" and "p99" (batch size by way), "tokens per second", "tokens" (the same tokens as HF eager?), "memory",
"start-up", "compile" and "compile events" (what torch.compile did, and why). `subset(...)` keeps what a call
asked for and says what differs.

Pure: no torch.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

from graphlab.errors import BadInputError
from graphlab.present import Column, Table, error, listing, percent
from graphlab.recordings import made_on
from graphlab.results_types import recorded_result
from graphlab.watch.compiled import CompileSummary, compile_summary
from graphlab.present import ShownAsTable

__all__ = ["COMPILED_FUNCTIONS", "VIEWS", "WAYS", "WAY_LABELS", "DecodeReport", "DecodeReports", "StepTiming"]

#: the ways one decode step is run, in the order the tables show them
WAYS = ("eager", "reduce-overhead", "graphlab", "graphlab+compile")
WAY_LABELS = {
    "eager": "HF eager (StaticCache)",
    "reduce-overhead": "HF StaticCache + torch.compile(mode='reduce-overhead')",
    "graphlab": "graphlab graphs of the eager step",
    "graphlab+compile": "graphlab graph of the step compiled (default mode)",
}
#: the functions torch.compile compiles for each compiled way (graphlab.decode.ways._ro_body, graphs._compiled_body)
COMPILED_FUNCTIONS = {"_ro_body": "reduce-overhead", "_compiled_body": "graphlab+compile"}
#: the views `DecodeReport.table` shows
VIEWS = ("steps", "latency", "p99", "tokens per second", "tokens", "memory", "start-up", "compile", "compile events")
MIB = 2**20


@dataclass
class StepTiming:
    """One way at one batch size: per-step host wall time (call to synchronize), µs."""

    way: str
    batch: int
    p50_us: float
    p99_us: float
    calls: int

    @property
    def tokens_per_s(self) -> float:
        return self.batch * 1e6 / self.p50_us if self.p50_us > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"way": self.way, "batch": self.batch, "p50_us": round(self.p50_us, 3), "p99_us": round(self.p99_us, 3),
                "calls": self.calls, "tokens_per_s": round(self.tokens_per_s, 1)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StepTiming:
        return cls(d["way"], int(d["batch"]), float(d["p50_us"]), float(d["p99_us"]), int(d.get("calls", 0)))


@dataclass
class DecodeReport(ShownAsTable):
    """One model's decode comparison (see the module doc). `source` says where it was measured."""

    arch: str
    timings: list[StepTiming] = field(default_factory=list)
    tokens_equal: dict[str, dict[str, bool]] = field(default_factory=dict)   # way -> {batch: equal}
    padding: list[dict[str, Any]] = field(default_factory=list)
    kv_cache_bytes: dict[str, int] = field(default_factory=dict)              # batch -> bytes
    kv_total_bytes: int | None = None   # what the buckets' caches hold together, each storage once (None: not kept)
    graph_pool_bytes: dict[str, dict[str, int | None]] = field(default_factory=dict)  # way -> {batch: bytes}
    startup_ms: dict[str, dict[str, float]] = field(default_factory=dict)     # way -> {what: ms}
    compile: dict[str, CompileSummary] = field(default_factory=dict)          # way -> what compile did
    conditions: dict[str, Any] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    source: str = "live"
    notes: list[str] = field(default_factory=list)   # what differs from what the call asked for (recorded)

    @property
    def batch_sizes(self) -> list[int]:
        return sorted({t.batch for t in self.timings})

    @property
    def ways(self) -> list[str]:
        present = {t.way for t in self.timings}
        return [w for w in WAYS if w in present]

    def timing(self, way: str, batch: int) -> StepTiming:
        for t in self.timings:
            if t.way == way and t.batch == batch:
                return t
        raise BadInputError(f"no timing of {way!r} at batch {batch}; measured: "
                            f"{', '.join(f'{t.way}@{t.batch}' for t in self.timings) or 'nothing'}")

    def speedup(self, way: str, than: str, batch: int) -> float:
        """p50 of `than` / p50 of `way` at `batch` (above 1: `way` is faster)."""
        return self.timing(than, batch).p50_us / self.timing(way, batch).p50_us

    def rows(self) -> list[dict[str, Any]]:
        """One dict per way and batch size (raw numbers), by batch size, then way."""
        return [t.to_dict() for t in sorted(self.timings, key=lambda t: (t.batch, WAYS.index(t.way)
                                                                         if t.way in WAYS else 99))]

    # -- views ---------------------------------------------------------------------------------------------
    def table(self, view: str = "steps") -> Table:
        """One view of the report as a table for people (`VIEWS`): "steps", "latency", "p99", "tokens per second",
        "tokens", "memory", "start-up", "compile" (per compiled function) or "compile events" (why torch compiled or
        recorded again)."""
        views = {"steps": self._steps, "latency": lambda: self._by_way("p50_us", "p50"),
                 "p99": lambda: self._by_way("p99_us", "p99"), "tokens per second": self._tokens_per_s,
                 "tokens": self._tokens, "memory": self._memory, "start-up": self._startup,
                 "compile": self._compile, "compile events": self._compile_events}
        if view not in views:
            raise BadInputError(f"a decode report has the views {listing(repr(v) for v in VIEWS)}, not {view!r}")
        return views[view]()

    def _title(self, what: str) -> str:
        return f"{self.arch}: {what} ({self.source})"

    def _notes(self, *lines: str) -> list[str]:
        """The view's own lines, then what differs from what was asked, then what was not run."""
        out = [line for line in lines if line]
        out += self.notes
        if self.skipped:
            out.append(f"Not run: {listing(self.skipped)}.")
        return out

    def _steps(self) -> Table:
        rows = [{"batch": t.batch, "way": t.way, "p50_ms": t.p50_us / 1e3, "p99_ms": t.p99_us / 1e3,
                 "tokens_per_s": t.tokens_per_s, "calls": t.calls}
                for t in sorted(self.timings, key=lambda t: (t.batch, WAYS.index(t.way) if t.way in WAYS else 99))]
        columns = [Column("batch", "batch size", kind="count"), Column("way", "way", kind="text"),
                   Column("p50_ms", "p50", kind="number", unit="ms"), Column("p99_ms", "p99", kind="number", unit="ms"),
                   Column("tokens_per_s", "throughput", kind="number", unit="tokens/s"),
                   Column("calls", "calls timed", kind="count")]
        return Table(rows, columns, title=self._title("one decode step per call, host wall time"),
                     notes=self._notes("p50 and p99: the median and the 99th percentile of one step's wall time on "
                                       "the host, from the call until the GPU finished. Throughput: batch size / "
                                       "p50 (one new token per sequence per step)."))

    def _pivot(self, value: Any) -> list[dict[str, Any]]:
        rows = []
        for b in self.batch_sizes:
            row: dict[str, Any] = {"batch": b}
            for t in self.timings:
                if t.batch == b:
                    row[t.way] = value(t)
            rows.append(row)
        return rows

    def _way_columns(self, unit: str, factor: float = 1.0, what: str = "") -> list[Column]:
        return [Column(w, f"{w}{what}", kind="number", unit=unit, factor=factor,
                       missing="not measured at this batch size") for w in self.ways]

    def _spread(self) -> str:
        """How far p99 sits above p50 at most, over every way and batch size, in words."""
        above = [(t.p99_us / t.p50_us - 1) * 100 for t in self.timings if t.p50_us > 0]
        if not above:
            return ""
        return (f"p99 (the slowest step in a hundred) is at most {percent(max(above))} above p50 for every way and "
                "batch size: `report.table(\"p99\")`.")

    def _by_way(self, key: str, name: str) -> Table:
        rows = self._pivot(lambda t: getattr(t, key))
        what = "median" if name == "p50" else "99th percentile"
        first = (f"{name}: the {what} of one step's wall time on the host (the call until the GPU finished), "
                 "batch size by way.")
        return Table(rows, [Column("batch", "batch size", kind="count")] + self._way_columns("ms", 1e-3),
                     index="batch", title=self._title(f"{name} of one decode step, batch size by way"),
                     notes=self._notes(first, self._spread() if name == "p50" else ""))

    def _tokens_per_s(self) -> Table:
        rows = self._pivot(lambda t: t.tokens_per_s)
        return Table(rows, [Column("batch", "batch size", kind="count")] + self._way_columns("tokens/s"),
                     index="batch", title=self._title("tokens per second, one step at a time"),
                     notes=self._notes("Tokens per second: batch size / p50 (each step makes one new token per "
                                       "sequence)."))

    def _tokens(self) -> Table:
        ways = [w for w in WAYS if w in self.tokens_equal] + [w for w in self.tokens_equal if w not in WAYS]
        batches = sorted({int(b) for eq in self.tokens_equal.values() for b in eq})
        rows = [{"batch": b, **{w: self.tokens_equal[w][str(b)] for w in ways if str(b) in self.tokens_equal[w]}}
                for b in batches]
        columns = [Column("batch", "batch size", kind="count")]
        for w in ways:
            checked = sorted(int(b) for b in self.tokens_equal[w])
            columns.append(Column(w, w, kind="bool", missing=f"{w} was checked at batch size {listing(checked)} only"))
        new = self.conditions.get("new_tokens")
        prompt = self.conditions.get("prompt_len")
        how = (f"Greedy decode of {new} new tokens after a {prompt}-token prompt, " if new and prompt else
               "Greedy decode, ") + "replaying the graph step after step, against Hugging Face's own eager decode."
        padded = [f"A batch of {p['batch']} padded to the {p['bucket']} bucket: "
                  f"{'the same tokens' if p.get('tokens_equal') else 'different tokens'}, logits within "
                  f"{error(p.get('max_abs_err'))} of the unpadded batch." for p in self.padding]
        return Table(rows, columns, index="batch", title=self._title("the same tokens as Hugging Face eager?"),
                     notes=self._notes(how, *padded))

    def _memory(self) -> Table:
        per_batch = {w: v for w, v in self.graph_pool_bytes.items() if set(v) - {"all"}}
        shared = {w: v["all"] for w, v in self.graph_pool_bytes.items() if set(v) == {"all"}}
        batches = sorted({int(b) for b in self.kv_cache_bytes} | {int(b) for v in per_batch.values() for b in v})
        rows: list[dict[str, Any]] = []
        for b in batches:
            row: dict[str, Any] = {"batch": b, "kv": self.kv_cache_bytes.get(str(b))}
            row.update({w: v.get(str(b)) for w, v in per_batch.items()})
            rows.append(row)
        total: dict[str, Any] = {"batch": "all together"}
        kv = [row["kv"] for row in rows]
        total["kv"] = (self.kv_total_bytes if self.kv_total_bytes is not None
                       else sum(kv) if kv and None not in kv else None)
        for w in per_batch:
            values = [row.get(w) for row in rows]
            total[w] = sum(values) if values and None not in values else None
        total.update(shared)
        rows.append(total)
        ordered = [w for w in WAYS if w in self.graph_pool_bytes] + [w for w in self.graph_pool_bytes if w not in WAYS]
        columns = [Column("batch", "batch size", kind="text"),
                   Column("kv", "KV cache", kind="number", factor=1 / MIB, unit="MiB", missing="not kept")]
        for w in ordered:
            missing = (f"{w}'s graphs share one pool, measured once for all batch sizes" if w in shared
                       else "not captured at this batch size")
            columns.append(Column(w, f"{w} pool growth", kind="number", factor=1 / MIB, unit="MiB", missing=missing))
        first = ("KV cache: the keys and values a bucket keeps for every earlier token (its StaticCache). Pool growth: "
                 "what capturing that batch size added to the graphs' memory pool, the memory its temporaries live in.")
        if self.kv_total_bytes is not None and kv and None not in kv and self.kv_total_bytes < sum(kv):
            first += (" The buckets share one KV cache: each bucket's is the first rows of the largest one's, so "
                      "together they hold what the largest holds, not the sum of the rows above.")
        pooled = [w for w in per_batch if w.startswith("graphlab")]
        second = (f"{listing(pooled)} capture{'s' if len(pooled) == 1 else ''} the largest batch size first into one "
                  "pool that every batch size shares, so the smaller ones reuse that memory and add little or nothing."
                  if pooled else "")
        return Table(rows, columns, index="batch", title=self._title("memory: KV cache and graph pools (MiB)"),
                     notes=self._notes(first, second))

    def _startup(self) -> Table:
        batches = sorted({int(k[1:]) for v in self.startup_ms.values() for k in v if k[:1] == "b" and k[1:].isdigit()})
        rows: list[dict[str, Any]] = [{"batch": b, **{w: v.get(f"b{b}") for w, v in self.startup_ms.items()}}
                                      for b in batches]
        whole = {w: v["capture_all_buckets"] for w, v in self.startup_ms.items() if "capture_all_buckets" in v}
        if whole:
            rows.append({"batch": "all buckets, one call", **whole})
        what = {"graphlab": "graphlab: warm-up + capture", "reduce-overhead": "reduce-overhead: first 3 calls",
                "graphlab+compile": "graphlab+compile: compile + capture"}
        ordered = [w for w in WAYS if w in self.startup_ms] + [w for w in self.startup_ms if w not in WAYS]
        columns = [Column("batch", "batch size", kind="text")]
        for w in ordered:
            missing = "timed batch size by batch size only" if w not in whole else "not timed at this batch size"
            columns.append(Column(w, what.get(w, w), kind="time", factor=1e3, missing=missing))
        lines = ["graphlab: each bucket's warm-up (on scratch memory), capture and instantiation; the whole "
                 "`capture_all()` call also makes every bucket's KV cache." if "graphlab" in self.startup_ms else "",
                 "reduce-overhead: its first three calls at that batch size (compile, warm-up, record, first replay), "
                 "batch sizes smallest first." if "reduce-overhead" in self.startup_ms else "",
                 "graphlab+compile: torch.compile in default mode during the warm-up, then graphlab's capture, batch "
                 "sizes largest first." if "graphlab+compile" in self.startup_ms else ""]
        cache = str(self.conditions.get("inductor_cache", ""))
        if cache.startswith("cold"):
            lines.append("Inductor's cache was cold (fresh folders): every compile started from nothing.")
        elif cache:
            lines.append("Inductor's cache was this machine's own: a compile it has seen before is faster.")
        return Table(rows, columns, index="batch", title=self._title("start-up: capturing graphs vs compiling"),
                     notes=self._notes(*lines))

    def _compile_summary(self) -> tuple[CompileSummary, dict[str, str]]:
        summary = self.compile.get("all") or CompileSummary([])
        return summary, {f: COMPILED_FUNCTIONS[f] for f in summary.functions if f in COMPILED_FUNCTIONS}

    def _compile(self) -> Table:
        summary, names = self._compile_summary()
        table = summary.table(names, title=self._title("what torch.compile did"))
        table.notes = [n.replace("`events_table()`", '`report.table("compile events")`') for n in table.notes]
        table.notes += self._notes()
        return table

    def _compile_events(self) -> Table:
        summary, names = self._compile_summary()
        table = summary.events_table(names, title=self._title("why torch.compile compiled or recorded again"))
        if any("`ids`" in str(row.get("why", "")) for row in table.rows):
            table.notes.insert(0, "`ids` is the token ids, one row per sequence: its dimension 0 is the batch size.")
        table.notes += self._notes()
        return table

    # -- what a call asked for -------------------------------------------------------------------------------
    def subset(self, batch_sizes: Sequence[int] | None = None, ways: Sequence[str] | None = None,
               token_batches: Sequence[int] | None = None) -> DecodeReport:
        """The report with only the batch sizes, ways and token checks asked for, where it has them (all it has
        when it has none of them); `notes` says "asked for ..., the recording has ..." for each that differs.
        What covers every batch size it has (the start-up of all buckets in one call, a pool shared by all batch
        sizes) is left out when only some batch sizes are kept."""
        held_b, held_w = self.batch_sizes, self.ways
        notes: list[str] = []
        keep_b = _kept("batch sizes", sorted(set(int(b) for b in batch_sizes)) if batch_sizes is not None else None,
                       held_b, notes)
        keep_w = _kept("ways", [w for w in WAYS if w in ways] + [w for w in ways if w not in WAYS]
                       if ways is not None else None, held_w, notes)
        held_t = sorted({int(b) for eq in self.tokens_equal.values() for b in eq})
        keep_t = _kept("token checks at batch sizes", sorted(set(int(b) for b in token_batches))
                       if token_batches is not None else None, held_t, notes)
        partial = keep_b != held_b
        timings = [t for t in self.timings if t.batch in keep_b and t.way in keep_w]
        tokens = {w: {b: ok for b, ok in eq.items() if int(b) in keep_t} for w, eq in self.tokens_equal.items()
                  if w in keep_w}
        tokens = {w: eq for w, eq in tokens.items() if eq}
        padding = [p for p in self.padding if "graphlab" in keep_w and p.get("bucket") in keep_b]
        kv = {b: n for b, n in self.kv_cache_bytes.items() if int(b) in keep_b}
        pools = {w: {b: n for b, n in v.items() if (b == "all" and not partial) or (b != "all" and int(b) in keep_b)}
                 for w, v in self.graph_pool_bytes.items() if w in keep_w}
        startup = {w: {k: ms for k, ms in v.items() if (k == "capture_all_buckets" and not partial)
                       or (k[1:].isdigit() and int(k[1:]) in keep_b)}
                   for w, v in self.startup_ms.items() if w in keep_w}
        if partial and (any("all" in v for v in self.graph_pool_bytes.values())
                        or any("capture_all_buckets" in v for v in self.startup_ms.values())):
            notes.append(f"What covers all {listing(held_b)} at once (a pool they share, the start-up of all "
                         "buckets in one call) is left out.")
        compiled = {k: _only_ways(v, keep_w) for k, v in self.compile.items()}
        if partial and any(v.events for v in compiled.values()):
            notes.append(f"What torch.compile did covers the whole run, batch sizes {listing(held_b)}.")
        return replace(self, timings=timings, tokens_equal=tokens, padding=padding, kv_cache_bytes=kv,
                       graph_pool_bytes={w: v for w, v in pools.items() if v},
                       startup_ms={w: v for w, v in startup.items() if v}, compile=compiled,
                       notes=list(self.notes) + notes)

    def to_dict(self) -> dict[str, Any]:
        return {"arch": self.arch, "timings": [t.to_dict() for t in self.timings], "tokens_equal": self.tokens_equal,
                "padding": self.padding, "kv_cache_bytes": self.kv_cache_bytes,
                **({"kv_total_bytes": self.kv_total_bytes} if self.kv_total_bytes is not None else {}),
                "graph_pool_bytes": self.graph_pool_bytes, "startup_ms": self.startup_ms,
                "compile": {k: v.to_dict() for k, v in self.compile.items()}, "conditions": self.conditions,
                "skipped": self.skipped}

    @classmethod
    def from_dict(cls, d: dict[str, Any], source: str = "recorded") -> DecodeReport:
        return cls(d["arch"], [StepTiming.from_dict(t) for t in d.get("timings", [])],
                   {w: dict(v) for w, v in d.get("tokens_equal", {}).items()}, list(d.get("padding", [])),
                   dict(d.get("kv_cache_bytes", {})), d.get("kv_total_bytes"), {w: dict(v) for w, v in d.get("graph_pool_bytes", {}).items()},
                   {w: dict(v) for w, v in d.get("startup_ms", {}).items()},
                   {k: CompileSummary.from_dict(v) for k, v in d.get("compile", {}).items()},
                   dict(d.get("conditions", {})), list(d.get("skipped", [])), source)


@recorded_result(entries=("reports", "failed"), recording="decode", optional=("failed",))
@dataclass
class DecodeReports:
    """What the decode recording holds (`graphlab record --models decode`): one `DecodeReport` per model ("llama",
    "gpt2") and the models that failed to record, with why.

        >>> recorded = gl.load(DecodeReports)     # doctest: +SKIP
        >>> recorded.report("llama").table("latency"), recorded.failed   # doctest: +SKIP
    """

    reports: dict[str, DecodeReport]
    failed: dict[str, str] = field(default_factory=dict)
    #: where and when they were measured ("recorded on NVIDIA H200 on 2026-12-01"), as each report's `source`
    where: str = ""

    @property
    def archs(self) -> list[str]:
        return list(self.reports)

    def report(self, arch: str) -> DecodeReport:
        """The report of one model; BadInputError naming those the recording has."""
        if arch not in self.reports:
            raise BadInputError(f"arch must be one of {', '.join(self.reports)}, got {arch!r} (the decode recording "
                                "has these)")
        return self.reports[arch]

    def to_dict(self) -> dict[str, Any]:
        """The recording's entries: {"reports": {arch: report}, "failed": {arch: why}}."""
        return {"reports": {arch: r.to_dict() for arch, r in self.reports.items()}, "failed": dict(self.failed)}

    @classmethod
    def from_dict(cls, parts: Mapping[str, Any], source: str = "recorded") -> DecodeReports:
        reports = {arch: _reread_compile(DecodeReport.from_dict(d, source=source))
                   for arch, d in parts["reports"].items()}
        return cls(reports, {str(k): str(v) for k, v in parts.get("failed", {}).items()}, source)

    @classmethod
    def from_recording(cls, parts: Mapping[str, Any], recording: Any) -> DecodeReports:
        """Read by `gl.load(DecodeReports)`: every report's `source` says where and when it was recorded."""
        return cls.from_dict(parts, made_on(recording.provenance))


def _reread_compile(report: DecodeReport) -> DecodeReport:
    """A recorded report's "what torch.compile did", read again from torch's raw log records (kept in its
    conditions) with this graphlab's reader; as stored when it kept none."""
    records = report.conditions.get("compile_records")
    stored = report.compile.get("all")
    if records and stored is not None:
        watched = [{"library": "torch.compile (CUDAGraph Trees)", "role": "recording", "capture_ms": e.capture_ms,
                    "pool_bytes": e.pool_bytes, "input_shapes": e.input_shapes}
                   for e in stored.recordings if e.message == "seen by gl.watch" or e.capture_ms is not None]
        sources = [s for s in stored.sources if not s.startswith("gl.watch")]
        report.compile["all"] = compile_summary(records, counters=stored.counters, watched=watched, sources=sources)
    return report


def _kept(what: str, asked: list[Any] | None, held: list[Any], notes: list[str]) -> list[Any]:
    """What to keep of `held` for `asked` (all of `held` when None, or when it has none of them); a note when the two
    differ, in the load test's words: "asked for ..., the recording has ..."."""
    if asked is None or asked == held:
        return list(held)
    kept = [a for a in asked if a in held]
    missing = [a for a in asked if a not in held]
    line = f"Asked for {what} {listing(asked)}; the recording has {listing(held)}"
    if not kept:
        notes.append(f"{line}: none of them, so all it has is shown.")
        return list(held)
    extra = [h for h in held if h not in asked]
    parts = ([f"no {listing(missing)}"] if missing else []) + ([f"{listing(extra)} left out"] if extra else [])
    notes.append(f"{line}: shown are {listing(kept)} ({'; '.join(parts)}).")
    return kept


def _only_ways(summary: CompileSummary, ways: Sequence[str]) -> CompileSummary:
    """The summary without the functions of compiled ways that were not asked for."""
    dropped = {f for f, w in COMPILED_FUNCTIONS.items() if w not in ways}
    if not dropped:
        return summary
    return CompileSummary([e for e in summary.events if e.function not in dropped], dict(summary.counters),
                          list(summary.sources))
