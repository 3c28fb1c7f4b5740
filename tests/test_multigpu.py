"""Multi-GPU without a GPU: bucket agreement, replica dispatch (fake devices), rules, recordings, launching.

The gloo tests (two real processes) are in test_multigpu_gloo.py; the GPU ones in tests/gpu/.
"""
from __future__ import annotations

import os
import threading
import time

import pytest
import torch
from multigpu_synthetic import write_multigpu

import graphlab as gl
from graphlab.graph.kernel_names import describe_kernel
from graphlab.graph.model import CudaGraph, Node, NodeKind
from graphlab.recordings import Recording
from graphlab.errors import CaptureError, DistributedError, RecordingError
from graphlab.capture import diagnose as dg
from graphlab.cache.buckets import smallest_bucket
from graphlab.distributed.rules import BucketAgreement, common_bucket, rule_error
from graphlab.distributed.launch import launch_command, path_free, run_torchrun, torchrun_argv
from graphlab.distributed.results import (MultiGpuRecording, load_multigpu, machine_slug, multigpu_recordings,
                                          split_machine_slug)
from graphlab.studies.multigpu_timing import merge_rank_points
from graphlab.distributed.replicas import Replicas, normalize_devices, replicate


# -- bucket agreement (pure) ----------------------------------------------------------------------------
def test_every_rank_pads_to_the_bucket_of_the_largest_local_size():
    agreement = common_bucket([3, 7, 1], [1, 2, 4, 8, 16])
    assert (agreement.global_size, agreement.bucket, agreement.padding) == (7, 8, (5, 1, 7))
    assert agreement.pad_waste == pytest.approx(13 / 24)
    assert [r["padding"] for r in agreement.rows()] == [5, 1, 7]
    assert "every rank replays bucket 8" in str(agreement)


def test_above_the_largest_bucket_every_rank_runs_eager_together():
    agreement = common_bucket([3, 40], [1, 2, 4, 8, 16])
    assert agreement.bucket is None and agreement.padding == (0, 0) and "eager" in str(agreement)


def test_the_common_bucket_and_bad_input():
    assert smallest_bucket(5, [8, 1, 4]) == 8 and smallest_bucket(0, [1]) == 1 and smallest_bucket(9, [8]) is None
    assert common_bucket([0], [1]).bucket == 1
    with pytest.raises(DistributedError, match="negative"):
        common_bucket([3, -1], [1])
    with pytest.raises(DistributedError, match="at least one rank"):
        common_bucket([], [1])
    assert isinstance(gl.common_bucket([1], [1]), BucketAgreement)


# -- machines and recordings ------------------------------------------------------------------------------
def test_machine_folder_names():
    assert machine_slug("NVIDIA H200", 1) == "h200" and machine_slug("NVIDIA H200", 4) == "h200x4"
    assert split_machine_slug("h200x2") == ("h200", 2) and split_machine_slug("h200") == ("h200", 1)


def test_no_recording_is_said_plainly_and_loading_names_the_command(tmp_path):
    overview = multigpu_recordings("h200", root=tmp_path)
    assert "no multi-GPU recording" in str(overview) and "graphlab record --models multigpu" in str(overview)
    with pytest.raises(RecordingError, match="graphlab record --models multigpu"):
        overview.largest()
    with pytest.raises(RecordingError, match="graphlab record --models multigpu"):
        gl.load(MultiGpuRecording, gpu="h200", root=tmp_path)


def test_world_size_one_recording_says_what_it_cannot_show(tmp_path):
    write_multigpu(tmp_path, 1, nccl_kernels=0)
    overview = multigpu_recordings("h200", root=tmp_path)
    assert not overview.multi_gpu and "No recording from a machine with several GPUs yet" in str(overview)
    rec = overview.largest()
    assert (rec.machine, rec.world_size) == ("h200", 1)
    assert "no kernel" in rec.world_size_note() and "cannot show communication" in rec.world_size_note()
    assert rec.graph_batch_sizes() == [1, 16] and rec.ranks() == [0]


