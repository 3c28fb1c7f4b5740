"""Who captured a CUDA graph: the calling library and the user's line, read from the stack.

`gl.watch` calls `origin(frames)` at each `capture_begin`. The frames are walked from the innermost
out. torch's own plumbing (`torch.cuda.graph.__enter__`) and the standard library are skipped; the
first frame that says who is capturing names the library:

    torch/_inductor/cudagraph_trees.py          -> "torch.compile (CUDAGraph Trees)"
    other torch/_inductor, _dynamo, _functorch  -> "torch.compile"
    code inductor or torch.fx generated         -> "torch.compile" (its cache dir, "<eval_with_key>")
    torch/cuda/graphs.py make_graphed_callables -> "make_graphed_callables"
    graphlab's own capture code                 -> "graphlab"
    another installed package (site-packages)   -> its name, e.g. "vllm"
    user code after torch.cuda.graph.__enter__  -> "torch.cuda.graph"
    user code calling capture_begin directly    -> "CUDAGraph.capture_begin"

The user's line is the innermost frame outside torch, graphlab, installed packages and the standard
library (graphlab's worked examples, `watch_examples.py`, count as user code: they stand in for it).

    >>> frames = [Frame("/x/torch/cuda/graphs.py", "__enter__", 480),
    ...           Frame("/home/me/serve.py", "main", 12)]
    >>> origin(frames, Roots(torch="/x/torch", graphlab="/y/graphlab")).library
    'torch.cuda.graph'

Input shapes and the role of a graph (forward/backward, a CUDAGraph Trees recording) come from the
locals of the library's frame, where they are knowable (`shapes_and_role`).
Pure (in `graphlab.watch.PURE`): the standard library only, tested on CPU with fake frames.
"""
from __future__ import annotations

import functools
import linecache
import os
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

COMPILE_TREES = "torch.compile (CUDAGraph Trees)"
COMPILE = "torch.compile"
MAKE_GRAPHED_CALLABLES = "make_graphed_callables"
TORCH_CUDA_GRAPH = "torch.cuda.graph"
CAPTURE_BEGIN = "CUDAGraph.capture_begin"
GRAPHLAB = "graphlab"

#: graphlab files that play the user's part (the worked examples), and the watch's own files (skipped)
USER_MODULES = ("studies/watch_examples.py",)
WATCH_MODULES = ("watch/api.py", "watch/patch.py", "watch/frames.py")
_COMPILE_DIRS = ("_inductor/", "_dynamo/", "_functorch/", "compiler/", "_higher_order_ops/")
GENERATED = "_inductor/generated"  # the detail of frames in code torch generated (see _is_generated)
_SITE_DIRS = ("site-packages", "dist-packages")


@dataclass(frozen=True)
class Frame:
    """One stack frame, as much of it as attribution needs (a fake one in tests).

    `local_values` returns the frame's locals on demand (reading them is not free, so only the
    frames of known libraries are asked).
    """

    filename: str
    function: str
    lineno: int
    local_values: Callable[[], Mapping[str, Any]] = field(default=lambda: {}, repr=False, compare=False)


@dataclass(frozen=True)
class Roots:
    """Where torch, graphlab and the standard library live, to tell the frames apart."""

    torch: str
    graphlab: str
    stdlib: tuple[str, ...] = ()
    cwd: str = ""
    inductor_cache: str = ""

    @classmethod
    def here(cls) -> Roots:
        """The roots of this process (torch found without importing it), for the current directory."""
        return _roots_for(os.getcwd())


@functools.lru_cache(maxsize=8)
def _roots_for(cwd: str) -> Roots:
    import importlib.util

    spec = importlib.util.find_spec("torch")
    torch_dir = os.path.dirname(spec.origin) if spec is not None and spec.origin else "/nonexistent/torch"
    graphlab_dir = str(Path(__file__).resolve().parents[1])
    paths = sysconfig.get_paths()
    stdlib = tuple(sorted({os.path.realpath(paths[k]) for k in ("stdlib", "platstdlib") if k in paths}))
    cache = os.environ.get("TORCHINDUCTOR_CACHE_DIR", "")
    return Roots(torch=os.path.realpath(torch_dir), graphlab=graphlab_dir, stdlib=stdlib, cwd=cwd,
                 inductor_cache=os.path.realpath(cache) if cache else "")


