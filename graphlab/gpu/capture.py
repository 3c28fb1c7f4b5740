"""Capture PyTorch code into a CUDA graph: from a function, a `with` block, or a notebook cell.

    >>> import torch, graphlab as gl
    >>> model = torch.nn.Linear(256, 256).cuda().eval()
    >>> x = torch.randn(8, 256, device="cuda")
    >>> cg = gl.capture(model, x)          # warm-up on a side stream, then capture
    >>> y = cg(torch.randn(8, 256, device="cuda"))   # copy in, replay, read the static output
    >>> cg.verify()                        # replay vs eager on fresh random inputs
    >>> cg.graph.count_by_kind()           # the parsed DOT: {"kernel": 1}

Every path captures on a side stream with `keep_graph=True` (where torch has it) so the graph can be
dumped with `cudaGraphDebugDotPrint`; failures become one `CaptureError` naming the cause, the line
and the fix (`graphlab.gpu.diagnose`), and the process stays usable for the next capture.
Layer 2: torch is imported inside functions; never plotly, graphviz or widgets.
"""
from __future__ import annotations

import contextlib
import html
import sys
from typing import Any, Callable, Iterator

from graphlab.env import require_cuda
from graphlab.errors import CaptureError, GraphlabError
from graphlab.gpu.dot_export import DEFAULT_DOT_FLAGS, has_cuda_bindings, raw_graph_handle
from graphlab.gpu.session import CaptureSession, warm_up
from graphlab.gpu.tensors import GRAD_MODES, describe, flatten, grad_context, is_tensor, map_tensors
from graphlab.gpu.verify import VerifyResult, verify_replay


