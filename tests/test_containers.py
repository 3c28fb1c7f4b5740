"""Models that return containers: a NamedTuple, a dataclass and a Hugging Face `ModelOutput` come back as their own
type, with every tensor in them walked (copied into and out of a graph, cut back to the real rows), through
`gl.capture` and through `GraphCache` with `copy_outputs` True and False. The walker is `capture/tensors.py`."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import pytest
import torch

import graphlab as gl
from graphlab.cache.graph_cache import GraphCache
from graphlab.capture import tensors
from graphlab.capture.captured import CapturedGraph
from graphlab.capture.engine import CaptureCost
from graphlab.errors import BadInputError

transformers_outputs = pytest.importorskip("transformers.modeling_outputs")


class Pair(NamedTuple):
    logits: torch.Tensor
    hidden: torch.Tensor


@dataclass
class Scores:
    logits: torch.Tensor
    mask: torch.Tensor
    note: str = "scores"  # a non-tensor field rides along
    extra: torch.Tensor | None = None  # a field left None stays None


def _named_tuple(h: torch.Tensor, x: torch.Tensor) -> Pair:
    return Pair(h, x * 2)


def _dataclass(h: torch.Tensor, x: torch.Tensor) -> Scores:
    return Scores(h, x > 0)


def _model_output(h: torch.Tensor, x: torch.Tensor) -> Any:
    return transformers_outputs.SequenceClassifierOutput(logits=h, hidden_states=(x * 2,))


WRAPS = {"namedtuple": _named_tuple, "dataclass": _dataclass, "model_output": _model_output}


class Net(torch.nn.Module):
    """A linear layer whose output comes back in a container (one of `WRAPS`)."""

    def __init__(self, wrap: str):
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(4, 3)
        self.wrap = WRAPS[wrap]

    def forward(self, x: torch.Tensor) -> Any:
        return self.wrap(self.lin(x), x)


def _leaves(out: Any) -> list[torch.Tensor]:
    return [t for _, t in tensors.flatten(out) if isinstance(t, torch.Tensor)]


def _assert_same(got: Any, want: Any, rows: int) -> None:
    """`got` is `want`'s type, holds as many tensors (each of `rows` rows) with the same values."""
    assert type(got) is type(want)
    got_leaves, want_leaves = _leaves(got), _leaves(want)
    assert len(got_leaves) == len(want_leaves) >= 2
    for g, w in zip(got_leaves, want_leaves):
        assert g.shape[0] == rows
        torch.testing.assert_close(g, w)
    if isinstance(want, Scores):
        assert got.note == "scores" and got.extra is None


# -- the walker --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("wrap", sorted(WRAPS))
def test_map_tensors_keeps_the_container_type_and_walks_every_tensor(wrap):
    out = Net(wrap)(torch.randn(3, 4))
    doubled = tensors.map_tensors(lambda t: t[:2], out)
    assert type(doubled) is type(out)
    assert [t.shape[0] for t in _leaves(doubled)] == [2, 2]


def test_paths_read_as_the_python_that_reaches_the_leaf():
    x = torch.randn(3, 4)
    paths = {wrap: [p for p, _ in tensors.flatten(Net(wrap)(x))] for wrap in WRAPS}
    assert paths["namedtuple"] == [".logits", ".hidden"]
    assert paths["dataclass"] == [".logits", ".mask", ".note"]
    assert paths["model_output"] == ["['logits']", "['hidden_states'][0]"]
    assert [p for p, _ in tensors.flatten((x, {"mask": x}))] == ["[0]", "[1]['mask']"]


def test_a_container_that_cannot_be_rebuilt_is_an_error_not_a_skipped_tensor():
    class Batch(dict):
        pass

    with pytest.raises(BadInputError, match=r"entry \[1\] is a Batch holding tensors"):
        tensors.map_tensors(lambda t: t, (1, Batch(x=torch.ones(1))))
    assert tensors.flatten((1, Batch(x=2))) == [("[0]", 1), ("[1]", {"x": 2})]  # no tensor: a plain leaf

    @dataclass
    class Hidden:
        x: torch.Tensor
        cache: Any = field(init=False, default=None)

    hidden = Hidden(torch.ones(1))
    hidden.cache = torch.zeros(1)
    with pytest.raises(BadInputError, match="cache hold tensors but are not __init__ arguments"):
        tensors.flatten(hidden)


