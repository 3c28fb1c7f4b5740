"""Side streams, one per device, shared by every capture (as `torch.cuda.graph` shares one)."""
from __future__ import annotations

from typing import Any

import torch

from graphlab.errors import BadInputError

_SIDE_STREAMS: dict[int, Any] = {}


def device_index(device: Any = None) -> int:
    """The CUDA device index of `device` (an int, "cuda:1", a torch.device, None for the current one)."""
    if device is None:
        return int(torch.cuda.current_device())
    if isinstance(device, int):
        return device
    dev = torch.device(device)
    if dev.type != "cuda":
        raise BadInputError(f"a CUDA graph lives on a CUDA device, got device {str(dev)!r}: pass 'cuda' or 'cuda:N'")
    return int(torch.cuda.current_device()) if dev.index is None else int(dev.index)


def side_stream(device: Any = None) -> Any:
    """graphlab's side stream on `device` (default: the current device), made on first use."""
    index = device_index(device)
    if index not in _SIDE_STREAMS:
        _SIDE_STREAMS[index] = torch.cuda.Stream(device=index)
    return _SIDE_STREAMS[index]


def resolve_stream(stream: Any, device: Any = None) -> Any:
    """The capture stream: graphlab's side stream (None), the default stream ("default"), or `stream`."""
    if stream is None:
        return side_stream(device)
    if stream == "default":
        return torch.cuda.default_stream(device_index(device))
    return stream


__all__ = ["device_index", "resolve_stream", "side_stream"]