def test_largest_machine_wins_and_its_graphs_carry_rank_and_device(tmp_path):
    write_multigpu(tmp_path, 1)
    write_multigpu(tmp_path, 2)
    overview = multigpu_recordings("h200", root=tmp_path)
    assert [r["machine"] for r in overview.rows()] == ["h200", "h200x2"] and len(overview.multi_gpu) == 1
    rec = overview.largest()
    assert rec.world_size == 2 and rec.ranks() == [0, 1]
    assert gl.load(MultiGpuRecording, gpu="h200x2", root=tmp_path) == rec
    assert gl.load(MultiGpuRecording, gpu="h200", root=tmp_path).world_size == 1
    graph = rec.graph("tp", rank=1, batch_size=16)
    assert graph.metadata == {"rank": 1, "world_size": 2, "device": "cuda:1"}
    assert rec.graph("allreduce", rank=0).metadata["device"] == "cuda:0"
    rows = rec.tensor_parallel_rows()
    assert [r["batch_size"] for r in rows] == [1, 16] and {r["world_size"] for r in rows} == {2}
    assert {r["device"] for r in rec.launch_rows()} == {"cuda:0", "cuda:1"}
    assert rec.replica_rows()[0]["replicas_on"] == "cuda:0, cuda:1"
    assert "2 ranks" in rec.world_size_note()
    with pytest.raises(RecordingError, match="no graph"):
        rec.graph("tp", rank=5, batch_size=1)


def test_recorded_mode_replica_throughput_comes_from_the_recording(tmp_path, monkeypatch):
    write_multigpu(tmp_path, 2)
    monkeypatch.setenv("GRAPHLAB_RECORDINGS", str(tmp_path))
    gl.set_mode("recorded")
    try:
        from graphlab.studies.replica_throughput import replica_throughput

        result = replica_throughput()
    finally:
        import graphlab.mode

        graphlab.mode._current = None
    assert result.rows()[0]["replicas_req_s"] == 150.0 and result.source == "recorded on NVIDIA H200 on 2026-01-01"
    assert "replicas on cuda:0 and cuda:1" in str(result)
    # asked for what the recording does not hold: it says so and shows what it has
    assert "asked for batch sizes 1, 8 and 32, the recording has 8" in str(result)


def test_graph_metadata_round_trips_and_stays_out_of_plain_dumps(tmp_path):
    write_multigpu(tmp_path, 2)
    rec = Recording.open(tmp_path / "h200x2" / "multigpu")
    graph = rec.graph("tp_b1_rank1")
    again = CudaGraph.from_json(graph.to_json())
    assert again.metadata == graph.metadata == {"rank": 1, "world_size": 2, "device": "cuda:1"}
    plain = gl.parse_dot((tmp_path / "h200x2" / "multigpu" / "tp_b1_rank1.dot").read_text())
    assert plain.metadata == {} and "metadata" not in plain.to_dict()


def test_load_multigpu_is_a_deprecated_alias_of_the_largest_recording(tmp_path):
    write_multigpu(tmp_path, 1)
    write_multigpu(tmp_path, 2)
    with pytest.warns(DeprecationWarning, match=r"gl.multigpu_recordings\(\).largest\(\)"):
        rec = load_multigpu("h200", root=tmp_path)
    assert rec == multigpu_recordings("h200", root=tmp_path).largest() and rec.world_size == 2


def test_inspector_summary_names_rank_and_device(tmp_path):
    write_multigpu(tmp_path, 2)
    graph = multigpu_recordings("h200", root=tmp_path).largest().graph("tp", rank=1, batch_size=1)
    rows = dict(gl.inspect(graph).summary["rows"])
    assert rows["rank"] == "1 of 2" and rows["device"] == "cuda:1"


# -- NCCL kernels: family and colour (name strings until a real NCCL dump is committed) ---------------------
@pytest.mark.parametrize("name, short", [
    ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "all_reduce (NCCL)"),
    ("ncclDevKernel_AllGather_RING_LL", "all_gather (NCCL)"),
])
def test_nccl_kernels_are_their_own_family_with_their_own_colour(name, short):
    from graphlab.viz.style import FAMILY_COLORS, fill_color

    described = describe_kernel(name)
    assert (described.family, described.short_name) == ("NCCL", short)
    node = Node(id="graph_1_node_0", graph_id="graph_1", index=0, kind=NodeKind.KERNEL, name=name, family="NCCL")
    colour = fill_color(node)
    assert colour == FAMILY_COLORS["NCCL"]
    assert list(FAMILY_COLORS.values()).count(colour) == 1


# -- the rules, as CaptureErrors -------------------------------------------------------------------------
# what the H200 printed (multigpu probe, torchrun --nproc-per-node 1, init_process_group without device_id)
NCCL_LAZY = ("NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:93, unhandled cuda error (run "
             "with NCCL_DEBUG=INFO for details), NCCL version 2.28.9\nncclUnhandledCudaError: Call to CUDA "
             "function failed.\nLast error:\nCuda failure 'operation not permitted when stream is capturing'")


