"""The device's synchronisation for the timed loops of `graphlab.clock`.

Torch at the top. `cuda_sync()` is the `sync` every GPU measurement passes to the clock's loops: it
returns once the work issued so far on the device is done (`torch.cuda.synchronize`).

    >>> from graphlab.clock import synced_us
    >>> synced_us(graph.replay, 100, cuda_sync())          # doctest: +SKIP
"""
from __future__ import annotations

from typing import Any, Callable

import torch

__all__ = ["cuda_sync"]


def cuda_sync(device: Any = None) -> Callable[[], None]:
    """`torch.cuda.synchronize` for `device` (the current device by default), as a function of no arguments."""
    if device is None:
        return torch.cuda.synchronize
    return lambda: torch.cuda.synchronize(device)

