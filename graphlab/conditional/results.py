"""What a conditional-node study measured, as plain data: live, or loaded from a recording.

    >>> from graphlab.studies.conditional import decode_loop_study          # doctest: +SKIP
    >>> study = decode_loop_study()   # live on a GPU, else data/recordings/<gpu>/conditional  # doctest: +SKIP
    >>> gl.load(ConditionalStudy, entry="decode_loop")   # the recorded one, anywhere  # doctest: +SKIP
    >>> study                                 # tables (one per case), the checks and the verdict  # doctest: +SKIP
    >>> study.table()                         # every row, in words with units  # doctest: +SKIP
    >>> study.compare("host_p50_us")          # one metric: a row per case, a column per variant  # doctest: +SKIP
    >>> study.build_costs()                   # what building each graph cost (time, memory)  # doctest: +SKIP
    >>> study.verdict()                       # sentences computed from those rows  # doctest: +SKIP
    >>> gl.render(study.graph)                # the conditional graph it measured (parsed DOT)  # doctest: +SKIP

Pure (standard library, plus pandas for `to_pandas` only): no torch, so recorded mode works anywhere.
Every number in a row was measured; the verdict only compares them, and calls two variants the same when each
one's median lies inside the other's p10-p90 spread. Everything a person reads goes through `graphlab.present`.
The studies themselves (torch, a GPU) live in `graphlab.studies.conditional`, one module each; `VERDICTS` below
is the one table they share with this module (why it is here, and not in them, is said there).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from graphlab import present
from graphlab.errors import RecordingError
from graphlab.loader import load
from graphlab.mode import recorded_gpu
from graphlab.results_types import recorded_result

#: the recording the studies (and the support table, `graphlab.conditional.support`) are read from
RECORDING = "conditional"

# variant names shared by the studies, their verdicts and the notebook
CONDITIONAL = "conditional graph"
HOST_SYNC = "sync + one of two graphs"
FULL_GRAPH = "one full graph"
EAGER = "eager"
WHILE_LOOP = "one WHILE launch"
PER_TOKEN = "one replay per token"
SWITCH = "one SWITCH graph"
PER_BUCKET = "one graph per bucket"

#: the columns a study's rows may have, as a person reads them (in this order)
COLUMNS = (
    present.Column("variant", "variant", kind="text"),
    present.Column("case", "case", kind="text"),
    present.Column("batch_size", "batch size", kind="count"),
    present.Column("bucket", "bucket", kind="count", missing="eager runs no graph, so it has no bucket"),
    present.Column("wall_p50_us", "latency p50", kind="time"),
    present.Column("gpu_p50_us", "GPU time p50", kind="time"),
    present.Column("host_p50_us", "host time p50", kind="time"),
    present.Column("launches", "graph launches", kind="count",
                   missing="eager runs no graph: it launches every kernel on its own"),
    present.Column("syncs", "host syncs", kind="count"),
    present.Column("tokens", "tokens", kind="count", missing="not a decoding case: no tokens"),
    present.Column("capture_ms", "capture", kind="time", factor=1e3),
    present.Column("pool_bytes", "memory pool", kind="bytes"),
    present.Column("exec_bytes", "graph executable", kind="bytes"),
)
_COLUMN = {c.key: c for c in COLUMNS}

#: the checks, in words
CHECK_WORDS = {
    "matches_eager": "same result as eager PyTorch",
    "max_abs_err": "largest difference from eager",
    "both_branches_taken": "both branches taken",
    "tokens_identical": "same tokens in every variant",
    "iterations_counted": "one loop iteration per generated token",
    "stopped_early_at_eos": "stopped at EOS before the maximum",
    "routes_built": "routes built",
}

#: build facts kept as `<prefix>_<what>` in a study's facts: prefix -> the variant it belongs to
_BUILD_PREFIXES = {"switch": SWITCH, "per_bucket": PER_BUCKET, "host_graphs": HOST_SYNC, "step_graph": PER_TOKEN}


@recorded_result(entry="early_exit", recording=RECORDING,
                 fields={"name": 1, "title": 1, "question": 1, "rows": 1, "checks": 1, "facts": 1, "conditions": 1},
                 found_in=(f"{RECORDING}/*",))
@dataclass
class ConditionalStudy:
    """One worked use of conditional nodes, measured against its host-side alternatives.

    Attributes:
        name: "early_exit", "decode_loop", "bucket_switch" or "routes".
        title, question: what was measured and why.
        rows: one dict per (variant, case): timings in µs (host/wall/gpu p10/p50/p90), launches and
            syncs per call, and study-specific fields (tokens, batch_size, pool_bytes, ...).
        checks: correctness against eager ({"matches_eager": True, "max_abs_err": 0.0, ...}).
        facts: build costs and settings (capture_ms, pool_bytes, route, model, ...).
        conditions: where it ran (gpu, driver, torch, cuda, cuda_bindings, date, command).
        source: "live" or the recording's banner.
        dot: the DOT of the study's conditional graph (flags 1), or None.
    """

    name: str
    title: str
    question: str
    rows: list[dict[str, Any]]
    checks: dict[str, Any]
    facts: dict[str, Any]
    conditions: dict[str, Any]
    source: str = "live"
    dot: str | None = field(default=None, repr=False)

    # -- reading ----------------------------------------------------------------------------------------
    @property
    def variants(self) -> list[str]:
        return list(dict.fromkeys(r["variant"] for r in self.rows))

    @property
    def cases(self) -> list[str]:
        return list(dict.fromkeys(str(r.get("case", "")) for r in self.rows))

    def row(self, variant: str, case: str | None = None) -> dict[str, Any]:
        """The row of `variant` (in `case`, when the study has several); RecordingError if there is none."""
        for r in self.rows:
            if r["variant"] == variant and (case is None or str(r.get("case", "")) == case):
                return r
        raise RecordingError(f"study {self.name!r} has no row {variant!r}{f' / {case!r}' if case else ''}; "
                             f"variants: {', '.join(self.variants)}; cases: {', '.join(self.cases)}")

    def difference(self, metric: str, variant: str, other: str, case: str | None = None) -> float:
        """`metric` of `variant` minus that of `other` (in `case`), in the metric's unit (µs for `_us` keys)."""
        return float(self.row(variant, case)[metric]) - float(self.row(other, case)[metric])

    @property
    def passed(self) -> bool:
        """True when every yes/no check passed."""
        return all(v for v in self.checks.values() if isinstance(v, bool))

    @property
    def graph(self) -> Any:
        """The measured conditional graph, parsed (`CudaGraph`), for gl.render / gl.inspect."""
        if not self.dot:
            raise RecordingError(f"study {self.name!r} kept no DOT dump")
        from graphlab.graph.dot_parser import parse_dot

        return parse_dot(self.dot, source=f"<{self.name}>")

    def verdict(self) -> list[str]:
        """Sentences comparing the measured variants (computed from the rows, nothing typed in)."""
        return VERDICTS.get(self.name, fastest_per_case)(self)

    # -- conversions ------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("dot")
        data.pop("source")
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, source: str = "live", dot: str | None = None) -> ConditionalStudy:
        missing = [k for k in ("name", "title", "question", "rows", "checks", "facts", "conditions") if k not in data]
        if missing:
            raise RecordingError(f"a conditional study needs {', '.join(missing)}")
        return cls(name=data["name"], title=data["title"], question=data["question"], rows=list(data["rows"]),
                   checks=dict(data["checks"]), facts=dict(data["facts"]), conditions=dict(data["conditions"]),
                   source=source, dot=dot)

    @classmethod
    def from_recording(cls, data: dict[str, Any], recording: Any) -> ConditionalStudy:
        """A study read by `gl.load(ConditionalStudy, entry="decode_loop")`: its source is the recording's banner,
        its DOT the recording's graph of the same name (when it kept one)."""
        name = data.get("name")
        dot = recording.dot(name) if name in recording.graph_names else None
        return cls.from_dict(data, source=recording.banner(), dot=dot)

    def to_pandas(self) -> Any:
        import pandas as pd

        return pd.DataFrame(self.rows)

    # -- where it was measured ----------------------------------------------------------------------------
    @property
    def where(self) -> str:
        """"recorded on NVIDIA H200 on 2026-12-01" or "measured now on NVIDIA H200": once, where a person reads it."""
        gpu = self.conditions.get("gpu") or "this GPU"
        if self.source == "live":
            return f"measured now on {gpu}"
        return f"recorded on {gpu} on {str(self.conditions.get('date', '?'))[:10]}"

    # -- views ------------------------------------------------------------------------------------------
    def _view_rows(self, rows: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
        """Rows as shown: eager's graph launches are missing (a dash and why), not 0."""
        return [{**r, "launches": None} if r.get("variant") == EAGER else dict(r) for r in (rows or self.rows)]

    def _columns(self, rows: list[dict[str, Any]], *, case: bool) -> list[present.Column]:
        keys = {k for r in rows for k in r if r.get(k) is not None or k in ("launches", "bucket", "tokens")}
        skip = {"case"} if not case else set()
        if len({r.get("case") for r in rows}) == len({r.get("batch_size") for r in rows}) and case:
            skip.add("batch_size")  # the case already says the batch size
        if "route" in keys:
            skip.add("bucket")
        skip |= {"pool_bytes", "exec_bytes"}  # memory is `build_costs()`'s
        return [c for c in COLUMNS if c.key in keys and c.key not in skip]

    def table(self, case: str | None = None) -> present.Table:
        """The rows as a table for people: every row, or those of one `case`; headers in words with units."""
        rows = [r for r in self.rows if case is None or str(r.get("case", "")) == case]
        if case is not None and not rows:
            raise RecordingError(f"study {self.name!r} has no case {case!r}; its cases: {', '.join(self.cases)}")
        rows = self._view_rows(rows)
        title = case if case is not None else f"{self.title}, {self.where}"
        return present.Table(rows, self._columns(rows, case=case is None), index="variant", title=title)

    def compare(self, metric: str = "wall_p50_us", *, title: str | None = None) -> present.Table:
        """One metric (a `_p50_us` key) as a row per case and a column per variant: easy to read across."""
        base = _COLUMN.get(metric) or present.Column.infer(metric)
        rows = []
        for case in self.cases:
            row: dict[str, Any] = {"case": case}
            for r in self.rows:
                if str(r.get("case", "")) == case:
                    row[r["variant"]] = r.get(metric)
                    if r.get("bucket") is not None and "bucket" not in row:
                        row["bucket"] = r["bucket"]
            rows.append(row)
        columns = [present.Column("case", "case", kind="text")]
        if any("bucket" in r for r in rows):
            columns.append(present.Column("bucket", "bucket", kind="count"))
        columns += [present.Column(v, v, kind=base.kind, factor=base.factor, missing="not measured in this case")
                    for v in self.variants]
        return present.Table(rows, columns, index="case",
                             title=title if title is not None else f"{base.title} of each variant, {self.where}")

    def build_costs(self) -> present.Table:
        """What building each graph cost: build time (capture and instantiate), memory pool and executable."""
        rows: dict[str, dict[str, Any]] = {}
        for r in self.rows:  # a study whose rows carry their own build (the routes)
            if "capture_ms" in r:
                label = f"{r['variant']}, {r.get('case')}" if len(self.cases) > 1 else r["variant"]
                rows[label] = {"variant": label, "build_ms": r["capture_ms"] + r.get("instantiate_ms", 0.0),
                               "pool_bytes": r.get("pool_bytes"), "exec_bytes": r.get("exec_bytes")}
        f = self.facts
        if "capture_ms" in f and not rows:
            ours = {"early_exit": CONDITIONAL, "decode_loop": WHILE_LOOP, "bucket_switch": SWITCH}.get(self.name,
                                                                                                     self.name)
            rows[ours] = {"variant": ours, "build_ms": f["capture_ms"] + f.get("instantiate_ms", 0.0),
                          "pool_bytes": f.get("pool_bytes"), "exec_bytes": f.get("exec_bytes")}
        for prefix, variant in _BUILD_PREFIXES.items():
            found = {k[len(prefix) + 1:]: v for k, v in f.items() if k.startswith(prefix + "_")}
            if found:
                row = rows.setdefault(variant, {"variant": variant})
                for what in ("build_ms", "pool_bytes", "exec_bytes"):
                    if what in found:
                        row[what] = found[what]
        columns = [present.Column("variant", "graph", kind="text"),
                   present.Column("build_ms", "build", kind="time", factor=1e3,
                                  missing="not measured for this graph"),
                   present.Column("pool_bytes", "memory pool", kind="bytes", missing="not measured for this graph"),
                   present.Column("exec_bytes", "graph executable", kind="bytes",
                                  missing="not measured for this graph")]
        shown = [c for c in columns if any(row.get(c.key) is not None for row in rows.values()) or c.key == "variant"]
        return present.Table(list(rows.values()), shown, index="variant",
                             title=f"What building each graph cost, {self.where}",
                             notes=["build: capture and instantiate, measured once; memory pool: the GPU memory "
                                    "torch's graph pool reserved for it; graph executable: GPU memory the "
                                    "instantiated graph took beyond that"])

    def checks_sentence(self) -> str:
        """The checks against eager PyTorch in words, saying where they were made."""
        parts = []
        for key, value in self.checks.items():
            what = CHECK_WORDS.get(key, present.words(key))
            if isinstance(value, bool):
                said = present.yes_no(value)
            elif key.endswith("err") or "_err_" in key:
                said = present.error(value)
            elif isinstance(value, (list, tuple)):
                said = present.listing(value)
            else:
                said = present.number(value) if isinstance(value, (int, float)) else str(value)
            parts.append(f"{what}: {said}")
        return f"Checks ({self.where}): " + ("; ".join(parts) if parts else "none") + "."

    def _tables(self) -> list[present.Table]:
        """What the study shows: one table per case (few cases), or the latency across cases (many)."""
        if len(self.cases) > 3:
            return [self.compare("wall_p50_us", title="latency p50 of each variant")]
        if len(self.cases) <= 1:
            return [self.table()]
        return [self.table(case) for case in self.cases]

    def __str__(self) -> str:
        lines = [self.title, f"{self.question} ({self.source if self.source != 'live' else self.where})", ""]
        for table in self._tables():
            lines += [str(table), ""]
        lines.append(self.checks_sentence())
        return "\n".join(lines + self.verdict())

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))

    def _repr_html_(self) -> str:
        import html

        source = self.source if self.source != "live" else self.where
        parts = [f"<p style='margin:0'><b>{html.escape(self.title)}</b></p>",
                 f"<p style='margin:2px 0;font-size:90%;color:#444'>{_code_html(source)}</p>",
                 f"<p style='margin:4px 0'><i>{html.escape(self.question)}</i></p>"]
        parts += [t._repr_html_() for t in self._tables()]
        parts.append(f"<p style='margin:4px 0'>{html.escape(self.checks_sentence())}</p>")
        parts.append("<ul style='margin:2px 0'>" + "".join(f"<li>{_code_html(s)}</li>" for s in self.verdict())
                     + "</ul>")
        return "".join(parts)


