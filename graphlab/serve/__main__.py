"""`python -m graphlab.serve`: one service process on one GPU, served by uvicorn.

    CUDA_VISIBLE_DEVICES=0 python -m graphlab.serve --model gpt --setting graphs+batching --port 8000

The same as `uvicorn --factory graphlab.serve.app:app_from_env` with GRAPHLAB_SERVE_* variables. One
process per GPU (docs/serving.md): start one per device, each pinned with CUDA_VISIBLE_DEVICES, and
put any HTTP load balancer in front.
"""
from __future__ import annotations

import argparse
import sys

from graphlab.errors import GraphlabError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m graphlab.serve", description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gpt")
    parser.add_argument("--setting", default="graphs+batching")
    parser.add_argument("--max-batch-size", type=int, default=32)
    parser.add_argument("--max-wait-us", type=int, default=500)
    parser.add_argument("--max-pending", type=int, default=512)
    parser.add_argument("--oversize", choices=["reject", "eager"], default="reject")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    try:
        import uvicorn
    except ImportError:
        print("python -m graphlab.serve needs uvicorn and starlette: pip install 'graphlab[serve]'", file=sys.stderr)
        return 2
    from graphlab.serve.app import create_app
    from graphlab.serve.config import ServeConfig

    try:
        config = ServeConfig(model=args.model, setting=args.setting, max_batch_size=args.max_batch_size,
                             max_wait_us=args.max_wait_us, max_pending=args.max_pending, oversize=args.oversize,
                             device=args.device)
    except GraphlabError as exc:
        print(f"graphlab.serve: error: {exc}", file=sys.stderr)
        return 2
    uvicorn.run(create_app(config), host=args.host, port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
