"""gl.cond / gl.while_loop / gl.switch without a GPU: argument checks, route choice, the condition tensor's
rules, the set-condition kernel's source (compiled with NVRTC where it is installed), and who frees what.
The GPU parts are replaced by monkeypatching the module's `torch` and its builders (torch is imported at the
top of graphlab.conditional.api, as in every torch module)."""
from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

import graphlab as gl
from graphlab.errors import BadInputError, ConditionalUnsupportedError, GraphlabError
from graphlab.conditional import api as conditional
from graphlab.conditional.kernel import SOURCES, flag_kind, include_dirs
from graphlab.conditional.support import ConditionalFacts, ConditionalSupport

torch = pytest.importorskip("torch")

H200 = ConditionalFacts(cuda_available=True, torch_version="2.11.0+cu130", driver_version=13000,
                        cuda_bindings="13.3.1", bindings_kinds=("if", "while", "switch"), bindings_node_params=True,
                        nvrtc="13.0", keep_graph=True, raw_cuda_graph=True, pool_routing=True)


def test_light_modules_import_no_torch():
    """The probe and the results import no torch; no module imports cuda-bindings until a graph is built."""
    code = ("import sys, graphlab.conditional.support, graphlab.conditional.results; "
            "print('torch' in sys.modules, 'cuda.bindings' in sys.modules); "
            "import graphlab.conditional.kernel, graphlab.conditional.builder, graphlab.conditional.api, "
            "graphlab.conditional.selftest, graphlab.conditional.torch_cond; "
            "print('cuda.bindings' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False", "False"]


def test_bad_arguments_fail_before_any_gpu_work():
    flag = torch.zeros((), dtype=torch.bool)
    with pytest.raises(BadInputError, match="max_iterations must be an int from 0"):
        gl.while_loop(flag, lambda: None, max_iterations=-1)
    with pytest.raises(BadInputError, match="switch needs at least one branch"):
        gl.switch(torch.zeros((), dtype=torch.int64), [])


@pytest.mark.parametrize("tensor, as_index, message", [
    (torch.zeros((), dtype=torch.bool), False, "on cpu, not a CUDA device"),
    (torch.zeros(2, dtype=torch.int32), False, "2 elements, not 1"),
    (torch.zeros((), dtype=torch.float32), False, "dtype float32, not one of bool"),
    (torch.zeros((), dtype=torch.bool), True, "dtype bool, not one of int32, int64"),
])
def test_the_condition_must_be_a_one_element_cuda_tensor(tensor, as_index, message):
    with pytest.raises(BadInputError, match=message):
        flag_kind(tensor, as_index=as_index, what="the condition")
    with pytest.raises(BadInputError, match="must be a CUDA tensor"):
        flag_kind(True, as_index=False, what="the condition")


def test_route_auto_picks_child_and_a_missing_feature_is_named(monkeypatch):
    monkeypatch.setattr(conditional, "conditional_support", lambda: ConditionalSupport.from_facts(H200))
    assert conditional._route("auto", "while") == "child"
    assert conditional._route("capture", "switch") == "capture"
    with pytest.raises(BadInputError, match="route must be one of auto, child, capture"):
        conditional._route("torch", "if")
    old = ConditionalSupport.from_facts(dataclasses.replace(H200, driver_version=12040, keep_graph=False))
    monkeypatch.setattr(conditional, "conditional_support", lambda: old)
    assert conditional._route("auto", "if") == "capture"  # child needs keep_graph
    with pytest.raises(ConditionalUnsupportedError, match="CUDA 12.8 driver for SWITCH"):
        conditional._route("auto", "switch")


