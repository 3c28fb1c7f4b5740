"""How a graph cache makes a graph: by capturing it (CUDA), or by a stand-in that runs eagerly.

`CudaBackend` captures through graphlab's one capture engine (`gl.capture`) into a pool the cache
chooses. `EagerBackend` makes `EagerGraph`s, the same surface without a GPU: "replay" runs the model on
the static inputs and writes the static outputs, so the cache's bookkeeping, padding, padding check,
locking and eviction are tested on a CPU exactly as they run on a GPU. `make_backend(None)` picks the CUDA
backend live and the eager one in recorded mode (`graphlab.mode.pick`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import torch

from graphlab.capture.api import capture
from graphlab.capture.input_plan import InputPlan
from graphlab.capture.recorded import zoo_name
from graphlab.capture.tensors import describe_tree, flatten, grad_context, leading_size, map_tensors
from graphlab.capture.verify import VerifyResult, verify_replay
from graphlab.errors import BadInputError, UnsupportedError
from graphlab.loader import open_recording
from graphlab.mode import pick, recorded_gpu, stand_in
from graphlab.present import shape, size

if TYPE_CHECKING:
    from graphlab.graph.model import CudaGraph


def _clone(t: torch.Tensor) -> torch.Tensor:
    return t.clone()


def _no_graph(graph: EagerGraph, note: str = "") -> UnsupportedError:
    return UnsupportedError(f"{graph.name!r} is an eager stand-in (backend='eager'): it has no CUDA graph, so "
                            f"no {note or 'DAG'}; capture on a GPU (backend='cuda') for one")


def _recorded_dag(graph: EagerGraph) -> CudaGraph:
    """Recorded mode: the DAG a GPU recorded for this zoo model at this batch size (what a live cache holds)."""
    name, batch = zoo_name(graph._fn), leading_size(graph.inputs)
    if name is not None and batch is not None:
        recording = open_recording(name, gpu=recorded_gpu())
        if f"b{batch}" in recording.graph_names:
            return recording.graph(f"b{batch}")
    raise _no_graph(graph, "DAG" + (f" (the {name} recording has no batch {batch})" if name else ""))


@stand_in(_recorded_dag)
def eager_dag(graph: EagerGraph) -> CudaGraph:
    """An eager stand-in's DAG: none live (it captured nothing); in recorded mode, the recorded one."""
    raise _no_graph(graph, "DAG to draw")


