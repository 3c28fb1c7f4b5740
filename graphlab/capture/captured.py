"""`CapturedGraph`: a captured CUDA graph with its static inputs and outputs, ready to replay.

    >>> cg = gl.capture(model, x)              # doctest: +SKIP
    >>> y = cg(new_x)                          # check, copy into the static input, replay
    >>> y = cg.unchecked(new_x)                # the same without checks (you promise shapes/devices)
    >>> cg.replay()                            # replay as is; the outputs are refreshed in place
    >>> gl.render(cg); gl.inspect(cg)          # draw / inspect it (the functions take a CapturedGraph)

The outputs are the same tensors every call: clone them to keep a result past the next replay.
Drawing and inspecting live in the viz/ui packages (they take any graph of `capture/surface.py`).

A graph has three states: *capturing* (the graph a `with gl.capturing()` block binds while the block still
runs: every use raises `BadInputError` until the block ends), *ready*, and *reset* (freed: every use raises).
"""
from __future__ import annotations

import contextlib
import html
import sys
from typing import TYPE_CHECKING, Any, Callable, Iterator

import torch

from graphlab.capture.input_plan import InputPlan
from graphlab.capture.kept_outputs import KeptOutputGuard
from graphlab.capture.options import CaptureOptions
from graphlab.capture.surface import capture_time_text, summary_facts, tensors_in_words
from graphlab.capture.tensors import describe_tree, flatten
from graphlab.capture.verify import CallCheck, CensusCheck, VerifyResult, check_call, verify_replay
from graphlab import present
from graphlab.errors import BadInputError, UnsupportedError
from graphlab.graph.census import take_census
from graphlab.graph.dot_limits import NO_LIMITS
from graphlab.graph.dot_parser import parse_dot
from graphlab.graph.export import dump_dot, has_cuda_bindings, parse_flags, raw_graph_handle

if TYPE_CHECKING:
    from graphlab.capture.engine import CaptureCost
    from graphlab.graph.census import Census
    from graphlab.graph.model import CudaGraph


def _current_device_reader(device_index: int) -> Callable[[], int]:
    """The cheapest way to read the current CUDA device (the hot path checks it on every call)."""
    if device_index < 0:  # a CPU stand-in graph (tests): there is no CUDA device to check
        return lambda: device_index
    return getattr(torch._C, "_cuda_getDevice", None) or torch.cuda.current_device


