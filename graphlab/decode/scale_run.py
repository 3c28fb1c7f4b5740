"""Run one way of the 8B-class decode comparison at every bucket, on one shared KV cache (GPU; the eager way runs
anywhere). What it measured goes into a `graphlab.decode.scale.ScaleRow` per bucket.

    >>> model = build_on_device(SCALE_CONFIG, "cuda", torch.bfloat16)     # random init on the GPU, nothing on the CPU
    >>> rows, memory, dots = run_way("graphlab", model, ScaleOptions())

The ways (`graphlab.decode.results.WAYS`): "eager" (HF's step, eagerly), "reduce-overhead" (torch.compile's
CUDAGraph Trees), "graphlab" (graphlab's graphs of the eager step), "graphlab+compile" (graphlab's graphs of the
step compiled in default mode). Every way works on the same `DecodeGraphs` caches: the largest bucket's
`StaticCache` and views of its first rows. Per bucket, smallest first:
1. tokens: the way and HF eager (on an exact-size cache of its own) are fed HF eager's tokens step by step for
   `new_tokens` steps after the prompt; the first step whose greedy token differs and the largest logit
   difference (HF eager itself is the reference: not checked);
2. timing: one step at the prompt's position, called over and over (`graphlab.decode.ways.time_ways`: the one
   timer, host wall time per call); p50 and p90.
After the way, its graphs, caches and compiled code are dropped (`release_way`), so the next way starts from the
weights alone.

torch at the top.
"""
from __future__ import annotations

import gc
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from transformers import AutoModelForCausalLM, LlamaConfig

from graphlab.clock import Stopwatch
from graphlab.decode.buckets import bucket_label
from graphlab.decode.graphs import DecodeGraphs, mark_batch_dynamic
from graphlab.decode.models import (INIT_RANGE, DecodeStep, kv_cache_bytes, make_cache, make_prompts, prefill)
from graphlab.decode.results import WAYS
from graphlab.decode.scale import ScaleRow
from graphlab.decode.ways import _ro_body, time_ways
from graphlab.errors import BadInputError
from graphlab.stats import percentile

#: Llama-3-8B's shape (random init: nothing is downloaded)
SCALE_CONFIG: dict[str, Any] = dict(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                                    num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=8192,
                                    rope_theta=500000.0, tie_word_embeddings=False)
#: the same code at a size a CPU test runs (no figure is claimed from it)
TOY_CONFIG: dict[str, Any] = dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                                  tie_word_embeddings=False)
DTYPES = {"bfloat16": torch.bfloat16, "float32": torch.float32}


@dataclass(frozen=True)
class ScaleOptions:
    """What one decode_scale run runs: the model, the lengths, the buckets and the timing rounds."""

    config: dict[str, Any] = field(default_factory=lambda: dict(SCALE_CONFIG))
    dtype: str = "bfloat16"
    prompt_len: int = 128
    max_cache_len: int = 1024
    new_tokens: int = 32
    buckets: tuple[int, ...] = (1, 8, 64, 256)
    rounds: int = 3
    device: str = "cuda"

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise BadInputError(f"dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")
        if self.prompt_len + self.new_tokens > self.max_cache_len:
            raise BadInputError(f"prompt {self.prompt_len} + {self.new_tokens} new tokens exceed max_cache_len "
                                f"{self.max_cache_len}")
        if not self.buckets or min(self.buckets) < 1:
            raise BadInputError(f"buckets must be positive batch sizes, got {list(self.buckets)}")

    def conditions(self) -> dict[str, Any]:
        """What every part of one recording must share (`graphlab.decode.scale.SAME_IN_EVERY_PART`)."""
        return {"dtype": self.dtype, "prompt_len": self.prompt_len, "max_cache_len": self.max_cache_len,
                "new_tokens": self.new_tokens, "rounds": self.rounds, "init_range": INIT_RANGE,
                "config": dict(self.config), "attention": "sdpa",
                "timer": "graphlab.timing.blocks.BlockTimer, host wall per step (graphlab.decode.ways.time_ways)"}


