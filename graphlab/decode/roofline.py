"""The roofline of one decode step: the least time its bytes and its FLOPs allow on a GPU, and where a way stands.

    >>> shape = DecoderShape.llama3_8b()
    >>> round(parameter_bytes(shape) / 1e9, 2)                 # bf16, untied head
    16.06
    >>> floor = step_floor(shape, batch=1, position=128, read_bytes_per_s=4.0e12, mm_flops_per_s=7.0e14)
    >>> floor.bound, round(floor.memory_us), round(floor.compute_us, 1)
    ('memory', 3757, 21.5)

A decode step reads every weight once (the input embedding only for the B rows it looks up) and the keys and values
of every earlier position for its B rows, and does about 2 FLOPs per weight per row plus attention's. So:

- **memory floor** = (every parameter's bytes but the input embedding's + B rows of the embedding + K/V bytes of
  positions 0..pos for B rows) / the GPU's measured bandwidth;
- **compute floor** = the step's FLOPs / the rate of a bf16 8192x8192x8192 `mm` on that GPU;
- the floor is the larger; a step is **memory-bound** where the memory floor is the larger, **compute-bound**
  where the compute floor is;
- **launch-bound**: a way whose time is more than `LAUNCH_BOUND_RATIO` x the time of a CUDA graph of the same step
  (its launches, which the graph removes, cost more than the kernels themselves).

What the kernels actually read is more: Hugging Face's static-cache attention reads all `max_cache_len` positions
(masked) every step, not 0..pos (`kernel_read_bytes`); the difference is part of the gap between a way and the
floor, reported beside it.

Bandwidth is measured on the GPU two ways (`graphlab.decode.roofline_gpu`): a read-only reduction and a
device-to-device copy counted as read + write; `Bandwidth.best` takes the higher and says which.

Pure: standard library only.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping

from graphlab.errors import BadInputError

#: a way slower than this many times a CUDA graph of the same step is launch-bound (launches cost more than the
#: kernels they launch)
LAUNCH_BOUND_RATIO = 2.0
BF16_BYTES = 2


@dataclass(frozen=True)
class DecoderShape:
    """A Llama-style decoder's shape (GQA attention, gated MLP, RMSNorm; no biases)."""

    layers: int
    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    vocab: int
    head_dim: int = 0                #: 0: hidden // heads
    tied_embeddings: bool = False    #: True: the LM head is the input embedding (read once, whole)
    param_bytes: int = BF16_BYTES    #: bytes per parameter
    kv_bytes: int = BF16_BYTES       #: bytes per cached key or value element

    def __post_init__(self) -> None:
        for name in ("layers", "hidden", "intermediate", "heads", "kv_heads", "vocab", "param_bytes", "kv_bytes"):
            if int(getattr(self, name)) < 1:
                raise BadInputError(f"a decoder shape's {name} must be positive, got {getattr(self, name)}")
        if self.heads % self.kv_heads:
            raise BadInputError(f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})")
        if not self.head_dim:
            if self.hidden % self.heads:
                raise BadInputError(f"hidden ({self.hidden}) is not a multiple of heads ({self.heads}): give head_dim")
            object.__setattr__(self, "head_dim", self.hidden // self.heads)

    @classmethod
    def llama3_8b(cls) -> DecoderShape:
        """Llama-3-8B's shape: 32 layers, hidden 4,096, MLP 14,336, 32 heads / 8 KV heads, vocab 128,256, bf16."""
        return cls(layers=32, hidden=4096, intermediate=14336, heads=32, kv_heads=8, vocab=128256)

    @classmethod
    def from_hf_config(cls, config: Mapping[str, Any], *, param_bytes: int = BF16_BYTES,
                       kv_bytes: int = BF16_BYTES) -> DecoderShape:
        """From a Llama config's fields (`LlamaConfig.to_dict()` or the dict it was made from)."""
        try:
            heads = int(config["num_attention_heads"])
            return cls(layers=int(config["num_hidden_layers"]), hidden=int(config["hidden_size"]),
                       intermediate=int(config["intermediate_size"]), heads=heads,
                       kv_heads=int(config.get("num_key_value_heads") or heads), vocab=int(config["vocab_size"]),
                       head_dim=int(config.get("head_dim") or 0),
                       tied_embeddings=bool(config.get("tie_word_embeddings", False)),
                       param_bytes=param_bytes, kv_bytes=kv_bytes)
        except KeyError as exc:
            raise BadInputError(f"a Llama config needs {exc.args[0]!r}; got {sorted(config)}") from None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def layer_parameters(shape: DecoderShape) -> int:
    """Parameters of one decoder layer: q, k, v, o projections, the gated MLP's three, two norms."""
    q_out, kv_out = shape.heads * shape.head_dim, shape.kv_heads * shape.head_dim
    attention = shape.hidden * q_out + 2 * shape.hidden * kv_out + q_out * shape.hidden
    return attention + 3 * shape.hidden * shape.intermediate + 2 * shape.hidden


def parameter_count(shape: DecoderShape) -> int:
    """Every parameter: the layers, the input embedding, the final norm and (untied) the LM head."""
    embedding = shape.vocab * shape.hidden
    head = 0 if shape.tied_embeddings else embedding
    return shape.layers * layer_parameters(shape) + embedding + shape.hidden + head


def parameter_bytes(shape: DecoderShape) -> int:
    return parameter_count(shape) * shape.param_bytes


def kv_bytes_per_token(shape: DecoderShape) -> int:
    """K and V of one position of one sequence, every layer (Llama-3-8B, bf16: 128 KiB)."""
    return 2 * shape.layers * shape.kv_heads * shape.head_dim * shape.kv_bytes


def weight_read_bytes(shape: DecoderShape, batch: int) -> int:
    """The weights one step reads: all but the input embedding, and that only for its `batch` rows (a tied
    embedding is read whole, as the LM head)."""
    embedding = shape.vocab * shape.hidden
    rows = batch * shape.hidden
    skipped = 0 if shape.tied_embeddings else embedding - min(rows, embedding)
    return (parameter_count(shape) - skipped) * shape.param_bytes


def _check(batch: int, position: int) -> None:
    if batch < 1:
        raise BadInputError(f"batch must be at least 1, got {batch}")
    if position < 0:
        raise BadInputError(f"position must be 0 or more, got {position}")


def floor_read_bytes(shape: DecoderShape, batch: int, position: int) -> int:
    """The least bytes a step at cache position `position` reads: the weights, and K/V of positions 0..position
    (this step's included) for `batch` rows."""
    _check(batch, position)
    return weight_read_bytes(shape, batch) + batch * (position + 1) * kv_bytes_per_token(shape)


def kernel_read_bytes(shape: DecoderShape, batch: int, max_cache_len: int) -> int:
    """What Hugging Face's static-cache step reads: the weights, and K/V of all `max_cache_len` positions
    (attention runs over the whole cache, masked) for `batch` rows."""
    _check(batch, 0)
    if max_cache_len < 1:
        raise BadInputError(f"max_cache_len must be at least 1, got {max_cache_len}")
    return weight_read_bytes(shape, batch) + batch * max_cache_len * kv_bytes_per_token(shape)


def step_flops(shape: DecoderShape, batch: int, position: int) -> int:
    """FLOPs of one step (multiply-add = 2): every matmul weight once per row (the LM head included, the
    embedding lookup not), and attention's QK^T and AV over positions 0..position."""
    _check(batch, position)
    matmul_weights = parameter_count(shape) - shape.vocab * shape.hidden * (0 if shape.tied_embeddings else 1)
    matmul_weights -= shape.layers * 2 * shape.hidden + shape.hidden  # norms are elementwise, not matmuls
    attention = 2 * 2 * shape.layers * shape.heads * shape.head_dim * (position + 1)
    return batch * (2 * matmul_weights + attention)


@dataclass(frozen=True)
class Bandwidth:
    """Memory bandwidth measured on a GPU, bytes/s: a read-only reduction, and a copy counted as read + write."""

    read_bytes_per_s: float
    copy_bytes_per_s: float
    buffer_bytes: int = 0
    trials: int = 0

    @property
    def best(self) -> tuple[float, str]:
        """(the higher of the two, "read-only reduction" or "device-to-device copy (read + write)")."""
        if self.read_bytes_per_s >= self.copy_bytes_per_s:
            return self.read_bytes_per_s, "read-only reduction"
        return self.copy_bytes_per_s, "device-to-device copy (read + write)"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Bandwidth:
        return cls(float(d["read_bytes_per_s"]), float(d["copy_bytes_per_s"]), int(d.get("buffer_bytes", 0)),
                   int(d.get("trials", 0)))


@dataclass(frozen=True)
class StepFloor:
    """The roofline of one step at one batch size and position."""

    batch: int
    position: int
    floor_bytes: int          #: the least bytes read (`floor_read_bytes`)
    kernel_bytes: int | None  #: the bytes HF's kernels read (`kernel_read_bytes`); None without max_cache_len
    flops: int
    memory_us: float
    compute_us: float

    @property
    def floor_us(self) -> float:
        return max(self.memory_us, self.compute_us)

    @property
    def bound(self) -> str:
        """"memory" or "compute": which floor is the higher."""
        return "memory" if self.memory_us >= self.compute_us else "compute"

    @property
    def kernel_bytes_us(self) -> float | None:
        """The time the kernels' own reads take at the bandwidth (the floor of what HF's step does)."""
        if self.kernel_bytes is None or self.floor_bytes <= 0:
            return None
        return self.memory_us * self.kernel_bytes / self.floor_bytes

    def ratio(self, step_us: float) -> float:
        """A way's per-token time over the floor."""
        return step_us / self.floor_us

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "floor_us": self.floor_us, "bound": self.bound}


