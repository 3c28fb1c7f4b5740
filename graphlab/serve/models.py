"""Which model a service runs: the zoo models as `ServedModel`s of their own request kinds, and the lookup
from what a config names (`resolve_model`: a zoo name, "package.module:factory", or a ServedModel).

    >>> from graphlab.serve.models import resolve_model
    >>> resolve_model("mlp").kind
    'vector'
"""
from __future__ import annotations

import dataclasses
import importlib
from typing import Any, Sequence

import torch
from torch import nn

from graphlab.errors import BadInputError, BadRequestError
from graphlab.serve import oip
from graphlab.serve.payload import Limits, ParsedRequest, parse_body
from graphlab.serve.postprocess import top_k_rows
from graphlab.serve.preprocess import preprocess
from graphlab.serve.served_model import (SERVED, TOP_K_METADATA, ServedModel, check_outputs, match_inputs,
                                         oip_answer, oip_tensor, oip_top_k, served_model)


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
        if isinstance(body, oip.InferRequest):
            return self._parse_oip(body, limits)
        return parse_body(body, self.spec.kind, limits)

    def _parse_oip(self, body: oip.InferRequest, limits: Limits) -> ParsedRequest:
        """A protocol request: text as BYTES prompts (the same checks as {"texts": [...]}), vectors and images
        (uint8, already at the model's side) as tensors."""
        (tensor,) = match_inputs(body, self.oip_inputs(), limits.max_rows)
        check_outputs(body, self.oip_outputs())
        top_k = oip_top_k(body, self.max_top_k)
        if self.kind != "text":
            return ParsedRequest(self.kind, (tensor,), top_k, count=tensor.shape[0], oip=body)
        if tensor.raw is not None:
            items: list[Any] = oip.split_bytes_elements(tensor.raw, tensor.elements, "input 'texts'")
        elif isinstance(tensor.data, list) and len(tensor.data) == tensor.elements:
            items = tensor.data
        else:
            raise BadRequestError(f"input 'texts' must hold {tensor.elements} strings, one per row")
        texts = []
        for i, item in enumerate(items):
            if isinstance(item, bytes):
                try:
                    item = item.decode("utf-8")
                except UnicodeDecodeError:
                    raise BadRequestError(f"texts[{i}] is not UTF-8") from None
            texts.append(item)
        parsed = parse_body({"texts": texts, "top_k": top_k}, "text", limits)
        return dataclasses.replace(parsed, oip=body)

    def oip_inputs(self) -> list[dict[str, Any]]:
        spec = self.spec
        if self.kind == "text":
            return [oip.tensor_metadata("texts", "BYTES", [-1])]
        if self.kind == "image":
            return [oip.tensor_metadata("images", "UINT8", [-1, 3, spec.image_size, spec.image_size])]
        return [oip.tensor_metadata("vectors", "FP32", [-1, spec.features])]

    def oip_outputs(self) -> list[dict[str, Any]]:
        return [oip.tensor_metadata("scores", "FP32", [-1, self.spec.classes]), *TOP_K_METADATA]

    def prepare(self, request: ParsedRequest) -> tuple[torch.Tensor, ...]:
        if request.oip is not None and self.kind != "text":
            return (oip_tensor(request.items[0], torch.uint8 if self.kind == "image" else torch.float32),)
        return preprocess(request, self.spec).inputs

    def prepare_size(self, request: ParsedRequest) -> int:
        if self.kind == "image":
            return 1 << 62  # decoding and resizing: always on a pre-processing thread
        return request.rows * (self.spec.seq_len or self.spec.features or 1)

    def answer(self, outputs: torch.Tensor, requests: Sequence[ParsedRequest]) -> list[Any]:
        rows = top_k_rows(outputs, max(r.top_k for r in requests), self.spec.kind, self.spec.classes)
        answers, offset = [], 0
        for r in requests:
            if r.oip is not None:
                answers.append(oip_answer(outputs[offset: offset + r.rows], r, top_k=True))
            else:
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
