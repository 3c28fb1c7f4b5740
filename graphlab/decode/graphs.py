"""The decode step captured by graphlab, one graph per batch bucket, and the greedy loop that replays them.

    >>> graphs = DecodeGraphs(model, buckets=[1, 4, 16], max_cache_len=128)          # GPU
    >>> graphs.capture_all()                 # per bucket: its rows of the one cache, warm-up on scratch, capture
    >>> tokens = graphs.greedy(prompts, new_tokens=64)    # prefill eagerly, then one replay per token
    >>> graphs.stats()                       # per bucket: capture ms, pool bytes, KV cache bytes
    >>> gl.profile(graphs, bucket=16).by_module(3)        # GPU time per layer: model.layers.0, ...

**One KV cache** (`shared_cache=True`, the default): the largest bucket's `StaticCache` is the only KV memory;
each smaller bucket's cache is a view of its first B rows (`graphlab.decode.shared_cache`), as serving engines
share one max-size cache across their graphs. One batch lives in it at a time. `shared_cache=False` gives each
bucket a cache of its own (the same tokens; about twice the memory over buckets in powers of two).
Each graph reads and writes its bucket's cache, and takes two inputs: the token ids (bucket, 1) and the cache
position (1,). The position is a tensor, so the one graph serves every step. Warm-up (and `check_padding`) run
with the cache pointed at scratch memory (`models.scratch_cache`): they write the cache in place, and the live
one is never written by them. The buckets' graphs share one memory pool (the first captured graph's).

**Layers by name**: at capture, hooks on every module record which nodes each module's forward made
(`graphlab.capture.module_recorder`, as `gl.profile(model, x)` does), kept with the graph, so `gl.profile(graphs,
bucket=B)` names `model.layers.17.self_attn`, `model.layers.17.mlp`. A compiled step runs no module hooks: its
fused kernels' modules come from Inductor's own record, read while it compiles in the warm-up
(`graphlab.watch.inductor_modules`, as `gl.watch` reads them).

`compiled=True` captures the step compiled by `torch.compile` in its default mode (Inductor's fused kernels,
no CUDA graphs of its own) into graphlab's graph: the compile happens in the scratch warm-up, with the batch
dimension of the ids and the cache marked dynamic (`torch._dynamo.maybe_mark_dynamic`, where torch has it), so the
buckets after the first reuse one compile instead of recompiling once more.
A batch smaller than its bucket is padded with copies of its last prompt; the extra rows are dropped.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence, cast

import contextlib
import warnings

import torch

from graphlab.cache.buckets import smallest_bucket
from graphlab.clock import Stopwatch
from graphlab.capture.api import finish
from graphlab.capture.captured import CapturedGraph
from graphlab.capture.engine import CaptureEngine
from graphlab.capture.module_recorder import record_modules
from graphlab.capture.module_spans import ModuleSpan
from graphlab.capture.options import CaptureOptions
from graphlab.capture.tensors import grad_context
from graphlab.decode.buckets import bucket_label, resolve_bucket
from graphlab.decode.models import (DecodeStep, cache_layers, decode_step, kv_cache_bytes, make_cache, prefill,
                                    scratch_cache)
from graphlab.decode.shared_cache import distinct_kv_bytes, row_cache
from graphlab.errors import BadInputError
from graphlab.graph.export import has_cuda_bindings
from graphlab.watch.inductor_modules import record_kernel_modules
from graphlab.watch.kernel_modules import ROOT, node_modules

WARMUP_CALLS = 3


def compile_default(fn: Any) -> Any:
    """`torch.compile(fn)` in default mode: Inductor's kernels, no CUDA graphs (graphlab captures them)."""
    return torch.compile(fn, mode="default")


def _compiled_body(step: Any, ids: Any, position: Any) -> Any:
    return decode_step(step, ids, position)


