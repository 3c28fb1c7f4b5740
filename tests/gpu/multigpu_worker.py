"""The torchrun side of tests/gpu/test_gpu_multigpu.py: one process per GPU, results as JSON per rank.

    python -m torch.distributed.run --standalone --nproc-per-node N tests/gpu/multigpu_worker.py MODE OUT_DIR

MODE "main": eager communicator, an all-reduce captured through capture_collective (three replays),
the tensor-parallel GPT layer vs the dense one at batch 1 and 4 (eager and graph), and a clean teardown.
MODE "lazy": no device_id (lazy communicator): capture_collective must refuse with nccl_lazy_init.
Not collected by pytest (its name does not start with test_).
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def main(mode: str, out: Path) -> int:
    import torch
    import torch.distributed as dist

    from graphlab.distributed.comm import init_distributed, shutdown
    from graphlab.distributed.capture import capture_collective, check_against_dense

    rank = int(os.environ["RANK"])
    result: dict = {"rank": rank, "mode": mode}
    if mode == "lazy":
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
        dist.init_process_group("nccl")  # no device_id: the communicator is created at the first collective
    ctx = init_distributed()
    result.update(ctx.origin())
    result["eager_communicator"] = ctx.eager_communicator

    def block(x):
        y = x * 1
        dist.all_reduce(y)
        return y + 1

    if mode == "lazy":
        try:
            capture_collective(block, torch.ones(3, device=ctx.device), ctx=ctx)
            result["refused"] = None
        except Exception as exc:  # noqa: BLE001 - the test reads the cause
            result["refused"] = {"type": type(exc).__name__, "cause": getattr(exc, "cause", None), "message": str(exc)}
    else:
        cg = capture_collective(block, torch.arange(1.0, 4.0, device=ctx.device), ctx=ctx)
        result["replays"] = [cg(torch.tensor([k, k + 1, k + 2], device=ctx.device)).tolist() for k in (1.0, 5.0)]
        graph = cg.graph
        result["allreduce_nccl_kernels"] = [n.name for n in graph.kernels() if n.family == "NCCL"]
        result["allreduce_kernels"] = len(graph.kernels())
        cg.reset()
        result["tp"] = [check_against_dense(b, ctx=ctx) for b in (1, 4)]
    shutdown(ctx)
    (out / f"{mode}_rank{rank}.json").write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    raise SystemExit(main(sys.argv[1], Path(sys.argv[2])))
