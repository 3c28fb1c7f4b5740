"""Recorded stand-ins for the timing calls: the sweep and the kernel timeline `graphlab record` measured.

In recorded mode `gl.sweep(model, ...)` and `gl.record_timeline(model, ...)` of a zoo model answer from its
recording (each result says where and when it was measured); another model needs a CUDA GPU. Each stand-in
takes its live function's arguments (`graphlab.mode.stand_in` passes them on unchanged) and ignores the
ones a recording cannot honour: the timing options of a sweep (pairs, block length, warm-up, profiling, ...)
and a timeline's warm-up were fixed when it was recorded, and its `conditions` say what they were.

Imports no torch: a recording is read from JSON.
"""
from __future__ import annotations

from typing import Any, Sequence

from graphlab.capture.recorded import zoo_name
from graphlab.errors import GPUUnavailableError
from graphlab.loader import load
from graphlab.mode import recorded_gpu
from graphlab.present import listing
from graphlab.timing.results import Sweep, Timeline
from graphlab.zoo import DEFAULT_BATCH_SIZES


def _model_name(model: Any, what: str) -> str:
    name = model if isinstance(model, str) else zoo_name(model)
    if name is None:
        raise GPUUnavailableError(f"recorded mode has {what} of the zoo models only (a name such as 'gpt', or "
                                  "gl.get_model(name).build()); measuring your own model needs a CUDA GPU")
    return name


def recorded_sweep(model: Any, make_inputs: Any = None, batch_sizes: Sequence[int] | None = DEFAULT_BATCH_SIZES,
                   **not_recorded: Any) -> Sweep:
    """The sweep recorded for a zoo model, keeping the batch sizes asked for (all of them when None).

    Stands in for `graphlab.timing.sweep.sweep` (same arguments); `make_inputs` and the timing options
    are not used: the recording was measured with its own inputs and options.
    """
    sweep = load(Sweep, _model_name(model, "sweeps"), gpu=recorded_gpu())
    if batch_sizes is None:
        return sweep
    wanted = set(batch_sizes)
    missing = sorted(wanted - set(sweep.batch_sizes))
    if missing:
        raise GPUUnavailableError(f"asked for batch sizes {listing(sorted(wanted))}, the {sweep.model} recording has "
                                  f"{listing(sweep.batch_sizes)} (not {listing(missing)}): pick recorded ones, or "
                                  "measure on a GPU")
    return Sweep(sweep.model, tuple(p for p in sweep.points if p.batch_size in wanted), sweep.conditions,
                 sweep.weight_update)


def recorded_timeline(model: Any, inputs: Any = None, *, batch_size: int | None = None,
                      **not_recorded: Any) -> Timeline:
    """The kernel timeline recorded for a zoo model.

    Stands in for `graphlab.timing.timeline.record_timeline` (same arguments); the warm-up is the recording's own.
    A batch size the recording lacks (asked for with `batch_size`, or by the inputs' leading size) raises
    `GPUUnavailableError` saying what it has, instead of answering with another batch size.
    """
    timeline = load(Timeline, _model_name(model, "timelines"), gpu=recorded_gpu())
    leading = getattr(inputs[0] if isinstance(inputs, (tuple, list)) and inputs else inputs, "shape", None)
    asked = int(leading[0]) if inputs is not None and leading else batch_size
    if asked is not None and asked != timeline.batch_size:
        raise GPUUnavailableError(f"asked for a {timeline.model} timeline at batch size {asked}, the recording has "
                                  f"one at batch size {timeline.batch_size}: ask for that one, or profile on a GPU")
    return timeline


__all__ = ["recorded_sweep", "recorded_timeline"]
