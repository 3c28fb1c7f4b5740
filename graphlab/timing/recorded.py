"""Recorded stand-ins for the timing calls: the sweep and the kernel timeline `graphlab record` measured; what the
recordings hold per zoo model, and an estimate for a model of your own priced at their recorded launch cost.

In recorded mode `gl.sweep(model, ...)` and `gl.record_timeline(model, ...)` of a zoo model answer from its
recording (each result says where and when it was measured); another model needs a CUDA GPU. Each stand-in
takes its live function's arguments (`graphlab.mode.stand_in` passes them on unchanged) and ignores the
ones a recording cannot honour: a sweep's `SweepOptions` (pairs, block length, warm-up, profiling, ...)
and a timeline's warm-up were fixed when it was recorded, and its `conditions` say what they were.

`gl.recorded_models()` lists, for every zoo model, the batch sizes whose captured graph a GPU recorded (what
`gl.capture` answers with in recorded mode) and those whose latency it measured (its sweep, and the dense sweeps:
every batch size 1-64). `gl.estimate_launches(model, *inputs)` counts on the CPU the ATen ops a model of your own
would launch (`graphlab.capture.offline`) and prices them at the per-launch host cost the zoo sweeps recorded.

Every recorded result is read through the loader (`gl.load`); the recordings are JSON.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from graphlab import present
from graphlab.capture.offline import LaunchEstimate, count_launch_ops
from graphlab.capture.recorded import zoo_name
from graphlab.errors import BadInputError, GPUUnavailableError, RecordingError
from graphlab.loader import load, open_recording
from graphlab.mode import recorded_gpu
from graphlab.present import ShownAsTable, listing
from graphlab.recordings import Recording
from graphlab.results_types import results_type
from graphlab.timing.options import SweepOptions
from graphlab.timing.results import Sweep, Timeline
from graphlab.zoo import DEFAULT_BATCH_SIZES, ZOO

#: the recording of the dense sweeps (`graphlab record --models dense`: `graphlab.studies.dense` writes it under this
#: name, its `RECORDING`): one `Sweep` per zoo model, under the model's name
DENSE_RECORDING = "dense"


def _model_name(model: Any, what: str) -> str:
    name = model if isinstance(model, str) else zoo_name(model)
    if name is None:
        raise GPUUnavailableError(f"recorded mode has {what} of the zoo models only (a name such as 'gpt', or "
                                  "gl.get_model(name).build()); measuring your own model needs a CUDA GPU")
    return name


def recorded_sweep(model: Any, make_inputs: Any = None, batch_sizes: Sequence[int] | None = DEFAULT_BATCH_SIZES,
                   *, name: str | None = None, options: SweepOptions | None = None, progress: bool = True,
                   on_point: Any = None) -> Sweep:
    """The sweep recorded for a zoo model, keeping the batch sizes asked for (all of them when None).

    Stands in for `graphlab.timing.sweep.sweep` (same arguments); `make_inputs`, `name`, `options`, `progress`
    and `on_point` are not used: the recording was measured with its own inputs and options (its conditions).
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


