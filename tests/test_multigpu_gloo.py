"""Two real ranks on the CPU (torch.distributed with gloo, spawned by torch.multiprocessing).

One spawn does every check (a process start costs seconds here): bucket agreement across ranks, the
collective-capture rules failing the same way on every rank, a failure on one rank reaching the other,
and the tensor-parallel layers equal to the dense ones.
"""
from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp

WORLD_SIZE = 2


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _expect_error(fn) -> dict:
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the test reads type, cause and message
        return {"type": type(exc).__name__, "cause": getattr(exc, "cause", None), "message": str(exc)}
    return {"type": None}


def _rank_main(rank: int, world_size: int, port: int, out: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world_size),
                      LOCAL_RANK=str(rank))
    from graphlab.errors import CaptureError
    from graphlab.capture import api as capture_module
    from graphlab.distributed import tensor_parallel as tp
    from graphlab.distributed.comm import agree_bucket, gather_ints, global_size, init_distributed, shutdown
    from graphlab.distributed.capture import capture_collective, check_rules
    from graphlab.distributed.rules import rule_error

    ctx = init_distributed("gloo")
    result: dict = {"rank": ctx.rank, "world_size": ctx.world_size, "backend": ctx.backend}
    local = 3 if rank == 0 else 6
    result["gathered"] = gather_ints(local, ctx)
    result["global_size"] = global_size(local, ctx)
    result["bucket"] = agree_bucket(local, [1, 2, 4, 8], ctx).bucket
    # rule: the same shapes on every rank
    x = torch.ones(local, 4)
    result["mismatch"] = _expect_error(lambda: check_rules((x,), ctx, warmup_calls=3))
    result["agree"] = _expect_error(lambda: check_rules((torch.ones(8, 4),), ctx, warmup_calls=3))
    result["nowarm"] = _expect_error(lambda: check_rules((torch.ones(8, 4),), ctx, warmup_calls=0 if rank else 3))

    # a capture that fails on rank 1 only: rank 0 must not keep a graph that would hang at replay
    class FakeGraph:
        reset_called = False

        def reset(self):
            FakeGraph.reset_called = True

    def fake_capture(fn, inputs, options, name=None):
        if ctx.rank == 1:
            raise rule_error("collective_not_warmed", "rank 1 failed on purpose")
        return FakeGraph()

    real = capture_module.capture_graph
    capture_module.capture_graph = fake_capture
    try:
        result["one_rank_fails"] = _expect_error(lambda: capture_collective(lambda t: t, torch.ones(2), ctx=ctx))
        result["released_on_rank0"] = FakeGraph.reset_called
    finally:
        capture_module.capture_graph = real
    assert issubclass(CaptureError, Exception)

    # tensor parallel == dense, with real gloo all-reduces
    with torch.no_grad():
        dense = tp.dense_gpt_layer(64, 4, ffn=128)
        layer = tp.shard_gpt_layer(dense, rank=ctx.rank, world_size=ctx.world_size)
        h = tp.make_layer_input(3, 64, 8)
        result["layer_err"] = float((layer(h) - dense(h)).abs().max())
        torch.manual_seed(0)  # the same dense weights on every rank
        fc1, fc2 = torch.nn.Linear(64, 128), torch.nn.Linear(128, 64)
        mlp = tp.shard_mlp(fc1, fc2, rank=ctx.rank, world_size=ctx.world_size)
        want = fc2(torch.nn.functional.gelu(fc1(h)))
        result["mlp_err"] = float((mlp(h) - want).abs().max())
        result["local_heads"] = layer.attention.local_heads
        result["fc1_rows"] = int(layer.mlp.fc1.weight.shape[0])
    shutdown(ctx)
    Path(out, f"rank{rank}.json").write_text(json.dumps(result))


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    out = tmp_path_factory.mktemp("gloo")
    mp.spawn(_rank_main, args=(WORLD_SIZE, _free_port(), str(out)), nprocs=WORLD_SIZE, join=True)
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(WORLD_SIZE)]


def test_every_rank_agrees_on_the_bucket_of_the_largest_size(ranks):
    for r in ranks:
        assert (r["backend"], r["world_size"]) == ("gloo", 2)
        assert r["gathered"] == [3, 6] and r["global_size"] == 6 and r["bucket"] == 8


def test_ranks_with_different_shapes_get_the_same_rank_mismatch_error(ranks):
    for r in ranks:
        assert r["mismatch"]["type"] == "CaptureError" and r["mismatch"]["cause"] == "rank_mismatch"
        assert "rank 1" in r["mismatch"]["message"] and "pad" in r["mismatch"]["message"].lower()
        assert r["agree"]["type"] is None


def test_a_rank_that_skipped_warm_up_stops_every_rank(ranks):
    for r in ranks:  # only rank 1 broke the rule; both hear it, with the rank named
        assert r["nowarm"]["cause"] == "collective_not_warmed" and "rank 1" in r["nowarm"]["message"]


def test_a_capture_failing_on_one_rank_fails_everywhere_and_releases_the_twins(ranks):
    rank0, rank1 = ranks
    assert rank1["one_rank_fails"]["cause"] == "collective_not_warmed"
    assert rank0["one_rank_fails"]["cause"] == "rank_capture_failed" and "rank(s) 1" in rank0["one_rank_fails"]["message"]
    assert rank0["released_on_rank0"] is True


def test_tensor_parallel_layers_equal_the_dense_ones(ranks):
    for r in ranks:
        assert r["layer_err"] < 1e-5 and r["mlp_err"] < 1e-5
        assert (r["local_heads"], r["fc1_rows"]) == (2, 64)


def test_a_layer_that_does_not_split_is_one_clear_error():
    from graphlab.errors import DistributedError
    from graphlab.distributed import tensor_parallel as tp

    with pytest.raises(DistributedError, match="heads .* not divisible by the world size 3"):
        tp.shard_gpt_layer(tp.dense_gpt_layer(64, 4), rank=0, world_size=3)
    with pytest.raises(DistributedError, match="outside the world"):
        tp.shard_gpt_layer(tp.dense_gpt_layer(64, 4), rank=2, world_size=2)


def test_without_a_process_group_the_sharded_world_of_one_is_the_dense_layer():
    from graphlab.distributed import tensor_parallel as tp

    with torch.no_grad():
        dense = tp.dense_gpt_layer(64, 4)
        x = tp.make_layer_input(2, 64, 8)
        assert torch.allclose(tp.shard_gpt_layer(dense, rank=0, world_size=1)(x), dense(x), atol=1e-6)


def test_init_distributed_outside_torchrun_says_how_to_launch(monkeypatch):
    from graphlab.errors import DistributedError
    from graphlab.distributed.comm import init_distributed

    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(DistributedError, match="torchrun --nproc-per-node"):
        init_distributed("gloo")
