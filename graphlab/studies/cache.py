"""`graphlab record --models cache` and `--models traffic`: the graph cache's figures, kept as recordings.

cache:   hot-path cost, shared vs private pools, eviction, 16 threads, the padding check, and the DOT of
         the gpt graphs a cache captured for a short request stream (with its stats).
traffic: a request trace replayed through eager, the advisor's cache, a powers-of-two cache and
         torch.compile (see `graphlab.studies.traffic`).
Each runs about a minute or two on an H200. Layer 2.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from graphlab.studies.record import RECORD_DOT_FLAGS


def _folder(out_root: Path, prov: dict[str, Any], name: str) -> Path:
    from graphlab.recordings import gpu_slug

    return out_root / gpu_slug(prov["gpu"]) / name


def record_cache(torch: Any, out_root: Path, prov: dict[str, Any]) -> Path:
    from graphlab.recordings import write_recording
    from graphlab.studies import cache_bench
    from graphlab.cache.graph_cache import GraphCache
    from graphlab.zoo import get_model

    results: dict[str, Any] = {}
    for key, run in [("hot_path", lambda: cache_bench.hot_path("mlp", 1)),
                     ("hot_path_gpt", lambda: cache_bench.hot_path("gpt", 1)),
                     ("pools", cache_bench.pool_memory), ("eviction", cache_bench.eviction_memory),
                     ("threads", cache_bench.threads), ("padding_check", cache_bench.padding_check_demo)]:
        print(f"[record] cache: {key}", flush=True)
        try:
            results[key] = run()
        except Exception as exc:  # keep what was measured; say what failed
            results[key] = {"error": f"{type(exc).__name__}: {exc}"}
    zoo = get_model("gpt")
    model = zoo.build()
    cache = GraphCache(model, buckets=[1, 2, 4, 8, 16], max_size=None)
    stream = [3, 1, 8, 3, 5, 16, 2, 7, 1, 12]
    with torch.no_grad():
        for i, n in enumerate(stream):
            cache(*zoo.make_inputs(n, seed=i))
    results["demo_stats"] = {"stream": stream, "buckets": [1, 2, 4, 8, 16], "stats": cache.stats().to_dict()}
    graphs = {}
    from graphlab.graph.dot_parser import parse_dot

    for label, graph in cache.graphs.items():
        dot = graph.dot(RECORD_DOT_FLAGS)
        graphs[f"gpt_bucket{label}"] = {"dot": dot, "model": parse_dot(dot, source=f"gpt_bucket{label}.dot"),
                                        "batch_size": int(label), "dot_flags": RECORD_DOT_FLAGS,
                                        "capture_ms": graph.capture_ms, "memory_bytes": graph.pool_bytes,
                                        "exec_bytes": graph.exec_bytes}
    folder = _folder(out_root, prov, "cache")
    write_recording(folder, name="cache", description="The graph cache on this GPU: hot path, pools, eviction, "
                    "threads, the padding check, and the gpt graphs a cache captured for a short request stream.",
                    provenance=prov, graphs=graphs, results=results)
    return folder


def record_traffic(torch: Any, out_root: Path, prov: dict[str, Any]) -> Path:
    from graphlab.recordings import write_recording
    from graphlab.studies.traffic import replay_all

    print("[record] traffic: latency table, advisor, then each setting in a fresh process", flush=True)
    result = replay_all()
    folder = _folder(out_root, prov, "traffic")
    write_recording(folder, name="traffic", description="A request trace (log-normal sizes, Poisson arrivals, "
                    "seed 0) replayed through eager, GraphCache (advisor buckets, powers of two) and torch.compile "
                    "reduce-overhead (static and dynamic=True) on the zoo GPT.", provenance=prov, graphs={},
                    results={"traffic": result})
    return folder


def _recorded(name: str, key: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    from graphlab.recordings import load_recording
    from graphlab.mode import recorded_gpu

    try:
        rec = load_recording(name, gpu=recorded_gpu())
    except Exception as exc:
        from graphlab.errors import RecordingError

        raise RecordingError(f"no {name!r} recording for {recorded_gpu()} ({exc}); make it on a GPU with "
                             f"`graphlab record --models {name}`") from None
    data = rec.results(key or name) if key else {k: rec.results(k) for k in rec.result_names}
    return data, rec.provenance


def cache_figures() -> Any:
    """The graph cache's figures: measured here on a GPU (about a minute), or the recording in recorded mode."""
    from graphlab.cache.results import CacheFigures
    from graphlab.mode import is_recorded

    if is_recorded():
        data, prov = _recorded("cache", None)
        return CacheFigures(data, prov)
    from graphlab.env import require_cuda

    torch = require_cuda("gl.cache_figures")
    from graphlab.studies import cache_bench

    data = {"hot_path": cache_bench.hot_path("mlp", 1), "pools": cache_bench.pool_memory(),
            "eviction": cache_bench.eviction_memory(), "threads": cache_bench.threads(),
            "padding_check": cache_bench.padding_check_demo()}
    del torch
    return CacheFigures(data)


def traffic_replay() -> Any:
    """The traffic replay: run here on a GPU (about two minutes), or the recording in recorded mode."""
    from graphlab.cache.results import TrafficReplay
    from graphlab.mode import is_recorded

    if is_recorded():
        data, prov = _recorded("traffic", "traffic")
        return TrafficReplay(data, prov)
    from graphlab.env import require_cuda
    from graphlab.studies.traffic import replay_all

    require_cuda("gl.traffic_replay")
    return TrafficReplay(replay_all())


__all__ = ["cache_figures", "record_cache", "record_traffic", "traffic_replay"]
