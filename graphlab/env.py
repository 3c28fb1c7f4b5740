"""Machine facts: is there a CUDA GPU, which driver, which cuda-bindings, which graph features torch has.

`gl.about()` (`graphlab/about.py`) gathers these with each feature's own support check into one report.

Imports torch only inside functions, and survives its absence. Features are detected, never inferred
from version strings.
"""
from __future__ import annotations

import importlib
import importlib.util
import inspect
import shutil
import subprocess
from typing import Any

from graphlab.errors import GPUUnavailableError

RECORDED_HINT = (
    "To work from recordings made on a GPU instead, call gl.set_mode('auto') first (as every notebook does: live "
    "with a GPU, recorded without), or open a recording directly: gl.list_recordings(), "
    "gl.load_recording('mlp').graph()."
)
#: the hint in recorded mode: the learner already asked for recordings, and none holds this
RECORDED_MODE_HINT = (
    "Recorded mode is on, and no recording holds this: it needs a CUDA GPU. Without one you can still browse "
    "every recorded batch size of every zoo model (gl.recorded_models()), estimate what your own model would "
    "launch (gl.estimate_launches(model, *inputs)), or open any recording (gl.list_recordings())."
)
#: the hint on the command line, where Python advice does not apply
CLI_HINT = (
    "Run this command on a machine with a CUDA GPU; here, `graphlab about` says what this machine has and "
    "`graphlab tour` runs the notebooks from the recordings."
)

#: who reads the next error: a notebook or script, or graphlab's command line (set by graphlab.cli)
_voice = {"cli": False}
#: whether recorded mode is on: graphlab.mode (the one place that decides) registers its answer here
_recorded_probe: list[Any] = []


def speak_as(*, cli: bool) -> None:
    """Tell the error hints who reads them: graphlab's command line (`cli=True`) or Python code."""
    _voice["cli"] = cli


def error_line(prog: str, exc: BaseException) -> str:
    """The one line a command line prints for an error before it exits 2: "PROG: error: <message on one line>"
    (a file error names its file)."""
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"{prog}: error: {exc.filename}: {exc.strerror}"
    return f"{prog}: error: {' '.join(str(exc).split()) or type(exc).__name__}"


def register_recorded_probe(probe: Any) -> None:
    """graphlab.mode hands over its `is_recorded` (env cannot import mode: mode imports env)."""
    _recorded_probe[:] = [probe]


def advice(python: str, cli: str) -> str:
    """The advice for the reader at hand: `cli` on graphlab's command line (`--device cpu`), else `python`
    (`device='cpu'`)."""
    return cli if _voice["cli"] else python


def gpu_hint() -> str:
    """What a `GPUUnavailableError` suggests: flags on the command line, recordings in Python, and, once recorded
    mode is on, what it can still offer (not a call to `gl.set_mode("recorded")`, which was just made)."""
    if _voice["cli"]:
        return CLI_HINT
    recorded = bool(_recorded_probe and _recorded_probe[0]())
    return RECORDED_MODE_HINT if recorded else RECORDED_HINT


def _cuda_bindings_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("cuda-bindings")
    except Exception:
        return None


def _dot_version() -> str | None:
    exe = shutil.which("dot")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "-V"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return exe
    text = (out.stderr or out.stdout).strip()
    return text.replace("dot - graphviz version ", "") or exe


def _driver_version() -> str | None:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run(
            [exe, "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True, timeout=20
        )
    except (OSError, subprocess.SubprocessError):
        return None
    line = out.stdout.strip().splitlines()
    return line[0].strip() if line else None


def torch_graph_features(torch: Any) -> dict[str, bool]:
    """Which CUDA-graph features the installed torch offers, by feature detection.

    keep_graph: `CUDAGraph(keep_graph=...)` exists (needed to keep the cudaGraph_t for dumping).
    raw_cuda_graph: `CUDAGraph.raw_cuda_graph()` exists (the handle cuda-bindings needs).
    get_graph_data: `CUDAGraph.get_graph_data()` exists (torch's own node census).
    conditional_nodes: torch can capture `torch.cond` into IF nodes (private API, 2.12+).
    """
    graph_cls = getattr(getattr(torch, "cuda", None), "CUDAGraph", None)
    keep_graph = False
    if graph_cls is not None:
        try:
            keep_graph = "keep_graph" in inspect.signature(graph_cls).parameters
        except (TypeError, ValueError):
            keep_graph = False
    conditional = importlib.util.find_spec("torch._higher_order_ops.cudagraph_conditional_nodes") is not None
    return {
        "keep_graph": keep_graph,
        "raw_cuda_graph": hasattr(graph_cls, "raw_cuda_graph"),
        "get_graph_data": hasattr(graph_cls, "get_graph_data"),
        "conditional_nodes": conditional,
    }


def has_cuda() -> bool:
    """True when torch is installed with CUDA and sees a GPU. Never raises."""
    if importlib.util.find_spec("torch") is None:
        return False
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:
        return False


def gpu_names() -> list[str]:
    """The names of the visible CUDA GPUs ([] without torch or a GPU). Never raises."""
    if not has_cuda():
        return []
    import torch

    return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]


def why_no_cuda() -> str | None:
    """Why this machine cannot run CUDA work, in words ("a CPU-only build of torch (torch 2.13.0+cpu)"), or None
    when it can."""
    if importlib.util.find_spec("torch") is None:
        return "no PyTorch installed"
    import torch

    if torch.cuda.is_available():
        return None
    if torch.version.cuda is None:
        return f"a CPU-only build of torch (torch {torch.__version__})"
    return f"no visible CUDA GPU (torch {torch.__version__}, a CUDA {torch.version.cuda} build)"


def require_cuda(what: str, fix: str = "") -> Any:
    """Return the torch module if `what` can run here, else raise one `GPUUnavailableError` with a hint.

    `fix` (optional) comes first in the hint: a way to run without a GPU that only this caller knows."""
    hint = f"{fix}. {gpu_hint()}" if fix else gpu_hint()
    why = why_no_cuda()
    if why == "no PyTorch installed":
        raise GPUUnavailableError(f"{what} needs PyTorch, which is not installed. {hint}")
    if why is not None:
        raise GPUUnavailableError(f"{what} needs a CUDA GPU, but this machine has {why}. {hint}")
    import torch

    return torch


__all__ = ["CLI_HINT", "RECORDED_HINT", "RECORDED_MODE_HINT", "advice", "error_line", "gpu_hint", "gpu_names", "register_recorded_probe", "has_cuda", "require_cuda", "speak_as", "torch_graph_features", "why_no_cuda"]
