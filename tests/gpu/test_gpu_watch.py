"""gl.watch on a real GPU: torch.compile(mode="reduce-overhead") on the zoo GPT (CUDAGraph Trees), make_graphed_callables
and a torch.cuda.graph block are seen, attributed, dumped and left working; nothing is patched after; replay speed
and outputs are unchanged. About a minute on an H200 (estimated from the probe: the GPT compiles dominate)."""
from __future__ import annotations

import inspect

import pytest

torch = pytest.importorskip("torch")

import graphlab as gl  # noqa: E402
from graphlab.watch.api import is_patched  # noqa: E402
from graphlab.studies.watch_examples import batch_of, run_example  # noqa: E402
from graphlab.watch.frames import COMPILE_TREES, GRAPHLAB, MAKE_GRAPHED_CALLABLES, TORCH_CUDA_GRAPH  # noqa: E402
from graphlab.watch.patch import PATCHED  # noqa: E402

pytestmark = pytest.mark.gpu
BATCH_SIZES = (1, 4, 8)


def _entries():
    return {name: vars(torch.cuda.CUDAGraph).get(name) for name in PATCHED}


@pytest.fixture(scope="module")
def compile_example():
    before = _entries()
    example = run_example("compile", BATCH_SIZES)
    assert _entries() == before and not is_patched(torch)
    return example


def test_compile_records_one_graph_per_batch_size_and_replays_after(compile_example):
    ex = compile_example
    print(f"\n[watch] compile example: {ex.facts}\n{ex.seen.summary()}")
    assert {g.library for g in ex.seen} == {COMPILE_TREES}
    recordings = ex.seen.filter(role="recording")
    assert sorted(batch_of(g) for g in recordings) == list(BATCH_SIZES), "one recording per new batch size"
    assert len(ex.seen.filter(role="pool keeper")) <= 1
    for g in recordings:
        assert g.dot is not None and g.kernels and g.kernels > 0, g
        assert g.input_shapes[0] == [batch_of(g), 64] and g.details["static_inputs"] > 0
        assert g.keep_graph_asked is False and g.instantiate_ms is not None
        assert g.user_file.endswith("watch_examples.py") and g.pool_given and not g.stream_is_default
        assert g.pool_reserved_bytes is None or g.pool_reserved_bytes > 0
    assert len({tuple(g.pool_id) for g in recordings}) == 1, "CUDAGraph Trees shares one pool"
    for b in BATCH_SIZES:
        calls = [c for c in ex.calls if c["batch_size"] == b]
        assert calls[-1]["new_graphs"] == 0, f"batch {b}: the third call replays"
        assert sum(c["new_graphs"] for c in calls) >= 1
    assert ex.facts["max_abs_err_vs_eager"] < 1e-3
    assert ex.facts["cudagraph_skips"] in (0, None)
    assert len(ex.facts["compile_ids"]) >= 2, "a second batch size recompiles with a dynamic batch dimension"


def test_compile_graphs_compare_with_gl_capture(compile_example):
    ex = compile_example
    for b in BATCH_SIZES:
        d = ex.diff(b)
        ours = ex.reference_graph(b)
        print(f"[watch] batch {b}: torch.compile {ex.recording_for(b).kernels} kernels vs gl.capture "
              f"{len(ours.kernels())}: {d.summary().splitlines()[0]}")
        assert len(ours.kernels()) > 0 and not d.identical  # inductor fuses: never the same kernels as eager
    rows = ex.memory_rows()
    assert [r["batch_size"] for r in rows] == list(BATCH_SIZES)
    assert all(r["capture_pool_bytes"] > 0 for r in rows)
    print(f"[watch] memory: {rows}")


def test_make_graphed_callables_forward_and_backward():
    ex = run_example("make_graphed_callables")
    print(f"\n[watch] make_graphed_callables: {ex.facts}")
    assert [g.library for g in ex.seen] == [MAKE_GRAPHED_CALLABLES] * 2
    assert [g.role for g in ex.seen] == ["forward", "backward"]
    assert ex.seen[0].input_shapes == [[16, 256]] and ex.facts["shared_pool"]
    assert ex.facts["forward_max_abs_err_vs_eager"] < 1e-4 and ex.facts["grad_max_abs_err_vs_eager"] < 1e-3
    assert all(g.kernels > 0 for g in ex.seen)


def test_plain_torch_cuda_graph_block():
    ex = run_example("torch.cuda.graph")
    (g,) = ex.seen
    assert g.library == TORCH_CUDA_GRAPH and g.user_file.endswith("watch_examples.py")
    assert "torch.cuda.graph(g)" in g.user_code
    assert ex.facts["replay_max_abs_err_vs_eager"] < 1e-4 and g.kernels >= 3


def test_user_line_nesting_gl_capture_and_the_class_after():
    x = torch.randn(8, 64, device="cuda")
    before = _entries()
    early = torch.cuda.CUDAGraph()
    side = torch.cuda.Stream()
    with gl.watch() as outer:
        with torch.cuda.graph(early, stream=side):
            (x * 2).sin()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=side):  # this line is the user's line
            y = x.cos() + 1
        line = inspect.currentframe().f_lineno - 2
        with gl.watch() as inner:
            assert "keep_graph" in inspect.signature(torch.cuda.CUDAGraph).parameters
            cg = gl.capture(torch.nn.Linear(64, 64).cuda(), x)
        assert cg.verify(trials=1).passed
    assert _entries() == before and not is_patched(torch)
    assert outer[0].dot is None and "before gl.watch started" in outer[0].dot_error
    assert outer[1].where == f"tests/gpu/test_gpu_watch.py:{line}" and outer[1].library == TORCH_CUDA_GRAPH
    assert [w.library for w in inner] == [GRAPHLAB] and outer[2].library == GRAPHLAB
    x.copy_(torch.randn_like(x))
    g.replay()
    torch.cuda.synchronize()
    assert torch.allclose(y, x.cos() + 1)
    assert outer[1].graph.count_by_kind()["kernel"] == outer[1].kernels  # drawing is tested on CPU (no graphviz here)
    after = torch.cuda.CUDAGraph()
    with torch.cuda.graph(after, stream=side):
        x + 1
    with pytest.raises(RuntimeError, match="keep_graph"):
        after.raw_cuda_graph()  # outside the watch, torch's default again


def test_an_exception_inside_restores_the_real_class():
    before = _entries()
    with pytest.raises(ValueError):
        with gl.watch():
            raise ValueError("boom")
    assert _entries() == before


def test_watch_changes_neither_outputs_nor_replay_speed():
    from graphlab.studies.watch_overhead import measure_watch_overhead

    r = measure_watch_overhead(batch_size=8, pairs=60, progress=False)
    print(f"\n[watch] {r.describe()}")
    assert r.outputs_identical and r.max_abs_err_vs_eager < 1e-3
    assert r.graphs_watched >= 1 and r.graphs_during_timing == 0
    assert 0.95 < r.ratio_p50 < 1.05, r.describe()
