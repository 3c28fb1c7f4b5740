"""Nested inputs and outputs of captured code: walking tensor trees, fresh random inputs, grad modes.

Layer 2: torch is passed in or found in sys.modules; this module never imports it at load time.
"""
from __future__ import annotations

import contextlib
import sys
from typing import Any, Callable

GRAD_MODES = ("no_grad", "inference_mode", "enabled")


def map_tensors(fn: Callable[[Any], Any], obj: Any) -> Any:
    """Apply `fn` to every tensor leaf of nested tuples, lists and dicts; other leaves are kept."""
    if isinstance(obj, tuple):
        return tuple(map_tensors(fn, o) for o in obj)
    if isinstance(obj, list):
        return [map_tensors(fn, o) for o in obj]
    if isinstance(obj, dict):
        return {k: map_tensors(fn, v) for k, v in obj.items()}
    return fn(obj) if is_tensor(obj) else obj


def flatten(obj: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """(path, leaf) pairs of nested tuples, lists and dicts, e.g. [("[0]", t), ("[1]['mask']", m)]."""
    if isinstance(obj, (tuple, list)):
        return [pair for i, o in enumerate(obj) for pair in flatten(o, f"{prefix}[{i}]")]
    if isinstance(obj, dict):
        return [pair for k, v in obj.items() for pair in flatten(v, f"{prefix}[{k!r}]")]
    return [(prefix or "output", obj)]


def is_tensor(obj: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.Tensor)


def grad_context(torch: Any, mode: str) -> Any:
    """The autograd context for a grad mode name."""
    if mode == "no_grad":
        return torch.no_grad()
    if mode == "inference_mode":
        return torch.inference_mode()
    return contextlib.nullcontext()


def sync(torch: Any) -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def describe(t: Any) -> str:
    return f"{tuple(t.shape)} {str(t.dtype).replace('torch.', '')}"


def random_like(torch: Any, t: Any, seed: int) -> Any:
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


__all__ = ["GRAD_MODES", "describe", "flatten", "grad_context", "is_tensor", "map_tensors", "random_like", "sync"]