@dataclass(frozen=True)
class Origin:
    """Who captured a graph: the library and the user's line (None where every frame was library code)."""

    library: str
    user_file: str | None = None
    user_line: int | None = None
    user_function: str | None = None
    user_code: str | None = None

    @property
    def where(self) -> str:
        """ "serve.py:12" or "" """
        return f"{self.user_file}:{self.user_line}" if self.user_file else ""


def _under(path: str, root: str) -> str | None:
    """`path` relative to `root` (posix), or None when it is not inside."""
    root = root.rstrip("/\\")
    if root and (path == root or path.startswith(root + os.sep) or path.startswith(root + "/")):
        return path[len(root) + 1:].replace("\\", "/")
    return None


def _is_generated(path: str, roots: Roots) -> bool:
    """Code torch wrote and runs: inductor's output modules (its cache dir, "torchinductor_<user>" by
    default) and torch.fx's generated forwards ("<eval_with_key>.N")."""
    if path.startswith("<eval_with_key>"):
        return True
    if roots.inductor_cache and _under(path, roots.inductor_cache) is not None:
        return True
    return any(part.startswith("torchinductor_") for part in path.replace("\\", "/").split("/")[:-1])


@functools.lru_cache(maxsize=4096)
def _real(filename: str) -> str:
    if filename.startswith("<") or not os.path.exists(filename):
        return filename
    return os.path.realpath(filename)


def classify(filename: str, roots: Roots) -> tuple[str, str]:
    """(kind, detail) of a frame's file: kind is torch, graphlab, watch, user, site or stdlib."""
    path = _real(filename)
    if path.startswith("<frozen"):
        return "stdlib", path
    rel = _under(path, roots.torch)
    if rel is not None:
        return "torch", rel
    if _is_generated(path, roots):
        return "torch", GENERATED
    rel = _under(path, roots.graphlab)
    if rel is not None:
        if rel in WATCH_MODULES:
            return "watch", rel
        return ("user", rel) if rel in USER_MODULES else ("graphlab", rel)
    parts = path.replace("\\", "/").split("/")
    for site in _SITE_DIRS:
        if site in parts:
            i = len(parts) - 1 - parts[::-1].index(site)
            if i + 1 < len(parts):
                return "site", parts[i + 1].removesuffix(".py")
    if any(_under(path, root) is not None for root in roots.stdlib):
        return "stdlib", path
    return "user", path


def display_path(filename: str, cwd: str) -> str:
    """A path safe to store: relative to `cwd` when inside it, else the file name only."""
    rel = _under(filename, cwd.rstrip("/")) if cwd else None
    return rel if rel is not None else filename.replace("\\", "/").rsplit("/", 1)[-1]


def origin(frames: Iterable[Frame], roots: Roots | None = None) -> Origin:
    """The library that captured and the user's line, from frames innermost first."""
    roots = roots or Roots.here()
    library: str | None = None
    fallback: str | None = None
    for frame in frames:
        kind, detail = classify(frame.filename, roots)
        if kind in ("watch", "stdlib"):
            continue
        if kind == "torch":
            if library is None:
                if detail == "cuda/graphs.py" and frame.function == "make_graphed_callables":
                    library = MAKE_GRAPHED_CALLABLES
                elif detail == "cuda/graphs.py":
                    fallback = fallback or TORCH_CUDA_GRAPH
                elif detail == "_inductor/cudagraph_trees.py":
                    library = COMPILE_TREES
                elif detail.startswith(_COMPILE_DIRS):
                    library = COMPILE
            continue
        if kind in ("graphlab", "site"):
            library = library or (GRAPHLAB if kind == "graphlab" else detail)
            continue
        # user code: the first one is the user's line
        file = display_path(frame.filename, roots.cwd) if not frame.filename.startswith("<") else frame.filename
        code = linecache.getline(frame.filename, frame.lineno).strip() or None
        return Origin(library or fallback or CAPTURE_BEGIN, file, frame.lineno, frame.function, code)
    return Origin(library or fallback or CAPTURE_BEGIN)


def stack_frames(frame: Any, limit: int = 200) -> list[Frame]:
    """`Frame`s from a live frame outwards (at most `limit`)."""
    out: list[Frame] = []
    while frame is not None and len(out) < limit:
        out.append(Frame(frame.f_code.co_filename, frame.f_code.co_name, frame.f_lineno,
                         (lambda f=frame: f.f_locals)))
        frame = frame.f_back
    return out


