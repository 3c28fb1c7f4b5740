"""The model a service runs: a zoo model wrapped so that its whole forward, input to scores, is one graph.

The wrappers move work from the CPU stages onto the GPU and into the captured graph:

- gpt: `NextTokenLogits` takes the padded token ids and the index of each prompt's last token, and
  returns only the logits at that position (batch, vocab): the gather is captured with the model,
  and the host copies back 2 KiB per row instead of 128 KiB.
- cnn, resnet18: `ImageClassifier` takes uint8 RGB images already resized on the CPU and normalises
  them on the GPU (a quarter of the bytes over PCIe that float32 would be).
- mlp: the model as is.

    >>> from graphlab.serve.served_model import served_model
    >>> spec = served_model("gpt")
    >>> spec.kind, spec.seq_len, spec.classes
    ('text', 64, 512)
    >>> module = spec.build(device="cpu")                    # doctest: +SKIP
    >>> ids, last = spec.example_inputs(4, device="cpu")     # doctest: +SKIP

The zoo imports torchvision (for resnet18) when that model is built.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from graphlab.errors import BadInputError
from graphlab.zoo import GPT_SEQ_LEN, GPT_VOCAB, get_model

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


class NextTokenLogits(nn.Module):
    """gpt(ids) -> logits at each row's last prompt token: (batch, vocab)."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, ids: torch.Tensor, last: torch.Tensor) -> torch.Tensor:
        logits = self.inner(ids)                                   # (batch, seq, vocab)
        index = last.view(-1, 1, 1).expand(-1, 1, logits.shape[-1])
        return logits.gather(1, index).squeeze(1)                  # (batch, vocab)


class ImageClassifier(nn.Module):
    """uint8 RGB (batch, 3, H, W) -> normalised float -> the network's class scores."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner
        self.register_buffer("mean", torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1) * 255.0, persistent=False)
        self.register_buffer("inv_std", 1.0 / (torch.tensor(IMAGENET_STD).view(1, 3, 1, 1) * 255.0),
                             persistent=False)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.inner((images.float() - self.mean) * self.inv_std)


@dataclass(frozen=True)
class ServedModelSpec:
    """How one zoo model is served.

    Attributes:
        name: zoo name.
        kind: request kind ("text", "image", "vector"), see `graphlab.serve.payload`.
        classes: width of the scores (vocabulary for gpt, classes for the others).
        seq_len: tokens per row (text).
        image_size: side the CPU resizes images to (image).
        features: numbers per row (vector).
    """

    name: str
    kind: str
    classes: int
    seq_len: int = 0
    image_size: int = 0
    features: int = 0

    def build(self, device: str = "cuda") -> nn.Module:
        """The wrapped model, in eval mode, on `device`, with the zoo's seeded weights."""
        inner = get_model(self.name).build(device=device)
        if self.kind == "text":
            wrapped: nn.Module = NextTokenLogits(inner)
        elif self.kind == "image":
            wrapped = ImageClassifier(inner)
        else:
            return inner
        return wrapped.to(device).eval()

    def example_inputs(self, rows: int, device: str = "cuda", seed: int = 0) -> tuple[torch.Tensor, ...]:
        """Random inputs for `rows` rows, shaped as pre-processing makes them (for warm-up and tests)."""
        if rows < 1:
            raise BadInputError(f"rows must be at least 1, got {rows}")
        gen = torch.Generator(device="cpu").manual_seed(seed)
        if self.kind == "text":
            ids = torch.randint(1, 257, (rows, self.seq_len), generator=gen)
            last = torch.full((rows,), self.seq_len - 1, dtype=torch.int64)
            out: tuple[torch.Tensor, ...] = (ids, last)
        elif self.kind == "image":
            side = self.image_size
            out = (torch.randint(0, 256, (rows, 3, side, side), generator=gen, dtype=torch.uint8),)
        else:
            out = (torch.randn(rows, self.features, generator=gen),)
        return tuple(t.to(device) for t in out)


SERVED: dict[str, ServedModelSpec] = {
    "gpt": ServedModelSpec("gpt", "text", GPT_VOCAB, seq_len=GPT_SEQ_LEN),
    "cnn": ServedModelSpec("cnn", "image", 10, image_size=32),
    "resnet18": ServedModelSpec("resnet18", "image", 1000, image_size=224),
    "mlp": ServedModelSpec("mlp", "vector", 10, features=256),
}


def served_model(name: str) -> ServedModelSpec:
    """The serving spec of zoo model `name`."""
    try:
        return SERVED[name]
    except KeyError:
        raise BadInputError(f"no served model {name!r}; choose one of {', '.join(SERVED)}") from None


__all__ = ["IMAGENET_MEAN", "IMAGENET_STD", "ImageClassifier", "NextTokenLogits", "SERVED", "ServedModelSpec",
           "served_model"]
