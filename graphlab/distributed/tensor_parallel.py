"""Tensor-parallel building blocks: column- and row-parallel Linear, and a GPT-style layer built from them.

Megatron's split, for inference: a column-parallel Linear keeps `out_features / world_size` rows of the
weight, so each rank computes its own slice of the output and needs no communication; a row-parallel
Linear keeps `in_features / world_size` columns, takes that slice as input, computes a partial sum,
and one all-reduce adds the partial sums (the bias is added once, after it). A block is column then
row: one all-reduce per block. A GPT-style layer has two blocks (attention: q, k, v column-parallel
by heads, the output projection row-parallel; MLP: fc1 column, fc2 row), so two all-reduces.

The all-reduce is `torch.distributed.all_reduce` on the default (or given) process group: under
`torchrun` with NCCL it is an NCCL kernel, which `gl.capture` records into the graph like any other
kernel (`graphlab.distributed.capture` holds the rules for that). Without an initialised process
group the layers run as a world of one (the all-reduce is skipped), so the same code is the
single-GPU model.

    >>> from graphlab.distributed import tensor_parallel as tp
    >>> dense = tp.dense_gpt_layer(width=256, heads=8)          # the single-GPU layer (seeded)
    >>> layer = tp.shard_gpt_layer(dense, rank=0, world_size=2)  # this rank's half of every weight
    >>> layer(x)   # under torchrun on 2 GPUs: equal to dense(x) on every rank
"""
from __future__ import annotations

import copy
import functools
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn import functional as F

from graphlab.errors import DistributedError

DEFAULT_WIDTH = 256
DEFAULT_HEADS = 8
DEFAULT_SEQ_LEN = 32
WEIGHT_SEED = 0


def _check_split(what: str, size: int, world_size: int) -> int:
    if world_size < 1:
        raise DistributedError(f"world_size must be at least 1, got {world_size}")
    if size % world_size:
        raise DistributedError(f"{what} ({size}) is not divisible by the world size {world_size}: choose sizes "
                               "that split evenly across the ranks")
    return size // world_size


class AllReduce(nn.Module):
    """Sum a tensor in place across the process group (skipped when no group is initialised)."""

    def __init__(self, group: Any = None):
        super().__init__()
        self.group = group

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if dist.is_available() and dist.is_initialized():
            dist.all_reduce(x, group=self.group)
        return x


class ColumnParallelLinear(nn.Module):
    """Rows `rank` of `world_size` of a Linear's weight: output slice, no communication."""

    def __init__(self, in_features: int, out_features: int, *, rank: int, world_size: int, bias: bool = True):
        super().__init__()
        self.rank, self.world_size = rank, world_size
        local = _check_split("out_features", out_features, world_size)
        self.weight = nn.Parameter(torch.empty(local, in_features))
        self.bias = nn.Parameter(torch.zeros(local)) if bias else None

    @classmethod
    def from_dense(cls, linear: nn.Linear, *, rank: int, world_size: int) -> ColumnParallelLinear:
        layer = cls(linear.in_features, linear.out_features, rank=rank, world_size=world_size,
                    bias=linear.bias is not None)
        rows = slice(rank * layer.weight.shape[0], (rank + 1) * layer.weight.shape[0])
        with torch.no_grad():
            layer.weight.copy_(linear.weight[rows])
            if layer.bias is not None:
                layer.bias.copy_(linear.bias[rows])
        return layer.to(linear.weight.device, linear.weight.dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight, self.bias)


class RowParallelLinear(nn.Module):
    """Columns `rank` of `world_size` of a Linear's weight: partial sum, all-reduce, then the bias."""

    def __init__(self, in_features: int, out_features: int, *, rank: int, world_size: int, bias: bool = True,
                 group: Any = None):
        super().__init__()
        self.rank, self.world_size = rank, world_size
        local = _check_split("in_features", in_features, world_size)
        self.weight = nn.Parameter(torch.empty(out_features, local))
        self.bias = nn.Parameter(torch.zeros(out_features)) if bias else None
        self.all_reduce = AllReduce(group)

    @classmethod
    def from_dense(cls, linear: nn.Linear, *, rank: int, world_size: int, group: Any = None) -> RowParallelLinear:
        layer = cls(linear.in_features, linear.out_features, rank=rank, world_size=world_size,
                    bias=linear.bias is not None, group=group)
        cols = slice(rank * layer.weight.shape[1], (rank + 1) * layer.weight.shape[1])
        with torch.no_grad():
            layer.weight.copy_(linear.weight[:, cols])
            if layer.bias is not None:
                layer.bias.copy_(linear.bias)
        return layer.to(linear.weight.device, linear.weight.dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.all_reduce(F.linear(x, self.weight))
        return y if self.bias is None else y + self.bias


class TensorParallelMLP(nn.Module):
    """The tensor-parallel block: column-parallel fc1, GELU, row-parallel fc2 (one all-reduce)."""

    def __init__(self, fc1: ColumnParallelLinear, fc2: RowParallelLinear):
        super().__init__()
        self.fc1, self.fc2 = fc1, fc2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(x)))


