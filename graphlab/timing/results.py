"""Typed latency results: one `LatencyPoint` per (batch size, mode), a `Sweep` of them, a `Timeline`.

Pure (no torch): standard library only. pandas is imported lazily, by `to_pandas()` alone.

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
import warnings
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Iterator

from graphlab.timing.host_modes import (READINGS, HostMatched, HostModes, HostTarget, PairedSpeedup, assign_modes,
                                 detect_modes, host_matched, paired_speedup, readings_before_pairs)
from graphlab import present
from graphlab.recordings import made_on
from graphlab.stats import latency_drop_pct, median, speedup
from graphlab.timing.weight_update import WeightUpdate, as_weight_update
from graphlab.errors import ResultsError
from graphlab.loader import load
from graphlab.present import ShownAsTable
from graphlab.results_types import keep_known, recorded_result

MODES = ("eager", "graph")
#: /2 adds the paired-block fields (block_p50_us, ...); /3 names the graph pool's memory `pool_bytes`, as every
#: other part of graphlab does (/1 and /2 called it `graph_memory_bytes`); older files load unchanged
SWEEP_SCHEMA = "graphlab.sweep/3"
_TUPLES = ("run_p50_us", "block_p50_us", "block_start_ms", "block_gpu_mhz", "block_cpu_mhz", "block_host_us",
           "block_dispatch_us", "block_submit_us")
#: a latency row's field -> the name older recordings gave it (read when the field itself is absent)
_OLDER_NAMES = {"pool_bytes": "graph_memory_bytes"}
TIMELINE_SCHEMA = "graphlab.timeline/1"


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
        repetitions: timed calls per run (per block, for the paired method).
        runs: how many times the whole timed loop was repeated (how many blocks, for the paired method).
        run_p50_us: the median wall time of each run, in order (recordings made before the paired
            method; the paired method keeps `block_p50_us` instead).
        spread_pct: (max - min) of the run (or block) medians as % of their median: the noise floor.
        first_call_us: wall time of the very first call (cold: allocation, library set-up).
        kernel_count: kernels one call runs (profiler for eager, graph nodes for graph).
        gpu_busy_us: time at least one kernel or copy ran during one call (torch.profiler; overlaps once).
        launch_overhead_pct: share of p50 wall time the GPU ran no kernel (launches, Python, sync).
        capture_ms: graph only, time to capture (and instantiate) the graph.
        capture_state: graph only, "cold" (the first capture of its process: one-time set-up included) or
            "warm"; None in sweeps recorded before it was kept (the zoo recordings' sweeps ran after the
            zoo's own captures: warm).
        pool_bytes: graph only, device memory the graph's private pool added (growth of
            `torch.cuda.memory_reserved()` over the capture; older recordings: `graph_memory_bytes`).
        graph_exec_bytes: graph only, device memory the driver took to instantiate the graph
            (free-memory drop over `instantiate()`; page-granular, so 0 or whole pages).
        graph_peak_bytes: graph only, the most memory the captured work held at once (peak of
            `torch.cuda.memory_allocated()` during capture): what the pool must hold, before the
            caching allocator rounds it up to whole segments (`pool_bytes`).
        instantiate_ms: graph only, time to instantiate the executable graph (not in `capture_ms`).
        seq_len: the sequence length of the inputs, for sweeps over sequence length (None: the
            model's usual inputs).
        block_p50_us: the paired method (`graphlab.timing.host_modes`): the median of every timed block, in
            measurement order. Block i of the eager point and block i of the graph point form pair i;
            eager goes first in even pairs (`graphlab.timing.schedulers.round_order`).
        block_start_ms: when each block started, in ms since the sweep's timed rounds began (one clock
            for every point of the sweep).
        block_gpu_mhz: the GPU's SM clock read right after each block (empty when NVML is missing).
        block_cpu_mhz: the clock of the CPU core the process ran on, read right after each block
            (empty when the host does not report it; a virtual machine may report a constant).
        block_host_us: the host's speed right after each block: the time of a fixed pure-Python
            workload (`graphlab.timing.machine.host_speed_us`; lower is faster).
        warmup_calls: untimed calls made before timing (until the median settled, or the cap).
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
    capture_state: str | None = None
    pool_bytes: int | None = None
    graph_exec_bytes: int | None = None
    graph_peak_bytes: int | None = None
    instantiate_ms: float | None = None
    seq_len: int | None = None
    block_p50_us: tuple[float, ...] = ()
    block_start_ms: tuple[float, ...] = ()
    block_gpu_mhz: tuple[float, ...] = ()
    block_cpu_mhz: tuple[float, ...] = ()
    block_host_us: tuple[float, ...] = ()
    block_dispatch_us: tuple[float, ...] = ()
    block_submit_us: tuple[float, ...] = ()
    warmup_calls: int | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ResultsError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self.batch_size < 1:
            raise ResultsError(f"batch_size must be >= 1, got {self.batch_size}")
        if not self.p10_us <= self.p50_us <= self.p90_us:
            raise ResultsError(f"percentiles out of order: p10 {self.p10_us}, p50 {self.p50_us}, p90 {self.p90_us}")

    @property
    def host_modes(self) -> HostModes | None:
        """The speed modes of this point's blocks (`graphlab.timing.host_modes.detect_modes`), or None without blocks."""
        return detect_modes(self.block_p50_us) if self.block_p50_us else None

    @property
    def fastest_mode_p50_us(self) -> float | None:
        """The median block time in the fastest host mode (None without blocks): beside `p50_us`, the
        figure a run comes back to when the host spends its time in other modes."""
        modes = self.host_modes
        return modes.fastest_us if modes is not None else None

    @property
    def _has_split(self) -> bool:
        """One submit time per block (sweeps recorded before the split have none)."""
        return bool(self.block_submit_us) and len(self.block_submit_us) == len(self.block_p50_us)

    @property
    def submit_p50_us(self) -> float | None:
        """Median over blocks of the host part of a call: from the call until it returned, before the wait
        for the GPU (None for sweeps recorded without it). It moves with the host's speed, like eager."""
        return median(self.block_submit_us) if self._has_split else None

    @property
    def wait_p50_us(self) -> float | None:
        """Median over blocks of the wait part of a call (block median wall minus block median submit):
        from the call returning until `torch.cuda.synchronize()` returned. For a graph replay this is
        the GPU-bound part, which stays put when the host changes speed (docs/latency-method.md)."""
        if not self._has_split:
            return None
        return median([w - s for w, s in zip(self.block_p50_us, self.block_submit_us)])

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for key in _TUPLES:
            out[key] = list(getattr(self, key))
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LatencyPoint:
        try:
            kwargs = keep_known(cls, data, renamed={older: name for name, older in _OLDER_NAMES.items()})
            for key in _TUPLES:
                kwargs[key] = tuple(kwargs.get(key) or ())
            return cls(**kwargs)
        except TypeError as exc:
            raise ResultsError(f"not a latency row ({exc}); rows need batch_size, mode, p10_us, p50_us, p90_us") from None


