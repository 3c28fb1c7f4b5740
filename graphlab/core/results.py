"""Typed latency results: one `LatencyPoint` per (batch size, mode), a `Sweep` of them, a `Timeline`.

Layer 0 (pure): standard library only. pandas is imported lazily, by `to_pandas()` alone.

Every result round-trips through JSON (`to_dict()` / `from_dict()`), which is how `graphlab record`
stores them (`sweep.json`, `timeline.json` in a recording) and how the widget and the notebooks read
them back without a GPU. Unknown keys are ignored on load, so newer files still open.

Example (values from a recording, never invented):
    >>> import graphlab as gl
    >>> sweep = gl.Sweep.from_dict(gl.load_recording("mlp").results("sweep"))   # doctest: +SKIP
    >>> sweep.latency_drop_pct(1)                                                 # doctest: +SKIP
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Iterator

from graphlab.core.stats import latency_drop_pct, speedup
from graphlab.errors import GraphlabError, ResultsError

MODES = ("eager", "graph")
#: batch sizes a sweep covers unless told otherwise (powers of two up to 64)
DEFAULT_BATCH_SIZES = (1, 2, 4, 8, 16, 32, 64)
SWEEP_SCHEMA = "graphlab.sweep/1"
TIMELINE_SCHEMA = "graphlab.timeline/1"



def _known(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in names}


@dataclass(frozen=True)
class LatencyPoint:
    """Latency of one model at one batch size, run eagerly or as a graph replay.

    Attributes:
        batch_size: inputs per call.
        mode: "eager" (plain `model(x)`) or "graph" (copy inputs in, replay the captured graph).
        p10_us, p50_us, p90_us: end-to-end host wall time of one call, including the
            synchronisation that waits for the GPU: what a request sees.
        gpu_p10_us, gpu_p50_us, gpu_p90_us: time between two CUDA events recorded on the stream
            around the call (GPU-side; includes idle gaps while the GPU waits for launches).
        repetitions: timed calls per run.
        runs: how many times the whole timed loop was repeated.
        run_p50_us: the median wall time of each run, in order.
        spread_pct: (max - min) of `run_p50_us` as % of their median: the noise floor.
        first_call_us: wall time of the very first call (cold: allocation, library set-up).
        kernel_count: kernels one call runs (profiler for eager, graph nodes for graph).
        gpu_busy_us: time at least one kernel or copy ran during one call (torch.profiler; overlaps once).
        launch_overhead_pct: share of p50 wall time the GPU ran no kernel (launches, Python, sync).
        capture_ms: graph only, time to capture (and instantiate) the graph.
        graph_memory_bytes: graph only, device memory the graph's private pool added.
        graph_exec_bytes: graph only, device memory the driver took to instantiate the graph
            (free-memory drop over `instantiate()`; page-granular, so 0 or whole pages).
        graph_peak_bytes: graph only, the most memory the captured work held at once (peak of
            `torch.cuda.memory_allocated()` during capture): what the pool must hold, before the
            caching allocator rounds it up to whole segments (`graph_memory_bytes`).
    """

    batch_size: int
    mode: str
    p10_us: float
    p50_us: float
    p90_us: float
    gpu_p10_us: float | None = None
    gpu_p50_us: float | None = None
    gpu_p90_us: float | None = None
    repetitions: int = 0
    runs: int = 0
    run_p50_us: tuple[float, ...] = ()
    spread_pct: float | None = None
    first_call_us: float | None = None
    kernel_count: int | None = None
    gpu_busy_us: float | None = None
    launch_overhead_pct: float | None = None
    capture_ms: float | None = None
    graph_memory_bytes: int | None = None
    graph_exec_bytes: int | None = None
    graph_peak_bytes: int | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ResultsError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self.batch_size < 1:
            raise ResultsError(f"batch_size must be >= 1, got {self.batch_size}")
        if not self.p10_us <= self.p50_us <= self.p90_us:
            raise ResultsError(f"percentiles out of order: p10 {self.p10_us}, p50 {self.p50_us}, p90 {self.p90_us}")

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["run_p50_us"] = list(self.run_p50_us)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LatencyPoint:
        try:
            kwargs = _known(cls, data)
            kwargs["run_p50_us"] = tuple(kwargs.get("run_p50_us") or ())
            return cls(**kwargs)
        except TypeError as exc:
            raise ResultsError(f"not a latency row ({exc}); rows need batch_size, mode, p10_us, p50_us, p90_us") from None


@dataclass(frozen=True)
class Sweep:
    """Eager vs graph latency of one model over batch sizes.

    Attributes:
        model: the model's name (a zoo name such as "mlp", or the class name).
        points: one `LatencyPoint` per (batch size, mode), in measurement order.
        conditions: how it was measured: device, torch, dtype, warm-up, repetitions, runs, date, ...
        weight_update: what happened when weights changed after capture (see
            `graphlab.gpu.weights.probe_weight_update`), or None when not probed.
    """

    model: str
    points: tuple[LatencyPoint, ...]
    conditions: dict[str, Any] = field(default_factory=dict, compare=False)
    weight_update: dict[str, Any] | None = field(default=None, compare=False)

    # -- access ---------------------------------------------------------------------------
    @property
    def batch_sizes(self) -> list[int]:
        """Batch sizes measured, ascending."""
        return sorted({p.batch_size for p in self.points})

    def by_mode(self, mode: str) -> list[LatencyPoint]:
        """Points of one mode, by ascending batch size."""
        return sorted((p for p in self.points if p.mode == mode), key=lambda p: p.batch_size)

    def point(self, batch_size: int, mode: str) -> LatencyPoint:
        """The point at (batch_size, mode); ResultsError if it was not measured."""
        for p in self.points:
            if p.batch_size == batch_size and p.mode == mode:
                return p
        raise ResultsError(f"{self.model}: no {mode} point at batch size {batch_size}; measured {self.batch_sizes}")

    def has(self, batch_size: int) -> bool:
        """True when both eager and graph were measured at this batch size."""
        modes = {p.mode for p in self.points if p.batch_size == batch_size}
        return modes >= set(MODES)

    def speedup(self, batch_size: int, gpu: bool = False) -> float:
        """eager p50 / graph p50 at one batch size (wall time, or CUDA-event time if `gpu`)."""
        eager, graph = self.point(batch_size, "eager"), self.point(batch_size, "graph")
        if gpu:
            if eager.gpu_p50_us is None or graph.gpu_p50_us is None:
                raise ResultsError(f"{self.model}: no CUDA-event times at batch size {batch_size}")
            return speedup(eager.gpu_p50_us, graph.gpu_p50_us)
        return speedup(eager.p50_us, graph.p50_us)

    def latency_drop_pct(self, batch_size: int) -> float:
        """How much lower end-to-end p50 latency is with the graph, in % of eager."""
        return latency_drop_pct(self.point(batch_size, "eager").p50_us, self.point(batch_size, "graph").p50_us)

    def __iter__(self) -> Iterator[LatencyPoint]:
        return iter(self.points)

    def __len__(self) -> int:
        return len(self.points)

    # -- views ----------------------------------------------------------------------------
    def rows(self) -> list[dict[str, Any]]:
        """One flat dict per point, with the model name: ready for a table or a DataFrame."""
        return [{"model": self.model, **p.to_dict()} for p in self.points]

    def to_pandas(self) -> Any:
        """A pandas DataFrame, one row per point (imports pandas on first use)."""
        try:
            import pandas as pd
        except ImportError:
            raise ResultsError("to_pandas() needs pandas: pip install pandas (or use sweep.rows())") from None
        return pd.DataFrame(self.rows())

    def table(self) -> str:
        """A plain-text table: batch size, eager and graph p50, speedup."""
        lines = [f"{self.model}: end-to-end p50 latency (µs)", f"{'batch':>6} {'eager':>10} {'graph':>10} {'speedup':>8}"]
        for b in self.batch_sizes:
            if self.has(b):
                e, g = self.point(b, "eager").p50_us, self.point(b, "graph").p50_us
                lines.append(f"{b:>6} {e:>10.1f} {g:>10.1f} {self.speedup(b):>7.2f}x")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()

    # -- serialisation --------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SWEEP_SCHEMA,
            "model": self.model,
            "conditions": dict(self.conditions),
            "weight_update": self.weight_update,
            "rows": [p.to_dict() for p in self.points],
        }

    def to_json(self, indent: int | None = 1) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, data: Any) -> Sweep:
        if not isinstance(data, dict) or "rows" not in data:
            raise ResultsError("not a sweep: expected a JSON object with 'rows' (written by Sweep.to_dict)")
        return cls(
            model=str(data.get("model", "model")),
            points=tuple(LatencyPoint.from_dict(r) for r in data["rows"]),
            conditions=dict(data.get("conditions") or {}),
            weight_update=data.get("weight_update"),
        )

    @classmethod
    def from_json(cls, text: str) -> Sweep:
        return cls.from_dict(json.loads(text))

    @classmethod
    def load(cls, name: str, gpu: str | None = None, key: str = "sweep") -> Sweep:
        """The sweep recorded for zoo model `name` (on `gpu`, e.g. "h200"), provenance in `conditions`."""
        from graphlab.core.recordings import load_recording

        rec = load_recording(name, gpu=gpu)
        sweep = cls.from_dict(rec.results(key))
        return cls(sweep.model, sweep.points, {**rec.provenance, **sweep.conditions}, sweep.weight_update)


@dataclass(frozen=True)
class Span:
    """Something that ran from `start_us` to `end_us` (µs after the call started): a kernel or a launch."""

    name: str
    start_us: float
    end_us: float

    @property
    def duration_us(self) -> float:
        return self.end_us - self.start_us


def _merge(spans: list[Span]) -> list[tuple[float, float]]:
    merged: list[list[float]] = []
    for s in sorted(spans, key=lambda s: s.start_us):
        if merged and s.start_us <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], s.end_us)
        else:
            merged.append([s.start_us, s.end_us])
    return [(a, b) for a, b in merged]


@dataclass(frozen=True)
class Trace:
    """What one call did, on a time axis that starts (0 µs) when the host called it.

    Attributes:
        mode: "eager" or "graph".
        kernels: kernels as the GPU ran them.
        launches: host-side launch calls (cudaLaunchKernel, cudaGraphLaunch, ...).
        host_us: wall time of the call on the host, until its synchronisation returned.
    """

    mode: str
    kernels: tuple[Span, ...]
    launches: tuple[Span, ...] = ()
    host_us: float | None = None

    @property
    def end_us(self) -> float:
        """When the last kernel ended (0 if none ran)."""
        return max((k.end_us for k in self.kernels), default=0.0)

    @property
    def busy_us(self) -> float:
        """Time at least one kernel was running."""
        return sum(b - a for a, b in _merge(list(self.kernels)))

    def gaps(self) -> list[tuple[float, float]]:
        """Idle intervals between 0 and the end of the last kernel (the GPU waited for work)."""
        out, cursor = [], 0.0
        for a, b in _merge(list(self.kernels)):
            if a > cursor:
                out.append((cursor, a))
            cursor = max(cursor, b)
        return out

    @property
    def idle_us(self) -> float:
        """Summed idle gaps."""
        return sum(b - a for a, b in self.gaps())

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "host_us": self.host_us,
            "kernels": [[k.name, k.start_us, k.end_us] for k in self.kernels],
            "launches": [[s.name, s.start_us, s.end_us] for s in self.launches],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trace:
        return cls(
            mode=data["mode"],
            kernels=tuple(Span(str(n), float(a), float(b)) for n, a, b in data.get("kernels", [])),
            launches=tuple(Span(str(n), float(a), float(b)) for n, a, b in data.get("launches", [])),
            host_us=data.get("host_us"),
        )


@dataclass(frozen=True)
class Timeline:
    """One eager forward and one graph replay of the same model and batch size, kernel by kernel."""

    model: str
    batch_size: int
    eager: Trace
    graph: Trace
    conditions: dict[str, Any] = field(default_factory=dict, compare=False)

    def trace(self, mode: str) -> Trace:
        if mode not in MODES:
            raise ResultsError(f"mode must be one of {MODES}, got {mode!r}")
        return self.eager if mode == "eager" else self.graph

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": TIMELINE_SCHEMA,
            "model": self.model,
            "batch_size": self.batch_size,
            "conditions": dict(self.conditions),
            "eager": self.eager.to_dict(),
            "graph": self.graph.to_dict(),
        }

    def to_json(self, indent: int | None = 1) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, data: Any) -> Timeline:
        if not isinstance(data, dict) or "eager" not in data or "graph" not in data:
            raise ResultsError("not a timeline: expected a JSON object with 'eager' and 'graph' traces")
        try:
            return cls(
                model=str(data.get("model", "model")),
                batch_size=int(data["batch_size"]),
                eager=Trace.from_dict(data["eager"]),
                graph=Trace.from_dict(data["graph"]),
                conditions=dict(data.get("conditions") or {}),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ResultsError(f"not a timeline ({exc})") from None

    @classmethod
    def from_json(cls, text: str) -> Timeline:
        return cls.from_dict(json.loads(text))

    @classmethod
    def load(cls, name: str, gpu: str | None = None, key: str = "timeline") -> Timeline:
        """The kernel timeline recorded for zoo model `name` (on `gpu`, e.g. "h200")."""
        from graphlab.core.recordings import load_recording

        rec = load_recording(name, gpu=gpu)
        timeline = cls.from_dict(rec.results(key))
        return cls(timeline.model, timeline.batch_size, timeline.eager, timeline.graph,
                   {**rec.provenance, **timeline.conditions})


__all__ = ["MODES", "LatencyPoint", "ResultsError", "Span", "Sweep", "Timeline", "Trace"]
