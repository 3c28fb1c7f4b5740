"""What an HTTP client sees of `python -m graphlab.serve`, beside a bare Starlette app (the floor), with `hey`.

    python bench/bench_serve_http.py --hey /path/to/hey --out out/serve_http              # GPU: zoo GPT
    python bench/bench_serve_http.py --hey hey --device cpu --model mlp --quick --out /tmp/s   # CPU dry run

Every server is a process of its own on 127.0.0.1 with the same uvicorn stack (uvloop + httptools where
installed); the load generator is `hey` (Debian's package, written by no one here), closed loop:

- `single`: one client, one request at a time (-c 1): the latency of one request through the whole stack;
- `rate50`, `rate200`: one or two clients held to 50 / 200 requests per second (-q): the issue's two rates;
- `capacity`: -c 8 .. 256 clients: throughput, p99 and the share answered 200 at each concurrency; the
  capacity is the highest throughput with p99 <= 50 ms and >= 99.9 % answered 200.

Servers: `bare` (a Starlette route that parses the JSON body and answers a fixed JSON: what uvicorn and the
client cost), then the service in each setting (`graphs`, `graphs+batching`, `eager`), and `own` (a
ServedModel of your own through `--model bench_serve_http:own_model`). Results: one JSON file (the hey
summaries parsed, the commands, the machine) and hey's raw output per run. hey measures the time; this
script only starts, waits for and stops processes (time.sleep for that; nothing here is timed by Python).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from graphlab.clock import now_s

ROOT = Path(__file__).resolve().parent.parent
BODIES = {"gpt": {"texts": ["CUDA graphs replay kernels"], "top_k": 5},
          "mlp": {"vectors": [[0.01 * i for i in range(256)]], "top_k": 5},
          "own": {"inputs": [[0.01 * i for i in range(64)]]}}
CONCURRENCY = (8, 32, 128, 256)
P99_LIMIT_MS = 50.0
OK_LIMIT = 0.999

BARE_APP = '''
import json
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

async def infer(request: Request):
    json.loads(await request.body())
    return JSONResponse({"id": 0, "results": [[{"id": 1, "label": "a", "prob": 0.5}]]})

async def healthz(request: Request):
    return JSONResponse({"state": "ready"})

app = Starlette(routes=[Route("/v1/infer", infer, methods=["POST"]), Route("/healthz", healthz)])
'''


def own_model():
    """`--model bench_serve_http:own_model`: a 3-layer MLP of your own (64 -> 256 -> 256 -> 10), buckets 1..32."""
    import torch

    import graphlab as gl

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256), torch.nn.ReLU(),
                              torch.nn.Linear(256, 10))
    return gl.ServedModel(net, torch.randn(4, 64), buckets=[1, 2, 4, 8, 16, 32], name="own_mlp")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(cmd: list[str], port: int, log: Path, env: dict[str, str], timeout_s: float = 120.0) -> subprocess.Popen:
    proc = subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT, env=env, cwd=ROOT)
    deadline = now_s() + timeout_s
    while now_s() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{cmd} exited {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
                if r.status == 200:
                    return proc
        except OSError:
            pass
        time.sleep(0.25)
    proc.kill()
    raise RuntimeError(f"{cmd} not ready within {timeout_s} s")


def stop(proc: subprocess.Popen) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait(5)


def parse_hey(text: str) -> dict:
    """hey's summary: requests/s, the latency percentiles (ms), status counts, errors."""
    out: dict = {"latency_ms": {}, "status": {}, "errors": 0}
    m = re.search(r"Requests/sec:\s+([\d.]+)", text)
    out["rps"] = float(m.group(1)) if m else 0.0
    for pct, secs in re.findall(r"\s(\d+)%+ in ([\d.]+) secs", text):
        out["latency_ms"][f"p{pct}"] = round(float(secs) * 1000.0, 3)
    for key, name in (("Fastest", "min"), ("Average", "mean"), ("Slowest", "max")):
        m = re.search(rf"{key}:\s+([\d.]+) secs", text)
        if m:
            out["latency_ms"][name] = round(float(m.group(1)) * 1000.0, 3)
    for code, n in re.findall(r"\[(\d{3})\]\s+(\d+) responses", text):
        out["status"][code] = int(n)
    err = re.search(r"Error distribution:(.*)", text, re.S)
    if err:
        out["errors"] = sum(int(n) for n in re.findall(r"\[(\d+)\]", err.group(1)))
    total = sum(out["status"].values()) + out["errors"]
    out["requests"] = total
    out["ok_fraction"] = round(out["status"].get("200", 0) / total, 5) if total else 0.0
    return out


