"""Why does the replica-throughput measurement crash or hang on one H200? Each scenario in its own process.

    python3 scripts/probes/replica_probe.py --out $OUT/replica_probe

Scenarios (model gpt, batch 1 unless said; every response checked against eager):
  one        Replicas over [cuda:0], closed loop of 4 in flight
  two        Replicas over [cuda:0, cuda:0] (two caches, two worker threads, one GPU)
  two_seq    the same two caches, one request in flight at a time (no concurrency)
  inline     the two caches, driven from the caller's thread on two streams (no workers)
  graphs2    two raw CapturedGraphs of two model copies replayed concurrently on two streams, two threads
  full       measure_replica_throughput("gpt", [1, 8, 32]) as the recorder runs it
  pool_cost  pool memory of one graph: gl.capture (its own cuBLAS workspace) vs torch.cuda.graph
A scenario that hangs prints every thread's stack (faulthandler) after 30 s and is killed at 40 s.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

SCENARIO = r'''
import faulthandler, json, sys, threading, time
faulthandler.dump_traceback_later(30, exit=True)
import torch
import graphlab as gl
from graphlab.zoo import get_model
from graphlab.distributed.replicas import Replicas
from graphlab.studies.replica_throughput import _closed_loop, _inline, measure_replica_throughput
name = sys.argv[1]
out = {"scenario": name}
if name == "pool_cost":
    for model, b in (("mlp", 1), ("gpt", 1), ("gpt", 32)):
        z = get_model(model); m = z.build(device="cuda"); xs = z.make_inputs(b, device="cuda")
        with torch.no_grad():
            cg = gl.capture(m, *xs)
            s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    m(*xs)
            torch.cuda.current_stream().wait_stream(s); torch.cuda.synchronize()
            r0 = torch.cuda.memory_reserved(); g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, stream=s):  # warmed up on s: its cuBLAS workspace already exists
                m(*xs)
            torch.cuda.synchronize()
            out[f"{model}_b{b}"] = {"graphlab_pool_bytes": cg.cost.pool_bytes,
                                    "torch_graph_pool_bytes": torch.cuda.memory_reserved() - r0}
        del cg, g
    print("RESULT " + json.dumps(out)); sys.exit(0)
zoo = get_model("gpt")
if name == "full":
    out["result"] = measure_replica_throughput("gpt", [1, 8, 32], progress=False)
    print("RESULT " + json.dumps(out)); sys.exit(0)
torch.manual_seed(0)
base = zoo.build(device="cuda:0")
reqs = [tuple(t.pin_memory() for t in zoo.make_inputs(1, device="cpu", seed=s)) for s in range(4)]
with torch.no_grad():
    want = [base(*(t.cuda() for t in r)).cpu() for r in reqs]
errs = []
def check(i, y):
    errs.append(float((y - want[i % 4]).abs().max()))
with torch.no_grad():
    if name in ("one", "two", "two_seq", "inline"):
        devs = [0] if name == "one" else [0, 0]
        reps = Replicas(base, devs, buckets=[1])
        reps.warmup(*reqs[0], sizes=[1], progress=False)
        n = 0; t0 = time.perf_counter(); futs = []
        if name == "inline":
            submit, wait = _inline(reps.caches, [torch.device("cuda", 0)] * 2)
            pend = []
            while time.perf_counter() - t0 < 1.0:
                if len(pend) >= 4:
                    j, it = pend.pop(0); check(j, wait(it)); n += 1
                pend.append((n + len(pend), submit(reqs[(n + len(pend)) % 4])))
            for j, it in pend:
                check(j, wait(it)); n += 1
        else:
            window = 1 if name == "two_seq" else 4
            i = 0
            while time.perf_counter() - t0 < 1.0:
                if len(futs) >= window:
                    j, f = futs.pop(0); check(j, f.result()); n += 1
                futs.append((i, reps.submit(*reqs[i % 4]))); i += 1
            for j, f in futs:
                check(j, f.result()); n += 1
        out["requests_per_s"] = round(n / (time.perf_counter() - t0), 1)
        out["stats"] = reps.stats().to_dict()
        reps.close()
    elif name == "graphs2":
        import copy
        models = [base, copy.deepcopy(base)]
        graphs = [gl.capture(m, *(t.cuda() for t in reqs[0])) for m in models]
        streams = [torch.cuda.Stream() for _ in models]
        def worker(k):
            torch.cuda.set_device(0)
            with torch.cuda.stream(streams[k]):
                for i in range(2000):
                    x = reqs[i % 4][0].cuda(non_blocking=True)
                    y = graphs[k](x).clone()
                    if i % 50 == 0:
                        streams[k].synchronize(); check(i, y.cpu())
        ts = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
        t0 = time.perf_counter()
        [t.start() for t in ts]; [t.join() for t in ts]
        out["seconds"] = round(time.perf_counter() - t0, 3)
torch.cuda.synchronize()
out["checked"] = len(errs); out["max_abs_err"] = max(errs) if errs else None
out["bad"] = sum(e > 1e-3 for e in errs)
print("RESULT " + json.dumps(out))
'''


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--scenarios", default="pool_cost,one,two_seq,two,inline,graphs2,full")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    results = []
    for name in args.scenarios.split(","):
        for blocking in ("0", "1") if name == "two" else ("0",):
            env = dict(os.environ, CUDA_LAUNCH_BLOCKING=blocking)
            t0 = time.perf_counter()
            try:
                done = subprocess.run([sys.executable, "-c", SCENARIO, name], capture_output=True, text=True,
                                      timeout=80 if name == "full" else 40, env=env)
                rc, stdout, stderr = done.returncode, done.stdout, done.stderr
            except subprocess.TimeoutExpired as exc:
                rc, stdout, stderr = "timeout", exc.stdout or "", exc.stderr or ""
                stdout = stdout.decode() if isinstance(stdout, bytes) else stdout
                stderr = stderr.decode() if isinstance(stderr, bytes) else stderr
            line = [ln for ln in stdout.splitlines() if ln.startswith("RESULT ")]
            entry = {"scenario": name, "launch_blocking": blocking, "rc": rc,
                     "seconds": round(time.perf_counter() - t0, 1),
                     "result": json.loads(line[-1][7:]) if line else None,
                     "stderr_tail": stderr[-6000:] if not line else stderr[-800:]}
            results.append(entry)
            print(json.dumps({k: v for k, v in entry.items() if k != "stderr_tail"})[:1500], flush=True)
            if not line:
                print(entry["stderr_tail"], flush=True)
    with open(os.path.join(args.out, "replica_probe.json"), "w") as fh:
        json.dump(results, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
