"""`graphlab record --models serving_http`: what an HTTP client sees of `python -m graphlab.serve`, beside a bare
Starlette app (the floor), measured with `hey` and with the open-loop generator, recorded with provenance.

Needs `hey` (Debian's package; or $GRAPHLAB_HEY naming the binary) and starlette + uvicorn. Every server is a
process of its own on 127.0.0.1 with the same uvicorn stack (uvloop + httptools where installed); about 3.5
minutes on an H200:

  bare             a Starlette route that parses the JSON and answers a fixed JSON: uvicorn's and the client's cost
  graphs, graphs+batching, eager   the zoo GPT as `python -m graphlab.serve --setting ...`
  own              your own model through the CLI (`--model graphlab.studies.serving_http:own_model`)
  image            an image model of your own, torchvision's ResNet-18 at 3x32x32 through `ServedModel`
                   (`--model graphlab.studies.serving_http:image_model`, graphs+batching): the protocols' capacity
  flood            graphs+batching with `--max-pending 64`, `FLOOD_CLIENTS` hey clients at once
  ray              on a GPU where Ray Serve is installed: the image model and the GPT as one Ray Serve replica
                   (`num_gpus=1`) beside the plain service, and a replica killed under load
                   (`graphlab.studies.serving_ray`; the recording's "ray" entry)

For each: `hey` closed loop, one client back to back (`single`), one client held to 50 req/s (`rate50`), two
clients at 100 req/s each (`rate200`); for `bare` and `graphs+batching` a concurrency sweep (8..256 clients)
and the capacity (highest req/s with p99 <= 50 ms and >= 99.9 % answered 200); for each service setting the
open-loop load test over HTTP (`run_loadtest(transport="http")`: Poisson arrivals, latency from the scheduled
arrival, the generator's lag reported); and, in this same process, the in-process capacity of graphs+batching
(`transport="direct"`), so the HTTP capacity is compared with one measured minutes apart on the same host.
`gl.load(gl.HttpServing)` and `gl.run_loadtest(..., transport="http")` read it back (notebook 09).

**The protocols side by side** (the recording's "protocols" entry): graphlab's JSON (`/v1/infer`), the Open Inference
Protocol with JSON tensors and with binary tensor data (`graphlab.loadtest.protocols`: the same numbers, the same
answer asked for), each posted by hey, in `PROTOCOL_ROUNDS` rounds that alternate the protocols on one server
process: the zoo GPT's `graphs` server at 50 req/s (one client; p50), and the image server at `IMAGE_CLIENTS` clients
(closed loop; capacity). `HttpServing.protocol_goals()` judges them against issue 43's goals (binary >= 5x the
nested JSON's capacity; the protocol's p50 within 1 ms of graphlab's JSON).
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
from graphlab.loadtest.over_http import protocol_goals_rows, protocol_summary, ray_goals_rows
from graphlab.loadtest.protocols import PROTOCOLS, http_request
from graphlab.serve.config import ServeConfig
from graphlab.serve.http import describe_stack
from graphlab.loadtest.api import run_loadtest
from graphlab.serve.served_model import ServedModel
from graphlab.studies.serving_ray import RayPlan, measure_ray, ray_serve_installed, tensor_body

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
#: the protocols' comparison: rounds (the protocols alternate within each), the image server's hey clients, the
#: GPT's rate (one client), your own image model's factory
PROTOCOL_ROUNDS = 3
IMAGE_CLIENTS = 32
PROTOCOL_QPS = 50.0
IMAGE_MODEL = "graphlab.studies.serving_http:image_model"
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


def image_model() -> Any:
    """`--model graphlab.studies.serving_http:image_model`: torchvision's ResNet-18 (10 classes, seeded random
    weights) on 3x32x32 float32 images, top-k: an image model of your own (needs torchvision)."""
    try:
        import torchvision
    except ImportError:
        raise ConfigurationError("the image model of the serving_http study is torchvision's ResNet-18: pip install "
                                 "torchvision (or pass HttpServingPlan(image_model=...) another factory)") from None
    torch.manual_seed(0)
    net = torchvision.models.resnet18(weights=None, num_classes=10).eval()
    return ServedModel(net, torch.randn(4, 3, 32, 32), buckets=[1, 2, 4, 8, 16, 32], answer="top_k",
                       name="resnet18_32")


@dataclass(frozen=True)
class _Compare:
    """What every part of the protocols' comparison shares: hey, the folder for the bodies, the protocols, the
    rounds and seconds of each run, and where hey's own output goes."""

    hey: str
    folder: Path
    protocols: tuple[str, ...]
    rounds: int
    duration_s: float
    raw: dict[str, str]