def _code_html(text: str) -> str:
    """Text with `code` spans as <code>, the rest escaped."""
    import html
    import re

    return "".join(f"<code>{html.escape(p[1:-1])}</code>" if p.startswith("`") and p.endswith("`") and len(p) > 1
                   else html.escape(p) for p in re.split(r"(`[^`]+`)", text))


def _spread(row: dict[str, Any], metric: str) -> tuple[float, float] | None:
    base = metric.removesuffix("_p50_us")
    low, high = row.get(f"{base}_p10_us"), row.get(f"{base}_p90_us")
    return (low, high) if low is not None and high is not None else None


def same_within_spread(a: dict[str, Any], b: dict[str, Any], metric: str = "wall_p50_us") -> bool:
    """True when each row's median lies inside the other's p10-p90 spread: no difference to read (pure)."""
    sa, sb = _spread(a, metric), _spread(b, metric)
    if sa is None or sb is None:
        return False
    return sb[0] <= a[metric] <= sb[1] and sa[0] <= b[metric] <= sa[1]


def _against(mine: dict[str, Any], theirs: dict[str, Any], metric: str) -> str:
    """How `theirs` compares with `mine`, in words: "(1.31x as long)", "(30.3 µs less)", "(the same within ...)"."""
    a, b = mine[metric], theirs[metric]
    if same_within_spread(mine, theirs, metric):
        return "the same within the p10-p90 spread"
    if a <= 0:
        return "not comparable"
    r = b / a
    if r >= 1.05:
        return f"{present.ratio(r)} as long"
    if r > 1:
        return f"{present.duration(b - a)} more"
    return f"{present.duration(a - b)} less"


