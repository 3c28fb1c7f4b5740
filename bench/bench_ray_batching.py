"""graphlab's batcher vs Ray Serve's `@serve.batch`, each in one Ray Serve replica behind Ray's HTTP proxy, on the CPU.

    .venv/bin/python bench/bench_ray_batching.py                       # rates 50,150,300 req/s, 4 s each
    .venv/bin/python bench/bench_ray_batching.py --rates 100,400 --duration-s 3 --out /tmp/ray_batching.json

Both replicas serve the same model with the same graph cache (buckets 1, 2, 4, 8; eager backend on the CPU)
and the same parse / prepare / answer of its `gl.ServedModel`; only the batching differs:
- `graphlab`: graphlab.serve.ray_deployment (the service's own app: its DynamicBatcher, max 8 rows, a
  window of --max-wait-us, the GPU worker thread);
- `serve.batch`: a replica whose handler parses and prepares, then awaits a `@serve.batch(max_batch_size=8,
  batch_wait_timeout_s=max_wait)` method that concatenates the rows, runs the same runner in a thread
  (`asyncio.to_thread`, off the replica's event loop) and answers.
The model costs a fixed FIXED_COST_MS per batch, whatever its rows (a small GPU model is launch-bound the
same way), so batching is what decides capacity. Requests are one row each (`@serve.batch` counts calls,
graphlab's batcher counts rows: with one-row requests the two limits mean the same). The load is graphlab's
open-loop generator (Poisson arrivals, latency from the scheduled arrival) over real sockets.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
FIXED_COST_MS = float(os.environ.get("BENCH_FIXED_COST_MS", "2"))


class FixedCost(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.linear = torch.nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        time.sleep(FIXED_COST_MS / 1000.0)
        return self.linear(x)


def fixed_cost():
    import graphlab as gl

    return gl.ServedModel(FixedCost(), torch.zeros(1, 8), buckets=[1, 2, 4, 8], name="fixed_cost")


class ServeBatchReplica:
    """The same model, parse, prepare, runner and answer, batched by `@serve.batch` instead of graphlab."""

    def __init__(self, max_wait_s: float):
        from graphlab.serve.runners import make_cache_runner

        self.model = fixed_cost()
        module = self.model.build("cpu")
        self.runner = make_cache_runner(module, lambda n: self.model.example_inputs(n, "cpu"), max_batch_size=8,
                                        buckets=[1, 2, 4, 8], device="cpu", name="serve-batch")
        self.runner.warm_up()
        self.run_batch.set_batch_wait_timeout_s(max_wait_s)
        self.batches = 0

    async def __call__(self, request):
        from starlette.responses import JSONResponse

        from graphlab.errors import ServeError

        try:
            parsed = self.model.parse(json.loads(await request.body()), 8)
            inputs = self.model.prepare(parsed)
            answer = await self.run_batch((parsed, inputs))
        except ServeError as exc:
            return JSONResponse({"error": exc.reason, "detail": str(exc)}, status_code=exc.status)
        return JSONResponse(answer)

    from ray import serve as _serve

    @_serve.batch(max_batch_size=8, batch_wait_timeout_s=0.002)
    async def run_batch(self, items):
        stacked = tuple(torch.cat([inputs[i] for _, inputs in items]) for i in range(len(items[0][1])))
        outputs = await asyncio.to_thread(self.runner, *stacked)
        answers = self.model.answer(outputs, [parsed for parsed, _ in items])
        rows = sum(parsed.rows for parsed, _ in items)
        self.batches += 1
        return [{**a, "batch": {"id": self.batches, "rows": rows, "bucket": self.runner.bucket_for(rows)}}
                for a in answers]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _point(url: str, rate: float, duration_s: float, seed: int) -> dict:
    from graphlab.loadtest.loadgen import HTTPTransport, poisson_arrivals, run_in_fresh_loop, run_open_loop
    from graphlab.stats import percentile

    rng = random.Random(seed)
    offsets = poisson_arrivals(rate, duration_s, rng)
    bodies = [{"inputs": [[round(rng.gauss(0, 1), 3) for _ in range(8)]]} for _ in offsets]

    async def go():
        send = HTTPTransport(url)
        try:
            return await run_open_loop(send, bodies, offsets, drain_timeout_s=30)
        finally:
            await send.aclose()

    _, records = run_in_fresh_loop(go)
    ok = [r for r in records if r.status == 200]
    lat_ms = [(r.done_ns - r.scheduled_ns) / 1e6 for r in ok]
    seen = {}
    for r in ok:
        batch = r.answer.get("batch", {})
        seen[batch.get("id")] = batch.get("rows", 1)
    return {"offered_rps": rate, "sent": len(records), "ok": len(ok),
            "p50_ms": round(percentile(lat_ms, 50), 2) if lat_ms else None,
            "p99_ms": round(percentile(lat_ms, 99), 2) if lat_ms else None,
            "mean_batch_rows_per_answer": round(sum(r.answer.get("batch", {}).get("rows", 1) for r in ok) / len(ok), 2)
            if ok else None}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="50,150,300")
    parser.add_argument("--duration-s", type=float, default=4.0)
    parser.add_argument("--max-wait-us", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    rates = [float(r) for r in args.rates.split(",")]
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(HERE), os.environ.get("PYTHONPATH", "")])
    import ray
    from ray import serve

    from graphlab.serve.config import ServeConfig
    from graphlab.serve.ray_deployment import RayOptions, deployment

    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False, configure_logging=False)
    port = _free_port()
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    env = {"env_vars": {"OMP_NUM_THREADS": "1", "BENCH_FIXED_COST_MS": str(FIXED_COST_MS)}}
    results = {"conditions": {"fixed_cost_ms": FIXED_COST_MS, "max_batch": 8, "max_wait_us": args.max_wait_us,
                              "duration_s": args.duration_s, "rows_per_request": 1, "replicas": 1,
                              "ray": ray.__version__, "torch": torch.__version__, "python": sys.version.split()[0],
                              "cpus": os.cpu_count(), "load_before": os.getloadavg()[0],
                              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())},
               "variants": {}}
    try:
        config = ServeConfig(model="bench_ray_batching:fixed_cost", setting="graphs+batching", device="cpu",
                             max_batch_size=8, buckets=[1, 2, 4, 8], max_wait_us=args.max_wait_us,
                             preprocess_threads=1)
        variants = {
            "graphlab": deployment(config, ray=RayOptions(num_replicas=1, num_cpus=1, runtime_env=env, name="gl")),
            "serve.batch": serve.deployment(ServeBatchReplica, name="sb", num_replicas=1, max_ongoing_requests=512,
                                            ray_actor_options={"num_cpus": 1, "runtime_env": env}
                                            ).bind(args.max_wait_us / 1e6),
        }
        for name, app in variants.items():
            serve.run(app, name=name, route_prefix="/")
            url = f"http://127.0.0.1:{port}"
            _point(url, rates[0], 1.0, args.seed + 99)  # warm the proxy and the connections
            results["variants"][name] = [_point(url, rate, args.duration_s, args.seed + i) for i, rate in enumerate(rates)]
            serve.delete(name)
            print(name, json.dumps(results["variants"][name]), flush=True)
    finally:
        serve.shutdown()
        ray.shutdown()
    results["conditions"]["load_after"] = os.getloadavg()[0]
    text = json.dumps(results, indent=1)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