def step_floor(shape: DecoderShape, batch: int, position: int, *, read_bytes_per_s: float, mm_flops_per_s: float,
               max_cache_len: int | None = None) -> StepFloor:
    """The memory and compute floors of one step (see the module doc)."""
    if read_bytes_per_s <= 0 or mm_flops_per_s <= 0:
        raise BadInputError(f"bandwidth and FLOP rate must be positive, got {read_bytes_per_s} and {mm_flops_per_s}")
    floor_bytes = floor_read_bytes(shape, batch, position)
    flops = step_flops(shape, batch, position)
    kernel = kernel_read_bytes(shape, batch, max_cache_len) if max_cache_len else None
    return StepFloor(batch, position, floor_bytes, kernel, flops, floor_bytes / read_bytes_per_s * 1e6,
                     flops / mm_flops_per_s * 1e6)


def bound_of(step_us: float, floor: StepFloor, graph_us: float | None = None) -> str:
    """Where a way's step stands: "launch-bound" when it takes more than `LAUNCH_BOUND_RATIO` x a graph of the same
    step (`graph_us`), else the floor's own bound ("memory-bound" or "compute-bound")."""
    if graph_us is not None and graph_us > 0 and step_us > LAUNCH_BOUND_RATIO * graph_us:
        return "launch-bound"
    return f"{floor.bound}-bound"


def mm_flops(n: int) -> int:
    """FLOPs of an n x n by n x n matmul (2 n^3)."""
    return 2 * n ** 3


__all__ = ["BF16_BYTES", "LAUNCH_BOUND_RATIO", "Bandwidth", "DecoderShape", "StepFloor", "bound_of",
           "floor_read_bytes", "kernel_read_bytes", "kv_bytes_per_token", "layer_parameters", "mm_flops",
           "parameter_bytes", "parameter_count", "step_flops", "step_floor", "weight_read_bytes"]