def fastest_per_case(study: ConditionalStudy) -> list[str]:
    """The verdict of a study without one of its own: the fastest variant of each case, by latency p50, and
    whether the others differ from it beyond the spread."""
    lines = []
    for case in study.cases:
        rows = [r for r in study.rows if str(r.get("case", "")) == case and "wall_p50_us" in r]
        if len(rows) < 2:
            continue
        best = min(rows, key=lambda r: r["wall_p50_us"])
        others = [r for r in rows if r is not best]
        if all(same_within_spread(best, r) for r in others):
            names = present.listing([f"{r['variant']} {present.duration(r['wall_p50_us'])}" for r in rows])
            lines.append(f"{case or 'all'}: {names}, the same within the p10-p90 spread.")
            continue
        said = ", ".join(f"{r['variant']} {present.duration(r['wall_p50_us'])} ({_against(best, r, 'wall_p50_us')})"
                         for r in others)
        lines.append(f"{case or 'all'}: fastest is {best['variant']} at {present.duration(best['wall_p50_us'])}; "
                     f"{said}.")
    return lines


def _versus(study: ConditionalStudy, ours: str, theirs: list[str], metric: str = "wall_p50_us") -> list[str]:
    lines = []
    for case in study.cases:
        try:
            mine = study.row(ours, case)
        except RecordingError:
            continue
        parts = []
        for other in theirs:
            try:
                r = study.row(other, case)
            except RecordingError:
                continue
            parts.append(f"{other} {present.duration(r[metric])} ({_against(mine, r, metric)})")
        if parts:
            lines.append(f"{case}: {ours} {present.duration(mine[metric])}; " + ", ".join(parts) + ".")
    return lines


