"""Hugging Face causal LMs with a static KV cache: the models, the cache, the one-token decode step.

    >>> model = build_model("llama", size="tiny")                       # random init, fp32, no download
    >>> cache = make_cache(model, batch_size=4, max_cache_len=128)       # transformers' StaticCache
    >>> first = prefill(model, cache, prompts)                           # eager, writes positions 0..P-1
    >>> step = DecodeStep(model, cache)
    >>> next_ids, logits = step(first, torch.tensor([P]))                # one token, at cache position P

The decode step takes the **cache position as a tensor** (shape (1,), int64, on the model's device), so a
graph captured once serves every step: before the model runs, the step writes the position into the
cache's own position counters (`StaticLayer.cumulative_length`, a device tensor transformers mutates in
place) and passes it as `position_ids`. The step then returns the greedy next token and the last logits.
Nothing in it reads a tensor on the host (`host_reads` finds those on any device).

`scratch_cache(cache)` points the cache's tensors at scratch memory for a block (warm-up, padding checks,
compile warm-up): the tensor objects stay the same (so torch.compile's guards on them still hold), their
storage is swapped, and the live keys, values and positions are untouched when the block ends.

Feature-detected, not version-parsed: the model's forward names its cache argument `cache` (transformers
5.2x) or `past_key_values` (5.17); the layers keep `cumulative_length` (5.x) or the forward takes
`cache_position` (4.x).
"""
from __future__ import annotations

import contextlib
import inspect
from typing import Any, Iterator

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from transformers import AutoModelForCausalLM, GPT2Config, LlamaConfig, StaticCache

from graphlab.errors import BadInputError, UnsupportedError

#: the architectures, each at two sizes: "tiny" for CPU tests, "small" for the GPU recordings
CONFIGS: dict[str, dict[str, dict[str, Any]]] = {
    "llama": {
        "tiny": dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256),
        "small": dict(vocab_size=4096, hidden_size=512, intermediate_size=1376, num_hidden_layers=4,
                      num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=512),
    },
    "gpt2": {
        "tiny": dict(vocab_size=256, n_embd=64, n_layer=2, n_head=4, n_positions=256),
        "small": dict(vocab_size=4096, n_embd=512, n_layer=4, n_head=8, n_positions=512),
    },
}
CONFIG_CLASSES = {"llama": LlamaConfig, "gpt2": GPT2Config}
#: a wider init than HF's 0.02, so random models do not repeat one token forever
INIT_RANGE = 0.2


def build_model(arch: str, size: str = "tiny", *, device: Any = "cpu", seed: int = 0) -> Any:
    """A random-init causal LM (no download), fp32, in eval mode, SDPA attention."""
    if arch not in CONFIGS:
        raise BadInputError(f"arch must be one of {', '.join(CONFIGS)}, got {arch!r}")
    if size not in CONFIGS[arch]:
        raise BadInputError(f"size must be one of {', '.join(CONFIGS[arch])}, got {size!r}")
    config = CONFIG_CLASSES[arch](**CONFIGS[arch][size], initializer_range=INIT_RANGE, bos_token_id=0,
                                  eos_token_id=1, pad_token_id=None)
    config._attn_implementation = "sdpa"
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config)
    return model.to(device=device, dtype=torch.float32).eval()


def make_prompts(model: Any, batch_size: int, prompt_len: int, *, seed: int = 0, device: Any = None) -> Any:
    """Equal-length random prompts, (batch_size, prompt_len) int64."""
    if batch_size < 1 or prompt_len < 1:
        raise BadInputError(f"batch_size and prompt_len must be positive, got {batch_size} and {prompt_len}")
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(2, model.config.vocab_size, (batch_size, prompt_len), generator=g)
    return ids.to(device if device is not None else model.device)


def make_cache(model: Any, batch_size: int, max_cache_len: int) -> Any:
    """A `StaticCache` for `batch_size` rows, initialised (its tensors allocated) and empty."""
    cache = StaticCache(config=model.config, max_cache_len=max_cache_len)
    with torch.no_grad():
        model(input_ids=torch.zeros(batch_size, 1, dtype=torch.long, device=model.device), use_cache=True,
              **{cache_argument(model): cache})
    reset_cache(cache)
    return cache


def cache_argument(model: Any) -> str:
    """The name the model's forward gives its cache: "cache" (transformers 5.2x) or "past_key_values"."""
    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def cache_layers(cache: Any) -> list[Any]:
    """The cache's layers (transformers 5's `StaticCache.layers`)."""
    layers = getattr(cache, "layers", None)
    if not layers:
        raise UnsupportedError("this transformers' StaticCache has no .layers: graphlab.decode needs transformers 5")
    return list(layers)


def cache_tensors(cache: Any) -> list[Any]:
    """Every tensor the cache writes in place: keys, values and position counters, layer by layer."""
    found = []
    for layer in cache_layers(cache):
        for name in ("keys", "values", "cumulative_length"):
            t = getattr(layer, name, None)
            if isinstance(t, torch.Tensor):
                found.append(t)
    return found


def kv_cache_bytes(cache: Any) -> int:
    """Bytes of the cache's keys and values (all layers)."""
    return int(sum(t.numel() * t.element_size() for layer in cache_layers(cache)
                   for t in (layer.keys, layer.values) if isinstance(t, torch.Tensor)))