def test_a_lazy_communicator_failure_is_not_mistaken_for_a_host_sync():
    cause, _ = dg.classify(NCCL_LAZY, "dist.all_reduce(y)")
    assert cause.key == "nccl_lazy_init" and NCCL_LAZY.startswith(dg.RECORDED_MESSAGES["nccl_lazy_init"])
    assert dg.classify(dg.RECORDED_MESSAGES["host_sync"], "x.item()")[0].key == "host_sync"  # unchanged


@pytest.mark.parametrize("cause, detail", [
    ("nccl_lazy_init", "rank 0: the NCCL communicator was not created eagerly"),
    ("collective_not_warmed", "rank 1: the collective was not warmed up (warmup_calls=0)"),
    ("rank_mismatch", "ranks disagree on the capture shapes: rank 0: [8]; rank 1: [4]"),
    ("rank_capture_failed", "capture failed on rank(s) 1 (rank 1: host_sync: ...)"),
])
def test_each_rule_has_a_capture_error_with_its_fix(cause, detail):
    err = rule_error(cause, detail)
    assert isinstance(err, CaptureError) and err.cause == cause
    assert detail in str(err) and "Fix:" in str(err)
    assert dg.classify(str(err))[0].key == cause  # the message classifies back to its own cause
    assert cause in {c.key for c in dg.catalogue()}


# -- replicas with fake devices -----------------------------------------------------------------------------
class SlowDouble:
    """A stand-in cache: doubles its input after `delay_s`, records the thread and device it ran on."""

    def __init__(self, model, *, device, delay_s=0.0, fail_on=None, log=None):
        self.device, self.delay_s, self.fail_on, self.log = device, delay_s, fail_on, log if log is not None else []

    def __call__(self, x):
        if self.fail_on is not None and x.shape[0] == self.fail_on:
            raise ValueError(f"no batch of {self.fail_on} here")
        time.sleep(self.delay_s)
        self.log.append((threading.current_thread().name, str(x.device)))
        return x * 2


def _factory(**kwargs):
    return lambda model, *, device, **_: SlowDouble(model, device=device, **kwargs)


def test_calls_are_spread_over_replicas_and_run_at_the_same_time():
    log: list = []
    with Replicas(torch.nn.Identity(), ["cpu", "cpu"], cache_factory=_factory(delay_s=0.15, log=log)) as reps:
        t0 = time.perf_counter()
        outs = reps.map([(torch.full((2,), float(i)),) for i in range(4)])
        wall = time.perf_counter() - t0
        stats = reps.stats()
    assert [o.tolist() for o in outs] == [[0.0, 0.0], [2.0, 2.0], [4.0, 4.0], [6.0, 6.0]]  # in order
    assert [r.requests for r in stats.replicas] == [2, 2] and stats.requests == 4
    assert len({name for name, _ in log}) == 2  # one worker thread per replica
    assert wall < 0.5  # 4 x 0.15 s one after another would be 0.6 s
    assert "requests" in str(stats)


def test_results_come_back_on_the_callers_device_and_errors_through_the_future():
    with Replicas(torch.nn.Identity(), ["cpu"], cache_factory=_factory(fail_on=3)) as reps:
        assert reps(torch.ones(2)).device.type == "cpu"
        with pytest.raises(ValueError, match="no batch of 3"):
            reps(torch.ones(3))
        assert reps.stats().replicas[0].errors == 1
        assert reps(torch.ones(1)).tolist() == [2.0]  # the worker survived the error


def test_split_cuts_a_batch_over_replicas_and_joins_it():
    with Replicas(torch.nn.Identity(), ["cpu", "cpu", "cpu"], cache_factory=_factory()) as reps:
        x = torch.arange(7.0)
        assert reps.split(x).tolist() == (x * 2).tolist()
        assert sorted(r.rows for r in reps.stats().replicas) == [2, 2, 3]


def test_replicas_with_the_eager_graph_cache_match_the_model():
    pytest.importorskip("graphlab.cache.graph_cache")
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU(), torch.nn.Linear(8, 3)).eval()
    x = torch.randn(5, 8)
    with torch.no_grad(), replicate(model, devices=["cpu", "cpu"], backend="eager", buckets=[1, 2, 4, 8],
                                    example_inputs=(x,), progress=False) as reps:
        want = model(x)
        assert torch.allclose(reps(x), want)
        assert [tuple(o.shape) for o in reps.map([(x[:n],) for n in (1, 3, 5)])] == [(1, 3), (3, 3), (5, 3)]
        assert all(c.stats().fallbacks == 0 for c in reps.caches)  # the caller's no_grad reached the workers
    assert model[0].weight.device.type == "cpu"  # the original model stays where it was


