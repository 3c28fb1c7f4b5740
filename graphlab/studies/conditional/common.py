"""What every conditional study shares: its recorded stand-in, its zoo model on the GPU, where it ran, what
its graph cost and how far a result is from eager.

A study is a live function with a recorded answer, so it says both at its top, in two lines:

    >>> @stand_in(recorded(STUDY))                               # doctest: +SKIP
    ... def early_exit_study(*, batch_size=1, ...) -> ConditionalStudy:
    ...     zoo = zoo_on_gpu("gpt", "early_exit_study")
    ...     model = zoo.build(device="cuda")

`recorded(STUDY)` answers from the "conditional" recording in recorded mode (`graphlab.mode` decides);
live, `zoo_on_gpu` raises `GPUUnavailableError` with its hint when this machine has no GPU.
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Callable

import torch

from graphlab.conditional.api import ConditionalGraph
from graphlab.conditional.results import ConditionalStudy, load_study
from graphlab.conditional.support import conditional_support, driver_version_text
from graphlab.env import require_cuda
from graphlab.timing.machine import run_conditions
from graphlab.zoo import ZooModel, get_model


def recorded(study: str) -> Callable[..., ConditionalStudy]:
    """The recorded stand-in of the study named `study`: it takes the live study's arguments (a recording
    cannot honour them: it was measured once, with the recorder's) and answers with the recorded study."""

    def from_recording(*_args: Any, **_kwargs: Any) -> ConditionalStudy:
        return load_study(study)

    from_recording.__name__ = from_recording.__qualname__ = f"recorded_{study}"
    return from_recording


def zoo_on_gpu(name: str, what: str) -> ZooModel:
    """The zoo entry `name`, for the live study `what`, once this machine is known to have a CUDA GPU
    (GPUUnavailableError with its hint otherwise)."""
    require_cuda(what)
    return get_model(name)


def study_conditions(**extra: Any) -> dict[str, Any]:
    """Where a study ran: GPU, driver, torch, CUDA, cuda-bindings, NVRTC, date (plus `extra`)."""
    facts = conditional_support().facts
    return {**run_conditions(), "cuda_driver": driver_version_text(facts.driver_version),
            "cuda_bindings": facts.cuda_bindings, "nvrtc": facts.nvrtc,
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), **extra}


def graph_facts(graph: ConditionalGraph) -> dict[str, Any]:
    """What building a ConditionalGraph cost, for a study's facts."""
    return {"route": graph.route, "kind": graph.kind, "capture_ms": round(graph.capture_ms, 3),
            "instantiate_ms": round(graph.instantiate_ms, 3), "pool_bytes": graph.pool_bytes,
            "exec_bytes": graph.exec_bytes, "set_condition_kernel": graph.kernel_how}


def max_abs_err(got: torch.Tensor, want: torch.Tensor) -> float:
    """Largest absolute difference between two tensors (inf if their shapes differ)."""
    if tuple(got.shape) != tuple(want.shape):
        return float("inf")
    return float((got.float() - want.float()).abs().max().item()) if got.numel() else 0.0


__all__ = ["graph_facts", "max_abs_err", "recorded", "study_conditions", "zoo_on_gpu"]
