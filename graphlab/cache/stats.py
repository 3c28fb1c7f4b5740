"""What a graph cache did: hits, captures, fallbacks, padding, memory. Readable and machine-usable.

    >>> stats = cache.stats()                  # doctest: +SKIP
    >>> print(stats)                           # a small table
    >>> stats.hit_rate, stats.pad_waste        # numbers for a program
    >>> stats.to_pandas()                      # one row per bucket

Layer 0 (pure): standard library only; pandas is imported by `to_pandas()` alone.
"""
from __future__ import annotations

import html
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class BucketCounts:
    """Per-bucket counters: calls served, real rows, padded rows (computed for nothing)."""

    calls: int = 0
    rows: int = 0
    padded_rows: int = 0

    def add(self, rows: int, padded: int) -> None:
        self.add_many(1, rows, padded)

    def add_many(self, calls: int, rows_per_call: int, padded_per_call: int) -> None:
        self.calls += calls
        self.rows += calls * rows_per_call
        self.padded_rows += calls * padded_per_call


@dataclass
class CacheStats:
    """Counters of one `GraphCache`.

    Attributes:
        hits: calls replayed by a graph already captured.
        captures: graphs captured (each was a miss that became a graph).
        fallbacks: calls run eagerly (above the largest bucket, outside the policy, grad needed).
        fallback_reasons: why, counted.
        evictions: graphs dropped by `max_graphs` / `memory_budget_bytes` (least recently used first).
        capture_ms: total host time spent capturing (warm-up excluded).
        graphs: graphs held now.
        pool_bytes: device memory the held graphs' captures took (growth of reserved memory).
        exec_bytes: device memory of their executable graphs.
        per_bucket: BucketCounts by bucket key (e.g. "8" or "8x32").
        backend: "cuda" (graphs captured) or "eager" (stand-ins that run the model: nothing captured, so the
            summary says "stand-ins made", not "captures", and no capture time).
    """

    hits: int = 0
    captures: int = 0
    fallbacks: int = 0
    fallback_reasons: dict[str, int] = field(default_factory=dict)
    evictions: int = 0
    capture_ms: float = 0.0
    graphs: int = 0
    pool_bytes: int = 0
    exec_bytes: int = 0
    per_bucket: dict[str, BucketCounts] = field(default_factory=dict)
    backend: str = "cuda"

    @property
    def calls(self) -> int:
        return self.hits + self.captures + self.fallbacks

    @property
    def hit_rate(self) -> float:
        """Share of calls served by an already captured graph."""
        return 0.0 if self.calls == 0 else self.hits / self.calls

    @property
    def pad_waste(self) -> float:
        """Share of rows/positions the graphs computed that were padding (computed for nothing)."""
        padded = sum(c.padded_rows for c in self.per_bucket.values())
        total = padded + sum(c.rows for c in self.per_bucket.values())
        return 0.0 if total == 0 else padded / total

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.update(calls=self.calls, hit_rate=self.hit_rate, pad_waste=self.pad_waste)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CacheStats:
        names = {f for f in cls.__dataclass_fields__}
        kwargs = {k: v for k, v in data.items() if k in names}
        kwargs["per_bucket"] = {k: BucketCounts(**v) for k, v in (data.get("per_bucket") or {}).items()}
        return cls(**kwargs)

    def rows(self) -> list[dict[str, Any]]:
        """One row per bucket: calls, real rows, padded rows, waste."""
        out = []
        for key, c in self.per_bucket.items():
            total = c.rows + c.padded_rows
            out.append({"bucket": key, "calls": c.calls, "rows": c.rows, "padded_rows": c.padded_rows,
                        "pad_waste": 0.0 if total == 0 else c.padded_rows / total})
        return out

    def to_pandas(self) -> Any:
        """A DataFrame with one row per bucket (imports pandas on first use)."""
        import pandas as pd

        return pd.DataFrame(self.rows())

    def summary_lines(self) -> list[str]:
        reasons = ", ".join(f"{k}: {v}" for k, v in self.fallback_reasons.items())
        if self.backend == "eager":  # nothing was captured: say what happened instead
            return [
                f"calls {self.calls}: {self.hits} hits, {self.captures} misses that made an eager stand-in, "
                f"{self.fallbacks} eager fallbacks" + (f" ({reasons})" if reasons else ""),
                f"hit rate {self.hit_rate:.1%}, pad waste {self.pad_waste:.1%}, evictions {self.evictions}",
                f"stand-ins held {self.graphs} (backend 'eager': each runs the model on this CPU; no CUDA graph was "
                f"captured, so there is no capture time); their static outputs hold {self.pool_bytes / 2**20:.1f} MiB",
            ]
        return [
            f"calls {self.calls}: {self.hits} hits, {self.captures} captures, {self.fallbacks} eager fallbacks"
            + (f" ({reasons})" if reasons else ""),
            f"hit rate {self.hit_rate:.1%}, pad waste {self.pad_waste:.1%}, evictions {self.evictions}",
            f"graphs held {self.graphs}, capture time {self.capture_ms:.1f} ms, pool {self.pool_bytes / 2**20:.1f} MiB"
            f" + executable graphs {self.exec_bytes / 2**20:.2f} MiB",
        ]

    def __str__(self) -> str:
        lines = self.summary_lines()
        if self.per_bucket:
            lines.append(f"{'bucket':>8} {'calls':>7} {'rows':>8} {'padded':>8} {'waste':>7}")
            for r in self.rows():
                lines.append(f"{r['bucket']:>8} {r['calls']:>7} {r['rows']:>8} {r['padded_rows']:>8} "
                             f"{r['pad_waste']:>6.1%}")
        return "\n".join(lines)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))

    def _repr_html_(self) -> str:
        head = "".join(f"<div>{html.escape(line)}</div>" for line in self.summary_lines())
        cells = "".join(
            f"<tr><td style='text-align:right'>{html.escape(str(r['bucket']))}</td>"
            f"<td style='text-align:right'>{r['calls']}</td><td style='text-align:right'>{r['rows']}</td>"
            f"<td style='text-align:right'>{r['padded_rows']}</td>"
            f"<td style='text-align:right'>{r['pad_waste']:.1%}</td></tr>" for r in self.rows())
        table = ("<table><tr><th style='text-align:right'>bucket</th><th style='text-align:right'>calls</th>"
                 "<th style='text-align:right'>rows</th><th style='text-align:right'>padded</th>"
                 f"<th style='text-align:right'>waste</th></tr>{cells}</table>") if cells else ""
        return f"<b>GraphCache stats</b>{head}{table}"


__all__ = ["BucketCounts", "CacheStats"]
