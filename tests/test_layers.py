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
        for package in ("graph", "capture", "timing", "cache", "conditional", "watch", "distributed"):
            for name in importlib.import_module("graphlab." + package).PURE:
                importlib.import_module(f"graphlab.{package}.{name}")
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


# -- imports only go down, for every layer ------------------------------------------------------------------
#: layer of each subpackage; modules at the package's top (errors, env, mode) are the ground floor (0),
#: cli/tour/__main__ the roof. `serve` sits above gpu (it serves models through the graph cache).
LAYERS = {"errors": 0, "env": 0, "mode": 0, "_version": 0, "progress": 0, "stats": 0, "fresh_process": 0, "zoo": 0,
          "graph": 1, "recordings": 2, "capture": 3, "timing": 4, "cache": 4, "watch": 4, "conditional": 4,
          "distributed": 5, "viz": 6, "serve": 7, "ui": 7, "studies": 8,
          "about": 9, "cli": 9, "tour": 9, "__main__": 9, "__init__": 9}
#: pairs that may not import each other although the layer numbers would allow it
FORBIDDEN = {**{(torch_pkg, face): "torch modules must not draw: the GPU machine has no graphviz/plotly"
                for torch_pkg in ("graph", "capture", "timing", "cache", "watch", "conditional", "distributed")
                for face in ("viz", "ui")},
             ("serve", "ui"): "the service must not import notebook widgets",
             ("ui", "serve"): "widgets must not import the service"}
GROUND = ("errors", "env", "mode", "_version", "progress", "stats", "fresh_process", "zoo")


def _layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _violations() -> list[str]:
    import ast

    package = REPO / "graphlab"
    found = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(REPO).with_suffix("")
        source = _layer_of(".".join(rel.parts))
        if source not in LAYERS:
            found.append(f"{rel}: module outside the known layers {sorted(LAYERS)}")
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                targets = [node.module]
            else:
                continue
            for target in targets:
                if target.split(".")[0] != "graphlab":
                    continue
                if target == "graphlab" and source != "__init__":
                    found.append(f"{rel}: imports the package face 'graphlab' (import the module that defines the name)")
                    continue
                dest = _layer_of(target)
                if dest not in LAYERS or dest == source:
                    continue
                if (source, dest) in FORBIDDEN:
                    found.append(f"{rel}: imports {target}: {FORBIDDEN[source, dest]}")
                elif LAYERS[dest] > LAYERS[source] and not (source in GROUND and dest in GROUND):
                    found.append(f"{rel}: imports {target}, a higher layer ({dest} > {source})")
    return found


def test_imports_only_point_down_in_every_layer():
    assert _violations() == []


def test_the_layer_check_can_fail(tmp_path, monkeypatch):
    import ast  # noqa: F401  (the check parses files; prove it sees a bad one)

    bad = REPO / "graphlab" / "capture" / "_layer_probe_tmp.py"
    bad.write_text("from graphlab.viz.drawing import render\nimport graphlab\n")
    try:
        found = _violations()
    finally:
        bad.unlink()
    assert any("_layer_probe_tmp" in f and "must not draw" in f for f in found)
    assert any("_layer_probe_tmp" in f and "package face" in f for f in found)


def test_every_module_says_what_it_exports():
    import ast

    missing = []
    for path in sorted((REPO / "graphlab").rglob("*.py")):
        if path.name in ("__init__.py", "__main__.py"):
            continue
        tree = ast.parse(path.read_text())
        if not any(isinstance(n, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in n.targets)
                   for n in tree.body):
            missing.append(str(path.relative_to(REPO)))
    assert missing == [], "add __all__ to these modules"
