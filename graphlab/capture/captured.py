"""`CapturedGraph`: a captured CUDA graph with its static inputs and outputs, ready to replay.

    >>> cg = gl.capture(model, x)              # doctest: +SKIP
    >>> y = cg(new_x)                          # check, copy into the static input, replay
    >>> y = cg.unchecked(new_x)                # the same without checks (you promise shapes/devices)
    >>> cg.replay()                            # replay as is; the outputs are refreshed in place
    >>> gl.render(cg); gl.inspect(cg)          # draw / inspect it (the functions take a CapturedGraph)

The outputs are the same tensors every call: clone them to keep a result past the next replay.
Layer 2: torch comes from sys.modules; drawing and inspecting live in the viz/ui layers.
"""
from __future__ import annotations

import contextlib
import html
import sys
from typing import TYPE_CHECKING, Any, Callable

from graphlab.errors import GraphlabError
from graphlab.graph.export import has_cuda_bindings, raw_graph_handle
from graphlab.capture.input_plan import InputPlan
from graphlab.capture.tensors import describe, flatten, is_tensor

if TYPE_CHECKING:
    from graphlab.graph.model import CudaGraph
    from graphlab.graph.census import Census
    from graphlab.capture.engine import CaptureCost
    from graphlab.capture.verify import VerifyResult


def _current_device_reader(device_index: int) -> Callable[[], int]:
    """The cheapest way to read the current CUDA device (the hot path checks it on every call)."""
    if device_index < 0:  # a CPU stand-in graph (tests): there is no CUDA device to check
        return lambda: device_index
    torch = sys.modules["torch"]
    return getattr(torch._C, "_cuda_getDevice", None) or torch.cuda.current_device


