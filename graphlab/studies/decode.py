"""`graphlab record --models decode`: a Hugging Face decode step with a StaticCache, four ways, on this GPU.

Writes `<out>/<gpu>/decode/`: reports.json (per model: per-step p50/p99 and tokens/s by batch size for each way,
tokens equal to HF eager, padding check, KV cache and graph pool bytes, start-up with a cold Inductor cache,
what torch.compile did and the raw log records it was read from) and the decode step's graphs at batch 1
(`llama-b1`, `llama-compiled-b1`, `gpt2-b1`). The Llama-style model runs all four ways; GPT-2 the eager
step and graphlab's graphs (the compile ways cost most of the time).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from graphlab.decode.results import WAYS, DecodeReport, DecodeReports
from graphlab.decode.ways import cold_inductor_cache, compare_decode
from graphlab.errors import RecordingError
from graphlab.graph.dot_parser import parse_dot
from graphlab.recordings import gpu_slug, write_recording

RECORDING: str = DecodeReports.RESULTS.recording  # type: ignore[attr-defined]
#: per model: the ways it runs and the seconds it may take before it stops starting new work
PLAN = {"llama": (WAYS, 55.0), "gpt2": (("eager", "graphlab"), 15.0)}


def record(out_root: Path, prov: dict[str, Any]) -> Path:
    """HF decode step (StaticCache) four ways: per-step latency, tokens/s, memory, start-up, compile's graphs."""
    folder = cold_inductor_cache()
    reports: dict[str, DecodeReport] = {}
    dots: dict[str, str] = {}
    failed: dict[str, str] = {}
    for arch, (ways, budget_s) in PLAN.items():
        try:
            report = compare_decode(arch, ways=ways, budget_s=budget_s, keep_dots=dots)
        except Exception as exc:  # the other model still gets recorded; this one says why it is missing
            print(f"[record] decode: {arch} failed: {type(exc).__name__}: {exc}", flush=True)
            failed[arch] = f"{type(exc).__name__}: {str(exc)[:500]}"
            continue
        report.conditions["inductor_cache"] = "cold: fresh TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR"
        print(report.table(), flush=True)
        print(report.table("compile"), flush=True)
        reports[arch] = report
    if not reports:
        raise RecordingError(f"decode: every model failed, so there is nothing to record: {failed}; the lines above "
                             "starting [record] decode say why")
    graphs = {key: {"dot": dot, "model": parse_dot(dot, source=f"{key}.dot"), "batch_size": 1} for key, dot in dots.items()}
    out = out_root / gpu_slug(prov["gpu"]) / RECORDING
    write_recording(out, name=RECORDING,
                    description="A Hugging Face causal LM's decode step with a StaticCache (random-init small "
                                "Llama-style and GPT-2, fp32): HF eager, reduce-overhead, graphlab's graphs of the "
                                "eager and the compiled step; per-step latency by batch size, tokens vs HF eager, "
                                "memory, start-up (cold Inductor cache), what torch.compile did.",
                    provenance=prov, graphs=graphs, results=DecodeReports(reports, failed).to_dict())
    print(f"[record] decode: inductor cache was {folder}", flush=True)
    return out


__all__ = ["PLAN", "RECORDING", "record"]
