"""Worked examples for `gl.audit`: one small model (or step) per quiet failure, each with its fixed version (GPU).

    >>> report = run_example("baked_scalar")          # the planted fault: found and located
    >>> run_example("baked_scalar_fixed").clean       # the fixed version: no finding
    True

| example | the planted fault | the fix |
|---|---|---|
| baked_scalar | a Python float `temperature` passed to forward: the graph replays the captured one | a 0-dim tensor input |
| baked_address | an attribute tensor replaced between calls (`model.bias = new`): the graph reads the old address | `model.bias.copy_(new)` |
| kept_output | a step that collects `[cg(x) for x in xs]`: every entry is the last replay's answer | `.clone()` each |
| rng_repeats | noise from Python's `random`, drawn once at capture | `torch.randn` on the device |
| input_replaced | a step over a raw torch graph that rebinds its static input (`static["x"] = x`) | `static["x"].copy_(x)` |
| padding_reaches_rows | a GraphCache told padding is exact (`Pad(exact=True)`) for a model that centres over the batch | centre over features |

This file plays the user's part: the audit names lines here. `graphlab record --models audit` (`studies/audit.py`)
records every example and the zoo models' audits; `graphlab.audit.recorded.WORKED_EXAMPLES` lists the names recorded
mode answers for (a test holds the two lists equal).
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Callable

import torch

from graphlab.audit.api import audit
from graphlab.audit.findings import AuditReport
from graphlab.cache.buckets import Pad
from graphlab.cache.graph_cache import GraphCache
from graphlab.cache.options import CacheOptions
from graphlab.capture.api import capture
from graphlab.env import require_cuda
from graphlab.errors import BadInputError
from graphlab.zoo import get_model

WIDTH = 64
DRAWS = 6


@dataclass(frozen=True)
class Example:
    """One worked example: its name, the cause it plants ("" for a fixed version), and how to build its audit."""

    name: str
    cause: str
    description: str
    build: Callable[[], dict[str, Any]]


def _randn(i: int, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(1000 + i)).cuda()


# -- baked_scalar ---------------------------------------------------------------------------------------------------------
class Temperature(torch.nn.Module):
    """Softmax of a linear layer's logits at a temperature passed as a Python float (the planted fault)."""

    def __init__(self) -> None:
        super().__init__()
        self.head = torch.nn.Linear(WIDTH, WIDTH)

    def forward(self, x: torch.Tensor, temperature: Any) -> torch.Tensor:
        return torch.softmax(self.head(x) / temperature, dim=-1)


def _baked_scalar(fixed: bool) -> dict[str, Any]:
    model = Temperature().cuda().eval()

    def make_inputs(i: int) -> Any:
        t = 0.5 + 0.25 * i
        return (_randn(i, 8, WIDTH), torch.tensor(t, device="cuda") if fixed else t), {}

    return {"target": model, "make_inputs": make_inputs}


# -- baked_address --------------------------------------------------------------------------------------------------------
class AddBias(torch.nn.Module):
    """A linear layer plus a bias held as a plain attribute, set from outside between calls."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(WIDTH, WIDTH)
        self.bias = torch.zeros(WIDTH, device="cuda")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) + self.bias


def _baked_address(fixed: bool) -> dict[str, Any]:
    model = AddBias().cuda().eval()

    def vary(i: int) -> None:
        new = torch.full((WIDTH,), float(i), device="cuda")
        if fixed:
            model.bias.copy_(new)
        else:
            model.bias = new  # the planted fault: the graph keeps reading the tensor it was captured with

    return {"target": model, "make_inputs": lambda i: ((_randn(i, 8, WIDTH),), {}), "vary": vary}


# -- kept_output -------------------------------------------------------------------------------------------------------------
def _kept_output(fixed: bool) -> dict[str, Any]:
    model = torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH), torch.nn.GELU()).cuda().eval()
    cg = capture(model, _randn(0, 8, WIDTH), name="kept_output")

    def predict_all(xs: list[torch.Tensor]) -> list[torch.Tensor]:
        return [cg(x) for x in xs]  # the planted fault: each replay overwrites the one before

    def predict_all_fixed(xs: list[torch.Tensor]) -> list[torch.Tensor]:
        return [cg(x).clone() for x in xs]

    def eager(xs: list[torch.Tensor]) -> list[torch.Tensor]:
        return [model(x) for x in xs]

    return {"target": predict_all_fixed if fixed else predict_all, "eager": eager,
            "make_inputs": lambda i: (([_randn(10 * i + k, 8, WIDTH) for k in range(3)],), {})}


# -- rng_repeats -------------------------------------------------------------------------------------------------------------
class HostNoise(torch.nn.Module):
    """Adds noise drawn with Python's `random` (the planted fault: drawn once, at capture)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(WIDTH, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) + 0.1 * random.gauss(0.0, 1.0)


