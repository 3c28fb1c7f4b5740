"""The 8B-class decode recording as plain data: its parts, merged, each way per bucket against the roofline.

    >>> report = gl.load(ScaleReport)                        # data/recordings/<gpu>/decode_scale (GPU-made)
    >>> report.table("steps"), report.table("roofline"), report.goals()

`graphlab record --models decode_scale --ways W --buckets B ...` does not fit one 10-minute command, so each call
writes a **part** (`ScalePart`: what it ran, the roofline it measured, its provenance) and then merges every part
so far into the recording (`merge_parts`): one row per way and bucket (a later part replaces an earlier part's row
for the same way and bucket, and says so), the machine's bandwidth and matmul rate as the median over the parts
(each part's own kept), the commands of every part as the provenance.

Per way and bucket (`ScaleRow`): per-token p50 and p90 (host wall time of one step, the one timer), tokens/s,
capture and instantiate time, warm-up (and compile) apart, pool growth, KV bytes, and the tokens against HF eager
fed the same tokens (the first step whose greedy token differs, the largest logit difference).

Pure: no torch.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from graphlab.decode.results import WAYS
from graphlab.decode.roofline import Bandwidth, DecoderShape, StepFloor, bound_of, step_floor
from graphlab.errors import BadInputError
from graphlab.present import Column, Table, listing
from graphlab.recordings import made_on
from graphlab.loader import record_hint
from graphlab.results_types import keep_known, recorded_result
from graphlab.stats import median

#: a part's fields that must agree for parts to merge (what the step is)
SAME_IN_EVERY_PART = ("shape", "conditions")
#: the goals of issue 40 (docs/decode.md): graphlab+compile at batch 1 within this many times the floor; all
#: buckets' capture + instantiate within this many seconds; pools and KV within this many times the largest's
GOAL_FLOOR_RATIO, GOAL_CAPTURE_S, GOAL_MEMORY_RATIO = 1.25, 10.0, 1.1


@dataclass
class ScaleRow:
    """One way at one bucket (see the module doc). None: not measured (`skipped` says why, where it was not)."""

    way: str
    batch: int
    p50_us: float | None = None
    p90_us: float | None = None
    calls: int = 0
    warmup_ms: float | None = None        #: warm-up before capture (a compiled step: the compile happens here)
    capture_ms: float | None = None
    instantiate_ms: float | None = None
    first_calls_ms: float | None = None   #: reduce-overhead: its first three calls (compile, warm-up, record)
    pool_bytes: int | None = None
    kv_cache_bytes: int | None = None
    nodes: int | None = None
    tokens_equal: bool | None = None
    first_diverging_step: int | None = None
    max_logit_diff: float | None = None
    skipped: str | None = None

    @property
    def tokens_per_s(self) -> float | None:
        return self.batch * 1e6 / self.p50_us if self.p50_us else None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ScaleRow:
        if "way" not in d or "batch" not in d:
            raise BadInputError(f"a scale row needs way and batch, got {sorted(d)}")
        return cls(**keep_known(cls, d))


def _check_part(part: Mapping[str, Any], i: int) -> None:
    missing = [k for k in ("shape", "conditions", "machine", "rows", "provenance") if k not in part]
    if missing:
        raise BadInputError(f"part {i} lacks {', '.join(missing)}: not a decode_scale part")
    unknown = sorted({r.get("way") for r in part["rows"]} - set(WAYS))
    if unknown:
        raise BadInputError(f"part {i} has unknown way(s) {unknown}; the ways are {', '.join(WAYS)}")


def merge_parts(parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Merge the parts of a decode_scale run, in the order given (see the module doc), into one report's data.

    Raises:
        BadInputError: no parts; a part that is not one; parts of another shape, conditions or GPU (each named).
    """
    if not parts:
        raise BadInputError(f"no decode_scale parts to merge: {record_hint('decode_scale')} first")
    for i, part in enumerate(parts):
        _check_part(part, i)
    first = parts[0]
    for i, part in enumerate(parts[1:], 1):
        for key in SAME_IN_EVERY_PART:
            if part[key] != first[key]:
                diff = sorted(k for k in set(part[key]) | set(first[key]) if part[key].get(k) != first[key].get(k))
                raise BadInputError(f"part {i} has other {key} than part 0 ({', '.join(diff)}): parts of one "
                                    "recording run the same step")
        if part["provenance"].get("gpu") != first["provenance"].get("gpu"):
            raise BadInputError(f"part {i} ran on {part['provenance'].get('gpu')}, part 0 on "
                                f"{first['provenance'].get('gpu')}: one recording is one GPU's")
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    notes: list[str] = []
    for i, part in enumerate(parts):
        for row in part["rows"]:
            key = (row["way"], int(row["batch"]))
            if key in rows:
                notes.append(f"{key[0]} at batch {key[1]}: part {i} replaced an earlier part's row.")
            rows[key] = dict(row)
    bandwidths = [Bandwidth.from_dict(p["machine"]["bandwidth"]) for p in parts]
    machine = {"bandwidth": Bandwidth(median(b.read_bytes_per_s for b in bandwidths),
                                      median(b.copy_bytes_per_s for b in bandwidths),
                                      bandwidths[0].buffer_bytes, bandwidths[0].trials).to_dict(),
               "mm_flops_per_s": median(float(p["machine"]["mm_flops_per_s"]) for p in parts),
               "mm_n": first["machine"].get("mm_n"),
               "per_part": [dict(p["machine"]) for p in parts]}
    memory: dict[str, dict[str, Any]] = {}
    for part in parts:
        memory.update({w: dict(v) for w, v in part.get("memory", {}).items()})
    ordered = sorted(rows.values(), key=lambda r: (int(r["batch"]), WAYS.index(r["way"])))
    return {"shape": dict(first["shape"]), "conditions": dict(first["conditions"]), "machine": machine,
            "rows": ordered, "memory": memory, "notes": notes,
            "parts": [{"ways": list(p.get("ways", [])), "buckets": list(p.get("buckets", [])),
                       "command": p["provenance"].get("command"), "date": p["provenance"].get("date"),
                       "git_commit": p["provenance"].get("git_commit")} for p in parts]}


