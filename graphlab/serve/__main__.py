"""`python -m graphlab.serve`: one service process on one device, served by uvicorn (graphlab.serve.http).

    CUDA_VISIBLE_DEVICES=0 python -m graphlab.serve --model gpt --setting graphs+batching --port 8000
    python -m graphlab.serve --model mypackage.models:served --port 8000     # your own: a function -> gl.ServedModel

`--device auto` (the default) serves on the GPU where there is one, else on the CPU (it says so, in one
line). One process per GPU (docs/serving.md): start one per device, each pinned with CUDA_VISIBLE_DEVICES,
and put any HTTP load balancer in front. SIGTERM drains: accepted requests are answered, new ones get 503,
within --shutdown-timeout-ms.
"""
from __future__ import annotations

import argparse
import sys

from graphlab.errors import GraphlabError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m graphlab.serve", description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gpt",
                        help="a zoo model (gpt, cnn, resnet18, mlp) or package.module:factory (returns a gl.ServedModel)")
    parser.add_argument("--setting", default="graphs+batching")
    parser.add_argument("--buckets", default=None, help="comma-separated batch sizes, or a policy name (default: "
                        "the model's, pow2 up to --max-batch-size)")
    parser.add_argument("--max-batch-size", type=int, default=None)
    parser.add_argument("--max-wait-us", type=int, default=500)
    parser.add_argument("--max-pending", type=int, default=512)
    parser.add_argument("--oversize", choices=["reject", "eager"], default="reject")
    parser.add_argument("--device", default="auto", help="auto (a GPU where there is one, else the CPU), cuda, "
                        "cuda:N or cpu")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--backlog", type=int, default=2048)
    parser.add_argument("--header-timeout-ms", type=int, default=10_000)
    parser.add_argument("--body-timeout-ms", type=int, default=10_000)
    parser.add_argument("--idle-timeout-ms", type=int, default=5_000)
    parser.add_argument("--shutdown-timeout-ms", type=int, default=10_000)
    parser.add_argument("--preprocess-threads", type=int, default=4)
    args = parser.parse_args(argv)
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        print("python -m graphlab.serve needs uvicorn and starlette: pip install 'graphlab[serve]'", file=sys.stderr)
        return 2
    try:
        return _serve(args)
    except GraphlabError as exc:
        print(f"graphlab.serve: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def _serve(args: argparse.Namespace) -> int:
    from graphlab.env import has_cuda
    from graphlab.serve.config import ServeConfig
    from graphlab.serve.http import describe_stack, run_server
    from graphlab.serve.models import resolve_model
    from graphlab.serve.service import InferenceService

    device = args.device
    if device == "auto":
        device = "cuda" if has_cuda() else "cpu"
        if device == "cpu":
            print("graphlab.serve: no CUDA GPU here: serving on the CPU (--device cpu; eager work, no graphs "
                  "replayed on a GPU)", file=sys.stderr)
    elif device.startswith("cuda") and not has_cuda():
        print(f"graphlab.serve: error: --device {device} but this machine has no CUDA GPU: pass --device cpu "
              "(or --device auto)", file=sys.stderr)
        return 2
    served = resolve_model(args.model)
    buckets: object = served.buckets
    max_batch = args.max_batch_size or served.max_batch_size
    if args.buckets:
        buckets = [int(b) for b in args.buckets.split(",")] if args.buckets[0].isdigit() else args.buckets
    if isinstance(buckets, list):
        max_batch = args.max_batch_size or max(buckets)
    config = ServeConfig(model=served.name, setting=args.setting, max_batch_size=max_batch, buckets=buckets,
                         max_wait_us=args.max_wait_us, max_pending=args.max_pending, oversize=args.oversize,
                         device=device, header_timeout_ms=args.header_timeout_ms,
                         body_timeout_ms=args.body_timeout_ms, idle_timeout_ms=args.idle_timeout_ms,
                         shutdown_timeout_ms=args.shutdown_timeout_ms, preprocess_threads=args.preprocess_threads)
    service = InferenceService(config, model=served)
    stack = describe_stack()
    print(f"graphlab.serve: {served.name} ({args.setting}) on {device}, http://{args.host}:{args.port} "
          f"({stack['loop']} + {stack['http']}); warming up", file=sys.stderr, flush=True)
    return run_server(service, host=args.host, port=args.port, backlog=args.backlog)


if __name__ == "__main__":
    raise SystemExit(main())