def hey(binary: str, url: str, body_file: Path, raw: Path, *, concurrency: int, duration_s: float,
        qps: float | None = None) -> dict:
    cmd = [binary, "-z", f"{duration_s}s", "-c", str(concurrency), "-m", "POST", "-T", "application/json",
           "-D", str(body_file), "-t", "20"]
    if qps is not None:
        cmd += ["-q", f"{qps:g}"]
    cmd.append(url)
    text = subprocess.run(cmd, capture_output=True, text=True, timeout=duration_s + 60).stdout
    raw.write_text(" ".join(cmd) + "\n" + text)
    result = parse_hey(text)
    result.update(concurrency=concurrency, duration_s=duration_s, qps_per_client=qps, command=" ".join(cmd))
    return result


def flood(binary: str, url: str, body_file: Path, raw: Path, *, concurrency: int, duration_s: float) -> dict:
    """hey -o csv at `concurrency` clients: per status, how many and how fast (a refusal must come at once)."""
    cmd = [binary, "-z", f"{duration_s}s", "-c", str(concurrency), "-m", "POST", "-T", "application/json",
           "-D", str(body_file), "-t", "20", "-o", "csv", url]
    text = subprocess.run(cmd, capture_output=True, text=True, timeout=duration_s + 60).stdout
    raw.write_text(" ".join(cmd) + "\n" + text)
    by_status: dict[str, list[float]] = {}
    for line in text.splitlines()[1:]:
        parts = line.split(",")
        if len(parts) >= 7 and parts[6].strip().isdigit():
            by_status.setdefault(parts[6].strip(), []).append(float(parts[0]) * 1000.0)
    from graphlab.stats import percentile

    out = {"concurrency": concurrency, "duration_s": duration_s, "command": " ".join(cmd), "by_status": {}}
    for status, ms in sorted(by_status.items()):
        ms.sort()
        out["by_status"][status] = {"count": len(ms), "p50_ms": round(percentile(ms, 50), 3),
                                    "p99_ms": round(percentile(ms, 99), 3), "max_ms": round(ms[-1], 3)}
    return out


def measure(server: str, url: str, body_file: Path, out: Path, args: argparse.Namespace) -> dict:
    """hey's runs against one server; `server` as named in --capacity-for ("graphs+batching")."""
    runs: dict = {}
    name = server.replace("+", "_")  # for file names
    d = args.duration_s
    runs["single"] = hey(args.hey, url, body_file, out / f"{name}_single.txt", concurrency=1, duration_s=d)
    runs["rate50"] = hey(args.hey, url, body_file, out / f"{name}_rate50.txt", concurrency=1, duration_s=d, qps=50)
    runs["rate200"] = hey(args.hey, url, body_file, out / f"{name}_rate200.txt", concurrency=2, duration_s=d,
                          qps=100)
    if server in args.capacity_for:
        curve = []
        for c in CONCURRENCY if not args.quick else (8, 32):
            point = hey(args.hey, url, body_file, out / f"{name}_c{c}.txt", concurrency=c, duration_s=d)
            curve.append(point)
        runs["capacity_curve"] = curve
        good = [p for p in curve if p["latency_ms"].get("p99", 1e9) <= P99_LIMIT_MS and p["ok_fraction"] >= OK_LIMIT]
        runs["capacity_rps"] = max((p["rps"] for p in good), default=0.0)
    print(f"{name}: single p50 {runs['single']['latency_ms'].get('p50')} ms, 50/s p50 "
          f"{runs['rate50']['latency_ms'].get('p50')} ms, 200/s p50 {runs['rate200']['latency_ms'].get('p50')} ms"
          + (f", capacity {runs['capacity_rps']:.0f} req/s" if "capacity_rps" in runs else ""), flush=True)
    return runs


