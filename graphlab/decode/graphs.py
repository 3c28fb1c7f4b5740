"""The decode step captured by graphlab, one graph per batch bucket, and the greedy loop that replays them.

    >>> graphs = DecodeGraphs(model, buckets=[1, 4, 16], max_cache_len=128)          # GPU
    >>> graphs.capture_all()                 # per bucket: a live StaticCache, warm-up on scratch, capture
    >>> tokens = graphs.greedy(prompts, new_tokens=64)    # prefill eagerly, then one replay per token
    >>> graphs.stats()                       # per bucket: capture ms, pool bytes, KV cache bytes

Each bucket owns a live `StaticCache` of its batch size; its graph reads and writes that cache's tensors,
and takes two inputs: the token ids (bucket, 1) and the cache position (1,). The position is a tensor, so
the one graph serves every step. Warm-up (and `check_padding`) run with the cache pointed at scratch
memory (`models.scratch_cache`): they write the cache in place, and the live one is never written by them.

`compiled=True` captures the step compiled by `torch.compile` in its default mode (Inductor's fused kernels,
no CUDA graphs of its own) into graphlab's graph: the compile happens in the scratch warm-up.
A batch smaller than its bucket is padded with copies of its last prompt; the extra rows are dropped.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import torch

from graphlab.cache.buckets import smallest_bucket
from graphlab.clock import Stopwatch
from graphlab.capture.api import finish
from graphlab.capture.captured import CapturedGraph
from graphlab.capture.engine import CaptureEngine
from graphlab.capture.options import CaptureOptions
from graphlab.capture.tensors import grad_context
from graphlab.decode.models import DecodeStep, decode_step, kv_cache_bytes, make_cache, prefill, scratch_cache
from graphlab.errors import BadInputError

WARMUP_CALLS = 3


def compile_default(fn: Any) -> Any:
    """`torch.compile(fn)` in default mode: Inductor's kernels, no CUDA graphs (graphlab captures them)."""
    return torch.compile(fn, mode="default")


def _compiled_body(step: Any, ids: Any, position: Any) -> Any:
    return decode_step(step, ids, position)


@dataclass
class BucketGraph:
    """One bucket: its live cache, its step, its captured graph and what the capture cost."""

    bucket: int
    cache: Any
    step: Any
    graph: CapturedGraph | None = None
    warmup_ms: float | None = None

    def to_dict(self) -> dict[str, Any]:
        cost = self.graph.cost if self.graph is not None else None
        return {"bucket": self.bucket, "kv_cache_bytes": kv_cache_bytes(self.cache),
                "warmup_ms": None if self.warmup_ms is None else round(self.warmup_ms, 3),
                "capture_ms": None if cost is None else round(cost.capture_ms, 3),
                "instantiate_ms": None if cost is None else round(cost.instantiate_ms, 3),
                "pool_bytes": None if cost is None else cost.pool_bytes}