def build_on_device(config: dict[str, Any], device: Any, dtype: Any, *, seed: int = 0) -> Any:
    """A random-init Llama-style causal LM made directly on `device` in `dtype` (`with torch.device(device)` and
    `dtype` as the default dtype while it is built): nothing downloaded, no copy of it made on the CPU."""
    cfg = LlamaConfig(**config, initializer_range=INIT_RANGE, bos_token_id=0, eos_token_id=1, pad_token_id=None)
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(seed)
    before = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            model = AutoModelForCausalLM.from_config(cfg)
    finally:
        torch.set_default_dtype(before)
    wrong = sorted({str(p.dtype) for p in model.parameters()} - {str(dtype)})
    if wrong:
        raise BadInputError(f"the model was built with parameters in {wrong}, not {dtype}")
    return model.eval()


def release_way(*held: Any) -> None:
    """Free what a way held: its graphs and caches (`DecodeGraphs.release`), torch.compile's code and CUDAGraph
    Trees, then the allocator's cached blocks."""
    for item in held:
        release = getattr(item, "release", None)
        if callable(release):
            release()
    reset = getattr(getattr(torch, "_dynamo", None), "reset", None)
    if callable(reset):
        reset()
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def first_difference(got_ids: list[Any], want_ids: list[Any]) -> int | None:
    """The first step (1-based) whose tokens differ in any row, or None."""
    for step, (got, want) in enumerate(zip(got_ids, want_ids), 1):
        if not torch.equal(got, want):
            return step
    return None


def check_tokens(step_fn: Callable[[Any, Any], tuple[Any, Any]], cache: Any, model: Any, prompts: Any,
                 new_tokens: int, max_cache_len: int) -> tuple[bool, int | None, float]:
    """(tokens equal, first differing step, largest logit difference): `step_fn(ids, position)` over `cache` (as
    many rows as `prompts`) and HF eager on an exact-size cache of its own, both fed HF eager's tokens after the
    same prompt. Step 0 is the prefill's token."""
    batch, length = prompts.shape
    if int(cache.layers[0].keys.shape[0]) != batch:
        raise BadInputError(f"the cache holds {int(cache.layers[0].keys.shape[0])} rows, the prompts {batch}")
    ref_cache = make_cache(model, batch, max_cache_len)
    ref = DecodeStep(model, ref_cache)
    want_first = prefill(model, ref_cache, prompts)
    got_ids, want_ids = [prefill(model, cache, prompts)], [want_first]
    largest = 0.0
    token = want_first
    for s in range(new_tokens):
        position = torch.tensor([length + s], device=model.device)
        want, want_logits = ref(token, position)
        got, got_logits = step_fn(token, position)
        got_ids.append(got.clone())
        want_ids.append(want.clone())
        largest = max(largest, float((got_logits.float() - want_logits.float()).abs().max()))
        token = want
    differs = first_difference(got_ids, want_ids)
    return differs is None, (None if differs is None else differs - 1), largest


def _timed(way: str, batch: int, call: Callable[[], Any], rounds: int) -> dict[str, Any]:
    wall = time_ways({way: call}, rounds=rounds)[way]
    return {"p50_us": percentile(wall, 50.0), "p90_us": percentile(wall, 90.0), "calls": len(wall)}


