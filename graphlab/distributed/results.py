"""Multi-GPU recordings, read anywhere: which machines were recorded, and what they measured.

`graphlab record --models multigpu` writes one recording per machine into a folder named for it:
`h200` for one GPU (world size 1), `h200x2`, `h200x4` for several. This module reads them (pure
Python: no torch, no GPU), so notebook 07 shows them on any laptop:

    >>> overview = gl.multigpu_recordings()   # every machine recorded, and plainly what is missing
    >>> rec = gl.load_multigpu()               # the recording with the most GPUs
    >>> rec.graph("tp", rank=0, batch_size=1)  # one rank's graph (rank and device in .metadata)
    >>> rec.tensor_parallel_rows()             # eager vs graph latency of the TP layer by batch size
    >>> rec.replica_rows()                     # requests/s: one GPU vs replicas, by batch size

Pure (in `graphlab.distributed.PURE`): the standard library and ground-floor modules only; pandas only
inside `to_pandas`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphlab.errors import RecordingError
from graphlab.mode import recorded_gpu
from graphlab.recordings import Recording, gpu_slug, list_recordings, recordings_root

NAME = "multigpu"
RECORD_COMMAND = "graphlab record --models multigpu"
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


@dataclass(frozen=True)
class MultiGpuRecording:
    """One machine's multi-GPU recording (see the module docstring)."""

    recording: Recording

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
        return dict(self.recording.results("distributed"))

    def banner(self) -> str:
        d = self.distributed()
        return (f"{self.recording.banner()}; world size {d.get('world_size')}, NCCL {d.get('nccl_version')}, "
                f"launched as `{d.get('launch_command')}`")

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

    # -- measurements -------------------------------------------------------------------------------------
    def tensor_parallel(self) -> dict[str, Any]:
        return dict(self.recording.results("tensor_parallel"))

    def tensor_parallel_rows(self) -> list[dict[str, Any]]:
        """One row per batch size: eager and graph p50 (the slowest rank's), speedup, NCCL kernels, error."""
        return [{"world_size": p["world_size"], "batch_size": p["batch_size"], "eager_p50_us": p["eager_p50_us"],
                 "graph_p50_us": p["graph_p50_us"], "speedup": p["speedup"], "nccl_kernels": p["nccl_kernels"],
                 "max_abs_err": p["max_abs_err"]} for p in self.tensor_parallel()["points"]]

    def launch_rows(self) -> list[dict[str, Any]]:
        """Host time of one replay per rank and device, by batch size (the TP layer's graph)."""
        return [{"batch_size": p["batch_size"], "rank": r["rank"], "device": r["device"],
                 "launch_p50_us": r["launch_p50_us"]} for p in self.tensor_parallel()["points"] for r in p["per_rank"]]

    def replicas(self) -> dict[str, Any]:
        return dict(self.recording.results("replicas"))

    def replica_rows(self) -> list[dict[str, Any]]:
        """One row per batch size: requests/s on one GPU, with replicas, inline dispatch, and the ratios."""
        return replica_rows(self.replicas())

    def world_size_note(self) -> str:
        """What this recording can and cannot show, in one paragraph (measured facts only)."""
        kernels = self.nccl_kernels()
        with_kernel = sorted(k for k, n in kernels.items() if n > 0)
        if self.world_size > 1:
            return (f"{self.world_size} ranks on {self.machine}: each rank's graph holds "
                    f"{max(kernels.values(), default=0)} NCCL kernel(s); the replays agree with the dense layer "
                    f"(max abs error {max(r['max_abs_err'] for r in self.tensor_parallel_rows()):.2g}).")
        seen = (f"the all-reduce left an NCCL kernel in the graph ({', '.join(with_kernel)})" if with_kernel else
                "NCCL put no kernel in the graph: a one-rank all-reduce launches nothing")
        err = max((r["max_abs_err"] for r in self.tensor_parallel_rows()), default=float("nan"))
        return (f"World size 1 on {self.machine}: {seen}. It shows the capture path working (eager communicator, "
                "warm-up on the capture stream, the collective captured without error) and the tensor-parallel "
                f"layer equal to the dense one (max abs error {err:.2g}); it cannot show communication between "
                "GPUs, its cost, or ranks staying in step.")

    def __str__(self) -> str:
        return f"{self.machine}: {self.banner()}"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))


