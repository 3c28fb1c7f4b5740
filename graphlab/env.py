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
    "To work from recordings made on a GPU instead, call gl.set_mode('recorded') (the notebooks do this "
    "for you), or open one directly: gl.list_recordings(), gl.load_recording('mlp').graph()."
)


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


def require_cuda(what: str) -> Any:
    """Return the torch module if `what` can run here, else raise one `GPUUnavailableError` with a hint."""
    if importlib.util.find_spec("torch") is None:
        raise GPUUnavailableError(f"{what} needs PyTorch, which is not installed. {RECORDED_HINT}")
    import torch

    if not torch.cuda.is_available():
        build = "a CPU-only build of torch" if torch.version.cuda is None else "no visible CUDA GPU"
        raise GPUUnavailableError(
            f"{what} needs a CUDA GPU, but this machine has {build} "
            f"(torch {torch.__version__}, torch.cuda.is_available() is False). {RECORDED_HINT}"
        )
    return torch


__all__ = ["RECORDED_HINT", "gpu_names", "has_cuda", "require_cuda", "torch_graph_features"]
