"""Room to experiment without a GPU: what the recordings hold per zoo model, and an estimate for your own model.

`gl.recorded_models()` lists, for every zoo model, the batch sizes whose captured graph a GPU recorded (what
`gl.capture` answers with in recorded mode) and those whose latency it measured (the dense sweeps: every batch
size 1-64). `gl.estimate_launches(model, *inputs)` runs a model of your own on the CPU and counts the ATen ops
that would launch GPU work, then prices them at the per-launch host cost recorded for the zoo models: an
estimate, labelled as one, of what eager launching would cost and what one graph launch would save. Timing it
for real needs a GPU.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from graphlab import present
from graphlab.capture.tensors import grad_context
from graphlab.errors import BadInputError, RecordingError
from graphlab.mode import recorded_gpu
from graphlab.recordings import load_recording
from graphlab.zoo import ZOO
from graphlab.present import ShownAsTable

#: ATen ops that only reshape, alias or describe a tensor: they launch nothing on a GPU
_NO_LAUNCH = ("view", "_unsafe_view", "reshape", "expand", "permute", "transpose", "t", "unsqueeze", "squeeze",
              "slice", "select", "as_strided", "alias", "detach", "split", "split_with_sizes", "chunk", "unbind",
              "_reshape_alias", "numpy_T", "flatten", "unflatten", "sym_size", "sym_stride", "sym_numel", "size",
              "stride", "dim", "is_contiguous", "empty", "empty_like", "empty_strided", "new_empty",
              "new_empty_strided", "lift_fresh", "_to_copy_meta", "t_", "view_as", "expand_as", "contiguous_meta")


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
                 "`gl.load_recording('dense')`."]
        return present.Table(rows, columns, title=f"What recorded mode holds per zoo model ({self.gpu.upper()} "
                                                  "recordings)", notes=notes)


def _sizes(sizes: list[int]) -> str:
    if not sizes:
        return "none"
    if len(sizes) > 8 and sizes == list(range(sizes[0], sizes[-1] + 1)):
        return f"every one of {sizes[0]}-{sizes[-1]}"
    return ", ".join(map(str, sizes))


def recorded_models(gpu: str | None = None) -> RecordedModels:
    """Every zoo model with the batch sizes the recordings of `gpu` (default: recorded mode's) hold."""
    gpu = gpu or recorded_gpu()
    dense: dict[str, list[int]] = {}
    try:
        rec = load_recording("dense", gpu=gpu)
        for name in rec.result_names:
            rows = rec.results(name).get("rows", [])
            dense[name] = sorted({int(r["batch_size"]) for r in rows if r.get("seq_len") is None})
    except RecordingError:
        pass
    rows = []
    for name in ZOO:
        try:
            rec = load_recording(name, gpu=gpu)
        except RecordingError:
            continue
        graphs = sorted(int(k[1:]) for k in rec.graph_names if k.startswith("b") and k[1:].isdigit())
        swept: set[int] = set(dense.get(name, []))
        if "sweep" in rec.result_names:
            swept |= {int(r["batch_size"]) for r in rec.results("sweep").get("rows", [])}
        rows.append({"model": name, "graph_batch_sizes": graphs, "latency_batch_sizes": sorted(swept)})
    return RecordedModels(tuple(rows), gpu)


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


def _per_launch_us(gpu: str) -> tuple[tuple[float, float], str]:
    """(lowest, highest) host µs per launch over the zoo sweeps at batch 1: (eager p50 - GPU busy) / kernels."""
    costs = []
    for name in ZOO:
        try:
            rows = load_recording(name, gpu=gpu).results("sweep").get("rows", [])
        except RecordingError:
            continue
        for r in rows:
            if r.get("batch_size") == 1 and r.get("mode") == "eager" and r.get("kernel_count") and \
                    r.get("gpu_busy_us") is not None:
                costs.append((r["p50_us"] - r["gpu_busy_us"]) / r["kernel_count"])
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
        kernels = len(load_recording("gpt", gpu=gpu).graph("b1").kernels())
        calibration = f"for the zoo's gpt at batch 1 it counts {counted} ops; the GPU recorded {kernels} kernels"
    except Exception as exc:  # the estimate stands without its calibration; say why it is missing
        calibration = f"not calibrated ({type(exc).__name__}: {exc})"
    return LaunchEstimate(ops, per_launch, source, calibration)


__all__ = ["LaunchEstimate", "RecordedModels", "count_launch_ops", "estimate_launches", "recorded_models"]