def test_device_errors_are_one_clear_line():
    with pytest.raises(DistributedError, match="does not exist"):
        normalize_devices(["cuda:0"])
    with pytest.raises(DistributedError, match="no CUDA GPU here"):
        normalize_devices("all")
    with pytest.raises(DistributedError, match="copy_outputs=False"):
        Replicas(torch.nn.Identity(), ["cpu"], cache_factory=_factory(), copy_outputs=False)
    with pytest.raises(DistributedError, match="closed"):
        reps = Replicas(torch.nn.Identity(), ["cpu"], cache_factory=_factory())
        reps.close()
        reps(torch.ones(1))


# -- rows merged across ranks; launching torchrun -------------------------------------------------------------
def test_the_layer_latency_is_the_slowest_ranks():
    rank = {"batch_size": 4, "world_size": 2, "eager_p50_us": 10.0, "graph_p50_us": 5.0, "max_abs_err": 1e-6,
            "graph_max_abs_err": 2e-6, "nccl_kernels": 2}
    rows = merge_rank_points([[{**rank, "rank": 0}], [{**rank, "rank": 1, "eager_p50_us": 12.0, "graph_p50_us": 6.0}]])
    assert len(rows) == 1 and (rows[0]["eager_p50_us"], rows[0]["graph_p50_us"], rows[0]["speedup"]) == (12.0, 6.0, 2.0)
    assert rows[0]["max_abs_err"] == 2e-6 and [p["rank"] for p in rows[0]["per_rank"]] == [0, 1]


def test_launch_commands_hold_no_absolute_path():
    assert torchrun_argv(["-m", "graphlab", "record"], 2)[-4:] == ["--nproc-per-node=2", "--module", "graphlab",
                                                                   "record"]
    assert path_free(os.path.join(os.getcwd(), "data", "x")) == os.path.join("data", "x")
    assert path_free("/somewhere/else/out") == "out"
    line = launch_command(["-m", "graphlab", "record", "--out", "/abs/out"], 2)
    assert line == "torchrun --nproc-per-node 2 -m graphlab record --out out"
    from graphlab.studies.multigpu import launch_line

    assert "/" not in launch_line(2).replace("--nproc-per-node", "")


def test_run_torchrun_stops_every_worker_on_timeout(tmp_path):
    script = tmp_path / "sleepy.py"
    script.write_text("import os, sys, time\n"
                      f"open({str(tmp_path)!r} + f'/pid{{os.environ[\"RANK\"]}}', 'w').write(str(os.getpid()))\n"
                      "print('started', flush=True)\ntime.sleep(120)\n")
    result = run_torchrun([str(script)], nproc=2, timeout_s=25, echo=False)  # room for a slow start
    assert result.timed_out and not result.ok
    pids = [int((tmp_path / f"pid{r}").read_text()) for r in range(2) if (tmp_path / f"pid{r}").is_file()]
    assert pids, result.output[-2000:]
    time.sleep(0.5)
    alive = [p for p in pids if os.path.exists(f"/proc/{p}") and "zombie" not in _state(p)]
    assert alive == []


def _state(pid: int) -> str:
    try:
        return open(f"/proc/{pid}/status").read().lower()
    except OSError:
        return "zombie"


def test_multigpu_recorder_is_registered():
    from graphlab.studies import multigpu
    from graphlab.studies.record import recorders

    assert recorders()["multigpu"] is multigpu and callable(multigpu.record)


def test_bench_prints_the_tensor_parallel_table():
    import importlib.util

    from conftest import REPO

    spec = importlib.util.spec_from_file_location("bench_multigpu", REPO / "bench" / "bench_multigpu.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    point = {"batch_size": 1, "world_size": 1, "rank": 0, "device": "cuda:0", "eager_p50_us": 30.0,
             "graph_p50_us": 10.0, "launch_p50_us": 4.5, "max_abs_err": 1e-6, "graph_max_abs_err": 1e-6,
             "nccl_kernels": 0}
    text = bench.tp_table([{"world_size": 1, "rows": merge_rank_points([[point]])}])
    assert "eager vs graph" in text and "3.00" in text and "4.5" in text
