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


class Mixed(torch.nn.Module):
    """Five inputs of five dtypes (float16, int64, int32, uint8, bool) -> float16 (rows, 4): the protocol's datatypes."""

    def forward(self, half, ids, small, pixels, mask):
        extra = ids.float().sum(-1, keepdim=True) + small.float().sum(-1, keepdim=True) \
            + pixels.float().sum(-1, keepdim=True) + mask.float().sum(-1, keepdim=True)
        return (half.float() * 2 + extra).half()


def mixed() -> gl.ServedModel:
    example = (torch.zeros(1, 4, dtype=torch.float16), torch.zeros(1, 3, dtype=torch.int64),
               torch.zeros(1, 2, dtype=torch.int32), torch.zeros(1, 2, dtype=torch.uint8),
               torch.zeros(1, 3, dtype=torch.bool))
    return gl.ServedModel(Mixed(), example, buckets=[1, 2, 4], name="mixed",
                          input_names=["half", "ids", "small", "pixels", "mask"])


class Brain(torch.nn.Module):
    def forward(self, x):
        return x * 2


def bf16() -> gl.ServedModel:
    """bfloat16 in, bfloat16 out: the protocol carries it as binary data only."""
    return gl.ServedModel(Brain(), torch.zeros(1, 3, dtype=torch.bfloat16), buckets=[1, 2], name="bf16")


def tiny_image() -> gl.ServedModel:
    """A small convolutional classifier on 3x32x32 float32 images (top-k, 10 classes): the serving_http study's image
    model where torchvision's ResNet-18 is not installed (its tests on the CPU)."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, stride=2, padding=1), torch.nn.ReLU(),
                              torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 10)).eval()
    return gl.ServedModel(net, torch.randn(2, 3, 32, 32), buckets=[1, 2, 4, 8], answer="top_k", name="tiny_image")