def merged_provenance(parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The recording's provenance: the last part's, its command the commands of every part in order."""
    if not parts:
        raise BadInputError("no decode_scale parts: nothing to take provenance from")
    last = dict(parts[-1]["provenance"])
    last["command"] = " ; ".join(str(p["provenance"].get("command", "")) for p in parts)
    return last


@recorded_result(entry="scale", recording="decode_scale", schema=1,
                 fields={"shape": 1, "conditions": 1, "machine": 1, "rows": 1, "memory": 1, "notes": 1, "parts": 1},
                 optional=("notes",))
@dataclass
class ScaleReport:
    """An 8B-class decoder's decode step, four ways per bucket, against the roofline measured in the same run."""

    shape: dict[str, Any]
    conditions: dict[str, Any]
    machine: dict[str, Any]
    rows: list[ScaleRow]
    memory: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    parts: list[dict[str, Any]] = field(default_factory=list)
    source: str = "live"

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], source: str = "recorded") -> ScaleReport:
        return cls(dict(d["shape"]), dict(d["conditions"]), dict(d["machine"]),
                   [ScaleRow.from_dict(r) for r in d["rows"]], {w: dict(v) for w, v in d.get("memory", {}).items()},
                   list(d.get("notes", [])), list(d.get("parts", [])), source)

    @classmethod
    def from_recording(cls, data: Mapping[str, Any], recording: Any) -> ScaleReport:
        """Read by `gl.load(ScaleReport)`: `source` says where and when it was recorded."""
        return cls.from_dict(data, made_on(recording.provenance))

    def to_dict(self) -> dict[str, Any]:
        return {"shape": self.shape, "conditions": self.conditions, "machine": self.machine,
                "rows": [r.to_dict() for r in self.rows], "memory": self.memory, "notes": self.notes,
                "parts": self.parts}

    # -- the roofline ------------------------------------------------------------------------------------------
    @property
    def decoder(self) -> DecoderShape:
        return DecoderShape(**self.shape)

    @property
    def bandwidth(self) -> tuple[float, str]:
        return Bandwidth.from_dict(self.machine["bandwidth"]).best

    @property
    def batch_sizes(self) -> list[int]:
        return sorted({r.batch for r in self.rows})

    def floor(self, batch: int) -> StepFloor:
        """The roofline of a step at `batch`, at the position the steps were timed at (the prompt's length)."""
        return step_floor(self.decoder, batch, int(self.conditions["prompt_len"]),
                          read_bytes_per_s=self.bandwidth[0], mm_flops_per_s=float(self.machine["mm_flops_per_s"]),
                          max_cache_len=int(self.conditions["max_cache_len"]))

    def row(self, way: str, batch: int) -> ScaleRow | None:
        return next((r for r in self.rows if r.way == way and r.batch == batch), None)

    def bound(self, row: ScaleRow) -> str | None:
        """Where the way's step stands at its batch (`roofline.bound_of`); the graph of the same step:
        graphlab's for HF eager, graphlab+compile's for reduce-overhead."""
        if row.p50_us is None:
            return None
        graph_of = {"eager": "graphlab", "reduce-overhead": "graphlab+compile"}.get(row.way)
        graph = self.row(graph_of, row.batch) if graph_of else None
        return bound_of(row.p50_us, self.floor(row.batch), graph.p50_us if graph is not None else None)

    def ratio(self, way: str, batch: int) -> float | None:
        row = self.row(way, batch)
        return None if row is None or row.p50_us is None else self.floor(batch).ratio(row.p50_us)

    # -- tables ------------------------------------------------------------------------------------------------
    def _title(self, what: str) -> str:
        return f"Llama-3-8B-shaped decoder: {what} ({self.source})"

    def table(self, view: str = "steps") -> Table:
        """"steps" (each way per bucket against the floor), "roofline" (the floors), "start-up", "memory" or
        "tokens"."""
        views = {"steps": self._steps, "roofline": self._roofline, "start-up": self._startup,
                 "memory": self._memory, "tokens": self._tokens}
        if view not in views:
            raise BadInputError(f"a scale report has the views {listing(repr(v) for v in views)}, not {view!r}")
        return views[view]()

    def _skipped_notes(self) -> list[str]:
        skipped = [f"{r.way} at batch {r.batch}: {r.skipped}" for r in self.rows if r.skipped]
        return ([f"Not measured: {listing(skipped)}."] if skipped else []) + list(self.notes)

    def _steps(self) -> Table:
        rows = []
        for r in self.rows:
            if r.p50_us is None:
                continue
            rows.append({"batch": r.batch, "way": r.way, "p50_us": r.p50_us, "p90_us": r.p90_us,
                         "tokens_per_s": r.tokens_per_s, "floor_x": self.ratio(r.way, r.batch),
                         "bound": (self.bound(r) or "").replace("-", " ")})
        columns = [Column("batch", "batch size", kind="count"), Column("way", "way", kind="text"),
                   Column("p50_us", "p50 per token", kind="time"), Column("p90_us", "p90 per token", kind="time"),
                   Column("tokens_per_s", "throughput", kind="number", unit="tokens/s"),
                   Column("floor_x", "time over the floor", kind="ratio"), Column("bound", "bound by", kind="text")]
        value, which = self.bandwidth
        return Table(rows, columns, title=self._title("one decode step per call, against the roofline"),
                     notes=[f"Floor: the larger of the memory floor (bytes a step must read at {value / 1e12:.3g} TB/s, "
                            f"the {which}) and the compute floor (its FLOPs at the bf16 matmul rate), at cache "
                            f"position {self.conditions.get('prompt_len')}: `report.table(\"roofline\")`.",
                            "Bound by: launch-bound when a way takes more than twice a CUDA graph of the same step; "
                            "otherwise the floor's own bound.", *self._skipped_notes()])

    def _roofline(self) -> Table:
        rows = []
        for b in self.batch_sizes:
            f = self.floor(b)
            rows.append({"batch": b, "floor_bytes": f.floor_bytes, "kernel_bytes": f.kernel_bytes,
                         "memory_us": f.memory_us, "kernel_us": f.kernel_bytes_us, "compute_us": f.compute_us,
                         "bound": f"{f.bound} bound"})
        columns = [Column("batch", "batch size", kind="count"), Column("floor_bytes", "least bytes read", kind="bytes"),
                   Column("kernel_bytes", "bytes HF's kernels read", kind="bytes"),
                   Column("memory_us", "memory floor", kind="time"),
                   Column("kernel_us", "HF's reads at that bandwidth", kind="time"),
                   Column("compute_us", "compute floor", kind="time"), Column("bound", "floor set by", kind="text")]
        value, which = self.bandwidth
        flops = float(self.machine["mm_flops_per_s"])
        return Table(rows, columns, title=self._title("the roofline of one decode step"),
                     notes=[f"Bandwidth {value / 1e12:.3g} TB/s ({which}, the higher of a read-only reduction and a "
                            f"device-to-device copy over a {self.machine['bandwidth'].get('buffer_bytes', 0) / 2**30:.3g}"
                            f" GiB buffer); matmul rate {flops / 1e12:.3g} TFLOP/s (bf16 "
                            f"{self.machine.get('mm_n')}^3 mm).",
                            "HF's static-cache attention reads every position of the cache (masked), not only those "
                            "written so far: the difference is part of every way's gap to the floor."])

    def _startup(self) -> Table:
        rows = [{"batch": r.batch, "way": r.way, "warmup_ms": r.warmup_ms, "capture_ms": r.capture_ms,
                 "instantiate_ms": r.instantiate_ms, "first_calls_ms": r.first_calls_ms}
                for r in self.rows if r.capture_ms is not None or r.first_calls_ms is not None]
        columns = [Column("batch", "batch size", kind="count"), Column("way", "way", kind="text"),
                   Column("warmup_ms", "warm-up (and compile)", kind="time", factor=1e3, missing="none"),
                   Column("capture_ms", "capture", kind="time", factor=1e3, missing="not captured by graphlab"),
                   Column("instantiate_ms", "instantiate", kind="time", factor=1e3, missing="not captured by graphlab"),
                   Column("first_calls_ms", "first three calls", kind="time", factor=1e3, missing="not timed")]
        totals = self.capture_totals_s()
        lines = [f"{w}: capture + instantiate over {listing(str(b) for b in bs)}: {s:.3g} s (warm-up and compile "
                 "apart)" for w, (s, bs) in totals.items()]
        return Table(rows, columns, title=self._title("start-up per bucket"), notes=lines + self._skipped_notes())

    def _memory(self) -> Table:
        rows = [{"way": w, **{k: v.get(k) for k in ("kv_bytes", "largest_kv_bytes", "pool_bytes",
                                                     "largest_pool_bytes")}} for w, v in self.memory.items()]
        columns = [Column("way", "way", kind="text"),
                   Column("kv_bytes", "KV memory, all buckets", kind="bytes", missing="not kept"),
                   Column("largest_kv_bytes", "the largest bucket's KV", kind="bytes", missing="not kept"),
                   Column("pool_bytes", "graph pools, all buckets", kind="bytes", missing="no graphs of its own"),
                   Column("largest_pool_bytes", "the largest bucket's pool", kind="bytes",
                          missing="no graphs of its own")]
        return Table(rows, columns, index="way", title=self._title("memory: one KV cache and one pool for all buckets"),
                     notes=["Every way works on one KV cache, the largest bucket's: a bucket's cache is a view of its "
                            "first rows."])

    def _tokens(self) -> Table:
        rows = [{"batch": r.batch, "way": r.way, "equal": r.tokens_equal, "step": r.first_diverging_step,
                 "diff": r.max_logit_diff} for r in self.rows if r.tokens_equal is not None]
        columns = [Column("batch", "batch size", kind="count"), Column("way", "way", kind="text"),
                   Column("equal", "same tokens as HF eager", kind="bool"),
                   Column("step", "first step that differs", kind="count", missing="none"),
                   Column("diff", "largest logit difference", kind="error")]
        new = self.conditions.get("new_tokens")
        return Table(rows, columns, title=self._title("tokens against Hugging Face eager"),
                     notes=[f"Each way fed HF eager's own tokens for {new} steps after the prompt, step by step; the "
                            "first step whose greedy token differs, and the largest difference of the logits "
                            "before it."])

    # -- goals ---------------------------------------------------------------------------------------------------
    def capture_totals_s(self) -> dict[str, tuple[float, list[int]]]:
        """Per graph way: (the sum of capture + instantiate seconds over its buckets, those buckets)."""
        out: dict[str, tuple[float, list[int]]] = {}
        for r in self.rows:
            if r.capture_ms is None:
                continue
            total, buckets = out.get(r.way, (0.0, []))
            out[r.way] = (total + (r.capture_ms + (r.instantiate_ms or 0.0)) / 1e3, buckets + [r.batch])
        return out

    def goals(self) -> list[dict[str, Any]]:
        """The issue's goals, each {"goal", "measured", "met"} (met None where not measured)."""
        out = []
        ratio = self.ratio("graphlab+compile", 1)
        out.append({"goal": f"graphlab+compile at batch 1 within {GOAL_FLOOR_RATIO}x the memory floor",
                    "measured": None if ratio is None else f"{ratio:.3g}x",
                    "met": None if ratio is None else ratio <= GOAL_FLOOR_RATIO})
        for way, (seconds, buckets) in self.capture_totals_s().items():
            out.append({"goal": f"{way}: capture + instantiate of every bucket within {GOAL_CAPTURE_S:g} s",
                        "measured": f"{seconds:.3g} s over {len(buckets)} buckets", "met": seconds <= GOAL_CAPTURE_S})
        for way, m in self.memory.items():
            for what in ("kv", "pool"):
                total, largest = m.get(f"{what}_bytes"), m.get(f"largest_{what}_bytes")
                if total is None or not largest:
                    continue
                out.append({"goal": f"{way}: {'KV memory' if what == 'kv' else 'graph pools'} within "
                                    f"{GOAL_MEMORY_RATIO}x the largest bucket's",
                            "measured": f"{total / largest:.3g}x", "met": total <= GOAL_MEMORY_RATIO * largest})
        return out


def parts_in_order(parts: Iterable[tuple[str, Mapping[str, Any]]]) -> list[Mapping[str, Any]]:
    """Parts (name, data) in the order they were made (their provenance's date, then their name)."""
    return [p for _, p in sorted(parts, key=lambda np: (str(np[1].get("provenance", {}).get("date", "")), np[0]))]


__all__ = ["GOAL_CAPTURE_S", "GOAL_FLOOR_RATIO", "GOAL_MEMORY_RATIO", "SAME_IN_EVERY_PART", "ScaleReport",
           "ScaleRow", "merge_parts", "merged_provenance", "parts_in_order"]
