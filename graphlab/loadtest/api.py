"""`gl.run_loadtest` and `graphlab loadtest`: sweep the arrival rate over each setting of one service.

For each setting, one fresh service (model built, every bucket captured before traffic), then for each
rate, lowest first, one open-loop run (`graphlab.loadtest.loadgen`) and its summary (`LoadPoint`). Every
setting sees the same requests at a given rate (the seed depends on the rate, not the setting). A
setting stops climbing once it answers under 60% of the offered rate: past its knee, more load only
fills the bounded queue and costs device time.

    >>> import graphlab as gl
    >>> gl.set_mode("auto")
    >>> result = gl.run_loadtest("gpt", rates=[500, 2000, 8000], duration_s=1.0)   # doctest: +SKIP
    >>> result; result.knee_table(); result.table("batches")                         # doctest: +SKIP

In recorded mode (`gl.set_mode("recorded")`, or "auto" without a GPU) it returns the sweep recorded on
a GPU (the serving recording, `gl.load(gl.LoadTest, "serving", entry=...)`) instead of running one, and says so in
every view.

On a CPU (`device="cpu"`) nothing is captured: the graphs settings pad each batch to its bucket and call the model
eagerly. The views say so: their rows name what ran ("padded to buckets, eager (CPU)"), their columns the worker,
not a GPU.

Transports: "direct" (default) calls the service in this process, so the sweep measures the pipeline
(pre-processing, batcher, GPU worker, post-processing) and not the HTTP stack; "asgi" drives the
Starlette app in this process through httpx.ASGITransport (the HTTP app's own cost included, no
sockets); "http" sends to a running uvicorn server at `url` (one setting: the server's).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from graphlab import present
from graphlab._version import __version__
from graphlab.env import advice, require_cuda
from graphlab.errors import ConfigurationError
from graphlab.loader import load
from graphlab.mode import recorded_gpu, stand_in
from graphlab.progress import progress_bar
from graphlab.results_types import results_type
from graphlab.loadtest.loadgen import (DEFAULT_ROWS, ASGITransport, DirectTransport, HTTPTransport, LoadSpec,
                                       loop_name, make_bodies, poisson_arrivals, run_in_fresh_loop, run_open_loop)
from graphlab.loadtest.over_http import HttpServing
from graphlab.loadtest.plan import TIMELINE_WINDOW_US, LoadPlan
from graphlab.loadtest.report import LoadTest, summarize_point, timeline_key, timeline_window
from graphlab.serve.app import create_app
from graphlab.serve.config import DEFAULT_SETTINGS, ServeConfig
from graphlab.serve.served_model import served_model
from graphlab.serve.service import InferenceService

#: the recording of the load tests (`LoadTest` declares it; `graphlab.studies.serving` writes it)
RECORDING = str(results_type(LoadTest).recording)
#: the recording of each transport's sweeps: over real sockets they come from the serving-over-HTTP study
RECORDING_OF_TRANSPORT = {"direct": RECORDING, "asgi": RECORDING, "http": str(results_type(HttpServing).recording)}
GIVE_UP_SHARE = 0.6


def recorded_key(model: str, transport: str = "direct") -> str:
    """The results key of a recorded sweep: "gpt" (direct transport), "gpt_asgi" (through the app in process)."""
    return model if transport == "direct" else f"{model}_{transport}"


def recorded_loadtest(model: str = "gpt", gpu: str | None = None, transport: str = "direct") -> LoadTest:
    """The sweep recorded for `model` on a GPU: `gl.load(LoadTest, recording, entry=...)` of the serving recording
    (of `serving_http` for "http"), its entry the model and transport (`recorded_key`)."""
    return load(LoadTest, RECORDING_OF_TRANSPORT.get(transport, RECORDING), gpu=gpu,
                entry=recorded_key(model, transport))


def run_loadtest(model: str = "gpt", settings: Sequence[str] = DEFAULT_SETTINGS, rates: Sequence[float] | None = None,
                 duration_s: float = 2.0, *, seed: int = 0, transport: str = "direct", url: str | None = None,
                 rows: tuple[tuple[int, float], ...] = DEFAULT_ROWS, timeline_rates: Sequence[float] | None = None,
                 config: ServeConfig | None = None, progress: bool = True,
                 on_point: Callable[[Any], None] | None = None) -> LoadTest:
    """Sweep `rates` (req/s) over each of `settings` for `model`; return the `LoadTest`.

    Args:
        model, settings, rates, duration_s, seed, transport, url, rows, timeline_rates: the load (`LoadPlan`; for
            the Open Inference Protocol over "http", `run_plan(LoadPlan(..., protocol="oip_binary"))` or
            `graphlab loadtest --protocol oip_binary`).
        config: the service under test (`ServeConfig`: max_batch_size, max_wait_us, buckets, device, ...; its
            model and setting are the plan's); default `ServeConfig()`.
        progress: show a progress bar.
        on_point: called with each `LoadPoint` as it is measured (the recorder logs them).
    """
    plan = LoadPlan(model, tuple(settings), None if rates is None else tuple(rates), duration_s, seed=seed,
                    transport=transport, url=url, rows=rows,
                    timeline_rates=None if timeline_rates is None else tuple(timeline_rates))
    return run_plan(plan, config, progress=progress, on_point=on_point)


def _recorded_run(plan: LoadPlan, config: ServeConfig | None = None, *, progress: bool = True,
                  on_point: Callable[[Any], None] | None = None) -> LoadTest:
    """`run_plan` in recorded mode: the sweep of the plan's model (and transport) a GPU recorded. A recording cannot
    run the settings, rates and durations asked for: the result says which it shows instead (`LoadTest.notes`)."""
    served_model(plan.model)  # an unknown model is bad input here too, before any recording is read
    result = recorded_loadtest(plan.model, gpu=recorded_gpu(), transport=plan.transport)
    result.notes.extend(recorded_differences(result, plan.settings, plan.rates, plan.duration_s))
    return result


def recorded_differences(result: LoadTest, settings: Sequence[str] | None, rates: Sequence[float] | None,
                         duration_s: float | None) -> list[str]:
    """What a recorded load test shows that differs from what was asked (settings, rates, seconds per rate)."""
    shown = result.settings()
    notes = []
    asked = list(settings or [])
    if asked and asked != shown:
        missing = [s for s in asked if s not in shown]
        extra = [s for s in shown if s not in asked]
        notes.append(f"asked for settings {', '.join(asked)}; the recording holds {', '.join(shown)}"
                     + (f" (no {', '.join(missing)})" if missing else "")
                     + (f": {', '.join(extra)} shown too" if extra else ""))
    if rates:
        asked_rates = sorted(float(r) for r in rates)
        held = sorted(float(r) for r in result.conditions.get("rates_rps") or {p.offered_rps for p in result.points})
        if asked_rates != held:
            notes.append(f"asked for rates {', '.join(f'{r:g}' for r in asked_rates)} req/s; the recording swept "
                         f"{', '.join(f'{r:g}' for r in held)} (a setting stops climbing once it answers under "
                         f"{GIVE_UP_SHARE:.0%} of the offered rate)")
    recorded_s = result.conditions.get("duration_s")
    if duration_s is not None and isinstance(recorded_s, (int, float)) and float(recorded_s) != float(duration_s):
        notes.append(f"asked for {duration_s:g} s per rate; the recording ran {recorded_s:g} s")
    if notes:
        notes.append("a recording cannot run a new load test: on a GPU machine, gl.set_mode('live') runs the one asked for")
    return notes


@dataclass
class _Sweep:
    """One sweep in progress: the plan, the result it fills, the progress bar and the per-point callback."""

    plan: LoadPlan
    result: LoadTest
    bar: Any = None
    on_point: Callable[[Any], None] | None = None


@stand_in(_recorded_run)
def run_plan(plan: LoadPlan, config: ServeConfig | None = None, *, progress: bool = True,
             on_point: Callable[[Any], None] | None = None) -> LoadTest:
    """Run `plan` against the service `config` describes (its model and setting the plan's); the `LoadTest`."""
    spec_model = served_model(plan.model)
    plan.check_url()
    config = config or ServeConfig()
    if config.device.startswith("cuda"):
        require_cuda("a load test on a GPU", fix=advice(python="Pass config=gl.ServeConfig(device='cpu') for a CPU "
                                                        "dry run", cli="Pass --device cpu for a CPU dry run"))
    rates = plan.rates_rps()
    base = replace(config, model=plan.model, setting=plan.settings[0] if plan.settings else "eager")
    sweep = _Sweep(plan, LoadTest(model=plan.model, config=base.to_dict(), conditions=_conditions(plan, config)),
                   progress_bar(len(plan.settings) * len(rates), "load test", unit="point", show=progress), on_point)
    for setting in ([None] if plan.transport == "http" else list(plan.settings)):
        _sweep_setting(sweep, base.with_setting(setting) if setting else base, spec_model.kind)
    if sweep.bar is not None:
        sweep.bar.close()
    return sweep.result


def _sweep_setting(sweep: _Sweep, config: ServeConfig, kind: str) -> None:
    plan, result, bar = sweep.plan, sweep.result, sweep.bar
    rates, timeline_rates = plan.rates_rps(), plan.timeline_rates_rps()
    service = None
    if plan.transport != "http":
        service = InferenceService(config).start()
        result.conditions.setdefault("runners", {})[config.setting] = service.stats()["runner"]
        result.conditions.setdefault("warmup_s", {})[config.setting] = service.stats()["warmup_s"]
    setting = config.setting if service is not None else _remote_setting(plan.url, config.model)
    metadata = _remote_metadata(plan.url, config.model) if plan.protocol != "graphlab" else None
    try:
        for index, rate in enumerate(rates):
            spec = LoadSpec(rate, plan.duration_s, seed=plan.seed * 1_000_003 + int(rate), rows=plan.rows)
            rng = random.Random(spec.seed)
            offsets = poisson_arrivals(rate, plan.duration_s, rng)
            bodies = make_bodies(spec, kind, len(offsets), rng)
            if service is not None:
                service.wait_idle()
                service.reset_stats()

            async def go() -> tuple[int, list[Any]]:
                send = _transport(plan.transport, service, plan.url, plan.protocol, metadata)
                try:
                    return await run_open_loop(send, bodies, offsets, spec.drain_timeout_s)
                finally:
                    await send.aclose()

            start_ns, clients = run_in_fresh_loop(go)
            batches = requests = []
            if service is not None:
                service.wait_idle()
                batches, requests = service.traces.batches(), service.traces.requests()
            point = summarize_point(setting=setting, offered_rps=rate, duration_s=plan.duration_s,
                                    transport=plan.transport, start_ns=start_ns, clients=clients, batches=batches)
            result.points.append(point)
            if rate in timeline_rates and batches:
                middle = start_ns + int(plan.duration_s * 1e9 / 2)
                result.timelines[timeline_key(setting, rate)] = {
                    "setting": setting, "rate_rps": rate,
                    **timeline_window(requests, batches, middle, TIMELINE_WINDOW_US)}
            if sweep.on_point is not None:
                sweep.on_point(point)
            if bar is not None:
                bar.update(1)
                bar.set_postfix_str(f"{setting} {present.number(rate)} req/s: {present.number(point.achieved_rps)} "
                                    f"answered, p99 {present.duration(point.latency_us.get('p99'))}")
            if point.achieved_rps < GIVE_UP_SHARE * rate:
                if bar is not None:
                    bar.update(len(rates) - index - 1)
                break
    finally:
        if service is not None:
            service.close()


def _transport(name: str, service: Any, url: str | None, protocol: str = "graphlab",
               metadata: dict[str, Any] | None = None) -> Any:
    if name == "direct":
        return DirectTransport(service)
    if name == "asgi":
        return ASGITransport(create_app(service))
    return HTTPTransport(str(url), protocol=protocol, model=metadata)


def _remote_metadata(url: str | None, model: str) -> dict[str, Any]:
    """The protocol's metadata of `model` at `url` (`GET /v2/models/{model}`: its inputs and outputs)."""
    import httpx

    try:
        answer = httpx.get(f"{url}/v2/models/{model}", timeout=10)
        answer.raise_for_status()
        return dict(answer.json())
    except (httpx.HTTPError, ValueError) as exc:
        raise ConfigurationError(f"the service at {url} gave no Open Inference Protocol metadata for {model!r}: "
                                 f"{exc}") from None


def _remote_setting(url: str | None, model: str) -> str:
    """The setting of the server at `url` (from /healthz); ConfigurationError if none answers or it serves another
    model."""
    import httpx

    try:
        health = httpx.get(f"{url}/healthz", timeout=10).json()
    except (httpx.HTTPError, ValueError) as exc:
        raise ConfigurationError(f"no graphlab service answers at {url}: {exc}; start one (`python -m graphlab.serve "
                                 "--model ...`) or pass its url") from None
    if health.get("model") != model:
        raise ConfigurationError(f"the service at {url} serves {health.get('model')!r}, not {model!r}: pass that model")
    return str(health.get("setting", "remote"))


def _conditions(plan: LoadPlan, config: ServeConfig) -> dict[str, Any]:
    device = config.device
    gpu = torch.cuda.get_device_name() if device.startswith("cuda") else None
    return {"gpu": gpu, "device": device, "torch": torch.__version__, "cuda": str(torch.version.cuda),
            "python": platform.python_version(), "cpu_count": os.cpu_count(), "transport": plan.transport,
            "protocol": plan.protocol,
            "event_loop": loop_name(), "seed": plan.seed, "duration_s": plan.duration_s,
            "rows": [list(pair) for pair in plan.rows], "rates_rps": plan.rates_rps(), "graphlab_version": __version__,
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "clock": "time.monotonic_ns (CLOCK_MONOTONIC: one clock for every thread and process)"}


# -- `graphlab loadtest` -------------------------------------------------------------------------------
def loadtest_main(args: argparse.Namespace) -> int:
    """Entry point of `graphlab loadtest` (its flags: `LoadPlan.add_flags`, the service's from `ServeConfig`)."""
    plan = LoadPlan.from_flags(args)
    result = run_plan(plan, ServeConfig(**ServeConfig.given(args)), progress=not args.no_progress)
    print(result)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"loadtest_{plan.model}.json"
        data = result.to_dict()
        options = {k: v for k, v in vars(args).items() if k not in ("func", "command") and v not in (None, False)}
        data["conditions"]["command"] = "graphlab loadtest " + " ".join(
            f"--{k.replace('_', '-')}" + ("" if v is True else " " + (" ".join(map(str, v)) if isinstance(v, list)
                                                                        else str(v))) for k, v in options.items())
        path.write_text(json.dumps(data, indent=1), encoding="utf-8")
        print(f"wrote {path}", file=sys.stderr)
    return 0


__all__ = ["RECORDING", "RECORDING_OF_TRANSPORT", "loadtest_main", "recorded_differences", "recorded_key",
           "recorded_loadtest", "run_loadtest", "run_plan"]
