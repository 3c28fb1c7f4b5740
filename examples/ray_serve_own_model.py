"""Your own model on Ray Serve with graphlab: two replicas behind Ray's HTTP proxy, on a laptop CPU or a GPU node.

    pip install 'graphlab[ray]'
    python examples/ray_serve_own_model.py                 # CPU: two replicas, graph cache on its eager backend
    python examples/ray_serve_own_model.py --device cuda   # one replica per GPU, graphs captured per replica

What it shows (docs/ray-serve.md): `served()` is the model as graphlab serves it (a `gl.ServedModel`: an
nn.Module, an example input, the buckets); each replica calls it and captures every bucket before Ray sends
it a request; a few requests go through Ray's proxy, and each answer names its replica; bad input gets the
HTTP service's own JSON answer; then everything shuts down.
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
from dataclasses import replace

import torch

import graphlab as gl


def served() -> gl.ServedModel:
    """The model: a small classifier over 16 numbers, 4 outputs, graphs at batch sizes 1, 2, 4 and 8."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)).eval()
    return gl.ServedModel(net, torch.zeros(1, 16), buckets=[1, 2, 4, 8], name="example-classifier")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="cpu (two replicas) or cuda (one replica per GPU)")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    try:
        import httpx
        import ray
    except ImportError:
        print("this example needs Ray Serve and httpx: pip install 'graphlab[ray,serve]'", file=sys.stderr)
        return 2
    from graphlab.serve.ray_deployment import REPLICA_HEADER, RayOptions, run, shutdown

    here = os.path.dirname(os.path.abspath(__file__))  # so that every replica can import this file's served()
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")]))
    os.environ.setdefault("RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH", "graphlab.serve.ray_proxy:proxy_middlewares")
    ray.init(include_dashboard=False)
    config = gl.ServeConfig(model="ray_serve_own_model:served", setting="graphs+batching", device=args.device,
                            max_batch_size=8, buckets=[1, 2, 4, 8], max_wait_us=1000)
    try:
        run(replace(config, port=args.port), ray=RayOptions(num_replicas=2 if args.device == "cpu" else None))
        url = f"http://127.0.0.1:{args.port}"
        with httpx.Client(base_url=url, timeout=30) as client:
            seen = collections.Counter()
            for i in range(20):
                answer = client.post("/v1/infer", json={"inputs": [[0.1 * i] * 16]})
                seen[answer.headers[REPLICA_HEADER]] += 1
            print("answers per replica:", dict(seen))
            print("one answer:", answer.json()["outputs"], answer.json()["batch"])
            bad = client.post("/v1/infer", json={"inputs": [[float("1e300")] * 16]})
            print("bad input:", bad.status_code, bad.json())
    finally:
        shutdown()
        ray.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
