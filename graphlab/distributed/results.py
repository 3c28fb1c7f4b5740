"""Multi-GPU recordings, read anywhere: which machines were recorded, and what they measured.

`graphlab record --models multigpu` writes one recording per machine into a folder named for it:
`h200` for one GPU (world size 1), `h200x2`, `h200x4` for several. This module reads them (pure
Python: no torch, no GPU), so notebook 07 shows them on any laptop:

    >>> overview = gl.multigpu_recordings()   # every machine recorded, and plainly what is missing
    >>> rec = overview.largest()               # the recording with the most GPUs
    >>> gl.load(gl.MultiGpuRecording, gpu="h200x2")   # one machine's recording
    >>> rec.graph("tp", rank=0, batch_size=1)  # one rank's graph (rank and device in .metadata)
    >>> rec.graph_summary("tp", rank=0)        # that graph in words: rank, device, kernels by family, NCCL
    >>> rec.tensor_parallel_table()            # eager vs graph latency of the TP layer by batch size
    >>> rec.launch_table()                     # host time of one replay, per rank
    >>> rec.replica_rows()                     # requests/s: one GPU vs replicas, by batch size (raw rows)

Every view a person reads is a `present.Table` (or words); the `*_rows` methods keep the raw numbers for code.

Pure (in `graphlab.distributed.PURE`): the standard library and ground-floor modules only; pandas only
inside `to_pandas`.
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from graphlab import present
from graphlab.errors import RecordingError
from graphlab.loader import load, record_hint
from graphlab.mode import recorded_gpu
from graphlab.recordings import Recording, gpu_slug, list_recordings, recordings_root
from graphlab.present import ShownAsTable
from graphlab.results_types import recorded_result

#: the recording's name, in every machine's folder (`graphlab.studies.multigpu` writes it)
NAME = "multigpu"
MULTI_GPU_SCRIPT = "bash scripts/gpu_multigpu.sh"
_MACHINE = re.compile(r"^(?P<gpu>.+?)(?:x(?P<count>\d+))?$")


def machine_slug(gpu_name: str, gpu_count: int) -> str:
    """The recordings folder for a machine: ("NVIDIA H200", 1) -> "h200", ("NVIDIA H200", 2) -> "h200x2"."""
    base = gpu_slug(gpu_name)
    return base if gpu_count <= 1 else f"{base}x{gpu_count}"


def split_machine_slug(slug: str) -> tuple[str, int]:
    """"h200x4" -> ("h200", 4); "h200" -> ("h200", 1)."""
    match = _MACHINE.match(slug)
    if match is None:
        return slug, 1
    return match.group("gpu"), int(match.group("count") or 1)


@recorded_result(entries=("distributed", "tensor_parallel", "replicas", "allreduce"), recording=NAME)
@dataclass(frozen=True)
class MultiGpuRecording(ShownAsTable):
    """One machine's multi-GPU recording (see the module docstring): `gl.load(MultiGpuRecording, gpu="h200x2")`;
    `multigpu_recordings()` lists every machine's."""

    recording: Recording
    #: its results as read by `gl.load` (entry -> data); an entry not here is read from the recording when asked
    parts: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_recording(cls, parts: Mapping[str, Any], recording: Recording) -> MultiGpuRecording:
        return cls(recording, dict(parts))

    def _part(self, key: str) -> Any:
        return self.parts[key] if key in self.parts else self.recording.results(key)

    @property
    def machine(self) -> str:
        return self.recording.path.parent.name

    @property
    def world_size(self) -> int:
        return int(self.distributed().get("world_size", 1))

    @property
    def gpu(self) -> str:
        return self.recording.gpu

    def distributed(self) -> dict[str, Any]:
        """World size, NCCL version, topology (`nvidia-smi topo -m`), launch command, NCCL settings."""
        return dict(self._part("distributed"))

    def where(self) -> str:
        """"recorded on NVIDIA H200 on 2026-12-01": where and when, in a few words."""
        return recorded_where(self.recording.provenance)

    def banner(self) -> str:
        """Where, when and how it was recorded, naming the launch command once."""
        p, d = self.recording.provenance, self.distributed()
        command = d.get("launch_command") or p.get("command")
        return (f"{self.where()} (driver {p.get('driver')}, torch {p.get('torch')}, CUDA {p.get('cuda')}), "
                f"world size {d.get('world_size')}, NCCL {d.get('nccl_version')}, by `{command}`")

    def wiring(self) -> str:
        """How the machine's GPUs are wired (`nvidia-smi topo -m`, the tool's own text and legend) and the NCCL
        settings of the run, introduced in words."""
        d = self.distributed()
        topology = (d.get("topology") or "").rstrip()
        settings = d.get("nccl_settings") or {}
        said = present.listing(f"`{k}={v}`" for k, v in settings.items()) if settings else "none set"
        lines = [f"`nvidia-smi topo -m` on {self.machine}, {self.where()}:", "",
                 topology or "(nvidia-smi printed nothing on that machine)", "",
                 f"NCCL settings of the run: {said}"]
        return "\n".join(lines)

    # -- graphs ------------------------------------------------------------------------------------------
    def graph_key(self, kind: str = "tp", rank: int = 0, batch_size: int | None = None) -> str:
        """The key of one rank's graph: kind "tp" (the GPT layer, needs batch_size) or "allreduce"."""
        key = f"tp_b{batch_size}_rank{rank}" if kind == "tp" else f"{kind}_rank{rank}"
        if key not in self.recording.graph_names:
            raise RecordingError(f"{self.recording.path}: no graph {key!r}; it has "
                                 f"{', '.join(self.recording.graph_names) or 'none'}")
        return key

    def graph(self, kind: str = "tp", rank: int = 0, batch_size: int | None = None) -> Any:
        """One rank's graph as a `CudaGraph` whose `metadata` says its rank, world size and device."""
        if kind == "tp" and batch_size is None:
            batch_size = min(self.graph_batch_sizes())
        return self.recording.graph(self.graph_key(kind, rank, batch_size))

    def graph_batch_sizes(self) -> list[int]:
        """Batch sizes whose tensor-parallel graphs were kept."""
        return sorted({int(info["batch_size"]) for info in self.recording.meta["graphs"].values()
                       if info.get("what") == "tp" and "batch_size" in info})

    def ranks(self) -> list[int]:
        return sorted({int(info["rank"]) for info in self.recording.meta["graphs"].values() if "rank" in info})

    def nccl_kernels(self) -> dict[str, int]:
        """NCCL kernels in each recorded graph, by graph key (0 means the all-reduce left no kernel)."""
        return {key: int(info.get("nccl_kernels", 0)) for key, info in self.recording.meta["graphs"].items()}

    def graph_summary(self, kind: str = "tp", rank: int = 0, batch_size: int | None = None) -> present.Table:
        """One rank's graph in words: which graph, rank of world size, device, kernels by family, NCCL kernels."""
        if kind == "tp" and batch_size is None:
            batch_size = min(self.graph_batch_sizes())
        graph = self.graph(kind, rank, batch_size)
        origin = dict(graph.metadata or {})
        world = origin.get("world_size", self.world_size)
        families = graph.count_by_family()
        nccl = families.get("NCCL", 0)
        what = (f"the tensor-parallel GPT layer at batch {batch_size}" if kind == "tp" else
                "the bare all-reduce (y = x * 1, all-reduce, y + 1)" if kind == "allreduce" else kind)
        by_family = present.listing(f"{n} {family}" for family, n in
                                    sorted(families.items(), key=lambda item: (-item[1], item[0])))
        nccl_words = (f"{nccl}: the all-reduces, inside the graph" if nccl else
                      "none: a one-rank all-reduce launches no kernel" if world == 1 else
                      "none: the all-reduce left no kernel in this graph")
        rows = [("graph", what), ("rank", f"{origin.get('rank', rank)} of {world}"),
                ("device", f"{origin.get('device', '?')} ({self.gpu})"),
                ("kernel nodes", present.count(len(graph.kernels()))), ("kernels by family", by_family),
                ("NCCL kernels", nccl_words)]
        return present.facts(rows, title=f"Rank {rank}'s graph, {self.where()}")

    # -- measurements -------------------------------------------------------------------------------------
    def tensor_parallel(self) -> dict[str, Any]:
        return dict(self._part("tensor_parallel"))

    def allreduce(self) -> list[dict[str, Any]]:
        """The bare all-reduce's check, one dict per rank: its replays, what they should be, and whether they were."""
        return [dict(r) for r in self._part("allreduce")]

    def tensor_parallel_rows(self) -> list[dict[str, Any]]:
        """One row per batch size: eager and graph p50 (the slowest rank's), speedup, NCCL kernels, error."""
        return [{"world_size": p["world_size"], "batch_size": p["batch_size"], "eager_p50_us": p["eager_p50_us"],
                 "graph_p50_us": p["graph_p50_us"], "speedup": p["speedup"], "nccl_kernels": p["nccl_kernels"],
                 "max_abs_err": p["max_abs_err"]} for p in self.tensor_parallel()["points"]]

    def tensor_parallel_table(self) -> present.Table:
        """Eager vs graph latency of the tensor-parallel layer by batch size, in words with units."""
        columns = [present.Column("batch_size", "batch size", kind="count"),
                   present.Column("eager_p50_us", "eager p50", kind="time"),
                   present.Column("graph_p50_us", "graph p50", kind="time"),
                   present.Column("speedup", "speedup", kind="ratio"),
                   present.Column("nccl_kernels", "NCCL kernels in the graph", kind="count"),
                   present.Column("max_abs_err", "largest difference from the dense layer", kind="error")]
        rows = sorted(self.tensor_parallel_rows(), key=lambda r: r["batch_size"])
        return present.Table(rows, columns, index="batch_size",
                             title=f"One tensor-parallel layer call on {_ranks(self.world_size)}, {self.where()}",
                             notes=["p50: the median of the slowest rank (an all-reduce ends when the last rank "
                                    "arrives); every call waits for the GPU."])

    def launch_rows(self) -> list[dict[str, Any]]:
        """Host time of one replay per rank and device, by batch size (the TP layer's graph)."""
        return [{"batch_size": p["batch_size"], "rank": r["rank"], "device": r["device"],
                 "launch_p50_us": r["launch_p50_us"]} for p in self.tensor_parallel()["points"] for r in p["per_rank"]]

    def launch_table(self) -> present.Table:
        """Host time of one `replay()` on each rank, by batch size, in words with units."""
        columns = [present.Column("batch_size", "batch size", kind="count"),
                   present.Column("rank", "rank", kind="count"),
                   present.Column("device", "device", kind="text"),
                   present.Column("launch_p50_us", "host time of one replay p50", kind="time")]
        rows = sorted(self.launch_rows(), key=lambda r: (r["batch_size"], r["rank"]))
        return present.Table(rows, columns, title=f"What the CPU pays per replay, {self.where()}",
                             notes=["the call to replay() alone, not waiting for the GPU"])

    def replicas(self) -> dict[str, Any]:
        return dict(self._part("replicas"))

    def replica_rows(self) -> list[dict[str, Any]]:
        """One row per batch size: requests/s on one GPU, with replicas, inline dispatch, and the ratios."""
        return replica_rows(self.replicas())

    def world_size_note(self) -> str:
        """What this recording can and cannot show, in one paragraph (measured facts only)."""
        kernels = self.nccl_kernels()
        with_kernel = sorted(k for k, n in kernels.items() if n > 0)
        err = present.error(max((r["max_abs_err"] for r in self.tensor_parallel_rows()), default=None))
        if self.world_size > 1:
            most = max(kernels.values(), default=0)
            return (f"{self.world_size} ranks on {self.machine}: each rank's graph holds up to {most} NCCL "
                    f"kernel{'s' if most != 1 else ''}; the replays agree with the dense layer "
                    f"(largest difference {err}).")
        seen = (f"the all-reduce left an NCCL kernel in the graph ({', '.join(with_kernel)})" if with_kernel else
                "NCCL put no kernel in the graph: a one-rank all-reduce launches nothing")
        return (f"World size 1 on {self.machine}: {seen}. It shows the capture path working (eager communicator, "
                "warm-up on the capture stream, the collective captured without error) and the tensor-parallel "
                f"layer equal to the dense one (largest difference {err}); it cannot show communication between "
                "GPUs, its cost, or ranks staying in step.")

    def table(self) -> present.Table:
        """What this recording is, as facts, with what it can and cannot show as a note."""
        d, p = self.distributed(), self.recording.provenance
        rows = [("machine", f"{self.machine}: {_ranks(self.world_size)}, {self.gpu}"),
                ("recorded on", str(p.get("date", "?"))[:10]),
                ("software", f"driver {p.get('driver')}, torch {p.get('torch')}, CUDA {p.get('cuda')}, "
                             f"NCCL {d.get('nccl_version') or '?'}"),
                ("launched as", f"`{d.get('launch_command') or p.get('command')}`")]
        return present.facts(rows, title=f"The {self.machine} recording", notes=[self.world_size_note()])