def test_the_kernel_source_declares_the_device_runtime_call_and_compiles_where_nvrtc_is():
    for name in ("declared", "plain"):
        assert "cudaGraphSetConditional(handle, value);" in SOURCES[name]
        assert "max_iterations" in SOURCES[name]
    assert isinstance(include_dirs(), list)
    try:
        from cuda.bindings import nvrtc

        nvrtc.nvrtcVersion()
    except Exception:  # noqa: BLE001
        pytest.skip("cuda-bindings with NVRTC is not installed here")
    from graphlab.conditional.kernel import compile_image

    assert len(compile_image(SOURCES["declared"], ["--gpu-architecture=sm_90"], cubin=True)) > 1000
    ptx = compile_image(SOURCES["declared"], ["--gpu-architecture=compute_90"], cubin=False).decode()
    assert ".entry graphlab_set_conditional" in ptx and "cudaGraphSetConditional" in ptx
    with pytest.raises(ConditionalUnsupportedError, match="NVRTC could not compile"):
        compile_image("this is not CUDA", [], cubin=False)


class _FakeAsm:
    def __init__(self, log):
        self.device_index, self.exec, self.log = 0, object(), log

    def destroy(self):
        self.log.append("destroy graph")
        self.exec = None


class _FakeStages:
    captured: dict = {}

    def __init__(self, log):
        self.log = log

    def close(self):
        self.log.append("free memory")


def test_close_destroys_the_graph_before_freeing_its_memory_and_only_once():
    log: list[str] = []
    plan = conditional.ConditionalPlan("if", None, (("then", lambda: None),))
    cg = conditional.ConditionalGraph(plan, route="child", name="t", asm=_FakeAsm(log), stages=_FakeStages(log),
                                      iterations=None, cost=conditional.BuildCost(1.0, 2.0, 3, 4),
                                      kernel_how="declared/cubin sm_90")
    assert not cg.closed and "IF over then" in repr(cg)
    cg.close()
    cg.close()
    assert log == ["destroy graph", "free memory"] and cg.closed
    with pytest.raises(AttributeError):
        cg.launch()  # the fake has no launch; the real one raises "was closed"


def test_the_capture_route_gives_back_exactly_the_pool_references_it_took(monkeypatch):
    released = []

    class FakeC:
        @staticmethod
        def _cuda_releasePool(device, pool):
            released.append((device, pool))

    class FakeTorch:
        _C = FakeC

    monkeypatch.setattr(conditional, "torch", FakeTorch)
    stages = object.__new__(conditional._CapturedStages)
    stages.asm, stages.pool, stages.pool_refs, stages.results = _FakeAsm([]), (0, 7), 3, {}
    stages.close()
    stages.close()
    assert released == [(0, (0, 7))] * 3


# -- the build order, with the GPU parts replaced by recorders ------------------------------------------
class _Recorder:
    """Stands in for torch.cuda, the set-condition kernel, the graph assembly and the stages."""

    def __init__(self, fail_on: str | None = None):
        self.calls: list[tuple] = []
        self.fail_on = fail_on
        self.exec = None
        self.device_index = 0
        self.graph = "outer"
        self.keep: list = []
        self.how = "fake kernel"
        self.captured: dict = {}
        self.cuda = self
        self.int32 = torch.int32

    # torch / torch.cuda
    def device(self, *_):
        import contextlib

        return contextlib.nullcontext()

    def no_grad(self):
        return torch.no_grad()

    def zeros(self, *shape, dtype=None, device=None):
        return torch.zeros(*shape, dtype=dtype)

    def synchronize(self, *_):
        pass

    def empty_cache(self):
        pass

    def memory_reserved(self, *_):
        return 100

    def mem_get_info(self, *_):
        return (1000, 2000)

    def current_device(self):
        return 0

    # kernel
    def add_node(self, graph, deps, args, keep, *, first=True):
        name = f"set@{graph}#{len(self.calls)}"
        self.calls.append(("set", graph, tuple(deps), first, args.max_iterations))
        return name

    # assembly
    def new_handle(self):
        return 7

    def add_conditional(self, graph, deps, handle, kind, size):
        self.calls.append(("conditional", graph, tuple(deps), kind, size))
        return "cond", [f"body{i}" for i in range(size)]

    def instantiate(self):
        if self.fail_on == "instantiate":
            raise BadInputError("refused")
        self.exec = "exec"
        return 1.5

    def destroy(self):
        self.calls.append(("destroy",))

    # stages
    def add(self, graph, deps, fn, label):
        if self.fail_on == label:
            raise BadInputError(f"{label} failed")
        self.calls.append(("stage", label, graph, tuple(deps)))
        return [f"{label}-last"]

    def close(self):
        self.calls.append(("close",))


