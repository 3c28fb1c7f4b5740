"""The dense-sweep recorder on CPU, with a stand-in GPU (tests/test_timing_cpu.py): structure only.

No number here is a measurement; the real recording is made on the H200 by `graphlab record --models dense`.
"""
from __future__ import annotations

import dataclasses
import types

import pytest

torch = pytest.importorskip("torch")


@pytest.fixture
def cpu_zoo(monkeypatch):
    from test_timing_cpu import install_fake_gpu

    import graphlab.studies.dense as dense
    import graphlab.zoo

    install_fake_gpu(monkeypatch)

    def stand_in(name, width):
        net = torch.nn.Sequential(torch.nn.Linear(width, 4)).eval()
        return types.SimpleNamespace(
            name=name, needs=(), available=lambda: True, build=lambda device="cuda": net,
            make_inputs=lambda b, device="cuda", seed=0: (
                torch.randn(b, width, generator=torch.Generator().manual_seed(seed + 1)),))

    for name in list(graphlab.zoo.ZOO):
        monkeypatch.setitem(graphlab.zoo.ZOO, name, stand_in(name, 8))
    emb = torch.nn.Embedding(512, 8)
    gpt = types.SimpleNamespace(name="gpt", needs=(), available=lambda: True,
                                build=lambda device="cuda": (lambda ids: emb(ids).sum(1)),
                                make_inputs=None)
    monkeypatch.setitem(graphlab.zoo.ZOO, "gpt", gpt)
    monkeypatch.setattr(dense, "BATCH_SIZES", (1, 2, 3))
    monkeypatch.setattr(dense, "SEQ_LENS", (8, 16))
    monkeypatch.setattr(dense, "SEQ_BATCH_SIZES", (1, 4))
    monkeypatch.setattr(dense, "_FAST", dataclasses.replace(dense._FAST, pairs=2, block_ms=0.05, warmup_calls=1,
                                                            warmup_max_ms=0.0))
    monkeypatch.setattr(dense, "gpt_ids", lambda b, s, seed=0, device="cuda": (
        torch.randint(1, 512, (b, s), generator=torch.Generator().manual_seed(seed)),))
    # the dense sweep of "gpt" uses the zoo's make_inputs: give the stand-in one
    gpt.make_inputs = lambda b, device="cuda", seed=0: dense.gpt_ids(b, 64, seed)
    return dense


def test_dense_recording_has_a_sweep_per_model_and_the_seq_sweep(cpu_zoo, tmp_path, monkeypatch):
    from graphlab.recordings import load_recording
    from graphlab.timing.results import Sweep

    provenance = {"gpu": "Test GPU", "driver": "1", "torch": "9.9", "cuda": "1", "graphlab_version": "0",
                  "git_commit": "x", "command": "test", "date": "2026-01-01T00:00:00Z"}
    folder = cpu_zoo.record(tmp_path, provenance)
    assert folder == tmp_path / "test-gpu" / "dense"
    rec = load_recording("dense", root=tmp_path)
    from graphlab.zoo import ZOO

    for name in ZOO:
        sweep = Sweep.from_dict(rec.results(name))
        assert sweep.batch_sizes == [1, 2, 3] and all(sweep.is_paired(b) for b in sweep.batch_sizes)
        graph = sweep.point(2, "graph")
        assert graph.capture_ms == 1.5 and graph.pool_bytes == 2 << 20 and graph.graph_exec_bytes == 0
        assert len(graph.block_p50_us) == 2 and sweep.conditions["pairs"] == 2
    seq = Sweep.from_dict(rec.results("gpt_seq"))
    assert seq.seq_lens == [8, 16] and seq.batch_sizes == [1, 4]
    assert seq.at_seq(16).point(4, "eager").seq_len == 16
    timings = rec.results("dense_timings")
    assert set(timings["seconds_per_part"]) == {*ZOO, "gpt_seq"}


def test_gpt_ids_refuse_a_sequence_the_model_cannot_take():
    from graphlab.errors import GraphlabError
    from graphlab.studies.dense import gpt_ids

    with pytest.raises(GraphlabError, match="1 to 64 tokens"):
        gpt_ids(1, 65, device="cpu")
    (ids,) = gpt_ids(2, 16, device="cpu")
    assert tuple(ids.shape) == (2, 16) and int(ids.min()) >= 1