class CapturedGraph:
    """A captured CUDA graph with its static input and output buffers.

    Attributes:
        inputs: the static input tensors (a tuple, nested as captured); `outputs`: the static outputs.
        name, grad_mode, dot_flags: as given to the capture.
        device: the torch.device the graph lives on.
        capture_ms, instantiate_ms, pool_bytes, peak_bytes, exec_bytes: what capturing this graph
            cost (`graphlab.capture.engine.CaptureCost`); `memory_bytes` is `pool_bytes` (older name).
    """

    def __init__(self, *, torch_graph: Any, static_inputs: tuple[Any, ...], static_outputs: Any,
                 fn: Callable[..., Any] | None, grad_mode: str, name: str, dot_flags: int | str,
                 cost: CaptureCost, device_index: int, input_names: tuple[str, ...] = (),
                 source: str | None = None):
        self._torch_graph = torch_graph
        self.inputs = static_inputs
        self.outputs = static_outputs
        self._fn = fn
        self.grad_mode = grad_mode
        self.name = name
        self.dot_flags = dot_flags
        self.cost = cost
        self.device_index = device_index
        self.input_names = input_names
        self.source = source
        self.plan = InputPlan(static_inputs, name)
        self._dots: dict[int, str] = {}
        self._parsed: CudaGraph | None = None
        self._replay: Callable[[], Any] = torch_graph.replay
        self._current_device = _current_device_reader(device_index)

    # -- cost --------------------------------------------------------------------------------------------
    capture_ms = property(lambda self: self.cost.capture_ms, doc="Host time of the capture itself (ms).")
    instantiate_ms = property(lambda self: self.cost.instantiate_ms, doc="Host time to instantiate (ms).")
    pool_bytes = property(lambda self: self.cost.pool_bytes, doc="Device memory the graph's pool took.")
    memory_bytes = pool_bytes
    peak_bytes = property(lambda self: self.cost.peak_bytes, doc="Peak memory the captured work held.")
    exec_bytes = property(lambda self: self.cost.exec_bytes, doc="Device memory of the executable graph.")

    @property
    def device(self) -> Any:
        return sys.modules["torch"].device("cuda", self.device_index)

    @property
    def torch_graph(self) -> Any:
        """The underlying `torch.cuda.CUDAGraph`."""
        if self._torch_graph is None:
            raise GraphlabError(f"graph {self.name!r} was reset: capture it again")
        return self._torch_graph

    # -- running -------------------------------------------------------------------------------------------
    def __call__(self, *new_inputs: Any, **named: Any) -> Any:
        """Copy `new_inputs` (same structure, shapes, dtypes and device as captured) in, replay, return outputs.

        A tensor that *is* the static input is not copied. One `GraphlabError` names the input and the
        fix when a shape, dtype, device or structure differs; nothing is replayed then.
        """
        if named:
            new_inputs = self.plan.by_name(named, self.input_names)
        self.plan.feed(new_inputs)
        if self._current_device() != self.device_index:
            raise self._wrong_device_error()
        self._replay()
        return self.outputs

    def unchecked(self, *new_inputs: Any) -> Any:
        """The fast path: copy flat tensor inputs in and replay, with no check at all.

        Use it only where the caller guarantees the captured shapes, dtypes and device (a serving loop
        that pads to the graph's bucket); a wrong input here is undefined behaviour, not an error.
        """
        self.plan.feed_unchecked(new_inputs)
        self._replay()
        return self.outputs

    def replay(self) -> Any:
        """Replay the graph as is (no input copy) on the current stream; return the static outputs."""
        if self._current_device() != self.device_index:
            raise self._wrong_device_error()
        self._replay()
        return self.outputs

    def _wrong_device_error(self) -> GraphlabError:
        current = self._current_device()
        return GraphlabError(f"graph {self.name!r} lives on cuda:{self.device_index} but cuda:{current} is the "
                             f"current device: replay it under `with torch.cuda.device({self.device_index}):` "
                             f"(or torch.cuda.set_device({self.device_index})), or capture one graph per device")

    def _replay_after_reset(self) -> None:
        raise GraphlabError(f"graph {self.name!r} was reset: capture it again")

    # -- a `with gl.capturing()` block hands this out before its graph exists ---------------------------------
    @classmethod
    def pending(cls, name: str) -> CapturedGraph:
        """A placeholder that a `with gl.capturing()` block fills in (`complete`) when it ends."""
        cg = cls.__new__(cls)
        cg.name, cg._torch_graph, cg._pending = name, None, True
        return cg

    def complete(self, other: CapturedGraph) -> None:
        """Become `other` (the graph the block captured)."""
        self.__dict__.update(other.__dict__)
        self._pending = False

    def __getattr__(self, attr: str) -> Any:  # only reached for attributes a pending graph lacks
        if self.__dict__.get("_pending"):
            raise GraphlabError(f"graph {self.__dict__.get('name')!r} is still being captured: use it after the "
                                "`with` block")
        raise AttributeError(attr)

    # -- looking at it ---------------------------------------------------------------------------------------
    def dot(self, flags: int | str | None = None) -> str:
        """The raw DOT text from `cudaGraphDebugDotPrint` with `flags` (default: the capture's dot_flags)."""
        from graphlab.graph.export import dump_dot, parse_flags

        value = parse_flags(self.dot_flags if flags is None else flags)
        if value not in self._dots:
            self._dots[value] = dump_dot(self.torch_graph, value)
        return self._dots[value]

    @property
    def graph(self) -> CudaGraph:
        """The parsed graph of `.dot()` (a `graphlab.graph.model.CudaGraph`), parsed once."""
        if self._parsed is None:
            from graphlab.graph.dot_parser import parse_dot

            self._parsed = parse_dot(self.dot(), source=f"<capture {self.name}>")
        return self._parsed

    def census(self) -> Census:
        """A node census straight from the CUDA graph API (`graphlab.graph.census.Census`); needs cuda-bindings."""
        from graphlab.graph.census import take_census

        handle = raw_graph_handle(self.torch_graph)
        if handle is None or not has_cuda_bindings():
            raise GraphlabError("a census needs cuda-bindings (pip install cuda-bindings) and a torch with "
                                "CUDAGraph(keep_graph=True)")
        return take_census(handle)

    def pool(self) -> Any:
        """The memory pool id, to share with another capture (`gl.capture(..., pool=cg)`)."""
        return self.torch_graph.pool()

    # -- checking -------------------------------------------------------------------------------------------
    def verify(self, make_inputs: Callable[[], Any] | None = None, trials: int = 3) -> VerifyResult:
        """Replay vs eager on fresh random inputs (never zeros); the static inputs are restored afterwards.

        Args:
            make_inputs: returns a tuple of new inputs; default: random tensors shaped like the captured ones.
            trials: how many input sets to try.
        """
        from graphlab.capture.verify import verify_replay

        return verify_replay(self, make_inputs, trials)

    def reset(self) -> None:
        """Free the graph and its pool (the CapturedGraph cannot be replayed afterwards)."""
        if self._torch_graph is not None:
            self._torch_graph.reset()
            self._torch_graph = None
            self._replay = self._replay_after_reset

    # -- display -------------------------------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        """Name, device, node counts, capture cost, inputs and outputs, as a dict."""
        counts: dict[str, int] = {}
        with contextlib.suppress(Exception):
            counts = self.graph.count_by_kind()
        named = dict(zip(self.input_names, self.inputs)) if self.input_names else self.inputs
        return {
            "name": self.name,
            "device": f"cuda:{self.device_index}",
            "nodes": sum(counts.values()),
            "count_by_kind": counts,
            "capture_ms": round(self.capture_ms, 3),
            "instantiate_ms": round(self.instantiate_ms, 3),
            "pool_bytes": self.pool_bytes,
            "peak_bytes": self.peak_bytes,
            "exec_bytes": self.exec_bytes,
            "inputs": {p: describe(t) for p, t in flatten(named) if is_tensor(t)},
            "outputs": {p: describe(t) for p, t in flatten(self.outputs) if is_tensor(t)},
        }

    def __repr__(self) -> str:
        if self.__dict__.get("_pending"):
            return f"CapturedGraph({self.name!r}, capturing...)"
        s = self.summary()
        kinds = ", ".join(f"{v} {k}" for k, v in s["count_by_kind"].items()) or "nodes not parsed"
        return (f"CapturedGraph({s['name']!r} on {s['device']}: {s['nodes']} nodes ({kinds}); capture "
                f"{s['capture_ms']:.1f} ms, pool +{s['pool_bytes'] / 2**20:.1f} MiB; inputs "
                f"{list(s['inputs'].values())}; outputs {list(s['outputs'].values())})")

    def _repr_html_(self) -> str:
        if self.__dict__.get("_pending"):
            return f"<b>CapturedGraph {html.escape(self.name)}</b>: capturing..."
        s = self.summary()
        exec_text = "" if s["exec_bytes"] is None else f", executable graph {s['exec_bytes'] / 2**10:.0f} KiB"
        rows = [
            ("nodes", f"{s['nodes']} (" + ", ".join(f"{v} {k}" for k, v in s["count_by_kind"].items()) + ")"),
            ("device", s["device"]),
            ("capture", f"{s['capture_ms']:.1f} ms (+ instantiate {s['instantiate_ms']:.1f} ms)"),
            ("memory", f"pool +{s['pool_bytes'] / 2**20:.2f} MiB (peak in use {s['peak_bytes'] / 2**20:.2f} MiB"
                       f"{exec_text})"),
            ("inputs", ", ".join(f"{k}: {v}" for k, v in s["inputs"].items()) or "none"),
            ("outputs", ", ".join(f"{k}: {v}" for k, v in s["outputs"].items()) or "none"),
        ]
        body = "".join(f"<tr><th style='text-align:left'>{k}</th><td style='text-align:left'>{html.escape(v)}</td>"
                       "</tr>" for k, v in rows)
        return f"<b>CapturedGraph {html.escape(s['name'])}</b><table>{body}</table>"


__all__ = ["CapturedGraph"]
