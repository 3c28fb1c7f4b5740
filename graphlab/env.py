"""What this machine can do: Python, torch and its CUDA build, GPUs, driver, cuda-bindings, graph
features of the installed torch, and the Graphviz `dot` binary.

Imports torch only inside functions, and survives its absence. Features are detected, never inferred
from version strings.
"""
from __future__ import annotations

import importlib
import importlib.util
import inspect
import platform
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from typing import Any

from graphlab.errors import GPUUnavailableError

RECORDED_HINT = (
    "To work from recordings made on a GPU instead, call gl.set_mode('recorded') (the notebooks do this "
    "for you), or open one directly: gl.list_recordings(), gl.load_recording('mlp').graph()."
)


@dataclass
class Environment:
    """A snapshot of the machine, as `about()` reports it."""

    python: str
    torch: str | None
    torch_cuda: str | None
    cuda_available: bool
    gpus: list[str] = field(default_factory=list)
    driver: str | None = None
    cuda_bindings: str | None = None
    graph_features: dict[str, bool] = field(default_factory=dict)
    graphviz_dot: str | None = None

    @property
    def live(self) -> bool:
        """True when graphs can be captured here (a CUDA build of torch and a visible GPU)."""
        return self.cuda_available

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        feats = ", ".join(f"{k}={'yes' if v else 'no'}" for k, v in self.graph_features.items()) or "n/a"
        rows = [
            ("python", self.python),
            ("torch", self.torch or "not installed"),
            ("torch CUDA build", self.torch_cuda or "none (CPU build)"),
            ("GPUs", ", ".join(self.gpus) if self.gpus else "none visible"),
            ("driver", self.driver or "n/a"),
            ("cuda-bindings", self.cuda_bindings or "not installed"),
            ("graph features", feats),
            ("graphviz dot", self.graphviz_dot or "not found (apt-get install graphviz)"),
            ("mode", "live (GPU)" if self.live else "recorded (no GPU: notebooks load recordings)"),
        ]
        width = max(len(k) for k, _ in rows)
        return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))


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


def environment() -> Environment:
    """Collect the `Environment` of this machine (imports torch if it is installed)."""
    env = Environment(
        python=platform.python_version(),
        torch=None,
        torch_cuda=None,
        cuda_available=False,
        cuda_bindings=_cuda_bindings_version(),
        graphviz_dot=_dot_version(),
    )
    if importlib.util.find_spec("torch") is None:
        return env
    import torch

    env.torch = torch.__version__
    env.torch_cuda = getattr(torch.version, "cuda", None)
    env.graph_features = torch_graph_features(torch)
    from graphlab.conditional_detect import conditional_features

    env.graph_features.update(conditional_features())
    env.cuda_available = bool(torch.cuda.is_available())
    if env.cuda_available:
        env.gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        env.driver = _driver_version()
    return env


def about() -> Environment:
    """Report what this machine can do; shows as a table in a notebook and prints in a terminal."""
    return environment()


def has_cuda() -> bool:
    """True when torch is installed with CUDA and sees a GPU. Never raises."""
    if importlib.util.find_spec("torch") is None:
        return False
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:
        return False


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


__all__ = ["Environment", "RECORDED_HINT", "about", "environment", "has_cuda", "require_cuda",
           "torch_graph_features"]
