"""torch.distributed for graphs: an eager NCCL communicator, one bucket for every rank, a clean teardown.

graphlab does not launch or manage processes: `torchrun` does (one process per GPU, as NCCL
recommends for graph capture). This module holds the few rules a captured collective needs:

- the NCCL communicator exists before capture: `init_distributed()` passes `device_id` to
  `init_process_group` (eager init; torch creates it lazily otherwise, at the first collective,
  which fails inside a capture);
- every rank captures and replays the same graph: `agree_bucket(local_size, buckets)` gathers the
  local batch sizes and puts every rank on the bucket of the largest (vLLM, SGLang and Megatron do
  the same), over a CPU (gloo) side group, so no kernel lands on the compute stream;
- teardown: `shutdown(ctx, graphs)` releases the graphs before `destroy_process_group`.

    # torchrun --nproc-per-node 2 serve.py
    >>> from graphlab.distributed.comm import init_distributed, agree_bucket
    >>> ctx = init_distributed()                 # rank, world size, this rank's GPU, the gloo side group
    >>> agreement = agree_bucket(len(requests), [1, 2, 4, 8, 16], ctx)
    >>> agreement.bucket                          # the same on every rank

The arithmetic of the agreement (`common_bucket`, `BucketAgreement`) needs no torch: it lives in
`graphlab.distributed.rules`, which is what the notebook shows; this module gathers the sizes.
"""
from __future__ import annotations

import inspect
import os
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import torch
import torch.distributed as dist

from graphlab.env import require_cuda
from graphlab.errors import DistributedError
from graphlab.distributed.rules import BucketAgreement, common_bucket

TORCHRUN_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK")


# -- the process group ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class DistContext:
    """This process's place in the job.

    Attributes:
        rank, world_size, local_rank: as torchrun set them.
        device: this rank's `torch.device` ("cuda:<local_rank>", or "cpu" with gloo).
        backend: "nccl" or "gloo".
        cpu_group: a gloo group over the same ranks for CPU-side agreement (sizes, outcomes, barriers);
            the default group itself when the backend is gloo.
        eager_communicator: True when the NCCL communicator was created at init (device_id given).
        nccl_version: e.g. "2.28.9", or None without NCCL.
    """

    rank: int
    world_size: int
    local_rank: int
    device: torch.device
    backend: str
    cpu_group: Any = field(repr=False)
    eager_communicator: bool = False
    nccl_version: str | None = None

    def origin(self) -> dict[str, Any]:
        """Where a graph captured here came from: rank, world size, device (for recordings and the inspector)."""
        return {"rank": self.rank, "world_size": self.world_size, "device": str(self.device)}


def launched_by_torchrun() -> bool:
    """True when RANK, WORLD_SIZE and LOCAL_RANK are set (torchrun sets them for every process)."""
    return all(v in os.environ for v in TORCHRUN_VARIABLES)


def nccl_version() -> str | None:
    """NCCL's version as "2.28.9" (torch.cuda.nccl.version()), or None when torch has no NCCL."""
    try:
        return ".".join(str(part) for part in torch.cuda.nccl.version())
    except (AttributeError, ImportError, RuntimeError, TypeError):
        return None


def communicator_is_eager(group: Any = None) -> bool | None:
    """True when the group is bound to a device (its NCCL communicator was created at init), False when
    it is not, None when this torch does not say (no `bound_device_id`)."""
    pg = group if group is not None else dist.distributed_c10d._get_default_group()
    if not hasattr(pg, "bound_device_id"):
        return None
    return pg.bound_device_id is not None


_CONTEXT: DistContext | None = None


