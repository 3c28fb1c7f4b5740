"""Synthetic `multigpu` recordings for CPU tests, written into a temporary folder only (never data/).

The numbers are made up for the tests and say so in the provenance (`command: "pytest synthetic"`);
the DOT text is a real H200 dump from tests/fixtures (a GPT forward pass), since no NCCL dump has been
committed yet.
"""
from __future__ import annotations

from pathlib import Path

from conftest import FIXTURES

from graphlab.graph.dot_parser import parse_dot
from graphlab.recordings import write_recording
from graphlab.distributed.results import NAME, machine_slug

REAL_DOT = FIXTURES / "h200" / "models" / "gpt_b1__verbose.dot"


def _points(world_size: int) -> list[dict]:
    rows = []
    for batch_size in (1, 16):
        per_rank = [{"batch_size": batch_size, "rank": r, "device": f"cuda:{r}", "world_size": world_size,
                     "eager_p50_us": 300.0 + r, "graph_p50_us": 100.0 + r, "launch_p50_us": 5.0,
                     "max_abs_err": 1e-6, "graph_max_abs_err": 1e-6, "nccl_kernels": 2} for r in range(world_size)]
        rows.append({"batch_size": batch_size, "world_size": world_size, "eager_p50_us": 300.0 + world_size - 1,
                     "graph_p50_us": 100.0 + world_size - 1, "speedup": 3.0, "max_abs_err": 1e-6,
                     "nccl_kernels": 2, "per_rank": per_rank})
    return rows


def _replicas(devices: list[str]) -> dict:
    spread = devices if len(devices) > 1 else devices * 2
    point = {"batch_size": 8, "max_abs_err": 0.0, "speedup": 1.5, "inline_speedup": 1.2,
             "one_gpu": {"requests": 100, "seconds": 1.0, "requests_per_s": 100.0},
             "replicas": {"requests": 150, "seconds": 1.0, "requests_per_s": 150.0},
             "inline": {"requests": 120, "seconds": 1.0, "requests_per_s": 120.0},
             "launch_us": {d: 4.0 for d in devices}}
    return {"model": "gpt", "description": "synthetic", "devices": devices, "replica_devices": spread,
            "device_names": ["Test GPU"] * len(devices), "duration_s": 1.0, "input": "synthetic", "points": [point]}


def write_multigpu(root: Path, world_size: int, gpu: str = "NVIDIA H200", nccl_kernels: int = 1) -> Path:
    """One synthetic multigpu recording under root/<machine>/multigpu; returns its folder."""
    dot = REAL_DOT.read_text()
    graphs = {}
    for rank in range(world_size):
        origin = {"rank": rank, "world_size": world_size, "device": f"cuda:{rank}", "dot_flags": 1}
        graphs[f"allreduce_rank{rank}"] = {"dot": dot, "model": parse_dot(dot), "what": "allreduce",
                                           "nccl_kernels": nccl_kernels, **origin}
        for batch_size in (1, 16):
            graphs[f"tp_b{batch_size}_rank{rank}"] = {"dot": dot, "model": parse_dot(dot), "what": "tp",
                                                      "batch_size": batch_size, "nccl_kernels": 2 * nccl_kernels,
                                                      **origin}
    prov = {"gpu": gpu, "driver": "0", "torch": "0", "cuda": "0", "graphlab_version": "0", "git_commit": "0",
            "command": "pytest synthetic", "date": "2026-01-01T00:00:00Z", "world_size": world_size}
    folder = root / machine_slug(gpu, world_size) / NAME
    write_recording(folder, name=NAME, description="synthetic (tests only)", provenance=prov, graphs=graphs,
                    results={"distributed": {"world_size": world_size, "backend": "nccl", "nccl_version": "0.0.0",
                                             "eager_communicator": True,
                                             "launch_command": f"torchrun --nproc-per-node {world_size} -m graphlab "
                                                               "record --models multigpu",
                                             "topology": "GPU0 X\n", "gpus": ["Test GPU"] * world_size,
                                             "nccl_settings": {"NCCL_NVLS_ENABLE": "0"}},
                             "tensor_parallel": {"model": "tp", "width": 256, "heads": 8, "seq_len": 32,
                                                 "points": _points(world_size)},
                             "replicas": _replicas([f"cuda:{r}" for r in range(world_size)]),
                             "allreduce": [{"rank": r, "correct": True} for r in range(world_size)]})
    return folder
