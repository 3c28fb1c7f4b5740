"""Capture code that holds collectives (an NCCL all-reduce) into a CUDA graph, on every rank at once.

A graph with an NCCL kernel in it is only useful if every rank captured its twin, and replaying it
is itself a collective. `capture_collective` checks the rules first, on every rank, and says which one
is broken in a `CaptureError` (causes in `graphlab.capture.diagnose`):

1. `nccl_lazy_init`: the NCCL communicator must exist before capture (`init_distributed` creates it
   eagerly with `device_id`);
2. `collective_not_warmed`: the collective must have run on the capture stream first (warmup_calls >= 1);
3. `rank_mismatch`: every rank captures the same shapes (pad to one bucket: `agree_bucket`);
4. then a barrier, the capture itself (`gl.capture`, on this rank's GPU and side stream), and
5. `rank_capture_failed`: if any rank failed, every rank releases its graph and raises, naming it.

    # under torchrun, on every rank
    >>> ctx = init_distributed()
    >>> layer = shard_gpt_layer(dense_gpt_layer(), rank=ctx.rank, world_size=ctx.world_size, device=ctx.device)
    >>> cg = capture_collective(layer, x, ctx=ctx)          # the all-reduces are inside the graph
    >>> y = cg(new_x)                                        # every rank replays, in step

The rules themselves (`RULES`, `collective_rules`, `rule_error`) are pure and live in
`graphlab.distributed.rules`; this module checks them across ranks and captures.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

import torch

from graphlab.capture import api as capture_module
from graphlab.capture.options import CaptureOptions
from graphlab.capture.tensors import flatten
from graphlab.distributed import tensor_parallel as tp
from graphlab.distributed.comm import DistContext, barrier, current_context, gather_objects
from graphlab.distributed.rules import rule_error
from graphlab.errors import CaptureError, DistributedError


def _shapes(inputs: tuple[Any, ...]) -> list[str]:
    return [f"{path}:{tuple(t.shape)}:{t.dtype}" if isinstance(t, torch.Tensor) else f"{path}:{t!r}"
            for path, t in flatten(inputs)]


def check_rules(inputs: tuple[Any, ...], ctx: DistContext, *, warmup_calls: int,
                require_eager_communicator: bool = True) -> None:
    """Check rules 1-3 on this rank, then agree with every rank; raise the first broken rule (same on all ranks)."""
    mine: list[tuple[str, str]] = []
    if require_eager_communicator and ctx.backend == "nccl" and not ctx.eager_communicator:
        mine.append(("nccl_lazy_init", f"rank {ctx.rank}: the NCCL communicator was not created eagerly "
                                       "(init_process_group was called without device_id)"))
    if warmup_calls < 1:
        mine.append(("collective_not_warmed", f"rank {ctx.rank}: the collective was not warmed up "
                                              f"(warmup_calls={warmup_calls})"))
    everyone = gather_objects({"problems": mine, "shapes": _shapes(inputs)}, ctx)
    for cause in ("nccl_lazy_init", "collective_not_warmed"):
        found = [text for rank_info in everyone for key, text in rank_info["problems"] if key == cause]
        if found:
            raise rule_error(cause, "; ".join(found))
    shapes = [info["shapes"] for info in everyone]
    if any(s != shapes[0] for s in shapes):
        differing = ", ".join(f"rank {r}: {s}" for r, s in enumerate(shapes) if s != shapes[0])
        raise rule_error("rank_mismatch", f"ranks disagree on the capture shapes: rank 0: {shapes[0]}; {differing}")


def capture_collective(fn: Callable[..., Any], *example_inputs: Any, ctx: DistContext | None = None,
                       options: CaptureOptions = CaptureOptions(), name: str | None = None,
                       require_eager_communicator: bool = True) -> Any:
    """Capture `fn(*example_inputs)`, collectives included, on every rank; return this rank's `CapturedGraph`.

    Call it on every rank with the same shapes (pad to `agree_bucket(...).bucket` first). `options` are
    `gl.capture`'s (`CaptureOptions`: warm-up calls, pool, grad mode, ...); with NCCL the device defaults to
    the rank's own.

    Raises:
        CaptureError: a rule is broken (the cause says which, on every rank), or the capture failed on
            some rank (`rank_capture_failed` elsewhere, the real cause on that rank).
        DistributedError: no process group (call `init_distributed()` first).
    """
    ctx = ctx or current_context()
    check_rules(example_inputs, ctx, warmup_calls=options.warmup_calls,
                require_eager_communicator=require_eager_communicator)
    if ctx.backend == "nccl" and options.device is None:
        options = dataclasses.replace(options, device=ctx.device)
    barrier(ctx)
    cg, failure = None, None
    try:
        cg = capture_module.capture_graph(fn, example_inputs, options, name=name or f"rank{ctx.rank}")
    except CaptureError as exc:
        failure = exc
    outcomes = gather_objects(None if failure is None else f"{failure.cause}: {failure}"[:400], ctx)
    failed = {rank: text for rank, text in enumerate(outcomes) if text is not None}
    if failure is not None:
        raise failure
    if failed:
        if cg is not None:
            cg.reset()
        listing = "; ".join(f"rank {rank}: {text}" for rank, text in failed.items())
        raise rule_error("rank_capture_failed", f"capture failed on rank(s) {', '.join(map(str, failed))} ({listing})")
    return cg


def check_against_dense(batch_size: int = 2, *, ctx: DistContext | None = None, width: int = 256, heads: int = 8,
                        seq_len: int = 32, keep: bool = False) -> dict[str, Any]:
    """The tensor-parallel GPT layer on this rank vs the dense layer: eager and captured, max abs error.

    Every rank builds the same dense layer and input (fixed seeds), cuts its shard, runs it eagerly and
    as a graph with the all-reduces inside, and compares both with the dense output.
    """
    ctx = ctx or current_context()
    if ctx.backend != "nccl":
        raise DistributedError("check_against_dense captures a graph: it needs the nccl backend on a GPU")
    dense = tp.dense_gpt_layer(width, heads, device=ctx.device)
    layer = tp.shard_gpt_layer(dense, rank=ctx.rank, world_size=ctx.world_size, device=ctx.device)
    x = tp.make_layer_input(batch_size, width, seq_len, device=ctx.device)
    with torch.no_grad():
        want = dense(x)
        eager_err = float((layer(x) - want).abs().max())
    cg = capture_collective(layer, x, ctx=ctx, name=f"tp_layer_b{batch_size}_rank{ctx.rank}")
    fresh = tp.make_layer_input(batch_size, width, seq_len, device=ctx.device, seed=1)
    with torch.no_grad():
        want_fresh = dense(fresh)
    got = cg(fresh)
    torch.cuda.synchronize(ctx.device)
    graph = cg.graph
    nccl = [n.name for n in graph.kernels() if n.family == "NCCL"]
    result = {"batch_size": batch_size, "rank": ctx.rank, "world_size": ctx.world_size,
              "device": str(ctx.device), "max_abs_err": eager_err,
              "graph_max_abs_err": float((got - want_fresh).abs().max()),
              "count_by_kind": graph.count_by_kind(), "nccl_kernels": nccl}
    if keep:
        result["captured"] = cg
    else:
        cg.reset()
    return result


__all__ = ["capture_collective", "check_against_dense", "check_rules"]
