"""Multi-GPU on real GPUs: replicas in one process, and collectives captured in graphs under torchrun.

World size: $GRAPHLAB_MULTIGPU_NPROC (default 1; "all" = every visible GPU). On one H200 the torchrun
tests run at world size 1: NCCL records no kernel for a one-rank all-reduce (seen by the multigpu
probe), so there they prove the capture path and the tensor-parallel maths, and at world size >= 2
they also require the NCCL kernel inside every rank's graph. About 40 s on one H200.
"""
from __future__ import annotations

import json
import os

import pytest
import torch

from graphlab.distributed.launch import run_torchrun

pytestmark = pytest.mark.gpu
WORKER = os.path.join(os.path.dirname(__file__), "multigpu_worker.py")


def _nproc() -> int:
    wanted = os.environ.get("GRAPHLAB_MULTIGPU_NPROC", "1")
    count = torch.cuda.device_count()
    n = count if wanted == "all" else int(wanted)
    if n > count:
        pytest.skip(f"GRAPHLAB_MULTIGPU_NPROC={n} but only {count} GPU(s) here")
    return n


def _launch(mode: str, tmp_path, nproc: int) -> list[dict]:
    result = run_torchrun([WORKER, mode, str(tmp_path)], nproc=nproc, timeout_s=75, echo=False)
    files = [tmp_path / f"{mode}_rank{r}.json" for r in range(nproc)]
    missing = [f.name for f in files if not f.is_file()]
    assert not missing, f"torchrun rc={result.returncode} timed_out={result.timed_out}\n{result.output[-4000:]}"
    assert not result.timed_out, "the job wrote its results but did not exit (teardown): " + result.output[-2000:]
    return [json.loads(f.read_text()) for f in files]


def test_collectives_are_captured_on_every_rank_and_match_the_dense_layer(tmp_path):
    nproc = _nproc()
    ranks = _launch("main", tmp_path, nproc)
    for r in ranks:
        assert r["world_size"] == nproc and r["device"] == f"cuda:{r['rank']}" and r["eager_communicator"]
        assert r["replays"] == [[nproc * v + 1 for v in (k, k + 1, k + 2)] for k in (1.0, 5.0)]
        if nproc > 1:  # the all-reduce is a kernel inside the graph
            assert r["allreduce_nccl_kernels"], r
        else:  # one rank: NCCL launches nothing; the graph holds x*1 and +1 only
            assert r["allreduce_nccl_kernels"] == [] and r["allreduce_kernels"] == 2
        for point in r["tp"]:
            assert point["max_abs_err"] < 1e-4 and point["graph_max_abs_err"] < 1e-4, point
            assert (len(point["nccl_kernels"]) >= 2) if nproc > 1 else point["nccl_kernels"] == []


def test_a_lazy_communicator_is_refused_before_capture_on_every_rank(tmp_path):
    for r in _launch("lazy", tmp_path, _nproc()):
        assert r["eager_communicator"] is False
        assert r["refused"]["cause"] == "nccl_lazy_init" and "device_id" in r["refused"]["message"]


def test_replicas_serve_from_every_gpu_and_return_on_the_callers_device():
    import graphlab as gl
    from graphlab.zoo import get_model

    zoo = get_model("mlp")
    model = zoo.build(device="cuda:0")
    devices = list(range(torch.cuda.device_count()))
    x8 = zoo.make_inputs(8, device="cuda:0")[0]
    x = x8[:5].clone()
    with torch.no_grad():
        want = model(x)
        with gl.replicate(model, devices=devices, buckets=[1, 2, 4, 8], example_inputs=(x,), progress=False) as reps:
            assert torch.allclose(reps(x), want, atol=1e-5) and reps(x).device == x.device
            on_cpu = reps(x.cpu())
            assert on_cpu.device.type == "cpu" and torch.allclose(on_cpu, want.cpu(), atol=1e-5)
            outs = reps.map([(x8[:n],) for n in (1, 2, 3, 4, 5, 6, 7, 8)])
            assert [o.shape[0] for o in outs] == [1, 2, 3, 4, 5, 6, 7, 8]
            assert torch.allclose(outs[4], want, atol=1e-5)
            assert torch.allclose(reps.split(x), want, atol=1e-5)
            stats = reps.stats()
            assert stats.requests == 11 + len(devices) and all(r.errors == 0 for r in stats.replicas)
            assert all(c.stats().fallbacks == 0 for c in reps.caches)
            if len(devices) > 1:
                assert all(r.requests > 0 for r in stats.replicas)


def test_two_replicas_on_one_gpu_each_get_their_own_stream_and_thread():
    from graphlab.distributed.replicas import Replicas

    model = torch.nn.Linear(64, 64).cuda().eval()
    x = torch.randn(4, 64, device="cuda")
    with torch.no_grad(), Replicas(model, [0, 0], buckets=[4]) as reps:
        reps.warm_up(x, progress=False)
        outs = [f.result() for f in [reps.submit(x) for _ in range(16)]]
        assert all(torch.allclose(o, model(x), atol=1e-5) for o in outs)
        counts = [r.requests for r in reps.stats().replicas]
        assert sum(counts) == 16 and min(counts) > 0, counts
