"""Tensor-parallel layer latency, eager vs graph, on every rank of a torchrun job (the numbers rank 0 keeps).

For each batch size, every rank builds the same dense GPT-style layer (fixed seed), cuts its shard,
checks it against the dense layer, then times, with the same method as `gl.sweep` (docs/latency-method.md):
- eager: `layer(x)`, each call synchronised (host wall time from the call to `synchronize()`);
- graph: the layer captured with its all-reduces inside (`capture_collective`), replayed the same way;
- launch: host time of `replay()` alone, not synchronised (what the CPU pays per call on this GPU).
A barrier on the gloo side group starts each series together; the collectives keep the ranks in step.
The layer's latency is the slowest rank's median (a collective finishes when the last rank does).

    # under torchrun, every rank
    >>> ctx = init_distributed()
    >>> points = time_tensor_parallel(ctx, batch_sizes=[1, 8, 32])   # this rank's points
    >>> table = gather_points(points, ctx)                            # every rank's, on every rank
"""
from __future__ import annotations

from typing import Any, Sequence

import torch

from graphlab.distributed import tensor_parallel as tp
from graphlab.distributed.capture import capture_collective
from graphlab.distributed.comm import DistContext, barrier, gather_objects
from graphlab.stats import median
from graphlab.clock import submit_us, synced_us
from graphlab.timing.sync import cuda_sync

DEFAULT_TP_BATCH_SIZES = (1, 4, 16, 64)
DEFAULT_REPETITIONS = 200
WARMUP_CALLS = 10


def time_tensor_parallel(ctx: DistContext, batch_sizes: Sequence[int] = DEFAULT_TP_BATCH_SIZES, *,
                         width: int = 256, heads: int = 8, seq_len: int = 32, repetitions: int = DEFAULT_REPETITIONS,
                         keep_dots: Sequence[int] = ()) -> list[dict[str, Any]]:
    """This rank's points: per batch size, eager/graph median latency, launch time, errors vs dense.

    Args:
        keep_dots: batch sizes whose captured graph's DOT text is kept in the point ("dot").
    """
    dense = tp.dense_gpt_layer(width, heads, device=ctx.device)
    layer = tp.shard_gpt_layer(dense, rank=ctx.rank, world_size=ctx.world_size, device=ctx.device)
    points = []
    for batch_size in batch_sizes:
        x = tp.make_layer_input(batch_size, width, seq_len, device=ctx.device, seed=batch_size)
        with torch.no_grad():
            want = dense(x)
            eager_err = float((layer(x) - want).abs().max())
            for _ in range(WARMUP_CALLS):
                layer(x)
            barrier(ctx)
            eager = synced_us(lambda: layer(x), repetitions, cuda_sync(ctx.device))
        cg = capture_collective(layer, x, ctx=ctx, name=f"tp_gpt_layer_b{batch_size}_rank{ctx.rank}")
        got = cg(x)
        torch.cuda.synchronize(ctx.device)
        graph_err = float((got - want).abs().max())
        for _ in range(WARMUP_CALLS):
            cg.replay()
        barrier(ctx)
        graph = synced_us(cg.replay, repetitions, cuda_sync(ctx.device))
        barrier(ctx)
        launch = submit_us(cg.replay, repetitions, cuda_sync(ctx.device))
        parsed = cg.graph
        point: dict[str, Any] = {
            "batch_size": batch_size, "rank": ctx.rank, "device": str(ctx.device), "world_size": ctx.world_size,
            "eager_p50_us": round(median(eager), 2), "graph_p50_us": round(median(graph), 2),
            "launch_p50_us": round(median(launch), 2), "repetitions": repetitions,
            "max_abs_err": eager_err, "graph_max_abs_err": graph_err,
            "kernels": len(parsed.kernels()), "nccl_kernels": sum(1 for n in parsed.kernels() if n.family == "NCCL"),
            "count_by_kind": parsed.count_by_kind(), "capture_ms": round(getattr(cg, "capture_ms", 0.0), 3),
        }
        if batch_size in keep_dots:
            point["dot"] = cg.dot()
        cg.reset()
        points.append(point)
    return points


def gather_points(points: list[dict[str, Any]], ctx: DistContext) -> list[dict[str, Any]]:
    """Every rank's points merged by batch size: the layer's latency is the slowest rank's median."""
    everyone = gather_objects([{k: v for k, v in p.items() if k != "dot"} for p in points], ctx)
    return merge_rank_points(everyone)


def merge_rank_points(per_rank: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Pure: [[rank 0's points], [rank 1's points], ...] -> one row per batch size with `per_rank` inside."""
    by_batch: dict[int, list[dict[str, Any]]] = {}
    for points in per_rank:
        for p in points:
            by_batch.setdefault(int(p["batch_size"]), []).append(p)
    rows = []
    for batch_size in sorted(by_batch):
        ranks = sorted(by_batch[batch_size], key=lambda p: p["rank"])
        eager = max(p["eager_p50_us"] for p in ranks)
        graph = max(p["graph_p50_us"] for p in ranks)
        rows.append({
            "batch_size": batch_size, "world_size": ranks[0]["world_size"], "eager_p50_us": eager,
            "graph_p50_us": graph, "speedup": round(eager / graph, 3) if graph > 0 else None,
            "max_abs_err": max(max(p["max_abs_err"], p["graph_max_abs_err"]) for p in ranks),
            "nccl_kernels": ranks[0]["nccl_kernels"], "per_rank": ranks,
        })
    return rows


__all__ = ["DEFAULT_TP_BATCH_SIZES", "gather_points", "merge_rank_points", "time_tensor_parallel"]