def replica_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Pure: the replica measurement (`measure_replica_throughput`) as one row per batch size."""
    return [{"batch_size": p["batch_size"], "one_gpu_req_s": p["one_gpu"]["requests_per_s"],
             "replicas_req_s": p["replicas"]["requests_per_s"], "speedup": p["speedup"],
             "inline_req_s": p["inline"]["requests_per_s"], "inline_speedup": p["inline_speedup"],
             "replicas_on": ", ".join(result["replica_devices"])} for p in result["points"]]


@dataclass(frozen=True)
class ReplicaThroughput:
    """A replica measurement (`measure_replica_throughput`'s dict) and where it came from; `str()` is a table."""

    result: dict[str, Any]
    source: str

    def rows(self) -> list[dict[str, Any]]:
        return replica_rows(self.result)

    def to_pandas(self) -> Any:
        import pandas

        return pandas.DataFrame(self.rows())

    @property
    def failed(self) -> bool:
        """True when the measurement did not complete (the recording keeps why, in `error`)."""
        return "error" in self.result

    def __str__(self) -> str:
        r = self.result
        if self.failed:
            errors = r["error"] if isinstance(r["error"], list) else [r["error"]]
            return "replica throughput was not measured (" + self.source + "): " + "; ".join(errors)
        lines = [f"replica throughput, {r['model']}, replicas on {', '.join(r['replica_devices'])} ({self.source})",
                 f"{'batch':>6}{'1 GPU req/s':>13}{'replicas req/s':>16}{'x':>7}{'inline req/s':>14}{'x':>7}"
                 f"{'launch us':>12}"]
        for p in r["points"]:
            launch = ", ".join(f"{v:.1f}" for v in p.get("launch_us", {}).values() if v is not None) or "-"
            lines.append(f"{p['batch_size']:>6}{p['one_gpu']['requests_per_s']:>13.0f}"
                         f"{p['replicas']['requests_per_s']:>16.0f}{p['speedup'] or 0:>7.2f}"
                         f"{p['inline']['requests_per_s']:>14.0f}{p['inline_speedup'] or 0:>7.2f}{launch:>12}")
        return "\n".join(lines)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))


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

    def __str__(self) -> str:
        if not self.recordings:
            return missing_message(self.gpu)
        lines = [f"multi-GPU recordings for {self.gpu}:"]
        lines += [f"  {r['machine']}: world size {r['world_size']}, NCCL {r['nccl']}, {r['date']}" for r in self.rows()]
        if not self.multi_gpu:
            lines.append(f"No recording from a machine with several GPUs yet: the results below come from one GPU "
                         f"(world size 1). On a machine with 2 or 4 GPUs, `{MULTI_GPU_SCRIPT}` makes one.")
        return "\n".join(lines)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))


def missing_message(gpu: str) -> str:
    return (f"no multi-GPU recording for {gpu!r} yet: make one on a GPU machine with `{RECORD_COMMAND}` "
            f"(world size = the GPUs it has; `{MULTI_GPU_SCRIPT}` runs it with the tests and the benchmark)")


def multigpu_recordings(gpu: str | None = None, root: str | Path | None = None) -> MultiGpuOverview:
    """Every `multigpu` recording whose machine folder is `gpu` or `gpu`xN (default: the recorded-mode GPU)."""
    if gpu is None:
        gpu = recorded_gpu()
    base = Path(root) if root is not None else recordings_root()
    found = []
    for rec in list_recordings(base):
        family, _ = split_machine_slug(rec.path.parent.name)
        if rec.name == NAME and family == gpu:
            found.append(MultiGpuRecording(rec))
    found.sort(key=lambda r: r.world_size)
    return MultiGpuOverview(gpu, tuple(found))


def load_multigpu(gpu: str | None = None, root: str | Path | None = None) -> MultiGpuRecording:
    """The multi-GPU recording with the most GPUs for this GPU family.

    Raises:
        RecordingError: there is none yet; the message names the command that makes one.
    """
    return multigpu_recordings(gpu, root).largest()


__all__ = ["NAME", "MultiGpuOverview", "MultiGpuRecording", "ReplicaThroughput", "load_multigpu", "machine_slug",
           "missing_message", "multigpu_recordings", "replica_rows", "split_machine_slug"]
