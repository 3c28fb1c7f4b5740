"""The model zoo: small inference models built from code, with fixed seeds and no downloads.

Every notebook, test and recording uses these, so a graph recorded on the H200 can be compared with
one captured live. torchvision (for "resnet18" only) is optional and imported when that model is built.

Example:
    >>> from graphlab.zoo import get_model
    >>> zm = get_model("mlp")
    >>> model = zm.build(device="cuda")            # eval mode, seeded weights
    >>> (x,) = zm.make_inputs(8, device="cuda")     # random, never zeros
    >>> y = model(x)
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch import nn
from torch.nn import functional as F

from graphlab.env import require_cuda
from graphlab.errors import BadInputError, UnsupportedError
from graphlab.mode import pick

WEIGHT_SEED = 0

#: batch sizes a zoo model is measured at unless told otherwise (powers of two up to 64)
DEFAULT_BATCH_SIZES = (1, 2, 4, 8, 16, 32, 64)


@dataclass(frozen=True)
class ZooModel:
    """One zoo entry: how to build the model and how to make inputs for it.

    Attributes:
        name: the key in `ZOO` ("mlp", "cnn", "gpt", "resnet18").
        description: one sentence for tables and recordings.
        default_batch_sizes: the batch sizes `graphlab record` and the latency lab use by default.
        input_shape: the shape of one example (no batch dimension), for display.
        needs: import names the model needs besides torch (e.g. ("torchvision",)).
        served_as: how `graphlab.serve` serves it, (request kind, width of the scores): ("text", vocabulary),
            ("image", classes) or ("vector", classes); None: not served. The rest (tokens per row, image side,
            numbers per row) is `input_shape`.
    """

    name: str
    description: str
    default_batch_sizes: tuple[int, ...]
    input_shape: tuple[int, ...]
    _factory: Callable[[], Any] = field(repr=False)
    _inputs: Callable[..., tuple[Any, ...]] = field(repr=False)
    needs: tuple[str, ...] = ()
    served_as: tuple[str, int] | None = None

    def available(self) -> bool:
        """True when every package the model needs can be imported here."""
        return all(importlib.util.find_spec(mod) is not None for mod in ("torch", *self.needs))

    def build(self, device: str = "cuda", dtype: Any = None) -> Any:
        """The model, in eval mode, with weights drawn from a fixed seed (same weights every call).

        In recorded mode (`gl.set_mode`) "cuda" means the CPU: the model is real, and `gl.capture` of it
        answers from the recordings. Without a GPU otherwise, a CUDA device raises `GPUUnavailableError`.

        Args:
            device: where to put it ("cuda", "cuda:1", "cpu").
            dtype: floating dtype of the weights (default torch.float32).
        """
        missing = [mod for mod in self.needs if importlib.util.find_spec(mod) is None]
        if missing:
            raise UnsupportedError(f"zoo model {self.name!r} needs {', '.join(missing)}: pip install {' '.join(missing)}")
        dtype = torch.float32 if dtype is None else dtype
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(WEIGHT_SEED)
            model = self._factory()
        model.graphlab_zoo = self.name  # recorded mode finds the recordings of a zoo model by this name
        return model.to(device=_device(device), dtype=dtype).eval()

    def make_inputs(self, batch_size: int, device: str = "cuda", dtype: Any = None, seed: int = 0) -> tuple[Any, ...]:
        """Random example inputs for `batch_size` (never zeros), as a tuple to splat into the model."""
        if batch_size < 1:
            raise BadInputError(f"batch_size must be at least 1, got {batch_size}")
        dtype = torch.float32 if dtype is None else dtype
        generator = torch.Generator(device="cpu").manual_seed(seed)
        return tuple(t.to(_device(device)) for t in self._inputs(batch_size, dtype, generator))


def _device(device: Any) -> Any:
    """`device`, except "cuda" on a machine in recorded mode (`gl.set_mode`), which builds on the CPU; without
    a GPU and outside recorded mode, a CUDA device raises `GPUUnavailableError` with a hint."""
    if not str(device).startswith("cuda"):
        return device
    return pick(live=_cuda_device, recorded=_recorded_device)(device)


def _cuda_device(device: Any) -> Any:
    require_cuda(f"a zoo model on {device}")
    return device


def _recorded_device(device: Any) -> str:
    return "cpu"  # recorded mode: the model is real and runs here; its graph comes from the recordings


# -- model definitions ----------------------------------------------------------------------------------------
def _mlp() -> nn.Module:
    return nn.Sequential(
        nn.Linear(256, 512), nn.GELU(), nn.Linear(512, 512), nn.GELU(), nn.Linear(512, 10)
    )


def _cnn() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10),
    )


GPT_VOCAB = 512
GPT_SEQ_LEN = 64
GPT_WIDTH = 128
GPT_HEADS = 4
GPT_LAYERS = 3


class Block(nn.Module):
    """Pre-norm decoder block: causal self-attention, then an MLP."""

    def __init__(self) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(GPT_WIDTH)
        self.qkv = nn.Linear(GPT_WIDTH, 3 * GPT_WIDTH)
        self.proj = nn.Linear(GPT_WIDTH, GPT_WIDTH)
        self.ln2 = nn.LayerNorm(GPT_WIDTH)
        self.mlp = nn.Sequential(nn.Linear(GPT_WIDTH, 4 * GPT_WIDTH), nn.GELU(), nn.Linear(4 * GPT_WIDTH, GPT_WIDTH))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch_size, seq_len, width = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(width, dim=2)
        # (batch, heads, seq, head_dim)
        q, k, v = (t.view(batch_size, seq_len, GPT_HEADS, width // GPT_HEADS).transpose(1, 2) for t in (q, k, v))
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attn.transpose(1, 2).reshape(batch_size, seq_len, width))
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    """A small GPT-style decoder: token + position embeddings, a few blocks, a language-model head."""

    def __init__(self) -> None:
        super().__init__()
        self.tok = nn.Embedding(GPT_VOCAB, GPT_WIDTH)
        self.pos = nn.Embedding(GPT_SEQ_LEN, GPT_WIDTH)
        self.blocks = nn.ModuleList(Block() for _ in range(GPT_LAYERS))
        self.ln_f = nn.LayerNorm(GPT_WIDTH)
        self.head = nn.Linear(GPT_WIDTH, GPT_VOCAB, bias=False)
        self.register_buffer("positions", torch.arange(GPT_SEQ_LEN), persistent=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.tok(ids) + self.pos(self.positions[: ids.shape[1]])
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


class TinyEncoder(nn.Module):
    """A small BERT-style encoder: every position attends to every other one (no causal mask)."""

    def __init__(self) -> None:
        super().__init__()
        self.tok = nn.Embedding(GPT_VOCAB, GPT_WIDTH)
        layer = nn.TransformerEncoderLayer(GPT_WIDTH, GPT_HEADS, 4 * GPT_WIDTH, dropout=0.0, batch_first=True)
        self.layers = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.layers(self.tok(ids))


def _resnet18() -> nn.Module:
    from torchvision.models import resnet18  # optional: only this model needs torchvision

    return resnet18(weights=None)


def _image_inputs(size: int) -> Callable[..., tuple[Any, ...]]:
    def make(batch_size: int, dtype: Any, generator: Any) -> tuple[Any, ...]:
        return (torch.randn(batch_size, 3, size, size, generator=generator).to(dtype),)

    return make


def _mlp_inputs(batch_size: int, dtype: Any, generator: Any) -> tuple[Any, ...]:
    return (torch.randn(batch_size, 256, generator=generator).to(dtype),)


def _gpt_inputs(batch_size: int, dtype: Any, generator: Any) -> tuple[Any, ...]:
    # token ids are integers whatever the weights' dtype; 0 is avoided so inputs are never all zeros
    return (torch.randint(1, GPT_VOCAB, (batch_size, GPT_SEQ_LEN), generator=generator),)


ZOO: dict[str, ZooModel] = {
    "mlp": ZooModel(
        "mlp", "A small MLP: 256 -> 512 -> 512 -> 10 with GELU.", DEFAULT_BATCH_SIZES, (256,), _mlp, _mlp_inputs,
        served_as=("vector", 10),
    ),
    "cnn": ZooModel(
        "cnn", "A small CNN: three conv-BN-ReLU stages on 32x32 RGB images, then a linear head.",
        DEFAULT_BATCH_SIZES, (3, 32, 32), _cnn, _image_inputs(32), served_as=("image", 10),
    ),
    "gpt": ZooModel(
        "gpt",
        f"A small GPT-style decoder: {GPT_LAYERS} blocks, width {GPT_WIDTH}, {GPT_HEADS} heads, causal "
        f"scaled_dot_product_attention, {GPT_SEQ_LEN} tokens, vocabulary {GPT_VOCAB}.",
        DEFAULT_BATCH_SIZES, (GPT_SEQ_LEN,), TinyGPT, _gpt_inputs, served_as=("text", GPT_VOCAB),
    ),
    "encoder": ZooModel(
        "encoder",
        f"A small BERT-style encoder: 2 bidirectional transformer layers, width {GPT_WIDTH}, {GPT_HEADS} heads, no "
        f"mask, {GPT_SEQ_LEN} tokens: padding its sequence changes the answer.",
        DEFAULT_BATCH_SIZES, (GPT_SEQ_LEN,), TinyEncoder, _gpt_inputs,
    ),
    "resnet18": ZooModel(
        "resnet18", "torchvision's ResNet-18 (weights=None, seeded init) on 224x224 RGB images.",
        DEFAULT_BATCH_SIZES, (3, 224, 224), _resnet18, _image_inputs(224), needs=("torchvision",),
        served_as=("image", 1000),
    ),
}


def get_model(name: str) -> ZooModel:
    """The zoo entry called `name`; BadInputError listing the names if there is none."""
    try:
        return ZOO[name]
    except KeyError:
        raise BadInputError(f"no zoo model {name!r}; choose one of {', '.join(ZOO)}") from None


__all__ = ["DEFAULT_BATCH_SIZES", "ZOO", "TinyEncoder", "TinyGPT", "ZooModel", "get_model"]
