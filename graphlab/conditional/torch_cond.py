"""`torch.cond` captured into IF nodes by PyTorch itself (torch >= 2.12), as a `CapturedGraph`.

    >>> def step(pred, x):
    ...     return torch.cond(pred, lambda t: t * 2, lambda t: t - 1, (x,))
    >>> cg = gl.capture_with_torch_cond(step, torch.tensor(True, device="cuda"), x)   # doctest: +SKIP
    >>> cg.inputs[0].fill_(False); cg.replay()      # the GPU takes the other branch, no host sync  # doctest: +SKIP

torch 2.12 added private dispatch modes (`torch._higher_order_ops.cudagraph_conditional_nodes`):
one warms up *both* branches (a throw-away relaxed capture), the other turns each `torch.cond`
met during capture into two IF nodes (the predicate and its negation; the else result is copied
into the if result). Branches must be functions of their operands that return tensors (the rules
of `torch.cond`: no mutation of inputs or closures). torch 2.11 has none of this: there the call
raises `ConditionalUnsupportedError`, and `gl.cond` (graphlab's own IF/ELSE with PyTorch bodies)
is the way. `torch.while_loop` into WHILE nodes needs torch 2.14 and is not wrapped here.
The dispatch modes are imported when called (`importlib`): the module exists only on torch >= 2.12.
"""
from __future__ import annotations

import importlib
from typing import Any, Callable

import torch

from graphlab.capture.api import CapturedGraph, finish, inputs_device
from graphlab.capture.engine import CaptureEngine
from graphlab.capture.options import DEFAULT_WARMUP_CALLS, CaptureOptions
from graphlab.capture.tensors import map_tensors
from graphlab.conditional.support import TORCH_COND_MODULE, conditional_support
from graphlab.env import require_cuda


def capture_with_torch_cond(fn: Callable[..., Any], *example_inputs: Any, warmup_calls: int = DEFAULT_WARMUP_CALLS,
                            name: str | None = None) -> CapturedGraph:
    """Capture `fn(*example_inputs)`, whose `torch.cond` calls become IF nodes; returns a `CapturedGraph`.

    Raises:
        GPUUnavailableError: no CUDA GPU here.
        ConditionalUnsupportedError: this torch cannot capture torch.cond (it needs torch >= 2.12).
        CaptureError: the capture failed (cause, line and fix named).
    """
    require_cuda("gl.capture_with_torch_cond")
    conditional_support().require("if", "torch")
    modes = importlib.import_module(TORCH_COND_MODULE)
    engine = CaptureEngine(device=inputs_device(example_inputs, None))
    with torch.cuda.device(engine.device_index):
        static_inputs = map_tensors(lambda t: t.detach().clone(), example_inputs)
    warm_mode = modes.ControlFlowOpWarmupDispatchMode()

    def warm() -> Any:
        with warm_mode:
            return fn(*static_inputs)

    with torch.no_grad():
        engine.warm_up(warm, warmup_calls)
        with engine.capturing(), modes.CUDAGraphCaptureControlFlowOpDispatchMode():
            outputs = fn(*static_inputs)
    label = name or getattr(fn, "__name__", None) or "torch_cond"
    return finish(engine, static_inputs=static_inputs, static_outputs=outputs, fn=fn,
                  options=CaptureOptions(warmup_calls=warmup_calls, grad_mode="no_grad", dot_flags=1), name=label)


__all__ = ["capture_with_torch_cond"]
