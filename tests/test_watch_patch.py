"""gl.watch's patch on CPU: a fake torch whose CUDAGraph behaves like torch 2.8-2.13's (pybind __init__
takes keep_graph, capture_end instantiates and drops the graph unless kept), and the real CPU torch class.
The fake replaces the patch module's `torch` (monkeypatch), as the real one would be there on a GPU."""
from __future__ import annotations

import itertools
import types
from pathlib import Path

import pytest
from conftest import FIXTURES

import graphlab as gl
from graphlab.errors import GraphlabError, WatchUnsupportedError
from graphlab.watch import patch as watch_patch
from graphlab.watch.api import Watch, is_patched
from graphlab.watch.frames import CAPTURE_BEGIN
from graphlab.watch.patch import PATCH, PATCHED, check_supported, pool_size_bytes

DOT = (FIXTURES / "h200" / "models" / "mlp_b1__verbose.dot").read_text()
MiB = 2**20


class FakeCuda:
    """torch.cuda as far as the patch uses it; `reserved` grows when a capture allocates."""

    def __init__(self) -> None:
        self.reserved = 0
        self.default = types.SimpleNamespace(stream_id=0, name="default")
        self.side = types.SimpleNamespace(stream_id=3, name="side")
        self.current = self.default
        self.pools = itertools.count(1)

    def current_device(self) -> int:
        return 0

    def current_stream(self, device=None):
        return self.current

    def default_stream(self, device=None):
        return self.default

    def memory_reserved(self, device=None) -> int:
        return self.reserved

    def memory_snapshot(self, mempool_id=None, include_traces=True):
        assert include_traces is False, "the watch asks for the light snapshot"
        segments = [{"device": 0, "segment_pool_id": (0, 1), "total_size": 2 * MiB},
                    {"device": 0, "segment_pool_id": (0, 1), "total_size": 20 * 2**10},
                    {"device": 0, "segment_pool_id": (0, 0), "total_size": 64 * MiB}]
        return [s for s in segments if mempool_id is None or s["segment_pool_id"] == mempool_id]


def make_fake_torch(keep_graph_param: bool = True):
    cuda = FakeCuda()

    class _CUDAGraph:  # stands in for the pybind base: __new__ ignores arguments, __init__ takes keep_graph
        def __new__(cls, *args, **kwargs):
            return object.__new__(cls)

        def __init__(self, keep_graph=False):
            self.keep = keep_graph
            self.has_graph = self.has_exec = False
            self.instantiations = self.replays = 0
            self._pool = None

        def capture_begin(self, pool=None, capture_error_mode="global"):
            self._pool = pool or (0, next(cuda.pools))

        def capture_end(self):
            if getattr(self, "fail_end", False):
                raise RuntimeError("CUDA error: operation failed due to a previous error during capture")
            self.has_graph = True
            if not self.keep:
                self.instantiate()
                self.has_graph = False

        def instantiate(self):
            self.has_exec = True
            self.instantiations += 1

        def replay(self):
            if not self.has_exec:
                self.instantiate()
            self.replays += 1

        def pool(self):
            return self._pool

        def raw_cuda_graph(self):
            if not self.has_graph:
                raise RuntimeError("You cannot access the raw cudaGraph_t instance unless CUDAGraph was "
                                   "initialized with keep_graph=true")
            return 0x386F74C0

        def debug_dump(self, path):
            if self.has_graph:
                Path(path).write_text(DOT)

    if keep_graph_param:
        class CUDAGraph(_CUDAGraph):
            def __new__(cls, keep_graph: bool = False):
                return super().__new__(cls, keep_graph)

            def capture_begin(self, pool=None, capture_error_mode="global"):
                super().capture_begin(pool=pool, capture_error_mode=capture_error_mode)

            def capture_end(self):
                super().capture_end()
    else:  # torch 2.7: no keep_graph, no instantiate
        class CUDAGraph(_CUDAGraph):  # type: ignore[no-redef]
            def __new__(cls):
                return super().__new__(cls)

        del _CUDAGraph.instantiate

    cuda.CUDAGraph = CUDAGraph
    return types.SimpleNamespace(__version__="2.11.0+fake" if keep_graph_param else "2.7.0+fake", cuda=cuda)


def capture(torch, graph, grow_bytes=0, pool=None, stream="side"):
    """What torch.cuda.graph does around a block: switch stream, begin, run, end."""
    torch.cuda.current = getattr(torch.cuda, stream)
    graph.capture_begin(pool=pool, capture_error_mode="thread_local")
    torch.cuda.reserved += grow_bytes
    graph.capture_end()
    torch.cuda.current = torch.cuda.default


