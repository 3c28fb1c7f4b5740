"""What a conditional-node study measured, as plain data: live, or loaded from a recording.

    >>> from graphlab.studies.conditional import decode_loop_study          # doctest: +SKIP
    >>> study = decode_loop_study()   # live on a GPU, else data/recordings/<gpu>/conditional  # doctest: +SKIP
    >>> study                                 # a table: one row per variant and case  # doctest: +SKIP
    >>> study.verdict()                       # sentences computed from those rows  # doctest: +SKIP
    >>> gl.render(study.graph)                # the conditional graph it measured (parsed DOT)  # doctest: +SKIP

Pure (standard library, plus pandas for `to_pandas` only): no torch, so recorded mode works anywhere.
Every number in a row was measured; the verdict only compares them. The studies themselves (torch,
a GPU) live in `graphlab.studies.conditional`, one module each; `VERDICTS` below is the one table
they share with this module (why it is here, and not in them, is said there).
"""
from __future__ import annotations

import html
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from graphlab.stats import format_bytes, format_us
from graphlab.errors import RecordingError

RECORDING = "conditional"
RECORD_COMMAND = "graphlab record --models conditional"
TABLE_COLUMNS = ("variant", "case", "wall_p50_us", "gpu_p50_us", "host_p50_us", "launches", "syncs")

# variant names shared by the studies, their verdicts and the notebook
CONDITIONAL = "conditional graph"
HOST_SYNC = "sync + one of two graphs"
FULL_GRAPH = "one full graph"
EAGER = "eager"
WHILE_LOOP = "one WHILE launch"
PER_TOKEN = "one replay per token"
SWITCH = "one SWITCH graph"
PER_BUCKET = "one graph per bucket"


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

    def to_pandas(self) -> Any:
        import pandas as pd

        return pd.DataFrame(self.rows)

    def table(self, columns: tuple[str, ...] | None = None) -> list[list[str]]:
        """The rows as text cells (header first), µs and bytes with units."""
        extra = [k for k in ("tokens", "batch_size", "route", "pool_bytes", "exec_bytes", "capture_ms")
                 if any(k in r for r in self.rows)]
        cols = [c for c in (columns or (*TABLE_COLUMNS, *extra)) if any(c in r for r in self.rows)]
        # "launches" counts graph launches: eager launches every kernel on its own, so its 0 would read as none
        # cells carry their units ("2.00 MiB"), so a bytes column is not headed `_bytes`
        out = [["graph launches" if c == "launches" else c.removesuffix("_bytes") if c.endswith("_bytes") else c
                for c in cols]]
        for r in self.rows:
            out.append(["- (each kernel)" if c == "launches" and r.get("variant") == EAGER else _cell(c, r.get(c))
                        for c in cols])
        return out

    def __str__(self) -> str:
        table = self.table()
        widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
        lines = [f"{self.title} ({self.source})",
                 *["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in table]]
        lines += [f"check {k}: {v}" for k, v in self.checks.items()]
        return "\n".join(lines + self.verdict())

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))

    def _repr_html_(self) -> str:
        table = self.table()
        head = "".join(f"<th>{html.escape(c)}</th>" for c in table[0])
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in table[1:])
        checks = ", ".join(f"{html.escape(str(k))}: <b>{html.escape(str(v))}</b>" for k, v in self.checks.items())
        verdict = "".join(f"<li>{html.escape(s)}</li>" for s in self.verdict())
        return (f"<b>{html.escape(self.title)}</b> <small>({html.escape(self.source)})</small>"
                f"<p><i>{html.escape(self.question)}</i></p><table><tr>{head}</tr>{body}</table>"
                f"<p>checks: {checks}</p><ul>{verdict}</ul>")


def _cell(column: str, value: Any) -> str:
    if value is None:
        return ""
    if column.endswith("_us") and isinstance(value, (int, float)):
        return format_us(float(value))
    if column.endswith("_bytes") and isinstance(value, (int, float)):
        return format_bytes(float(value))
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def _ratio(a: float, b: float) -> str:
    return f"{b / a:.1f}x" if a > 0 else "n/a"