def _early_exit(study: ConditionalStudy) -> list[str]:
    return _versus(study, CONDITIONAL, [HOST_SYNC, FULL_GRAPH, EAGER])


def _decode(study: ConditionalStudy) -> list[str]:
    return _versus(study, WHILE_LOOP, [PER_TOKEN, EAGER])


def _routes(study: ConditionalStudy) -> list[str]:
    lines = fastest_per_case(study)
    built = [r for r in study.rows if "capture_ms" in r]
    for case in study.cases:
        rows = [r for r in built if str(r.get("case", "")) == case]
        if len(rows) > 1:
            said = present.listing([f"{r['variant']} {present.duration(1e3 * r['capture_ms'])}" for r in rows])
            lines.append(f"{case}: capturing took {said} (measured once each).")
    return lines


def _buckets(study: ConditionalStudy) -> list[str]:
    lines = []
    for metric, what in (("wall_p50_us", "latency"), ("host_p50_us", "host time"), ("gpu_p50_us", "GPU time")):
        pairs = []
        for case in study.cases:
            try:
                pairs.append((study.row(SWITCH, case), study.row(PER_BUCKET, case)))
            except RecordingError:
                continue
        pairs = [(a, b) for a, b in pairs if metric in a and metric in b]
        if not pairs:
            continue
        extra = [a[metric] - b[metric] for a, b in pairs]
        apart = sum(not same_within_spread(a, b, metric) for a, b in pairs)
        low, high = min(extra), max(extra)
        span = present.duration(low) if low == high else f"{present.duration(low)} to {present.duration(high)}"
        more = "more" if low >= 0 else "less" if high <= 0 else "more or less"
        if low < 0 <= high or high < 0:
            span = f"{present.duration(min(abs(low), abs(high)))} to {present.duration(max(abs(low), abs(high)))}"
        lines.append(f"{what}: {SWITCH} takes {span} {more} than {PER_BUCKET} "
                     f"({apart} of {len(pairs)} batch sizes beyond the p10-p90 spread).")
    f = study.facts
    a, b = f.get("switch_build_ms"), f.get("per_bucket_build_ms")
    if a is not None and b is not None:
        lines.append(f"building all buckets: {SWITCH} {present.duration(1e3 * a)}, {PER_BUCKET} "
                     f"{present.duration(1e3 * b)} (measured once each).")
    a, b = f.get("switch_pool_bytes"), f.get("per_bucket_pool_bytes")
    if a is not None and b is not None:
        lines.append(f"memory pool for all buckets: {SWITCH} {present.size(a)}, {PER_BUCKET} {present.size(b)}.")
    return lines