# -- input shapes and role, from the library's own frames ---------------------------------------------------

def _shape(value: Any) -> list[int] | None:
    shape = getattr(value, "shape", None)
    if shape is None or not hasattr(value, "dtype"):
        return None
    try:
        return [int(d) for d in shape]
    except (TypeError, ValueError):
        return None


def _shapes(values: Any, skip: Iterable[int] = ()) -> tuple[list[list[int]], list[int]]:
    """Tensor shapes and int scalars among `values`, leaving out the indices in `skip`."""
    shapes: list[list[int]] = []
    scalars: list[int] = []
    skipped = set(skip)
    for i, value in enumerate(values if isinstance(values, (list, tuple)) else ()):
        if i in skipped:
            continue
        shape = _shape(value)
        if shape is not None:
            shapes.append(shape)
        elif isinstance(value, int) and not isinstance(value, bool):
            scalars.append(int(value))
    return shapes, scalars


def _trees_details(local: Mapping[str, Any], outer: Mapping[str, Any]
                   ) -> tuple[list[list[int]] | None, str, dict[str, Any]]:
    """From `CUDAGraphNode._record`'s locals, and its caller `CUDAGraphNode.__init__`'s (`outer`)."""
    node = local.get("self")
    static = list(getattr(getattr(node, "wrapped_function", None), "static_input_idxs", ()) or ())
    shapes, scalars = _shapes(local.get("inputs"), static)
    details: dict[str, Any] = {"static_inputs": len(static)}
    if scalars:
        details["int_inputs"] = scalars
    tree_id = getattr(getattr(node, "id", None), "id", None)
    if isinstance(tree_id, int):
        details["tree_graph_id"] = tree_id
    compile_id = getattr(node, "compile_id", None) or outer.get("compile_id")
    if compile_id is not None:
        details["compile_id"] = str(compile_id)
    return shapes, "recording", details


def shapes_and_role(frames: Iterable[Frame], graph: Any, roots: Roots | None = None
                    ) -> tuple[list[list[int]] | None, str | None, dict[str, Any]]:
    """(input shapes, role, details) of the graph being captured, where the library's frame shows them.

    - CUDAGraph Trees (`CUDAGraphNode._record`): the shapes of the non-static inputs (weights left
      out), role "recording", details tree_graph_id, compile_id, static_inputs, int_inputs.
      Its manager's empty graph (made only to keep the memory pool alive) gets role "pool keeper".
    - make_graphed_callables: role "forward" (shapes of the sample args) or "backward" (shapes of
      the outputs whose gradients it takes).
    Anything else: (None, None, {}): a `torch.cuda.graph` block can read any tensor.
    """
    roots = roots or Roots.here()
    frames = list(frames)
    for i, frame in enumerate(frames):
        kind, detail = classify(frame.filename, roots)
        if kind != "torch":
            if kind in ("user", "graphlab", "site"):
                break
            continue
        try:
            if detail == "_inductor/cudagraph_trees.py" and frame.function == "_record":
                outer = frames[i + 1] if i + 1 < len(frames) else None
                outer_locals = outer.local_values() if outer is not None and outer.function == "__init__" else {}
                return _trees_details(frame.local_values(), outer_locals)
            if detail == "_inductor/cudagraph_trees.py" and frame.function == "__init__":
                owner = type(frame.local_values().get("self")).__name__
                if owner.endswith("TreeManager"):
                    return None, "pool keeper", {}
            if detail == "cuda/graphs.py" and frame.function == "make_graphed_callables":
                local = frame.local_values()
                if local.get("bwd_graph") is graph:
                    return _shapes(local.get("static_outputs"))[0], "backward", {}
                if local.get("fwd_graph") is graph:
                    return _shapes(local.get("args"))[0], "forward", {}
                return None, None, {}
        except Exception:  # never let bookkeeping break the caller's capture
            return None, None, {}
    return None, None, {}


__all__ = ["CAPTURE_BEGIN", "COMPILE", "COMPILE_TREES", "Frame", "GENERATED", "GRAPHLAB", "MAKE_GRAPHED_CALLABLES", "Origin",
           "Roots", "TORCH_CUDA_GRAPH", "classify", "display_path", "origin", "shapes_and_role", "stack_frames"]