def mark_batch_dynamic(ids: Any, cache: Any) -> bool:
    """Mark dimension 0 (the batch) of the token ids and of the cache's keys and values dynamic for torch.compile
    (`torch._dynamo.maybe_mark_dynamic`: a hint, never an error if the compile specialises it); False when this
    torch has no such call (then torch's automatic dynamic shapes recompile once at the second batch size)."""
    mark = getattr(getattr(torch, "_dynamo", None), "maybe_mark_dynamic", None)
    if not callable(mark):
        return False
    mark(ids, 0)
    for layer in cache_layers(cache):
        for name in ("keys", "values"):
            t = getattr(layer, name, None)
            if isinstance(t, torch.Tensor):
                mark(t, 0)
    return True


def model_relative(paths: list[str]) -> list[str]:
    """Dynamo's module paths in `_compiled_body(step, ...)` start at the step (`model.model.layers.0.mlp`: the
    step's `.model` is the causal LM); the eager hooks name them from the LM (`model.layers.0.mlp`). The same
    words for both: the step's leading `model.` dropped, the LM itself `(root)`."""
    out = []
    for path in paths:
        if path == "model":
            out.append(ROOT)
        elif path.startswith("model."):
            out.append(path[len("model."):])
        else:
            out.append(path)
    return list(dict.fromkeys(out))


@dataclass
class BucketGraph:
    """One bucket: its live cache, its step, its captured graph, what the capture cost and the modules behind its
    nodes (`module_spans` for the eager step, `node_modules` for a compiled one; `modules_note` says why none)."""

    bucket: int
    cache: Any
    step: Any
    graph: CapturedGraph | None = None
    warmup_ms: float | None = None
    module_spans: list[ModuleSpan] | None = None
    node_modules: dict[str, list[str]] | None = None
    modules_note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        cost = self.graph.cost if self.graph is not None else None
        return {"bucket": self.bucket, "kv_cache_bytes": kv_cache_bytes(self.cache),
                "warmup_ms": None if self.warmup_ms is None else round(self.warmup_ms, 3),
                "capture_ms": None if cost is None else round(cost.capture_ms, 3),
                "instantiate_ms": None if cost is None else round(cost.instantiate_ms, 3),
                "pool_bytes": None if cost is None else cost.pool_bytes}


