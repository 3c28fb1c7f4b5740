"""`graphlab record --models serving`: the serving load tests, recorded on this GPU with provenance.

What it runs (about 2.5 minutes on an H200; each part prints its points as it goes):
  gpt        eager, graphs, graphs+batching, eager+batching over 250..12000 req/s, 1.5 s per point,
             timelines at 500 and 4000 req/s                                             ~85 s
  gpt_asgi   graphs+batching through the Starlette app in process (httpx.ASGITransport), 1 s per point:
             what the HTTP layer costs (only when starlette is installed)                ~10 s
  resnet18   eager, graphs, graphs+batching over 100..4000 req/s, 1.5 s per point, 8 pre-processing
             threads (images are resized on the CPU), timelines at 500 and 2000 req/s    ~55 s
A setting stops climbing once it answers under 60% of the offered rate (`run_loadtest`), which keeps
the run short. Results go to data/recordings/<gpu>/serving/{gpt,gpt_asgi,resnet18}.json, read by
`gl.run_loadtest` in recorded mode and by notebooks/09_serving.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from graphlab import present
from graphlab.clock import Stopwatch
from graphlab.recordings import gpu_slug, write_recording
from graphlab.serve.config import DEFAULT_SETTINGS, ServeConfig
from graphlab.loadtest.api import run_loadtest

#: the recording's name, as `LoadTest` declares it (a literal: `graphlab record --help` reads it here)
RECORDING = "serving"

PLAN: tuple[dict[str, Any], ...] = (
    {"key": "gpt", "model": "gpt", "settings": (*DEFAULT_SETTINGS, "eager+batching"),
     "rates": (250, 500, 750, 1000, 1500, 2000, 3000, 4000, 6000, 8000, 12000), "duration_s": 1.5,
     "timeline_rates": (500, 4000)},
    {"key": "gpt_asgi", "model": "gpt", "settings": ("graphs+batching",), "transport": "asgi",
     "rates": (500, 1000, 2000, 4000, 8000), "duration_s": 1.0, "timeline_rates": (), "needs": "starlette"},
    {"key": "resnet18", "model": "resnet18", "settings": DEFAULT_SETTINGS,
     "rates": (100, 250, 500, 1000, 2000, 3000, 4000), "duration_s": 1.5, "timeline_rates": (500, 2000),
     "preprocess_threads": 8, "needs": "torchvision"},
)


def record(out_root: Path, prov: dict[str, Any]) -> Path:
    """Load tests of gpt and resnet18: eager, graphs, dynamic batching; the HTTP layer's cost."""
    results: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    for part in PLAN:
        needs = part.get("needs")
        if needs and importlib.util.find_spec(needs) is None:
            skipped[part["key"]] = f"needs {needs}, not installed here"
            print(f"[record] serving {part['key']}: skipped ({skipped[part['key']]})", flush=True)
            continue
        part_clock = Stopwatch().start()
        print(f"[record] serving {part['key']}: {part['model']} {', '.join(part['settings'])} over "
              f"{part['rates'][0]}..{part['rates'][-1]} req/s", flush=True)
        kwargs = {k: v for k, v in part.items() if k not in ("key", "model", "needs", "preprocess_threads")}
        config = ServeConfig(preprocess_threads=part.get("preprocess_threads", ServeConfig.preprocess_threads))
        result = run_loadtest(part["model"], config=config, progress=False, on_point=_log_point, **kwargs)
        data = result.to_dict()
        data["conditions"]["seconds"] = round(part_clock.stop(), 1)
        results[part["key"]] = data
        print(f"[record] serving {part['key']}: {data['conditions']['seconds']} s; {result.knee_line()}", flush=True)
    if skipped:
        results["skipped"] = skipped
    folder = out_root / gpu_slug(prov["gpu"]) / RECORDING
    write_recording(folder, name=RECORDING, description=(
        "Serving under load: one service (pre-processing pool, dynamic batcher, GPU worker thread on its own "
        "stream, post-processing pool) in each setting, swept over Poisson arrival rates by the open-loop "
        "load generator; per point throughput, latency percentiles, batch sizes, stages; timelines."),
        provenance=prov, graphs={}, results=results)
    return folder


def _log_point(point: Any) -> None:
    latency = point.latency_us
    print(f"[record]   {point.setting:<16} {present.number(point.offered_rps)} req/s -> "
          f"{present.number(point.achieved_rps)} answered, p50 {present.duration(latency.get('p50'))}, p99 "
          f"{present.duration(latency.get('p99'))}, refused {present.count(point.refused_total)}, rows per batch "
          f"{present.number(point.mean_batch_rows)}, GPU busy {present.percent(point.gpu_busy_pct)}", flush=True)


__all__ = ["PLAN", "RECORDING", "record"]