class CapturedGraph:
    """A captured CUDA graph with its static input and output buffers.

    `cg(*new_inputs)` copies into the static inputs, replays and returns the static outputs (the same
    tensors every call: clone them to keep a result). `cg.graph` is the parsed DOT (`CudaGraph`).
    """

    def __init__(self, *, torch_graph: Any, static_inputs: tuple[Any, ...], static_outputs: Any,
                 fn: Callable[..., Any] | None, grad_mode: str, name: str, dot_flags: int | str,
                 capture_ms: float, instantiate_ms: float, memory_bytes: int,
                 input_names: tuple[str, ...] = (), source: str | None = None):
        self._torch_graph = torch_graph
        self.inputs = static_inputs
        self.outputs = static_outputs
        self._fn = fn
        self.grad_mode = grad_mode
        self.name = name
        self.dot_flags = dot_flags
        self.capture_ms = capture_ms
        self.instantiate_ms = instantiate_ms
        self.memory_bytes = memory_bytes
        self.input_names = input_names
        self.source = source
        self._dots: dict[int, str] = {}
        self._parsed: Any = None
        self._pending = False

    @classmethod
    def pending(cls, *, name: str, dot_flags: int | str, grad_mode: str) -> CapturedGraph:
        """A placeholder a `with gl.capturing()` block fills in when it ends."""
        cg = cls(torch_graph=None, static_inputs=(), static_outputs={}, fn=None, grad_mode=grad_mode, name=name,
                 dot_flags=dot_flags, capture_ms=0.0, instantiate_ms=0.0, memory_bytes=0)
        cg._pending = True
        return cg

    def _complete(self, other: CapturedGraph) -> None:
        self.__dict__.update(other.__dict__)
        self._pending = False

    @property
    def torch_graph(self) -> Any:
        """The underlying `torch.cuda.CUDAGraph`."""
        if self._pending:
            raise GraphlabError(f"graph {self.name!r} is still being captured: use it after the `with` block")
        if self._torch_graph is None:
            raise GraphlabError(f"graph {self.name!r} was reset: capture it again")
        return self._torch_graph

    # -- running ----------------------------------------------------------------------------------------
    def replay(self) -> Any:
        """Replay the graph on the current stream as is (no input copy) and return the static outputs."""
        self.torch_graph.replay()
        return self.outputs

    def __call__(self, *new_inputs: Any, **named: Any) -> Any:
        """Copy `new_inputs` (same structure, shapes and dtypes as captured) into the static inputs, replay."""
        graph = self.torch_graph
        if named:
            unknown = [k for k in named if k not in self.input_names]
            if unknown or new_inputs:
                raise GraphlabError(f"graph {self.name!r} takes inputs {list(self.input_names)} by name; got "
                                    f"{unknown or 'positional arguments too'}")
            new_inputs = tuple(named.get(k, self.inputs[i]) for i, k in enumerate(self.input_names))
        self._copy_in(new_inputs)
        graph.replay()
        return self.outputs

    def _copy_in(self, new_inputs: tuple[Any, ...]) -> None:
        static = flatten(self.inputs)
        fresh = flatten(tuple(new_inputs))
        if [p for p, _ in static] != [p for p, _ in fresh]:
            raise GraphlabError(f"graph {self.name!r} was captured for inputs {[p for p, _ in static]}, got "
                                f"{[p for p, _ in fresh]}: pass the same structure")
        torch = sys.modules["torch"]
        with grad_context(torch, self.grad_mode):
            for (path, old), (_, new) in zip(static, fresh):
                if not is_tensor(old):
                    if old != new:
                        raise GraphlabError(f"input {path} was {old!r} at capture, got {new!r}: a graph bakes in "
                                            "non-tensor arguments; capture again for a new value")
                    continue
                if not is_tensor(new) or new.shape != old.shape or new.dtype != old.dtype:
                    got = describe(new) if is_tensor(new) else type(new).__name__
                    raise GraphlabError(f"input {path} must be {describe(old)} as captured, got {got}: a graph has "
                                        "fixed shapes, so capture one graph per shape")
                if new.data_ptr() != old.data_ptr():
                    old.copy_(new, non_blocking=True)

    # -- looking at it ----------------------------------------------------------------------------------
    def dot(self, flags: int | str | None = None) -> str:
        """The raw DOT text from `cudaGraphDebugDotPrint` with `flags` (default: the capture's dot_flags)."""
        from graphlab.gpu.dot_export import dump_dot, parse_flags

        value = parse_flags(self.dot_flags if flags is None else flags)
        if value not in self._dots:
            self._dots[value] = dump_dot(self.torch_graph, value)
        return self._dots[value]

    @property
    def graph(self) -> Any:
        """The parsed graph (`graphlab.core.model.CudaGraph`) of `.dot()`, parsed once."""
        if self._parsed is None:
            from graphlab.core.dot_parser import parse_dot

            self._parsed = parse_dot(self.dot(), source=f"<capture {self.name}>")
        return self._parsed

    def census(self) -> Any:
        """A node census straight from the CUDA graph API (`graphlab.gpu.census.Census`); needs cuda-bindings."""
        from graphlab.gpu.census import take_census

        handle = raw_graph_handle(self.torch_graph)
        if handle is None or not has_cuda_bindings():
            raise GraphlabError("a census needs cuda-bindings (pip install cuda-bindings) and a torch with "
                                "CUDAGraph(keep_graph=True)")
        return take_census(handle)

    def pool(self) -> Any:
        """The memory pool id, to share with another capture (`gl.capture(..., pool=cg)`)."""
        return self.torch_graph.pool()

    def inspect(self) -> Any:
        """The interactive inspector widget for this graph."""
        from graphlab.ui.inspector import inspect as inspect_graph

        return inspect_graph(self.graph)

    def draw(self, **kwargs: Any) -> Any:
        """A Graphviz drawing of the graph (`graphlab.viz.drawing.render`)."""
        from graphlab.viz.drawing import render

        return render(self.graph, **kwargs)

    # -- checking ---------------------------------------------------------------------------------------
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

    # -- display ----------------------------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        """Name, node counts, capture time, memory, inputs and outputs, as a dict."""
        counts: dict[str, int] = {}
        with contextlib.suppress(Exception):
            counts = self.graph.count_by_kind()
        return {
            "name": self.name,
            "nodes": sum(counts.values()),
            "count_by_kind": counts,
            "capture_ms": round(self.capture_ms, 3),
            "instantiate_ms": round(self.instantiate_ms, 3),
            "memory_bytes": self.memory_bytes,
            "inputs": {p: describe(t) for p, t in flatten(self._named(self.inputs, self.input_names)) if is_tensor(t)},
            "outputs": {p: describe(t) for p, t in flatten(self.outputs) if is_tensor(t)},
        }

    @staticmethod
    def _named(values: tuple[Any, ...], names: tuple[str, ...]) -> Any:
        return dict(zip(names, values)) if names else values

    def __repr__(self) -> str:
        if self._pending:
            return f"CapturedGraph({self.name!r}, capturing...)"
        s = self.summary()
        kinds = ", ".join(f"{v} {k}" for k, v in s["count_by_kind"].items()) or "nodes not parsed"
        return (f"CapturedGraph({s['name']!r}: {s['nodes']} nodes ({kinds}); capture {s['capture_ms']:.1f} ms, "
                f"pool +{s['memory_bytes'] / 2**20:.1f} MiB; inputs {list(s['inputs'].values())}; "
                f"outputs {list(s['outputs'].values())})")

    def _repr_html_(self) -> str:
        if self._pending:
            return f"<b>CapturedGraph {html.escape(self.name)}</b>: capturing..."
        s = self.summary()
        rows = [
            ("nodes", f"{s['nodes']} (" + ", ".join(f"{v} {k}" for k, v in s["count_by_kind"].items()) + ")"),
            ("capture", f"{s['capture_ms']:.1f} ms (+ instantiate {s['instantiate_ms']:.1f} ms)"),
            ("graph pool", f"{s['memory_bytes'] / 2**20:.2f} MiB"),
            ("inputs", ", ".join(f"{k}: {v}" for k, v in s["inputs"].items()) or "none"),
            ("outputs", ", ".join(f"{k}: {v}" for k, v in s["outputs"].items()) or "none"),
        ]
        body = "".join(f"<tr><th style='text-align:left'>{k}</th><td style='text-align:left'>{html.escape(v)}</td>"
                       "</tr>" for k, v in rows)
        return f"<b>CapturedGraph {html.escape(s['name'])}</b><table>{body}</table>"


