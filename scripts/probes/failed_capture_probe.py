"""What memory does a failed capture keep? Five failed captures of a GEMM + host sync, then the allocator's segments.

    python3 scripts/probes/failed_capture_probe.py

Prints reserved memory after each failure and every segment left over: its pool, size, what is
allocated in it, its stream, and the use count of its pool where torch reports it.
"""
from __future__ import annotations

import gc
from collections import Counter

import torch

import graphlab as gl
from graphlab.capture.api import capture


def reserved() -> int:
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    return torch.cuda.memory_reserved()


x = torch.randn(1024, 1024, device="cuda")
w = torch.randn(1024, 1024, device="cuda")


def fails(a):
    y = a @ w
    return y.sum().item()


base = reserved()
segments0 = {s["address"] for s in torch.cuda.memory_snapshot()}
for i in range(5):
    try:
        capture(fails, x)
    except gl.CaptureError:
        pass
    print(f"after failure {i + 1}: reserved +{(reserved() - base) / 2**20:.1f} MiB", flush=True)
get_count = getattr(torch._C, "_cuda_getPoolUseCount", None)
print("torch reports pool use counts:", get_count is not None)
left = [s for s in torch.cuda.memory_snapshot() if s["address"] not in segments0]
by_pool = Counter()
for s in left:
    pool = tuple(s.get("segment_pool_id", (0, 0)))
    by_pool[pool] += s["total_size"]
    count = None
    if get_count is not None and pool != (0, 0):
        try:
            count = get_count(0, pool)
        except Exception as exc:  # noqa: BLE001
            count = f"{type(exc).__name__}"
    print(f"segment pool={pool} size={s['total_size'] / 2**20:.1f} MiB allocated={s['allocated_size'] / 2**20:.3f} MiB "
          f"active={s.get('active_size', 0) / 2**20:.3f} MiB type={s.get('segment_type')} stream={s.get('stream')} "
          f"use_count={count} blocks={[(b['size'], b['state']) for b in s['blocks']][:6]}")
print("left over by pool (MiB):", {k: v / 2**20 for k, v in by_pool.items()})