def _protocol_part(compare: _Compare, server: ServerProcess, body: dict[str, Any], part: str, clients: int,
                   qps: float | None) -> dict[str, Any]:
    """hey against `server` with `body` in each protocol, `rounds` times, the protocols alternating (reversed every
    other round, so a drift of the host weighs on each alike)."""
    hey, folder, protocols, raw = compare.hey, compare.folder, compare.protocols, compare.raw
    model = str(server.get_json("/healthz").get("model"))
    meta = server.get_json(f"/v2/models/{model}")
    requests = {p: http_request(body, p, meta) for p in protocols}
    files = {}
    for protocol, request in requests.items():
        files[protocol] = folder / f"body_{part}_{protocol}.bin"
        files[protocol].write_bytes(request.content)
    runs: dict[str, list[dict[str, Any]]] = {p: [] for p in protocols}
    for r in range(compare.rounds):
        for protocol in (protocols if r % 2 == 0 else tuple(reversed(protocols))):
            request = requests[protocol]
            run = run_hey(hey, server.base_url + request.path, files[protocol], concurrency=clients,
                          duration_s=compare.duration_s, qps=qps, content_type=request.content_type,
                          headers=request.headers)
            raw[f"protocols_{part}_{protocol}_r{r + 1}"] = run.pop("raw")
            runs[protocol].append(run)
    out = {"model": model, "clients": clients, "qps": qps, "command": " ".join(server.command[1:]),
           "bodies": {p: {"bytes": len(r.content), "path": r.path, "content_type": r.content_type}
                      for p, r in requests.items()},
           "runs": runs}
    medians = [(p, protocol_summary(out, p)) for p in protocols]
    shown = ", ".join(f"{p} {present.number(m['rps'])} req/s, p50 {present.duration((m['p50_ms'] or 0.0) * 1000)}"
                      for p, m in medians)
    print(f"[record] serving_http protocols, {part} ({model}, {present.count(clients)} "
          f"client{'s' if clients != 1 else ''}): {shown}", flush=True)
    return out


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
        batched_setting: the setting of your own model, the image model and the flood (on a CPU: "eager+batching").
        own: serve your own model through the CLI too.
        protocols: the protocols compared (`graphlab.loadtest.protocols.PROTOCOLS`; empty: no comparison).
        protocol_setting: the server of `settings` whose p50 at `protocol_qps` (one client) each protocol measures.
        image_model: the image model whose capacity at `image_clients` each protocol measures, as the CLI's
            `--model package.module:factory` (None: not measured).
        protocol_rounds: rounds of the comparison; the protocols alternate within each.
        ray: measure Ray Serve beside the plain service (`graphlab.studies.serving_ray`); None: on a GPU wherever
            Ray Serve is installed. ray_plan: its plan (default: `RayPlan` on this plan's device and image model).
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
    protocols: tuple[str, ...] = PROTOCOLS
    protocol_setting: str = "graphs"
    protocol_qps: float = PROTOCOL_QPS
    image_model: str | None = IMAGE_MODEL
    image_clients: int = IMAGE_CLIENTS
    protocol_rounds: int = PROTOCOL_ROUNDS
    ray: bool | None = None
    ray_plan: RayPlan | None = None


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
    if plan.protocols and plan.image_model:
        servers_run.append(("image", [*serve, "--model", plan.image_model, "--setting", plan.batched_setting]))
    if plan.flood_clients:
        servers_run.append(("flood", [*serve, "--model", model, "--setting", plan.batched_setting, "--max-pending",
                                      "64"]))
    protocols: dict[str, Any] = {}  # the protocols' comparison: "latency" (the model), "capacity" (the image model)
    compare = _Compare(hey, folder, tuple(plan.protocols), plan.protocol_rounds, duration_s, raw)
    open_loop: Any = None
    cpu_or_gpu = ServeConfig(device=device)
    for name, cmd in servers_run:
        clock = Stopwatch().start()
        with ServerProcess(cmd, folder / f"server_{name.replace('+', '_')}.log") as server:
            entry: dict[str, Any] = {"command": " ".join(server.command[1:])}
            if name == "image":
                meta = server.get_json(f"/v2/models/{server.get_json('/healthz').get('model')}")
                image = tensor_body(meta["inputs"][0]["shape"][1:])
                protocols["capacity"] = _protocol_part(compare, server, image, "capacity", plan.image_clients, None)
                protocols["capacity"]["service"] = _service(server)
                entry = protocols["capacity"]
            elif name == "flood":
                entry["flood"] = run_flood(hey, server.url, body, concurrency=plan.flood_clients,
                                           duration_s=duration_s)
                answered = ", ".join(f"{present.count(v['count'])} answered {k}" for k, v in
                                     entry["flood"]["by_status"].items())
                print(f"[record] serving_http flood: {answered}, {present.count(entry['flood']['lost'])} lost",
                      flush=True)
            else:
                entry.update(_runs(hey, server, own_body if name == "own" else body, duration_s,
                                   plan.concurrency if name in plan.capacity_for else None, raw, name))
            if name == plan.protocol_setting and plan.protocols:
                protocols["latency"] = _protocol_part(compare, server, BODIES[model], "latency", 1, plan.protocol_qps)
            if name in settings and plan.open_loop_rates:
                curve = run_loadtest(model, rates=list(plan.open_loop_rates), duration_s=1.0, transport="http",
                                     url=server.base_url, config=cpu_or_gpu, progress=False)
                if open_loop is None:
                    open_loop = curve
                else:
                    open_loop.points.extend(curve.points)
                    open_loop.timelines.update(curve.timelines)
            if name not in ("bare", "image"):
                entry["service"] = _service(server)
        entry["exit_code"] = server.exit_code
        entry["seconds"] = round(clock.stop(), 1)
        if name != "image":
            servers[name] = entry
    results: dict[str, Any] = {
        "hey": {"model": model, "device": device, "stack": stack, "p99_limit_ms": P99_LIMIT_MS, "ok_limit": OK_LIMIT,
                "duration_s": duration_s, "servers": servers},
        "raw": raw,
    }
    if open_loop is not None:
        results[f"{model}_http"] = open_loop.to_dict()
    if protocols:
        results["protocols"] = {"rounds": plan.protocol_rounds, "duration_s": duration_s,
                                "protocols": list(plan.protocols), "order": "the protocols alternate within each "
                                "round, reversed every other round, on one server process per part", **protocols}
        for row in protocol_goals_rows(protocols):
            print(f"[record] serving_http goal: {row['goal']}: {row['verdict']} ({row['note']})", flush=True)
    if plan.ray or (plan.ray is None and device.startswith("cuda") and ray_serve_installed()):
        ray_plan = plan.ray_plan or RayPlan(device=device, image_model=plan.image_model or IMAGE_MODEL,
                                            setting=plan.batched_setting, rounds=plan.protocol_rounds,
                                            duration_s=duration_s)
        try:
            ray_results = measure_ray(folder, hey=hey, plan=ray_plan, bodies=BODIES)
        except Exception as exc:  # noqa: BLE001 - Ray that cannot start here is a finding, not the end of the study
            ray_results = {"error": f"{type(exc).__name__}: {' '.join(str(exc).split())[:1500]}", "raw": {}}
            print(f"[record] serving_http ray: could not run: {ray_results['error'][:300]}", flush=True)
        raw.update(ray_results.pop("raw"))
        results["ray"] = ray_results
        for row in ray_goals_rows(ray_results):
            print(f"[record] serving_http ray: {row['goal']}: {row['verdict']} ({row['note']})", flush=True)
    if plan.in_process_rates:
        inproc = run_loadtest(model, settings=[plan.batched_setting], rates=list(plan.in_process_rates),
                              duration_s=1.0, transport="direct", config=cpu_or_gpu, progress=False)
        results[f"{model}_direct"] = inproc.to_dict()
        print(f"[record] serving_http in process: {inproc.knee_line()}", flush=True)
    # the recording names no path of the machine that made it: the temporary folder and hey's location go
    text = json.dumps(results).replace(json.dumps(str(folder))[1:-1], "<folder>").replace(json.dumps(hey)[1:-1], "hey")
    return dict(json.loads(text))


def _service(server: ServerProcess) -> dict[str, Any]:
    """What a graphlab server says of itself after its runs: counters, batch sizes, runner, warm-up."""
    stats = server.get_json("/v1/stats")
    return {k: stats.get(k) for k in ("counters", "batch_rows", "runner", "warmup_s")}


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


__all__ = ["BODIES", "HttpServingPlan", "IMAGE_MODEL", "RECORDING", "image_model", "measure", "own_model", "record",
           "tensor_body"]
