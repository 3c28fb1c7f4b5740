"""Room to experiment without a GPU: the launches a model of your own would make, counted on the CPU.

`count_launch_ops(model, *inputs)` runs one call on the CPU and counts the ATen ops that would launch GPU work
(views and shape queries left out); a `LaunchEstimate` prices them at a per-launch host cost: an estimate,
labelled as one, of what eager launching would cost and what one graph launch would save. The recorded
per-launch cost of the zoo models, and what the recordings hold per zoo model, come from their sweeps
(`graphlab.timing.recorded`: `gl.estimate_launches`, `gl.recorded_models`). Timing it for real needs a GPU.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from torch.utils._python_dispatch import TorchDispatchMode

from graphlab import present
from graphlab.capture.tensors import grad_context

#: ATen ops that only reshape, alias or describe a tensor: they launch nothing on a GPU
_NO_LAUNCH = ("view", "_unsafe_view", "reshape", "expand", "permute", "transpose", "t", "unsqueeze", "squeeze",
              "slice", "select", "as_strided", "alias", "detach", "split", "split_with_sizes", "chunk", "unbind",
              "_reshape_alias", "numpy_T", "flatten", "unflatten", "sym_size", "sym_stride", "sym_numel", "size",
              "stride", "dim", "is_contiguous", "empty", "empty_like", "empty_strided", "new_empty",
              "new_empty_strided", "lift_fresh", "_to_copy_meta", "t_", "view_as", "expand_as", "contiguous_meta")


class _CountLaunches(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops: dict[str, int] = {}

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        name = func.overloadpacket.__name__
        if name.rstrip("_") not in _NO_LAUNCH and name not in _NO_LAUNCH:
            self.ops[name] = self.ops.get(name, 0) + 1
        return func(*args, **(kwargs or {}))


@dataclass(frozen=True)
class LaunchEstimate:
    """An estimate (not a measurement) of what eager launching costs a model, from ops counted on the CPU."""

    ops: dict[str, int]
    per_launch_us: tuple[float, float]
    source: str
    calibration: str

    @property
    def launches(self) -> int:
        return sum(self.ops.values())

    @property
    def launch_us(self) -> tuple[float, float]:
        """The host cost of launching them one by one, low and high, in µs (an estimate)."""
        return (self.launches * self.per_launch_us[0], self.launches * self.per_launch_us[1])

    def __str__(self) -> str:
        low, high = self.launch_us
        top = ", ".join(f"{name} x{n}" for name, n in sorted(self.ops.items(), key=lambda kv: -kv[1])[:8])
        return (f"ESTIMATE (no GPU here, nothing was timed): one forward pass runs {self.launches} ATen ops that "
                f"would launch GPU work ({top}{', ...' if len(self.ops) > 8 else ''}).\n"
                f"At the per-launch host cost recorded for the zoo models ({present.number(self.per_launch_us[0])}-"
                f"{present.number(self.per_launch_us[1])} µs per launch, {self.source}), eager launching would cost "
                f"about {present.duration(low)} to {present.duration(high)} of CPU time per call, where a graph "
                "replay launches once.\n"
                f"How close the op count is: {self.calibration}. A library call may launch more than one kernel "
                "(cuBLAS) and the GPU time is not estimated: measure on a GPU (gl.set_mode('live')) for real numbers.")

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))


def count_launch_ops(fn: Callable[..., Any], *inputs: Any, grad_mode: str = "no_grad") -> dict[str, int]:
    """The ATen ops one call of `fn(*inputs)` runs that would launch GPU work (views and shape queries left out)."""
    counter = _CountLaunches()
    with grad_context(grad_mode), counter:
        fn(*inputs)
    return counter.ops


__all__ = ["LaunchEstimate", "count_launch_ops"]
