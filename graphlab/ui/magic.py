"""The `%%cudagraph` cell magic: capture a notebook cell into a CUDA graph and show it.

    %load_ext graphlab

    %%cudagraph step --warmup-calls 3
    y = model(x)

afterwards `step` is a `CapturedGraph`: `x.copy_(new_x); step.replay()` refreshes `y`, and
`step(x=new_x)` does both. The cell runs `--warmup-calls` times on a side stream (in a copy of the
namespace), then once under capture; the tensors it binds to names are its static outputs.
Without a GPU the magic raises one `GPUUnavailableError` that says how to explore a recording; in
recorded mode (`gl.set_mode`) it runs the cell eagerly and shows the graph a GPU recorded for that cell.
"""
from __future__ import annotations

from typing import Any

from IPython.core.magic import Magics, cell_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from graphlab.capture.options import DEFAULT_WARMUP_CALLS
from graphlab.errors import BadInputError


def _show(cg: Any) -> None:
    """Display the captured graph: a Graphviz drawing when available, else the text summary."""
    from IPython.display import display

    try:
        from graphlab.viz.drawing import render

        drawing = render(cg.graph)
    except Exception:  # renderer missing (GPU machine), graphviz absent, or not parseable: fall back
        drawing = None
    display(cg)
    if drawing is not None:
        display(drawing)


@magics_class
class CudaGraphMagics(Magics):
    """Holds the `%%cudagraph` magic; registered by `%load_ext graphlab`."""

    @no_var_expand
    @magic_arguments()
    @argument("name", help="variable that receives the CapturedGraph")
    @argument("--warmup-calls", type=int, default=DEFAULT_WARMUP_CALLS,
              help=f"eager runs on the side stream before capture (default {DEFAULT_WARMUP_CALLS})")
    @argument("--no-show", action="store_true", help="do not display the graph")
    @argument("--flags", default=None,
              help="cudaGraphDebugDotFlags: an int or names joined by '|' (default 1, verbose)")
    @argument("--grad-mode", default="no_grad", choices=("no_grad", "inference_mode", "enabled"),
              help="autograd mode for warm-up and capture (default no_grad)")
    @argument("--pool", default=None, help="name of a CapturedGraph whose memory pool this capture shares")
    @argument("--mode", default="global", choices=("global", "thread_local", "relaxed"),
              help="capture_error_mode (default global)")
    @cell_magic
    def cudagraph(self, line: str, cell: str) -> None:
        """Capture this cell into a CUDA graph stored under NAME; show the graph unless --no-show."""
        args = parse_cudagraph_args(line)
        # live: capture on this GPU; recorded mode: the cell runs eagerly and the graph is the one a GPU recorded
        from graphlab.capture.cell import capture_cell
        from graphlab.capture.options import CaptureOptions
        from graphlab.graph.export import DEFAULT_DOT_FLAGS, parse_flags

        namespace = self.shell.user_ns
        pool = None
        if args.pool is not None:
            pool = namespace.get(args.pool)
            if pool is None:
                raise BadInputError(f"--pool {args.pool}: no such variable; name an earlier %%cudagraph result")
        options = CaptureOptions(warmup_calls=args.warmup_calls, grad_mode=args.grad_mode, pool=pool,
                                 capture_error_mode=args.mode,
                                 dot_flags=DEFAULT_DOT_FLAGS if args.flags is None else parse_flags(args.flags))
        cg = capture_cell(cell, namespace, options, name=args.name, filename=f"<cudagraph cell {args.name}>")
        namespace[args.name] = cg
        if not args.no_show:
            _show(cg)


def parse_cudagraph_args(line: str) -> Any:
    """Parse the magic's line (`NAME [--warmup-calls N] [--no-show] [--flags F] ...`); BadInputError if malformed."""
    try:
        args = parse_argstring(CudaGraphMagics.cudagraph, line)
    except Exception as exc:  # UsageError from argparse: keep one clear line
        raise BadInputError(f"%%cudagraph {line.strip()!r}: {exc}. Usage: %%cudagraph NAME [--warmup-calls N] "
                            "[--no-show] [--flags F]") from None
    if not args.name.isidentifier():
        raise BadInputError(f"%%cudagraph: {args.name!r} is not a valid Python name for the captured graph")
    if args.warmup_calls < 0:
        raise BadInputError(f"%%cudagraph: --warmup-calls must be 0 or more, got {args.warmup_calls}")
    if args.flags is not None:
        from graphlab.graph.export import parse_flags

        parse_flags(args.flags)
    return args


def load_ipython_extension(ipython: Any) -> None:
    """Register `%%cudagraph` (called by `%load_ext graphlab`)."""
    ipython.register_magics(CudaGraphMagics)


__all__ = ["CudaGraphMagics", "load_ipython_extension", "parse_cudagraph_args"]
