"""The input plan of a captured graph: worked out once at capture, so a call does only what it must.

A replay reads its inputs from fixed addresses, so every call copies new values into the graph's
static input tensors. `InputPlan` records, at capture time, the structure of the inputs (flattened
paths), which leaves are tensors, and each tensor's shape, dtype and device. A call then costs one
cheap check per input and one `copy_` where the caller passed a tensor other than the static one.

Measured on the H200 (bench/bench_overhead.py, docs/overhead.md): the checked call path stays within a
few microseconds of a raw `static.copy_(x); graph.replay()`.

Every mismatch raises `BadInputError` naming the input, what the graph was captured for, and the fix.
"""
from __future__ import annotations

from typing import Any

import torch

from graphlab.capture.tensors import describe, flatten, is_tensor
from graphlab.errors import BadInputError


def _device_name(index: int) -> str:
    return "cpu" if index < 0 else f"cuda:{index}"


class InputPlan:
    """How to feed new inputs to a captured graph.

    Args:
        static_inputs: the graph's static inputs (a tuple; leaves may nest in tuples, lists, dicts).
        graph_name: used in error messages.
    """

    def __init__(self, static_inputs: tuple[Any, ...], graph_name: str = "graph"):
        self.static_inputs = static_inputs
        self.graph_name = graph_name
        self.leaves = flatten(static_inputs)
        self.paths = tuple(path for path, _ in self.leaves)
        #: True when the inputs are a flat tuple of tensors: the fast path, no flattening per call
        self.flat = all(is_tensor(x) for x in static_inputs)
        self.count = len(static_inputs)
        self._statics = [leaf for _, leaf in self.leaves]
        self._shapes = [leaf.shape if is_tensor(leaf) else None for leaf in self._statics]
        self._dtypes = [leaf.dtype if is_tensor(leaf) else None for leaf in self._statics]
        self._devices = [leaf.get_device() if is_tensor(leaf) else None for leaf in self._statics]

    # -- the hot path -------------------------------------------------------------------------------------
    def feed(self, new_inputs: tuple[Any, ...]) -> None:
        """Check `new_inputs` against the plan and copy them into the static inputs."""
        if self.flat:
            if len(new_inputs) != self.count:
                raise self._structure_error(new_inputs)
            leaves: Any = new_inputs
        else:
            fresh = flatten(tuple(new_inputs))
            if tuple(path for path, _ in fresh) != self.paths:
                raise self._structure_error(new_inputs)
            leaves = [leaf for _, leaf in fresh]
        statics, shapes, dtypes, devices = self._statics, self._shapes, self._dtypes, self._devices
        tensor_type = torch.Tensor
        for i, new in enumerate(leaves):
            static = statics[i]
            if new is static:
                continue
            if shapes[i] is None:  # a non-tensor argument, baked into the graph at capture
                if new != static:
                    raise BadInputError(f"input {self.paths[i]} was {static!r} at capture, got {new!r}: a graph "
                                        "bakes in non-tensor arguments; capture again for a new value")
                continue
            if (not isinstance(new, tensor_type) or new.shape != shapes[i] or new.dtype != dtypes[i]
                    or new.get_device() != devices[i]):
                raise self._tensor_error(i, new)
            if new.requires_grad:
                with torch.no_grad():
                    static.copy_(new)
            else:
                static.copy_(new)

    def feed_unchecked(self, new_inputs: tuple[Any, ...]) -> None:
        """Copy without any check (flat tensor inputs only): the caller promises the captured layout."""
        for new, static in zip(new_inputs, self._statics):
            if new is not static:
                static.copy_(new)

    def by_name(self, named: dict[str, Any], names: tuple[str, ...]) -> tuple[Any, ...]:
        """Positional inputs from keyword ones, in the order of `names` (inputs not named keep their value)."""
        unknown = [k for k in named if k not in names]
        if unknown or not names:
            raise BadInputError(f"graph {self.graph_name!r} takes inputs {list(names)} by name; got "
                                f"{unknown or list(named)}")
        return tuple(named.get(k, self.static_inputs[i]) for i, k in enumerate(names))

    # -- errors (off the hot path) ---------------------------------------------------------------------------
    def _structure_error(self, new_inputs: tuple[Any, ...]) -> BadInputError:
        got = [path for path, _ in flatten(tuple(new_inputs))]
        return BadInputError(f"graph {self.graph_name!r} was captured for inputs {list(self.paths)}, got {got}: "
                             "pass the same structure")

    def _tensor_error(self, i: int, new: Any) -> BadInputError:
        path, static = self.paths[i], self._statics[i]
        if not is_tensor(new):
            return BadInputError(f"input {path} must be a tensor {describe(static)} as captured, got "
                                 f"{type(new).__name__}")
        if new.get_device() != self._devices[i]:
            there, here = _device_name(new.get_device()), _device_name(self._devices[i])
            return BadInputError(f"input {path} is on {there} but graph {self.graph_name!r} lives on {here}: "
                                 f"move it with .to('{here}') first, or capture a graph on {there} (a graph never "
                                 "copies across devices in its hot path)")
        return BadInputError(f"input {path} must be {describe(static)} as captured, got {describe(new)}: a graph "
                             "has fixed shapes, so capture one graph per shape (gl.GraphCache does that for you)")


def _takes_ids(model: Any) -> bool:
    """True when the model starts with an embedding (its first input is integer token ids, not data)."""
    if not hasattr(model, "modules"):
        return False
    leaves = [m for m in model.modules() if not list(m.children())]
    return bool(leaves) and isinstance(leaves[0], torch.nn.Embedding)


def model_refused(model: Any, inputs: tuple[Any, ...], exc: BaseException, *, where: str, what: str,
                  expected: str = "", tensor_at: set[int] | None = None) -> BadInputError:
    """One line for a model that raised on the inputs it was given to capture (off the hot path): the input
    that looks wrong (a dtype other than the weights', a non-tensor where a tensor goes), what was got, what
    is expected, the model's own message and the fix. `tensor_at`: the inputs that must be tensors."""
    got = ", ".join(f"input {i}: {describe(x) if is_tensor(x) else type(x).__name__}"
                    for i, x in enumerate(inputs)) or "no inputs"
    params = list(model.parameters()) if hasattr(model, "parameters") else []
    weight = next((p for p in params if p.is_floating_point()), None)
    if not expected:
        expected = (f"the model's weights are {str(weight.dtype).replace('torch.', '')} on {weight.device}"
                    if weight is not None else "what the model takes")
    culprit = ""
    for i, x in enumerate(inputs):
        if not is_tensor(x):
            if (tensor_at is None or i in tensor_at) and not isinstance(x, (int, float, bool)):
                culprit = f"input {i} is a {type(x).__name__}, not a tensor (fix: torch.tensor(...)); "
                break
            continue
        if weight is not None and x.dtype != weight.dtype and (
                x.is_floating_point() or i == 0 and not _takes_ids(model)):
            culprit = (f"input {i} is {str(x.dtype).replace('torch.', '')} but the model's weights are "
                       f"{str(weight.dtype).replace('torch.', '')} (fix: x.to({weight.dtype})); ")
            break
    message = " ".join(str(exc).split())[:300]
    return BadInputError(f"{where}: the model raised on the inputs of {what}: {culprit}got {got}; expected: "
                         f"{expected}. The model said: {type(exc).__name__}: {message}. Fix the inputs "
                         "(dtype, shape, device) to what the model takes")


__all__ = ["InputPlan", "model_refused"]
