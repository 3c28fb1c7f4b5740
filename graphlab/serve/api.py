"""`gl.serve`: your own model as a running service, in one call.

    >>> import torch, graphlab as gl
    >>> net = torch.nn.Sequential(torch.nn.Linear(16, 4))
    >>> service = gl.serve(net, torch.randn(1, 16), buckets=[1, 2, 4, 8], device="cpu")   # doctest: +SKIP
    >>> service.infer_sync({"inputs": [[0.0] * 16]})["outputs"]                           # doctest: +SKIP
    >>> gl.serve(net, torch.randn(1, 16), port=8000)     # the same over HTTP (blocks)     # doctest: +SKIP

It builds a `ServedModel` (module + example input + buckets, see `graphlab.serve.served_model`), a
`ServeConfig` from its buckets, and starts an `InferenceService`: every bucket captured and its padding
checked before it returns. With `port=` it serves the HTTP app with uvicorn instead (graphlab.serve.http),
until SIGTERM or Ctrl-C. `python -m graphlab.serve --model package.module:factory` does the same from a
shell, for a function returning a `ServedModel`.
"""
from __future__ import annotations

from typing import Any

from graphlab.errors import BadInputError
from graphlab.serve.config import ServeConfig
from graphlab.serve.served_model import ServedModel
from graphlab.serve.service import InferenceService


def serve(model: Any, example: Any = None, *, buckets: Any = None, setting: str = "graphs+batching",
          device: str = "auto", port: int | None = None, host: str = "127.0.0.1", **options: Any) -> Any:
    """Serve `model`: a started `InferenceService`, or (with `port`) an HTTP server that runs until stopped.

    Args:
        model: an `nn.Module` (with `example`), a `ServedModel`, or a zoo name ("gpt").
        example: the module's example input, batch first (a tensor or a tuple of tensors).
        buckets: the batch sizes captured (default: the ServedModel's, "pow2" up to 32).
        setting: "graphs+batching" (default), "graphs", "eager", "eager+batching".
        device: "auto" (a GPU if there is one, else the CPU), "cuda", "cuda:1" or "cpu".
        port, host: serve over HTTP (blocks; returns the exit code).
        options: more `ServeConfig` fields (max_wait_us, max_pending, ...) or `ServedModel` ones (name,
            input_names, output, answer, labels, int_range) when `model` is a module.
    """
    served_keys = {"name", "input_names", "output", "answer", "labels", "int_range", "max_top_k"}
    served_options = {k: options.pop(k) for k in list(options) if k in served_keys}
    if isinstance(model, str):
        if example is not None or served_options:
            raise BadInputError("a zoo model by name takes no example or ServedModel options")
        served = None
        config_model = model
    elif isinstance(model, ServedModel):
        if example is not None or served_options:
            raise BadInputError("serve(ServedModel) takes no example or ServedModel options: they are in it")
        served = model
    else:
        if example is None:
            raise BadInputError("serve(module) needs example=: an input batch (batch dimension first) that says "
                                "each input's row shape and dtype")
        served = ServedModel(model, example, buckets=buckets if buckets is not None else "pow2",
                             max_batch_size=options.get("max_batch_size"), **served_options)
        buckets = None
    if served is not None:
        config_model = served.name
        if buckets is None:
            buckets = served.buckets
            options.setdefault("max_batch_size", served.max_batch_size)
    if buckets is not None:
        options["buckets"] = buckets
        if isinstance(buckets, (list, tuple)):
            options.setdefault("max_batch_size", max(buckets))
    config = ServeConfig(model=config_model, setting=setting, device=resolve_device(device), **options)
    if port is None:
        return InferenceService(config, model=served).start()
    from graphlab.serve.http import run_server

    return run_server(InferenceService(config, model=served), host=host, port=port)


def resolve_device(device: str) -> str:
    """"auto" -> "cuda" where a GPU is visible, else "cpu"; anything else as given."""
    if device != "auto":
        return device
    from graphlab.env import has_cuda

    return "cuda" if has_cuda() else "cpu"


__all__ = ["resolve_device", "serve"]
