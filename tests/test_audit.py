"""gl.audit on the CPU: the checks against graphs that replay on the CPU with one planted fault each (tests/audit_doubles),
a step over a stand-in graph, a GraphCache's eager backend; bad input; a CUDA error that stops it."""
from __future__ import annotations

import random
import warnings

import pytest
import torch

from audit_doubles import NoiseOnceGraph, cpu_graph
from graphlab.audit.api import audit, is_cuda_error
from graphlab.audit.targets import GraphTarget, argument_name
from graphlab.cache.graph_cache import GraphCache
from graphlab.cache.options import CacheOptions
from graphlab.errors import BadInputError, GPUUnavailableError, UnsupportedError

torch.manual_seed(0)


def scaled(x, scale):
    return x * scale


def _draws_with_scale(i):
    return (torch.randn(4, 3, generator=torch.Generator().manual_seed(i)), 0.5 + i), {}


# -- baked values ------------------------------------------------------------------------------------------------
def test_a_python_scalar_the_graph_replays_is_found_and_named():
    cg = cpu_graph(scaled, torch.randn(4, 3), 0.5)
    report = audit(cg, _draws_with_scale, draws=4)
    assert report.causes() == ["baked_value"]
    finding = report.findings[0]
    assert finding.where.argument == "input 1" and finding.where.output == "output"
    assert "captured as 0.5" in finding.what and "1.5" in finding.what
    assert "tensor input" in finding.fix
    assert not report.clean


def test_the_same_function_with_the_scalar_as_a_tensor_audits_clean():
    cg = cpu_graph(scaled, torch.randn(4, 3), torch.tensor(0.5))
    report = audit(cg, lambda i: ((torch.randn(4, 3), torch.tensor(0.5 + i)), {}), draws=4)
    assert report.clean, report
    assert any("4 draws" in t for t in report.tried)
    assert any("state outside the arguments" in n for n in report.not_varied)


def test_the_audit_restores_a_captured_graph_s_static_inputs():
    x0 = torch.randn(4, 3)
    cg = cpu_graph(scaled, x0, torch.tensor(2.0))
    audit(cg, lambda i: ((torch.randn(4, 3), torch.tensor(float(i))), {}), draws=3)
    assert torch.equal(cg.inputs[0], x0) and torch.equal(cg.outputs, x0 * 2.0)