def replica_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Pure: the replica measurement (`measure_replica_throughput`) as one row per batch size."""
    return [{"batch_size": p["batch_size"], "one_gpu_req_s": p["one_gpu"]["requests_per_s"],
             "replicas_req_s": p["replicas"]["requests_per_s"], "speedup": p["speedup"],
             "inline_req_s": p["inline"]["requests_per_s"], "inline_speedup": p["inline_speedup"],
             "replicas_on": ", ".join(result["replica_devices"])} for p in result["points"]]


@dataclass(frozen=True)
class ReplicaThroughput:
    """A replica measurement (`measure_replica_throughput`'s dict) and where it came from; shows as a table.

    Attributes:
        result: the measurement (JSON-ready dict).
        source: where and when, in a few words ("recorded on NVIDIA H200 on 2026-12-01", "measured now on ...").
        asked: what a recorded answer was asked for and could not honour ("asked for batch sizes 1 and 2, the
            recording has 1, 8 and 32"), said under the table; "" when it answers what was asked.
    """

    result: dict[str, Any]
    source: str
    asked: str = ""

    def rows(self) -> list[dict[str, Any]]:
        return replica_rows(self.result)

    def to_pandas(self) -> Any:
        import pandas

        return pandas.DataFrame(self.rows())

    @property
    def failed(self) -> bool:
        """True when the measurement did not complete (the recording keeps why, in `error`)."""
        return "error" in self.result

    @property
    def replica_devices(self) -> list[str]:
        return list(self.result.get("replica_devices", []))

    def _spread_words(self) -> str:
        devices = self.replica_devices
        if len(set(devices)) == 1 and len(devices) > 1:
            return f"{len(devices)} replicas on {devices[0]}"
        return f"replicas on {present.listing(devices)}"

    def table(self) -> present.Table:
        """Requests per second by batch size: one GPU, replicas, inline dispatch, and the host time of a replay."""
        rows = []
        for p in sorted(self.result.get("points", []), key=lambda p: p["batch_size"]):
            launches = [v for v in (p.get("launch_us") or {}).values() if v is not None]
            rows.append({"batch_size": p["batch_size"], "one_gpu": p["one_gpu"]["requests_per_s"],
                         "replicas": p["replicas"]["requests_per_s"], "speedup": p.get("speedup"),
                         "inline": p["inline"]["requests_per_s"], "inline_speedup": p.get("inline_speedup"),
                         "launch_us": max(launches) if launches else None})
        columns = [present.Column("batch_size", "batch size", kind="count"),
                   present.Column("one_gpu", "one GPU", kind="count", unit="req/s"),
                   present.Column("replicas", self._spread_words(), kind="count", unit="req/s"),
                   present.Column("speedup", "replicas vs one GPU", kind="ratio"),
                   present.Column("inline", "inline dispatch", kind="count", unit="req/s"),
                   present.Column("inline_speedup", "inline vs one GPU", kind="ratio"),
                   present.Column("launch_us", "host time of one replay", kind="time",
                                  missing="no replay time kept")]
        notes = [f"model {self.result.get('model')}, {self.result.get('input', 'inputs')}; two requests in flight "
                 "per replica for "
                 f"{present.duration(1e6 * float(self.result.get('duration_s', 1.0)))} per batch size and way"]
        if self.asked:
            notes.append(self.asked)
        return present.Table(rows, columns, index="batch_size",
                             title=f"Requests per second, {self._spread_words()}, {self.source}", notes=notes)

    def summary(self) -> str:
        """The result in one sentence: the range of each speedup over one GPU, and where it was best."""
        if self.failed:
            return str(self)
        points = self.result.get("points", [])
        parts = []
        for key, what in (("speedup", self._spread_words()), ("inline_speedup", "inline dispatch")):
            measured = [p for p in points if p.get(key) is not None]
            if not measured:
                continue
            best = max(measured, key=lambda p: p[key])
            low, high = min(p[key] for p in measured), best[key]
            span = present.ratio(high) if low == high else f"{present.ratio(low)} to {present.ratio(high)}"
            parts.append(f"{what} served {span} the requests per second of one GPU (best at batch "
                         f"{best['batch_size']})")
        where = self.source[:1].upper() + self.source[1:]
        return f"{where}: " + ("; ".join(parts) if parts else "nothing measured") + "."

    def __str__(self) -> str:
        r = self.result
        if self.failed:
            errors = r["error"] if isinstance(r["error"], list) else [r["error"]]
            return "replica throughput was not measured (" + self.source + "): " + "; ".join(errors)
        return str(self.table())

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))

    def _repr_html_(self) -> str:
        if self.failed:
            import html

            return f"<p>{html.escape(str(self))}</p>"
        return self.table()._repr_html_()


@dataclass(frozen=True)
class MultiGpuOverview:
    """Every multi-GPU recording of one GPU family, and plainly what is missing."""

    gpu: str
    recordings: tuple[MultiGpuRecording, ...]

    @property
    def multi_gpu(self) -> tuple[MultiGpuRecording, ...]:
        """Recordings made on machines with several GPUs."""
        return tuple(r for r in self.recordings if r.world_size > 1)

    def largest(self) -> MultiGpuRecording:
        if not self.recordings:
            raise RecordingError(missing_message(self.gpu))
        return max(self.recordings, key=lambda r: r.world_size)

    def rows(self) -> list[dict[str, Any]]:
        return [{"machine": r.machine, "world_size": r.world_size, "gpu": r.gpu,
                 "nccl": r.distributed().get("nccl_version"), "date": str(r.recording.provenance["date"])[:10]}
                for r in self.recordings]

    def table(self) -> present.Table:
        """One row per machine recorded (fewest GPUs first), and plainly what is missing."""
        columns = [present.Column("machine", "machine", kind="text"),
                   present.Column("world_size", "GPUs (world size)", kind="count"),
                   present.Column("gpu", "GPU", kind="text"), present.Column("nccl", "NCCL", kind="text"),
                   present.Column("date", "recorded on", kind="text")]
        notes = []
        if not self.multi_gpu:
            notes.append(f"No recording from a machine with several GPUs yet: the results below come from one GPU "
                         f"(world size 1). On a machine with 2 or 4 GPUs, `{MULTI_GPU_SCRIPT}` makes one.")
        return present.Table(self.rows(), columns, index="machine", title=f"Multi-GPU recordings for {self.gpu}",
                             notes=notes)

    def __str__(self) -> str:
        if not self.recordings:
            return missing_message(self.gpu)
        return str(self.table())

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))

    def _repr_html_(self) -> str:
        if not self.recordings:
            import html

            return f"<p>{html.escape(missing_message(self.gpu))}</p>"
        return self.table()._repr_html_()


def recorded_where(provenance: dict[str, Any]) -> str:
    """"recorded on NVIDIA H200 on 2026-12-01" from a recording's provenance."""
    return f"recorded on {provenance.get('gpu', 'an unnamed GPU')} on {str(provenance.get('date', '?'))[:10]}"


def _ranks(world_size: int) -> str:
    return "1 GPU" if world_size == 1 else f"{world_size} GPUs"


def missing_message(gpu: str) -> str:
    return (f"no multi-GPU recording for {gpu!r} yet: {record_hint(NAME)} (world size = the GPUs it has; "
            f"`{MULTI_GPU_SCRIPT}` runs it with the tests and the benchmark)")


def multigpu_recordings(gpu: str | None = None, root: str | Path | None = None) -> MultiGpuOverview:
    """Every `multigpu` recording whose machine folder is `gpu` or `gpu`xN (default: the recorded-mode GPU), each
    read by `gl.load(MultiGpuRecording, ...)`; `.largest()` is the one with the most GPUs."""
    if gpu is None:
        gpu = recorded_gpu()
    base = Path(root) if root is not None else recordings_root()
    found = []
    for rec in list_recordings(base):
        machine = rec.path.parent.name
        family, _ = split_machine_slug(machine)
        if rec.name == NAME and family == gpu:
            found.append(load(MultiGpuRecording, rec))
    found.sort(key=lambda r: r.world_size)
    return MultiGpuOverview(gpu, tuple(found))


def load_multigpu(gpu: str | None = None, root: str | Path | None = None) -> MultiGpuRecording:
    """Deprecated: `gl.multigpu_recordings().largest()` is the multi-GPU recording with the most GPUs for this GPU
    family; `gl.load(gl.MultiGpuRecording, gpu="h200x2")` one machine's.

    Raises:
        RecordingError: there is none yet; the message names the command that makes one.
    """
    warnings.warn("gl.load_multigpu() is gl.multigpu_recordings().largest() (one machine's recording: "
                  "gl.load(gl.MultiGpuRecording, gpu='h200x2')): call that", DeprecationWarning, stacklevel=2)
    return multigpu_recordings(gpu, root).largest()


__all__ = ["NAME", "MultiGpuOverview", "MultiGpuRecording", "ReplicaThroughput", "load_multigpu", "machine_slug",
           "missing_message", "multigpu_recordings", "recorded_where", "replica_rows", "split_machine_slug"]
