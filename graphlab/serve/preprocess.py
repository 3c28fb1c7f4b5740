"""Pre-processing: a checked request becomes CPU tensors with one row per item, ready to batch.

It runs in the service's thread pool, never on the GPU worker's thread, and touches no GPU:
the worker stacks the rows of a batch into pinned memory and copies them over itself.

- text: `ByteTokenizer`, a tiny deterministic tokenizer of its own: one token per UTF-8 byte,
  id = 1 + byte (0 is padding); rows are right-padded to the model's sequence length, and the
  index of the last real token goes along so the model reads the logits there (causal attention:
  the padding after it changes nothing).
- image: base64 RGB bytes -> uint8 (3, H, W) -> bilinear resize with antialiasing to the model's
  side, kept uint8 (normalisation happens on the GPU, inside the graph).
- vector: the numbers as float32.

Text and vectors are built with NumPy and handed over as torch tensors that share its memory
(`torch.from_numpy`): the same values as `torch.tensor` and indexing, for a fraction of the host time
(docs/serving.md, "What moved the 50 req/s figure", has the measurements).

    >>> from graphlab.serve.preprocess import ByteTokenizer
    >>> tok = ByteTokenizer(vocab=512)
    >>> tok.encode("hi"), tok.decode_token(105)
    ([105, 106], 'h')
"""
from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.nn import functional as F

from graphlab.errors import BadRequestError
from graphlab.serve.payload import ParsedRequest
from graphlab.serve.served_model import ServedModelSpec

PAD_ID = 0


@dataclass(frozen=True)
class ByteTokenizer:
    """Bytes as tokens: id = 1 + (byte mod (vocab - 1)); 0 pads. Deterministic, no files, no downloads."""

    vocab: int = 512

    def encode(self, text: str) -> list[int]:
        return [1 + (b % (self.vocab - 1)) for b in text.encode("utf-8", errors="surrogatepass")]

    def encode_into(self, text: str, row: np.ndarray) -> int:
        """Write the ids of `text` into `row` (an int64 array, left untouched past the text), cut at its
        length; the number of ids written. The same ids as `encode`, without a Python int per byte."""
        raw = np.frombuffer(text.encode("utf-8", errors="surrogatepass"), dtype=np.uint8)[: row.shape[0]]
        ids = row[: raw.shape[0]]
        ids[:] = raw  # uint8 -> int64
        if self.vocab - 1 <= 255:  # a vocabulary smaller than a byte's range folds bytes over it
            np.remainder(ids, self.vocab - 1, out=ids)
        ids += 1
        return int(raw.shape[0])

    def decode_token(self, token_id: int) -> str:
        """The text of one token id: the character of its byte (printable ASCII), else an escape like '\\x0a'."""
        if token_id == PAD_ID:
            return "<pad>"
        byte = token_id - 1
        if byte >= 256:
            return f"<{token_id}>"
        return chr(byte) if 32 <= byte < 127 else f"\\x{byte:02x}"


@dataclass
class Prepared:
    """One request after pre-processing: CPU tensors whose first dimension is the request's rows."""

    inputs: tuple[torch.Tensor, ...]
    rows: int
    top_k: int


def preprocess(request: ParsedRequest, spec: ServedModelSpec) -> Prepared:
    """Turn a checked request into CPU tensors for `spec`'s model (runs on a pre-processing thread).

    Raises:
        BadRequestError: content that only decoding can find wrong (base64 that is not base64).
    """
    if request.kind != spec.kind:
        raise BadRequestError(f"this service serves {spec.name} ({spec.kind} requests), got a {request.kind} request")
    if spec.kind == "text":
        inputs = _tokenize(request.items, spec)
    elif spec.kind == "image":
        inputs = _images(request.items, spec)
    else:
        inputs = (torch.from_numpy(np.array(request.items, dtype=np.float32)),)
    return Prepared(inputs, request.rows, request.top_k)


def _tokenize(texts: tuple[str, ...], spec: ServedModelSpec) -> tuple[torch.Tensor, torch.Tensor]:
    tokenizer = ByteTokenizer(spec.classes)
    ids = np.zeros((len(texts), spec.seq_len), dtype=np.int64)
    last = np.empty(len(texts), dtype=np.int64)
    for row, text in enumerate(texts):  # payload checks already refused longer prompts
        last[row] = tokenizer.encode_into(text, ids[row]) - 1
    return torch.from_numpy(ids), torch.from_numpy(last)


def _images(images: tuple[dict[str, Any], ...], spec: ServedModelSpec) -> tuple[torch.Tensor]:
    size = spec.image_size
    out = torch.empty((len(images), 3, size, size), dtype=torch.uint8)
    for row, image in enumerate(images):
        try:
            raw = base64.b64decode(image["pixels_b64"], validate=True)
        except (binascii.Error, ValueError):
            raise BadRequestError(f"images[{row}].pixels_b64 is not valid base64") from None
        height, width = image["height"], image["width"]
        if len(raw) != height * width * 3:
            raise BadRequestError(f"images[{row}] decodes to {len(raw)} bytes; a {height}x{width} RGB image is "
                                  f"{height * width * 3}")
        pixels = torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(1, height, width, 3).permute(0, 3, 1, 2)
        out[row] = resize_uint8(pixels, size)[0]
    return (out,)


def resize_uint8(pixels: torch.Tensor, size: int) -> torch.Tensor:
    """(1, 3, H, W) uint8 -> (1, 3, size, size) uint8, bilinear with antialiasing (as torchvision resizes)."""
    if pixels.shape[-2:] == (size, size):
        return pixels
    try:  # torch's CPU kernel for uint8 bilinear+antialias is the fast path (no float copy)
        return F.interpolate(pixels.contiguous(), size=(size, size), mode="bilinear", antialias=True,
                             align_corners=False)
    except (RuntimeError, NotImplementedError):
        resized = F.interpolate(pixels.float(), size=(size, size), mode="bilinear", antialias=True, align_corners=False)
        return resized.round_().clamp_(0, 255).to(torch.uint8)


__all__ = ["ByteTokenizer", "PAD_ID", "Prepared", "preprocess", "resize_uint8"]