class Biased(torch.nn.Module):
    """A module whose bias is replaced between calls (state outside the arguments)."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.bias = torch.zeros(3)

    def forward(self, x):
        return self.lin(x) + self.bias


class FrozenBiasGraph:
    """Replays with the bias tensor it held at capture, as a CUDA graph keeps its address."""

    def __init__(self, fn, inputs, outputs):
        self.fn, self.inputs, self.outputs = fn, inputs, outputs
        self.bias = fn.bias

    def replay(self):
        with torch.no_grad():
            self.outputs.copy_(self.fn.lin(self.inputs[0]) + self.bias)

    def reset(self):
        pass


def test_state_varied_outside_the_arguments_is_found_and_located_to_the_module_that_wrote_the_output():
    model = Biased().eval()
    cg = cpu_graph(model, torch.randn(2, 3), graph_type=FrozenBiasGraph)

    def vary(i):
        model.bias = torch.full((3,), float(i))  # replaced, not copied into

    report = audit(cg, lambda i: ((torch.randn(2, 3),), {}), vary=vary, draws=3)
    assert report.causes() == ["replay_differs"]
    where = report.findings[0].where
    assert where.output == "output" and where.module == "Biased" and "test_audit.py" in where.line
    assert not any("state outside" in n for n in report.not_varied)
    assert any("kernel arguments" in n for n in report.not_varied)  # no second capture on a CPU


# -- random numbers ------------------------------------------------------------------------------------------------
def noisy(x):
    return x + torch.randn_like(x)


def test_noise_drawn_once_at_capture_repeats_and_is_found():
    cg = cpu_graph(noisy, torch.randn(4, 3), graph_type=NoiseOnceGraph)
    report = audit(cg, lambda i: ((torch.randn(4, 3),), {}), draws=3)
    assert report.causes() == ["rng_repeats"]
    assert report.findings[0].where.output == "output"


def test_noise_drawn_at_every_replay_audits_clean():
    cg = cpu_graph(noisy, torch.randn(4, 3))
    report = audit(cg, lambda i: ((torch.randn(4, 3),), {}), draws=3)
    assert report.clean, report
    assert any("random" in n for n in report.notes)


def seeded_noise(x):
    torch.manual_seed(0)  # eager repeats its numbers
    return x + torch.randn_like(x)


class FreshNoiseGraph:
    """A graph whose generator advances at each replay (the host seed is not replayed)."""

    def __init__(self, fn, inputs, outputs):
        self.inputs, self.outputs = inputs, outputs

    def replay(self):
        self.outputs.copy_(self.inputs[0] + torch.randn(self.inputs[0].shape))

    def reset(self):
        pass


def test_a_replay_that_draws_fresh_numbers_where_eager_repeats_is_found():
    cg = cpu_graph(seeded_noise, torch.randn(4, 3), graph_type=FreshNoiseGraph)
    report = audit(cg, lambda i: ((torch.randn(4, 3),), {}), draws=2)
    assert "rng_fresh" in report.causes()


# -- a step over a raw graph: inputs replaced, outputs kept --------------------------------------------------------
def _step_world():
    model = torch.nn.Linear(3, 2).eval()
    state = {"x": torch.zeros(4, 3)}
    buffer = state["x"]
    out = torch.zeros(4, 2)

    class Graph:  # reads the buffer it was captured with, as a CUDA graph reads an address
        def replay(self):
            with torch.no_grad():
                out.copy_(model(buffer))

    return model, state, Graph(), out


def test_a_step_that_replaces_its_static_input_is_found_at_that_line():
    model, state, graph, out = _step_world()

    def step(x):
        state["x"] = x  # the planted fault
        graph.replay()
        return out

    report = audit(step, lambda i: ((torch.randn(4, 3),), {}), eager=model, draws=3)
    assert report.causes() == ["input_replaced"]
    finding = report.findings[0]
    assert finding.where.argument == "`state['x'] = x`"
    assert finding.where.line.endswith(f":{step.__code__.co_firstlineno + 1}")
    assert "copy_" in finding.fix


def test_a_step_that_copies_into_its_static_input_audits_clean():
    model, state, graph, out = _step_world()

    def step(x):
        state["x"].copy_(x)
        graph.replay()
        return out.clone()

    report = audit(step, lambda i: ((torch.randn(4, 3),), {}), eager=model, draws=3)
    assert report.clean, report


def test_a_step_that_collects_outputs_of_several_replays_is_found_at_its_line():
    model = torch.nn.Linear(3, 2).eval()
    cg = cpu_graph(model, torch.randn(4, 3))

    def predict_all(xs):
        return [cg(x) for x in xs]  # each replay overwrites the one before

    def make(i):
        return ([torch.randn(4, 3) for _ in range(3)],), {}

    report = audit(predict_all, make, eager=lambda xs: [model(x) for x in xs], draws=2)
    assert report.causes() == ["kept_output"]
    finding = report.findings[0]
    assert finding.where.line.endswith(f":{predict_all.__code__.co_firstlineno + 1}")
    assert "clone" in finding.fix
    assert CapturedGraphHasNoGuard(cg)


def CapturedGraphHasNoGuard(cg):  # noqa: N802 - reads as the assertion it is
    """The audit's guard is gone afterwards: the call returns the static outputs themselves again."""
    return cg(torch.randn(4, 3)) is cg.outputs


def test_cloning_what_is_kept_audits_clean_and_a_graph_target_notes_the_overwrite():
    model = torch.nn.Linear(3, 2).eval()
    cg = cpu_graph(model, torch.randn(4, 3))
    report = audit(lambda xs: [cg(x).clone() for x in xs], lambda i: ([[torch.randn(4, 3) for _ in range(3)]], {}),
                   eager=lambda xs: [model(x) for x in xs], draws=2)
    assert report.clean, report
    graph_report = audit(cg, lambda i: ((torch.randn(4, 3),), {}), draws=2)
    assert graph_report.clean and any("overwritten by the next call" in n for n in graph_report.notes)


# -- padding ---------------------------------------------------------------------------------------------------------
class CenterOverBatch(torch.nn.Module):
    def forward(self, x):
        return x - x.mean(0, keepdim=True)  # mixes rows: padding rows reach the real ones


class CenterOverFeatures(torch.nn.Module):
    def forward(self, x):
        return x - x.mean(1, keepdim=True)


def _sizes_within_buckets(i):
    return (torch.randn([3, 5, 2, 7][i % 4], 6),), {}


def test_padding_that_reaches_the_real_rows_is_found():
    cache = GraphCache(CenterOverBatch(), buckets=[4, 8], max_size=None, backend="eager",
                       options=CacheOptions(check_padding=False))
    report = audit(cache, _sizes_within_buckets, draws=4)
    assert report.causes() == ["padding_reaches_rows"]
    assert any("bucket" in t for t in report.tried)


