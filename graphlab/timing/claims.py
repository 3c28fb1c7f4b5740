"""Common claims about CUDA graphs, checked against recorded measurements.

Pure (no torch): standard library only.

Each claim gets a `ClaimVerdict`: "holds", "fails", "depends" (true for some models or batch sizes,
false for others), or "unsettled" (the recordings lack the measurement that would decide it). Every
verdict carries the measured figures, per model, and the conditions they were measured under, so a
reader can disagree with the threshold and still use the numbers.

Example:
    >>> import graphlab as gl
    >>> for verdict in gl.check_claims():          # the recordings shipped with graphlab
    ...     print(verdict)                         # doctest: +SKIP
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from graphlab import present
from graphlab.timing.results import ResultsError, Sweep, made_here_or_recorded

HOLDS, FAILS, DEPENDS, UNSETTLED = "holds", "fails", "depends", "unsettled"

BATCH1_RANGE_PCT = (30.0, 45.0)
BATCH8_RANGE_PCT = (5.0, 15.0)  # "about 10%"
CAPTURE_LIMIT_MS = 100.0
FEW_HUNDRED_KB = (100 * 1024, 1024 * 1024)  # "a few hundred kilobytes": 100 KiB up to 1 MiB


@dataclass(frozen=True)
class ClaimVerdict:
    """What the recordings say about one claim.

    Attributes:
        key: short id ("batch1", "batch8", "capture", "memory", "weights").
        claim: the claim as people state it.
        verdict: "holds", "fails", "depends" or "unsettled".
        measured: the measured figure(s), in one line.
        condition: how and where it was measured, and how the claim was read.
        per_model: {model: figure} behind `measured` (units in `unit`).
        unit: unit of `per_model` values ("%", "ms", "bytes", "").
    """

    key: str
    claim: str
    verdict: str
    measured: str
    condition: str
    per_model: dict[str, Any] = field(default_factory=dict)
    unit: str = ""
    #: where and when the measurements were made ("recorded on NVIDIA H200 on 2026-12-01 with torch ..."),
    #: also at the end of `condition`
    where: str = ""

    def __str__(self) -> str:
        return f"[{self.verdict.upper()}] {self.claim}\n  measured: {self.measured}\n  condition: {self.condition}"

    def _repr_html_(self) -> str:
        return ClaimsReport([self])._repr_html_()



def _sweeps(recordings: Iterable[Any] | None) -> list[Sweep]:
    """Sweeps from Recording objects (their "sweep"/"latency*" results), Sweep objects or dicts."""
    if recordings is None:
        from graphlab.recordings import list_recordings

        recordings = list_recordings()
    found: list[Sweep] = []
    for item in recordings:
        if isinstance(item, Sweep):
            found.append(item)
        elif isinstance(item, dict):
            found.append(Sweep.from_dict(item))
        elif hasattr(item, "result_names") and hasattr(item, "results"):
            for key in item.result_names:
                if key.startswith("sweep") or key.startswith("latency"):
                    try:
                        sweep = Sweep.from_dict(item.results(key))
                    except ResultsError:
                        continue
                    found.append(Sweep(item.name, sweep.points, {**item.provenance, **sweep.conditions}, sweep.weight_update))
    return found


def _where(sweeps: list[Sweep]) -> str:
    """ "recorded on NVIDIA H200 on 2026-12-01 with torch 2.11.0+cu130" (every GPU, date and torch the sweeps name)."""
    made = sorted({made_here_or_recorded(s.conditions) for s in sweeps} - {""})
    torches = sorted({str(s.conditions.get("torch")) for s in sweeps if s.conditions.get("torch")})
    where = present.listing(made) if made else "where and when not recorded"
    return where + (f" with torch {present.listing(torches)}" if torches else "")


def _judge(values: dict[str, float], ok: Callable[[float], bool]) -> str:
    if not values:
        return UNSETTLED
    passed = [ok(v) for v in values.values()]
    return HOLDS if all(passed) else FAILS if not any(passed) else DEPENDS


def _drop_claim(sweeps: list[Sweep], key: str, batch_size: int, claim: str, low: float, high: float) -> ClaimVerdict:
    drops = {s.model: s.latency_drop_pct(batch_size) for s in sweeps if s.has(batch_size)}
    parts = []
    for s in sweeps:
        if not s.has(batch_size):
            continue
        text = f"{s.model} {present.percent(drops[s.model])}"
        if s.is_paired(batch_size):  # the drop in the middle 80% of the block pairs: the noise, measured
            pairs = s.paired(batch_size)
            lo, hi = (100.0 * (1.0 - 1.0 / r) for r in (pairs.p10, pairs.p90))
            text += f" ({present.percent(lo)[:-1]} to {present.percent(hi)} over the pairs)"
        parts.append(text)
    measured = ", ".join(parts) or f"no recording has batch size {batch_size} in both modes"
    paired = any(s.is_paired(batch_size) for s in sweeps if s.has(batch_size))
    noise = ("; in brackets, the drop of the pairs' p10 to p90 (an eager and a graph block timed back to back): "
             "the spread a second run would see" if paired else "")
    return ClaimVerdict(
        key, claim, _judge(drops, lambda v: low <= v <= high), measured,
        f"end-to-end p50 (host wall time, synchronised per call), eager vs graph replay with input copy, "
        f"batch size {batch_size}; read as a drop of {low:.0f}-{high:.0f}%{noise}; {_where(sweeps)}",
        drops, "%", _where(sweeps),
    )


def _capture_claim(sweeps: list[Sweep]) -> ClaimVerdict:
    worst: dict[str, float] = {}
    kernels: dict[str, int] = {}
    for s in sweeps:
        for p in s.by_mode("graph"):
            if p.capture_ms is not None and p.capture_ms >= worst.get(s.model, -1.0):
                worst[s.model] = p.capture_ms
                kernels[s.model] = p.kernel_count or 0
    measured = ", ".join(f"{m} {present.duration(v * 1e3)} ({kernels[m]} kernels)" for m, v in worst.items()) or \
        "no capture times recorded"
    return ClaimVerdict(
        "capture", "Capturing a graph of a medium-sized model takes under 100 ms.",
        _judge(worst, lambda v: v < CAPTURE_LIMIT_MS), measured,
        "slowest capture per model over the recorded batch sizes: stream capture + instantiate, warm-up "
        f"excluded; one graph, not a whole serving engine's set of batch sizes; {_where(sweeps)}",
        worst, "ms", _where(sweeps),
    )


def _size(value_bytes: float) -> str:
    """A size for a sentence: "2 MiB", "13.4 MiB", "256 KiB", "0 B" (three digits at most)."""
    for scale, unit in ((1024**3, "GiB"), (1024**2, "MiB"), (1024, "KiB")):
        if value_bytes >= scale:
            return f"{value_bytes / scale:.3g} {unit}"
    return f"{value_bytes:.0f} B"


def _at(points: dict[str, tuple[float, int]]) -> str:
    """ "cnn 2 MiB, gpt 2 MiB (each at batch 2)" or "cnn 36 MiB (batch 1), gpt 42 MiB (batch 64)"."""
    batches = {b for _, b in points.values()}
    if len(batches) == 1 and len(points) > 1:
        return ", ".join(f"{m} {_size(v)}" for m, (v, _) in points.items()) + f" (each at batch {batches.pop()})"
    return ", ".join(f"{m} {_size(v)} (batch {b})" for m, (v, b) in points.items())


def _memory_claim(sweeps: list[Sweep]) -> ClaimVerdict:
    total: dict[str, float] = {}
    smallest: dict[str, tuple[float, int]] = {}
    largest: dict[str, tuple[float, int]] = {}
    peaks: dict[str, float] = {}
    driver: list[float] = []
    for s in sweeps:
        graph_points = [p for p in s.by_mode("graph") if p.pool_bytes is not None]
        if not graph_points:
            continue
        cost = {p.batch_size: p.pool_bytes + (p.graph_exec_bytes or 0) for p in graph_points}
        cheapest = min(graph_points, key=lambda p: (cost[p.batch_size], p.batch_size))
        biggest = max(graph_points, key=lambda p: (cost[p.batch_size], p.batch_size))
        total[s.model] = cost[cheapest.batch_size]
        smallest[s.model] = (cost[cheapest.batch_size], cheapest.batch_size)
        largest[s.model] = (cost[biggest.batch_size], biggest.batch_size)
        driver.append(float(cheapest.graph_exec_bytes or 0))
        if cheapest.graph_peak_bytes is not None:
            peaks[s.model] = cheapest.graph_peak_bytes
    parts = []
    if smallest:
        parts.append(f"smallest graph: {_at(smallest)}")
        parts.append(f"largest: {_at(largest)}")
    if peaks:
        low, high = min(peaks, key=peaks.__getitem__), max(peaks, key=peaks.__getitem__)
        span = _size(peaks[low]) if low == high else f"{_size(peaks[low])} ({low}) to {_size(peaks[high])} ({high})"
        parts.append(f"the work inside them peaked at {span}; the pool rounds that up to whole allocator segments")
    if driver:
        parts.append(f"instantiating added {_size(min(driver))}" + (f" to {_size(max(driver))}" if max(driver) != min(driver) else ""))
    low, high = FEW_HUNDRED_KB
    return ClaimVerdict(
        "memory", "A CUDA graph costs a few hundred kilobytes of GPU memory.",
        _judge(total, lambda v: low <= v <= high), "; ".join(parts) or "no graph memory recorded",
        "the cheapest graph of each model: its private memory pool (torch.cuda.memory_reserved growth, whole "
        "allocator segments of 2 MiB and up) plus the driver's instantiate cost (cudaMemGetInfo, page-granular); "
        "read as 100 KiB to 1 MiB; " + _where(sweeps),
        total, "bytes", _where(sweeps),
    )


def _weights_claim(sweeps: list[Sweep]) -> ClaimVerdict:
    probes = {s.model: s.weight_update for s in sweeps if s.weight_update and "inplace_copy" in s.weight_update}
    claim = "New weights need a new capture."
    if not probes:
        return ClaimVerdict("weights", claim, UNSETTLED, "no weight-update probe recorded",
                            "run graphlab.timing.weights.probe_weight_update on a GPU to settle it")
    inplace = {m: bool(p["inplace_copy"]["replay_follows_new_weights"]) for m, p in probes.items()}
    rebind = {m: bool(p["rebind_parameter"]["replay_follows_new_weights"]) for m, p in probes.items()}
    if all(inplace.values()) and not any(rebind.values()):
        verdict = DEPENDS
        measured = (f"in-place param.copy_(new): the replay followed the new weights in {len(inplace)}/{len(inplace)} "
                    f"models; replacing the Parameter object: the replay kept the old weights in all of them")
    elif not any(inplace.values()):
        verdict, measured = HOLDS, "the replay ignored new weights, even when copied in place"
    else:
        verdict, measured = DEPENDS, f"in-place copy followed: {inplace}; rebinding followed: {rebind}"
    return ClaimVerdict(
        "weights", claim, verdict, measured,
        "a graph replays kernels on fixed addresses: writing new values into the same tensors needs no new capture; "
        f"pointing the module at new tensors (load_state_dict(assign=True), new nn.Parameter) does; {_where(sweeps)}",
        inplace, "", _where(sweeps),
    )


#: each claim's short name, for the notes under the table
_CLAIM_NAMES = {"batch1": "Batch-1 drop", "batch8": "Batch-8 drop", "capture": "Capture time", "memory": "Memory",
                "weights": "New weights"}


class ClaimsReport(list):  # type: ignore[type-arg]
    """A list of `ClaimVerdict`s that shows as a table in a notebook (`table()`)."""

    def table(self) -> present.Table:
        """One row per claim: the claim, its verdict, what was measured; how each claim was read, and where and
        when the measurements were made, under the table."""
        rows = [{"claim": v.claim, "verdict": v.verdict, "measured": v.measured} for v in self]
        columns = [present.Column("claim", "claim", kind="text"), present.Column("verdict", "verdict", kind="text"),
                   present.Column("measured", "measured", kind="text")]
        wheres = sorted({v.where for v in self} - {""})
        title = "Claims about CUDA graphs, checked against the measurements" + (
            f" {present.listing(wheres)}" if wheres else "")
        notes = [f"{_CLAIM_NAMES.get(v.key, v.key)}: {v.condition.removesuffix('; ' + v.where)}." for v in self]
        return present.Table(rows, columns, title=title, notes=notes)

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()

    #: the sweeps the verdicts were drawn from (`check_claims` sets them)
    sweeps: list[Sweep] = []

    def figures(self, batch_size: int = 1) -> present.Table:
        """The figures behind the verdicts, one row per model at `batch_size`: how much lower the latency is
        with a graph (%), how many kernels one call runs, and the share of an eager call in which the GPU ran no
        kernel (%). A graph can only win back idle time, so the drop stays below the idle share."""
        rows = []
        for s in self.sweeps:
            if not s.has(batch_size):
                continue
            rows.append({"model": s.model, "drop": s.latency_drop_pct(batch_size),
                         "kernels": s.point(batch_size, "graph").kernel_count,
                         "idle": s.point(batch_size, "eager").launch_overhead_pct})
        columns = [present.Column("model", "model", kind="text"),
                   present.Column("drop", f"latency drop at batch {batch_size}", kind="percent"),
                   present.Column("kernels", "kernels per call", kind="count", missing="not counted"),
                   present.Column("idle", "GPU idle in an eager call", kind="percent", missing="not profiled")]
        wheres = sorted({made_here_or_recorded(s.conditions) for s in self.sweeps} - {""})
        title = f"The figures behind the verdicts, at batch {batch_size}" + (
            f", {present.listing(wheres)}" if wheres else "")
        return present.Table(rows, columns, index="model", title=title)

    def __str__(self) -> str:
        return "\n\n".join(str(v) for v in self)

    def __repr__(self) -> str:
        return str(self)


def check_claims(recordings: Iterable[Any] | None = None) -> ClaimsReport:
    """Check the usual claims against recordings (default: every recording graphlab can find).

    Args:
        recordings: `Recording`s, `Sweep`s, or sweep dicts; None means `list_recordings()`.

    Returns:
        One `ClaimVerdict` per claim, in this order: batch1, batch8, capture, memory, weights.
    """
    sweeps = _sweeps(recordings)
    report = ClaimsReport([
        _drop_claim(sweeps, "batch1", 1, "With CUDA graphs, batch-1 end-to-end latency drops by 30-45%.",
                    *BATCH1_RANGE_PCT),
        _drop_claim(sweeps, "batch8", 8, "At batch size 8 the drop is only about 10%.", *BATCH8_RANGE_PCT),
        _capture_claim(sweeps),
        _memory_claim(sweeps),
        _weights_claim(sweeps),
    ])
    report.sweeps = sweeps
    return report


def claims_markdown(verdicts: list[ClaimVerdict]) -> str:
    """The verdicts as a Markdown table (claim, verdict, measured)."""
    rows = ["| claim | verdict | measured |", "|---|---|---|"]
    rows += [f"| {v.claim} | **{v.verdict}** | {v.measured} |" for v in verdicts]
    return "\n".join(rows)


__all__ = ["ClaimVerdict", "ClaimsReport", "DEPENDS", "FAILS", "HOLDS", "UNSETTLED", "check_claims", "claims_markdown"]
