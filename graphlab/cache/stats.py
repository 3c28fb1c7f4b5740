"""What a graph cache did: hits, captures, fallbacks, padding, memory. Readable and machine-usable.

    >>> stats = cache.stats()                  # doctest: +SKIP
    >>> stats                                  # in a notebook: what happened, in words, and a table per bucket
    >>> stats.hit_rate, stats.pad_waste        # numbers for a program
    >>> stats.to_pandas()                      # one row per bucket

It also holds the cache's other views for people, built from plain values: the graphs it holds
(`graphs_table`), the padding checks it ran (`padding_table`), and the cache in one line (`describe_cache`).
Every number goes through `graphlab.present`.

Pure (no torch): standard library, the presentation layer and `results_types.keep_known` only; pandas is imported
by `to_pandas()` alone.
"""
from __future__ import annotations

import html
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Sequence

from graphlab.present import Code, Column, Table, count, duration, listing, percent, shape, size
from graphlab.results_types import keep_known


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


def bucket_words(label: str) -> str:
    """A bucket label as people read it: "8" stays "8", "8x32" (two padded dims) is "8 x 32"."""
    parts = label.split("x")
    return shape(int(p) for p in parts) if all(p.isdigit() for p in parts) else label


def _bucket_order(label: str) -> tuple[Any, ...]:
    """Sort buckets by size: "2" before "16", "4x32" before "8x16"; a label that is not numbers goes last."""
    base = label.split("#")[0]
    parts = base.split("x")
    numbers = tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) else ()
    return (not numbers, numbers, label)


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{count(n)} {one if n == 1 else (many or one + 's')}"


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
        where: where these counts come from when not from this process ("recorded on ... on ..."), for the title.
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
    where: str = ""

    @property
    def calls(self) -> int:
        return self.hits + self.captures + self.fallbacks

    @property
    def hit_rate(self) -> float:
        """Share of calls served by an already captured graph."""
        return 0.0 if self.calls == 0 else self.hits / self.calls

    @property
    def padded_rows(self) -> int:
        """Rows (positions) the graphs computed for nothing, over every bucket."""
        return sum(c.padded_rows for c in self.per_bucket.values())

    @property
    def pad_waste(self) -> float:
        """Share of rows/positions the graphs computed that were padding (computed for nothing)."""
        total = self.padded_rows + sum(c.rows for c in self.per_bucket.values())
        return 0.0 if total == 0 else self.padded_rows / total

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.update(calls=self.calls, hit_rate=self.hit_rate, pad_waste=self.pad_waste)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "") -> CacheStats:
        kwargs = keep_known(cls, data)  # calls, hit_rate, pad_waste are worked out, not read
        kwargs["per_bucket"] = {k: BucketCounts(**keep_known(BucketCounts, v))
                              for k, v in (data.get("per_bucket") or {}).items()}
        if where:
            kwargs["where"] = where
        return cls(**kwargs)

    def rows(self) -> list[dict[str, Any]]:
        """One row per bucket, smallest bucket first: calls, real rows, padded rows, waste (a share, 0 to 1)."""
        out = []
        for key in sorted(self.per_bucket, key=_bucket_order):
            c = self.per_bucket[key]
            total = c.rows + c.padded_rows
            out.append({"bucket": key, "calls": c.calls, "rows": c.rows, "padded_rows": c.padded_rows,
                        "pad_waste": 0.0 if total == 0 else c.padded_rows / total})
        return out

    def to_pandas(self) -> Any:
        """A DataFrame with one row per bucket (imports pandas on first use)."""
        import pandas as pd

        return pd.DataFrame(self.rows())

    # -- for people ------------------------------------------------------------------------------------------------
    def why_eager(self) -> str:
        """The calls that ran eagerly and why, in words ("1 of 11 calls ran eagerly: above the largest bucket")."""
        if not self.fallbacks:
            return f"none of the {count(self.calls)} calls ran eagerly: a graph served every one"
        reasons = "; ".join(f"{reason}" + (f" ({count(n)} calls)" if len(self.fallback_reasons) > 1 else "")
                            for reason, n in self.fallback_reasons.items())
        strict = ("; strict=True refuses sizes above the largest bucket instead"
                  if any("above the largest bucket" in r for r in self.fallback_reasons) else "")
        return f"{count(self.fallbacks)} of {count(self.calls)} calls ran eagerly: {reasons} (counted in the stats{strict})"

    def _eager_part(self) -> str:
        if not self.fallbacks:
            return "0 ran eagerly"
        reasons = ", ".join(f"{count(n)} {reason}" for reason, n in self.fallback_reasons.items())
        return f"{count(self.fallbacks)} ran eagerly ({reasons})"

    def summary_lines(self) -> list[str]:
        """What the cache did, in words: calls, hits, graphs made, padding, memory."""
        waste = (f"hit rate {percent(100 * self.hit_rate)}; padding was {percent(100 * self.pad_waste)} of the rows "
                 f"the graphs computed; {_plural(self.evictions, 'eviction')}")
        if self.backend == "eager":  # nothing was captured: say what happened instead
            return [
                f"{_plural(self.calls, 'call')}: {count(self.hits)} hits, {count(self.captures)} misses that made "
                f"an eager stand-in, {self._eager_part()}",
                waste,
                f"{_plural(self.graphs, 'stand-in')} held (backend eager: each runs the model eagerly; no CUDA graph "
                f"was captured, so there is no capture time); their static outputs hold {size(self.pool_bytes)}",
            ]
        return [
            f"{_plural(self.calls, 'call')}: {count(self.hits)} hits, {_plural(self.captures, 'capture')}, "
            f"{self._eager_part()}",
            waste,
            f"{_plural(self.graphs, 'graph')} held; captures took {duration(self.capture_ms * 1e3)} of host time; "
            f"pool {size(self.pool_bytes)} + executable graphs {size(self.exec_bytes)}",
        ]

    def title(self) -> str:
        return "GraphCache stats" + (f", {self.where}" if self.where else "")

    def table(self) -> Table:
        """One row per bucket, smallest first: calls, real rows, padded rows, and the share that was padding."""
        rows = [{**r, "bucket": bucket_words(r["bucket"])} for r in self.rows()]
        columns = [Column("bucket", "bucket", kind="text"), Column("calls", "calls", kind="count"),
                   Column("rows", "real rows", kind="count"), Column("padded_rows", "padded rows", kind="count"),
                   Column("pad_waste", "pad waste", kind="percent", factor=100)]
        return Table(rows, columns, index="bucket")

    def __str__(self) -> str:
        lines = [self.title(), *self.summary_lines()]
        if self.per_bucket:
            lines.append(str(self.table()))
        return "\n".join(lines)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))

    def _repr_html_(self) -> str:
        head = f"<p style='margin:0 0 4px 0'><b>{html.escape(self.title())}</b></p>"
        lines = "".join(f"<p style='margin:0'>{html.escape(line)}</p>" for line in self.summary_lines())
        table = self.table().to_html() if self.per_bucket else ""
        return f"<div>{head}{lines}{table}</div>"


