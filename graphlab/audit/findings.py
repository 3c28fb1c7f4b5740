"""What `gl.audit` found: the one schema of a finding, and the report (findings, or "no finding" with what was tried
and what was not varied), shown as a table for people.

Pure: standard library only, so a recorded audit is read and shown without torch.

    >>> report = AuditReport(target="Scale", findings=(), tried=("8 draws, replay vs eager",), draws=8)
    >>> report.clean
    True
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from graphlab import present
from graphlab.audit.causes import cause
from graphlab.errors import ResultsError
from graphlab.present import Code, Column, ShownAsTable, Table
from graphlab.recordings import made_on
from graphlab.results_types import keep_known, recorded_result

#: the recording the worked examples' audits live in (`graphlab record --models audit`)
RECORDING = "audit"


@dataclass(frozen=True)
class Location:
    """Where a finding is: any of the fields that could be known ("" where not).

    Attributes:
        output: the first output that differed, as a path into the outputs ("[0]", ".logits").
        argument: the input or kernel argument ("argument `temperature`", "argument word 3, bytes 24-31").
        node: the graph node (its DOT id, "graph_1_node_12", or its index in capture order).
        kernel: the kernel's short name.
        module: the module that launched it or wrote the output ("blocks.1.attn").
        line: the user's line, "file.py:42".
    """

    output: str = ""
    argument: str = ""
    node: str = ""
    kernel: str = ""
    module: str = ""
    line: str = ""

    def in_words(self) -> str:
        parts = [f"output {Code(self.output)}" if self.output else "",
                 self.argument,
                 f"node {self.node}" if self.node else "",
                 f"kernel {Code(self.kernel)}" if self.kernel else "",
                 f"module {Code(self.module)}" if self.module else "",
                 f"line {self.line}" if self.line else ""]
        return "; ".join(p for p in parts if p) or "not located"


@dataclass(frozen=True)
class Finding:
    """One thing the audit found wrong: the cause (a key of `CAUSES`), what is wrong, where, why a replay goes wrong,
    and the fix (the cause's own why and fix unless given). `evidence`: the numbers behind it (the draw that
    showed it, the largest difference, the words that differed), plain values only."""

    cause: str
    what: str
    where: Location = field(default_factory=Location)
    why: str = ""
    fix: str = ""
    evidence: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        known = cause(self.cause)
        if not self.why:
            object.__setattr__(self, "why", known.why)
        if not self.fix:
            object.__setattr__(self, "fix", known.fix)

    @property
    def title(self) -> str:
        return cause(self.cause).title

    def to_dict(self) -> dict[str, Any]:
        return {"cause": self.cause, "what": self.what, "where": asdict(self.where), "why": self.why,
                "fix": self.fix, "evidence": dict(self.evidence)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Finding:
        try:
            where = Location(**keep_known(Location, data.get("where") or {}))
            return cls(str(data["cause"]), str(data["what"]), where, str(data.get("why", "")),
                       str(data.get("fix", "")), dict(data.get("evidence") or {}))
        except (KeyError, TypeError, AttributeError) as exc:
            raise ResultsError(f"not an audit finding ({exc}): a finding has a cause, what, where, why and fix") from None


@recorded_result(entry="report", recording=RECORDING, schema=1, found_in=(f"{RECORDING}/*",),
                 fields={"target": 1, "findings": 1, "tried": 1, "not_varied": 1, "draws": 1, "stopped": 1,
                         "kernels_compared": 1, "kernels": 1, "seconds": 1, "seconds_per_draw": 1, "notes": 1},
                 optional=("stopped", "kernels_compared", "kernels", "seconds", "seconds_per_draw", "notes"))
@dataclass(frozen=True)
class AuditReport(ShownAsTable):
    """An audit: its findings, or none, with what was tried and what was not varied.

    Attributes:
        target: what was audited, in words ("model `Scale`", "GraphCache 'gpt'", "step `my_step`").
        findings: what is wrong (empty: no finding).
        tried: what was tried, one line each ("8 draws of make_inputs: replay vs eager", ...).
        not_varied: what the audit did not vary, so could not see ("state outside the arguments: no vary given").
        draws: how many draws of make_inputs ran.
        stopped: why the audit stopped early ("" when it ran to the end): a CUDA error.
        kernels_compared: of `kernels` kernel nodes, how many had their argument bytes compared (None: no second
            capture was made, so nothing was compared).
        seconds: the audit's wall time; seconds_per_draw: what one more draw costs.
        notes: anything else a reader should know (how the driver's getters answered, hazards by design).
        where: "" when it ran here; in recorded mode, where and when it was recorded.
    """

    target: str
    findings: tuple[Finding, ...] = ()
    tried: tuple[str, ...] = ()
    not_varied: tuple[str, ...] = ()
    draws: int = 0
    stopped: str = ""
    kernels_compared: int | None = None
    kernels: int | None = None
    seconds: float | None = None
    seconds_per_draw: float | None = None
    notes: tuple[str, ...] = ()
    where: str = ""
    provenance: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def clean(self) -> bool:
        """True when nothing was found and the audit ran to its end."""
        return not self.findings and not self.stopped

    def __bool__(self) -> bool:
        return self.clean

    def causes(self) -> list[str]:
        """The cause keys found, in order."""
        return [f.cause for f in self.findings]

    def argument_bytes_note(self) -> str:
        """ "argument bytes not compared for N of M kernels" (or "" when all were, or no second capture ran)."""
        if self.kernels_compared is None or self.kernels is None or self.kernels_compared >= self.kernels:
            return ""
        return (f"argument bytes not compared for {self.kernels - self.kernels_compared:,} of {self.kernels:,} kernels "
                "(the driver gave no parameter layout): kernel, grid, block and shared memory were")

    def table(self) -> Table:
        """The findings as a table for people (cause, what, where, why, fix), or the facts of a clean audit."""
        head = f"Audit of {self.target}"
        if self.where:
            head += f", {self.where} (nothing was run here)"
        notes = [f"Tried: {present.listing(self.tried)}." if self.tried else "",
                 f"Not varied: {present.listing(self.not_varied)}." if self.not_varied else "",
                 self.argument_bytes_note(), *self.notes]
        if self.seconds is not None:
            per = (f", {present.duration(self.seconds_per_draw * 1e6)} per extra draw"
                   if self.seconds_per_draw is not None else "")
            notes.append(f"The audit took {present.duration(self.seconds * 1e6)}{per}.")
        notes = [n for n in notes if n]
        if self.stopped:
            notes.insert(0, f"The audit stopped: {self.stopped}")
        if not self.findings:
            verdict = "stopped before it finished" if self.stopped else "no finding"
            return present.facts([("verdict", verdict), ("draws", self.draws)], title=f"{head}: {verdict}",
                                 notes=notes)
        rows = [{"cause": f.title, "what": f.what, "where": f.where.in_words(), "why": f.why, "fix": f.fix}
                for f in self.findings]
        columns = [Column("cause", "cause", kind="text"), Column("what", "what is wrong", kind="text"),
                   Column("where", "where", kind="text"), Column("why", "why a replay goes wrong", kind="text"),
                   Column("fix", "the fix", kind="text")]
        count = len(self.findings)
        return Table(rows, columns, title=f"{head}: {count} finding{'s' if count != 1 else ''}", notes=notes)

    def to_dict(self) -> dict[str, Any]:
        data = {"target": self.target, "findings": [f.to_dict() for f in self.findings], "tried": list(self.tried),
                "not_varied": list(self.not_varied), "draws": self.draws, "stopped": self.stopped,
                "kernels_compared": self.kernels_compared, "kernels": self.kernels, "seconds": self.seconds,
                "seconds_per_draw": self.seconds_per_draw, "notes": list(self.notes)}
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AuditReport:
        try:
            return cls(target=str(data["target"]),
                       findings=tuple(Finding.from_dict(f) for f in data.get("findings") or ()),
                       tried=tuple(str(t) for t in data.get("tried") or ()),
                       not_varied=tuple(str(t) for t in data.get("not_varied") or ()),
                       draws=int(data.get("draws") or 0), stopped=str(data.get("stopped") or ""),
                       kernels_compared=_int_or_none(data.get("kernels_compared")),
                       kernels=_int_or_none(data.get("kernels")),
                       seconds=_float_or_none(data.get("seconds")),
                       seconds_per_draw=_float_or_none(data.get("seconds_per_draw")),
                       notes=tuple(str(n) for n in data.get("notes") or ()))
        except (KeyError, TypeError, ValueError) as exc:
            raise ResultsError(f"not an audit report ({type(exc).__name__}: {exc}): it needs a target and lists of "
                               "findings, tried and not varied") from None

    @classmethod
    def from_recording(cls, data: Mapping[str, Any], recording: Any, entry: str = "report") -> AuditReport:
        """One worked example's audit from the recording, saying where and when it ran."""
        report = cls.from_dict(data)
        provenance = dict(recording.provenance)
        return cls(**{**report.__dict__, "where": made_on(provenance, "recorded"), "provenance": provenance})


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def _float_or_none(value: Any) -> float | None:
    return None if value is None else float(value)


__all__ = ["RECORDING", "AuditReport", "Finding", "Location"]
