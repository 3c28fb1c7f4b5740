"""What `gl.audit` can audit, behind one small interface: run the graph path, run eager, and (on a GPU) capture the
same code again at other inputs.

- a model or function (`ModelTarget`): the audit captures it itself, one graph per input shape, and replays it the
  way a raw `torch.cuda.graph` would: tensors are copied into the static inputs, Python scalars are *not* (a graph
  replays the value it captured; `gl.capture`'s own call refuses a changed scalar, which hides the bug a raw graph
  has);
- a captured graph (`GraphTarget`, a `CapturedGraph` or the cache's eager stand-in);
- a `GraphCache` (`CacheTarget`): called as a user would, against its model run eagerly;
- a user step callable with its eager function (`StepTarget`): a function that writes a raw graph's static inputs
  and replays it.

A draw is `(args, kwargs)` from `make_inputs(i)`; `check_draw` says what is wrong with anything else.
"""
from __future__ import annotations

import re
from typing import Any, Callable

import torch

from graphlab.cache.graph_cache import GraphCache
from graphlab.capture.api import capture_graph
from graphlab.capture.captured import CapturedGraph
from graphlab.capture.module_recorder import record_modules
from graphlab.capture.module_spans import ModuleSpan
from graphlab.capture.options import CaptureOptions
from graphlab.capture.tensors import flatten, grad_context, map_tensors
from graphlab.errors import BadInputError, UnsupportedError
from graphlab.graph.export import has_cuda_bindings

Draw = tuple[tuple[Any, ...], dict[str, Any]]


def check_draw(value: Any, index: int) -> Draw:
    """`make_inputs(index)`'s answer as (args, kwargs), or BadInputError saying what a draw is."""
    if (isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], (tuple, list))
            and isinstance(value[1], dict)):
        return tuple(value[0]), dict(value[1])
    raise BadInputError(f"make_inputs({index}) must return (args, kwargs), a tuple and a dict, e.g. "
                        f"((x, 0.5), {{}}); got {type(value).__name__}")


def signature(tree: Any) -> tuple[Any, ...]:
    """The shapes, dtypes and devices of the tensors in `tree`, and where its other leaves sit."""
    return tuple((path, tuple(t.shape), t.dtype, str(t.device)) if isinstance(t, torch.Tensor) else (path,)
                 for path, t in flatten(tree))


def feed_tensors(cg: Any, tree: Any) -> list[str]:
    """Copy the tensors of `tree` into `cg`'s static inputs (same structure), as a raw graph's user does; the paths
    of the other leaves whose value differs from the captured one (a replay uses the captured value)."""
    statics, new = flatten(cg.inputs), flatten(tree)
    if [p for p, _ in statics] != [p for p, _ in new]:
        raise BadInputError(f"graph {cg.name!r} was captured for inputs {[p for p, _ in statics]}, a draw gave "
                            f"{[p for p, _ in new]}: make_inputs must keep the structure")
    changed = []
    with torch.no_grad():
        for (path, static), (_, value) in zip(statics, new):
            if isinstance(static, torch.Tensor):
                if not isinstance(value, torch.Tensor) or value.shape != static.shape:
                    raise BadInputError(f"graph {cg.name!r}: input {path} was captured as a tensor of shape "
                                        f"{tuple(static.shape)}, a draw gave {getattr(value, 'shape', type(value))}: "
                                        "audit a model or a GraphCache to vary shapes")
                static.copy_(value)
            elif value != static:
                changed.append(path)
    return changed


def snapshot_draw(draw: Draw) -> Draw:
    """A copy of a draw's tensors (later draws may reuse the caller's buffers)."""
    return map_tensors(lambda t: t.detach().clone(), draw)


def argument_name(path: str) -> str:
    """A draw's leaf path in words: "[0][1]" -> "positional argument 1", "[1]['scale']" -> "keyword argument scale";
    a graph's own inputs "[2]" -> "input 2"."""
    match = re.fullmatch(r"\[0\]\[(\d+)\](.*)", path)
    if match:
        return f"positional argument {match.group(1)}{match.group(2)}"
    match = re.fullmatch(r"\[1\]\['([^']+)'\](.*)", path)
    if match:
        return f"keyword argument {match.group(1)}{match.group(2)}"
    return f"input {path.strip('[]')}" if re.fullmatch(r"\[\d+\]", path) else f"argument {path}"


