"""Give every captured graph its own cuBLAS workspace.

torch keeps one cuBLAS workspace per (cuBLAS handle, stream), made on first use, and a GEMM captured
into a graph bakes that workspace's address in. graphlab captures on one side stream per device, so
without care every graph on a device shares one workspace:

- two graphs replayed at the same time on two streams (two replicas on one GPU, two threads) race on
  it: on the H200 (torch 2.11) two zoo GPT graphs replayed from two threads hit "an illegal memory
  access was encountered" within a second, and the replica throughput measurement hung;
- where torch frees a stream's workspaces when a graph captured on it is destroyed
  (pytorch/pytorch#193402), resetting one graph leaves every other graph captured on that stream
  with a dangling address.

The cure is the one torch.compile's CUDA-graph trees use: clear the workspaces right before a
capture, so the capture allocates a fresh one inside the graph's own memory pool, and right after
it, so no later eager call on that stream writes into it. The workspace then lives and dies with the
graph's pool, like any other buffer of the graph. What it costs in pool memory is measured by
a probe at commit 4551de3 and written in docs/multi-gpu.md.
"""
from __future__ import annotations

from typing import Any, Callable

import torch


def workspace_clearer() -> Callable[[], Any] | None:
    """torch's function that drops the cached cuBLAS workspaces, or None where this torch has none.

    Feature-detected: the public `torch.cuda.clear_cublas_workspaces` of newer torch, else the
    private `torch._C._cuda_clearCublasWorkspaces` (torch 2.0 and later).
    """
    public = getattr(getattr(torch, "cuda", None), "clear_cublas_workspaces", None)
    if callable(public):
        return public
    private = getattr(getattr(torch, "_C", None), "_cuda_clearCublasWorkspaces", None)
    return private if callable(private) else None


def clear_cublas_workspaces() -> bool:
    """Drop the cached cuBLAS workspaces (the next GEMM on each stream makes a new one); False if unsupported."""
    clear = workspace_clearer()
    if clear is None:
        return False
    clear()
    return True


__all__ = ["clear_cublas_workspaces", "workspace_clearer"]