def session_result(session: CaptureSession, **fields: Any) -> CapturedGraph:
    """The `CapturedGraph` a finished session made, with the timings and memory it measured."""
    return CapturedGraph(
        torch_graph=session.graph, capture_ms=session.capture_ms, instantiate_ms=session.instantiate_ms,
        memory_bytes=session.memory_bytes, **fields,
    )


def capture(fn: Callable[..., Any], *example_inputs: Any, warmup: int = 3, pool: Any = None,
            dot_flags: int | str = DEFAULT_DOT_FLAGS, name: str | None = None, grad_mode: str = "no_grad",
            stream: Any = None, capture_error_mode: str = "global") -> CapturedGraph:
    """Capture `fn(*example_inputs)` into a CUDA graph and return it, ready to replay.

    Args:
        fn: an `nn.Module` or any function of tensors (nested tuples, lists and dicts are fine).
        example_inputs: inputs of the shapes and dtypes the graph will always see; copied into the
            graph's static input buffers (your tensors are not aliased).
        warmup: eager runs on the side stream before capture (cuBLAS handles, lazy init). 0 shows why
            warm-up matters.
        pool: a memory pool to share: another `CapturedGraph`, or `torch.cuda.graph_pool_handle()`.
        dot_flags: `cudaGraphDebugDotFlags` for `.dot()` and `.graph` (int or names; default Verbose).
        grad_mode: "no_grad" (default), "inference_mode" or "enabled".
        stream: capture stream (default: graphlab's side stream; "default" tries the default stream).
        capture_error_mode: "global" (default), "thread_local" or "relaxed".

    Raises:
        GPUUnavailableError: no CUDA GPU here.
        CaptureError: capture failed; the message names the cause, your line and the fix.
    """
    torch = require_cuda("gl.capture")
    if grad_mode not in GRAD_MODES:
        raise GraphlabError(f"grad_mode must be one of {', '.join(GRAD_MODES)}, got {grad_mode!r}")
    static_inputs = map_tensors(lambda t: t.detach().clone(), example_inputs)
    session = CaptureSession(torch, stream=stream, pool=pool, capture_error_mode=capture_error_mode)
    with grad_context(torch, grad_mode):
        warm_up(torch, lambda: fn(*static_inputs), warmup, session.stream)
        session.begin()
        try:
            outputs = fn(*static_inputs)
        except Exception as exc:
            raise session.abandon(exc) from None
        session.end()
    label = name or getattr(fn, "__name__", None) or type(fn).__name__
    return session_result(session, static_inputs=static_inputs, static_outputs=outputs, fn=fn, grad_mode=grad_mode,
                          name=label, dot_flags=dot_flags)