class DecodeGraphs:
    """graphlab's CUDA graphs of a Hugging Face model's decode step, one per batch bucket (see the module doc)."""

    def __init__(self, model: Any, buckets: Sequence[int], max_cache_len: int, *, compiled: bool = False,
                 dot_flags: int = 1):
        buckets = sorted(set(int(b) for b in buckets))
        if not buckets or buckets[0] < 1:
            raise BadInputError(f"buckets must be positive batch sizes, got {list(buckets)}")
        if max_cache_len < 2:
            raise BadInputError(f"max_cache_len must be at least 2, got {max_cache_len}")
        self.model, self.buckets, self.max_cache_len = model, buckets, max_cache_len
        self.compiled, self.dot_flags = compiled, dot_flags
        self._fn = compile_default(_compiled_body) if compiled else decode_step
        self.slots: dict[int, BucketGraph] = {}
        self._pool: Any = None

    # -- capture -------------------------------------------------------------------------------------------
    def bucket_for(self, batch_size: int) -> int:
        bucket = smallest_bucket(batch_size, self.buckets)
        if bucket is None:
            raise BadInputError(f"batch {batch_size} is larger than the largest bucket {self.buckets[-1]}")
        return bucket

    def capture(self, bucket: int) -> BucketGraph:
        """Capture bucket `bucket` (largest first shares the pool best): live cache, scratch warm-up, capture."""
        if bucket not in self.buckets:
            raise BadInputError(f"{bucket} is not one of the buckets {self.buckets}")
        if bucket in self.slots and self.slots[bucket].graph is not None:
            return self.slots[bucket]
        device = self.model.device
        cache = make_cache(self.model, bucket, self.max_cache_len)
        step = DecodeStep(self.model, cache)
        ids = torch.zeros(bucket, 1, dtype=torch.long, device=device)
        position = torch.ones(1, dtype=torch.long, device=device)
        fn = self._fn
        slot = BucketGraph(bucket, cache, step)
        engine = CaptureEngine(device=device, pool=self._pool)
        with grad_context("no_grad"):
            with scratch_cache(cache):
                with Stopwatch(torch.cuda.synchronize) as warming:
                    engine.warm_up(lambda: fn(step, ids, position), WARMUP_CALLS)
                slot.warmup_ms = warming.ms
            outputs = engine.run(lambda: fn(step, ids, position), warmup_calls=0)
        label = f"decode-{'compiled-' if self.compiled else ''}b{bucket}"
        slot.graph = finish(engine, static_inputs=(ids, position), static_outputs=outputs,
                            fn=lambda i, p: fn(step, i, p), name=label,
                            options=CaptureOptions(warmup_calls=WARMUP_CALLS, dot_flags=self.dot_flags))
        if self._pool is None:
            self._pool = slot.graph
        self.slots[bucket] = slot
        return slot

    def capture_all(self) -> DecodeGraphs:
        """Capture every bucket, largest first, into one shared pool."""
        for b in reversed(self.buckets):
            self.capture(b)
        return self

    # -- use -----------------------------------------------------------------------------------------------
    def greedy(self, prompts: Any, new_tokens: int) -> Any:
        """Greedy decode: prefill eagerly into the bucket's live cache, then one replay per new token.

        Returns the new tokens (batch, new_tokens) on the model's device."""
        if prompts.dim() != 2:
            raise BadInputError(f"prompts must be (batch, length) token ids, got shape {tuple(prompts.shape)}")
        batch, length = prompts.shape
        if new_tokens < 1:
            raise BadInputError(f"new_tokens must be at least 1, got {new_tokens}")
        if length + new_tokens > self.max_cache_len:
            raise BadInputError(f"prompt {length} + {new_tokens} new tokens exceed max_cache_len {self.max_cache_len}")
        bucket = self.bucket_for(batch)
        slot = self.capture(bucket)  # its graph is set (capture() raises otherwise)
        padded = prompts if batch == bucket else torch.cat([prompts, prompts[-1:].expand(bucket - batch, -1)])
        first = prefill(self.model, slot.cache, padded.to(self.model.device))
        ids, position = slot.graph.inputs
        next_ids, _ = slot.graph.outputs
        ids.copy_(first)
        position.fill_(length)
        tokens = [first]
        for _ in range(new_tokens - 1):
            slot.graph.replay()
            tokens.append(next_ids.clone())
            ids.copy_(next_ids)
            position.add_(1)
        return torch.cat(tokens, dim=1)[:batch]

    def check_padding(self, prompts: Any) -> dict[str, Any]:
        """Does a batch padded to its bucket give the same next token and logits as the same batch unpadded?

        Runs the bucket's step eagerly with its cache pointed at scratch memory (a replay would write the live
        cache: the graph holds its addresses), against an exact-size scratch cache. No live data is written.
        Returns {"batch", "bucket", "tokens_equal", "max_abs_err"}."""
        batch, length = prompts.shape
        bucket = self.bucket_for(batch)
        slot = self.capture(bucket)
        position = torch.tensor([length], device=prompts.device)
        exact = make_cache(self.model, batch, self.max_cache_len)
        want_ids, want_logits = DecodeStep(self.model, exact)(prefill(self.model, exact, prompts), position)
        padded = prompts if batch == bucket else torch.cat([prompts, prompts[-1:].expand(bucket - batch, -1)])
        with scratch_cache(slot.cache):
            got_ids, got_logits = slot.step(prefill(self.model, slot.cache, padded), position)
            got_ids, got_logits = got_ids[:batch].clone(), got_logits[:batch].clone()
        return {"batch": batch, "bucket": bucket, "tokens_equal": bool(torch.equal(got_ids, want_ids)),
                "max_abs_err": float((got_logits - want_logits).abs().max())}

    def stats(self) -> list[dict[str, Any]]:
        return [self.slots[b].to_dict() for b in self.buckets if b in self.slots]


__all__ = ["WARMUP_CALLS", "BucketGraph", "DecodeGraphs", "compile_default"]