#: Every conditional study, in the order `graphlab record --models conditional` runs them, and how its verdict
#: reads. A study module in graphlab.studies.conditional names itself (`STUDY = "early_exit"`) and the recorder,
#: which finds the modules by walking that package, checks that they and this table agree one to one.
#: The verdicts are here, not in the study modules, because a recorded study is read, shown and judged by this
#: pure module alone (`load_study`, `ConditionalStudy.from_dict`: no torch, no GPU), and a pure module cannot
#: import the torch study modules. So a new study is its module plus one line here.
VERDICTS: dict[str, Callable[[ConditionalStudy], list[str]]] = {
    "early_exit": _early_exit,
    "decode_loop": _decode,
    "bucket_switch": _buckets,
    "routes": _routes,
}
STUDY_NAMES = tuple(VERDICTS)


@recorded_result(entry="errors", recording=RECORDING)
@dataclass(frozen=True)
class ConditionalErrors:
    """The studies that failed while the conditional recording was made: name -> the error and where it was raised
    (the recorder writes the entry only when one failed)."""

    errors: dict[str, str]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ConditionalErrors:
        return cls({str(k): str(v) for k, v in data.items()})

    def to_dict(self) -> dict[str, str]:
        return dict(self.errors)


def load_study(name: str, gpu: str | None = None) -> ConditionalStudy:
    """The study `name` from the "conditional" recording of `gpu` (default: recorded mode's GPU).

    Raises:
        RecordingError: no such study, no such recording here or a recording without that study (the message
            says which command makes it).
    """
    if name not in STUDY_NAMES:
        raise RecordingError(f"no conditional study {name!r}; one of {', '.join(STUDY_NAMES)}")
    return load(ConditionalStudy, RECORDING, gpu=gpu or recorded_gpu(), entry=name)


__all__ = ["CHECK_WORDS", "COLUMNS", "CONDITIONAL", "ConditionalErrors", "ConditionalStudy", "EAGER", "FULL_GRAPH",
           "HOST_SYNC", "PER_BUCKET", "PER_TOKEN", "RECORDING", "STUDY_NAMES", "SWITCH", "VERDICTS", "WHILE_LOOP",
           "fastest_per_case", "load_study", "same_within_spread"]
