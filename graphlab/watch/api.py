"""`gl.watch`: see every CUDA graph that anything in this process captures through PyTorch.

    >>> import torch, graphlab as gl
    >>> compiled = torch.compile(model, mode="reduce-overhead")
    >>> with gl.watch() as seen:                 # torch.compile, make_graphed_callables, torch.cuda.graph, ...
    ...     for _ in range(3):
    ...         compiled(x)                      # CUDAGraph Trees: warm-up, record, replay
    >>> seen.summary()                           # graphs by library and input shapes, pool memory
    >>> seen[1], gl.render(seen[1]), gl.inspect(seen[1])
    >>> gl.diff(seen[1], gl.capture(model, x))   # what torch.compile captured vs graphlab's own capture

While the block runs, `torch.cuda.CUDAGraph` is patched (graphlab/watch/patch.py): graphs are
created with `keep_graph=True`, and those whose caller did not ask for it are instantiated right at
capture_end, as torch itself would, so the library gets the same ready-to-replay graph; replay is not
touched. Each capture is recorded with its library and the user's line (watch_frames.py), time,
device, stream, capture time, pool id and memory, input shapes where knowable, and the DOT. When the
block ends, even by an exception, the class is exactly as before. Watches nest (each sees every
capture made while it is open). Needs torch >= 2.8 (`keep_graph`); older torch raises
WatchUnsupportedError.

Layer 2: torch is imported inside functions.
"""
from __future__ import annotations

from typing import Any

from graphlab.errors import GraphlabError
from graphlab.graph.export import DEFAULT_DOT_FLAGS, parse_flags
from graphlab.watch.records import WatchedGraph, WatchedGraphs, WatchSummary

DEFAULT_MAX_GRAPHS = 1000


class Watch:
    """A watch over one torch module (the real one from `gl.watch`; a fake one in tests).

    Use it as a context manager; `__enter__` returns the `WatchedGraphs` it fills.
    """

    def __init__(self, torch: Any, *, dot_flags: int | str = DEFAULT_DOT_FLAGS, keep_dot: bool = True,
                 max_graphs: int | None = DEFAULT_MAX_GRAPHS):
        self.torch = torch
        self.dot_flags = parse_flags(dot_flags)
        self.seen = WatchedGraphs(max_graphs=max_graphs, keep_dot=keep_dot)
        self._open = False

    def __enter__(self) -> WatchedGraphs:
        from graphlab.watch.patch import PATCH

        if self._open:
            raise GraphlabError("this watch is already open: use a new gl.watch() for a nested block")
        PATCH.open(self.torch, self.seen.add, self.dot_flags)
        self._open = True
        self.seen.active = True
        return self.seen

    def __exit__(self, *exc: Any) -> None:
        from graphlab.watch.patch import PATCH

        if self._open:
            self._open = False
            self.seen.active = False
            PATCH.close(self.seen.add)


def watch(*, dot_flags: int | str = DEFAULT_DOT_FLAGS, keep_dot: bool = True,
          max_graphs: int | None = DEFAULT_MAX_GRAPHS) -> Watch:
    """Watch every CUDA graph captured through PyTorch while a `with` block runs.

    Args:
        dot_flags: cudaGraphDebugDotFlags for the dumps (default Verbose, 1); nested watches share it.
        keep_dot: keep each graph's DOT text (False: metadata only, for very many captures).
        max_graphs: keep at most this many graphs (later ones are counted in `seen.dropped`); None: all.

    Returns:
        A context manager; `with gl.watch() as seen:` gives the `WatchedGraphs` it fills.

    Raises:
        GPUUnavailableError: no CUDA GPU here (recordings of watched graphs: `gl.watch_examples()`).
        WatchUnsupportedError: this torch cannot keep a graph for dumping (needs torch >= 2.8).
    """
    from graphlab.env import require_cuda
    from graphlab.watch.patch import check_supported

    torch = require_cuda("gl.watch")
    check_supported(torch)
    return Watch(torch, dot_flags=dot_flags, keep_dot=keep_dot, max_graphs=max_graphs)


def is_patched(torch: Any) -> bool:
    """True while any watch is open on this torch (the class carries graphlab's entries)."""
    from graphlab.watch.patch import PATCH

    return PATCH.installed and PATCH.cls is getattr(getattr(torch, "cuda", None), "CUDAGraph", None)


__all__ = ["DEFAULT_MAX_GRAPHS", "Watch", "WatchSummary", "WatchedGraph", "WatchedGraphs", "is_patched", "watch"]
