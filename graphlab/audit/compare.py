"""Replay against eager, output by output: the first output that differs beyond its dtype's tolerance.

Torch, but no CUDA: the comparison runs the same on CPU tensors (tests) and GPU ones. The tolerances are the capture
package's (`capture/verify.py`'s `TOLERANCES`: an error passes when max_abs <= atol + rtol * max|eager|); integer and
bool outputs must match exactly; NaN equals NaN (a NaN on both sides is the same answer).

    >>> first_difference((torch.ones(2),), (torch.ones(2) * 2,)).path     # doctest: +SKIP
    '[0]'
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import torch

from graphlab.capture.tensors import flatten, map_tensors
from graphlab.capture.verify import TOLERANCES


@dataclass(frozen=True)
class OutputDifference:
    """The first output that differed: its path, the largest difference, what its dtype allows."""

    path: str
    max_abs_err: float
    allowed: float
    dtype: str
    shape: tuple[int, ...]


def tolerance(dtype: torch.dtype) -> tuple[float, float]:
    """(rtol, atol) for a dtype: the capture package's table; exact (0, 0) for integers, bools and the rest."""
    return TOLERANCES.get(str(dtype).replace("torch.", ""), (0.0, 0.0))


def tensor_leaves(tree: Any) -> dict[str, torch.Tensor]:
    """{path: tensor} of every tensor in `tree`."""
    return {path: t for path, t in flatten(tree) if isinstance(t, torch.Tensor)}


def difference(got: torch.Tensor, want: torch.Tensor, path: str) -> OutputDifference | None:
    """How `got` differs from `want` (None: within the tolerance of `want`'s dtype)."""
    dtype = str(want.dtype).replace("torch.", "")
    if got.shape != want.shape:
        return OutputDifference(path, float("inf"), 0.0, dtype, tuple(want.shape))
    a, b = got.detach().to("cpu", torch.float64), want.detach().to("cpu", torch.float64)
    both_nan = torch.isnan(a) & torch.isnan(b)
    diff = (a - b).abs().masked_fill(both_nan, 0.0)
    diff = torch.nan_to_num(diff, nan=float("inf"))
    max_abs = float(diff.max()) if diff.numel() else 0.0
    finite = b[torch.isfinite(b)]
    scale = float(finite.abs().max()) if finite.numel() else 0.0
    rtol, atol = tolerance(want.dtype)
    allowed = atol + rtol * scale
    return None if max_abs <= allowed else OutputDifference(path, max_abs, allowed, dtype, tuple(want.shape))


def first_difference(got: Any, want: Any, skip: Iterable[str] = ()) -> OutputDifference | None:
    """The first output of `want` (in walk order) that `got` misses or differs on; None when all match. Outputs whose
    path is in `skip` (random ones) are not compared."""
    skipped = set(skip)
    have = tensor_leaves(got)
    for path, want_t in tensor_leaves(want).items():
        if path in skipped:
            continue
        got_t = have.get(path)
        if got_t is None:
            return OutputDifference(path, float("inf"), 0.0, str(want_t.dtype).replace("torch.", ""),
                                    tuple(want_t.shape))
        found = difference(got_t, want_t, path)
        if found is not None:
            return found
    return None


def differing_paths(a: Any, b: Any) -> set[str]:
    """The tensor paths whose values differ at all between two results of one target (exactly; NaN equals NaN)."""
    left, right = tensor_leaves(a), tensor_leaves(b)
    return {p for p, t in left.items() if p in right and not _equal(t, right[p])}


def _equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and bool(torch.equal(a, b) or torch.allclose(a.double(), b.double(), rtol=0, atol=0,
                                                                          equal_nan=True))


def snapshot(tree: Any) -> Any:
    """A copy of every tensor in `tree` (results a later call may overwrite)."""
    return map_tensors(lambda t: t.detach().clone(), tree)


__all__ = ["OutputDifference", "difference", "differing_paths", "first_difference", "snapshot", "tensor_leaves",
           "tolerance"]
