"""Where a difference came from, in the user's terms: the module that wrote an output (forward hooks on an eager
run), the module behind a graph node (module spans recorded at capture), and the user's line.

Torch, no CUDA: the hooks run on any device.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable

import torch

from graphlab.audit.compare import tensor_leaves
from graphlab.capture.tensors import flatten
from graphlab.profile.modules import ModuleSpan, assign_modules


def output_module(model: Any, args: tuple[Any, ...], kwargs: dict[str, Any], path: str) -> str:
    """The innermost module of `model` whose forward returned the output at `path` (eagerly, on these inputs): its
    dotted path, the model's class name for the model itself, "" when `model` is not a module or none returned it."""
    if not isinstance(model, torch.nn.Module):
        return ""
    produced: dict[int, str] = {}
    kept: list[torch.Tensor] = []  # alive to the end, so no id is reused by another tensor

    def hook(module_path: str) -> Callable[..., None]:
        def record(module: Any, inputs: Any, output: Any) -> None:
            for _, leaf in flatten(output):
                if isinstance(leaf, torch.Tensor):
                    kept.append(leaf)
                    produced.setdefault(id(leaf), module_path)  # inner forwards end first: the innermost wins
        return record

    handles = [m.register_forward_hook(hook(p)) for p, m in model.named_modules()]
    try:
        with torch.no_grad():
            out = model(*args, **kwargs)
    finally:
        for h in handles:
            h.remove()
    leaf = tensor_leaves(out).get(path)
    found = produced.get(id(leaf)) if leaf is not None else None
    if found is None:
        return ""
    return found or type(model).__name__


def node_module(spans: list[ModuleSpan], index: int, model: Any = None) -> str:
    """The module whose forward launched node `index` (spans recorded at capture), "" when none did."""
    found = assign_modules(spans, [index]).get(index)
    if found is None:
        return ""
    return found or (type(model).__name__ if model is not None else "(the model)")


def module_line(model: Any, module_path: str) -> str:
    """ "file.py:42", where the forward of the module at `module_path` is defined ("" when not known)."""
    if not isinstance(model, torch.nn.Module):
        return function_line(model)
    try:
        module = model.get_submodule(module_path) if module_path and module_path != type(model).__name__ else model
    except AttributeError:
        return ""
    return function_line(type(module).forward)


def function_line(fn: Any) -> str:
    """ "file.py:42" where `fn` is defined ("" for a builtin or anything without source)."""
    try:
        target = inspect.unwrap(fn)
        return f"{inspect.getsourcefile(target)}:{inspect.getsourcelines(target)[1]}"
    except (TypeError, OSError):
        return ""


__all__ = ["function_line", "module_line", "node_module", "output_module"]
