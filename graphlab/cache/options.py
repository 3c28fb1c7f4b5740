"""`CacheOptions`: what a graph cache may hold and how it captures, apart from its buckets.

`gl.GraphCache(model, buckets, ..., options=gl.CacheOptions(max_graphs=4))`: the limits (the least recently used
graph is evicted beyond them), the eager warm-up before each capture, and the padding check. `gl.replicate` passes
one to every device's cache.

    >>> CacheOptions(max_graphs=4).check_padding
    True

Pure: importing it needs no torch.
"""
from __future__ import annotations

from dataclasses import dataclass

from graphlab.errors import ConfigurationError

#: eager runs before each capture, unless asked otherwise
WARMUP_CALLS = 3


@dataclass(frozen=True)
class CacheOptions:
    """A graph cache's limits and capture settings.

    Attributes:
        max_graphs: most graphs held; the least recently used is evicted beyond it (None: no limit).
        memory_budget_bytes: most pool + executable-graph bytes held, as measured at each capture (None: no limit).
        warmup_calls: eager runs before each capture.
        check_padding: check each padded bucket against eager the first time it pads.

    Raises:
        ConfigurationError: a limit below 1 byte or 1 graph (checked when the options are made).
    """

    max_graphs: int | None = None
    memory_budget_bytes: int | None = None
    warmup_calls: int = WARMUP_CALLS
    check_padding: bool = True

    def __post_init__(self) -> None:
        if self.max_graphs is not None and self.max_graphs < 1:
            raise ConfigurationError(f"max_graphs must be at least 1, got {self.max_graphs} (None: no limit)")
        if self.memory_budget_bytes is not None and self.memory_budget_bytes <= 0:
            raise ConfigurationError(f"memory_budget_bytes must be positive, got {self.memory_budget_bytes} "
                                     "(None: no limit)")


__all__ = ["WARMUP_CALLS", "CacheOptions"]
