"""Test doubles for the audit's CPU tests (test data, not library code): graphs that replay on the CPU the way a
CUDA graph would, each with one planted fault of the kinds `gl.audit` looks for.

A `ReplayOnCpu` graph recomputes its function from its static inputs into its static outputs (what a correct CUDA
graph does); the faulty ones keep something from "capture" as a real graph would: a noise tensor, a buffer.
"""
from __future__ import annotations

import torch

from graphlab.capture.captured import CapturedGraph
from graphlab.capture.engine import CaptureCost
from graphlab.capture.tensors import flatten, map_tensors


class ReplayOnCpu:
    """Replays like a CUDA graph, on the CPU: fn(static inputs) copied into the static outputs."""

    def __init__(self, fn, inputs, outputs):
        self.fn, self.inputs, self.outputs = fn, inputs, outputs

    def replay(self):
        with torch.no_grad():
            fresh = self.fn(*self.inputs)
        for (_, out), (_, new) in zip(flatten(self.outputs), flatten(fresh)):
            if isinstance(out, torch.Tensor):
                out.copy_(new)

    def reset(self):
        pass


def cpu_graph(fn, *example, graph_type=ReplayOnCpu, name="stand-in") -> CapturedGraph:
    """A CapturedGraph on the CPU (device -1) around `graph_type`: its Python scalars stay as captured."""
    static = map_tensors(lambda t: t.detach().clone(), example)
    with torch.no_grad():
        outputs = map_tensors(lambda t: t.clone(), fn(*static))
    return CapturedGraph(torch_graph=graph_type(fn, static, outputs), static_inputs=static, static_outputs=outputs,
                         fn=fn, name=name, device_index=-1, cost=CaptureCost(1.0, 0.5, 2**20, 2**19, None))


class NoiseOnceGraph(ReplayOnCpu):
    """A graph of `x + noise` whose noise was drawn once on the host at capture: every replay repeats it."""

    def __init__(self, fn, inputs, outputs):
        super().__init__(fn, inputs, outputs)
        self.noise = torch.randn_like(inputs[0])

    def replay(self):
        self.outputs.copy_(self.inputs[0] + self.noise)
