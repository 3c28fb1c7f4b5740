"""`graphlab record --models cache` and `cache_figures()`: the graph cache's figures, kept as a recording.

Hot-path cost, shared vs private pools, eviction, 16 threads, the padding check (measured by
`graphlab.studies.cache_bench`), and the DOT of the gpt graphs a cache captured for a short request stream
(with its stats). About a minute on an H200.

    >>> figures = cache_figures()      # measured here on a GPU, or the recording in recorded mode
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from graphlab.cache.graph_cache import GraphCache
from graphlab.cache.results import CacheFigures
from graphlab.env import require_cuda
from graphlab.graph.dot_parser import parse_dot
from graphlab.loader import load
from graphlab.mode import stand_in
from graphlab.recordings import gpu_slug, write_recording
from graphlab.studies import cache_bench
from graphlab.studies.record import RECORD_DOT_FLAGS
from graphlab.zoo import get_model

#: the recording's name, as `CacheFigures` declares it (a literal: `graphlab record --help` reads it here)
RECORDING = "cache"

#: the short request stream notebook 05 sends through a GPT cache, and its buckets
DEMO_STREAM = (3, 1, 8, 3, 5, 16, 2, 7, 1, 12)
DEMO_BUCKETS = (1, 2, 4, 8, 16)


def demo_stream() -> tuple[GraphCache, dict[str, Any]]:
    """The zoo GPT's graph cache after the demo stream (on the GPU): the cache, and its stats as recorded."""
    zoo = get_model("gpt")
    model = zoo.build()
    cache = GraphCache(model, buckets=list(DEMO_BUCKETS), max_size=None)
    with torch.no_grad():
        for i, n in enumerate(DEMO_STREAM):
            cache(*zoo.make_inputs(n, seed=i))
    return cache, {"stream": list(DEMO_STREAM), "buckets": list(DEMO_BUCKETS), "stats": cache.stats().to_dict()}


def record(out_root: Path, prov: dict[str, Any]) -> Path:
    """The graph cache's figures: hot path, pools, eviction, threads, padding check, its graphs."""
    results: dict[str, Any] = {}  # every part a CacheFigures reads (`FIGURE_PARTS`)
    for key, run in [("hot_path", lambda: cache_bench.hot_path("mlp", 1)),
                     ("hot_path_gpt", lambda: cache_bench.hot_path("gpt", 1)),
                     ("pools", cache_bench.pool_memory), ("eviction", cache_bench.eviction_memory),
                     ("threads", cache_bench.threads), ("padding_check", cache_bench.padding_check_demo)]:
        print(f"[record] cache: {key}", flush=True)
        try:
            results[key] = run()
        except Exception as exc:  # keep what was measured; say what failed
            results[key] = {"error": f"{type(exc).__name__}: {exc}"}
    cache, results["demo_stats"] = demo_stream()
    graphs = {}
    for label, graph in cache.graphs.items():
        dot = graph.dot(RECORD_DOT_FLAGS)
        graphs[f"gpt_bucket{label}"] = {"dot": dot, "model": parse_dot(dot, source=f"gpt_bucket{label}.dot"),
                                        "batch_size": int(label), "dot_flags": RECORD_DOT_FLAGS,
                                        "capture_ms": graph.capture_ms, "pool_bytes": graph.pool_bytes,
                                        "exec_bytes": graph.exec_bytes}
    folder = out_root / gpu_slug(prov["gpu"]) / RECORDING
    write_recording(folder, name=RECORDING, description="The graph cache on this GPU: hot path, pools, eviction, "
                    "threads, the padding check, and the gpt graphs a cache captured for a short request stream.",
                    provenance=prov, graphs=graphs, results=results)
    return folder


def _recorded_figures() -> CacheFigures:
    """The figures of the cache recording (recorded mode): `gl.load(CacheFigures)`."""
    return load(CacheFigures)


@stand_in(_recorded_figures)
def cache_figures() -> CacheFigures:
    """The graph cache's figures: measured here on a GPU (about a minute), or the recording in recorded mode."""
    require_cuda("cache_figures")
    data = {"hot_path": cache_bench.hot_path("mlp", 1), "pools": cache_bench.pool_memory(),
            "eviction": cache_bench.eviction_memory(), "threads": cache_bench.threads(),
            "padding_check": cache_bench.padding_check_demo(), "demo_stats": demo_stream()[1]}
    return CacheFigures(data)


__all__ = ["DEMO_BUCKETS", "DEMO_STREAM", "RECORDING", "cache_figures", "demo_stream", "record"]