def test_a_row_wise_model_in_the_same_cache_audits_clean_and_says_what_it_varied():
    cache = GraphCache(CenterOverFeatures(), buckets=[4, 8], max_size=None, backend="eager",
                       options=CacheOptions(check_padding=False))
    report = audit(cache, _sizes_within_buckets, draws=4)
    assert report.clean, report
    assert any("shapes of [0][0]" in t for t in report.tried)


def test_a_cache_that_refuses_to_pad_is_reported_not_raised():
    cache = GraphCache(CenterOverBatch(), buckets=[4, 8], max_size=None, backend="eager")
    report = audit(cache, _sizes_within_buckets, draws=4)
    assert report.causes() == ["padding_reaches_rows"] and "refused to pad" in report.findings[0].what


# -- a CUDA error stops the audit; other errors are the caller's ---------------------------------------------------------
def test_a_cuda_error_stops_the_audit_and_is_reported():
    calls = []

    def step(x):
        calls.append(1)
        if len(calls) > 5:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        return x * 2

    report = audit(step, lambda i: ((torch.randn(2),), {}), eager=lambda x: x * 2, draws=6)
    assert report.causes() == ["cuda_error"] and report.stopped and not report.clean
    assert "illegal memory access" in report.findings[0].what and len(calls) == 6
    assert "stopped" in str(report)


def test_an_error_that_is_not_a_cuda_error_reaches_the_caller():
    def step(x):
        raise ValueError("my bug")

    with pytest.raises(ValueError, match="my bug"):
        audit(step, lambda i: ((torch.randn(2),), {}), eager=lambda x: x)
    assert is_cuda_error(RuntimeError("CUDA error: device-side assert triggered"))
    assert not is_cuda_error(ValueError("CUDA error"))


# -- bad input -----------------------------------------------------------------------------------------------------------
def test_bad_input_gets_a_clear_error():
    cg = cpu_graph(scaled, torch.randn(4, 3), 0.5)
    with pytest.raises(BadInputError, match=r"make_inputs\(0\) must return \(args, kwargs\)"):
        audit(cg, lambda i: torch.randn(4, 3))
    with pytest.raises(BadInputError, match="needs make_inputs"):
        audit(cg)
    with pytest.raises(BadInputError, match="draws must be an int of 2 or more"):
        audit(cg, _draws_with_scale, draws=1)
    with pytest.raises(BadInputError, match="shape"):
        audit(cg, lambda i: ((torch.randn(5, 3), 0.5), {}))
    with pytest.raises(BadInputError, match="takes a model or function"):
        audit(42, _draws_with_scale)


def test_a_model_target_needs_a_gpu_and_a_recorded_graph_is_refused():
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(GPUUnavailableError):
        audit(torch.nn.Linear(3, 2), lambda i: ((torch.randn(4, 3),), {}))

    class Recorded:
        origin = "recorded"
        name = "gpt b1"

    with pytest.raises(UnsupportedError, match="recording"):
        audit(Recorded(), _draws_with_scale)


def test_argument_names_read_as_words():
    assert argument_name("[0][1]") == "positional argument 1"
    assert argument_name("[1]['temperature']") == "keyword argument temperature"
    assert argument_name("[2]") == "input 2"
    assert isinstance(GraphTarget(cpu_graph(scaled, torch.randn(2), 1.0)).label, str)


def test_python_random_noise_in_a_step_is_found_as_repeating():
    noise = torch.tensor(random.gauss(0, 1))  # drawn once, "at capture"

    def step(x):
        return x + noise

    report = audit(step, lambda i: ((torch.randn(3),), {}), eager=lambda x: x + random.gauss(0, 1), draws=2)
    assert "rng_repeats" in report.causes()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        str(report)


# -- the worked examples ---------------------------------------------------------------------------------------------------
def test_recorded_mode_names_every_worked_example_and_each_needs_a_gpu_here():
    from graphlab.audit.recorded import WORKED_EXAMPLES
    from graphlab.studies.audit_examples import EXAMPLES, run_example

    assert tuple(EXAMPLES) == WORKED_EXAMPLES
    assert all(EXAMPLES[f"{e.name}_fixed"].cause == "" for e in EXAMPLES.values() if e.cause)
    if not torch.cuda.is_available():
        with pytest.raises(GPUUnavailableError):
            run_example("baked_scalar")
    with pytest.raises((BadInputError, GPUUnavailableError)):
        run_example("nope")