@dataclass
class WarmupStats(CacheStats):
    """What `GraphCache.warm_up` did (the cache's stats after it, plus what it made, in order).

    Attributes:
        made: the buckets it made a graph for, in the order made (largest first).
        pool: "shared" (one pool for every graph), "private" (one each), or "given" (a pool passed in).
    """

    made: tuple[str, ...] = ()
    pool: str = "shared"

    def summary_lines(self) -> list[str]:
        order = listing(bucket_words(b) for b in self.made)
        if not self.made:
            return [f"nothing to make: the cache held every bucket asked for already ({_plural(self.graphs, 'graph')})"]
        if self.backend == "eager":
            return [f"made {_plural(len(self.made), 'eager stand-in')} ahead, largest bucket first: {order}",
                    "no CUDA graph was captured (backend eager: each stand-in runs the model eagerly), so there is no "
                    f"capture time and no pool to share; their static outputs hold {size(self.pool_bytes)}"]
        pool = {"shared": "into one shared memory pool (the smaller graphs reuse the blocks the largest one freed)",
                "private": "each into a pool of its own"}.get(self.pool, "into the pool it was given")
        return [f"captured {_plural(len(self.made), 'graph')} ahead, largest bucket first: {order}, {pool}",
                f"captures took {duration(self.capture_ms * 1e3)} of host time; the cache holds "
                f"{_plural(self.graphs, 'graph')}, pool {size(self.pool_bytes)} + executable graphs "
                f"{size(self.exec_bytes)}"]

    def title(self) -> str:
        return "GraphCache warm-up" + (f", {self.where}" if self.where else "")

    def __str__(self) -> str:
        return "\n".join([self.title(), *self.summary_lines()])

    def _repr_html_(self) -> str:
        head = f"<p style='margin:0 0 4px 0'><b>{html.escape(self.title())}</b></p>"
        return "<div>" + head + "".join(f"<p style='margin:0'>{html.escape(line)}</p>"
                                        for line in self.summary_lines()) + "</div>"


# -- the cache's other views -----------------------------------------------------------------------------------
def describe_cache(name: str, dims: Sequence[tuple[str, Sequence[int]]], graphs: int, backend: str) -> str:
    """The cache in one line: "GraphCache 'TinyGPT': batch buckets 1, 2, 4, 8 and 16; 3 graphs held (backend cuda)"."""
    buckets = "; ".join(f"{dim} buckets {listing(sizes)}" for dim, sizes in dims)
    held = ("no graphs yet" if graphs == 0 else
            f"{_plural(graphs, 'graph')} held" if backend != "eager" else f"{_plural(graphs, 'stand-in')} held")
    how = ("backend eager: each graph is an eager stand-in that runs the model, nothing is captured"
           if backend == "eager" else f"backend {backend}")
    return f"GraphCache {name!r}: {buckets}; {held} ({how})"


