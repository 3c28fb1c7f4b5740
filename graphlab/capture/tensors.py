"""Nested inputs and outputs of captured code: walking tensor trees, fresh random inputs, grad modes.

A model takes and returns trees of tensors: a tuple, a dict of masks, a NamedTuple, a dataclass, a Hugging Face
`ModelOutput`. graphlab walks them with torch's own pytree (`torch.utils._pytree`, the walker `torch.compile`
and `torch.export` use), so a tree comes back as the type it went in: `map_tensors` on a NamedTuple returns
that NamedTuple, on a `ModelOutput` that `ModelOutput` subclass.

The containers walked:

- tuple, list, dict, `OrderedDict`, `defaultdict`, `deque`, every NamedTuple, torch's `return_types`;
- every type registered with `torch.utils._pytree` (transformers registers each `ModelOutput` subclass when it
  is defined);
- dataclasses: graphlab registers a dataclass type with pytree the first time it meets one (its `__init__`
  fields are the children; a field that holds None stays None).

Anything else is a leaf, kept as it is: a tensor, a number, a string, None, a module. A container graphlab
cannot rebuild (an unregistered subclass of tuple, list or dict, a set, a dataclass with a tensor in a field
set outside `__init__`) that holds a tensor raises `BadInputError` naming its path and the fix, so no tensor
is ever skipped silently (it would be neither copied into a graph nor cut back to the real rows).
"""
from __future__ import annotations

import contextlib
import dataclasses
import threading
from typing import Any, Callable

import torch
import torch.utils._pytree as pytree

from graphlab.errors import BadInputError
from graphlab.present import shape

GRAD_MODES = ("no_grad", "inference_mode", "enabled")

#: leaves of these types are containers pytree does not know (an unregistered subclass, or a set)
_CONTAINERS = (tuple, list, dict, set, frozenset)
_REGISTERING = threading.Lock()


# -- the walk --------------------------------------------------------------------------------------------
# Plain tuples, lists and dicts are walked here, the rest by pytree: pytree's Python walk costs about 10 us for a
# tuple holding a dict of three tensors (and 20 us with paths), against about 1.5 us here, and this walk runs on
# every checked call of a graph with nested inputs and on every cache hit that clones or cuts its outputs.
def map_tensors(fn: Callable[[Any], Any], obj: Any) -> Any:
    """`obj` with `fn` applied to every tensor leaf; the containers keep their types, other leaves are kept."""
    try:
        return _map(fn, obj)
    except BadInputError:
        flatten(obj)  # raises the same error, naming where in `obj` the container sits
        raise


def _map(fn: Callable[[Any], Any], obj: Any) -> Any:
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    cls = type(obj)
    if cls is tuple:
        return tuple(_map(fn, o) for o in obj)
    if cls is list:
        return [_map(fn, o) for o in obj]
    if cls is dict:
        return {k: _map(fn, v) for k, v in obj.items()}
    if _is_node(obj):
        leaves, spec = _flatten(obj)
        return pytree.tree_unflatten([fn(x) if isinstance(x, torch.Tensor) else x for x in leaves], spec)
    return obj