def init_distributed(backend: str | None = None) -> DistContext:
    """Join the job torchrun started: set this rank's GPU, create the communicator eagerly, add a gloo side group.

    Reuses the process group when one is already initialised. Args: backend "nccl" (default with CUDA)
    or "gloo" (CPU).

    Raises:
        DistributedError: not launched by torchrun, or fewer GPUs than local ranks.
    """
    global _CONTEXT
    if _CONTEXT is not None and dist.is_initialized():
        return _CONTEXT
    if not launched_by_torchrun() and not dist.is_initialized():
        raise DistributedError("not launched by torchrun (RANK, WORLD_SIZE, LOCAL_RANK are unset): run "
                               "`torchrun --nproc-per-node N your_script.py`, one process per GPU")
    backend = backend or ("nccl" if torch.cuda.is_available() else "gloo")
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if backend == "nccl":
        require_cuda("init_distributed(backend='nccl')")
        if local_rank >= torch.cuda.device_count():
            raise DistributedError(f"local rank {local_rank} has no GPU: this machine shows "
                                   f"{torch.cuda.device_count()}; use --nproc-per-node <= that")
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    passed_device_id = False
    if not dist.is_initialized():
        kwargs: dict[str, Any] = {}
        if backend == "nccl" and "device_id" in inspect.signature(dist.init_process_group).parameters:
            kwargs["device_id"] = device  # eager communicator: it exists before any capture
            passed_device_id = True
        dist.init_process_group(backend, **kwargs)
    eager = communicator_is_eager() if dist.get_backend() == "nccl" else False
    cpu_group = dist.new_group(backend="gloo") if dist.get_backend() != "gloo" else dist.group.WORLD
    _CONTEXT = DistContext(
        rank=dist.get_rank(), world_size=dist.get_world_size(), local_rank=local_rank, device=device,
        backend=dist.get_backend(), cpu_group=cpu_group,
        eager_communicator=bool(eager) or (eager is None and passed_device_id),
        nccl_version=nccl_version() if backend == "nccl" else None,
    )
    return _CONTEXT


def current_context() -> DistContext:
    """The context `init_distributed` made (DistributedError before it ran)."""
    if _CONTEXT is None:
        raise DistributedError("no process group yet: call graphlab.distributed.comm.init_distributed() first")
    return _CONTEXT


def gather_ints(value: int, ctx: DistContext | None = None) -> list[int]:
    """Every rank's `value`, by rank, over the gloo side group (CPU only: no kernel, no GPU sync)."""
    ctx = ctx or current_context()
    mine = torch.tensor([int(value)], dtype=torch.int64)
    everyone = [torch.zeros(1, dtype=torch.int64) for _ in range(ctx.world_size)]
    dist.all_gather(everyone, mine, group=ctx.cpu_group)
    return [int(t.item()) for t in everyone]


def gather_objects(value: Any, ctx: DistContext | None = None) -> list[Any]:
    """Every rank's picklable `value`, by rank, over the gloo side group."""
    ctx = ctx or current_context()
    everyone: list[Any] = [None] * ctx.world_size
    dist.all_gather_object(everyone, value, group=ctx.cpu_group)
    return everyone


def global_size(local_size: int, ctx: DistContext | None = None) -> int:
    """The largest local batch size over all ranks (an all-reduce MAX on the gloo side group)."""
    ctx = ctx or current_context()
    t = torch.tensor([int(local_size)], dtype=torch.int64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=ctx.cpu_group)
    return int(t.item())


def agree_bucket(local_size: int, buckets: Sequence[int], ctx: DistContext | None = None) -> BucketAgreement:
    """The bucket every rank uses this step: gather the local sizes, take the bucket of the largest.

    Every rank gets the same answer (call it on every rank, every step, before choosing a graph).
    """
    return common_bucket(gather_ints(local_size, ctx), buckets)


def barrier(ctx: DistContext | None = None) -> None:
    """Wait for every rank (CPU-side, on the gloo group), after this rank's GPU work is done."""
    ctx = ctx or current_context()
    if ctx.backend == "nccl":
        torch.cuda.synchronize(ctx.device)
    dist.barrier(group=ctx.cpu_group)


def shutdown(ctx: DistContext | None = None, graphs: Iterable[Any] = ()) -> None:
    """Release `graphs` (anything with `.reset()` or `.clear()`: CapturedGraph, GraphCache), then leave the job.

    Graphs that hold NCCL work are released before `destroy_process_group`: a teardown with such a
    graph still alive did not finish on 2 H200s (docs/multi-gpu.md).
    """
    global _CONTEXT
    for graph in graphs:
        release = getattr(graph, "reset", None) or getattr(graph, "clear", None)
        if release is not None:
            release()
    if not dist.is_initialized():
        _CONTEXT = None
        return
    ctx = ctx or _CONTEXT
    if ctx is not None and ctx.backend == "nccl":
        torch.cuda.synchronize(ctx.device)
    if ctx is not None:
        dist.barrier(group=ctx.cpu_group)
    dist.destroy_process_group()
    _CONTEXT = None


__all__ = ["DistContext", "agree_bucket", "barrier", "communicator_is_eager", "current_context", "gather_ints",
           "gather_objects", "global_size", "init_distributed", "launched_by_torchrun", "nccl_version", "shutdown"]