class Target:
    """One audited thing (see the module docstring). Subclasses fill in the runs."""

    kind = "target"
    label = "a target"
    #: the nn.Module behind it, for module attribution (None: not a module)
    model: Any = None
    #: True when each call returns new tensors (no output is shared between calls)
    fresh_outputs = False

    def replay(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        raise NotImplementedError

    def eager(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        raise NotImplementedError

    def scalars_ignored(self) -> list[str]:
        """The non-tensor arguments of the last replay whose value the graph did not take (it replayed its own)."""
        return []

    def fed(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The tree the graph's inputs are fed from (the paths of `scalars_ignored` are into it)."""
        return (tuple(args), dict(kwargs))

    def captured_inputs(self) -> Any:
        """The inputs the last replay's graph was captured with, as `fed` lays them out (None: not known)."""
        return None

    def graph_used(self) -> Any:
        """The live CapturedGraph the last replay ran, or None (no second capture to compare with)."""
        return None

    def capture_at(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, list[ModuleSpan]] | None:
        """A new graph of the same code captured at these inputs, with its module spans; None where it cannot."""
        return None


def _capture_with_spans(fn: Callable[..., Any], inputs: tuple[Any, ...], model: Any,
                        options: CaptureOptions, name: str) -> tuple[CapturedGraph, list[ModuleSpan]]:
    """capture_graph, with the modules behind each node recorded where cuda-bindings can count the nodes."""
    if isinstance(model, torch.nn.Module) and has_cuda_bindings():
        with record_modules(model) as recorder:
            cg = capture_graph(fn, inputs, options, name=name)
        return cg, recorder.last
    return capture_graph(fn, inputs, options, name=name), []


class ModelTarget(Target):
    """A model or function: the audit captures it (one graph per input signature) and replays it."""

    kind = "model"
    #: its graphs are the audit's own: no caller keeps their outputs (gl.capture's outputs are noted when audited)
    fresh_outputs = True

    def __init__(self, model: Callable[..., Any], grad_mode: str = "no_grad"):
        self.model = model
        self.name = getattr(model, "__name__", None) or type(model).__name__
        self.label = f"model `{self.name}`"
        self.grad_mode = grad_mode
        self.graphs: dict[Any, CapturedGraph] = {}
        self.spans: dict[int, list[ModuleSpan]] = {}
        self._last: CapturedGraph | None = None
        self._ignored: list[str] = []
        self._captured_with: dict[int, Draw] = {}

    def _call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return self.model(*args, **kwargs)

    def capture_at(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[CapturedGraph, list[ModuleSpan]]:
        return _capture_with_spans(self._call, (tuple(args), dict(kwargs)), self.model,
                                   CaptureOptions(grad_mode=self.grad_mode), f"audit {self.name}")

    def replay(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        key = signature((tuple(args), dict(kwargs)))
        cg = self.graphs.get(key)
        if cg is None:
            cg, spans = self.capture_at(args, kwargs)
            self.graphs[key] = cg
            self.spans[id(cg)] = spans
            self._captured_with[id(cg)] = snapshot_draw((tuple(args), dict(kwargs)))
        self._ignored = feed_tensors(cg, (tuple(args), dict(kwargs)))
        self._last = cg
        return cg.replay()

    def eager(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        with grad_context(self.grad_mode):
            return self.model(*args, **kwargs)

    def scalars_ignored(self) -> list[str]:
        return list(self._ignored)

    def graph_used(self) -> CapturedGraph | None:
        return self._last

    def captured_draw(self) -> Draw | None:
        """The draw the last replay's graph was captured at (its Python scalars are the ones it replays)."""
        return self._captured_with.get(id(self._last)) if self._last is not None else None

    def captured_inputs(self) -> Any:
        return self.captured_draw()


class GraphTarget(Target):
    """A graph captured already (`gl.capture`): tensors copied in, replayed, against its function run eagerly."""

    kind = "graph"

    def __init__(self, graph: Any):
        if getattr(graph, "_fn", None) is None:
            raise BadInputError(f"graph {getattr(graph, 'name', '')!r} came from a `with` block, whose code cannot be "
                                "re-run eagerly: audit the function (gl.audit(fn, make_inputs)) instead")
        self.graph = graph
        self.model = graph._fn
        self.label = f"captured graph {graph.name!r}"
        self._ignored: list[str] = []

    def replay(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if kwargs:
            raise BadInputError(f"graph {self.graph.name!r} takes positional inputs; make_inputs gave keywords "
                                f"{sorted(kwargs)}: return ((inputs...), {{}})")
        self._ignored = feed_tensors(self.graph, tuple(args))
        return self.graph.replay()

    def eager(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        with grad_context(self.graph.grad_mode):
            return self.graph._fn(*args, **kwargs)

    def scalars_ignored(self) -> list[str]:
        return list(self._ignored)

    def fed(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return tuple(args)

    def captured_inputs(self) -> Any:
        return self.graph.inputs  # its non-tensor leaves are the values it was captured with

    def graph_used(self) -> Any:
        return self.graph if self.graph.origin == "live" else None

    def capture_at(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[CapturedGraph, list[ModuleSpan]] | None:
        if self.graph.origin != "live":
            return None
        return _capture_with_spans(self.graph._fn, tuple(args), self.graph._fn, self.graph.options,
                                   f"audit {self.graph.name}")


class CacheTarget(Target):
    """A GraphCache, called as a user calls it, against its model run eagerly."""

    kind = "cache"

    def __init__(self, cache: GraphCache):
        self.cache = cache
        self.model = cache.model
        self.label = f"GraphCache {cache.name!r}"
        self.fresh_outputs = cache.copy_outputs

    def replay(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if kwargs:
            raise BadInputError(f"GraphCache {self.cache.name!r} takes positional inputs; make_inputs gave keywords "
                                f"{sorted(kwargs)}: return ((inputs...), {{}})")
        return self.cache(*args)

    def eager(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        with torch.no_grad():
            return self.cache.model(*args)

    def graph_used(self) -> Any:
        if self.cache.backend.name != "cuda" or not self.cache.graphs:
            return None
        return list(self.cache.graphs.values())[-1]  # least recently used first: the last served this call

    def capture_at(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[CapturedGraph, list[ModuleSpan]] | None:
        graph = self.graph_used()
        if graph is None:
            return None
        self.cache(*args)  # the bucket's static inputs now hold this draw, padded as the cache pads it
        return _capture_with_spans(self.cache.model, tuple(graph.inputs), self.cache.model,
                                   CaptureOptions(grad_mode="no_grad"), f"audit {self.cache.name}")


class StepTarget(Target):
    """A user step callable (it writes a raw graph's static inputs and replays), with its eager function."""

    kind = "step"

    def __init__(self, step: Callable[..., Any], eager: Callable[..., Any]):
        if not callable(eager):
            raise BadInputError(f"eager= must be the function the step replaces, called with the same inputs; got "
                                f"{type(eager).__name__}")
        self.step, self._eager = step, eager
        self.model = eager if isinstance(eager, torch.nn.Module) else None
        self.label = f"step `{getattr(step, '__qualname__', type(step).__name__)}`"

    def replay(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return self.step(*args, **kwargs)

    def eager(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        with torch.no_grad():
            return self._eager(*args, **kwargs)


def make_target(target: Any, eager: Callable[..., Any] | None = None, grad_mode: str = "no_grad") -> Target:
    """The `Target` for what `gl.audit` was given (see the module docstring)."""
    if isinstance(target, Target):
        return target
    if isinstance(target, GraphCache):
        return CacheTarget(target)
    if getattr(target, "origin", None) == "recorded":
        raise UnsupportedError(f"graph {getattr(target, 'name', '')!r} is a recording: nothing can be replayed "
                               "here; in recorded mode gl.audit takes the worked examples by name")
    if isinstance(target, CapturedGraph) or getattr(target, "origin", None) == "eager":
        return GraphTarget(target)
    if type(target).__name__ == "DecodeGraphs":
        raise UnsupportedError("auditing a DecodeGraphs is not built yet: audit its model at one bucket "
                               "(gl.audit(model, make_inputs)) meanwhile")
    if not callable(target):
        raise BadInputError(f"gl.audit takes a model or function, a captured graph, a GraphCache or a step "
                            f"callable (with eager=), got {type(target).__name__}")
    if eager is not None:
        return StepTarget(target, eager)
    return ModelTarget(target, grad_mode)


__all__ = ["CacheTarget", "Draw", "GraphTarget", "ModelTarget", "StepTarget", "Target", "check_draw", "feed_tensors",
           "make_target", "argument_name", "signature", "snapshot_draw"]