# -- GraphCache (the eager backend: the same padding, cutting and copying as on a GPU) ---------------------
@pytest.mark.parametrize("copy_outputs", [True, False])
@pytest.mark.parametrize("wrap", sorted(WRAPS))
def test_graph_cache_returns_the_models_type_cut_to_the_real_rows(wrap, copy_outputs):
    model = Net(wrap).eval()
    cache = GraphCache(model, buckets=[4], backend="eager", copy_outputs=copy_outputs)
    with torch.no_grad():
        for seed in range(2):  # a capture, then a hit
            x = torch.randn(3, 4, generator=torch.Generator().manual_seed(seed))
            _assert_same(cache(x), model(x), rows=3)
    assert len(cache.graphs) == 1 and cache.stats().fallbacks == 0


# -- capture: the live graph class on a CPU stand-in, and recorded mode -------------------------------------
class _StandInGraph:
    """Replays like a CUDA graph, on the CPU: recompute the function into the static outputs."""

    def __init__(self, fn, inputs, outputs):
        self.fn, self.inputs, self.outputs = fn, inputs, outputs

    def replay(self):
        for (_, out), (_, new) in zip(tensors.flatten(self.outputs), tensors.flatten(self.fn(*self.inputs))):
            if isinstance(out, torch.Tensor):
                out.copy_(new)

    def reset(self):
        pass


@pytest.mark.parametrize("wrap", sorted(WRAPS))
def test_a_captured_graph_keeps_container_inputs_and_outputs(wrap):
    model = Net(wrap).eval()
    fn = lambda pair: model(pair.logits + pair.hidden)  # noqa: E731 (a NamedTuple input, too)
    static = (Pair(torch.randn(3, 4), torch.randn(3, 4)),)
    with torch.no_grad():
        outputs = fn(*static)
    cg = CapturedGraph(torch_graph=_StandInGraph(fn, static, outputs), static_inputs=static, static_outputs=outputs,
                       fn=fn, name=wrap, device_index=-1,
                       cost=CaptureCost(0.0, 0.0, 0, 0, None))
    new = Pair(torch.randn(3, 4), torch.randn(3, 4))
    with torch.no_grad():
        _assert_same(cg(new), fn(new), rows=3)
    assert cg(new) is cg.outputs and type(cg.outputs) is type(outputs)
    assert list(cg.summary()["inputs"]) == ["[0].logits", "[0].hidden"]
    assert cg.verify(trials=1).passed


@pytest.mark.parametrize("wrap", sorted(WRAPS))
def test_recorded_capture_keeps_the_container_type(recorded, wrap):
    zoo = gl.get_model("mlp")
    mlp = zoo.build()
    (x,) = zoo.make_inputs(8)

    class Wrapped(torch.nn.Module):  # the zoo MLP, its logits returned in a container
        graphlab_zoo = "mlp"

        def __init__(self):
            super().__init__()
            self.mlp = mlp

        def forward(self, x):
            return WRAPS[wrap](self.mlp(x), x)

    model = Wrapped()
    cg = gl.capture(model, x)
    assert cg.origin == "recorded"
    with torch.no_grad():
        _assert_same(cg.outputs, model(x), rows=8)
        _assert_same(cg(x), model(x), rows=8)


# -- on a GPU: the live capture and the CUDA graph cache ------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("wrap", sorted(WRAPS))
def test_live_capture_keeps_the_container_type(wrap):
    model = Net(wrap).cuda().eval()
    cg = gl.capture(model, torch.randn(3, 4, device="cuda"))
    assert cg.origin == "live" and type(cg.outputs) is type(model(torch.randn(3, 4, device="cuda")))
    x = torch.randn(3, 4, device="cuda")
    with torch.no_grad():
        _assert_same(cg(x), model(x), rows=3)
    assert cg.verify().passed


@pytest.mark.gpu
@pytest.mark.parametrize("copy_outputs", [True, False])
@pytest.mark.parametrize("wrap", sorted(WRAPS))
def test_cuda_graph_cache_returns_the_models_type_cut_to_the_real_rows(wrap, copy_outputs):
    model = Net(wrap).cuda().eval()
    cache = GraphCache(model, buckets=[4], copy_outputs=copy_outputs)
    with torch.no_grad():
        for seed in range(2):
            x = torch.randn(3, 4, device="cuda", generator=torch.Generator("cuda").manual_seed(seed))
            _assert_same(cache(x), model(x), rows=3)
    assert len(cache.graphs) == 1 and cache.stats().fallbacks == 0