def entries(cls):
    return {name: vars(cls).get(name) for name in PATCHED}


@pytest.fixture
def fake(monkeypatch):
    torch = make_fake_torch()
    monkeypatch.setattr(watch_patch, "torch", torch)
    yield torch
    assert not PATCH.installed, "a test left the patch installed"


def test_inside_graphs_are_kept_instantiated_and_recorded(fake):
    with Watch() as seen:
        g = fake.cuda.CUDAGraph()
        capture(fake, g, grow_bytes=2 * MiB)
    assert g.keep is True, "the C++ base was asked to keep the graph"
    assert g.has_exec and g.instantiations == 1, "instantiated at capture_end, as torch does without keep_graph"
    g.replay()
    assert g.instantiations == 1, "replay found it ready"
    (w,) = seen
    assert w.library == CAPTURE_BEGIN and w.role is None and w.input_shapes is None
    assert w.where.startswith("tests/test_watch_patch.py:") and w.user_function == "capture"
    assert (w.device, w.stream_id, w.stream_is_default, w.capture_error_mode) == ("cuda:0", 3, False, "thread_local")
    assert w.pool_bytes == 2 * MiB and w.pool_id == [0, 1] and w.pool_given is False
    assert w.pool_reserved_bytes == 2 * MiB + 20 * 2**10  # the pool's segments, not the others'
    assert seen.summary().pools == {"(0, 1)": w.pool_reserved_bytes}
    assert w.keep_graph_asked is False and w.instantiate_ms is not None and w.capture_ms >= 0
    assert w.dot == DOT and w.dot_error is None and w.captured_at.endswith("Z")
    assert w.graph.count_by_kind()["kernel"] == len(w.graph.kernels()) > 0
    assert w.torch_graph is g
    assert not seen.active


def test_a_graph_that_asked_for_keep_graph_is_left_to_its_caller(fake):
    with Watch() as seen:
        g = fake.cuda.CUDAGraph(keep_graph=True)
        capture(fake, g, pool=(0, 9))
    assert g.instantiations == 0 and seen[0].keep_graph_asked is True and seen[0].instantiate_ms is None
    assert seen[0].pool_given and seen[0].pool_id == [0, 9] and seen[0].dot == DOT


def test_outside_the_block_nothing_is_patched(fake):
    cls = fake.cuda.CUDAGraph
    before = entries(cls)
    new_before = cls.__new__
    with Watch():
        assert is_patched() and entries(cls) != before
    assert entries(cls) == before and "__init__" not in vars(cls) and cls.__new__ is new_before
    assert not is_patched()
    g = cls()
    capture(fake, g)
    assert g.keep is False and not g.has_graph and g.instantiations == 1  # torch's own behaviour


def test_an_exception_in_the_block_restores_and_propagates(fake):
    before = entries(fake.cuda.CUDAGraph)
    with pytest.raises(ZeroDivisionError):
        with Watch():
            1 / 0
    assert entries(fake.cuda.CUDAGraph) == before


def test_a_failed_capture_end_propagates_unchanged_and_records_nothing(fake):
    with Watch() as seen:
        g = fake.cuda.CUDAGraph()
        g.fail_end = True
        with pytest.raises(RuntimeError, match="previous error during capture"):
            capture(fake, g)
        assert PATCH.pending == {}
    assert len(seen) == 0


def test_nested_watches_both_see_inner_captures_and_unpatch_last(fake):
    cls = fake.cuda.CUDAGraph
    before = entries(cls)
    with Watch() as outer:
        capture(fake, cls())
        with Watch() as inner:
            capture(fake, cls())
        assert is_patched(), "the outer watch is still open"
        capture(fake, cls())
    assert (len(outer), len(inner)) == (3, 1)
    assert [g.index for g in outer] == [0, 1, 2] and inner[0].index == 0
    assert entries(cls) == before


def test_reopening_an_open_watch_and_mixed_flags_are_clear_errors(fake):
    w = Watch()
    with w:
        with pytest.raises(GraphlabError, match="already open"):
            w.__enter__()
        with pytest.raises(GraphlabError, match="dot_flags=1 is already open"):
            with Watch(dot_flags=5):
                pass
        with pytest.MonkeyPatch.context() as m, pytest.raises(GraphlabError, match="another torch module"):
            m.setattr(watch_patch, "torch", make_fake_torch())
            with Watch():
                pass


