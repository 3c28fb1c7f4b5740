"""Probe: the capture engine's call path and the graph cache on the H200 (issues 8 and 9).

    PYTHONPATH=. python3 scripts/probes/engine_probe.py --out DIR        # about 40 s

Each check runs in its own try/except; results land in DIR/engine_probe.json.
  call_overhead   host time per call, back-to-back, interleaved blocks of 1000 calls (best and median block):
                  raw replay, raw copy_+replay, cg(x), cg.unchecked(x), cg.replay(); tiny 16x16 graph and zoo mlp b1
  wrong_device    the error for a CPU tensor passed to a CUDA graph
  failed_pool     memory_reserved after 20 failed captures (a host sync inside): does the pool leak?
  cache_correct   GraphCache(mlp, pow2 to 64) vs eager at sizes 1..64; gpt with batch+seq buckets
  cache_hot_path  cache hit (copy_outputs False/True) vs raw copy_+replay at batch 1
  cache_pools     shared pool (largest first) vs private pools vs the largest alone, mlp and gpt
  cache_evict     memory_reserved before/after evicting (private and shared pool)
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
import traceback
from pathlib import Path
from typing import Any, Callable

RESULTS: dict[str, Any] = {}


def check(name: str) -> Callable[[Callable[[], dict[str, Any]]], None]:
    def wrap(fn: Callable[[], dict[str, Any]]) -> None:
        t0 = time.perf_counter()
        try:
            out = fn()
            out.setdefault("ok", True)
        except BaseException as exc:  # noqa: BLE001
            out = {"ok": False, "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc(limit=6)}
        out["seconds"] = round(time.perf_counter() - t0, 3)
        RESULTS[name] = out
        print(f"[engine_probe] {'ok ' if out.get('ok') else 'FAIL'} {name} ({out['seconds']} s): "
              f"{json.dumps({k: v for k, v in out.items() if k not in ('traceback',)}, default=str)[:900]}", flush=True)
    return wrap


def per_call_us(torch: Any, call: Callable[[], Any], calls: int = 1000) -> float:
    torch.cuda.synchronize()
    t0 = time.perf_counter_ns()
    for _ in range(calls):
        call()
    torch.cuda.synchronize()
    return (time.perf_counter_ns() - t0) / 1e3 / calls


def interleaved(torch: Any, variants: dict[str, Callable[[], Any]], blocks: int = 7) -> dict[str, Any]:
    for call in variants.values():
        for _ in range(200):
            call()
    torch.cuda.synchronize()
    samples: dict[str, list[float]] = {k: [] for k in variants}
    names = list(variants)
    for b in range(blocks):
        order = names if b % 2 == 0 else names[::-1]
        for k in order:
            samples[k].append(per_call_us(torch, variants[k]))
    return {k: {"best_us": round(min(v), 2), "median_us": round(statistics.median(v), 2),
                "blocks_us": [round(x, 2) for x in v]} for k, v in samples.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    import torch

    import graphlab as gl
    from graphlab.zoo import get_model

    @check("call_overhead")
    def _() -> dict[str, Any]:
        res = {}
        tiny = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU()).cuda().eval()
        mlp = get_model("mlp").build()
        for label, model, x in [("tiny", tiny, torch.randn(1, 16, device="cuda")),
                                ("mlp_b1", mlp, get_model("mlp").make_inputs(1)[0])]:
            with torch.no_grad():
                cg = gl.capture(model, x)
                raw = torch.cuda.CUDAGraph()
                static = x.clone()
                s = torch.cuda.Stream()
                s.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(s):
                    for _ in range(3):
                        model(static)
                torch.cuda.current_stream().wait_stream(s)
                with torch.cuda.graph(raw):
                    model(static)
                new = torch.randn_like(x)

                def raw_copy() -> None:
                    static.copy_(new)
                    raw.replay()

                res[label] = interleaved(torch, {
                    "eager": lambda: model(new),
                    "raw_replay": raw.replay,
                    "raw_copy_replay": raw_copy,
                    "captured_call": lambda: cg(new),
                    "captured_unchecked": lambda: cg.unchecked(new),
                    "captured_replay": cg.replay,
                })
            res[label]["gap_call_minus_raw_copy_us"] = round(
                res[label]["captured_call"]["median_us"] - res[label]["raw_copy_replay"]["median_us"], 2)
            res[label]["gap_unchecked_minus_raw_copy_us"] = round(
                res[label]["captured_unchecked"]["median_us"] - res[label]["raw_copy_replay"]["median_us"], 2)
            res[label]["summary"] = repr(cg)
        return res

    @check("wrong_device")
    def _() -> dict[str, Any]:
        model = torch.nn.Linear(8, 8).cuda()
        with torch.no_grad():
            cg = gl.capture(model, torch.randn(2, 8, device="cuda"))
        try:
            cg(torch.randn(2, 8))
        except gl.GraphlabError as exc:
            return {"message": str(exc), "device": str(cg.device)}
        return {"ok": False, "message": "no error"}

    @check("failed_pool")
    def _() -> dict[str, Any]:
        torch.cuda.empty_cache()
        before = torch.cuda.memory_reserved()
        x = torch.randn(256, 256, device="cuda")

        def bad(t: Any) -> Any:
            y = t @ t
            if y.sum().item() > 0:
                return y * 2
            return y

        causes = []
        for _ in range(20):
            try:
                gl.capture(bad, x)
            except gl.CaptureError as exc:
                causes.append(exc.cause)
        torch.cuda.empty_cache()
        after = torch.cuda.memory_reserved()
        ok_after = gl.capture(lambda t: t * 3, x).verify().passed
        return {"reserved_before": before, "reserved_after": after, "growth_bytes": after - before,
                "causes": sorted(set(causes)), "capture_after_ok": ok_after}

    @check("cache_correct")
    def _() -> dict[str, Any]:
        zm = get_model("mlp")
        model = zm.build()
        cache = gl.GraphCache(model, buckets="pow2", max_size=64)
        worst = 0.0
        with torch.no_grad():
            for n in range(1, 65):
                (x,) = zm.make_inputs(n, seed=n)
                worst = max(worst, float((cache(x) - model(x)).abs().max()))
        gpt = get_model("gpt")
        gmodel = gpt.build()
        gcache = gl.GraphCache(gmodel, dims=[gl.Pad("batch", dim=0, buckets=[1, 2, 4, 8], max_size=None),
                                             gl.Pad("seq", dim=1, buckets=[16, 32, 64], max_size=None, out_dim=1)])
        gworst = 0.0
        with torch.no_grad():
            for b, t in [(1, 10), (3, 17), (8, 64), (5, 33), (2, 16)]:
                ids = torch.randint(1, 512, (b, t), device="cuda")
                gworst = max(gworst, float((gcache(ids) - gmodel(ids)).abs().max()))
        return {"mlp_max_abs_err": worst, "mlp_stats": str(cache.stats()), "gpt_max_abs_err": gworst,
                "gpt_stats": str(gcache.stats()), "gpt_graphs": list(gcache.graphs)}

    @check("cache_hot_path")
    def _() -> dict[str, Any]:
        zm = get_model("mlp")
        model = zm.build()
        (x,) = zm.make_inputs(1)
        fast = gl.GraphCache(model, buckets=[1, 2, 4], max_size=None, copy_outputs=False)
        safe = gl.GraphCache(model, buckets=[1, 2, 4], max_size=None)
        with torch.no_grad():
            fast(x)
            safe(x)
            raw = torch.cuda.CUDAGraph()
            static = x.clone()
            for _ in range(3):
                model(static)
            torch.cuda.synchronize()
            with torch.cuda.graph(raw):
                model(static)

            def raw_copy() -> None:
                static.copy_(x)
                raw.replay()

            res = interleaved(torch, {"raw_copy_replay": raw_copy, "cache_hit_views": lambda: fast(x),
                                      "cache_hit_copies": lambda: safe(x)})
        res["gap_views_us"] = round(res["cache_hit_views"]["median_us"] - res["raw_copy_replay"]["median_us"], 2)
        res["gap_copies_us"] = round(res["cache_hit_copies"]["median_us"] - res["raw_copy_replay"]["median_us"], 2)
        return res

    @check("cache_pools")
    def _() -> dict[str, Any]:
        res = {}
        for name in ["mlp", "gpt"]:
            zm = get_model(name)
            model = zm.build()
            (x,) = zm.make_inputs(4)
            row = {}
            for mode in ["shared", "private", "largest_alone"]:
                torch.cuda.synchronize()
                torch.cuda.empty_cache()
                before = torch.cuda.memory_reserved()
                if mode == "largest_alone":
                    cache = gl.GraphCache(model, buckets=[64], max_size=None)
                else:
                    cache = gl.GraphCache(model, buckets="pow2", max_size=64, pool=mode)
                t0 = time.perf_counter()
                cache.warmup(x, progress=False)
                row[mode] = {"reserved_growth_bytes": torch.cuda.memory_reserved() - before,
                             "warmup_s": round(time.perf_counter() - t0, 3), "graphs": len(cache),
                             "stats_pool_bytes": cache.stats().pool_bytes, "exec_bytes": cache.stats().exec_bytes}
                cache.clear()
                del cache
                torch.cuda.empty_cache()
            row["shared_over_largest"] = round(row["shared"]["reserved_growth_bytes"] /
                                               max(1, row["largest_alone"]["reserved_growth_bytes"]), 3)
            res[name] = row
        return res

    @check("cache_evict")
    def _() -> dict[str, Any]:
        zm = get_model("gpt")
        model = zm.build()
        (x,) = zm.make_inputs(4)
        res = {}
        for mode in ["private", "shared"]:
            torch.cuda.empty_cache()
            base = torch.cuda.memory_reserved()
            cache = gl.GraphCache(model, buckets=[8, 16, 32, 64], max_size=None, pool=mode, max_graphs=2)
            with torch.no_grad():
                for n in [64, 32]:
                    cache(torch.randint(1, 512, (n, 64), device="cuda"))
                held_two = torch.cuda.memory_reserved() - base
                for n in [16, 8]:
                    cache(torch.randint(1, 512, (n, 64), device="cuda"))
                after_evictions = torch.cuda.memory_reserved() - base
            cache.clear()
            torch.cuda.empty_cache()
            res[mode] = {"held_two_largest": held_two, "after_evicting_them_for_two_smaller": after_evictions,
                         "after_clear": torch.cuda.memory_reserved() - base, "evictions": cache.stats().evictions}
        return res

    (out / "engine_probe.json").write_text(json.dumps(RESULTS, indent=1, default=str))


if __name__ == "__main__":
    main()
