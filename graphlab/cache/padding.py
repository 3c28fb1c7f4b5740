"""Padding inputs up to a bucket, slicing outputs back, and checking that padding changed nothing.

Padding is exact only where positions along the padded dimension do not see each other: batch rows of
most inference models, the right end of a causal decoder's sequence. It is not exact for a
bidirectional encoder (every position attends to the padding) unless the padding is masked. So the
graph cache checks each padded bucket when it captures it: the padded replay against eager on the
real rows, with the dtype's tolerance (`graphlab.capture.verify.TOLERANCES`).

Which inputs to pad, along which dims and up to which bucket, is the plan's decision (`graphlab.cache.plan`);
this module does it to tensors.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import torch

from graphlab.cache.buckets import Pad
from graphlab.capture.tensors import flatten, random_like
from graphlab.capture.verify import TOLERANCES
from graphlab.errors import PaddingError
from graphlab.present import error, shape


def region(ndim: int, dims: Sequence[int], sizes: Sequence[int]) -> tuple[slice, ...]:
    """The index of the real part of a padded tensor: [:n] along each padded dim, everything elsewhere."""
    index = [slice(None)] * ndim
    for dim, n in zip(dims, sizes):
        index[dim] = slice(0, n)
    return tuple(index)


def padded_shape(shape: Sequence[int], dims: Sequence[int], buckets: Sequence[int]) -> tuple[int, ...]:
    out = list(shape)
    for dim, b in zip(dims, buckets):
        out[dim] = b
    return tuple(out)


def pad_tensor(x: torch.Tensor, dims: Sequence[int], buckets: Sequence[int], value: float) -> torch.Tensor:
    """`x` padded with `value` along `dims` up to `buckets`: a new contiguous tensor on x's device."""
    out = torch.full(padded_shape(x.shape, dims, buckets), value, dtype=x.dtype, device=x.device)
    out[region(x.ndim, dims, [x.shape[d] for d in dims])].copy_(x)
    return out


def example_at(example: torch.Tensor, dims: Sequence[int], sizes: Sequence[int], seed: int) -> torch.Tensor:
    """A fresh random tensor shaped like `example` with `dims` resized to `sizes` (values like random_like)."""
    template = example
    shape = padded_shape(example.shape, dims, sizes)
    if tuple(shape) != tuple(example.shape):
        template = example.new_empty(shape)
        # random_like draws ints within the template's observed range: keep the example's range
        if not (example.dtype.is_floating_point or example.dtype.is_complex or example.dtype == torch.bool):
            low, high = (int(example.min()), int(example.max())) if example.numel() else (0, 1)
            return torch.randint(low, max(high, low) + 1, shape, dtype=example.dtype,
                                 generator=torch.Generator().manual_seed(seed)).to(example.device)
    return random_like(template, seed)


def output_leaves(outputs: Any) -> list[tuple[str, torch.Tensor]]:
    """(path, tensor) for every tensor leaf of nested outputs."""
    return [(p, t) for p, t in flatten(outputs) if isinstance(t, torch.Tensor)]


def _output_name(path: str) -> str:
    """How a message names an output: "the output" for a lone tensor (its path is "output"), else "output [1]"."""
    return "the output" if path in ("output", "") else f"output {path}"


@dataclass(frozen=True)
class PaddingComparison:
    """The real rows of a padded run against eager: the largest difference and what the dtype allows, for the
    output that came closest to its tolerance; or `mismatch`, the output whose shape differs (out_dim unset)."""

    max_abs_err: float
    allowed: float
    path: str
    mismatch: str | None = None

    @property
    def exact(self) -> bool:
        return self.mismatch is None and not self.max_abs_err - self.allowed > 0  # a NaN difference passes, as before


def compare_padded(padded_out: Any, eager_out: Any) -> PaddingComparison:
    """Compare the real part of a padded run with eager, output by output, with each dtype's tolerance
    (`graphlab.capture.verify.TOLERANCES`; integers exactly)."""
    eager_leaves = dict(output_leaves(eager_out))
    worst: tuple[float, float, str, float] | None = None
    for path, got in output_leaves(padded_out):
        want = eager_leaves.get(path)
        if want is None or got.shape != want.shape:
            return PaddingComparison(0.0, 0.0, path, mismatch=(
                f"{_output_name(path)} has shape {shape(got.shape)} after slicing the padding off, but eager gives "
                f"{shape(want.shape) if want is not None else 'no such output'}"))
        rtol, atol = TOLERANCES.get(str(want.dtype).replace("torch.", ""), (0.0, 0.0))
        if not (want.dtype.is_floating_point or want.dtype.is_complex):
            rtol = atol = 0.0
        diff = (got.double() - want.double()).abs()
        max_abs = float(diff.max()) if diff.numel() else 0.0
        scale = float(want.double().abs().max()) if want.numel() else 0.0
        allowed = atol + rtol * scale
        if worst is None or max_abs - allowed > worst[0] or not worst[2]:
            worst = (max_abs - allowed, max_abs, path, allowed)
    if worst is None:
        return PaddingComparison(0.0, 0.0, "")
    _, max_abs, path, allowed = worst
    return PaddingComparison(max_abs, allowed, path)


def raise_if_inexact(comparison: PaddingComparison, padded_dims: Sequence[Pad], where: str) -> None:
    """PaddingError naming the dimension and the fix when `comparison` is not exact."""
    dim_name = ",".join(p.name for p in padded_dims)
    if comparison.mismatch is not None:
        raise PaddingError(
            f"{where}: {comparison.mismatch}: set out_dim for " + ", ".join(p.describe() for p in padded_dims)
            + " (the output dimension to slice), or None", dim_name=dim_name)
    if not comparison.exact:
        names = " and ".join(f"{p.describe()}" for p in padded_dims)
        raise PaddingError(
            f"{where}: padding {names} changes this model's answer: on the real rows the answer computed on the "
            f"padded inputs differs from eager by up to {error(comparison.max_abs_err)} (in "
            f"{_output_name(comparison.path)}). Positions along that dimension see each other "
            "(e.g. a bidirectional encoder attends to the padding). Fix: pad only dimensions whose positions are "
            "independent (batch rows; the right end of a causal decoder), pass an attention mask as an input, or "
            "list every size you serve as a bucket for it (Pad(..., exact=False) never pads it). Nothing was returned.",
            dim_name=dim_name, max_abs_err=comparison.max_abs_err)


def check_padding_exact(padded_out: Any, eager_out: Any, padded_dims: Sequence[Pad], where: str) -> PaddingComparison:
    """Raise PaddingError when the padded run's real part differs from eager beyond the dtype tolerance; else
    return the comparison (the largest difference and what the dtype allows)."""
    comparison = compare_padded(padded_out, eager_out)
    raise_if_inexact(comparison, padded_dims, where)
    return comparison


__all__ = ["PaddingComparison", "check_padding_exact", "compare_padded", "example_at", "output_leaves", "pad_tensor",
           "padded_shape", "raise_if_inexact", "region"]