def test_graph_created_before_the_watch_is_recorded_without_dot(fake):
    g = fake.cuda.CUDAGraph()
    with Watch() as seen:
        capture(fake, g)
    assert g.instantiations == 1, "torch instantiated it; graphlab did not again"
    assert seen[0].dot is None and "before gl.watch started" in seen[0].dot_error
    assert seen[0].keep_graph_asked is None and seen[0].nodes is None
    with pytest.raises(GraphlabError, match="has no DOT"):
        seen[0].graph


def test_graph_created_inside_and_captured_after_still_replays(fake):
    with Watch():
        g = fake.cuda.CUDAGraph()
    capture(fake, g)  # unpatched capture_end: keep_graph stays on, torch instantiates on the first replay
    g.replay()
    assert g.instantiations == 1 and g.replays == 1


def test_max_graphs_and_keep_dot(fake):
    with Watch(max_graphs=2, keep_dot=False) as seen:
        for _ in range(3):
            capture(fake, fake.cuda.CUDAGraph())
    assert len(seen) == 2 and seen.dropped == 1
    assert seen[0].dot is None and "keep_dot=False" in seen[0].dot_error
    with pytest.raises(GraphlabError, match="max_graphs"):
        Watch(max_graphs=0)


def test_the_signature_still_shows_keep_graph_while_patched(fake):
    import inspect

    with Watch():
        assert "keep_graph" in inspect.signature(fake.cuda.CUDAGraph).parameters
        check_supported()  # graphlab's own engine feature-detects keep_graph the same way


def test_old_torch_raises_naming_the_version_that_can(monkeypatch):
    old = make_fake_torch(keep_graph_param=False)
    monkeypatch.setattr(watch_patch, "torch", old)
    with pytest.raises(WatchUnsupportedError, match=r"torch 2\.7\.0\+fake cannot keep.*torch 2\.8 or newer"):
        with Watch():
            pass
    assert not PATCH.installed and "__init__" not in vars(old.cuda.CUDAGraph)
    monkeypatch.setattr(watch_patch, "torch", types.SimpleNamespace(__version__="0", cuda=types.SimpleNamespace()))
    with pytest.raises(WatchUnsupportedError, match="no torch.cuda.CUDAGraph"):
        check_supported()
    assert gl.WatchUnsupportedError is WatchUnsupportedError


def test_the_real_cpu_torch_class_is_patched_and_restored():
    torch = pytest.importorskip("torch")
    cls = torch.cuda.CUDAGraph
    before, new_before, init_before = entries(cls), cls.__new__, cls.__init__
    with pytest.raises(KeyError):
        with Watch():
            assert vars(cls)["capture_end"] is not before["capture_end"]
            assert torch.cuda.graphs.CUDAGraph is cls  # one class object: the patch reaches every holder
            raise KeyError("boom")
    assert entries(cls) == before
    assert cls.__new__ is new_before and cls.__init__ is init_before
    assert torch.cuda.graphs.CUDAGraph is cls and torch.cuda.CUDAGraph is cls


def test_gl_watch_without_a_gpu_says_so(monkeypatch):
    from graphlab.env import has_cuda

    if has_cuda():
        pytest.skip("this machine has a GPU")
    with pytest.raises(gl.GPUUnavailableError):
        gl.watch()


def test_pool_size_is_unknown_without_segment_owners(monkeypatch):
    bare = types.SimpleNamespace(cuda=types.SimpleNamespace(memory_snapshot=lambda: [{"total_size": 5}]))
    monkeypatch.setattr(watch_patch, "torch", bare)
    assert pool_size_bytes([0, 1], 0) is None
    assert pool_size_bytes(None, 0) is None
    monkeypatch.setattr(watch_patch, "torch", types.SimpleNamespace(cuda=types.SimpleNamespace()))
    assert pool_size_bytes([0, 1], 0) is None


def test_a_forced_graph_is_instantiated_even_when_bookkeeping_fails(fake, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("bookkeeping bug")

    monkeypatch.setattr(watch_patch, "Pending", broken)
    with Watch() as seen:
        g = fake.cuda.CUDAGraph()
        capture(fake, g)
    assert g.instantiations == 1 and len(seen) == 0, "the library's graph is ready; only the record is lost"


def test_a_graph_begun_before_and_ended_inside_is_instantiated(fake):
    with Watch():
        g = fake.cuda.CUDAGraph()  # forced to keep its graph
    g.capture_begin()  # unpatched
    with Watch() as seen:
        g.capture_end()  # patched: nothing pending, but torch would have instantiated here
    assert g.instantiations == 1 and len(seen) == 0