@recorded_result(entry="sweep", recording="mlp", schema=3,
                 fields={"model": 1, "rows": 1, "conditions": 1, "weight_update": 1},
                 optional=("model", "conditions", "weight_update"), found_in=("*/sweep", "dense/*"))
@dataclass(frozen=True)
class Sweep(ShownAsTable):
    """Eager vs graph latency of one model over batch sizes.

    Attributes:
        model: the model's name (a zoo name such as "mlp", or the class name).
        points: one `LatencyPoint` per (batch size, mode), in measurement order.
        conditions: how it was measured: device, torch, dtype, warm-up, repetitions, runs, date, ...
        weight_update: what happened when weights changed after capture (see
            `graphlab.timing.weights.probe_weight_update`), or None when not probed: a `WeightUpdate`,
            the recorded dict with typed readings and a readable display.
    """

    model: str
    points: tuple[LatencyPoint, ...]
    conditions: dict[str, Any] = field(default_factory=dict, compare=False)
    weight_update: WeightUpdate | None = field(default=None, compare=False)

    def __post_init__(self) -> None:  # a probe passed as a plain dict (as recorded) reads as a WeightUpdate
        object.__setattr__(self, "weight_update", as_weight_update(self.weight_update))

    # -- access ---------------------------------------------------------------------------
    @property
    def batch_sizes(self) -> list[int]:
        """Batch sizes measured, ascending."""
        return sorted({p.batch_size for p in self.points})

    def by_mode(self, mode: str) -> list[LatencyPoint]:
        """Points of one mode, by ascending batch size."""
        return sorted((p for p in self.points if p.mode == mode), key=lambda p: p.batch_size)

    @property
    def seq_lens(self) -> list[int]:
        """Sequence lengths measured, ascending (empty unless this is a sweep over sequence length)."""
        return sorted({p.seq_len for p in self.points if p.seq_len is not None})

    def at_seq(self, seq_len: int) -> Sweep:
        """The points at one sequence length, as a sweep over batch size (same conditions)."""
        points = tuple(p for p in self.points if p.seq_len == seq_len)
        if not points:
            raise ResultsError(f"{self.model}: no points at sequence length {seq_len}; measured {self.seq_lens}")
        return Sweep(self.model, points, self.conditions, self.weight_update)

    def point(self, batch_size: int, mode: str, seq_len: int | None = None) -> LatencyPoint:
        """The point at (batch_size, mode[, seq_len]); ResultsError if it was not measured."""
        found = [p for p in self.points if p.batch_size == batch_size and p.mode == mode
                 and (seq_len is None or p.seq_len == seq_len)]
        if len(found) == 1:
            return found[0]
        if found:
            raise ResultsError(f"{self.model}: {len(found)} {mode} points at batch size {batch_size} (sequence "
                               f"lengths {sorted(p.seq_len or 0 for p in found)}): pass seq_len=..., or use at_seq()")
        where = f"batch size {batch_size}" + (f", sequence length {seq_len}" if seq_len is not None else "")
        raise ResultsError(f"{self.model}: no {mode} point at {where}; measured {self.batch_sizes}")

    def has(self, batch_size: int, seq_len: int | None = None) -> bool:
        """True when both eager and graph were measured at this batch size (and sequence length)."""
        modes = {p.mode for p in self.points
                 if p.batch_size == batch_size and (seq_len is None or p.seq_len == seq_len)}
        return modes >= set(MODES)

    def is_paired(self, batch_size: int, seq_len: int | None = None) -> bool:
        """True when this batch size was timed in paired blocks (the same number for eager and graph)."""
        if not self.has(batch_size, seq_len):
            return False
        eager, graph = self.point(batch_size, "eager", seq_len), self.point(batch_size, "graph", seq_len)
        return bool(eager.block_p50_us) and len(eager.block_p50_us) == len(graph.block_p50_us)

    def paired(self, batch_size: int, seq_len: int | None = None, modes_from: str = "eager") -> PairedSpeedup:
        """The speedup of every (eager, graph) block pair at one batch size, with its spread and the
        median within each mode (`graphlab.timing.host_modes.paired_speedup`).

        Args:
            modes_from: "eager": the modes the eager blocks at this batch size fell into (default);
                "host": the host-speed modes found over the whole sweep (`host_speed_modes`), the
                same states at every batch size, also where eager is GPU-bound and shows no modes.
        """
        if not self.is_paired(batch_size, seq_len):
            raise ResultsError(f"{self.model}: batch size {batch_size} has no paired blocks (recorded before the "
                               "paired method, or one mode is missing): use speedup(..., basis='medians')")
        if modes_from not in ("eager", "host"):
            raise ResultsError(f"modes_from must be 'eager' or 'host', got {modes_from!r}")
        eager, graph = self.point(batch_size, "eager", seq_len), self.point(batch_size, "graph", seq_len)
        modes = None
        if modes_from == "host":
            host = self.host_speed_modes()
            if host is None or len(eager.block_host_us) != len(eager.block_p50_us):
                raise ResultsError(f"{self.model}: no host-speed reading after every block at batch size "
                                   f"{batch_size}: use modes_from='eager'")
            modes = assign_modes(eager.block_host_us, host.levels_us, host.rule)
        return paired_speedup(eager.block_p50_us, graph.block_p50_us, modes)

    def host_speed_modes(self, reading: str = "host") -> HostModes | None:
        """The host's speed modes over the whole sweep: every block's reading, in time order (lower is
        faster). None without readings.

        Args:
            reading: "host" (`block_host_us`, a fixed pure-Python workload) or "dispatch"
                (`block_dispatch_us`, tiny torch CPU ops through the dispatcher; newer sweeps).
        """
        readings = self._timeline(self._reading_field(reading))
        return detect_modes([v for _, v in readings]) if readings else None

    def has_readings(self, reading: str = "host") -> bool:
        """True when every paired point carries this reading after every block."""
        field_name = self._reading_field(reading)
        paired = [p for p in self.points if p.block_p50_us]
        return bool(paired) and all(len(getattr(p, field_name)) == len(p.block_p50_us) for p in paired)

    def at_host_speed(self, batch_size: int, target: HostTarget, seq_len: int | None = None) -> HostMatched:
        """Speedup, eager and graph medians over the pairs that ran at `target`'s host speed (both blocks'
        readings in its band, and the reading just before the pair too: a pair that straddles a switch
        of host speed does not count): the figures to compare with another run at the same host speed."""
        if not self.is_paired(batch_size, seq_len):
            raise ResultsError(f"{self.model}: batch size {batch_size} has no paired blocks")
        field_name = self._reading_field(target.reading)
        eager, graph = self.point(batch_size, "eager", seq_len), self.point(batch_size, "graph", seq_len)
        if len(getattr(eager, field_name)) != len(eager.block_p50_us) or \
                len(getattr(graph, field_name)) != len(graph.block_p50_us):
            raise ResultsError(f"{self.model}: no {target.reading} reading after every block at batch size "
                               f"{batch_size}")
        before = readings_before_pairs(eager.block_start_ms, graph.block_start_ms, self._timeline(field_name))
        return host_matched(eager.block_p50_us, graph.block_p50_us, getattr(eager, field_name),
                            getattr(graph, field_name), target, before)

    def _timeline(self, field_name: str) -> list[tuple[float, float]]:
        """(block start ms, reading) of every block of every point that has the reading, in time order."""
        return sorted((t, v) for p in self.points if len(getattr(p, field_name)) == len(p.block_start_ms)
                      for t, v in zip(p.block_start_ms, getattr(p, field_name)))

    @staticmethod
    def _reading_field(reading: str) -> str:
        if reading not in READINGS:
            raise ResultsError(f"reading must be one of {', '.join(READINGS)}, got {reading!r}")
        return READINGS[reading]

    def host_modes(self, batch_size: int, mode: str = "eager", seq_len: int | None = None) -> HostModes | None:
        """The host speed modes seen in one point's blocks (None for a recording without blocks)."""
        return self.point(batch_size, mode, seq_len).host_modes

    def speedup(self, batch_size: int, gpu: bool = False, basis: str = "auto", seq_len: int | None = None) -> float:
        """How many times faster the graph is than eager at one batch size.

        Args:
            gpu: compare CUDA-event times (medians) instead of wall time.
            basis: "pairs": the median speedup over block pairs (each pair saw one machine state);
                "fastest_mode": the median over the pairs whose eager block ran in the fastest host
                mode; "medians": eager p50 / graph p50; "auto" (default): "pairs" where the sweep was
                timed in pairs, else "medians" (recordings made before the paired method).
        """
        if basis not in ("auto", "pairs", "fastest_mode", "medians"):
            raise ResultsError(f"basis must be 'auto', 'pairs', 'fastest_mode' or 'medians', got {basis!r}")
        eager, graph = self.point(batch_size, "eager", seq_len), self.point(batch_size, "graph", seq_len)
        if gpu:
            if eager.gpu_p50_us is None or graph.gpu_p50_us is None:
                raise ResultsError(f"{self.model}: no CUDA-event times at batch size {batch_size}")
            return speedup(eager.gpu_p50_us, graph.gpu_p50_us)
        if basis == "auto":
            basis = "pairs" if self.is_paired(batch_size, seq_len) else "medians"
        if basis == "medians":
            return speedup(eager.p50_us, graph.p50_us)
        pairs = self.paired(batch_size, seq_len)
        return pairs.p50 if basis == "pairs" else pairs.by_mode[0]  # eager modes: the fastest always has pairs

    def latency_drop_pct(self, batch_size: int) -> float:
        """How much lower end-to-end p50 latency is with the graph, in % of eager."""
        return latency_drop_pct(self.point(batch_size, "eager").p50_us, self.point(batch_size, "graph").p50_us)

    def __iter__(self) -> Iterator[LatencyPoint]:
        return iter(self.points)

    def __len__(self) -> int:
        return len(self.points)

    # -- views ----------------------------------------------------------------------------
    def rows(self) -> list[dict[str, Any]]:
        """One flat dict per point, with the model name and, for paired points, the host modes seen
        (`host_modes`: how many; `fastest_mode_p50_us`): ready for a table or a DataFrame."""
        out = []
        for p in self.points:
            modes = p.host_modes
            out.append({"model": self.model, **p.to_dict(), "host_modes": modes.count if modes else None,
                        "fastest_mode_p50_us": modes.fastest_us if modes else None})
        return out

    def to_pandas(self) -> Any:
        """A pandas DataFrame, one row per point (imports pandas on first use)."""
        try:
            import pandas as pd
        except ImportError:
            raise ResultsError("to_pandas() needs pandas: pip install pandas (or use sweep.rows())") from None
        return pd.DataFrame(self.rows())

    @property
    def made(self) -> str:
        """Where and when it was measured: "recorded on NVIDIA H200 on 2026-12-01" for a recording,
        "measured on ..." for a sweep run here."""
        return made_here_or_recorded(self.conditions)

    def _title(self, what: str) -> str:
        return f"{self.model}, {self.made}: {what}" if self.made else f"{self.model}: {what}"

    def table(self) -> present.Table:
        """The sweep for people, one row per batch size (and sequence length): eager and graph p50 (the median
        of every timed call, end to end) and the speedup; for a sweep timed in pairs, the speedup is the median
        over block pairs, with the p10 to p90 of the pairs and how many there were. The host's speed states and
        the speedup in the fastest one: `modes_report()`."""
        several = len(self.seq_lens) > 1
        paired = any(self.is_paired(p.batch_size, p.seq_len) for p in self.points)
        rows = []
        for p in sorted(self.by_mode("eager"), key=lambda p: (p.seq_len or 0, p.batch_size)):
            if not self.has(p.batch_size, p.seq_len):
                continue
            g = self.point(p.batch_size, "graph", p.seq_len)
            row: dict[str, Any] = {"batch": p.batch_size, "seq": p.seq_len, "eager": p.p50_us, "graph": g.p50_us}
            if self.is_paired(p.batch_size, p.seq_len):
                pairs = self.paired(p.batch_size, p.seq_len)
                row.update(speedup=pairs.p50, spread=f"{present.ratio(pairs.p10)[:-1]} to {present.ratio(pairs.p90)[:-1]}",
                           pairs=pairs.pairs)
            else:
                row.update(speedup=speedup(p.p50_us, g.p50_us), spread=None, pairs=None)
            rows.append(row)
        columns = [present.Column("batch", "batch size", kind="count")]
        if several:
            columns.append(present.Column("seq", "sequence length", kind="count"))
        columns += [present.Column("eager", "eager p50", kind="time"), present.Column("graph", "graph p50", kind="time"),
                    present.Column("speedup", "speedup", kind="ratio")]
        notes = ["eager p50, graph p50: the median of every timed call, end to end (synchronised: what one request "
                 "waits)."]
        if paired:
            columns += [present.Column("spread", "speedup, p10 to p90 of the pairs (x)", kind="text",
                                       missing="not timed in pairs (recorded before the paired method)"),
                        present.Column("pairs", "pairs", kind="count", missing="not timed in pairs")]
            notes.append("speedup: the median over block pairs (an eager block and a graph block timed one after the "
                         "other, so both saw the same machine); p10 to p90: the middle 80% of the pairs. The host's "
                         "speed states: `sweep.modes_report()`.")
        else:
            notes.append("speedup: eager p50 divided by graph p50.")
        return present.Table(rows, columns, title=self._title("one call, eager vs CUDA graph"), notes=notes)

    def modes_report(self) -> present.Table:
        """The host's speed states the timed blocks fell into, one row per batch size: how many states the eager
        blocks saw, the eager median in the fastest and the slowest, the share of blocks in the fastest, how often
        it switched, the graph's median, and the speedup counted in the fastest state only."""
        rows = []
        for p in sorted(self.by_mode("eager"), key=lambda p: (p.seq_len or 0, p.batch_size)):
            eager = p.host_modes
            paired = self.is_paired(p.batch_size, p.seq_len)
            graph = self.point(p.batch_size, "graph", p.seq_len) if self.has(p.batch_size, p.seq_len) else None
            row: dict[str, Any] = dict.fromkeys(("states", "fastest", "slowest", "share", "switches", "blocks",
                                                 "graph_states", "graph", "fastest_speedup"))
            row.update(batch=p.batch_size, seq=p.seq_len)
            if eager is not None:
                row.update(states=eager.count, fastest=eager.fastest_us,
                           slowest=eager.levels_us[-1] if eager.count > 1 else None,
                           share=100.0 * eager.shares[0], switches=eager.switches, blocks=eager.blocks)
            if graph is not None and graph.host_modes is not None:
                row.update(graph_states=graph.host_modes.count, graph=graph.host_modes.fastest_us
                           if graph.host_modes.count == 1 else median(graph.block_p50_us))
            if paired:
                row["fastest_speedup"] = self.paired(p.batch_size, p.seq_len).fastest_mode
            rows.append(row)
        columns = [present.Column("batch", "batch size", kind="count")]
        if len(self.seq_lens) > 1:
            columns.append(present.Column("seq", "sequence length", kind="count"))
        one = "one state only"
        columns += [present.Column("states", "eager states", kind="count", missing="no blocks (recorded before the "
                                                                                       "paired method)"),
                    present.Column("fastest", "eager, fastest state", kind="time", missing="no blocks"),
                    present.Column("slowest", "eager, slowest state", kind="time", missing=one),
                    present.Column("share", "blocks in the fastest state", kind="percent", missing="no blocks"),
                    present.Column("switches", "switches", kind="count", missing="no blocks"),
                    present.Column("blocks", "blocks", kind="count", missing="no blocks"),
                    present.Column("graph_states", "graph states", kind="count", missing="no blocks"),
                    present.Column("graph", "graph, median block", kind="time", missing="no blocks"),
                    present.Column("fastest_speedup", "speedup in the fastest state", kind="ratio",
                                   missing="not timed in pairs")]
        notes = ["A state is a level the block medians cluster at (the host's CPU changes speed for seconds at a "
                 "time); eager calls, mostly host work, follow it, graph replays barely do."]
        host = self.host_speed_modes()
        if host is not None:
            levels = present.listing(f"{present.duration(level)} in {present.percent(100.0 * share)} of the blocks"
                                     for level, share in zip(host.levels_us, host.shares))
            states = "1 state" if host.count == 1 else f"{host.count} states"
            notes.insert(0, f"The host's own speed (a fixed pure-Python workload timed after every block; lower is "
                            f"faster): {states}, {levels}; {host.switches} switch{'es' if host.switches != 1 else ''} "
                            f"in {host.blocks} blocks.")
        return present.Table(rows, columns, title=self._title("host speed modes seen in the timed blocks (the speed states of the "
                                                               "host's CPU)"),
                             notes=notes)

    # -- serialisation --------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SWEEP_SCHEMA,
            "model": self.model,
            "conditions": dict(self.conditions),
            "weight_update": None if self.weight_update is None else dict(self.weight_update),
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
    def from_recording(cls, data: dict[str, Any], recording: Any) -> Sweep:
        """A sweep read by `gl.load`: its conditions carry the recording's provenance (GPU, driver, torch, date)."""
        sweep = cls.from_dict(data)
        return replace(sweep, conditions={**recording.provenance, **sweep.conditions})

    @classmethod
    def load(cls, name: str, gpu: str | None = None, key: str = "sweep") -> Sweep:
        """Deprecated: `gl.load(Sweep, name)` reads a recorded sweep (`gl.load(Sweep, "dense", entry="gpt")` one of
        several in a recording)."""
        warnings.warn(f"Sweep.load({name!r}) is gl.load(gl.Sweep, {name!r}): call that", DeprecationWarning,
                      stacklevel=2)
        return load(cls, name, gpu=gpu, entry=key)


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


