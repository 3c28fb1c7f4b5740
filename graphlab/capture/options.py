"""`CaptureOptions`: how a graph is captured, one set of settings for every front end.

`gl.capture` takes them as keywords and builds one; `%%cudagraph` (`capture_cell`) builds one from its flags;
the recorded stand-ins (`capture/recorded.py`) take the same object and ignore what a recording cannot honour.

    >>> CaptureOptions(warmup_calls=0).grad_mode
    'no_grad'
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graphlab.errors import BadInputError
from graphlab.graph.export import DEFAULT_DOT_FLAGS

#: eager runs on the capture stream before a capture, unless asked otherwise
DEFAULT_WARMUP_CALLS = 3


@dataclass(frozen=True)
class CaptureOptions:
    """How a graph is captured.

    Attributes:
        warmup_calls: eager runs on the capture stream before capture (cuBLAS handles, lazy init); 0 shows why
            warm-up matters.
        grad_mode: "no_grad" (default), "inference_mode" or "enabled".
        pool: a memory pool to share: another captured graph, or `torch.cuda.graph_pool_handle()`.
        stream: capture stream (default: graphlab's side stream; "default" tries the default stream).
        capture_error_mode: "global" (default), "thread_local" or "relaxed".
        device: the CUDA device to capture on (default: the inputs' device, else the current one).
        dot_flags: `cudaGraphDebugDotFlags` for `.dot()` and `.graph` (int or names; default verbose).
    """

    warmup_calls: int = DEFAULT_WARMUP_CALLS
    grad_mode: str = "no_grad"
    pool: Any = None
    stream: Any = None
    capture_error_mode: str = "global"
    device: Any = None
    dot_flags: int | str = DEFAULT_DOT_FLAGS

    def __post_init__(self) -> None:
        if not isinstance(self.warmup_calls, int) or self.warmup_calls < 0:
            raise BadInputError(f"warmup_calls must be an int, 0 or more, got {self.warmup_calls!r}")


__all__ = ["CaptureOptions", "DEFAULT_WARMUP_CALLS"]
