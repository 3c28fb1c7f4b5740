"""Which module's forward created each node of a graph under capture: hooks that read the capture's node count.

    >>> with record_modules(model) as recorder:          # doctest: +SKIP
    ...     captured = capture_graph(model, inputs, options)
    >>> recorder.last                                   # [ModuleSpan("layers.0.mlp", 12, 19), ...]

A forward pre-hook and a forward hook on every submodule read how many nodes the graph under capture holds
(`cudaStreamGetCaptureInfo` + `cudaGraphGetNodes`, cuda-bindings); outside a capture they do nothing (warm-up runs
are not counted). `gl.profile(model, x)` and `gl.DecodeGraphs` record them at capture, and `gl.profile` names each
node's module from them (`graphlab.profile.modules.assign_modules`). A compiled (torch.compile) forward calls no
module hooks: its kernels' modules come from Inductor's record (`graphlab.watch.inductor_modules`).

torch at the top; cuda-bindings loaded where the count is read.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

import torch

from graphlab.capture.module_spans import ModuleSpan
from graphlab.errors import BadInputError, UnsupportedError
from graphlab.graph.export import has_cuda_bindings


def capture_node_count() -> tuple[int, int] | None:
    """(capture id, nodes in the graph so far) of the capture the current stream is in, or None when it is not
    capturing."""
    from cuda.bindings import runtime as rt

    stream = rt.cudaStream_t(init_value=int(torch.cuda.current_stream().cuda_stream))
    result = rt.cudaStreamGetCaptureInfo(stream)  # (err, status, id, graph, deps, [edge data,] count)
    if int(result[0]) != 0 or result[1] != rt.cudaStreamCaptureStatus.cudaStreamCaptureStatusActive:
        return None
    graph = next((r for r in result[2:] if isinstance(r, rt.cudaGraph_t)), None)
    if graph is None:
        return None
    return int(result[2]), int(rt.cudaGraphGetNodes(graph, numNodes=0)[-1])


class ModuleRecorder:
    """The module spans seen while capturing (see `record_modules`): one list per capture, in `.captures`."""

    def __init__(self) -> None:
        self.captures: list[list[ModuleSpan]] = []
        self._by_id: dict[int, list[ModuleSpan]] = {}
        self._open: list[tuple[str, int]] = []
        self.error: str | None = None  # why the node count could not be read (then no spans are recorded)

    def _count(self) -> tuple[int, int] | None:
        if self.error is not None:
            return None
        try:
            return capture_node_count()
        except Exception as exc:  # never break the user's capture over attribution
            self.error = f"{type(exc).__name__}: {exc}"
            return None

    @property
    def last(self) -> list[ModuleSpan]:
        return self.captures[-1] if self.captures else []

    def _pre(self, path: str) -> None:
        info = self._count()
        if info is not None:
            self._open.append((path, info[1]))

    def _post(self, path: str) -> None:
        info = self._count()
        if info is None or not self._open:
            return
        opened, start = self._open.pop()
        while self._open and opened != path:  # a forward that raised left its pre-hook open
            opened, start = self._open.pop()
        spans = self._by_id.get(info[0])
        if spans is None:
            spans = self._by_id[info[0]] = []
            self.captures.append(spans)
        spans.append(ModuleSpan(path, start, info[1]))


@contextlib.contextmanager
def record_modules(model: Any) -> Iterator[ModuleRecorder]:
    """Hooks on every submodule of `model` that record, during any capture inside the block, which nodes each
    module's forward created. Outside a capture the hooks do nothing (warm-up runs are not counted).

    Raises:
        UnsupportedError: cuda-bindings is not installed (the node count is read through it).
    """
    if not has_cuda_bindings():
        raise UnsupportedError("module attribution reads the capture's node count through cuda-bindings: "
                               "pip install cuda-bindings")
    if not isinstance(model, torch.nn.Module):
        raise BadInputError(f"record_modules needs an nn.Module, not {type(model).__name__}")
    recorder = ModuleRecorder()
    handles = []
    for path, module in model.named_modules():
        handles.append(module.register_forward_pre_hook(lambda m, a, p=path: recorder._pre(p)))
        handles.append(module.register_forward_hook(lambda m, a, o, p=path: recorder._post(p)))
    try:
        yield recorder
    finally:
        for h in handles:
            h.remove()


__all__ = ["ModuleRecorder", "capture_node_count", "record_modules"]