#: a host launch call's name -> what it launches, in words
_LAUNCH_WORDS = (("GraphLaunch", "graph launch"), ("LaunchKernel", "kernel launch"), ("Memcpy", "copy"),
                 ("Memset", "memset"), ("Launch", "kernel launch"))
_PLURAL = {"copy": "copies", "graph launch": "graph launches", "kernel launch": "kernel launches"}


def made_here_or_recorded(conditions: dict[str, Any]) -> str:
    """ "recorded on NVIDIA H200 on 2026-12-01" for a result loaded from a recording (its conditions carry the
    recording's command), "measured on <GPU> on <date>" for one measured here."""
    command = str(conditions.get("command") or "")
    verb = "recorded" if command.startswith("graphlab record") else "measured"
    return made_on(conditions, verb) if conditions.get("gpu") or conditions.get("date") else ""


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

    def launches_in_words(self) -> str:
        """What the host launched, in words: "44 kernel launches and 3 memsets", "1 copy and 1 graph launch"."""
        counts: dict[str, int] = {}
        for span in self.launches:
            what = next((w for key, w in _LAUNCH_WORDS if key in span.name), "other call")
            counts[what] = counts.get(what, 0) + 1
        if not counts:
            return "nothing"
        return present.listing(f"{n} {what if n == 1 else _PLURAL.get(what, what + 's')}" for what, n in counts.items())

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


