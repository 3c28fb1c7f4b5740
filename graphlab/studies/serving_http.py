"""`graphlab record --models serving_http`: what an HTTP client sees of `python -m graphlab.serve`, beside a bare
Starlette app (the floor), measured with `hey` and with the open-loop generator, recorded with provenance.

Needs `hey` (Debian's package; or $GRAPHLAB_HEY naming the binary) and starlette + uvicorn. Every server is a
process of its own on 127.0.0.1 with the same uvicorn stack (uvloop + httptools where installed); about 3.5
minutes on an H200:

  bare             a Starlette route that parses the JSON and answers a fixed JSON: uvicorn's and the client's cost
  graphs, graphs+batching, eager   the zoo GPT as `python -m graphlab.serve --setting ...`
  own              your own model through the CLI (`--model graphlab.studies.serving_http:own_model`)
  flood            graphs+batching with `--max-pending 64`, `FLOOD_CLIENTS` hey clients at once

For each: `hey` closed loop, one client back to back (`single`), one client held to 50 req/s (`rate50`), two
clients at 100 req/s each (`rate200`); for `bare` and `graphs+batching` a concurrency sweep (8..256 clients)
and the capacity (highest req/s with p99 <= 50 ms and >= 99.9 % answered 200); for each service setting the
open-loop load test over HTTP (`run_loadtest(transport="http")`: Poisson arrivals, latency from the scheduled
arrival, the generator's lag reported); and, in this same process, the in-process capacity of graphs+batching
(`transport="direct"`), so the HTTP capacity is compared with one measured minutes apart on the same host.
`gl.load(gl.HttpServing)` and `gl.run_loadtest(..., transport="http")` read it back (notebook 09).
"""
from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import torch

from graphlab import present
from graphlab.clock import Stopwatch
from graphlab.errors import ConfigurationError
from graphlab.recordings import gpu_slug, write_recording
from graphlab.loadtest.external import (CONCURRENCY, OK_LIMIT, P99_LIMIT_MS, ServerProcess, bare_app_command,
                                     capacity_rps, find_hey, run_flood, run_hey)
from graphlab.serve.config import ServeConfig
from graphlab.serve.http import describe_stack
from graphlab.loadtest.api import run_loadtest
from graphlab.serve.served_model import ServedModel

#: the recording's name, as `HttpServing` declares it (a literal: `graphlab record --help` reads it here)
RECORDING = "serving_http"
MODEL = "gpt"
SETTINGS = ("graphs", "graphs+batching", "eager")
CAPACITY_FOR = ("bare", "graphs+batching")
#: open-loop rates over HTTP (the generator's raw client keeps its schedule to a few thousand req/s)
OPEN_LOOP_RATES = (100, 250, 500, 1000, 2000, 3000, 4000)
#: in process, up to past the knee (a setting stops climbing once it answers under 60 % of the offered rate)
IN_PROCESS_RATES = (1000, 2000, 3000, 4000, 6000, 8000)
FLOOD_CLIENTS = 512
BODIES: dict[str, dict[str, Any]] = {
    "gpt": {"texts": ["CUDA graphs replay kernels"], "top_k": 5},
    "mlp": {"vectors": [[0.01 * i for i in range(256)]], "top_k": 5},
    "own": {"inputs": [[0.01 * i for i in range(64)]]},
}


