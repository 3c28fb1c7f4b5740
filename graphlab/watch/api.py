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
touched. Each capture is recorded with its library and the user's line (watch/frames.py), time,
device, stream, capture time, pool id and memory, input shapes where knowable, and the DOT. For torch.compile
graphs each kernel node is also given the modules Inductor fused into it (`seen[i].node_modules`, which
`gl.profile(seen[i], call=...)` shows), recorded while the block compiles (graphlab/watch/inductor_modules.py;
`modules=False` turns that off). When the
block ends, even by an exception, the class is exactly as before. Watches nest (each sees every
capture made while it is open). Needs torch >= 2.8 (`keep_graph`); older torch raises
WatchUnsupportedError.

The torch side lives in graphlab/watch/patch.py (torch imported at its top); this module holds the
`with` block and what it fills.
"""
from __future__ import annotations

from typing import Any

from graphlab.env import require_cuda
from graphlab.errors import BadInputError
from graphlab.graph.export import DEFAULT_DOT_FLAGS, parse_flags
from graphlab.watch.inductor_modules import KernelModuleRecorder
from graphlab.watch.patch import PATCH, check_supported, is_patched
from graphlab.watch.records import WatchedGraph, WatchedGraphs, WatchSummary

DEFAULT_MAX_GRAPHS = 1000


class Watch:
    """A watch over `torch.cuda.CUDAGraph` (`gl.watch` makes one after checking for a GPU; tests make one
    directly, over a fake torch).

    Use it as a context manager; `__enter__` returns the `WatchedGraphs` it fills.
    """

    def __init__(self, *, dot_flags: int | str = DEFAULT_DOT_FLAGS, keep_dot: bool = True,
                 max_graphs: int | None = DEFAULT_MAX_GRAPHS, modules: bool = True):
        self.dot_flags = parse_flags(dot_flags)
        self.seen = WatchedGraphs(max_graphs=max_graphs, keep_dot=keep_dot)
        self.modules = modules
        self.kernel_modules: KernelModuleRecorder | None = None
        self._open = False

    def _add(self, captured: dict[str, Any]) -> None:
        recorder = self.kernel_modules
        if recorder is not None:
            try:
                captured = {**captured, "kernel_launches": recorder.snapshot(), "kernel_modules_reason": recorder.reason}
            except Exception:  # attribution must never break watching
                pass
        self.seen.add(captured)

    def __enter__(self) -> WatchedGraphs:
        if self._open:
            raise BadInputError("this watch is already open: use a new gl.watch() for a nested block")
        PATCH.open(self._add, self.dot_flags)
        if self.modules:
            try:
                self.kernel_modules = KernelModuleRecorder().__enter__()
            except Exception:
                self.kernel_modules = None
        self._open = True
        self.seen.active = True
        return self.seen

    def __exit__(self, *exc: Any) -> None:
        if self._open:
            self._open = False
            self.seen.active = False
            PATCH.close(self._add)
            if self.kernel_modules is not None:
                self.kernel_modules.__exit__(*exc)


def watch(*, dot_flags: int | str = DEFAULT_DOT_FLAGS, keep_dot: bool = True,
          max_graphs: int | None = DEFAULT_MAX_GRAPHS, modules: bool = True) -> Watch:
    """Watch every CUDA graph captured through PyTorch while a `with` block runs.

    Args:
        dot_flags: cudaGraphDebugDotFlags for the dumps (default Verbose, 1); nested watches share it.
        keep_dot: keep each graph's DOT text (False: metadata only, for very many captures).
        max_graphs: keep at most this many graphs (later ones are counted in `seen.dropped`); None: all.
        modules: while the block runs, record which modules each torch.compile kernel fuses (Inductor's provenance
            tracking is switched on for the block, so compiles inside it use their own cache entries) and fill
            each torch.compile graph's `node_modules`; False: leave Inductor as it is.

    Returns:
        A context manager; `with gl.watch() as seen:` gives the `WatchedGraphs` it fills.

    Raises:
        GPUUnavailableError: no CUDA GPU here (the recorded worked cases: `graphlab.studies.watch_examples.watch_example`).
        WatchUnsupportedError: this torch cannot keep a graph for dumping (needs torch >= 2.8).
    """
    require_cuda("gl.watch")
    check_supported()
    return Watch(dot_flags=dot_flags, keep_dot=keep_dot, max_graphs=max_graphs, modules=modules)


__all__ = ["DEFAULT_MAX_GRAPHS", "Watch", "WatchSummary", "WatchedGraph", "WatchedGraphs", "is_patched", "watch"]
