"""`graphlab record --models multigpu`: one recording of tensor parallelism and replicas on this machine.

    graphlab record --models multigpu          # launches torchrun with one process per visible GPU
    torchrun --nproc-per-node 2 -m graphlab record --models multigpu    # the same, launched by hand

Run without torchrun, the recorder starts `torchrun --nproc-per-node <GPUs>` on itself (with a
timeout, so a teardown that does not finish cannot hang the session) and returns the folder the job
wrote. Under torchrun every rank:
1. joins with an eager NCCL communicator (`init_distributed`);
2. captures a bare all-reduce (`y = x * 1; all_reduce(y); y + 1`) and checks three replays;
3. times the tensor-parallel GPT layer eager vs graph by batch size (`time_tensor_parallel`), keeping
   the DOT of a few batch sizes;
then rank 0 gathers every rank's DOTs and timings, measures replica throughput over all GPUs while the
other ranks wait on a CPU barrier (their GPUs idle), and writes ONE recording into
`<out>/<machine>/multigpu` (`h200` for one GPU, `h200x2`, `h200x4`, ...): every rank's graphs (with rank,
world size and device in meta.json, so the inspector shows them), the timings, world size, NCCL
version, `nvidia-smi topo -m`, and the launch command (no absolute paths). Graphs are released
before the process group is destroyed. About 60 s on one H200.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from graphlab.distributed.capture import capture_collective
from graphlab.distributed.comm import (DistContext, barrier, gather_objects, init_distributed,
                                       launched_by_torchrun, shutdown)
from graphlab.distributed.launch import run_torchrun
from graphlab.distributed.results import NAME, machine_slug
from graphlab.errors import RecordingError
from graphlab.fresh_process import run_in_fresh_process
from graphlab.graph.dot_parser import parse_dot
from graphlab.recordings import write_recording
from graphlab.studies.multigpu_timing import gather_points, time_tensor_parallel
from graphlab.studies.record import recorded_command

#: the recording's name (`graphlab.distributed.results.NAME`); `gl.load(gl.MultiGpuRecording, gpu=<machine>)` reads
#: it back (its entries: distributed, tensor_parallel, replicas, allreduce)
RECORDING = NAME

TP_BATCH_SIZES = (1, 4, 16, 64)
TP_DOT_BATCH_SIZES = (1, 16)
REPLICA_MODEL = "gpt"
REPLICA_BATCH_SIZES = (1, 8, 32)
RECORD_TIMEOUT_S = 300
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
NCCL_SETTINGS = ("NCCL_NVLS_ENABLE", "NCCL_GRAPH_MIXING_SUPPORT", "NCCL_ALGO", "NCCL_PROTO", "CUDA_VISIBLE_DEVICES")


def topology() -> str:
    """`nvidia-smi topo -m` as plain text, without its terminal underlines ("" when nvidia-smi is missing or fails)."""
    try:
        out = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return ""
    return _ANSI.sub("", out.stdout) if out.returncode == 0 else ""


def launch_line(world_size: int) -> str:
    """How this job was launched, for provenance: `torchrun --nproc-per-node N -m graphlab record ...`
    without the output folder (a recording never names the recording machine's paths)."""
    args = sys.argv[1:] if sys.argv[1:2] == ["record"] else ["record", "--models", RECORDING]
    return f"torchrun --nproc-per-node {world_size} -m {recorded_command(args)}"


def record(out_root: Path, prov: dict[str, Any]) -> Path:
    """Tensor parallelism (all-reduce inside the graph) and replica throughput on this machine.

    Under torchrun every rank does its part; run alone, it launches torchrun on itself, one process per GPU.
    """
    if launched_by_torchrun():
        return _record_on_every_rank(out_root, prov)
    nproc = int(os.environ.get("GRAPHLAB_NPROC", "0")) or torch.cuda.device_count()
    folder = out_root / machine_slug(prov["gpu"], nproc) / RECORDING
    stamp = (folder / "meta.json").stat().st_mtime if (folder / "meta.json").is_file() else None
    print(f"[record] multigpu: launching torchrun with {nproc} process(es), one per GPU", flush=True)
    timeout_s = float(os.environ.get("GRAPHLAB_RECORD_TIMEOUT_S", RECORD_TIMEOUT_S))
    result = run_torchrun(["-m", "graphlab", "record", "--models", RECORDING, "--out", str(out_root)], nproc=nproc,
                          timeout_s=timeout_s)
    written = (folder / "meta.json").is_file() and (folder / "meta.json").stat().st_mtime != stamp
    if not written:
        raise RecordingError(f"the multigpu recording was not written (torchrun exit {result.returncode}, "
                             f"timed out: {result.timed_out}); the output above says why")
    if not result.ok:
        print(f"[record] multigpu: the recording was written, but torchrun did not finish cleanly (exit "
              f"{result.returncode}, timed out: {result.timed_out}); see docs/multi-gpu.md on teardown", flush=True)
    return folder


def _replicas_in_a_child_process(timeout_s: int = 100) -> dict[str, Any]:
    """Replica throughput, measured in a child process: a CUDA fault there (seen once on the H200: an illegal
    memory access while the replicas ran) cannot take the tensor-parallel recording down with it; the
    recording keeps the child's last lines instead, and the same run under CUDA_LAUNCH_BLOCKING=1."""
    code = ("from graphlab.studies.multigpu import REPLICA_MODEL, REPLICA_BATCH_SIZES; "
            "from graphlab.studies.replica_throughput import measure_replica_throughput; "
            "from graphlab.fresh_process import result_line; "
            "print(result_line(measure_replica_throughput(REPLICA_MODEL, REPLICA_BATCH_SIZES, progress=False)))")
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR",
                                                           "MASTER_PORT", "LOCAL_WORLD_SIZE", "GROUP_RANK")}
    failures = []
    for blocking in ("0", "1"):
        try:
            result = run_in_fresh_process(code, timeout_s, env={**env, "CUDA_LAUNCH_BLOCKING": blocking})
        except subprocess.TimeoutExpired:
            failures.append(f"CUDA_LAUNCH_BLOCKING={blocking}: timed out after {timeout_s} s")
            continue
        if "error" in result:
            failures.append(f"CUDA_LAUNCH_BLOCKING={blocking}: {result['error']}")
            continue
        if failures:
            result["earlier_failure"] = failures
            result["note"] = "measured with CUDA_LAUNCH_BLOCKING=1 after the normal run failed: slower than real"
        return result
    return {"error": failures, "points": []}