def fastest_per_case(study: ConditionalStudy) -> list[str]:
    """The verdict of a study without one of its own: the fastest variant of each case, by wall p50."""
    lines = []
    for case in study.cases:
        rows = [r for r in study.rows if str(r.get("case", "")) == case and "wall_p50_us" in r]
        if len(rows) < 2:
            continue
        best = min(rows, key=lambda r: r["wall_p50_us"])
        others = ", ".join(f"{r['variant']} {format_us(r['wall_p50_us'])}" for r in rows if r is not best)
        lines.append(f"{case or 'all'}: fastest is {best['variant']} at {format_us(best['wall_p50_us'])} "
                     f"(vs {others}).")
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
            parts.append(f"{other} {format_us(r[metric])} ({_ratio(mine[metric], r[metric])} of ours)")
        if parts:
            lines.append(f"{case}: {ours} {format_us(mine[metric])} vs " + ", ".join(parts) + ".")
    return lines


def _early_exit(study: ConditionalStudy) -> list[str]:
    return _versus(study, CONDITIONAL, [HOST_SYNC, FULL_GRAPH, EAGER])


def _decode(study: ConditionalStudy) -> list[str]:
    lines = _versus(study, WHILE_LOOP, [PER_TOKEN, EAGER])
    if "tokens_identical" in study.checks:
        lines.append(f"tokens identical in every variant: {'yes' if study.checks['tokens_identical'] else 'NO'}.")
    return lines


def _buckets(study: ConditionalStudy) -> list[str]:
    lines = []
    for metric, what in (("host_p50_us", "host launch time"), ("gpu_p50_us", "GPU time"), ("wall_p50_us", "latency")):
        pairs = []
        for case in study.cases:
            try:
                pairs.append((case, study.row(SWITCH, case)[metric], study.row(PER_BUCKET, case)[metric]))
            except (RecordingError, KeyError):
                continue
        if pairs:
            each = ", ".join(f"{c}: {format_us(a)} vs {format_us(b)}" for c, a, b in pairs)
            lines.append(f"{what}, {SWITCH} vs {PER_BUCKET}: {each}.")
    f = study.facts
    for what, fmt in (("pool_bytes", format_bytes), ("exec_bytes", format_bytes),
                      ("build_ms", lambda v: f"{v:.1f} ms")):
        a, b = f.get(f"switch_{what}"), f.get(f"per_bucket_{what}")
        if a is not None and b is not None:
            lines.append(f"{what.replace('_', ' ')} for all buckets: {SWITCH} {fmt(a)} vs {PER_BUCKET} {fmt(b)}.")
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
    "routes": fastest_per_case,
}
STUDY_NAMES = tuple(VERDICTS)


def load_study(name: str, gpu: str | None = None) -> ConditionalStudy:
    """The study `name` from the "conditional" recording of `gpu` (default: recorded mode's GPU).

    Raises:
        RecordingError: no such recording here; the message says which command makes it.
    """
    from graphlab.recordings import load_recording
    from graphlab.mode import recorded_gpu

    if name not in STUDY_NAMES:
        raise RecordingError(f"no conditional study {name!r}; one of {', '.join(STUDY_NAMES)}")
    gpu = gpu or recorded_gpu()
    try:
        rec = load_recording(RECORDING, gpu=gpu)
    except RecordingError as exc:
        raise RecordingError(f"the conditional-node studies have no recording {RECORDING!r} for GPU {gpu!r} yet: make "
                             f"it on a GPU with `{RECORD_COMMAND}` ({exc})") from None
    if name not in rec.result_names:
        raise RecordingError(f"recording {RECORDING!r} ({gpu}) has no study {name!r}: record it again with "
                             f"`{RECORD_COMMAND}`")
    dot = rec.dot(name) if name in rec.graph_names else None
    return ConditionalStudy.from_dict(rec.results(name), source=rec.banner(), dot=dot)


__all__ = ["CONDITIONAL", "ConditionalStudy", "EAGER", "FULL_GRAPH", "HOST_SYNC", "PER_BUCKET", "PER_TOKEN",
           "RECORDING", "RECORD_COMMAND", "STUDY_NAMES", "SWITCH", "VERDICTS", "WHILE_LOOP", "fastest_per_case",
           "load_study"]