class TensorParallelAttention(nn.Module):
    """Causal self-attention over this rank's heads; the output projection is row-parallel."""

    def __init__(self, q: ColumnParallelLinear, k: ColumnParallelLinear, v: ColumnParallelLinear,
                 proj: RowParallelLinear, local_heads: int):
        super().__init__()
        self.q, self.k, self.v, self.proj = q, k, v, proj
        self.local_heads = local_heads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch_size, seq_len, _ = x.shape
        q, k, v = (m(x).view(batch_size, seq_len, self.local_heads, -1).transpose(1, 2)
                   for m in (self.q, self.k, self.v))
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(attn.transpose(1, 2).reshape(batch_size, seq_len, -1))


class GPTLayer(nn.Module):
    """The single-GPU reference: pre-norm causal self-attention, then a GELU MLP (4x width)."""

    def __init__(self, width: int = DEFAULT_WIDTH, heads: int = DEFAULT_HEADS, ffn: int | None = None):
        super().__init__()
        ffn = ffn or 4 * width
        _check_split("width", width, heads)
        self.width, self.heads, self.ffn = width, heads, ffn
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.q, self.k, self.v, self.proj = (nn.Linear(width, width) for _ in range(4))
        self.fc1, self.fc2 = nn.Linear(width, ffn), nn.Linear(ffn, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch_size, seq_len, width = x.shape
        h = self.ln1(x)
        q, k, v = (m(h).view(batch_size, seq_len, self.heads, -1).transpose(1, 2) for m in (self.q, self.k, self.v))
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attn.transpose(1, 2).reshape(batch_size, seq_len, width))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class TensorParallelGPTLayer(nn.Module):
    """`GPTLayer` split across `world_size` ranks: two all-reduces per call (attention, MLP)."""

    def __init__(self, ln1: nn.LayerNorm, attention: TensorParallelAttention, ln2: nn.LayerNorm,
                 mlp: TensorParallelMLP, *, rank: int, world_size: int):
        super().__init__()
        self.ln1, self.attention, self.ln2, self.mlp = ln1, attention, ln2, mlp
        self.rank, self.world_size = rank, world_size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.ln1(x))
        return x + self.mlp(self.ln2(x))


def dense_gpt_layer(width: int = DEFAULT_WIDTH, heads: int = DEFAULT_HEADS, ffn: int | None = None, *,
                    device: torch.device | str = "cpu", dtype: torch.dtype | None = None,
                    seed: int = WEIGHT_SEED) -> GPTLayer:
    """The single-GPU `GPTLayer`, eval mode, weights from `seed` (the same on every rank)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        layer = GPTLayer(width, heads, ffn)
    return layer.to(device=device, dtype=dtype or torch.float32).eval()


def shard_gpt_layer(dense: GPTLayer, *, rank: int, world_size: int, group: Any = None,
                    device: torch.device | str | None = None) -> TensorParallelGPTLayer:
    """This rank's `TensorParallelGPTLayer` cut from a dense `GPTLayer` (so the two can be compared).

    Raises:
        DistributedError: heads or the MLP width do not split evenly over `world_size`, or `rank` is out of range.
    """
    if not 0 <= rank < world_size:
        raise DistributedError(f"rank {rank} is outside the world of {world_size} rank(s)")
    local_heads = _check_split("heads", dense.heads, world_size)
    _check_split("ffn width", dense.ffn, world_size)
    col = functools.partial(ColumnParallelLinear.from_dense, rank=rank, world_size=world_size)
    row = functools.partial(RowParallelLinear.from_dense, rank=rank, world_size=world_size, group=group)
    attention = TensorParallelAttention(col(dense.q), col(dense.k), col(dense.v), row(dense.proj), local_heads)
    mlp = TensorParallelMLP(col(dense.fc1), row(dense.fc2))
    layer = TensorParallelGPTLayer(copy.deepcopy(dense.ln1), attention, copy.deepcopy(dense.ln2), mlp, rank=rank,
                                   world_size=world_size).eval()
    return layer if device is None else layer.to(device)


def shard_mlp(fc1: nn.Linear, fc2: nn.Linear, *, rank: int, world_size: int, group: Any = None) -> TensorParallelMLP:
    """The tensor-parallel block (column fc1, GELU, row fc2) cut from two dense Linear layers."""
    return TensorParallelMLP(ColumnParallelLinear.from_dense(fc1, rank=rank, world_size=world_size),
                             RowParallelLinear.from_dense(fc2, rank=rank, world_size=world_size, group=group))


def make_layer_input(batch_size: int, width: int = DEFAULT_WIDTH, seq_len: int = DEFAULT_SEQ_LEN, *,
                     device: torch.device | str = "cpu", dtype: torch.dtype | None = None,
                     seed: int = 0) -> torch.Tensor:
    """A random (batch_size, seq_len, width) activation, the same on every rank for the same seed."""
    if batch_size < 1:
        raise DistributedError(f"batch_size must be at least 1, got {batch_size}")
    generator = torch.Generator(device="cpu").manual_seed(seed)
    return torch.randn(batch_size, seq_len, width, generator=generator).to(device=device, dtype=dtype or torch.float32)


__all__ = ["DEFAULT_HEADS", "DEFAULT_SEQ_LEN", "DEFAULT_WIDTH", "AllReduce", "ColumnParallelLinear", "GPTLayer",
           "RowParallelLinear", "TensorParallelAttention", "TensorParallelGPTLayer", "TensorParallelMLP",
           "dense_gpt_layer", "make_layer_input", "shard_gpt_layer", "shard_mlp"]