def _capture_allreduce(ctx: DistContext) -> tuple[dict[str, Any], str]:
    def all_reduce_block(x: Any) -> Any:
        y = x * 1
        dist.all_reduce(y)
        return y + 1

    x = torch.arange(1, 4, device=ctx.device, dtype=torch.float32)
    cg = capture_collective(all_reduce_block, x, ctx=ctx, name=f"allreduce_rank{ctx.rank}")
    replays, expected = [], []
    for k in (1.0, 2.0, 5.0):
        values = [k, k + 1, k + 2]
        replays.append(cg(torch.tensor(values, device=ctx.device)).tolist())
        expected.append([ctx.world_size * v + 1 for v in values])
    dot = cg.dot()
    graph = cg.graph
    info = {"rank": ctx.rank, "replays": replays, "expected": expected, "correct": replays == expected,
            "count_by_kind": graph.count_by_kind(), "nccl_kernels": [n.name for n in graph.kernels()
                                                                     if n.family == "NCCL"]}
    cg.reset()
    return info, dot


def _record_on_every_rank(out_root: Path, prov: dict[str, Any]) -> Path:
    ctx = init_distributed()
    say = (lambda text: print(f"[record] multigpu: {text}", flush=True)) if ctx.rank == 0 else (lambda text: None)
    say(f"world size {ctx.world_size}, NCCL {ctx.nccl_version}, eager communicator {ctx.eager_communicator}")
    allreduce, allreduce_dot = _capture_allreduce(ctx)
    say(f"all-reduce graph: correct {allreduce['correct']}, NCCL kernels {allreduce['nccl_kernels']}")
    points = time_tensor_parallel(ctx, TP_BATCH_SIZES, keep_dots=TP_DOT_BATCH_SIZES)
    rows = gather_points(points, ctx)
    dots = gather_objects({"allreduce": allreduce_dot, "allreduce_info": allreduce,
                           "tp": {p["batch_size"]: p["dot"] for p in points if "dot" in p}}, ctx)
    for row in rows:
        say(f"TP layer b{row['batch_size']}: eager {row['eager_p50_us']:.1f} us, graph {row['graph_p50_us']:.1f} us, "
            f"x{row['speedup']}, max abs err {row['max_abs_err']:.2g}")
    folder = out_root / machine_slug(prov["gpu"], ctx.world_size) / RECORDING
    if ctx.rank == 0:
        torch.cuda.synchronize(ctx.device)
        say(f"replica throughput over {torch.cuda.device_count()} GPU(s) (the other ranks wait)")
        replicas = _replicas_in_a_child_process()
        command = launch_line(ctx.world_size)
        graphs: dict[str, dict[str, Any]] = {}
        for rank, got in enumerate(dots):
            origin = {"rank": rank, "world_size": ctx.world_size, "device": f"cuda:{rank}", "dot_flags": 1}
            key = f"allreduce_rank{rank}"
            graphs[key] = {"dot": got["allreduce"], "model": parse_dot(got["allreduce"], source=f"{key}.dot"),
                           "what": "allreduce", "nccl_kernels": len(got["allreduce_info"]["nccl_kernels"]), **origin}
            for batch_size, dot in sorted(got["tp"].items()):
                key = f"tp_b{batch_size}_rank{rank}"
                parsed = parse_dot(dot, source=f"{key}.dot")
                graphs[key] = {"dot": dot, "model": parsed, "what": "tp", "batch_size": int(batch_size),
                               "nccl_kernels": sum(1 for n in parsed.kernels() if n.family == "NCCL"), **origin}
        distributed = {
            "world_size": ctx.world_size, "backend": ctx.backend, "nccl_version": ctx.nccl_version,
            "eager_communicator": ctx.eager_communicator, "launch_command": command, "topology": topology(),
            "gpus": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())],
            "nccl_settings": {k: os.environ[k] for k in NCCL_SETTINGS if k in os.environ},
        }
        tensor_parallel = {"model": "tensor-parallel GPT layer (graphlab.distributed.tensor_parallel)", "width": 256,
                           "heads": 8, "seq_len": 32, "points": rows}
        write_recording(
            folder, name=RECORDING, provenance={**prov, "command": command, "world_size": ctx.world_size,
                                           "nccl": ctx.nccl_version},
            description=(f"Tensor parallelism over {ctx.world_size} rank(s) with the NCCL all-reduce inside the "
                         f"graph, and replica throughput over {torch.cuda.device_count()} GPU(s), on one machine."),
            graphs=graphs,
            results={"distributed": distributed, "tensor_parallel": tensor_parallel, "replicas": replicas,
                     "allreduce": [d["allreduce_info"] for d in dots]})
        say(f"wrote {folder}")
    barrier(ctx)
    shutdown(ctx)
    return folder


__all__ = ["RECORDING", "launch_line", "record", "topology"]
