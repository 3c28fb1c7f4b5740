"""Graphs captured one after another on graphlab's side stream must not share a cuBLAS workspace.

Before each capture got its own (graphlab/capture/cublas_workspace.py), two zoo GPT graphs replayed from
two threads on two streams hit "an illegal memory access" on the H200 within a second. A failure
here can take the process down with it: run this file in its own pytest process (scripts/gpu_run.sh does).
"""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import graphlab as gl  # noqa: E402
from graphlab.zoo import get_model  # noqa: E402

pytestmark = pytest.mark.gpu


def test_this_torch_can_clear_its_cublas_workspaces():
    from graphlab.capture.cublas_workspace import workspace_clearer

    assert workspace_clearer() is not None


def _gpt_graphs(count: int) -> tuple[list, list, list]:
    zoo = get_model("gpt")
    torch.manual_seed(0)
    models = [zoo.build(device="cuda") for _ in range(count)]
    inputs = [zoo.make_inputs(1, device="cuda", seed=s)[0] for s in range(4)]
    with torch.no_grad():
        want = [[m(x) for x in inputs] for m in models]
        graphs = [gl.capture(m, inputs[0]) for m in models]
    return graphs, inputs, want


def test_two_graphs_replay_at_once_on_two_streams_and_stay_exact(run_threads):
    graphs, inputs, want = _gpt_graphs(2)
    streams = [torch.cuda.Stream() for _ in graphs]
    errors: list[float] = []

    def serve(k: int) -> None:
        torch.cuda.set_device(0)
        with torch.no_grad(), torch.cuda.stream(streams[k]):
            for i in range(1500):
                y = graphs[k](inputs[i % 4]).clone()
                if i % 100 == 0:
                    streams[k].synchronize()
                    errors.append(float((y - want[k][i % 4]).abs().max()))
            streams[k].synchronize()

    failures = run_threads(serve, range(2), 120)
    assert not failures, failures
    assert len(errors) == 30 and max(errors) < 1e-3


def test_resetting_one_graph_leaves_the_others_on_the_same_stream_intact():
    graphs, inputs, want = _gpt_graphs(3)
    graphs[1].reset()  # on some torch versions this frees the capture stream's cuBLAS workspaces
    torch.cuda.empty_cache()
    junk = [torch.full((1 << 22,), float("nan"), device="cuda") for _ in range(64)]  # reuse freed memory
    with torch.no_grad():
        for k in (0, 2):
            for i in range(4):
                got = graphs[k](inputs[i]).clone()
                assert torch.isfinite(got).all()
                assert float((got - want[k][i]).abs().max()) < 1e-3
    del junk