class CapturedGraph:
    """A captured CUDA graph with its static input and output buffers.

    Attributes:
        origin: "live" (the graph surface, `capture/surface.py`).
        inputs: the static input tensors (a tuple, nested as captured); `outputs`: the static outputs.
        name: as given to the capture; options: how it was captured (`CaptureOptions`), its grad_mode and
            dot_flags also read as attributes.
        device: the torch.device the graph lives on.
        cost: what capturing this graph cost (`graphlab.capture.engine.CaptureCost`), also read as
            capture_ms, instantiate_ms, pool_bytes, peak_bytes, exec_bytes.

    Args:
        torch_graph: the captured `torch.cuda.CUDAGraph`; None while a `with gl.capturing()` block is still
            capturing it (then `cost` is None too, and `complete` fills both in when the block ends).
    """

    origin = "live"
    #: the kept-output guard (`warn_kept_outputs`); None: off, and a call returns the static outputs themselves
    _kept: KeptOutputGuard | None = None

    def __init__(self, *, torch_graph: Any, cost: CaptureCost | None, device_index: int,
                 static_inputs: tuple[Any, ...], static_outputs: Any, fn: Callable[..., Any] | None, name: str,
                 options: CaptureOptions = CaptureOptions(), input_names: tuple[str, ...] = ()):
        self.name = name
        self.options = options
        self.grad_mode = options.grad_mode
        self.dot_flags = options.dot_flags
        self.device_index = device_index
        self.input_names = input_names
        self._fn = fn
        self._capturing = torch_graph is None
        self._torch_graph = torch_graph
        self._cost = cost
        self._inputs = static_inputs
        self._outputs = static_outputs
        self.plan = InputPlan(static_inputs, name)
        self._dots: dict[int, str] = {}
        self._parsed: CudaGraph | None = None
        self._replay: Callable[[], Any] = self._refuse if torch_graph is None else torch_graph.replay
        self._current_device = _current_device_reader(device_index)

    # -- a `with gl.capturing()` block binds its graph before the graph exists ------------------------------
    @classmethod
    def pending(cls, name: str, *, device_index: int, options: CaptureOptions = CaptureOptions()) -> CapturedGraph:
        """The graph a `with gl.capturing()` block binds at its start: capturing until `complete` is called."""
        return cls(torch_graph=None, cost=None, device_index=device_index, static_inputs=(), static_outputs=None,
                   fn=None, name=name, options=options)

    def complete(self, torch_graph: Any, cost: CaptureCost, outputs: Any) -> None:
        """The block ended: take the graph it captured, what that cost and the tensors it bound."""
        self._torch_graph, self._cost, self._outputs = torch_graph, cost, outputs
        self._replay = torch_graph.replay
        self._capturing = False

    def _unusable(self) -> BadInputError:
        if self._capturing:
            return BadInputError(f"graph {self.name!r} is still being captured: use it after the `with` block")
        return BadInputError(f"graph {self.name!r} was reset: capture it again")

    def _refuse(self) -> None:
        raise self._unusable()

    # -- what it holds and what it cost -----------------------------------------------------------------------
    @property
    def inputs(self) -> Any:
        """The static inputs, nested as captured (a `with` block's graph has none)."""
        if self._capturing:
            raise self._unusable()
        return self._inputs

    @property
    def outputs(self) -> Any:
        """The static outputs: the same tensors, refreshed by every replay."""
        if self._capturing:
            raise self._unusable()
        return self._outputs

    @property
    def cost(self) -> CaptureCost:
        if self._cost is None:
            raise self._unusable()
        return self._cost

    capture_ms = property(lambda self: self.cost.capture_ms, doc="Host time of the capture itself (ms).")
    instantiate_ms = property(lambda self: self.cost.instantiate_ms, doc="Host time to instantiate (ms).")
    pool_bytes = property(lambda self: self.cost.pool_bytes, doc="Device memory the graph's pool took.")
    peak_bytes = property(lambda self: self.cost.peak_bytes, doc="Peak memory the captured work held.")
    exec_bytes = property(lambda self: self.cost.exec_bytes, doc="Device memory of the executable graph.")

    @property
    def device(self) -> Any:
        return torch.device("cuda", self.device_index)

    @property
    def torch_graph(self) -> Any:
        """The underlying `torch.cuda.CUDAGraph`."""
        if self._torch_graph is None:
            raise self._unusable()
        return self._torch_graph

    # -- running -------------------------------------------------------------------------------------------
    def __call__(self, *new_inputs: Any, **named: Any) -> Any:
        """Copy `new_inputs` (same structure, shapes, dtypes and device as captured) in, replay, return outputs.

        A tensor that *is* the static input is not copied. One `BadInputError` names the input and the
        fix when a shape, dtype, device or structure differs; nothing is replayed then.
        """
        if named:
            new_inputs = self.plan.by_name(named, self.input_names)
        self.plan.feed(new_inputs)
        if self._current_device() != self.device_index:
            raise self._wrong_device_error()
        self._replay()
        if self._kept is None:
            return self._outputs
        return self._kept.hand_out(self, self._outputs, sys._getframe(1))

    def unchecked(self, *new_inputs: Any) -> Any:
        """The fast path: copy flat tensor inputs in and replay, with no check at all.

        Use it only where the caller guarantees the captured shapes, dtypes and device (a serving loop
        that pads to the graph's bucket); a wrong input here is undefined behaviour, not an error.
        """
        self.plan.feed_unchecked(new_inputs)
        self._replay()
        if self._kept is None:
            return self._outputs
        return self._kept.hand_out(self, self._outputs, sys._getframe(1))

    def replay(self) -> Any:
        """Replay the graph as is (no input copy) on the current stream; return the static outputs."""
        if self._current_device() != self.device_index:
            raise self._wrong_device_error()
        self._replay()
        if self._kept is None:
            return self._outputs
        return self._kept.hand_out(self, self._outputs, sys._getframe(1))

    def warn_kept_outputs(self, on: bool = True, *, guard: KeptOutputGuard | None = None) -> KeptOutputGuard | None:
        """Warn (`KeptOutputWarning`, at your line) when a caller still holds an output of this graph that a later
        replay overwrites. On, each call returns a fresh view of the static outputs (the same memory), tracked by a
        weak reference; off (the default), the static outputs themselves. Returns the guard (`.seen` lists what
        it found), or None when turned off. `capture/kept_outputs.py` says how and what it costs."""
        if not on:
            self._kept = None
            return None
        self._kept = guard if guard is not None else KeptOutputGuard()
        return self._kept

    def _wrong_device_error(self) -> BadInputError:
        # a call from the wrong device is the caller's input (the current device), not a setting of the graph
        current = self._current_device()
        return BadInputError(f"graph {self.name!r} lives on cuda:{self.device_index} but cuda:{current} is the "
                             f"current device: replay it under `with torch.cuda.device({self.device_index}):` "
                             f"(or torch.cuda.set_device({self.device_index})), or capture one graph per device")

    # -- looking at it ---------------------------------------------------------------------------------------
    def dot(self, flags: int | str | None = None) -> str:
        """The raw DOT text from `cudaGraphDebugDotPrint` with `flags` (default: the capture's dot_flags)."""
        value = parse_flags(self.dot_flags if flags is None else flags)
        if value not in self._dots:
            self._dots[value] = dump_dot(self.torch_graph, value)
        return self._dots[value]

    @property
    def graph(self) -> CudaGraph:
        """The parsed graph of `.dot()` (a `graphlab.graph.model.CudaGraph`), parsed once."""
        if self._parsed is None:
            # this process's own driver wrote it, for the user's own model: no limits (they guard untrusted dumps)
            self._parsed = parse_dot(self.dot(), source=f"<capture {self.name}>", limits=NO_LIMITS)
        return self._parsed

    def census(self) -> Census:
        """A node census straight from the CUDA graph API (`graphlab.graph.census.Census`); needs cuda-bindings."""
        handle = raw_graph_handle(self.torch_graph)
        if handle is None or not has_cuda_bindings():
            raise UnsupportedError("a census needs cuda-bindings (pip install cuda-bindings) and a torch with "
                                   "CUDAGraph(keep_graph=True)")
        return take_census(handle)

    def check_census(self) -> CensusCheck:
        """The census (`census()`) compared with the parsed DOT (`graph`), in words: do the two witnesses agree?"""
        return CensusCheck(len(self.graph), tuple(self.census().compare(self.graph)))

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
        return verify_replay(self, make_inputs, trials)

    def reset(self) -> None:
        """Free the graph and its pool (the CapturedGraph cannot be replayed afterwards)."""
        if self._torch_graph is not None:
            self._torch_graph.reset()
            self._torch_graph = None
            self._replay = self._refuse

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
            "capture_state": self.cost.capture_state,
            "instantiate_ms": round(self.instantiate_ms, 3),
            "pool_bytes": self.pool_bytes,
            "peak_bytes": self.peak_bytes,
            "exec_bytes": self.exec_bytes,
            "inputs": describe_tree(named),
            "outputs": describe_tree(self.outputs),
        }

    def _nodes_in_words(self) -> str:
        try:
            return self.graph.kinds()
        except Exception:  # the DOT export needs cuda-bindings or a torch that keeps the graph
            return "not read (the DOT export needs cuda-bindings: pip install cuda-bindings)"

    def _tensors_in_words(self, tree: Any) -> str:
        return tensors_in_words((path, tuple(t.shape), str(t.dtype).replace("torch.", ""))
                                for path, t in flatten(tree) if isinstance(t, torch.Tensor))

    def table(self) -> Any:
        """The summary as a table for people (`present.facts`): nodes, device, capture cost, memory, static
        inputs and outputs."""
        named = dict(zip(self.input_names, self.inputs)) if self.input_names else self.inputs
        return summary_facts(
            self.cost, title=f"CapturedGraph {self.name}", nodes=self._nodes_in_words(),
            where=f"copies the inputs into the static inputs and replays the graph on cuda:{self.device_index}",
            inputs=self._tensors_in_words(named), outputs=self._tensors_in_words(self.outputs))

    def __repr__(self) -> str:
        if self._capturing:
            return f"CapturedGraph({self.name!r}, capturing...)"
        named = dict(zip(self.input_names, self.inputs)) if self.input_names else self.inputs
        return (f"CapturedGraph {self.name!r} on cuda:{self.device_index}: {self._nodes_in_words()}; capture "
                f"{capture_time_text(self.capture_ms, self.cost.capture_state)}, pool {present.size(self.pool_bytes)};"
                f" inputs {self._tensors_in_words(named)}; outputs {self._tensors_in_words(self.outputs)}")

    def _repr_html_(self) -> str:
        if self._capturing:
            return f"<b>CapturedGraph {html.escape(self.name)}</b>: capturing..."
        return self.table()._repr_html_()

    def check_call(self, *new_inputs: Any) -> CallCheck:
        """`cg(*new_inputs)`, checked: the replay against the model run eagerly on the same inputs, and what the
        call returned (the static outputs: a second call with other inputs returns the same tensors and
        overwrites them). The static inputs and outputs hold `new_inputs`' result afterwards, as after the call."""
        return check_call(self, *new_inputs)


@contextlib.contextmanager
def guard_every_graph(guard: KeptOutputGuard) -> Iterator[KeptOutputGuard]:
    """Inside the block, every `CapturedGraph` without its own setting hands out views through `guard` (the audit
    runs a user's step under it, to find the line that keeps an output); the setting is restored afterwards."""
    before = CapturedGraph.__dict__.get("_kept")
    CapturedGraph._kept = guard
    try:
        yield guard
    finally:
        CapturedGraph._kept = before


__all__ = ["CapturedGraph", "guard_every_graph"]
