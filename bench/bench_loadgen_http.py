"""How fast graphlab's open-loop generator can offer requests over HTTP: httpx against the raw client.

    python bench/bench_loadgen_http.py                       # here: a bare Starlette app on 127.0.0.1
    python bench/bench_loadgen_http.py --rates 500 1000 2000 4000 --seconds 2

Both clients drive the same bare app (a Starlette route that parses the JSON and answers a fixed JSON, its own
uvicorn process: `graphlab.loadtest.external`) with the same Poisson arrivals; per rate: answered req/s, the
generator's lag behind its schedule (p50/p99 µs: how late each request left) and the latency from the scheduled
arrival (p50/p99 ms). A client keeps up while its lag stays far below the latency it measures. Printed, and
written as JSON with --out.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
from pathlib import Path

from graphlab.loadtest.external import ServerProcess, bare_app_command
from graphlab.serve.http import describe_stack
from graphlab.loadtest.loadgen import HTTPTransport, poisson_arrivals, run_in_fresh_loop, run_open_loop
from graphlab.loadtest.report import summarize_point

BODY = {"texts": ["CUDA graphs replay kernels"], "top_k": 5}


def one(url: str, client: str, rate: float, seconds: float) -> dict:
    offsets = poisson_arrivals(rate, seconds, random.Random(int(rate)))

    async def go():
        send = HTTPTransport(url, client=client)
        try:
            return await run_open_loop(send, [BODY] * len(offsets), offsets, 30.0)
        finally:
            await send.aclose()

    start_ns, records = run_in_fresh_loop(go)
    point = summarize_point(setting=client, offered_rps=rate, duration_s=seconds, transport="http",
                            start_ns=start_ns, clients=records, batches=[])  # the load test's own summary
    ms = {q: round(v / 1000.0, 3) for q, v in point.latency_us.items()}
    return {"client": client, "rate_rps": rate, "sent": len(records), "ok": sum(r.status == 200 for r in records),
            "answered_rps": point.achieved_rps, "lag_p50_us": point.lag_us.get("p50"),
            "lag_p99_us": point.lag_us.get("p99"), "latency_p50_ms": ms.get("p50"), "latency_p99_ms": ms.get("p99")}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rates", type=float, nargs="+", default=[250, 500, 1000, 2000, 4000])
    p.add_argument("--seconds", type=float, default=1.5)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        with ServerProcess(bare_app_command(Path(tmp), describe_stack(), sys.executable), Path(tmp) / "log") as srv:
            for rate in args.rates:
                for client in ("httpx", "raw"):  # side by side at each rate
                    row = one(srv.base_url, client, rate, args.seconds)
                    rows.append(row)
                    print(f"{client:<6} {rate:>6g} req/s: answered {row['answered_rps']:>7g}/s, lag p50 "
                          f"{row['lag_p50_us']:>9,.1f} µs p99 {row['lag_p99_us']:>10,.1f} µs, latency p50 "
                          f"{row['latency_p50_ms']} ms p99 {row['latency_p99_ms']} ms", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps({"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                                                          "load": os.getloadavg(), "stack": describe_stack()},
                                              "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