def flatten(obj: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """(path, leaf) pairs in walk order, e.g. [("[0]", t), ("[1]['mask']", m), (".logits", l)].

    A path reads as the Python that reaches the leaf: `[i]` for a sequence, `['key']` for a mapping (a
    `ModelOutput` too), `.field` for a NamedTuple or dataclass. A lone leaf is called `prefix`, or "output".
    """
    pairs: list[tuple[str, Any]] = []
    _walk(obj, prefix, pairs)
    return pairs


def _walk(obj: Any, path: str, pairs: list[tuple[str, Any]]) -> None:
    cls = type(obj)
    if cls is tuple or cls is list:
        for i, o in enumerate(obj):
            _walk(o, f"{path}[{i}]", pairs)
    elif cls is dict:
        for k, v in obj.items():
            _walk(v, f"{path}[{k!r}]", pairs)
    elif not isinstance(obj, torch.Tensor) and _is_node(obj):
        _flatten(obj, path)  # registers the dataclasses it holds, so the walk below goes into them
        pairs.extend((path + pytree.keystr(keys) or "output", leaf)
                     for keys, leaf in pytree.tree_flatten_with_path(obj)[0])
    else:
        pairs.append((path or "output", obj))


def _is_node(obj: Any) -> bool:
    """True for a container other than a plain tuple, list or dict: pytree walks it (or says it cannot)."""
    cls = type(obj)
    return (cls in pytree.SUPPORTED_NODES or pytree.is_namedtuple_class(cls) or dataclasses.is_dataclass(cls)
            or isinstance(obj, _CONTAINERS))


def _flatten(obj: Any, where: str = "") -> tuple[list[Any], Any]:
    """pytree's leaves and spec of `obj` (found at path `where`), once every dataclass type in it is registered."""
    while True:
        leaves, spec = pytree.tree_flatten(obj)
        if not _register_new_containers(obj, leaves, where):
            return leaves, spec


def _register_new_containers(obj: Any, leaves: list[Any], where: str) -> bool:
    """Register the dataclass types among `leaves` with pytree (True if one was, so walk again); raise for a
    container that holds a tensor but cannot be rebuilt."""
    registered = False
    for leaf in leaves:
        if isinstance(leaf, torch.Tensor):
            continue
        if dataclasses.is_dataclass(leaf) and not isinstance(leaf, type):
            _register_dataclass(obj, leaf, where)
            registered = True
        elif isinstance(leaf, _CONTAINERS) and _holds_tensor(leaf):
            raise BadInputError(
                f"{_path_of(obj, leaf, where)} is a {type(leaf).__name__} holding tensors, a container graphlab "
                "cannot rebuild: return a tuple, list, dict, NamedTuple or dataclass instead, or register the type "
                "with torch.utils._pytree.register_pytree_node")
    return registered


def _register_dataclass(obj: Any, instance: Any, where: str) -> None:
    cls = type(instance)
    hidden = [f.name for f in dataclasses.fields(cls) if not f.init
              and _holds_tensor([getattr(instance, f.name, None)])]
    if hidden:
        raise BadInputError(
            f"{_path_of(obj, instance, where)} is a {cls.__name__} whose field(s) {', '.join(hidden)} hold tensors "
            "but are not __init__ arguments (field(init=False)), so graphlab cannot rebuild it around new tensors: "
            "make them __init__ fields, or return a tuple or dict")
    with _REGISTERING:  # two threads may meet the same new type at once; pytree refuses a second registration
        if cls not in pytree.SUPPORTED_NODES:
            pytree.register_dataclass(cls)


def _holds_tensor(container: Any) -> bool:
    items = list(container.values()) if isinstance(container, dict) else list(container)
    for leaf in pytree.tree_leaves(items):
        if isinstance(leaf, torch.Tensor):
            return True
        if isinstance(leaf, _CONTAINERS) and _holds_tensor(leaf):
            return True
        if dataclasses.is_dataclass(leaf) and not isinstance(leaf, type):
            if _holds_tensor([getattr(leaf, f.name, None) for f in dataclasses.fields(leaf)]):
                return True
    return False


def _path_of(obj: Any, leaf: Any, where: str) -> str:
    """Where `leaf` sits (`obj` sits at `where`), for an error message."""
    for keys, found in pytree.tree_flatten_with_path(obj)[0]:
        if found is leaf:
            path = where + pytree.keystr(keys)
            return f"entry {path}" if path else "the value"
    return f"entry {where}" if where else "an entry"


def is_tensor(obj: Any) -> bool:
    return isinstance(obj, torch.Tensor)


# -- grad modes, synchronising, describing ------------------------------------------------------------------
def grad_context(mode: str) -> Any:
    """The autograd context for a grad mode name ("no_grad", "inference_mode", "enabled")."""
    if mode == "no_grad":
        return torch.no_grad()
    if mode == "inference_mode":
        return torch.inference_mode()
    return contextlib.nullcontext()


def sync() -> None:
    """Wait for the current CUDA device, where there is one (a CPU stand-in has nothing to wait for)."""
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def describe(t: Any) -> str:
    """A tensor's shape and dtype in words, as messages and summaries show it: "4 x 64 float32"."""
    return f"{shape(t.shape)} {str(t.dtype).replace('torch.', '')}"


def describe_tree(obj: Any) -> dict[str, str]:
    """Each tensor of `obj` by its path, as shape and dtype: {"[0]": "8 x 256 float32"} (for summaries)."""
    return {p: describe(t) for p, t in flatten(obj) if isinstance(t, torch.Tensor)}


def leading_size(obj: Any) -> int | None:
    """The first dim of the first tensor in `obj` that has one (its batch size), or None when none has."""
    return next((int(t.shape[0]) for _, t in flatten(obj) if isinstance(t, torch.Tensor) and t.ndim), None)


def random_like(t: Any, seed: int) -> Any:
    """A fresh random tensor shaped like `t` (normal floats; ints within t's observed range; never zeros)."""
    gen = torch.Generator(device="cpu").manual_seed(seed)
    if t.dtype.is_floating_point or t.dtype.is_complex:
        out = torch.randn(t.shape, generator=gen, dtype=torch.float32)
    elif t.dtype == torch.bool:
        out = torch.rand(t.shape, generator=gen) > 0.5
    else:
        low, high = (int(t.min()), int(t.max()) + 1) if t.numel() else (0, 1)
        out = torch.randint(low, max(high, low + 1), t.shape, generator=gen)
    return out.to(device=t.device, dtype=t.dtype)


__all__ = ["GRAD_MODES", "describe", "describe_tree", "flatten", "grad_context", "is_tensor", "leading_size", "map_tensors",
           "random_like", "sync"]
