"""What a decode comparison measured, as plain data: per way and batch size the per-step latency and tokens/s,
token equality with Hugging Face's eager decode, KV cache and graph memory, start-up cost, and what
torch.compile did. Loads from a recording on a machine without a GPU.

    >>> report = DecodeReport.from_dict(recording.results("llama"))
    >>> report.table(), report.speedup("graphlab", "eager", batch=1), report.rows

Pure: no torch.
"""
from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

from graphlab.errors import BadInputError
from graphlab.watch.compiled import CompileSummary

__all__ = ["WAYS", "WAY_LABELS", "DecodeReport", "StepTiming"]

#: the ways one decode step is run, in the order the tables show them
WAYS = ("eager", "reduce-overhead", "graphlab", "graphlab+compile")
WAY_LABELS = {
    "eager": "HF eager (StaticCache)",
    "reduce-overhead": "HF StaticCache + torch.compile(mode='reduce-overhead')",
    "graphlab": "graphlab graphs of the eager step",
    "graphlab+compile": "graphlab graph of the step compiled (default mode)",
}


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
class DecodeReport:
    """One model's decode comparison (see the module doc). `source` says where it was measured."""

    arch: str
    timings: list[StepTiming] = field(default_factory=list)
    tokens_equal: dict[str, dict[str, bool]] = field(default_factory=dict)   # way -> {batch: equal}
    padding: list[dict[str, Any]] = field(default_factory=list)
    kv_cache_bytes: dict[str, int] = field(default_factory=dict)              # batch -> bytes
    graph_pool_bytes: dict[str, dict[str, int | None]] = field(default_factory=dict)  # way -> {batch: bytes}
    startup_ms: dict[str, dict[str, float]] = field(default_factory=dict)     # way -> {what: ms}
    compile: dict[str, CompileSummary] = field(default_factory=dict)          # way -> what compile did
    conditions: dict[str, Any] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    source: str = "live"

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
        return [t.to_dict() for t in sorted(self.timings, key=lambda t: (t.batch, WAYS.index(t.way)
                                                                         if t.way in WAYS else 99))]

    def table(self) -> str:
        lines = [f"{self.arch}: one decode step, host wall time per step ({self.source})",
                 f"{'batch':>5}  {'way':<18} {'p50':>10} {'p99':>10} {'tokens/s':>10}"]
        for r in self.rows():
            lines.append(f"{r['batch']:>5}  {r['way']:<18} {r['p50_us']:>8.1f}us {r['p99_us']:>8.1f}us "
                         f"{r['tokens_per_s']:>10.0f}")
        for way, eq in self.tokens_equal.items():
            lines.append(f"tokens equal to HF eager ({way}): "
                         + ", ".join(f"b{b}: {'yes' if ok else 'NO'}" for b, ok in eq.items()))
        if self.skipped:
            lines.append("skipped: " + "; ".join(self.skipped))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()

    def _repr_html_(self) -> str:
        body = "".join("<tr>" + "".join(f"<td>{html.escape(str(r[k]))}</td>" for k in
                                         ("batch", "way", "p50_us", "p99_us", "tokens_per_s")) + "</tr>"
                       for r in self.rows())
        return (f"<b>{html.escape(self.arch)}</b> <small>({html.escape(self.source)})</small><table><tr><th>batch</th>"
                f"<th>way</th><th>p50 µs</th><th>p99 µs</th><th>tokens/s</th></tr>{body}</table>")

    def to_dict(self) -> dict[str, Any]:
        return {"arch": self.arch, "timings": [t.to_dict() for t in self.timings], "tokens_equal": self.tokens_equal,
                "padding": self.padding, "kv_cache_bytes": self.kv_cache_bytes,
                "graph_pool_bytes": self.graph_pool_bytes, "startup_ms": self.startup_ms,
                "compile": {k: v.to_dict() for k, v in self.compile.items()}, "conditions": self.conditions,
                "skipped": self.skipped}

    @classmethod
    def from_dict(cls, d: dict[str, Any], source: str = "recorded") -> DecodeReport:
        return cls(d["arch"], [StepTiming.from_dict(t) for t in d.get("timings", [])],
                   {w: dict(v) for w, v in d.get("tokens_equal", {}).items()}, list(d.get("padding", [])),
                   dict(d.get("kv_cache_bytes", {})), {w: dict(v) for w, v in d.get("graph_pool_bytes", {}).items()},
                   {w: dict(v) for w, v in d.get("startup_ms", {}).items()},
                   {k: CompileSummary.from_dict(v) for k, v in d.get("compile", {}).items()},
                   dict(d.get("conditions", {})), list(d.get("skipped", [])), source)
