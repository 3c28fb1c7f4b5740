"""The layering holds: `import graphlab` and the pure core load without torch, widgets or plotting."""
from __future__ import annotations

import subprocess
import sys
import textwrap

from conftest import REPO

BLOCKED = ["torch", "ipywidgets", "anywidget", "plotly", "graphviz", "pandas", "IPython", "numpy"]


def _run(code: str) -> subprocess.CompletedProcess[str]:
    prelude = "import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in BLOCKED)
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)], cwd=REPO, capture_output=True, text=True, timeout=60
    )


def test_import_graphlab_needs_no_heavy_dependency():
    result = _run(
        """
        import graphlab
        assert graphlab.__version__
        heavy = [m for m in ("torch", "ipywidgets", "plotly", "graphviz") if sys.modules.get(m) is not None]
        assert not heavy, heavy
        """
    )
    assert result.returncode == 0, result.stderr


def test_pure_core_modules_import_without_heavy_dependencies():
    result = _run(
        """
        import importlib, pkgutil
        import graphlab.core
        for info in pkgutil.iter_modules(graphlab.core.__path__):
            importlib.import_module("graphlab.core." + info.name)
        import graphlab.cli, graphlab.env, graphlab.errors
        """
    )
    assert result.returncode == 0, result.stderr


def test_env_functions_survive_missing_torch():
    result = _run(
        """
        import graphlab
        assert graphlab.has_cuda() is False
        env = graphlab.about()
        assert env.torch is None and not env.live
        try:
            from graphlab.env import require_cuda
            require_cuda("capturing a graph")
        except graphlab.GPUUnavailableError as exc:
            assert "PyTorch" in str(exc) and "recording" in str(exc)
        else:
            raise AssertionError("require_cuda did not raise")
        """
    )
    assert result.returncode == 0, result.stderr


def test_unknown_attribute_is_a_clear_attribute_error():
    import graphlab
    import pytest

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        graphlab.nope  # noqa: B018


def test_public_names_stay_functions_after_every_module_is_imported():
    """A subpackage named like a public function would shadow it once imported (gl.render was)."""
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(
            """
            import importlib, pkgutil, types
            import graphlab
            for info in pkgutil.walk_packages(graphlab.__path__, "graphlab."):
                if info.name.endswith("__main__"):
                    continue  # runs the command line
                try:
                    importlib.import_module(info.name)
                except ImportError:
                    pass  # e.g. GPU-only extras
            shadowed = [n for n in graphlab._LAZY if isinstance(getattr(graphlab, n), types.ModuleType)]
            assert not shadowed, shadowed
            """
        )], cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
