"""`gl.about()`: what this machine can do, in one report: Python, torch and its CUDA build, GPUs, driver,
cuda-bindings, the graph features of the installed torch, the conditional nodes it can build, Graphviz.

It sits on the roof of the package because it asks each feature for its own support check.
Imports torch only when it is installed, and survives its absence.
"""
from __future__ import annotations

import importlib.util
import platform
import sys
from dataclasses import asdict, dataclass, field
from typing import Any

from graphlab.conditional.support import conditional_features
from graphlab.env import _cuda_bindings_version, _dot_version, _driver_version, gpu_names, torch_graph_features
from graphlab.present import facts, listing


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

    def rows(self) -> list[tuple[str, str]]:
        """(what, value) pairs of the report, in words. A CPU-only machine's torch still ships the CUDA graph API
        (`keep_graph`, `raw_cuda_graph`, ...): the report says the API is there and that nothing can use it here,
        never that this machine has the feature."""
        # `conditional_nodes` only says that torch ships the torch.cond capture module (a CPU build does too);
        # whether a conditional node can be built here is the cond_* features, on their own line
        plain = [k for k, v in self.graph_features.items()
                 if v and not k.startswith("cond_") and k != "conditional_nodes"]
        lacking = [k for k, v in self.graph_features.items()
                   if not v and not k.startswith("cond_") and k != "conditional_nodes"]
        cond = [k[len("cond_"):] for k, v in self.graph_features.items() if k.startswith("cond_") and v]
        if not self.graph_features:
            graph_api = "n/a (torch is not installed)"
        elif self.live:
            graph_api = listing(plain) if plain else "none"
            graph_api += f" (missing: {listing(lacking)})" if lacking else ""
        else:
            graph_api = (f"not usable here: no CUDA GPU (this torch's API has {listing(plain)}; "
                         "a GPU machine uses them)" if plain else "not usable here: no CUDA GPU")
        if not self.graph_features:
            conds = "n/a"
        elif cond:
            conds = listing(n.replace("_", "/").upper() for n in cond)
        else:
            conds = "none here (gl.conditional_support() says what each kind needs)"
        return [
            ("python", self.python),
            ("torch", self.torch or "not installed"),
            ("torch CUDA build", self.torch_cuda or "none (CPU build)"),
            ("GPUs", ", ".join(self.gpus) if self.gpus else "none visible"),
            ("driver", self.driver or "n/a"),
            ("cuda-bindings", self.cuda_bindings or "not installed"),
            ("CUDA graph features", graph_api),
            ("conditional nodes", conds),
            ("graphviz dot", self.graphviz_dot or "not found (apt-get install graphviz)"),
            ("mode", "live (GPU)" if self.live else "recorded (no GPU: notebooks load recordings)"),
        ]

    def __str__(self) -> str:
        rows = self.rows()
        width = max(len(k) for k, _ in rows)
        return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))

    def _repr_html_(self) -> str:
        return facts(self.rows(), title="This machine").to_html()

    def __repr__(self) -> str:
        return (f"Environment(torch {self.torch or 'not installed'}, {len(self.gpus)} GPU(s), "
                f"{'live' if self.live else 'recorded'}; print() it for the report)")


def _shown_by_ipython() -> bool:
    """True inside IPython/Jupyter, where the value a cell returns is displayed."""
    ipython = sys.modules.get("IPython")
    try:
        return ipython is not None and ipython.get_ipython() is not None
    except Exception:
        return False


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
    """Report what this machine can do: a notebook shows the returned report; a script or a terminal gets it
    printed (so `gl.about()` alone says something there too). Returns the `Environment`."""
    env = environment()
    if not _shown_by_ipython():
        print(env)
    return env



__all__ = ["Environment", "about", "environment"]
