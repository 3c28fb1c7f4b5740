"""Models for the serving tests, importable by a server subprocess as `--model serve_test_models:<factory>`.

`slow`: a linear layer that sleeps SERVE_TEST_SLEEP_MS per batch (default 100), so the service's capacity is a
few batches a second and a 2-core machine can flood it.
"""
from __future__ import annotations

import os
import time

import torch

import graphlab as gl


class Slow(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.linear = torch.nn.Linear(8, 3)
        self.sleep_s = float(os.environ.get("SERVE_TEST_SLEEP_MS", "100")) / 1000.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        time.sleep(self.sleep_s)
        return self.linear(x)


def slow() -> gl.ServedModel:
    return gl.ServedModel(Slow(), torch.zeros(1, 8), buckets=[1, 2, 4, 8], name="slow")
