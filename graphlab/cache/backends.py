"""How a graph cache makes a graph: by capturing it (CUDA), or by a stand-in that runs eagerly.

`CudaBackend` captures through graphlab's one capture engine (`gl.capture`) into a pool the cache
chooses. `EagerBackend` is the same surface without a GPU: its "replay" runs the model on the static
inputs and writes the static outputs, so the cache's bookkeeping, padding, padding check, locking and
eviction are tested on a CPU exactly as they run on a GPU.

Layer 2: torch comes from sys.modules or is passed in.
"""
from __future__ import annotations

import sys
from typing import Any, Callable

from graphlab.capture.engine import CaptureCost
from graphlab.capture.tensors import flatten, grad_context, map_tensors


class EagerGraph:
    """A stand-in for a `CapturedGraph`: fixed static inputs and outputs, replay = run the model."""

    def __init__(self, fn: Callable[..., Any], static_inputs: tuple[Any, ...], grad_mode: str, name: str):
        torch = sys.modules["torch"]
        self._fn, self.inputs, self.grad_mode, self.name = fn, static_inputs, grad_mode, name
        with torch.inference_mode(False), grad_context(grad_mode):
            self.outputs = map_tensors(lambda t: t.clone(), fn(*static_inputs))
        bytes_held = sum(t.numel() * t.element_size() for _, t in flatten(self.outputs) if hasattr(t, "numel"))
        self.cost = CaptureCost(0.0, 0.0, bytes_held, bytes_held, None)
        self.replays = 0

    pool_bytes = property(lambda self: self.cost.pool_bytes)
    exec_bytes = property(lambda self: self.cost.exec_bytes)

    def replay(self) -> Any:
        torch = sys.modules["torch"]
        self.replays += 1
        with grad_context(self.grad_mode):
            fresh = self._fn(*self.inputs)
        for (_, out), (_, new) in zip(flatten(self.outputs), flatten(fresh)):
            if hasattr(out, "copy_"):
                out.copy_(new)
        return self.outputs

    def unchecked(self, *new_inputs: Any) -> Any:
        for new, static in zip(new_inputs, self.inputs):
            if new is not static:
                static.copy_(new)
        return self.replay()

    def reset(self) -> None:
        self.inputs, self.outputs = (), ()

    @property
    def graph(self) -> Any:
        """In recorded mode, the graph a GPU recorded for this zoo model at this batch size; else an error."""
        from graphlab.errors import GraphlabError
        from graphlab.mode import is_recorded, recorded_gpu

        name, batch = getattr(self._fn, "graphlab_zoo", None), self._batch_size()
        if is_recorded() and name is not None and batch is not None:
            from graphlab.recordings import load_recording

            rec = load_recording(name, gpu=recorded_gpu())
            if f"b{batch}" in rec.graph_names:
                return rec.graph(f"b{batch}")
        raise GraphlabError(f"{self.name!r} is an eager stand-in (backend='eager'): it has no CUDA graph to draw"
                            + (f" (the {name} recording has no batch {batch})" if name else ""))

    def _batch_size(self) -> int | None:
        first = next((t for _, t in flatten(self.inputs) if hasattr(t, "shape") and t.ndim), None)
        return None if first is None else int(first.shape[0])


class EagerBackend:
    """Makes `EagerGraph`s: the cache without a GPU (tests, CPU-only development)."""

    name = "eager"

    def new_pool(self, device: Any) -> Any:
        return None

    def capture(self, fn: Callable[..., Any], static_inputs: tuple[Any, ...], *, pool: Any, device: Any,
                warmup: int, name: str, grad_mode: str) -> EagerGraph:
        return EagerGraph(fn, static_inputs, grad_mode, name)


class CudaBackend:
    """Captures real CUDA graphs through `graphlab.capture.api.capture` (the one capture engine)."""

    name = "cuda"

    def __init__(self, capture_error_mode: str = "thread_local"):
        # thread_local: other threads may keep running eager CUDA work (e.g. fallbacks) while one captures
        self.capture_error_mode = capture_error_mode

    def new_pool(self, device: Any) -> Any:
        torch = sys.modules["torch"]
        with torch.cuda.device(device):
            return torch.cuda.graph_pool_handle()

    def capture(self, fn: Callable[..., Any], static_inputs: tuple[Any, ...], *, pool: Any, device: Any,
                warmup: int, name: str, grad_mode: str) -> Any:
        from graphlab.capture.api import capture

        return capture(fn, *static_inputs, warmup=warmup, pool=pool, device=device, name=name, grad_mode=grad_mode,
                       capture_error_mode=self.capture_error_mode)


def make_backend(backend: Any) -> Any:
    """None/"cuda" -> CudaBackend ("eager" in recorded mode), "eager" -> EagerBackend, or an object with
    `capture` and `new_pool`."""
    if backend is None:
        from graphlab.mode import is_recorded

        return EagerBackend() if is_recorded() else CudaBackend()
    if backend == "cuda":
        return CudaBackend()
    if backend == "eager":
        return EagerBackend()
    if callable(getattr(backend, "capture", None)) and callable(getattr(backend, "new_pool", None)):
        return backend
    from graphlab.errors import GraphlabError

    raise GraphlabError(f"backend must be 'cuda', 'eager' or an object with capture() and new_pool(), got {backend!r}")


__all__ = ["CudaBackend", "EagerBackend", "EagerGraph", "make_backend"]