def machine() -> dict:
    info = {"python": platform.python_version(), "cpu_count": os.cpu_count(), "date": time.strftime(
        "%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "command": " ".join(sys.argv)}
    try:
        import torch

        info["torch"] = torch.__version__
        if torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name(0)
    except ImportError:
        pass
    try:
        info["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                        capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    import importlib.util

    info["stack"] = {"uvloop": bool(importlib.util.find_spec("uvloop")),
                     "httptools": bool(importlib.util.find_spec("httptools"))}
    for mod in ("uvicorn", "starlette"):
        try:
            info[mod] = __import__(mod).__version__
        except ImportError:
            pass
    try:
        info["git_commit"] = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                                            cwd=ROOT, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return info


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hey", default="hey")
    p.add_argument("--model", default="gpt")
    p.add_argument("--device", default="cuda")
    p.add_argument("--settings", nargs="*", default=["graphs", "graphs+batching", "eager"])
    p.add_argument("--capacity-for", nargs="+", default=["bare", "graphs+batching"])
    p.add_argument("--own", action="store_true", help="also serve own_model() (a ServedModel) through the CLI")
    p.add_argument("--inline-variant", action="store_true",
                   help="also graphs+batching with --preprocess-threads 0 (pre-processing on the event loop)")
    p.add_argument("--duration-s", type=float, default=3.0)
    p.add_argument("--flood", type=int, default=0, metavar="CLIENTS",
                   help="also flood graphs+batching (started with --max-pending 64) from this many clients")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", default="out/serve_http")
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "bench"),
                                                         os.environ.get("PYTHONPATH", "")])}
    (out / "bare_app.py").write_text(BARE_APP)
    from graphlab.serve.http import describe_stack

    stack = describe_stack()
    results: dict = {"machine": machine(), "model": args.model, "device": args.device, "stack": stack,
                     "p99_limit_ms": P99_LIMIT_MS, "ok_limit": OK_LIMIT, "servers": {}}
    body_file = out / f"body_{args.model}.json"
    body_file.write_text(json.dumps(BODIES[args.model]))
    servers = [("bare", [sys.executable, "-m", "uvicorn", "--app-dir", str(out), "bare_app:app", "--loop",
                         stack["loop"], "--http", stack["http"], "--log-level", "warning", "--no-access-log"])]
    for setting in args.settings:
        servers.append((setting, [sys.executable, "-m", "graphlab.serve", "--model", args.model, "--setting", setting,
                                  "--device", args.device]))
    if args.inline_variant:
        servers.append(("graphs+batching+inline", [sys.executable, "-m", "graphlab.serve", "--model", args.model,
                                                   "--setting", "graphs+batching", "--device", args.device,
                                                   "--preprocess-threads", "0"]))
    if args.own:
        servers.append(("own", [sys.executable, "-m", "graphlab.serve", "--model", "bench_serve_http:own_model",
                                "--setting", "graphs+batching", "--device", args.device]))
    if args.flood:
        servers.append(("flood", [sys.executable, "-m", "graphlab.serve", "--model", args.model, "--setting",
                                  "graphs+batching", "--device", args.device, "--max-pending", "64"]))
    for name, cmd in servers:
        port = free_port()
        cmd = [*cmd, "--port", str(port), "--host", "127.0.0.1"]
        proc = start(cmd, port, out / f"server_{name.replace('+', '_')}.log", env)
        body = body_file
        if name == "own":
            body = out / "body_own.json"
            body.write_text(json.dumps(BODIES["own"]))
        try:
            url = f"http://127.0.0.1:{port}/v1/infer"
            if name == "flood":
                entry = {"command": " ".join(cmd), "flood": flood(args.hey, url, body, out / "flood.csv",
                                                                   concurrency=args.flood, duration_s=args.duration_s)}
                print(f"flood: {entry['flood']['by_status']}", flush=True)
            else:
                entry = {"command": " ".join(cmd), **measure(name, url, body, out, args)}
            if name != "bare":
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/stats", timeout=5) as r:
                    stats = json.loads(r.read())
                entry["service"] = {k: stats.get(k) for k in ("counters", "batch_rows", "runner", "warmup_s")}
        finally:
            entry["exit_code"] = stop(proc)
        results["servers"][name] = entry
        (out / "serve_http.json").write_text(json.dumps(results, indent=1))
    print(f"wrote {out / 'serve_http.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