def run_way(way: str, model: Any, options: ScaleOptions, *, say: Callable[[str], None] = print,
            keep_dots: dict[str, str] | None = None) -> tuple[list[ScaleRow], dict[str, Any]]:
    """Every bucket of one way (see the module doc): its rows, and its memory ({"kv_bytes", "largest_kv_bytes",
    "pool_bytes", "largest_pool_bytes"}). A bucket that fails is a row with `skipped` saying why."""
    if way not in WAYS:
        raise BadInputError(f"unknown way {way!r}; choose from {', '.join(WAYS)}")
    buckets = sorted(set(options.buckets))
    largest = buckets[-1]
    graphs = DecodeGraphs(model, buckets, options.max_cache_len, compiled=way == "graphlab+compile")
    rows: dict[int, ScaleRow] = {b: ScaleRow(way, b) for b in buckets}
    calls: dict[int, Callable[[Any, Any], tuple[Any, Any]]] = {}
    ro = torch.compile(_ro_body, mode="reduce-overhead") if way == "reduce-overhead" else None
    order = list(reversed(buckets)) if way.startswith("graphlab") else buckets  # graphs: largest first, one pool
    for b in order:
        row = rows[b]
        row.kv_cache_bytes = kv_cache_bytes(graphs.cache_for(b))
        try:
            if way.startswith("graphlab"):
                slot = graphs.capture(b)
                cost = slot.graph.cost
                row.warmup_ms, row.capture_ms = slot.warmup_ms, cost.capture_ms
                row.instantiate_ms, row.pool_bytes = cost.instantiate_ms, cost.pool_bytes
                row.nodes = len(list(slot.graph.graph.nodes()))
                calls[b] = slot.graph
                if keep_dots is not None and b == buckets[0]:
                    keep_dots[f"{way.replace('+', '-')}-{bucket_label(b)}"] = slot.graph.dot()
                say(f"{way} {bucket_label(b)}: warm-up {row.warmup_ms:.0f} ms, capture {row.capture_ms:.0f} ms, "
                    f"instantiate {row.instantiate_ms:.0f} ms, pool +{row.pool_bytes / 2**20:.0f} MiB, "
                    f"{row.nodes} nodes")
            elif way == "reduce-overhead":
                step = graphs.step_for(b)
                ids = torch.zeros(b, 1, dtype=torch.long, device=model.device)
                position = torch.tensor([options.prompt_len], device=model.device)
                mark_batch_dynamic(ids, step.cache)
                with Stopwatch(torch.cuda.synchronize) as first:
                    for _ in range(3):  # compile + warm-up, record, first replay
                        ro(step, ids, position)
                row.first_calls_ms = first.ms
                calls[b] = lambda i, p, s=step: ro(s, i, p)
                say(f"reduce-overhead {bucket_label(b)}: first 3 calls {first.ms:.0f} ms")
            else:
                calls[b] = graphs.step_for(b)
        except Exception as exc:  # recorded, not hidden: the row says why
            row.skipped = f"{type(exc).__name__}: {str(exc)[:300]}"
            say(f"{way} {bucket_label(b)}: failed: {row.skipped}")
    for b in buckets:
        row = rows[b]
        if b not in calls:
            continue
        cache = graphs.cache_for(b)
        try:
            prompts = make_prompts(model, b, options.prompt_len, seed=b)
            if way != "eager":
                row.tokens_equal, row.first_diverging_step, row.max_logit_diff = check_tokens(
                    calls[b], cache, model, prompts, options.new_tokens, options.max_cache_len)
                gc.collect()
                if torch.cuda.is_available():
                    torch.cuda.empty_cache()  # the reference's exact-size cache
            prefill(model, cache, prompts)
            ids = torch.zeros(b, 1, dtype=torch.long, device=model.device)
            position = torch.tensor([options.prompt_len], device=model.device)
            timed = _timed(way, b, lambda f=calls[b]: f(ids, position), options.rounds)
            row.p50_us, row.p90_us, row.calls = timed["p50_us"], timed["p90_us"], timed["calls"]
            say(f"{way} {bucket_label(b)}: p50 {row.p50_us:.1f} µs, p90 {row.p90_us:.1f} µs; tokens "
                f"{'equal' if row.tokens_equal else row.tokens_equal} (first differs at {row.first_diverging_step}, "
                f"largest logit difference {row.max_logit_diff})")
        except Exception as exc:  # recorded, not hidden
            row.skipped = f"{type(exc).__name__}: {str(exc)[:300]}"
            say(f"{way} {bucket_label(b)}: failed: {row.skipped}")
    pools = [r.pool_bytes for r in rows.values() if r.pool_bytes is not None]
    memory = {"kv_bytes": graphs.kv_cache_bytes(), "largest_kv_bytes": rows[largest].kv_cache_bytes,
              "pool_bytes": sum(pools) if pools else None, "largest_pool_bytes": rows[largest].pool_bytes}
    release_way(graphs)
    return [rows[b] for b in buckets], memory


__all__ = ["DTYPES", "SCALE_CONFIG", "TOY_CONFIG", "ScaleOptions", "build_on_device", "check_tokens",
           "first_difference", "release_way", "run_way"]
