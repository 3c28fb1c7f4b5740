"""Which model a service runs: the zoo models as `ServedModel`s of their own request kinds, and the lookup
from what a config names (`resolve_model`: a zoo name, "package.module:factory", or a ServedModel).

    >>> from graphlab.serve.models import resolve_model
    >>> resolve_model("mlp").kind
    'vector'
"""
from __future__ import annotations

import importlib
from typing import Any, Sequence

import torch
from torch import nn

from graphlab.errors import BadInputError
from graphlab.serve.payload import Limits, ParsedRequest, parse_body
from graphlab.serve.postprocess import top_k_rows
from graphlab.serve.preprocess import preprocess
from graphlab.serve.served_model import SERVED, ServedModel, served_model


class ServedZooModel(ServedModel):
    """A zoo model served with its own request kind (text, image, vector): the examples of the protocol."""

    def __init__(self, name: str, max_top_k: int = 20):
        self.spec = served_model(name)
        self.name = name
        self.kind = self.spec.kind
        self.buckets = "pow2"
        self.max_batch_size = 32
        self.max_top_k = min(max_top_k, self.spec.classes)
        self.output = None
        self.answer_kind = "top_k"

    def build(self, device: str = "cuda") -> nn.Module:
        return self.spec.build(device=device)

    def example_inputs(self, rows: int, device: str = "cuda", seed: int = 0) -> tuple[torch.Tensor, ...]:
        return self.spec.example_inputs(rows, device=device, seed=seed)

    def parse(self, body: Any, max_rows: int) -> ParsedRequest:
        limits = Limits(max_rows=max_rows, seq_len=self.spec.seq_len or 64, features=self.spec.features or 256,
                        max_top_k=self.max_top_k)
        return parse_body(body, self.spec.kind, limits)

    def prepare(self, request: ParsedRequest) -> tuple[torch.Tensor, ...]:
        return preprocess(request, self.spec).inputs

    def prepare_size(self, request: ParsedRequest) -> int:
        if self.kind == "image":
            return 1 << 62  # decoding and resizing: always on a pre-processing thread
        return request.rows * (self.spec.seq_len or self.spec.features or 1)

    def answer(self, outputs: torch.Tensor, requests: Sequence[ParsedRequest]) -> list[Any]:
        rows = top_k_rows(outputs, max(r.top_k for r in requests), self.spec.kind, self.spec.classes)
        answers, offset = [], 0
        for r in requests:
            answers.append({"results": [row[: r.top_k] for row in rows[offset: offset + r.rows]]})
            offset += r.rows
        return answers

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "answer": "top_k", "zoo": True}

    def __repr__(self) -> str:
        return f"ServedZooModel({self.name!r})"


def resolve_model(model: Any) -> ServedModel:
    """A ServedModel from what a config names: a zoo name ("gpt"), "package.module:attr" (a `ServedModel`, or
    a function of no arguments returning one), or a `ServedModel` itself."""
    if isinstance(model, ServedModel):
        return model
    if not isinstance(model, str) or not model:
        raise BadInputError(f"model must be a zoo name, 'package.module:factory' or a ServedModel, got {model!r}")
    if model in SERVED:
        return ServedZooModel(model)
    if ":" not in model:
        raise BadInputError(f"no served model {model!r}: name a zoo model ({', '.join(SERVED)}) or your own as "
                            "'package.module:factory' (a function returning a gl.ServedModel)")
    module_name, _, attr = model.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise BadInputError(f"--model {model}: cannot import {module_name!r} ({exc}); is it on PYTHONPATH?") from None
    for part in attr.split("."):
        if not hasattr(target, part):
            raise BadInputError(f"--model {model}: {module_name} has no {attr!r}")
        target = getattr(target, part)
    if isinstance(target, ServedModel):
        return target
    if callable(target) and not isinstance(target, nn.Module):
        made = target()
        if isinstance(made, ServedModel):
            return made
        raise BadInputError(f"--model {model}: {attr}() returned {type(made).__name__}, not a gl.ServedModel: "
                            "return gl.ServedModel(module, example_input, buckets=[...])")
    raise BadInputError(f"--model {model}: {attr} is a {type(target).__name__}; name a gl.ServedModel or a function "
                        "returning one (an nn.Module alone does not say its example input)")



__all__ = ["ServedZooModel", "resolve_model"]
