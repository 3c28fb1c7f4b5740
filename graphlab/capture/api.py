"""Capture PyTorch code into a CUDA graph: from a function or a `with` block (cells: `cell_capture`).

    >>> import torch, graphlab as gl
    >>> model = torch.nn.Linear(256, 256).cuda().eval()
    >>> x = torch.randn(8, 256, device="cuda")
    >>> cg = gl.capture(model, x)          # warm-up on a side stream, then capture
    >>> y = cg(torch.randn(8, 256, device="cuda"))   # copy in, replay, read the static output
    >>> cg.verify()                        # replay vs eager on fresh random inputs
    >>> cg.graph.count_by_kind()           # the parsed DOT: {"kernel": 1}

Both front ends are thin: the capture itself is `graphlab.capture.engine.CaptureEngine` (warm-up on the
device's side stream, `keep_graph=True` where torch has it so the graph can be dumped, capture cost
measured on this very graph, one `CaptureError` naming cause, line and fix on failure).
In recorded mode (`gl.set_mode`) `capture` answers with the graph a GPU recorded (`capture/recorded.py`).
"""
from __future__ import annotations

import contextlib
import sys
from typing import Any, Callable, Iterator

import torch

from graphlab.capture.captured import CapturedGraph
from graphlab.capture.engine import CaptureEngine
from graphlab.capture.input_plan import model_refused
from graphlab.capture.options import DEFAULT_WARMUP_CALLS, CaptureOptions
from graphlab.capture.recorded import recorded_capture
from graphlab.capture.tensors import GRAD_MODES, flatten, grad_context, is_tensor, map_tensors
from graphlab.env import require_cuda
from graphlab.errors import BadInputError, CaptureError, GraphlabError
from graphlab.graph.export import DEFAULT_DOT_FLAGS
from graphlab.mode import stand_in


def check_grad_mode(grad_mode: str) -> None:
    if grad_mode not in GRAD_MODES:
        raise BadInputError(f"grad_mode must be one of {', '.join(GRAD_MODES)}, got {grad_mode!r}")


def check_capture_inputs(fn: Any, example_inputs: Any, device: Any, caller: str = "gl.capture") -> None:
    """What a capture is given, checked once before it starts: a callable, a CUDA device that exists here, and
    tensor inputs on it. Each problem is one BadInputError naming the input, what a capture needs and the fix."""
    if fn is not None and not callable(fn):
        raise BadInputError(f"{caller} takes a function or nn.Module first, got {type(fn).__name__}: "
                            f"{caller}(model, x)")
    wanted = None
    if device is not None:
        try:
            wanted = torch.device(device)
        except (RuntimeError, TypeError, ValueError):
            raise BadInputError(f"{caller}: device {device!r} is not a device torch knows: use 'cuda' or 'cuda:N'") from None
        if wanted.type != "cuda":
            raise BadInputError(f"{caller} records CUDA graphs on a GPU, not on {str(wanted)!r}: use device='cuda' "
                                "(on a CPU, gl.GraphCache(model, backend=\"eager\") runs the same bookkeeping)")
        count = torch.cuda.device_count()
        if (wanted.index or 0) >= count:
            raise BadInputError(f"{caller}: device {str(wanted)!r} does not exist here "
                                f"({f'cuda:0 to cuda:{count - 1}' if count else 'no CUDA GPU'})")
    cuda_index = None
    for path, leaf in flatten(example_inputs):
        if not is_tensor(leaf):
            continue
        if leaf.device.type == "cpu" and leaf.is_pinned():
            continue  # pinned host memory: a graph may copy from it (a memcpy node)
        if leaf.device.type != "cuda":
            raise BadInputError(f"{caller}: input {path} is on {leaf.device}, but a CUDA graph reads GPU memory: move "
                                "it with .to('cuda') first, or pin it (.pin_memory()) for a copy inside the graph (on a CPU, gl.GraphCache(model, backend=\"eager\") runs "
                                "the same bookkeeping)")
        if wanted is not None and wanted.index is not None and leaf.device.index != wanted.index:
            raise BadInputError(f"{caller}: input {path} is on {leaf.device}, but device={str(wanted)!r} was asked: "
                                f"move it with .to('{wanted}') (a graph never copies across devices)")
        if cuda_index is not None and leaf.device.index != cuda_index:
            raise BadInputError(f"{caller}: input {path} is on {leaf.device}, another input on cuda:{cuda_index}: "
                                "one graph lives on one GPU; move them to one device")
        cuda_index = leaf.device.index


