"""Measurements of the graph cache on a GPU: hot-path cost, pool memory, eviction, threads, the padding check.

Each function returns a JSON-ready dict; `graphlab record --models cache` stores them with provenance
(`graphlab.studies.cache`) and `bench/bench_cache.py` prints them. Memory figures are measured in a
fresh process per configuration (`pool_memory`), after the model has run eagerly on the capture stream,
so library workspaces (cuBLAS, attention) made on first use are not charged to whichever configuration
happens to run first.
"""
from __future__ import annotations

import threading
from typing import Any, Callable

import torch

from graphlab.cache.buckets import Pad
from graphlab.cache.graph_cache import GraphCache
from graphlab.cache.options import CacheOptions
from graphlab.capture.api import capture
from graphlab.capture.streams import side_stream
from graphlab.errors import PaddingError
from graphlab.fresh_process import run_in_fresh_process
from graphlab.stats import median
from graphlab.clock import Stopwatch, block_per_call_us
from graphlab.timing.schedulers import interleave
from graphlab.timing.sync import cuda_sync
from graphlab.zoo import get_model

POOL_MODES = ("shared", "private", "largest_alone")


def interleaved_blocks(variants: dict[str, Callable[[], Any]], blocks: int = 9,
                       calls: int = 1000) -> dict[str, Any]:
    """Host time per back-to-back call of each variant, in interleaved blocks (order alternating), so a
    host that switches speed modes affects all variants alike; the same method as the overhead study's
    host time (`graphlab.clock.block_per_call_us`, include_wait=False). Best and median block,
    and every block."""
    for call in variants.values():
        for _ in range(200):
            call()
    sync = cuda_sync()
    samples = interleave({k: (lambda call=call: block_per_call_us(call, calls, sync, include_wait=False))
                          for k, call in variants.items()}, blocks, order="alternate")
    return {k: {"best_us": min(v), "median_us": median(v), "blocks_us": v} for k, v in samples.items()}


def hot_path(model_name: str = "mlp", batch_size: int = 1) -> dict[str, Any]:
    """A cache hit (views, copies) against raw `static.copy_(x); graph.replay()` and `CapturedGraph(x)`."""
    zoo = get_model(model_name)
    model = zoo.build()
    (x,) = zoo.make_inputs(batch_size)
    with torch.no_grad():
        views = GraphCache(model, buckets=[batch_size], max_size=None, copy_outputs=False)
        copies = GraphCache(model, buckets=[batch_size], max_size=None)
        views(x)
        copies(x)
        cg = capture(model, x)
        raw = cg.torch_graph
        static = cg.inputs[0]

        def raw_copy_replay() -> None:
            static.copy_(x)
            raw.replay()

        result = interleaved_blocks({"raw_copy_replay": raw_copy_replay, "captured_call": lambda: cg(x),
                                            "cache_hit_views": lambda: views(x), "cache_hit_copies": lambda: copies(x)})
    base = result["raw_copy_replay"]["median_us"]
    return {"model": model_name, "batch_size": batch_size, "variants": result,
            "gap_us": {k: v["median_us"] - base for k, v in result.items() if k != "raw_copy_replay"},
            "method": "host time per back-to-back call until the last returns (as the overhead study's host_us); "
                      "9 interleaved blocks of 1000 calls, order alternating; "
                      "gap = median block minus raw copy_+replay's median block"}


def pool_memory_one(model_name: str, mode: str, buckets: list[int]) -> dict[str, Any]:
    """Reserved-memory growth of capturing `buckets` (largest first) in one pool mode, in this process."""
    zoo = get_model(model_name)
    model = zoo.build()
    (example,) = zoo.make_inputs(max(buckets))
    stream = side_stream()
    with torch.no_grad():  # library workspaces and lazy init on the capture stream, before the baseline
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                model(example)
        torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    del example
    torch.cuda.empty_cache()
    before = torch.cuda.memory_reserved()
    chosen = [max(buckets)] if mode == "largest_alone" else buckets
    cache = GraphCache(model, buckets=chosen, max_size=None, pool="private" if mode == "private" else "shared")
    (x,) = zoo.make_inputs(2)
    with Stopwatch(cuda_sync()) as warming:
        cache.warm_up(x, progress=False)
    seconds = warming.s
    stats = cache.stats()
    return {"model": model_name, "mode": mode, "buckets": chosen, "reserved_growth_bytes":
            torch.cuda.memory_reserved() - before, "warmup_s": seconds, "capture_ms": stats.capture_ms,
            "graphs": stats.graphs, "exec_bytes": stats.exec_bytes,
            "per_graph_pool_bytes": {k: g.pool_bytes for k, g in cache.graphs.items()}}