@recorded_result(entry="timeline", recording="gpt", schema=1,
                 fields={"model": 1, "batch_size": 1, "conditions": 1, "eager": 1, "graph": 1},
                 optional=("model", "conditions"), found_in=("*/timeline",))
@dataclass(frozen=True)
class Timeline(ShownAsTable):
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

    @property
    def made(self) -> str:
        """Where and when it was measured ("recorded on NVIDIA H200 on 2026-12-01" for a recording)."""
        return made_here_or_recorded(self.conditions)

    def table(self) -> present.Table:
        """The two calls side by side, one row each: what the host launched, how many operations the GPU ran, and
        how long it was busy and idle until its last operation ended (time 0: the host called the model)."""
        rows = []
        for mode, what in (("eager", "eager (`model(x)`)"), ("graph", "CUDA graph (copy in + replay)")):
            trace = self.trace(mode)
            rows.append({"call": what, "launched": f"{len(trace.launches)}: {trace.launches_in_words()}",
                         "operations": len(trace.kernels), "busy": trace.busy_us, "idle": trace.idle_us,
                         "end": trace.end_us,
                         "share": 100.0 * trace.idle_us / trace.end_us if trace.end_us else None})
        columns = [present.Column("call", "call", kind="text"),
                   present.Column("launched", "host launch calls", kind="text"),
                   present.Column("operations", "GPU operations", kind="count"),
                   present.Column("busy", "GPU busy", kind="time"), present.Column("idle", "GPU idle", kind="time"),
                   present.Column("end", "last operation ended at", kind="time"),
                   present.Column("share", "idle share", kind="percent", missing="nothing ran")]
        where = f", {self.made}" if self.made else ""
        notes = ["GPU operations: kernels, copies and memsets. GPU idle: the gaps between them, from the host's call "
                 "to the end of the last one. The profiler slows every launch down, so eager gaps are wider than in "
                 "an unprofiled call."]
        return present.Table(rows, columns, title=f"{self.model}, batch {self.batch_size}{where}: one call, kernel by "
                                                  "kernel", notes=notes)

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
    def from_recording(cls, data: dict[str, Any], recording: Any) -> Timeline:
        """A timeline read by `gl.load`: its conditions carry the recording's provenance."""
        timeline = cls.from_dict(data)
        return replace(timeline, conditions={**recording.provenance, **timeline.conditions})

    @classmethod
    def load(cls, name: str, gpu: str | None = None, key: str = "timeline") -> Timeline:
        """Deprecated: `gl.load(Timeline, name)` reads a recorded timeline."""
        warnings.warn(f"Timeline.load({name!r}) is gl.load(gl.Timeline, {name!r}): call that", DeprecationWarning,
                      stacklevel=2)
        return load(cls, name, gpu=gpu, entry=key)


__all__ = ["MODES", "HostModes", "LatencyPoint", "PairedSpeedup", "ResultsError", "Span", "Sweep", "Timeline", "Trace"]
