"""A model that fails on request, for the fault tests; importable by a server subprocess as
`--model serve_fault_models:faulty`.

`Faulty` is a linear layer over 8 numbers that sleeps SERVE_TEST_SLEEP_MS per batch (default 20) and looks at the
first number of each row: 666 makes it raise ValueError (a poisoned request), 777 SystemExit, 778
KeyboardInterrupt, 888 a RuntimeError saying "CUDA error" (as torch raises one on a GPU), 889 a
`torch.AcceleratorError`. Any other row is answered.
"""
from __future__ import annotations

import os
import time

import torch

import graphlab as gl

POISON, EXIT, INTERRUPT, CUDA_ERROR, ACCELERATOR_ERROR = 666.0, 777.0, 778.0, 888.0, 889.0


class Faulty(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.linear = torch.nn.Linear(8, 3)
        self.sleep_s = float(os.environ.get("SERVE_TEST_SLEEP_MS", "20")) / 1000.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        time.sleep(self.sleep_s)
        marks = set(x[:, 0].tolist())
        if POISON in marks:
            raise ValueError("poisoned row /home/someone/secret <b>markup</b>")
        if EXIT in marks:
            raise SystemExit(3)
        if INTERRUPT in marks:
            raise KeyboardInterrupt
        if CUDA_ERROR in marks:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        if ACCELERATOR_ERROR in marks:
            raise torch.AcceleratorError("CUDA error: device-side assert triggered")
        return self.linear(x)


def faulty() -> gl.ServedModel:
    return gl.ServedModel(Faulty(), torch.zeros(1, 8), buckets=[1, 2, 4, 8], name="faulty")


def row(mark: float = 0.0) -> list[float]:
    """One request row: `mark` first (0.0: a good row)."""
    return [mark] + [0.5] * 7