class EagerGraph:
    """A stand-in for a `CapturedGraph`: fixed static inputs and outputs; replay runs the model on them.

    It offers the whole graph surface (`graphlab.capture.surface.Replayable`): calls and replays, `verify`
    (replay vs eager on fresh inputs, by the capture package's `verify_replay`), `summary`, and its memory
    (the static outputs it holds, as `pool_bytes`). Nothing is captured, so `capture_ms` and
    `instantiate_ms` are 0.0, and `dot`, `census` and `pool` raise `UnsupportedError`; so does `graph`,
    except in recorded mode, where it is the DAG a GPU recorded for the same zoo model at this batch size.
    """

    origin = "eager"
    capture_ms = 0.0  # nothing is captured
    instantiate_ms = 0.0  # nor instantiated

    def __init__(self, fn: Callable[..., Any], static_inputs: tuple[Any, ...], grad_mode: str, name: str):
        self._fn: Callable[..., Any] | None = fn
        self.inputs, self.grad_mode, self.name = static_inputs, grad_mode, name
        self.plan = InputPlan(static_inputs, name)  # what a call checks and copies, as a CapturedGraph's
        with torch.inference_mode(False), grad_context(grad_mode):
            self.outputs = map_tensors(_clone, fn(*static_inputs))
        self._held_bytes = sum(t.numel() * t.element_size() for _, t in flatten(self.outputs)
                               if isinstance(t, torch.Tensor))

    # -- memory: the static outputs it holds ----------------------------------------------------------------
    pool_bytes = property(lambda self: self._held_bytes, doc="Bytes of the static outputs it holds.")
    peak_bytes = property(lambda self: self._held_bytes, doc="The same: nothing else is held.")
    exec_bytes = property(lambda self: None, doc="None: there is no executable graph.")

    # -- running ----------------------------------------------------------------------------------------------
    def __call__(self, *new_inputs: Any, **named: Any) -> Any:
        """Check and copy `new_inputs` into the static inputs (as a CapturedGraph does), run, return outputs."""
        if named:
            raise BadInputError(f"graph {self.name!r}: an eager stand-in takes its inputs by position, got "
                                f"{sorted(named)} by name")
        self.plan.feed(new_inputs)
        return self.replay()

    def unchecked(self, *new_inputs: Any) -> Any:
        self.plan.feed_unchecked(new_inputs)
        return self.replay()

    def replay(self) -> Any:
        """Run the model on the static inputs and write its answer into the static outputs."""
        if self._fn is None:
            raise BadInputError(f"graph {self.name!r} was reset: capture it again")
        with grad_context(self.grad_mode):
            fresh = self._fn(*self.inputs)
        for (_, out), (_, new) in zip(flatten(self.outputs), flatten(fresh)):
            if isinstance(out, torch.Tensor):
                out.copy_(new)
        return self.outputs

    def reset(self) -> None:
        self._fn, self.inputs, self.outputs = None, (), ()

    # -- checking and looking at it --------------------------------------------------------------------------------
    def verify(self, make_inputs: Callable[[], Any] | None = None, trials: int = 3) -> VerifyResult:
        """Replay vs eager on fresh random inputs, as for a CapturedGraph (here both run the model)."""
        if self._fn is None:
            raise BadInputError(f"graph {self.name!r} was reset: capture it again")
        return verify_replay(self, make_inputs, trials)

    @property
    def graph(self) -> CudaGraph:
        """In recorded mode, the DAG a GPU recorded for this zoo model at this batch size; else UnsupportedError."""
        return eager_dag(self)

    def dot(self, flags: int | str | None = None) -> str:
        raise _no_graph(self, "DOT")

    def census(self) -> Any:
        raise _no_graph(self, "node census")

    def pool(self) -> Any:
        raise _no_graph(self, "memory pool to share")

    def summary(self) -> dict[str, Any]:
        """Name, where it runs, node counts (none), cost, inputs and outputs, as a CapturedGraph's summary."""
        tensors = [t for _, t in flatten(self.inputs) if isinstance(t, torch.Tensor)]
        return {"name": self.name, "device": f"{tensors[0].device if tensors else 'cpu'} (eager stand-in)",
                "nodes": 0, "count_by_kind": {}, "capture_ms": self.capture_ms,
                "instantiate_ms": self.instantiate_ms, "pool_bytes": self.pool_bytes,
                "peak_bytes": self.peak_bytes, "exec_bytes": self.exec_bytes,
                "inputs": describe_tree(self.inputs), "outputs": describe_tree(self.outputs)}

    def __repr__(self) -> str:
        s = self.summary()
        outputs = "; ".join(f"{shape(t.shape)} {str(t.dtype).replace('torch.', '')}" for _, t in flatten(self.outputs)
                            if isinstance(t, torch.Tensor)) or "none"
        return f"EagerGraph({s['name']!r} on {s['device']}: outputs {outputs}, {size(s['pool_bytes'])} held)"



class EagerBackend:
    """Makes `EagerGraph`s: the cache without a GPU (tests, CPU-only development, recorded mode)."""

    name = "eager"
    #: the device types it runs on (`check_device`)
    devices = ("cpu", "cuda")

    def new_pool(self, device: Any) -> Any:
        return None

    def capture(self, fn: Callable[..., Any], static_inputs: tuple[Any, ...], *, pool: Any, device: Any,
                warmup_calls: int, name: str, grad_mode: str) -> EagerGraph:
        return EagerGraph(fn, static_inputs, grad_mode, name)


class CudaBackend:
    """Captures real CUDA graphs through `graphlab.capture.api.capture` (the one capture engine)."""

    name = "cuda"
    devices = ("cuda",)

    def __init__(self, capture_error_mode: str = "thread_local"):
        # thread_local: other threads may keep running eager CUDA work (e.g. fallbacks) while one captures
        self.capture_error_mode = capture_error_mode

    def new_pool(self, device: Any) -> Any:
        with torch.cuda.device(device):
            return torch.cuda.graph_pool_handle()

    def capture(self, fn: Callable[..., Any], static_inputs: tuple[Any, ...], *, pool: Any, device: Any,
                warmup_calls: int, name: str, grad_mode: str) -> Any:
        return capture(fn, *static_inputs, warmup_calls=warmup_calls, pool=pool, device=device, name=name,
                       grad_mode=grad_mode, capture_error_mode=self.capture_error_mode)