class DecodeGraphs:
    """graphlab's CUDA graphs of a Hugging Face model's decode step, one per batch bucket (see the module doc).

    Args:
        model: a Hugging Face causal LM (`graphlab.decode.models.build_model`, or your own) on a CUDA device to
            capture; on any device for `greedy(..., eager=True)`.
        buckets: the batch sizes to capture.
        max_cache_len: the static KV cache's length.
        compiled: capture the step compiled by torch.compile (default mode) instead of the eager step.
        dot_flags: the DOT detail of each graph.
        shared_cache: one KV cache, the largest bucket's, that every bucket works on the first rows of (default);
            False: a cache per bucket.
        modules: record which module made each node at capture (layers by name in `gl.profile`).
    """

    def __init__(self, model: Any, buckets: Sequence[int], max_cache_len: int, *, compiled: bool = False,
                 dot_flags: int = 1, shared_cache: bool = True, modules: bool = True):
        buckets = sorted(set(int(b) for b in buckets))
        if not buckets or buckets[0] < 1:
            raise BadInputError(f"buckets must be positive batch sizes, got {list(buckets)}")
        if max_cache_len < 2:
            raise BadInputError(f"max_cache_len must be at least 2, got {max_cache_len}")
        self.model, self.buckets, self.max_cache_len = model, buckets, max_cache_len
        self.compiled, self.dot_flags = compiled, dot_flags
        self.shared_cache, self.modules = shared_cache, modules
        self._fn = compile_default(_compiled_body) if compiled else decode_step
        self.slots: dict[int, BucketGraph] = {}
        self._caches: dict[int, Any] = {}
        self._steps: dict[int, DecodeStep] = {}
        self._pool: Any = None

    # -- caches --------------------------------------------------------------------------------------------
    def bucket_for(self, batch_size: int) -> int:
        bucket = smallest_bucket(batch_size, self.buckets)
        if bucket is None:
            raise BadInputError(f"batch {batch_size} is larger than the largest bucket {self.buckets[-1]}")
        return bucket

    def cache_for(self, bucket: int) -> Any:
        """Bucket `bucket`'s live cache, made on first use: with `shared_cache`, the largest bucket's cache or a
        view of its first `bucket` rows; else a cache of its own."""
        if bucket not in self.buckets:
            raise BadInputError(f"{bucket} is not one of the buckets {self.buckets}")
        if bucket not in self._caches:
            largest = self.buckets[-1]
            if self.shared_cache and bucket != largest:
                self._caches[bucket] = row_cache(self.model, self.cache_for(largest), bucket)
            else:
                self._caches[bucket] = make_cache(self.model, bucket, self.max_cache_len)
        return self._caches[bucket]

    def step_for(self, bucket: int) -> DecodeStep:
        """Bucket `bucket`'s decode step over its cache (what its graph captures; run eagerly by `greedy(eager=True)`)."""
        if bucket not in self._steps:
            self._steps[bucket] = DecodeStep(self.model, self.cache_for(bucket))
        return self._steps[bucket]

    def kv_cache_bytes(self) -> int:
        """The KV memory every bucket's cache holds together, each storage once (shared: the largest bucket's)."""
        return distinct_kv_bytes(self._caches.values())

    # -- capture -------------------------------------------------------------------------------------------
    def capture(self, bucket: int) -> BucketGraph:
        """Capture bucket `bucket` (largest first shares the pool best): live cache, scratch warm-up, capture."""
        if bucket not in self.buckets:
            raise BadInputError(f"{bucket} is not one of the buckets {self.buckets}")
        if bucket in self.slots and self.slots[bucket].graph is not None:
            return self.slots[bucket]
        device = self.model.device
        cache = self.cache_for(bucket)
        step = self.step_for(bucket)
        ids = torch.zeros(bucket, 1, dtype=torch.long, device=device)
        position = torch.ones(1, dtype=torch.long, device=device)
        fn = self._fn
        slot = BucketGraph(bucket, cache, step)
        engine = CaptureEngine(device=device, pool=self._pool)
        kernels = record_kernel_modules() if self.compiled and self.modules else contextlib.nullcontext()
        hooks = (record_modules(self.model) if self.modules and not self.compiled and has_cuda_bindings()
                 else contextlib.nullcontext())
        with grad_context("no_grad"):
            with scratch_cache(cache):
                if self.compiled:
                    mark_batch_dynamic(ids, cache)
                with kernels, Stopwatch(torch.cuda.synchronize) as warming:
                    engine.warm_up(lambda: fn(step, ids, position), WARMUP_CALLS)
                slot.warmup_ms = warming.ms
            with hooks as recorder:  # not for a compiled step: new hooks would make Dynamo recompile mid-capture
                outputs = engine.run(lambda: fn(step, ids, position), warmup_calls=0)
        label = f"decode-{'compiled-' if self.compiled else ''}{bucket_label(bucket)}"
        slot.graph = finish(engine, static_inputs=(ids, position), static_outputs=outputs,
                            fn=lambda i, p: fn(step, i, p), name=label,
                            options=CaptureOptions(warmup_calls=WARMUP_CALLS, dot_flags=self.dot_flags))
        self._attribute(slot, recorder, kernels)
        if self._pool is None:
            self._pool = slot.graph
        self.slots[bucket] = slot
        return slot

    def _attribute(self, slot: BucketGraph, recorder: Any, kernels: Any) -> None:
        """Keep the modules behind the graph's nodes with the slot and its graph (what gl.profile reads)."""
        if not self.modules:
            slot.modules_note = "not recorded (DecodeGraphs(..., modules=False))"
        elif not self.compiled:
            if recorder is None:
                slot.modules_note = "not recorded: module attribution reads the node count through cuda-bindings"
            elif recorder.error is not None:
                slot.modules_note = f"module attribution failed: {recorder.error}"
            else:
                slot.module_spans = list(recorder.last)
                slot.graph._graphlab_module_spans = slot.module_spans  # noqa: SLF001 - read by gl.profile
        else:
            launches = [[(name, tuple(model_relative(list(mods)))) for name, mods in compile_]
                        for compile_ in kernels.snapshot()]
            if not launches:
                slot.modules_note = kernels.reason
            else:
                try:
                    found, how = node_modules(slot.graph.graph, launches)
                except Exception as exc:  # attribution never breaks a capture
                    found, how = {}, f"could not match kernels to modules: {type(exc).__name__}: {exc}"
                slot.node_modules, slot.modules_note = (found or None), how
                slot.graph._graphlab_node_modules = slot.node_modules  # noqa: SLF001 - read by gl.profile
        if slot.modules_note and slot.module_spans is None and slot.node_modules is None:
            warnings.warn(f"decode bucket {slot.bucket}: no module names ({slot.modules_note})", stacklevel=3)

    def capture_all(self) -> DecodeGraphs:
        """Capture every bucket, largest first, into one shared pool."""
        for b in reversed(self.buckets):
            self.capture(b)
        return self

    def graph_for(self, bucket: Any) -> CapturedGraph:
        """The captured graph of `bucket` (8, "8" or "b8"); a BadInputError naming the captured buckets otherwise."""
        slot = self.slots[resolve_bucket(bucket, self.captured_buckets)]
        return cast(CapturedGraph, slot.graph)  # captured_buckets holds only buckets with a graph

    @property
    def captured_buckets(self) -> list[int]:
        return [b for b in self.buckets if b in self.slots and self.slots[b].graph is not None]

    def release(self) -> None:
        """Drop every graph (their pool goes back to the allocator) and every cache: the memory a later way needs."""
        for slot in self.slots.values():
            if slot.graph is not None:
                slot.graph.reset()
        self.slots.clear()
        self._steps.clear()
        self._caches.clear()
        self._pool = None

    # -- use -----------------------------------------------------------------------------------------------
    def greedy(self, prompts: Any, new_tokens: int, *, eager: bool = False) -> Any:
        """Greedy decode: prefill eagerly into the bucket's live cache, then one replay per new token.

        eager: run the bucket's step eagerly on its cache instead of replaying its graph (no capture: the same
        cache rows, on any device; how the shared cache is checked on a CPU).
        Returns the new tokens (batch, new_tokens) on the model's device."""
        if prompts.dim() != 2:
            raise BadInputError(f"prompts must be (batch, length) token ids, got shape {tuple(prompts.shape)}")
        batch, length = prompts.shape
        if new_tokens < 1:
            raise BadInputError(f"new_tokens must be at least 1, got {new_tokens}")
        if length + new_tokens > self.max_cache_len:
            raise BadInputError(f"prompt {length} + {new_tokens} new tokens exceed max_cache_len {self.max_cache_len}")
        bucket = self.bucket_for(batch)
        padded = prompts if batch == bucket else torch.cat([prompts, prompts[-1:].expand(bucket - batch, -1)])
        if eager:
            step = self.step_for(bucket)
            ids = prefill(self.model, step.cache, padded.to(self.model.device))
            position = torch.full((1,), length, dtype=torch.long, device=self.model.device)
            tokens = [ids]
            for _ in range(new_tokens - 1):
                ids, _ = step(ids, position)
                tokens.append(ids)
                position = position + 1
            return torch.cat(tokens, dim=1)[:batch]
        slot = self.capture(bucket)  # its graph is set (capture() raises otherwise)
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


__all__ = ["WARMUP_CALLS", "BucketGraph", "DecodeGraphs", "compile_default", "mark_batch_dynamic", "model_relative"]
