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

import ast
import contextlib
import html
import inspect
import linecache
import sys
import time
import warnings
from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterator

from graphlab.env import require_cuda
from graphlab.errors import CaptureError, GraphlabError
from graphlab.gpu.diagnose import capture_error, diagnose, empty_capture_error
from graphlab.gpu.dot_export import DEFAULT_DOT_FLAGS, has_cuda_bindings, raw_graph_handle

GRAD_MODES = ("no_grad", "inference_mode", "enabled")
_SIDE_STREAMS: dict[int, Any] = {}

#: (rtol, atol) per dtype name for `verify`: an error passes when max_abs <= atol + rtol * max|eager|.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-9), "float32": (1e-3, 1e-5), "float16": (1e-2, 1e-3), "bfloat16": (2e-2, 1e-2),
}

# ---------------------------------------------------------------------------------------------------------
# nested inputs and outputs


def map_tensors(fn: Callable[[Any], Any], obj: Any) -> Any:
    """Apply `fn` to every tensor leaf of nested tuples, lists and dicts; other leaves are kept."""
    if isinstance(obj, tuple):
        return tuple(map_tensors(fn, o) for o in obj)
    if isinstance(obj, list):
        return [map_tensors(fn, o) for o in obj]
    if isinstance(obj, dict):
        return {k: map_tensors(fn, v) for k, v in obj.items()}
    return fn(obj) if _is_tensor(obj) else obj


def flatten(obj: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """(path, leaf) pairs of nested tuples, lists and dicts, e.g. [("[0]", t), ("[1]['mask']", m)]."""
    if isinstance(obj, (tuple, list)):
        return [pair for i, o in enumerate(obj) for pair in flatten(o, f"{prefix}[{i}]")]
    if isinstance(obj, dict):
        return [pair for k, v in obj.items() for pair in flatten(v, f"{prefix}[{k!r}]")]
    return [(prefix or "output", obj)]


def _is_tensor(obj: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.Tensor)


def grad_context(torch: Any, mode: str) -> Any:
    """The autograd context for a grad mode name."""
    if mode == "no_grad":
        return torch.no_grad()
    if mode == "inference_mode":
        return torch.inference_mode()
    return contextlib.nullcontext()


def _sync(torch: Any) -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def _shape(t: Any) -> str:
    return f"{tuple(t.shape)} {str(t.dtype).replace('torch.', '')}"


def random_like(torch: Any, t: Any, seed: int) -> Any:
    """A fresh random tensor shaped like `t` (normal floats; ints within t's observed range; never zeros)."""
    gen = torch.Generator(device="cpu").manual_seed(seed)
    if t.dtype.is_floating_point or t.dtype.is_complex:
        out = torch.randn(t.shape, generator=gen, dtype=torch.float32)
    elif t.dtype == torch.bool:
        out = torch.rand(t.shape, generator=gen) > 0.5
    else:
        low, high = (int(t.min()), int(t.max()) + 1) if t.numel() else (0, 1)
        out = torch.randint(low, max(high, low + 1), t.shape, generator=gen)
    return out.to(device=t.device, dtype=t.dtype)


@dataclass(frozen=True)
class VerifyResult:
    """Replay vs eager on fresh inputs. `passed` when every output is within the dtype's tolerance."""

    passed: bool
    max_abs_err: float
    max_rel_err: float
    trials: int
    outputs_checked: int
    worst_output: str
    rtol: float
    atol: float

    def __bool__(self) -> bool:
        return self.passed

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        verdict = "PASS" if self.passed else "FAIL"
        return (f"{verdict}: replay matches eager to max abs error {self.max_abs_err:.3g} (relative "
                f"{self.max_rel_err:.3g}; tolerance rtol={self.rtol:g}, atol={self.atol:g}) over {self.trials} "
                f"trial(s) of fresh random inputs, {self.outputs_checked} output(s)")

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))