def inputs_device(example_inputs: Any, device: Any) -> Any:
    """The device to capture on: `device` if given, else the first CUDA tensor's, else the current one."""
    if device is not None:
        return device
    for _, leaf in flatten(example_inputs):
        if is_tensor(leaf) and leaf.is_cuda:
            return leaf.device
    return None


def finish(engine: CaptureEngine, *, static_inputs: tuple[Any, ...], static_outputs: Any, fn: Callable[..., Any],
           options: CaptureOptions, name: str, input_names: tuple[str, ...] = ()) -> CapturedGraph:
    """The `CapturedGraph` a finished engine made."""
    return CapturedGraph(torch_graph=engine.graph, cost=engine.cost, device_index=engine.device_index,
                         static_inputs=static_inputs, static_outputs=static_outputs, fn=fn, name=name,
                         options=options, input_names=input_names)


def capture(fn: Callable[..., Any], *example_inputs: Any, warmup_calls: int = DEFAULT_WARMUP_CALLS, pool: Any = None,
            dot_flags: int | str = DEFAULT_DOT_FLAGS, name: str | None = None, grad_mode: str = "no_grad",
            stream: Any = None, capture_error_mode: str = "global", device: Any = None) -> CapturedGraph:
    """Capture `fn(*example_inputs)` into a CUDA graph and return it, ready to replay.

    Args:
        fn: an `nn.Module` or any function of tensors (inputs and outputs may nest: tuples, lists, dicts,
            NamedTuples, dataclasses, Hugging Face `ModelOutput`s; `capture/tensors.py` lists them).
        example_inputs: inputs of the shapes and dtypes the graph will always see; copied into the
            graph's static input buffers (your tensors are not aliased).
        warmup_calls: eager runs on the side stream before capture (cuBLAS handles, lazy init). 0 shows why
            warm-up matters.
        pool: a memory pool to share: another `CapturedGraph`, or `torch.cuda.graph_pool_handle()`.
        dot_flags: `cudaGraphDebugDotFlags` for `.dot()` and `.graph` (int or names; default Verbose).
        name: the graph's name (default: the function's).
        grad_mode: "no_grad" (default), "inference_mode" or "enabled".
        stream: capture stream (default: graphlab's side stream; "default" tries the default stream).
        capture_error_mode: "global" (default), "thread_local" or "relaxed".
        device: the CUDA device to capture on (default: the inputs' device, else the current one).

    The settings but `name` make one `CaptureOptions`; `capture_graph(fn, inputs, options)` takes that directly.

    In recorded mode the graph a GPU recorded for this zoo model and batch size (a `RecordedGraph`).

    Raises:
        GPUUnavailableError: no CUDA GPU here.
        CaptureError: capture failed; the message names the cause, your line and the fix.
    """
    options = CaptureOptions(warmup_calls=warmup_calls, grad_mode=grad_mode, pool=pool, stream=stream,
                             capture_error_mode=capture_error_mode, device=device, dot_flags=dot_flags)
    return capture_graph(fn, example_inputs, options, name=name)


