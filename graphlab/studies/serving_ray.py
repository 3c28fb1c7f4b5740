"""Ray Serve beside the plain service, in one run: the `serving_http` study's "ray" entry (issue 28's remaining part,
issue 43). Not a study of its own: `graphlab.studies.serving_http.measure` calls `measure_ray` when its plan asks
(`HttpServingPlan(ray=True)`; on the GPU the default wherever Ray Serve is installed), and
`tests/gpu/test_gpu_serve_ray.py` calls it at a small scale.

For each model (the serving_http study's image model, torchvision's ResNet-18 at 3x32x32 through `ServedModel`,
and the zoo GPT), one after the other:

  plain   `python -m graphlab.serve --model M --setting graphs+batching`, a process of its own on the GPU
  ray     the same service as one Ray Serve replica with `num_gpus=1` (`graphlab.serve.ray_deployment`) behind
          Ray's HTTP proxy, started by this process (Ray, Serve's proxy on a free port, the deployment)

both up at once, on the same GPU:
- the replica says where it runs (`describe`: its process, CUDA_VISIBLE_DEVICES, its runner: the graph cache and
  the graphs it captured) and both answer the same body alike (graphlab's JSON, and for the image model the Open
  Inference Protocol with binary tensors through Ray's proxy: `/v2`);
- hey against each in `rounds` alternating rounds (`clients` clients, closed loop): the capacity of each and their
  ratio (the goal: Ray >= 0.8x the plain service for the image model); the image model with binary tensors too;
- for the GPT, the open loop over HTTP at `open_loop_rates` against each (`run_loadtest(transport="http")`):
  each answer carries the time it spent inside the service, so the client's latency minus it is what HTTP, and on
  Ray its proxy and the hop to the replica, add ("where the time goes");
- then, for `kill_model`, a replica killed under load: SIGKILL of its process `kill_after_s` into an open loop
  at `kill_rate` req/s lasting `kill_seconds`; every answer counted by status (0: no answer at all), the first
  answered 200 after the kill, and the replica Ray started in its place.

Ray is imported here only, inside `measure_ray` (the `ray` extra); `graphlab record --help` reads no study's
imports.
"""
from __future__ import annotations

import importlib.util
import json
import os
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from graphlab import present
from graphlab.clock import Stopwatch, now_s
from graphlab.loadtest.api import run_loadtest
from graphlab.loadtest.external import ServerProcess, free_port, run_hey
from graphlab.loadtest.loadgen import HTTPTransport, poisson_arrivals, run_in_fresh_loop, run_open_loop
from graphlab.loadtest.protocols import http_request
from graphlab.serve.config import ServeConfig
from graphlab.serve.models import resolve_model
from graphlab.serve.ray_proxy import REPLICA_HEADER

#: Ray's proxy makes its own refusals graphlab's JSON when started with this (docs/ray-serve.md)
NAME = "graphlab-serving-http"


def ray_serve_installed() -> bool:
    """Whether Ray Serve can be imported here (the `ray` extra; on the lent H200, scripts/ray_wheel_parts.sh)."""
    try:
        return importlib.util.find_spec("ray") is not None and importlib.util.find_spec("ray.serve") is not None
    except (ImportError, ValueError):
        return False


@dataclass(frozen=True)
class RayPlan:
    """What `measure_ray` runs (the module docstring says each).

    Attributes:
        models: "image" (the study's image model, `image_model`) and zoo names, measured one after the other.
        image_model: the image model as `--model package.module:factory`.
        setting, device: the service's setting and device, the same for both.
        clients, rounds, duration_s: hey's clients, the alternating rounds, seconds per run.
        open_loop_rates: the GPT's open-loop rates over HTTP (req/s; empty: none).
        kill_model: the model whose replica is killed under load ("" : none).
        kill_rate, kill_after_s, kill_seconds: that load's rate, when the kill comes, how long the load goes on.
    """

    models: tuple[str, ...] = ("image", "gpt")
    image_model: str = "graphlab.studies.serving_http:image_model"
    setting: str = "graphs+batching"
    device: str = "cuda"
    clients: int = 32
    rounds: int = 3
    duration_s: float = 2.0
    open_loop_rates: tuple[float, ...] = (50.0, 500.0)
    kill_model: str = "gpt"
    kill_rate: float = 100.0
    kill_after_s: float = 3.0
    kill_seconds: float = 30.0


