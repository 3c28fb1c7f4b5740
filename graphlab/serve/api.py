"""`gl.serve`: your own model as a running service, in one call.

    >>> import torch, graphlab as gl
    >>> net = torch.nn.Sequential(torch.nn.Linear(16, 4))
    >>> service = gl.serve(net, torch.randn(1, 16), buckets=[1, 2, 4, 8], device="cpu")   # doctest: +SKIP
    >>> service.infer_sync({"inputs": [[0.0] * 16]})["outputs"]                           # doctest: +SKIP
    >>> gl.serve(net, torch.randn(1, 16), port=8000)     # the same over HTTP (blocks)     # doctest: +SKIP
    >>> server = gl.serve("mlp", port=0, background=True)   # on a thread: server.url, server.close()  # doctest: +SKIP

It builds a `ServedModel` (module + example input + buckets, see `graphlab.serve.served_model`), a
`ServeConfig` from its buckets, and starts an `InferenceService`: every bucket captured and its padding
checked before it returns. With `port=` it serves the HTTP app with uvicorn instead (graphlab.serve.http),
until SIGTERM or Ctrl-C. `python -m graphlab.serve --model package.module:factory` does the same from a
shell, for a function returning a `ServedModel`.
"""
from __future__ import annotations

import sys
from dataclasses import asdict
from typing import Any

from graphlab.errors import BadInputError, GPUUnavailableError
from graphlab.serve.config import ServeConfig
from graphlab.serve.models import resolve_model
from graphlab.serve.served_model import ServedModel
from graphlab.serve.service import InferenceService


def serve(model: Any, example: Any = None, *, buckets: Any = None, device: str = "auto", port: int | None = None,
          config: ServeConfig | None = None, background: bool = False) -> Any:
    """Serve `model`: a started `InferenceService`, or (with `port`) an HTTP server that runs until stopped, or (with
    `port` and `background=True`) one on a thread of this process, returned at once (`BackgroundServer`: its `url`,
    `close()`; port 0: a free one).

    Args:
        model: an `nn.Module` (with `example`), a `ServedModel`, or a zoo name ("gpt").
        example: the module's example input, batch first (a tensor or a tuple of tensors).
        buckets: the batch sizes captured (default: the ServedModel's; "pow2" up to 32 for a module).
        device: "auto" (a GPU if there is one, else the CPU), "cuda", "cuda:1" or "cpu".
        port: serve over HTTP on this port (at `config.host`; blocks; returns the exit code).
        background: with `port`, serve on a thread and return the `graphlab.serve.http.BackgroundServer` at once.
        config: the service's other settings (`ServeConfig`: setting, max_wait_us, max_pending, ...); its
            model, buckets and max batch size come from `model` and `buckets`. For a module's request protocol
            (input names, labels, ...) build a `ServedModel` and pass it.
    """
    if isinstance(model, (str, ServedModel)):
        if example is not None:
            raise BadInputError(f"serve({type(model).__name__}) takes no example: a zoo model or a ServedModel "
                                "says its own inputs")
        served = resolve_model(model)
    elif example is None:
        raise BadInputError("serve(module) needs example=: an input batch (batch dimension first) that says "
                            "each input's row shape and dtype")
    else:
        served = ServedModel(model, example, buckets=buckets if buckets is not None else "pow2")
        buckets = None
    given = {k: v for k, v in asdict(config).items() if k not in ("model", "buckets", "max_batch_size")} \
        if config is not None else {}
    if buckets is not None:
        given["buckets"] = list(buckets) if isinstance(buckets, tuple) else buckets
    given["device"] = resolve_device(device)
    if background and port is None:
        raise BadInputError("background=True serves over HTTP: give port= too (0: a free one)")
    if port is not None:
        given["port"] = port
    service = InferenceService(ServeConfig.for_model(served, **given), model=served)
    if port is None:
        return service.start()
    from graphlab.serve.http import BackgroundServer, run_server

    if background:
        return BackgroundServer(service)
    return run_server(service)


def resolve_device(device: str, say: str | None = None) -> str:
    """"auto" -> "cuda" where a GPU is visible, else "cpu"; anything else as given. With `say` (a program name), a
    command line: "auto" without a GPU says so on stderr, and "cuda" without one is a `GPUUnavailableError`."""
    from graphlab.env import advice, has_cuda

    if device == "auto":
        if has_cuda():
            return "cuda"
        if say:
            print(f"{say}: no CUDA GPU here: serving on the CPU (--device cpu; eager work, no graphs replayed on a "
                  "GPU)", file=sys.stderr)
        return "cpu"
    if say and device.startswith("cuda") and not has_cuda():
        raise GPUUnavailableError(f"--device {device} but this machine has no CUDA GPU: " + advice(
            python="pass device='cpu' (or 'auto')", cli="pass --device cpu (or --device auto)"))
    return device


__all__ = ["resolve_device", "serve"]
