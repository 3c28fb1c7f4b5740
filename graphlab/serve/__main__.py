"""`python -m graphlab.serve`: one service process on one device, served by uvicorn (graphlab.serve.http).

    CUDA_VISIBLE_DEVICES=0 python -m graphlab.serve --model gpt --setting graphs+batching --port 8000
    python -m graphlab.serve --model mypackage.models:served --port 8000     # your own: a function -> gl.ServedModel

Every flag is a `ServeConfig` field (`python -m graphlab.serve --help` lists them with their defaults);
unset, the buckets and max batch size are the model's. `--device auto` (the default here) serves on the GPU
where there is one, else on the CPU (it says so, in one line). One process per GPU (docs/serving.md): start one
per device, each pinned with CUDA_VISIBLE_DEVICES, and put any HTTP load balancer in front. SIGTERM drains:
accepted requests are answered, new ones get 503, within --shutdown-timeout-ms; it exits 0 when every accepted
request was answered normally, 4 when the timeout cut some short (answered 503), 3 when the GPU worker stayed
down (docs/serving.md, "Exit codes").
"""
from __future__ import annotations

import argparse
import sys

from graphlab.env import error_line, speak_as
from graphlab.errors import GraphlabError
from graphlab.serve.config import ServeConfig

PROG = "python -m graphlab.serve"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    ServeConfig.add_flags(parser)
    args = parser.parse_args(argv)
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        print(f"{PROG} needs uvicorn and starlette: pip install 'graphlab[serve]'", file=sys.stderr)
        return 2
    speak_as(cli=True)  # errors give flags (`--device cpu`), not Python calls
    try:
        return _serve(ServeConfig.given(args))
    except GraphlabError as exc:
        print(error_line(PROG, exc), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        speak_as(cli=False)


def _serve(given: dict[str, object]) -> int:
    from graphlab.serve.api import resolve_device
    from graphlab.serve.http import describe_stack, run_server
    from graphlab.serve.models import resolve_model
    from graphlab.serve.service import InferenceService

    device = resolve_device(str(given.pop("device", "auto")), say=PROG)
    served = resolve_model(given.pop("model", ServeConfig.model))
    config = ServeConfig.for_model(served, device=device, **given)
    service = InferenceService(config, model=served)
    stack = describe_stack()
    print(f"graphlab.serve: {served.name} ({config.setting}) on {device}, http://{config.host}:{config.port} "
          f"({stack['loop']} + {stack['http']}); warming up", file=sys.stderr, flush=True)
    return run_server(service)


if __name__ == "__main__":
    raise SystemExit(main())