def own_model() -> Any:
    """`--model graphlab.studies.serving_http:own_model`: a 3-layer MLP of your own (64 -> 256 -> 256 -> 10)."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256), torch.nn.ReLU(),
                              torch.nn.Linear(256, 10))
    return ServedModel(net, torch.randn(4, 64), buckets=[1, 2, 4, 8, 16, 32], name="own_mlp")


def _runs(hey: str, server: ServerProcess, body: Path, duration_s: float, concurrency: Sequence[int] | None,
          raw: dict[str, str], name: str) -> dict[str, Any]:
    runs: dict[str, Any] = {}
    plan = {"single": (1, None), "rate50": (1, 50.0), "rate200": (2, 100.0)}
    for run, (clients, qps) in plan.items():
        runs[run] = run_hey(hey, server.url, body, concurrency=clients, duration_s=duration_s, qps=qps)
        raw[f"{name}_{run}"] = runs[run].pop("raw")
    if concurrency:
        curve = []
        for clients in concurrency:
            point = run_hey(hey, server.url, body, concurrency=clients, duration_s=duration_s)
            raw[f"{name}_c{clients}"] = point.pop("raw")
            curve.append(point)
        runs["capacity_curve"] = curve
        runs["capacity_rps"] = capacity_rps(curve)
    lat = {run: runs[run]["latency_ms"].get("p50") for run in plan}
    p50 = {run: present.duration(ms * 1000 if ms is not None else None) for run, ms in lat.items()}
    print(f"[record] serving_http {name}: p50 one client {p50['single']}, at 50 req/s {p50['rate50']}, at 200 req/s "
          f"{p50['rate200']}" + (f"; capacity {present.number(runs['capacity_rps'])} req/s" if concurrency else ""),
          flush=True)
    return runs


@dataclass(frozen=True)
class HttpServingPlan:
    """What `measure` runs: the servers, the clients, the rates (the module docstring says each).

    Attributes:
        model, device: the zoo model served and where.
        settings: the service settings each served by `python -m graphlab.serve` in turn.
        duration_s: seconds of each hey run.
        concurrency, capacity_for: the client counts of the capacity sweep, and the servers that get it.
        open_loop_rates: the open-loop rates over HTTP, per setting (empty: none).
        in_process_rates: the in-process rates of `batched_setting` (empty: none).
        flood_clients: hey clients at once against `--max-pending 64` (0: no flood).
        batched_setting: the setting of your own model and the flood (on a CPU: "eager+batching").
        own: serve your own model through the CLI too.
    """

    model: str = MODEL
    device: str = "cuda"
    settings: tuple[str, ...] = SETTINGS
    duration_s: float = 2.0
    concurrency: tuple[int, ...] = CONCURRENCY
    capacity_for: tuple[str, ...] = CAPACITY_FOR
    open_loop_rates: tuple[float, ...] = OPEN_LOOP_RATES
    in_process_rates: tuple[float, ...] = IN_PROCESS_RATES
    flood_clients: int = FLOOD_CLIENTS
    batched_setting: str = "graphs+batching"
    own: bool = True


def measure(folder: Path, *, hey: str, plan: HttpServingPlan | None = None) -> dict[str, Any]:
    """Run every server of the module docstring in turn (`folder` keeps their logs and the bodies); the results."""
    plan = plan or HttpServingPlan()
    model, device, settings, duration_s = plan.model, plan.device, plan.settings, plan.duration_s
    python = sys.executable
    stack = describe_stack()
    raw: dict[str, str] = {}
    servers: dict[str, Any] = {}
    body = folder / f"body_{model}.json"
    body.write_text(json.dumps(BODIES[model]), encoding="utf-8")
    own_body = folder / "body_own.json"
    own_body.write_text(json.dumps(BODIES["own"]), encoding="utf-8")
    serve = [python, "-m", "graphlab.serve", "--device", device]
    servers_run: list[tuple[str, list[str]]] = [("bare", bare_app_command(folder, stack, python))]
    servers_run += [(s, [*serve, "--model", model, "--setting", s]) for s in settings]
    if plan.own:
        servers_run.append(("own", [*serve, "--model", "graphlab.studies.serving_http:own_model", "--setting",
                                    plan.batched_setting]))
    if plan.flood_clients:
        servers_run.append(("flood", [*serve, "--model", model, "--setting", plan.batched_setting, "--max-pending",
                                      "64"]))
    open_loop: Any = None
    cpu_or_gpu = ServeConfig(device=device)
    for name, cmd in servers_run:
        clock = Stopwatch().start()
        with ServerProcess(cmd, folder / f"server_{name.replace('+', '_')}.log") as server:
            entry: dict[str, Any] = {"command": " ".join(server.command[1:])}
            if name == "flood":
                entry["flood"] = run_flood(hey, server.url, body, concurrency=plan.flood_clients,
                                           duration_s=duration_s)
                answered = ", ".join(f"{present.count(v['count'])} answered {k}" for k, v in
                                     entry["flood"]["by_status"].items())
                print(f"[record] serving_http flood: {answered}, {present.count(entry['flood']['lost'])} lost",
                      flush=True)
            else:
                entry.update(_runs(hey, server, own_body if name == "own" else body, duration_s,
                                   plan.concurrency if name in plan.capacity_for else None, raw, name))
            if name in settings and plan.open_loop_rates:
                curve = run_loadtest(model, rates=list(plan.open_loop_rates), duration_s=1.0, transport="http",
                                     url=server.base_url, config=cpu_or_gpu, progress=False)
                if open_loop is None:
                    open_loop = curve
                else:
                    open_loop.points.extend(curve.points)
                    open_loop.timelines.update(curve.timelines)
            if name != "bare":
                stats = server.get_json("/v1/stats")
                entry["service"] = {k: stats.get(k) for k in ("counters", "batch_rows", "runner", "warmup_s")}
        entry["exit_code"] = server.exit_code
        entry["seconds"] = round(clock.stop(), 1)
        servers[name] = entry
    results: dict[str, Any] = {
        "hey": {"model": model, "device": device, "stack": stack, "p99_limit_ms": P99_LIMIT_MS, "ok_limit": OK_LIMIT,
                "duration_s": duration_s, "servers": servers},
        "raw": raw,
    }
    if open_loop is not None:
        results[f"{model}_http"] = open_loop.to_dict()
    if plan.in_process_rates:
        inproc = run_loadtest(model, settings=[plan.batched_setting], rates=list(plan.in_process_rates),
                              duration_s=1.0, transport="direct", config=cpu_or_gpu, progress=False)
        results[f"{model}_direct"] = inproc.to_dict()
        print(f"[record] serving_http in process: {inproc.knee_line()}", flush=True)
    # the recording names no path of the machine that made it: the temporary folder and hey's location go
    text = json.dumps(results).replace(json.dumps(str(folder))[1:-1], "<folder>").replace(json.dumps(hey)[1:-1], "hey")
    return dict(json.loads(text))


def record(out_root: Path, prov: dict[str, Any]) -> Path:
    """The zoo GPT over HTTP on this GPU: hey against a bare app and each setting; open loop; the flood."""
    hey = find_hey()
    if hey is None:
        raise ConfigurationError("the serving_http recording needs `hey` (apt-get install hey, or GRAPHLAB_HEY=path)")
    with tempfile.TemporaryDirectory(prefix="graphlab-serving-http-") as tmp:
        results = measure(Path(tmp), hey=hey)
    folder = out_root / gpu_slug(prov["gpu"]) / RECORDING
    write_recording(folder, name=RECORDING, description=(
        "The zoo GPT served over HTTP (each server its own process on 127.0.0.1, uvicorn), measured by hey (closed "
        "loop) beside a bare Starlette app, and by the open-loop generator over HTTP; the in-process capacity of "
        "graphs+batching from the same run; a flood of 512 clients."), provenance=prov, graphs={}, results=results)
    return folder


__all__ = ["BODIES", "HttpServingPlan", "RECORDING", "measure", "own_model", "record"]