def _prime_libraries(torch: Any, stream: Any) -> None:
    """Create cuBLAS/cuBLASLt handles and workspaces for `stream` with a tiny matmul (a `with` block
    runs once, so it cannot be warmed up)."""
    with torch.cuda.stream(stream), torch.no_grad():
        a = torch.ones(8, 8, device="cuda")
        torch.nn.functional.linear(a, a, a[0])
        torch.mm(a, a)
    torch.cuda.current_stream().wait_stream(stream)


def _tensor_names(torch: Any, namespace: dict[str, Any]) -> dict[str, int]:
    return {k: id(v) for k, v in namespace.items() if isinstance(v, torch.Tensor)}


@contextlib.contextmanager
def capturing(*, pool: Any = None, name: str = "block", dot_flags: int | str = DEFAULT_DOT_FLAGS,
              grad_mode: str = "no_grad", prime: bool = True, capture_error_mode: str = "global",
              stream: Any = None) -> Iterator[CapturedGraph]:
    """Capture the code of a `with` block over tensors prepared outside it.

        >>> with gl.capturing() as cg:
        ...     y = model(x)
        >>> x.copy_(new_x); cg.replay()    # y now holds model(new_x)

    The block runs once, under capture (no warm-up: run the code once eagerly first if it uses
    libraries that initialise lazily; `prime=True` pre-creates the cuBLAS handles). Tensors the block
    binds to names are the graph's outputs (`cg.outputs`). `cg.verify()` is not available: use
    `gl.capture(fn, ...)` or `%%cudagraph` for that.
    """
    torch = require_cuda("gl.capturing")
    frame = sys._getframe(2)  # the caller's frame (contextmanager adds one level)
    before = _tensor_names(torch, dict(frame.f_locals))
    cg = CapturedGraph.pending(name=name, dot_flags=dot_flags, grad_mode=grad_mode)
    session = CaptureSession(torch, stream=stream, pool=pool, capture_error_mode=capture_error_mode,
                             prefer_filename=frame.f_code.co_filename)
    if prime:
        _prime_libraries(torch, session.stream)
    with grad_context(torch, grad_mode):
        session.begin()
        try:
            yield cg
        except Exception as exc:
            raise session.abandon(exc) from None
        session.end()
    after = dict(frame.f_locals)
    outputs = {k: v for k, v in after.items()
               if isinstance(v, torch.Tensor) and v.is_cuda and before.get(k) != id(v)}
    cg._complete(session_result(session, static_inputs=(), static_outputs=outputs, fn=None, grad_mode=grad_mode,
                                name=name, dot_flags=dot_flags))


__all__ = ["CapturedGraph", "CaptureError", "VerifyResult", "capture", "capturing", "session_result"]