#: the backends a name picks
BACKENDS: dict[str, type] = {"cuda": CudaBackend, "eager": EagerBackend}


def _accepts(backend: Any) -> tuple[str, ...] | None:
    return tuple(getattr(backend, "devices", ()) or ()) or None


def _fix_for(backend: Any, device_type: str) -> str:
    if device_type == "cpu" and getattr(backend, "name", "") == "cuda":
        return "move the inputs with .to('cuda'), or use backend=\"eager\" to run the same cache on the CPU"
    return f"use one of {', '.join(_accepts(backend) or ())}"


def check_device(backend: Any, device: Any) -> Any:
    """`device` as a `torch.device` (None stays None) if `backend` runs there and it exists here; else
    BadInputError naming the device, what the backend accepts and the fix. A custom backend without
    `devices` accepts any device torch knows."""
    if device is None:
        return None
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise BadInputError(f"device {device!r} is not a device torch knows: use 'cuda', 'cuda:N' or 'cpu'") from None
    accepts = _accepts(backend)
    name = getattr(backend, "name", type(backend).__name__)
    if accepts is not None and dev.type not in accepts:
        raise BadInputError(f"backend {name!r} runs on {' or '.join(accepts)} devices, not {str(dev)!r}: "
                            f"{_fix_for(backend, dev.type)}")
    if dev.type == "cpu" and dev.index not in (None, 0):
        raise BadInputError(f"device {str(dev)!r}: there is one CPU device, 'cpu'")
    if dev.type == "cuda":
        count = torch.cuda.device_count()
        if (dev.index or 0) >= count:
            have = f"cuda:0 to cuda:{count - 1}" if count else "no CUDA GPU"
            raise BadInputError(f"device {str(dev)!r} does not exist here ({have}): "
                                + ("use one of those" if count else "use backend=\"eager\" with device='cpu'"))
    return dev


def check_input_devices(backend: Any, inputs: tuple[Any, ...], device: Any, where: str) -> None:
    """At a capture: every tensor input on a device `backend` runs on, and on `device` when one was given."""
    accepts = _accepts(backend)
    name = getattr(backend, "name", type(backend).__name__)
    for i, (path, leaf) in enumerate(flatten(inputs)):
        if not isinstance(leaf, torch.Tensor):
            continue
        if accepts is not None and leaf.device.type not in accepts:
            raise BadInputError(f"{where}: input {path} is on {leaf.device}, but backend {name!r} runs on "
                                f"{' or '.join(accepts)} devices: {_fix_for(backend, leaf.device.type)}")
        if device is not None and _same_device(leaf.device, device) is False:
            raise BadInputError(f"{where}: input {path} is on {leaf.device}, but the cache's graphs live on "
                                f"{device}: move it with .to('{device}') first (a graph never copies across devices)")


def _same_device(a: Any, b: Any) -> bool:
    if a.type != b.type:
        return False
    if a.type == "cuda":
        current = torch.cuda.current_device() if torch.cuda.is_available() else 0
        return (a.index if a.index is not None else current) == (b.index if b.index is not None else current)
    return True


def make_backend(backend: Any) -> Any:
    """None -> CudaBackend live, EagerBackend in recorded mode; "cuda"/"eager" -> that one; or an object with
    `capture` and `new_pool`, used as it is.

    Raises:
        BadInputError: anything else.
    """
    if backend is None:
        return pick(live=CudaBackend, recorded=EagerBackend)()
    if isinstance(backend, str) and backend in BACKENDS:
        return BACKENDS[backend]()
    if callable(getattr(backend, "capture", None)) and callable(getattr(backend, "new_pool", None)):
        return backend
    raise BadInputError(f"backend must be {' or '.join(map(repr, BACKENDS))} or an object with capture() and "
                        f"new_pool(), got {backend!r}")


__all__ = ["BACKENDS", "CudaBackend", "EagerBackend", "EagerGraph", "check_device", "check_input_devices",
           "eager_dag", "make_backend"]