def pool_memory(model_names: tuple[str, ...] = ("mlp", "gpt", "cnn"),
                buckets: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)) -> dict[str, Any]:
    """Shared pool vs one pool per graph vs the largest graph alone; each in a fresh process."""
    out: dict[str, Any] = {}
    for name in model_names:
        row: dict[str, Any] = {}
        for mode in POOL_MODES:
            code = ("from graphlab.studies.cache_bench import pool_memory_one; from graphlab.fresh_process import "
                    f"result_line; print(result_line(pool_memory_one({name!r}, {mode!r}, {list(buckets)!r})))")
            row[mode] = run_in_fresh_process(code, timeout_s=300)
        try:
            row["shared_over_largest"] = row["shared"]["reserved_growth_bytes"] / row["largest_alone"][
                "reserved_growth_bytes"]
            row["private_over_largest"] = row["private"]["reserved_growth_bytes"] / row["largest_alone"][
                "reserved_growth_bytes"]
        except (KeyError, ZeroDivisionError):
            pass
        out[name] = row
    return {"buckets": list(buckets), "models": out,
            "method": "fresh process per configuration; the model runs 3 times eagerly on the capture stream before "
                      "the baseline; growth of torch.cuda.memory_reserved() over GraphCache.warm_up (largest first)"}


def eviction_memory(model_name: str = "gpt") -> dict[str, Any]:
    """Memory held with two large graphs, after evicting them for two small ones, and after clear()."""
    zoo = get_model(model_name)
    model = zoo.build()
    out = {}
    with torch.no_grad():
        model(*zoo.make_inputs(64))
        for mode in ("private", "shared"):
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            base = torch.cuda.memory_reserved()
            cache = GraphCache(model, buckets=[8, 16, 32, 64], max_size=None, pool=mode,
                               options=CacheOptions(max_graphs=2))
            for n in (64, 32):
                cache(*zoo.make_inputs(n))
            held = torch.cuda.memory_reserved() - base
            for n in (16, 8):
                cache(*zoo.make_inputs(n))
            after = torch.cuda.memory_reserved() - base
            evictions = cache.stats().evictions
            cache.clear()
            torch.cuda.empty_cache()
            out[mode] = {"holding_64_and_32_bytes": held, "after_evicting_them_for_16_and_8_bytes": after,
                         "after_clear_bytes": torch.cuda.memory_reserved() - base, "evictions": evictions}
    return {"model": model_name, "max_graphs": 2, "results": out,
            "method": "memory_reserved growth over a baseline taken after one eager call at batch 64"}


def threads(model_name: str = "mlp", n_threads: int = 16, calls: int = 50) -> dict[str, Any]:
    """`n_threads` threads calling one cache with mixed sizes: results equal eager, no key captured twice."""
    zoo = get_model(model_name)
    model = zoo.build()
    cache = GraphCache(model, buckets="pow2", max_size=64)
    errors: list[str] = []
    worst = [0.0]

    def work(seed: int) -> None:
        gen = torch.Generator().manual_seed(seed)
        try:
            with torch.no_grad():
                for i in range(calls):
                    n = int(torch.randint(1, 65, (1,), generator=gen))
                    (x,) = zoo.make_inputs(n, seed=seed * 1000 + i)
                    got = cache(x)
                    want = model(x)
                    worst[0] = max(worst[0], float((got - want).abs().max()))
        except Exception as exc:  # noqa: BLE001 - reported
            errors.append(f"{type(exc).__name__}: {exc}")

    clock = Stopwatch().start()
    pool = [threading.Thread(target=work, args=(s,)) for s in range(n_threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(timeout=120)
    stats = cache.stats()
    return {"model": model_name, "threads": n_threads, "calls_per_thread": calls, "errors": errors,
            "alive_after_join": sum(t.is_alive() for t in pool), "max_abs_err_vs_eager": worst[0],
            "captures": stats.captures, "graphs": stats.graphs, "calls": stats.calls, "seconds": clock.stop()}


def padding_check_demo() -> dict[str, Any]:
    """A bidirectional encoder padded along the sequence: the cache refuses, naming the dimension."""
    encoder = get_model("encoder").build()
    ids = torch.randint(1, 512, (2, 40), device="cuda")
    out: dict[str, Any] = {}
    cache = GraphCache(encoder, dims=[Pad("seq", dim=1, buckets=[16, 32, 64], max_size=None, out_dim=1)])
    with torch.no_grad():
        try:
            cache(ids)
            out["encoder"] = {"raised": False}
        except PaddingError as err:
            out["encoder"] = {"raised": True, "message": str(err), "max_abs_err": err.max_abs_err}
        gpt = get_model("gpt").build()
        causal = GraphCache(gpt, dims=[Pad("seq", dim=1, buckets=[16, 32, 64], max_size=None, out_dim=1)])
        got = causal(ids)
        out["causal_gpt"] = {"raised": False, "max_abs_err_vs_eager": float((got - gpt(ids)).abs().max())}
    return out


__all__ = ["eviction_memory", "hot_path", "interleaved_blocks", "padding_check_demo", "pool_memory",
           "pool_memory_one", "threads"]