class DeviceNoise(HostNoise):
    """The same noise drawn by torch on the device: a graph advances its generator at each replay."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) + 0.1 * torch.randn((), device=x.device)


def _rng_repeats(fixed: bool) -> dict[str, Any]:
    model = (DeviceNoise() if fixed else HostNoise()).cuda().eval()
    return {"target": model, "make_inputs": lambda i: ((_randn(i, 8, WIDTH),), {})}


# -- input_replaced ----------------------------------------------------------------------------------------------------------
def _input_replaced(fixed: bool) -> dict[str, Any]:
    model = torch.nn.Linear(WIDTH, WIDTH).cuda().eval()
    static = {"x": _randn(0, 8, WIDTH)}
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.no_grad():
        for _ in range(3):
            model(static["x"])
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph), torch.no_grad():
        static_out = model(static["x"])

    def step(x: torch.Tensor) -> torch.Tensor:
        static["x"] = x  # the planted fault: the graph still reads the old buffer
        graph.replay()
        return static_out.clone()

    def step_fixed(x: torch.Tensor) -> torch.Tensor:
        static["x"].copy_(x)
        graph.replay()
        return static_out.clone()

    return {"target": step_fixed if fixed else step, "eager": model,
            "make_inputs": lambda i: ((_randn(i, 8, WIDTH),), {})}


# -- padding_reaches_rows ------------------------------------------------------------------------------------------------------
class CenterOverBatch(torch.nn.Module):
    """Subtracts the mean over the batch (the planted fault for a padded batch: padding rows join the mean)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(WIDTH, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.lin(x)
        return y - y.mean(0, keepdim=True)


class CenterOverFeatures(CenterOverBatch):
    """The same, row by row: padding rows never reach the real ones."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.lin(x)
        return y - y.mean(1, keepdim=True)


def _padding(fixed: bool) -> dict[str, Any]:
    model = (CenterOverFeatures() if fixed else CenterOverBatch()).cuda().eval()
    cache = GraphCache(model, dims=[Pad("batch", dim=0, buckets=[4, 8], max_size=8, exact=True)],
                       options=CacheOptions(check_padding=False), name=type(model).__name__)
    sizes = (3, 5, 2, 7, 4, 6)
    return {"target": cache, "make_inputs": lambda i: ((_randn(i, sizes[i % len(sizes)], WIDTH),), {})}


def _pair(name: str, cause: str, what: str, build: Callable[[bool], dict[str, Any]]) -> list[Example]:
    return [Example(name, cause, what, lambda: build(False)),
            Example(f"{name}_fixed", "", f"{what} (fixed)", lambda: build(True))]


EXAMPLES: dict[str, Example] = {e.name: e for e in [
    *_pair("baked_scalar", "baked_value", "a Python float temperature passed to forward", _baked_scalar),
    *_pair("baked_address", "baked_address", "an attribute tensor replaced between calls", _baked_address),
    *_pair("kept_output", "kept_output", "a step that collects a graph's outputs of several replays", _kept_output),
    *_pair("rng_repeats", "rng_repeats", "noise drawn with Python's random", _rng_repeats),
    *_pair("input_replaced", "input_replaced", "a step that rebinds a raw graph's static input", _input_replaced),
    *_pair("padding_reaches_rows", "padding_reaches_rows", "a cache told padding is exact for a model that mixes rows",
           _padding),
]}

#: the zoo models audited clean in the recording, at batch size 1
ZOO_AUDITS = ("mlp", "cnn", "gpt", "encoder")


def run_example(name: str, draws: int = DRAWS) -> AuditReport:
    """Build the worked example `name` on this GPU and audit it."""
    require_cuda("the audit's worked examples")
    example = EXAMPLES.get(name)
    if example is None:
        raise BadInputError(f"no worked example {name!r}; they are {', '.join(EXAMPLES)}")
    torch.manual_seed(0)
    random.seed(0)
    spec = example.build()
    target = spec.pop("target")
    return audit(target, spec.pop("make_inputs"), draws=draws, name=name, **spec)


def run_zoo(name: str, batch_size: int = 1, draws: int = DRAWS) -> AuditReport:
    """Audit the zoo model `name` at one batch size (a model target: the audit captures it)."""
    require_cuda("auditing a zoo model")
    zoo = get_model(name)
    model = zoo.build(device="cuda")
    return audit(model, lambda i: (zoo.make_inputs(batch_size, device="cuda", seed=i), {}), draws=draws,
                 name=f"zoo {name} b{batch_size}")


__all__ = ["EXAMPLES", "Example", "ZOO_AUDITS", "run_example", "run_zoo"]
