"""`gl.about()`: what this machine can do, in one report: Python, torch and its CUDA build, GPUs, driver,
cuda-bindings, the graph features of the installed torch, the conditional nodes it can build, Graphviz.

It sits on the roof of the package because it asks each feature for its own support check.
Imports torch only when it is installed, and survives its absence.
"""
from __future__ import annotations

import importlib.util
import platform
from dataclasses import asdict, dataclass, field
from typing import Any

from graphlab.conditional.support import conditional_features
from graphlab.env import _cuda_bindings_version, _dot_version, _driver_version, gpu_names, torch_graph_features


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
    env.graph_features.update(conditional_features())
    env.cuda_available = bool(torch.cuda.is_available())
    if env.cuda_available:
        env.gpus = gpu_names()
        env.driver = _driver_version()
    return env


def about() -> Environment:
    """Report what this machine can do; shows as a table in a notebook and prints in a terminal."""
    return environment()



__all__ = ["Environment", "about", "environment"]