@dataclass(frozen=True)
class HeldGraph:
    """One graph a cache holds, as `graphs_table` shows it: its key in `cache.graphs`, its bucket label, and the
    inputs it was made for (path -> (shape, dtype name))."""

    key: str
    bucket: str
    inputs: tuple[tuple[str, tuple[int, ...], str], ...]


def _inputs_words(inputs: Sequence[tuple[str, tuple[int, ...], str]]) -> str:
    if not inputs:
        return "no tensors"
    if len(inputs) == 1:
        return f"{shape(inputs[0][1])} {inputs[0][2]}"
    return "; ".join(f"`inputs{path}` {shape(dims)} {dtype}" for path, dims, dtype in inputs)


def graphs_table(name: str, graphs: Iterable[HeldGraph], backend: str) -> Table:
    """The graphs a cache holds, smallest bucket first: each key (as `cache.graphs[key]` takes it), its bucket
    and the inputs it was made for."""
    held = sorted(graphs, key=lambda g: _bucket_order(g.key))
    rows = [{"key": Code(g.key), "bucket": bucket_words(g.bucket), "inputs": _inputs_words(g.inputs)} for g in held]
    what = "eager stand-ins" if backend == "eager" else "graphs"
    notes = []
    for bucket in dict.fromkeys(g.bucket for g in held if "#" in g.key):
        keys = listing(f"`{g.key}`" for g in held if g.bucket == bucket and "#" in g.key)
        notes.append(f"{keys}: bucket {bucket_words(bucket)} holds one graph per other key (another size of a "
                     "dimension that is not padded, another dtype or device).")
    if not rows:
        notes.append("no graphs yet: a bucket's graph is made the first time a call needs it (or by warm_up)")
    columns = [Column("key", "key", kind="code"), Column("bucket", "bucket", kind="text"),
               Column("inputs", "inputs it was made for", kind="text")]
    return Table(rows, columns, index="key", title=f"The {what} GraphCache {name!r} holds", notes=notes)


@dataclass(frozen=True)
class PaddingCheck:
    """One padding check a cache ran: the first padded call of a graph, compared with eager on the real rows.

    Attributes:
        bucket: the graph's bucket label ("4", "4x32"); sizes: the real sizes of the call it checked.
        dims: the names of the padded dims checked; max_abs_err: the largest difference on the real rows;
        allowed: the difference the output's dtype allows (atol + rtol x the largest value);
        outputs: the shapes of the outputs returned (the padding sliced off); passed: within `allowed`.
    """

    bucket: str
    sizes: tuple[int, ...]
    dims: tuple[str, ...]
    max_abs_err: float
    allowed: float | None
    outputs: tuple[tuple[int, ...], ...]
    passed: bool


def padding_table(name: str, checks: Iterable[PaddingCheck], backend: str, device: str = "") -> Table:
    """The padding checks a cache ran, in the order it ran them; the title says what was compared with what."""
    rows = [{"bucket": bucket_words(c.bucket), "sizes": shape(c.sizes), "dims": listing(c.dims),
             "outputs": "; ".join(shape(o) for o in c.outputs) or "none",
             "max_abs_err": c.max_abs_err, "allowed": c.allowed,
             "verdict": "exact (within the tolerance)" if c.passed else "changes the answer: PaddingError, nothing returned"}
            for c in checks]
    if backend == "eager":
        title = (f"Padding checks of GraphCache {name!r}: eager stand-ins, no graph replayed; each check runs the "
                 "model on the padded inputs and on the real ones and compares the real rows")
    else:
        title = (f"Padding checks of GraphCache {name!r}{f' on {device}' if device else ''}: the replayed graph "
                 "on the padded inputs against eager on the real ones, compared on the real rows")
    notes = ["allowed: the output dtype's tolerance (absolute + relative x the largest value), as `verify` uses"]
    if not rows:
        notes = ["no padded call yet: a graph is checked the first time a call pads it"]
    columns = [Column("bucket", "graph (bucket)", kind="text"), Column("sizes", "first padded call", kind="text"),
               Column("dims", "padded dims checked", kind="text"), Column("outputs", "output returned", kind="text"),
               Column("max_abs_err", "largest difference", kind="error"), Column("allowed", "allowed", kind="error",
                      missing="not compared: an output's shape differs from eager's (set out_dim)"),
               Column("verdict", "verdict", kind="text")]
    return Table(rows, columns, title=title, notes=notes)


__all__ = ["BucketCounts", "CacheStats", "HeldGraph", "PaddingCheck", "WarmupStats", "bucket_words", "describe_cache",
           "graphs_table", "padding_table"]