def reset_cache(cache: Any) -> None:
    """Zero keys, values and positions in place (the addresses a graph recorded stay valid)."""
    for t in cache_tensors(cache):
        t.zero_()


@contextlib.contextmanager
def scratch_cache(cache: Any) -> Iterator[Any]:
    """For the block, the cache's tensors read and write scratch memory (a copy); the live data is kept.

    The tensor objects stay the same (torch.compile guards on their identity), only their storage moves.
    """
    tensors = cache_tensors(cache)
    kept = [t.detach() for t in tensors]  # views of the live storage
    scratch = [t.detach().clone() for t in tensors]
    with torch.no_grad():
        for t, s in zip(tensors, scratch):
            t.set_(s)
    try:
        yield cache
    finally:
        with torch.no_grad():
            for t, k in zip(tensors, kept):
                t.set_(k)


def prefill(model: Any, cache: Any, prompts: Any) -> Any:
    """Run the prompts through the model eagerly into an empty `cache`; return the first greedy token (B, 1)."""
    if prompts.dim() != 2:
        raise BadInputError(f"prompts must be (batch, length) token ids, got shape {tuple(prompts.shape)}")
    reset_cache(cache)
    with torch.no_grad():
        out = model(input_ids=prompts, use_cache=True, **{cache_argument(model): cache})
    return out.logits[:, -1, :].argmax(-1, keepdim=True)


class DecodeStep:
    """One greedy decode step of `model` over `cache`: (ids (B, 1), position (1,)) -> (next ids (B, 1), logits).

    The same object runs eagerly, under graphlab's capture, or under torch.compile.
    """

    def __init__(self, model: Any, cache: Any):
        self.model, self.cache = model, cache
        self.cache_kw = cache_argument(model)
        self._counters = all(isinstance(getattr(layer, "cumulative_length", None), torch.Tensor)
                             for layer in cache_layers(cache))
        self._takes_cache_position = "cache_position" in inspect.signature(model.forward).parameters
        if not self._counters and not self._takes_cache_position:
            raise UnsupportedError("this transformers keeps no cache position graphlab can set "
                                   "(no StaticLayer.cumulative_length, no cache_position argument)")

    def __call__(self, ids: Any, position: Any) -> tuple[Any, Any]:
        return decode_step(self, ids, position)


def decode_step(step: DecodeStep, ids: Any, position: Any) -> tuple[Any, Any]:
    """The body of `DecodeStep.__call__` (a plain function, so torch.compile can wrap it more than once)."""
    extra: dict[str, Any] = {}
    if step._counters:
        for layer in step.cache.layers:
            layer.cumulative_length.copy_(position.reshape(()))
    else:
        extra["cache_position"] = position
    with torch.no_grad():
        out = step.model(input_ids=ids, position_ids=position.reshape(1, 1), use_cache=True,
                         **{step.cache_kw: step.cache}, **extra)
    logits = out.logits[:, -1, :]
    return logits.argmax(-1, keepdim=True), logits


def hf_greedy(model: Any, prompts: Any, new_tokens: int, max_cache_len: int) -> Any:
    """Hugging Face's own eager greedy decode with a StaticCache (its own positions): (B, new_tokens) ids."""
    if new_tokens < 1:
        raise BadInputError(f"new_tokens must be at least 1, got {new_tokens}")
    if prompts.shape[1] + new_tokens > max_cache_len:
        raise BadInputError(f"prompt {prompts.shape[1]} + {new_tokens} new tokens exceed max_cache_len {max_cache_len}")
    cache = StaticCache(config=model.config, max_cache_len=max_cache_len)
    kw = cache_argument(model)
    tokens = []
    with torch.no_grad():
        out = model(input_ids=prompts, use_cache=True, **{kw: cache})
        tok = out.logits[:, -1, :].argmax(-1, keepdim=True)
        tokens.append(tok)
        for _ in range(new_tokens - 1):
            out = model(input_ids=tok, use_cache=True, **{kw: cache})
            tok = out.logits[:, -1, :].argmax(-1, keepdim=True)
            tokens.append(tok)
    return torch.cat(tokens, dim=1)


class HostReads(TorchDispatchMode):
    """Records every op that reads a tensor's value on the host (`.item()`, `bool(t)`, `.tolist()`): each would
    be a device sync, which a CUDA graph capture refuses. Works on the CPU, so tests can check a step."""

    READS = ("aten._local_scalar_dense", "aten.is_nonzero", "aten.equal", "aten.item")

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        name = str(func.overloadpacket) if hasattr(func, "overloadpacket") else str(func)
        if any(name == r or name.startswith(r + ".") for r in self.READS):
            self.found.append(name)
        return func(*args, **(kwargs or {}))


def host_reads(fn: Any, *args: Any) -> list[str]:
    """The host reads `fn(*args)` makes (an empty list: nothing in it would stop a capture for syncing)."""
    with HostReads() as mode:
        fn(*args)
    return mode.found


__all__ = ["CONFIGS", "INIT_RANGE", "DecodeStep", "HostReads", "build_model", "cache_argument", "cache_layers", "cache_tensors",
           "decode_step", "host_reads", "hf_greedy", "kv_cache_bytes", "make_cache", "make_prompts", "prefill",
           "reset_cache", "scratch_cache"]