def recorded_timeline(model: Any, inputs: Any = None, *, name: str | None = None, warmup_calls: int = 5,
                      batch_size: int | None = None) -> Timeline:
    """The kernel timeline recorded for a zoo model.

    Stands in for `graphlab.timing.timeline.record_timeline` (same arguments); `name` and the warm-up are the
    recording's own.
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


@dataclass(frozen=True)
class RecordedModels(ShownAsTable):
    """Per zoo model: the batch sizes with a recorded graph, and those with a recorded latency."""

    rows: tuple[dict[str, Any], ...]
    gpu: str

    def table(self) -> present.Table:
        """Per zoo model: the batch sizes `gl.capture` answers with a recorded graph, and those whose latency was
        measured, as a table for people."""
        rows = [{"model": r["model"], "graphs": _sizes(r["graph_batch_sizes"]),
                 "latency": _sizes(r["latency_batch_sizes"])} for r in self.rows]
        columns = [present.Column("model", "model", kind="text"),
                   present.Column("graphs", "graphs (what gl.capture answers) at batch sizes", kind="text"),
                   present.Column("latency", "latency measured at batch sizes", kind="text")]
        notes = ["Any other batch size, or a model of your own, needs a GPU to capture; "
                 "`gl.estimate_launches(model, *inputs)` estimates a model of your own here. The dense sweeps: "
                 f"`gl.load(gl.Sweep, {DENSE_RECORDING!r}, entry='gpt')`, one per zoo model."]
        return present.Table(rows, columns, title=f"What recorded mode holds per zoo model ({self.gpu.upper()} "
                                                  "recordings)", notes=notes)


def _sizes(sizes: list[int]) -> str:
    if not sizes:
        return "none"
    if len(sizes) > 8 and sizes == list(range(sizes[0], sizes[-1] + 1)):
        return f"every one of {sizes[0]}-{sizes[-1]}"
    return ", ".join(map(str, sizes))


def recorded_models(gpu: str | None = None) -> RecordedModels:
    """Every zoo model with the batch sizes the recordings of `gpu` (default: recorded mode's) hold: its graphs, and
    the latency of its sweep and of its dense sweep (over batch size; the sweeps read through `gl.load`)."""
    gpu = gpu or recorded_gpu()
    try:
        dense: Recording | None = open_recording(DENSE_RECORDING, gpu=gpu)
    except RecordingError:
        dense = None
    rows = []
    for name in ZOO:
        try:
            rec = open_recording(name, gpu=gpu)
        except RecordingError:
            continue
        graphs = sorted(int(k[1:]) for k in rec.graph_names if k.startswith("b") and k[1:].isdigit())
        swept: set[int] = set()
        if dense is not None and name in dense.result_names:
            swept |= {p.batch_size for p in load(Sweep, dense, entry=name).points if p.seq_len is None}
        if results_type(Sweep).entry in rec.result_names:
            swept |= set(load(Sweep, rec).batch_sizes)
        rows.append({"model": name, "graph_batch_sizes": graphs, "latency_batch_sizes": sorted(swept)})
    return RecordedModels(tuple(rows), gpu)


def _per_launch_us(gpu: str) -> tuple[tuple[float, float], str]:
    """(lowest, highest) host µs per launch over the zoo sweeps at batch 1: (eager p50 - GPU busy) / kernels."""
    costs = []
    for name in ZOO:
        try:
            points = load(Sweep, name, gpu=gpu).points
        except RecordingError:
            continue
        costs += [(p.p50_us - p.gpu_busy_us) / p.kernel_count for p in points
                  if p.batch_size == 1 and p.mode == "eager" and p.kernel_count and p.gpu_busy_us is not None]
    if not costs:
        raise RecordingError(f"no zoo sweep of the {gpu} recordings has the eager batch-1 point an estimate needs")
    return (min(costs), max(costs)), (f"eager p50 minus GPU busy time, per kernel, at batch 1 over {len(costs)} zoo "
                                      f"models, {gpu.upper()} recordings")


def estimate_launches(fn: Callable[..., Any], *inputs: Any, grad_mode: str = "no_grad") -> LaunchEstimate:
    """Run `fn(*inputs)` once on this CPU, count the ops it would launch on a GPU, and price them at the recorded
    per-launch cost: an estimate for a model of your own, without a GPU. Raises BadInputError without inputs."""
    if not inputs:
        raise BadInputError("estimate_launches needs the inputs of one call, e.g. gl.estimate_launches(model, x)")
    gpu = recorded_gpu()
    ops = count_launch_ops(fn, *inputs, grad_mode=grad_mode)
    per_launch, source = _per_launch_us(gpu)
    zoo = ZOO["gpt"]
    try:
        counted = sum(count_launch_ops(zoo.build(device="cpu"), *zoo.make_inputs(1, device="cpu")).values())
        kernels = len(open_recording(zoo.name, gpu=gpu).graph("b1").kernels())
        calibration = f"for the zoo's gpt at batch 1 it counts {counted} ops; the GPU recorded {kernels} kernels"
    except Exception as exc:  # the estimate stands without its calibration; say why it is missing
        calibration = f"not calibrated ({type(exc).__name__}: {exc})"
    return LaunchEstimate(ops, per_launch, source, calibration)


__all__ = ["DENSE_RECORDING", "RecordedModels", "estimate_launches", "recorded_models", "recorded_sweep",
           "recorded_timeline"]