# ---------------------------------------------------------------------------------------------------------
# the captured graph


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
                if not _is_tensor(old):
                    if old != new:
                        raise GraphlabError(f"input {path} was {old!r} at capture, got {new!r}: a graph bakes in "
                                            "non-tensor arguments; capture again for a new value")
                    continue
                if not _is_tensor(new) or new.shape != old.shape or new.dtype != old.dtype:
                    got = _shape(new) if _is_tensor(new) else type(new).__name__
                    raise GraphlabError(f"input {path} must be {_shape(old)} as captured, got {got}: a graph has "
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
        """A Graphviz drawing of the graph (`graphlab.render.drawing.render`)."""
        from graphlab.render.drawing import render

        return render(self.graph, **kwargs)

    # -- checking ---------------------------------------------------------------------------------------
    def verify(self, make_inputs: Callable[[], Any] | None = None, trials: int = 3) -> VerifyResult:
        """Replay vs eager on fresh random inputs (never zeros); the static inputs are restored afterwards.

        Args:
            make_inputs: returns a tuple of new inputs; default: random tensors shaped like the captured ones.
            trials: how many input sets to try.
        """
        if self._fn is None:
            raise GraphlabError(f"graph {self.name!r} came from a `with` block, whose code cannot be re-run: "
                                "use gl.capture(fn, ...) or %%cudagraph to verify")
        torch = sys.modules["torch"]
        saved = map_tensors(lambda t: t.clone(), self.inputs)
        worst: tuple[float, float, float, str, float, float] | None = None  # margin, abs, rel, path, rtol, atol
        checked = 0
        for trial in range(trials):
            if make_inputs is not None:
                fresh = make_inputs()
                fresh = fresh if isinstance(fresh, tuple) else (fresh,)
            else:
                fresh = map_tensors(lambda t: random_like(torch, t, seed=1000 + trial), self.inputs)
            replayed = map_tensors(lambda t: t.clone(), self(*fresh))
            with grad_context(torch, self.grad_mode):
                eager = self._fn(*fresh)
            _sync(torch)
            eager_leaves = dict(flatten(eager))
            pairs = [(p, a, eager_leaves[p]) for p, a in flatten(replayed) if _is_tensor(a) and p in eager_leaves]
            checked = len(pairs)
            for path, got, want in pairs:
                rtol, atol = TOLERANCES.get(str(want.dtype).replace("torch.", ""), (0.0, 0.0))
                got, want = got.detach(), want.detach()
                diff = (got.double() - want.double()).abs()
                max_abs = float(diff.max()) if diff.numel() else 0.0
                scale = float(want.double().abs().max()) if want.numel() else 0.0
                max_rel = max_abs / scale if scale > 0 else max_abs
                margin = max_abs - (atol + rtol * scale)
                if worst is None or margin > worst[0]:
                    worst = (margin, max_abs, max_rel, path, rtol, atol)
        self._copy_in(saved)
        self.torch_graph.replay()
        _sync(torch)
        if worst is None:
            raise GraphlabError(f"graph {self.name!r} has no tensor outputs to verify")
        margin, max_abs, max_rel, path, rtol, atol = worst
        return VerifyResult(margin <= 0, max_abs, max_rel, trials, checked, path, rtol, atol)

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
            "inputs": {p: _shape(t) for p, t in flatten(self._named(self.inputs, self.input_names)) if _is_tensor(t)},
            "outputs": {p: _shape(t) for p, t in flatten(self.outputs) if _is_tensor(t)},
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


# ---------------------------------------------------------------------------------------------------------
# capturing


def side_stream(torch: Any, device: int | None = None) -> Any:
    """One shared side stream per device, used for warm-up and capture (as torch.cuda.graph does)."""
    index = torch.cuda.current_device() if device is None else device
    if index not in _SIDE_STREAMS:
        _SIDE_STREAMS[index] = torch.cuda.Stream(device=index)
    return _SIDE_STREAMS[index]


def _resolve_stream(torch: Any, stream: Any) -> Any:
    if stream is None:
        return side_stream(torch)
    if stream == "default":
        return torch.cuda.default_stream()
    return stream


def _clear_cuda_error() -> None:
    """Clear a sticky-looking last error left by a failed capture (non-sticky capture errors only)."""
    if not has_cuda_bindings():
        return
    with contextlib.suppress(Exception):
        from cuda.bindings import runtime as rt

        rt.cudaGetLastError()


def settle_rng(torch: Any, stream: Any | None = None) -> None:
    """Take the CUDA generator out of capture mode after a failed capture.

    torch's capture_end raises before it runs the generator's capture epilogue, so every later
    `torch.randn(..., device="cuda")` fails with "Offset increment outside graph capture encountered
    unexpectedly" until a capture completes. A tiny successful capture completes one.
    """
    stream = stream or side_stream(torch)
    with contextlib.suppress(Exception), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scratch = torch.zeros(1, device="cuda")
        stream.wait_stream(torch.cuda.current_stream())
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.stream(stream):
            graph.capture_begin()
            try:
                scratch.add_(1)
            finally:
                graph.capture_end()
        torch.cuda.current_stream().wait_stream(stream)
        graph.reset()


def recover(torch: Any | None = None) -> bool:
    """Make the process usable after a failed capture elsewhere (e.g. a raw `torch.cuda.graph` block).

    Ends a capture still running on the current stream, clears the CUDA error it left, and makes the
    default stream current again. Returns True when something had to be repaired.
    """
    torch = torch or require_cuda("recover")
    repaired = False
    if torch.cuda.is_current_stream_capturing():
        repaired = True
        stream = torch.cuda.current_stream()
        if has_cuda_bindings():
            from cuda.bindings import runtime as rt

            with contextlib.suppress(Exception):
                result = rt.cudaStreamEndCapture(stream.cuda_stream)
                if int(result[0]) == 0 and result[1] is not None:
                    rt.cudaGraphDestroy(result[1])
    if torch.cuda.current_stream() != torch.cuda.default_stream():
        repaired = True
        torch.cuda.set_stream(torch.cuda.default_stream())
    _clear_cuda_error()
    settle_rng(torch)
    return repaired


class CaptureSession:
    """One capture on one stream: begin, end, or abandon after a failure. Shared by every front end.

    Owns the stream switch, so the caller's current stream is restored whatever happens.
    """

    def __init__(self, torch: Any, *, stream: Any = None, pool: Any = None, capture_error_mode: str = "global",
                 prefer_filename: str | None = None):
        self.torch = torch
        self.stream = _resolve_stream(torch, stream)
        self.pool = pool.pool() if isinstance(pool, CapturedGraph) else pool
        self.capture_error_mode = capture_error_mode
        self.prefer_filename = prefer_filename
        self.keep_graph = "keep_graph" in inspect.signature(torch.cuda.CUDAGraph).parameters
        self.graph = torch.cuda.CUDAGraph(keep_graph=True) if self.keep_graph else torch.cuda.CUDAGraph()
        self._stream_ctx: Any = None
        self.capture_ms = 0.0
        self.instantiate_ms = 0.0
        self.memory_bytes = 0

    def begin(self) -> None:
        torch = self.torch
        if torch.cuda.is_current_stream_capturing():
            raise GraphlabError("a capture is already running on this stream: finish it (or call "
                                "graphlab.gpu.capture.recover()) before starting another")
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        self._reserved_before = torch.cuda.memory_reserved()
        self._stream_ctx = torch.cuda.stream(self.stream)
        self._stream_ctx.__enter__()
        self._t0 = time.perf_counter()
        try:
            self.graph.capture_begin(pool=self.pool, capture_error_mode=self.capture_error_mode)
        except Exception as exc:
            raise self.abandon(exc) from None

    def _exit_stream(self) -> None:
        if self._stream_ctx is not None:
            ctx, self._stream_ctx = self._stream_ctx, None
            ctx.__exit__(None, None, None)

    def end(self) -> None:
        """Finish the capture; raise CaptureError if it failed or recorded nothing."""
        torch = self.torch
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                self.graph.capture_end()
        except Exception as exc:
            self._end_allocate_to_pool()
            raise self.abandon(exc) from None
        self.capture_ms = (time.perf_counter() - self._t0) * 1e3
        self._exit_stream()
        empty = False
        for w in caught:
            if "CUDA Graph is empty" in str(w.message):
                empty = True
            elif "debug_dump" not in str(w.message):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        handle = raw_graph_handle(self.graph)
        if handle is not None and has_cuda_bindings():
            from graphlab.gpu.census import node_count

            empty = node_count(handle) == 0
        if empty:
            with contextlib.suppress(Exception):
                self.graph.reset()
            raise empty_capture_error()
        t1 = time.perf_counter()
        if self.keep_graph and hasattr(self.graph, "instantiate"):
            self.graph.instantiate()
        torch.cuda.synchronize()
        self.instantiate_ms = (time.perf_counter() - t1) * 1e3
        self.memory_bytes = max(0, torch.cuda.memory_reserved() - self._reserved_before)

    def abandon(self, exc: BaseException) -> CaptureError:
        """End a failed capture, restore the stream and error state; return the diagnosed CaptureError."""
        torch = self.torch
        if self._stream_ctx is not None and torch.cuda.is_current_stream_capturing():
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # "The CUDA Graph is empty": expected after a failure
                    self.graph.capture_end()
            except Exception:
                self._end_allocate_to_pool()
        if self._stream_ctx is not None and torch.cuda.is_current_stream_capturing():
            recover(torch)
        self._exit_stream()
        _clear_cuda_error()
        with contextlib.suppress(Exception):
            self.graph.reset()
        with contextlib.suppress(Exception):
            torch.cuda.synchronize()
        settle_rng(torch, None if self.stream == torch.cuda.default_stream() else self.stream)
        return capture_error(diagnose(exc, self.prefer_filename), exc)

    def _end_allocate_to_pool(self) -> None:
        """torch's capture_end raises before it tells the caching allocator that the capture is over;
        tell it here (an error just means torch already did)."""
        with contextlib.suppress(Exception):
            self.torch._C._cuda_endAllocateToPool(self.torch.cuda.current_device(), self.graph.pool())

    def result(self, **fields: Any) -> CapturedGraph:
        return CapturedGraph(
            torch_graph=self.graph, capture_ms=self.capture_ms, instantiate_ms=self.instantiate_ms,
            memory_bytes=self.memory_bytes, **fields,
        )


def warm_up(torch: Any, run: Callable[[], Any], times: int, stream: Any) -> None:
    """Run `run()` `times` times on `stream`, ordered after and before the current stream (docs' pattern)."""
    if times <= 0:
        return
    current = torch.cuda.current_stream()
    stream.wait_stream(current)
    with torch.cuda.stream(stream):
        for _ in range(times):
            run()
    current.wait_stream(stream)


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
    return session.result(static_inputs=static_inputs, static_outputs=outputs, fn=fn, grad_mode=grad_mode,
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
    cg._complete(session.result(static_inputs=(), static_outputs=outputs, fn=None, grad_mode=grad_mode,
                                name=name, dot_flags=dot_flags))


def _assigned_names(tree: ast.AST) -> list[str]:
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id not in names:
            names.append(node.id)
    return names


def _loaded_names(tree: ast.AST) -> list[str]:
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in names:
            names.append(node.id)
    return names


def capture_cell(code: str, namespace: dict[str, Any], *, warmup: int = 3, name: str = "cell",
                 dot_flags: int | str = DEFAULT_DOT_FLAGS, grad_mode: str = "no_grad", stream: Any = None,
                 pool: Any = None, capture_error_mode: str = "global", filename: str | None = None) -> CapturedGraph:
    """Capture a cell of code run in `namespace` (what `%%cudagraph` does).

    CUDA tensors the code reads from `namespace` are the static inputs (`cg.inputs`, by name); names it
    binds to CUDA tensors are the static outputs (`cg.outputs`), written back to `namespace`.
    Warm-ups run in a copy of the namespace, so the cell's side effects happen once, under capture.
    """
    torch = require_cuda("%%cudagraph")
    if grad_mode not in GRAD_MODES:
        raise GraphlabError(f"grad_mode must be one of {', '.join(GRAD_MODES)}, got {grad_mode!r}")
    filename = filename or f"<cudagraph cell {name}>"
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    tree = ast.parse(code, filename)
    compiled = compile(tree, filename, "exec")
    assigned = _assigned_names(tree)
    input_names = [n for n in _loaded_names(tree)
                   if isinstance(namespace.get(n), torch.Tensor) and namespace[n].is_cuda]
    snapshot = dict(namespace)

    def run_cell(*inputs: Any) -> dict[str, Any]:
        scope = dict(snapshot)
        scope.update(zip(input_names, inputs))
        exec(compiled, scope)
        return {k: scope[k] for k in assigned if k in scope and isinstance(scope[k], torch.Tensor) and scope[k].is_cuda}

    session = CaptureSession(torch, stream=stream, pool=pool, capture_error_mode=capture_error_mode,
                             prefer_filename=filename)
    static_inputs = tuple(namespace[n] for n in input_names)
    scope = dict(namespace)
    with grad_context(torch, grad_mode):
        warm_up(torch, lambda: exec(compiled, dict(namespace)), warmup, session.stream)
        session.begin()
        try:
            exec(compiled, scope)
        except Exception as exc:
            raise session.abandon(exc) from None
        session.end()
    for key in assigned:
        if key in scope:
            namespace[key] = scope[key]
    outputs = {k: scope[k] for k in assigned
               if k in scope and isinstance(scope[k], torch.Tensor) and scope[k].is_cuda}
    return session.result(static_inputs=static_inputs, static_outputs=outputs, fn=run_cell, grad_mode=grad_mode,
                          name=name, dot_flags=dot_flags, input_names=tuple(input_names), source=code)


__all__ = ["CapturedGraph", "CaptureError", "CaptureSession", "capture", "capture_cell", "capturing", "recover",
           "settle_rng",
           "side_stream", "warm_up"]
