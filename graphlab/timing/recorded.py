"""Recorded stand-ins for the timing calls: the sweep and the kernel timeline `graphlab record` measured.

In recorded mode `gl.sweep(model, ...)` and `gl.record_timeline(model, ...)` of a zoo model answer from its
recording (each result says where and when it was measured); another model needs a CUDA GPU.
"""
from __future__ import annotations

from typing import Any

from graphlab.capture.recorded import zoo_name
from graphlab.errors import GPUUnavailableError


def _model_name(model: Any, what: str) -> str:
    name = model if isinstance(model, str) else zoo_name(model)
    if name is None:
        raise GPUUnavailableError(f"recorded mode has {what} of the zoo models only (a name such as 'gpt', or "
                                  "gl.get_model(name).build()); measuring your own model needs a CUDA GPU")
    return name


def recorded_sweep(model: Any, batch_sizes: Any = None) -> Any:
    """The sweep recorded for a zoo model, keeping the batch sizes asked for (all of them when None)."""
    from graphlab.timing.results import Sweep
    from graphlab.mode import recorded_gpu

    sweep = Sweep.load(_model_name(model, "sweeps"), gpu=recorded_gpu())
    if batch_sizes is None:
        return sweep
    wanted = set(batch_sizes)
    missing = sorted(wanted - set(sweep.batch_sizes))
    if missing:
        raise GPUUnavailableError(f"the {sweep.model} recording has batch sizes {sweep.batch_sizes}, not {missing}: "
                                  "pick recorded ones, or measure on a GPU")
    return Sweep(sweep.model, tuple(p for p in sweep.points if p.batch_size in wanted), sweep.conditions,
                 sweep.weight_update)


def recorded_timeline(model: Any) -> Any:
    """The kernel timeline recorded for a zoo model."""
    from graphlab.timing.results import Timeline
    from graphlab.mode import recorded_gpu

    return Timeline.load(_model_name(model, "timelines"), gpu=recorded_gpu())


__all__ = ["recorded_sweep", "recorded_timeline"]