def _post(url: str, content: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, data=content, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, {k.lower(): v for k, v in answer.headers.items()}, answer.read()
    except urllib.error.HTTPError as err:
        return err.code, {k.lower(): v for k, v in err.headers.items()}, err.read()


def _answers(base_url: str, body: dict[str, Any], meta: dict[str, Any], binary: bool) -> dict[str, Any]:
    """The server's answer to `body` as graphlab's JSON (its top-k ids) and, with `binary`, as the protocol's binary
    data (the raw bytes of its `top_k_ids`): what two servers of one model must agree on."""
    out: dict[str, Any] = {}
    status, headers, raw = _post(base_url + "/v1/infer", json.dumps(body).encode(), {"content-type": "application/json"})
    out["v1_status"] = status
    out["v1_ids"] = [[r["id"] for r in row] for row in json.loads(raw).get("results", [])] if status == 200 else None
    out["replica"] = headers.get(REPLICA_HEADER)
    if binary:
        request = http_request(body, "oip_binary", meta)
        status, headers, raw = _post(base_url + request.path, request.content,
                                     {"content-type": request.content_type, **dict(request.headers)})
        out["v2_status"] = status
        if status == 200:
            cut = int(headers["inference-header-content-length"])
            head = json.loads(raw[:cut])
            first = head["outputs"][0]
            out["v2_first_output"] = {"name": first["name"], "shape": first["shape"],
                                      "bytes_hex": raw[cut: cut + first["parameters"]["binary_data_size"]].hex()}
    return out


def _describe(handle: Any, timeout_s: float = 60.0, exclude_pid: int | None = None) -> dict[str, Any]:
    """The replica's `describe` (its process, devices, runner); with `exclude_pid`, asked until another process
    answers (the replica Ray started in place of a killed one)."""
    deadline = now_s() + timeout_s
    last = ""
    while now_s() < deadline:
        try:
            info = dict(handle.options(method_name="describe").remote().result(timeout_s=10))
        except Exception as exc:  # noqa: BLE001 - a replica being replaced: ask again
            last = f"{type(exc).__name__}: {str(exc)[:200]}"
            time.sleep(0.5)
            continue
        if exclude_pid is None or info.get("pid") != exclude_pid:
            return info
        time.sleep(0.5)
    return {"error": f"no replica answered describe within {timeout_s:g} s ({last})"}


def _kill_under_load(url: str, body: dict[str, Any], pid: int, plan: RayPlan) -> dict[str, Any]:
    """An open loop at `kill_rate` against Ray's proxy; the replica's process SIGKILLed `kill_after_s` in."""
    import random

    offsets = poisson_arrivals(plan.kill_rate, plan.kill_seconds, random.Random(7))
    bodies = [body] * len(offsets)
    timer = threading.Timer(plan.kill_after_s + 0.02, os.kill, (pid, signal.SIGKILL))

    async def go() -> tuple[int, list[Any]]:
        send = HTTPTransport(url)
        try:
            timer.start()
            return await run_open_loop(send, bodies, offsets, drain_timeout_s=120.0)
        finally:
            await send.aclose()

    start_ns, records = run_in_fresh_loop(go)
    timer.join()
    kill_ns = start_ns + int(plan.kill_after_s * 1e9)
    by_status: dict[str, int] = {}
    reasons: dict[str, int] = {}
    for r in records:
        by_status[str(r.status)] = by_status.get(str(r.status), 0) + 1
        if r.status != 200:
            reasons[r.reason or str(r.status)] = reasons.get(r.reason or str(r.status), 0) + 1
    after = sorted((r.done_ns - kill_ns) / 1e9 for r in records
                   if r.status == 200 and r.scheduled_ns > kill_ns)
    failed_after = [r for r in records if r.status != 200 and r.scheduled_ns >= kill_ns]
    last_failed = max(((r.done_ns - kill_ns) / 1e9 for r in failed_after), default=None)
    return {"rate_rps": plan.kill_rate, "seconds": plan.kill_seconds, "kill_after_s": plan.kill_after_s,
            "sent": len(records), "by_status": by_status, "reasons": reasons, "lost": by_status.get("0", 0),
            "first_ok_after_kill_s": round(after[0], 3) if after else None,
            "last_failure_after_kill_s": None if last_failed is None else round(last_failed, 3)}


def tensor_body(row_shape: Sequence[int], seed: int = 0, top_k: int | None = 5) -> dict[str, Any]:
    """graphlab's own JSON for one row of `row_shape` (nested lists of numbers with 4 decimals, seeded): a 3x32x32
    image is about 25 KB of it."""
    import random

    rng = random.Random(seed)

    def nest(dims: Sequence[int]) -> Any:
        if not dims:
            return round(rng.gauss(0.0, 1.0), 4)
        return [nest(dims[1:]) for _ in range(dims[0])]

    body: dict[str, Any] = {"inputs": [nest(list(row_shape))]}
    if top_k is not None:
        body["top_k"] = top_k
    return body



def _model(name: str, plan: RayPlan, folder: Path, hey: str, serve: Any, url: str,
           bodies: dict[str, dict[str, Any]]) -> dict[str, Any]:
    from graphlab.serve.ray_deployment import RayOptions, deployment

    model_arg = plan.image_model if name == "image" else name
    served = resolve_model(model_arg)
    config = ServeConfig.for_model(served, setting=plan.setting, device=plan.device)
    cuda = plan.device.startswith("cuda")
    command = [sys.executable, "-m", "graphlab.serve", "--model", model_arg, "--device", plan.device, "--setting",
               plan.setting]
    out: dict[str, Any] = {"model": served.name, "setting": plan.setting}
    with ServerProcess(command, folder / f"server_plain_{served.name}.log", ready_timeout_s=300) as plain:
        out["plain_command"] = " ".join(plain.command[1:])
        app = deployment(config, model=model_arg, ray=RayOptions(num_replicas=1, num_gpus=1.0 if cuda else 0.0,
                                                                 name=NAME, health_check_period_s=2.0))
        clock = Stopwatch().start()
        handle = serve.run(app, name=NAME, route_prefix="/")
        out["ray_start_s"] = round(clock.stop(), 1)
        replica = _describe(handle)
        out["replica"] = replica
        meta = plain.get_json(f"/v2/models/{served.name}")
        body = tensor_body(meta["inputs"][0]["shape"][1:]) if name == "image" else dict(bodies[name])
        binary = name == "image"
        out["answers"] = {"plain": _answers(plain.base_url, body, meta, binary), "ray": _answers(url, body, meta, binary)}
        mine, theirs = out["answers"]["plain"], out["answers"]["ray"]
        same = mine["v1_ids"] is not None and mine["v1_ids"] == theirs["v1_ids"]
        if binary:
            same = same and mine.get("v2_first_output") is not None and \
                mine.get("v2_first_output") == theirs.get("v2_first_output")
        out["same_answers"] = bool(same)
        protocols = ("graphlab", "oip_binary") if binary else ("graphlab",)
        requests = {p: http_request(body, p, meta) for p in protocols}
        files = {}
        for p, request in requests.items():
            files[p] = folder / f"ray_{served.name}_{p}.body"
            files[p].write_bytes(request.content)
        runs: dict[str, list[dict[str, Any]]] = {f"{where}_{p}": [] for where in ("plain", "ray") for p in protocols}
        raw: dict[str, str] = {}
        for r in range(plan.rounds):
            order = ("plain", "ray") if r % 2 == 0 else ("ray", "plain")
            for p in protocols:
                for where in order:
                    base = plain.base_url if where == "plain" else url
                    run = run_hey(hey, base + requests[p].path, files[p], concurrency=plan.clients,
                                  duration_s=plan.duration_s, content_type=requests[p].content_type,
                                  headers=requests[p].headers)
                    raw[f"ray_{served.name}_{where}_{p}_r{r + 1}"] = run.pop("raw")
                    runs[f"{where}_{p}"].append(run)
        out["clients"], out["runs"], out["raw"] = plan.clients, runs, raw
        shown = ", ".join(f"{k} {present.number(sorted(x['rps'] for x in v)[len(v) // 2])} req/s" for k, v in runs.items())
        print(f"[record] serving_http ray, {served.name} ({plan.clients} clients): {shown}", flush=True)
        if name != "image" and plan.open_loop_rates:
            gpu_or_cpu = ServeConfig(device=plan.device)
            out["open_loop"] = {where: run_loadtest(name, rates=list(plan.open_loop_rates), duration_s=1.0,
                                                    transport="http", url=base, config=gpu_or_cpu,
                                                    progress=False).to_dict()
                                for where, base in (("plain", plain.base_url), ("ray", url))}
        if name == plan.kill_model and "pid" in replica:
            kill = _kill_under_load(url, body, int(replica["pid"]), plan)
            kill["replaced_by"] = _describe(handle, timeout_s=300, exclude_pid=int(replica["pid"]))
            out["kill"] = kill
            print(f"[record] serving_http ray, a replica killed under load: {kill['by_status']} (status 0: no "
                  f"answer); first 200 after the kill at {kill['first_ok_after_kill_s']} s", flush=True)
        serve.delete(NAME)
    out["plain_exit_code"] = plain.exit_code
    return out


def measure_ray(folder: Path, *, hey: str, bodies: dict[str, dict[str, Any]],
                plan: RayPlan | None = None) -> dict[str, Any]:
    """Ray Serve beside the plain service for each of `plan.models` (the module docstring says what), each zoo model
    sent its body of `bodies` (graphlab's JSON; `graphlab.studies.serving_http.BODIES`), the image model a row of its
    input's shape (`tensor_body`); the results, hey's own output of each run under "raw"."""
    import ray
    from ray import serve

    from graphlab.serve.ray_deployment import PROXY_ENV, local_ray

    plan = plan or RayPlan()
    root = str(Path(__file__).resolve().parents[2])  # the graphlab measured, in every Ray process
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])), **PROXY_ENV}
    port = free_port()
    out: dict[str, Any] = {"plan": {k: getattr(plan, k) for k in plan.__dataclass_fields__}, "models": {}}
    raw: dict[str, str] = {}
    with local_ray(env):
        ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
        out["ray_version"] = ray.__version__
        out["cluster"] = {k: v for k, v in ray.cluster_resources().items() if k in ("CPU", "GPU", "memory")}
        serve.start(http_options={"host": "127.0.0.1", "port": port, "request_timeout_s": 30})
        url = f"http://127.0.0.1:{port}"
        for name in plan.models:
            result = _model(name, plan, folder, hey, serve, url, bodies)
            raw.update(result.pop("raw"))
            out["models"][name] = result
    out["raw"] = raw
    return out


__all__ = ["NAME", "RayPlan", "measure_ray", "ray_serve_installed", "tensor_body"]