@pytest.fixture
def recorder(monkeypatch):
    rec = _Recorder()
    monkeypatch.setattr(conditional, "torch", rec)
    monkeypatch.setattr(conditional, "require_cuda", lambda what: None)
    monkeypatch.setattr(conditional, "_route", lambda route, kind: "child")
    monkeypatch.setattr(conditional, "flag_kind", lambda *a, **k: None)
    monkeypatch.setattr(conditional, "set_condition_kernel", lambda index: rec)
    monkeypatch.setattr(conditional, "GraphAssembly", lambda index: rec)
    monkeypatch.setattr(conditional, "_ChildStages", lambda asm, name, warmup_calls: rec)
    return rec


class _Flag:
    device = type("D", (), {"index": 0})()


def test_while_builds_before_setter_loop_body_setter_after(recorder):
    g = conditional.while_loop(_Flag(), lambda: None, before=lambda: None, after=lambda: None, max_iterations=5)
    assert recorder.calls == [
        ("stage", "before", "outer", ()),
        ("set", "outer", ("before-last",), True, 5),
        ("conditional", "outer", ("set@outer#1",), "while", 1),
        ("stage", "body", "body0", ()),
        ("set", "body0", ("body-last",), False, 5),  # the loop re-checks its condition after every iteration
        ("stage", "after", "outer", ("cond",)),
    ]
    assert g.kind == "while" and g.branches == ("body",) and g.instantiate_ms == 1.5 and g.exec_bytes == 0
    g.close()
    assert recorder.calls[-2:] == [("destroy",), ("close",)]


def test_switch_and_if_else_bodies_in_order(recorder):
    conditional.switch(_Flag(), [lambda: 0, lambda: 1, lambda: 2])
    assert ("conditional", "outer", ("set@outer#0",), "switch", 3) in recorder.calls
    assert [c[1] for c in recorder.calls if c[0] == "stage"] == ["case_0", "case_1", "case_2"]
    recorder.calls.clear()
    g = conditional.cond(_Flag(), lambda: 1, lambda: 2)
    assert g.kind == "if_else" and ("conditional", "outer", ("set@outer#0",), "if", 2) in recorder.calls
    assert not any(c[0] == "set" and c[1] != "outer" for c in recorder.calls)  # IF: one setter, outside


@pytest.mark.parametrize("fail_on", ["before", "else", "instantiate"])
def test_a_failure_anywhere_destroys_the_graph_then_frees_the_memory(recorder, fail_on):
    recorder.fail_on = fail_on
    with pytest.raises(GraphlabError):
        conditional.cond(_Flag(), lambda: 1, lambda: 2, before=lambda: 0)
    assert recorder.calls[-2:] == [("destroy",), ("close",)]


def test_a_failed_capture_into_a_body_keeps_the_graph_instead_of_destroying_it(recorder, monkeypatch):
    """Destroying a graph after a capture into its body failed aborted the process on the H200."""
    from graphlab.errors import CaptureError

    def failing_add(graph, deps, fn, label):
        if label == "else":
            raise CaptureError("capture failed, a host sync")
        recorder.calls.append(("stage", label, graph, tuple(deps)))
        return [f"{label}-last"]

    monkeypatch.setattr(recorder, "add", failing_add)
    recorder.graph, recorder.keep, recorder.exec = "half-built", [], None
    kept = len(conditional._ABANDONED)
    with pytest.raises(CaptureError):
        conditional.cond(_Flag(), lambda: 1, lambda: 2)
    assert ("destroy",) not in recorder.calls and recorder.calls[-1] == ("close",)
    assert len(conditional._ABANDONED) == kept + 1 and conditional._ABANDONED[-1][0] == "half-built"
