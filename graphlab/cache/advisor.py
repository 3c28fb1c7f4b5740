"""The bucket advisor: which k batch sizes to capture, given the traffic and what each size costs.

Every request of size s runs on the smallest captured bucket b >= s and pays b's latency (padding),
or runs eagerly above the largest bucket. `advise_buckets` picks the buckets that minimise the
expected latency over the observed sizes, exactly, by dynamic programming over the sorted candidate
sizes: O(k·m²) time and O(k·m) memory for m candidates and k graphs (m = 64 and k = 8 take
milliseconds). It also lets the largest sizes run eagerly when a graph there saves nothing.

    >>> sweep = gl.load(gl.Sweep, "gpt", gpu="h200")                 # doctest: +SKIP
    >>> advice = gl.advise_buckets([1, 1, 3, 8, 13, 40], sweep, max_graphs=4)   # doctest: +SKIP
    >>> advice.buckets, print(advice.table())                         # doctest: +SKIP
    >>> gl.GraphCache(model, buckets=advice)                          # doctest: +SKIP

It compares the choice with one graph per size, each bucket policy of `graphlab.cache.buckets.POLICIES`
that asks to be compared, and eager: expected and p99 latency, pad waste, graphs, pool memory and capture
time (from the sweep's graph points).

Pure (no torch): standard library only; pandas only in `to_pandas()`.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Mapping

from graphlab.cache.buckets import POLICIES
from graphlab.errors import BadInputError, ConfigurationError, RecordingError
from graphlab.present import Column, Table, listing

ADVICE_SCHEMA = "graphlab.bucket_advice/1"


@dataclass(frozen=True)
class CostModel:
    """What each size costs: graph latency, eager latency, and per-graph pool, executable memory, capture."""

    graph_us: dict[int, float]
    eager_us: dict[int, float] = field(default_factory=dict)
    pool_bytes: dict[int, int] = field(default_factory=dict)
    exec_bytes: dict[int, int] = field(default_factory=dict)
    capture_ms: dict[int, float] = field(default_factory=dict)
    source: str = ""

    @classmethod
    def from_any(cls, latency: Any, sizes: Iterable[int]) -> CostModel:
        """From a `Sweep` (graph and eager p50 and capture costs per batch size), a latency table
        ({"graph_us": {size: µs}, "eager_us": ..., "pool_bytes": ..., "exec_bytes": ..., "capture_ms": ...}),
        a {size: µs} mapping of graph latency, or a callable size -> µs."""
        if hasattr(latency, "by_mode"):
            graph = {p.batch_size: p.p50_us for p in latency.by_mode("graph")}
            eager = {p.batch_size: p.p50_us for p in latency.by_mode("eager")}
            pts = latency.by_mode("graph")
            return cls(graph, eager,
                       {p.batch_size: p.pool_bytes for p in pts if p.pool_bytes is not None},
                       {p.batch_size: p.graph_exec_bytes for p in pts if p.graph_exec_bytes is not None},
                       {p.batch_size: p.capture_ms for p in pts if p.capture_ms is not None},
                       f"the {getattr(latency, 'model', '')} sweep".replace("the  sweep", "the sweep"))
        if isinstance(latency, Mapping) and "graph_us" in latency:  # a latency table: graph and eager by size
            ints = lambda table: {int(k): v for k, v in (table or {}).items()}  # noqa: E731
            return cls(ints(latency["graph_us"]), ints(latency.get("eager_us")), ints(latency.get("pool_bytes")),
                       ints(latency.get("exec_bytes")), ints(latency.get("capture_ms")),
                       str(latency.get("source") or "latency table"))
        if isinstance(latency, Mapping):
            return cls({int(k): float(v) for k, v in latency.items()}, source="latency table")
        if callable(latency):
            wanted = sorted(set(sizes))
            return cls({s: float(latency(s)) for s in range(1, max(wanted) + 1)}, source="latency function")
        raise BadInputError("latency must be a Sweep, a {size: µs} mapping, or a callable size -> µs, got "
                            f"{type(latency).__name__}")


@dataclass(frozen=True)
class StrategyResult:
    """One way to serve the traffic, scored on it."""

    name: str
    buckets: tuple[int, ...]
    expected_us: float
    p50_us: float
    p99_us: float
    pad_waste: float
    graphs: int
    eager_share: float
    pool_bytes: int | None
    exec_bytes: int | None
    capture_ms: float | None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["buckets"] = list(self.buckets)
        return out


def histogram(sizes: Any) -> dict[int, int]:
    """Request sizes as {size: count}: from a list of sizes, a {size: count} mapping, or anything with `.sizes`."""
    if hasattr(sizes, "sizes") and not isinstance(sizes, Mapping):
        sizes = sizes.sizes
    if isinstance(sizes, Mapping):
        hist = {int(k): int(v) for k, v in sizes.items() if int(v) > 0}
    else:
        hist = {}
        for s in sizes:
            hist[int(s)] = hist.get(int(s), 0) + 1
    if not hist:
        raise BadInputError("advise_buckets needs at least one observed request size, e.g. [1, 3, 8]")
    bad = [s for s in hist if s < 1]
    if bad:
        raise BadInputError(f"request sizes must be >= 1, got {sorted(bad)[:5]}: drop empty requests")
    return dict(sorted(hist.items()))


def score(name: str, buckets: Iterable[int], hist: Mapping[int, int], cost: CostModel) -> StrategyResult:
    """Expected and p99 latency, pad waste, memory and capture time of serving `hist` with `buckets`."""
    chosen = sorted(set(buckets))
    missing = [b for b in chosen if b not in cost.graph_us]
    if missing:
        raise BadInputError(f"{name}: no graph latency measured for bucket(s) {missing[:6]}; measured sizes "
                            f"{min(cost.graph_us)}..{max(cost.graph_us)}")
    per_request: list[tuple[float, int]] = []
    real = padded = eager_n = total = 0
    for size, count in hist.items():
        bucket = next((b for b in chosen if b >= size), None)
        total += count
        if bucket is None:
            if size not in cost.eager_us:
                raise BadInputError(f"{name}: size {size} is above the largest bucket and its eager latency is "
                                    "not known: pass a Sweep with eager points, or a bucket that covers it")
            per_request.append((cost.eager_us[size], count))
            eager_n += count
        else:
            per_request.append((cost.graph_us[bucket], count))
            real += size * count
            padded += bucket * count
    expected = sum(us * n for us, n in per_request) / total
    return StrategyResult(
        name, tuple(chosen), expected, _weighted_quantile(per_request, 0.5), _weighted_quantile(per_request, 0.99),
        0.0 if padded == 0 else (padded - real) / padded, len(chosen), eager_n / total,
        max((cost.pool_bytes[b] for b in chosen), default=0) if all(b in cost.pool_bytes for b in chosen) else None,
        sum(cost.exec_bytes[b] for b in chosen) if all(b in cost.exec_bytes for b in chosen) else None,
        sum(cost.capture_ms[b] for b in chosen) if all(b in cost.capture_ms for b in chosen) else None,
    )


def _weighted_quantile(values: list[tuple[float, int]], q: float) -> float:
    ordered = sorted(values)
    total = sum(n for _, n in ordered)
    rank = q * total
    seen = 0
    for value, n in ordered:
        seen += n
        if seen >= rank:
            return value
    return ordered[-1][0]


def optimal_buckets(hist: Mapping[int, int], cost: CostModel, max_graphs: int) -> tuple[int, ...]:
    """The <= max_graphs buckets with the least expected latency (sizes above the largest run eagerly
    when their eager latency is known, else every size must be covered). Exact dynamic programme."""
    sizes = sorted(hist)
    candidates = sorted(c for c in cost.graph_us if c >= sizes[0])
    if not candidates or (candidates[-1] < sizes[-1] and not all(s in cost.eager_us for s in sizes
                                                                     if s > candidates[-1])):
        raise BadInputError(f"graph latency is known up to size {max(cost.graph_us, default=0)} but requests go "
                            f"up to {sizes[-1]} with no eager latency to fall back on: measure larger sizes")
    m = len(candidates)
    # demand[j]: requests with size in (candidates[j-1], candidates[j]]; tail[j]: eager cost of sizes > candidates[j]
    demand = [0] * m
    for s, n in hist.items():
        j = next((j for j, c in enumerate(candidates) if c >= s), None)
        if j is not None:
            demand[j] += n
    prefix = [0]
    for d in demand:
        prefix.append(prefix[-1] + d)
    inf = math.inf
    tail = []
    for c in candidates:
        above = [(s, n) for s, n in hist.items() if s > c]
        tail.append(inf if any(s not in cost.eager_us for s, _ in above) else
                    sum(cost.eager_us[s] * n for s, n in above))
    all_eager = inf if any(s not in cost.eager_us for s in hist) else sum(cost.eager_us[s] * n for s, n in hist.items())
    # best[k][j]: least latency sum of requests with size <= candidates[j], with k buckets, the largest at j
    best = [[inf] * m for _ in range(max_graphs + 1)]
    back = [[-1] * m for _ in range(max_graphs + 1)]
    for j in range(m):
        best[1][j] = cost.graph_us[candidates[j]] * prefix[j + 1]
    for k in range(2, max_graphs + 1):
        for j in range(m):
            lat = cost.graph_us[candidates[j]]
            for i in range(j):
                value = best[k - 1][i] + lat * (prefix[j + 1] - prefix[i + 1])
                if value < best[k][j]:
                    best[k][j], back[k][j] = value, i
    choice, choice_cost = (), all_eager
    for k in range(1, max_graphs + 1):
        for j in range(m):
            total = best[k][j] + tail[j]
            if total < choice_cost - 1e-9:
                choice_cost, choice = total, (k, j)
    if not choice:
        return ()
    k, j = choice
    picked = []
    while k >= 1 and j >= 0:
        picked.append(candidates[j])
        j, k = back[k][j], k - 1
    return tuple(sorted(picked))


def _sizes_words(sizes: Iterable[int]) -> str:
    """Sizes in words, short: "1 to 64" when every size between is there, else a listing (counted when long)."""
    sizes = sorted(set(sizes))
    if not sizes:
        return "none"
    if len(sizes) > 2 and sizes == list(range(sizes[0], sizes[-1] + 1)):
        return f"{sizes[0]} to {sizes[-1]}"
    if len(sizes) <= 12:
        return listing(sizes)
    return f"{len(sizes)} sizes from {sizes[0]} to {sizes[-1]}"


@dataclass(frozen=True)
class BucketAdvice:
    """The advisor's answer: `buckets` to capture, and every strategy scored on the same traffic.

    `notes` say what could not be scored and why (a strategy whose buckets have no measured latency is left out,
    not scored on other buckets than its own)."""

    buckets: tuple[int, ...]
    max_graphs: int
    strategies: tuple[StrategyResult, ...]
    sizes: dict[int, int]
    cost: CostModel
    memory_budget_bytes: int | None = None
    notes: tuple[str, ...] = ()

    @property
    def chosen(self) -> StrategyResult:
        return self.strategies[0]

    def strategy(self, name: str) -> StrategyResult:
        for s in self.strategies:
            if s.name == name:
                return s
        raise BadInputError(f"no strategy {name!r}; have {', '.join(repr(s.name) for s in self.strategies)}")

    def rows(self) -> list[dict[str, Any]]:
        return [s.to_dict() for s in self.strategies]

    def to_pandas(self) -> Any:
        import pandas as pd

        return pd.DataFrame(self.rows()).set_index("name")

    def title(self) -> str:
        requests = sum(self.sizes.values())
        chosen = listing(self.buckets) if self.buckets else "no bucket (every request runs eagerly)"
        return (f"Bucket advice for {requests:,} requests of {len(self.sizes)} sizes: capture {chosen} "
                f"(at most {self.max_graphs} graphs)")

    def table(self) -> Table:
        """Every strategy scored on the observed sizes, the advisor's first: graphs, predicted mean and p99, pad
        waste, the share that runs eagerly, the largest graph's pool and the capture time."""
        rows = [{"name": s.name, "buckets": _sizes_words(s.buckets) if s.buckets else "none", "graphs": s.graphs,
                 "mean": s.expected_us, "p99": s.p99_us, "pad": s.pad_waste, "eager": s.eager_share,
                 "pool": s.pool_bytes, "capture": None if s.capture_ms is None else s.capture_ms * 1e3}
                for s in self.strategies]
        missing = "not in the latency given (a Sweep, or a latency table with memory and capture figures, has it)"
        columns = [Column("name", "strategy", kind="text"), Column("buckets", "buckets", kind="text"),
                   Column("graphs", "graphs", kind="count"), Column("mean", "mean", kind="time"),
                   Column("p99", "p99", kind="time"), Column("pad", "pad waste", kind="percent", factor=100),
                   Column("eager", "run eagerly", kind="percent", factor=100),
                   Column("pool", "pool", kind="bytes", missing=missing),
                   Column("capture", "capture", kind="time", missing=missing)]
        source = self.cost.source or "the latency given"
        notes = [f"Mean and p99 are predicted, not run: each request at its bucket's latency in {source} (eager "
                 "above the largest bucket). Pool: the most pool memory one of its graphs took where the latency was "
                 "measured (one shared pool holds about that much). Capture: the capture times of its graphs, "
                 "added.", *self.notes]
        return Table(rows, columns, index="name", title=self.title(), notes=notes)

    def __str__(self) -> str:
        return str(self.table())

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))

    def _repr_html_(self) -> str:
        return self.table().to_html()

    def to_dict(self) -> dict[str, Any]:
        return {"schema": ADVICE_SCHEMA, "buckets": list(self.buckets), "max_graphs": self.max_graphs,
                "memory_budget_bytes": self.memory_budget_bytes,
                "strategies": [s.to_dict() for s in self.strategies],
                "sizes": {str(k): v for k, v in self.sizes.items()}, "notes": list(self.notes),
                "cost": {k: ({str(s): v for s, v in val.items()} if isinstance(val, dict) else val)
                         for k, val in asdict(self.cost).items()}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BucketAdvice:
        if data.get("schema") != ADVICE_SCHEMA:
            raise RecordingError(f"not a bucket advice (schema {data.get('schema')!r}, expected {ADVICE_SCHEMA})")
        c = data["cost"]
        cost = CostModel(*({int(s): v for s, v in c[k].items()} for k in
                           ("graph_us", "eager_us", "pool_bytes", "exec_bytes", "capture_ms")), source=c.get("source", ""))
        strategies = tuple(StrategyResult(**{**s, "buckets": tuple(s["buckets"])}) for s in data["strategies"])
        return cls(tuple(data["buckets"]), data["max_graphs"], strategies, {int(k): v for k, v in data["sizes"].items()},
                   cost, data.get("memory_budget_bytes"), tuple(data.get("notes") or ()))


def advise_buckets(sizes: Any, latency: Any, *, max_graphs: int = 8,
                   memory_budget_bytes: int | None = None) -> BucketAdvice:
    """Choose the <= `max_graphs` buckets that minimise expected latency on the observed sizes.

    Args:
        sizes: observed request sizes: a list, a {size: count} histogram, or a trace with `.sizes`.
        latency: a `Sweep` (graph and eager p50 by batch size, plus capture cost and memory; a dense
            sweep of every size is best), a {size: µs} mapping of graph latency, or a callable size -> µs.
        max_graphs: most graphs to capture.
        memory_budget_bytes: most pool + executable-graph memory (needs a Sweep with memory figures):
            the best choice for the largest graph count whose memory fits.

    Returns:
        A `BucketAdvice`: `.buckets` (pass it to `gl.GraphCache(model, buckets=advice)`), and the
        strategies compared: the advice, one graph per size, each bucket policy that is compared (its
        `label`), eager.
    """
    if max_graphs < 1:
        raise BadInputError(f"max_graphs must be at least 1, got {max_graphs}")
    hist = histogram(sizes)
    cost = CostModel.from_any(latency, hist)
    chosen = optimal_buckets(hist, cost, max_graphs)
    if memory_budget_bytes is not None:
        if not cost.pool_bytes:
            raise ConfigurationError("memory_budget_bytes needs memory figures per size: pass a Sweep measured "
                                     "with graphs (its graph points carry pool_bytes) or a latency table with "
                                     "pool_bytes")
        for k in range(max_graphs, 0, -1):
            trial = optimal_buckets(hist, cost, k)
            result = score("trial", trial, hist, cost)
            if (result.pool_bytes or 0) + (result.exec_bytes or 0) <= memory_budget_bytes:
                chosen = trial
                break
        else:
            chosen = ()
    measured = sorted(cost.graph_us)
    cover = next((b for b in measured if b >= max(hist)), measured[-1])  # the ladders stop at the first cover
    strategies = [score(f"advisor (k={max_graphs})", chosen, hist, cost)]
    notes = []
    if any(s not in cost.graph_us for s in hist if s <= measured[-1]):
        notes.append(f"The advisor chose among the sizes whose graph latency was measured: {_sizes_words(measured)}.")
    # a strategy is scored on its own buckets or not at all: dropping the buckets that were not measured would
    # score another strategy under its name (one graph per size with padding, a ladder that is another ladder)
    alternatives = {"one graph per size": sorted(hist)}
    for policy in POLICIES.values():
        if policy.compare:
            alternatives[policy.label] = list(policy.sizes(cover))
    for name, buckets in alternatives.items():
        unmeasured = [b for b in buckets if b not in cost.graph_us]
        if unmeasured:
            notes.append(f"Not scored, {name}: no graph latency measured at {_sizes_words(unmeasured)} "
                         f"(measured: {_sizes_words(measured)}); a sweep of every size (like the `dense` recording) scores it.")
            continue
        try:
            strategies.append(score(name, buckets, hist, cost))
        except BadInputError:
            notes.append(f"Not scored, {name}: it leaves sizes above its largest bucket with no eager latency to "
                         "run them with.")
    if all(s in cost.eager_us for s in hist):
        strategies.append(score("eager", (), hist, cost))
    else:
        notes.append("Not scored, eager: no eager latency measured at "
                     f"{_sizes_words(s for s in hist if s not in cost.eager_us)}.")
    return BucketAdvice(tuple(chosen), max_graphs, tuple(strategies), hist, cost, memory_budget_bytes, tuple(notes))


__all__ = ["ADVICE_SCHEMA", "BucketAdvice", "CostModel", "StrategyResult", "advise_buckets", "histogram",
           "optimal_buckets", "score"]