@stand_in(recorded_capture)
def capture_graph(fn: Callable[..., Any], example_inputs: tuple[Any, ...], options: CaptureOptions = CaptureOptions(),
                  *, name: str | None = None) -> CapturedGraph:
    """`gl.capture` with its settings as one `CaptureOptions` (what the graph cache and the studies call)."""
    require_cuda("gl.capture")
    check_grad_mode(options.grad_mode)
    check_capture_inputs(fn, example_inputs, options.device)
    engine = CaptureEngine(device=inputs_device(example_inputs, options.device), stream=options.stream,
                           pool=options.pool, capture_error_mode=options.capture_error_mode)
    with torch.cuda.device(engine.device_index), torch.inference_mode(False):
        # normal tensors even under inference_mode, so later calls may copy into them from any mode
        static_inputs = map_tensors(lambda t: t.detach().clone(), example_inputs)
    label = name or getattr(fn, "__name__", None) or type(fn).__name__
    with grad_context(options.grad_mode):
        try:
            outputs = engine.run(lambda: fn(*static_inputs), options.warmup_calls)
        except GraphlabError:  # a failed capture: the engine's CaptureError names cause, line and fix
            raise
        except (RuntimeError, TypeError, ValueError, IndexError) as exc:  # the model refused them in warm-up
            raise model_refused(fn, example_inputs, exc, where=f"gl.capture {label!r}",
                                what="the warm-up (an eager run)") from exc
    return finish(engine, static_inputs=static_inputs, static_outputs=outputs, fn=fn, options=options, name=label)


def prime_libraries(stream: Any) -> None:
    """Create cuBLAS/cuBLASLt handles and workspaces for `stream` with a tiny matmul (a `with` block
    runs once, so it cannot be warmed up)."""
    with torch.cuda.stream(stream), torch.no_grad():
        a = torch.ones(8, 8, device=stream.device)
        torch.nn.functional.linear(a, a, a[0])
        torch.mm(a, a)
    torch.cuda.current_stream().wait_stream(stream)


def _tensor_names(namespace: dict[str, Any]) -> dict[str, int]:
    return {k: id(v) for k, v in namespace.items() if isinstance(v, torch.Tensor)}


@contextlib.contextmanager
def capturing(*, pool: Any = None, name: str = "block", dot_flags: int | str = DEFAULT_DOT_FLAGS,
              grad_mode: str = "no_grad", prime: bool = True, capture_error_mode: str = "global",
              stream: Any = None, device: Any = None) -> Iterator[CapturedGraph]:
    """Capture the code of a `with` block over tensors prepared outside it.

        >>> with gl.capturing() as cg:
        ...     y = model(x)
        >>> x.copy_(new_x); cg.replay()    # y now holds model(new_x)

    The block runs once, under capture (no warm-up: run the code once eagerly first if it uses
    libraries that initialise lazily; `prime=True` pre-creates the cuBLAS handles). Tensors the block
    binds to names are the graph's outputs (`cg.outputs`). `cg.verify()` is not available: use
    `gl.capture(fn, ...)` or `%%cudagraph` for that. Inside the block `cg` is still being captured: using it
    there raises `BadInputError`.
    """
    require_cuda("gl.capturing")
    check_grad_mode(grad_mode)
    check_capture_inputs(None, (), device, "gl.capturing")
    frame = sys._getframe(2)  # the caller's frame (contextmanager adds one level)
    before = _tensor_names(dict(frame.f_locals))
    engine = CaptureEngine(device=device, stream=stream, pool=pool, capture_error_mode=capture_error_mode,
                           prefer_filename=frame.f_code.co_filename)
    options = CaptureOptions(warmup_calls=0, grad_mode=grad_mode, pool=pool, stream=stream,
                             capture_error_mode=capture_error_mode, device=device, dot_flags=dot_flags)
    cg = CapturedGraph.pending(name, device_index=engine.device_index, options=options)
    if prime:
        with torch.cuda.device(engine.device_index):
            prime_libraries(engine.stream)
    with grad_context(grad_mode), engine.capturing():
        yield cg
    after = dict(frame.f_locals)
    outputs = {k: v for k, v in after.items()
               if isinstance(v, torch.Tensor) and v.is_cuda and before.get(k) != id(v)}
    cg.complete(engine.graph, engine.cost, outputs)


__all__ = ["CapturedGraph", "CaptureError", "CaptureOptions", "capture", "capture_graph", "capturing", "check_capture_inputs", "check_grad_mode", "finish", "inputs_device",
           "prime_libraries"]
