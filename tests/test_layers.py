"""The shape of the package holds: one folder per feature, pure modules apart from torch, imports that only point
down, torch at the top of the modules that use it, studies that no library module imports, one module that decides
live vs recorded, and no import cycles. Each rule is an AST walk over `graphlab/`, checked per package so that a
failure names the package (`pytest tests/test_layers.py -k cache`)."""
from __future__ import annotations

import ast
import importlib
import subprocess
import sys
import textwrap
from functools import cache
from pathlib import Path

import pytest

from conftest import REPO

PACKAGE = REPO / "graphlab"
BLOCKED = ["torch", "ipywidgets", "anywidget", "plotly", "graphviz", "pandas", "IPython", "numpy"]

#: the feature packages of the library, each with a PURE list in its __init__
FEATURES = ("graph", "capture", "timing", "cache", "conditional", "watch", "distributed", "decode", "profile",
            "audit", "viz", "serve", "ui", "loadtest")
#: packages whose modules use torch (the rest draw, serve or show: they never import torch at all, or do at the top)
TORCH_FEATURES = ("graph", "capture", "timing", "cache", "conditional", "watch", "distributed", "decode", "profile",
                  "audit")
#: modules on the ground floor; every one of them imports without torch
GROUND = ("errors", "env", "mode", "_version", "files", "progress", "stats", "clock", "fresh_process", "present", "results_types", "recordings", "loader")
#: the floor of every top-level module and package: imports point to a lower floor, or within a package
FLOORS = {"errors": 0, "env": 0, "mode": 0, "_version": 0, "files": 0, "progress": 0, "stats": 0, "clock": 0, "fresh_process": 0,
          "present": 0, "results_types": 0,
          "graph": 1, "recordings": 2, "zoo": 2, "loader": 3, "capture": 4, "timing": 5, "cache": 5, "watch": 5,
          "conditional": 5, "distributed": 6, "decode": 6, "profile": 6, "audit": 7, "viz": 7, "serve": 8, "ui": 8, "loadtest": 9,
          "studies": 10, "about": 11, "cli": 11, "tour": 11, "output_check": 11, "__main__": 11, "__init__": 11}
#: the roof: its modules may import each other (tour imports output_check, cli imports tour)
ROOF = max(FLOORS.values())
#: pairs that may not import each other although the floors would allow it
FORBIDDEN = {**{(torch_pkg, face): "torch modules must not draw or show: the GPU machine has no graphviz/plotly/widgets"
                for torch_pkg in TORCH_FEATURES for face in ("viz", "ui")},
             ("serve", "ui"): "the service must not import notebook widgets",
             ("ui", "serve"): "widgets must not import the service",
             ("loadtest", "ui"): "the load test must not import notebook widgets"}
#: the modules that check whether torch is there at all: they import it inside functions, on purpose
PROBES = ("graphlab.env", "graphlab.conditional.support", "graphlab.about")
#: the only modules outside studies/ that may import it (lazily: `graphlab --help` stays light)
STUDY_IMPORTERS = ("graphlab.cli",)


def _run(code: str) -> subprocess.CompletedProcess[str]:
    prelude = "import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in BLOCKED)
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)], cwd=REPO, capture_output=True, text=True, timeout=60
    )


# -- reading the package -----------------------------------------------------------------------------------
def _module_name(path: Path) -> str:
    rel = path.relative_to(REPO).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


@cache
def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


@cache
def _tree(module: str) -> ast.Module:
    return ast.parse(_modules()[module].read_text())


def _imports(module: str) -> list[tuple[str, ast.AST, bool]]:
    """(imported graphlab module, node, at the top of the module) for every import in `module`."""
    tree = _tree(module)
    top = set(map(id, tree.body))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            # `from graphlab.cache import buckets` imports the module graphlab.cache.buckets
            names = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in _modules() else node.module
                     for a in node.names]
        else:
            continue
        found += [(n, node, id(node) in top) for n in names if n == "graphlab" or n.startswith("graphlab.")]
    return found


def _part(module: str) -> str:
    """The top-level module or package a module belongs to: graphlab.cache.buckets -> cache."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _pure_modules() -> set[str]:
    pure = {f"graphlab.{m}" for m in GROUND}
    for feature in FEATURES:
        pure |= {f"graphlab.{feature}.{m}" for m in importlib.import_module(f"graphlab.{feature}").PURE}
    return pure


def _functions(tree: ast.AST) -> list[ast.AST]:
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))]


# -- the light face ------------------------------------------------------------------------------------------
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

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        graphlab.nope  # noqa: B018


def test_public_names_stay_functions_after_every_module_is_imported():
    """A subpackage named like a public function (graphlab.capture, graphlab.watch) must not shadow it."""
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
            assert callable(graphlab.capture) and callable(graphlab.watch)
            """
        )], cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr


# -- one folder per feature, its pure modules listed ----------------------------------------------------------------
def test_core_and_gpu_are_gone_and_every_module_belongs_to_a_known_part():
    assert not (PACKAGE / "core").exists() and not (PACKAGE / "gpu").exists()
    unknown = sorted(m for m in _modules() if _part(m) not in FLOORS)
    assert unknown == [], f"modules outside the known parts {sorted(FLOORS)}"


@pytest.mark.parametrize("feature", [*FEATURES, "studies"])
def test_every_package_says_its_job(feature):
    init = importlib.import_module(f"graphlab.{feature}")
    assert init.__doc__ and len(init.__doc__.strip().splitlines()) >= 2, "say the package's job in two lines"
    if feature == "studies":
        return
    missing = [m for m in init.PURE if not (PACKAGE / feature / f"{m}.py").exists()]
    assert missing == [], f"graphlab.{feature}.PURE names modules that do not exist"


@pytest.mark.parametrize("feature", FEATURES)
def test_pure_modules_import_with_torch_plotly_graphviz_and_widgets_blocked(feature):
    result = _run(
        f"""
        import importlib
        for name in importlib.import_module("graphlab.{feature}").PURE:
            importlib.import_module("graphlab.{feature}." + name)
        """
    )
    assert result.returncode == 0, result.stderr


def test_ground_floor_modules_import_with_torch_blocked():
    result = _run("import importlib\n" + "".join(f"importlib.import_module('graphlab.{m}')\n" for m in GROUND))
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("feature", FEATURES)
def test_pure_modules_import_only_pure_modules(feature):
    pure = _pure_modules()
    found = [f"{m}: imports {target}, which is not pure" for m in sorted(pure) if _part(m) == feature
             for target, _, _ in _imports(m) if target not in pure and target != "graphlab"]
    assert found == []


# -- imports point down; torch modules never draw; serve and ui apart --------------------------------------------
def _floor_violations(modules: list[str]) -> list[str]:
    found = []
    for module in modules:
        source = _part(module)
        for target, _, _ in _imports(module):
            if target == "graphlab":
                if source != "__init__":
                    found.append(f"{module}: imports the package face 'graphlab' (import the module that defines the name)")
                continue
            dest = _part(target)
            if dest == source:
                continue
            if (source, dest) in FORBIDDEN:
                found.append(f"{module}: imports {target}: {FORBIDDEN[source, dest]}")
            elif FLOORS[dest] > FLOORS[source]:
                found.append(f"{module}: imports {target}, a higher floor ({dest} {FLOORS[dest]} > {source} {FLOORS[source]})")
            elif FLOORS[dest] == FLOORS[source] and FLOORS[source] not in (0, ROOF):
                found.append(f"{module}: imports {target}: {source} and {dest} are siblings on floor {FLOORS[source]}")
    return found


@pytest.mark.parametrize("part", sorted(FLOORS))
def test_imports_only_point_down(part):
    assert _floor_violations([m for m in _modules() if _part(m) == part]) == []


def test_the_floor_check_can_fail(monkeypatch):
    """A module that breaks three rules, parsed in memory (the test writes nothing into the package)."""
    bad = ast.parse("from graphlab.viz.drawing import render\nimport graphlab\nfrom graphlab.cache import buckets\n")
    read = _tree
    monkeypatch.setitem(globals(), "_tree", lambda module: bad if module == "graphlab.capture._bad" else read(module))
    found = _floor_violations(["graphlab.capture._bad"])
    assert any("must not draw" in f for f in found)
    assert any("package face" in f for f in found)
    assert any("higher floor" in f for f in found)


def test_no_import_cycles():
    """Tarjan over every import, those inside functions too: a cycle is two modules that need each other."""
    graph = {m: sorted({t for t, _, _ in _imports(m) if t in _modules() and t != m}) for m in _modules()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in graph:
        if v not in index:
            visit(v)
    assert cycles == []


# -- torch at the top ---------------------------------------------------------------------------------------------
def _torch_violations(module: str) -> list[str]:
    tree = _tree(module)
    found = []
    for fn in _functions(tree):
        for node in ast.walk(fn):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            if any(n == "torch" or n.startswith("torch.") for n in names):
                found.append(f"{module}:{node.lineno}: imports torch inside a function")
        args = getattr(fn, "args", None)
        if args is not None:
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
                if arg.arg == "torch":
                    found.append(f"{module}:{fn.lineno}: takes torch as a parameter")
    for node in ast.walk(tree):
        text = ast.unparse(node) if isinstance(node, (ast.Subscript, ast.Call)) else ""
        if text.startswith(("sys.modules['torch']", 'sys.modules["torch"]', "sys.modules.get('torch'",
                            'sys.modules.get("torch"')):
            found.append(f"{module}:{node.lineno}: looks torch up in sys.modules")
    return found


@pytest.mark.parametrize("part", sorted(FLOORS))
def test_torch_is_imported_at_the_top_or_not_at_all(part):
    found = [v for m in _modules() if _part(m) == part and m not in PROBES for v in _torch_violations(m)]
    assert found == []


# -- studies are leaves; one module decides live vs recorded ------------------------------------------------------
def test_no_library_module_imports_studies():
    found = [f"{m}: imports {t}" for m in _modules() if _part(m) != "studies"
             for t, _, top in _imports(m) if _part(t) == "studies" and (m not in STUDY_IMPORTERS or top)]
    assert found == [], "only the command line imports graphlab.studies, inside the command that needs it"


@pytest.mark.parametrize("part", sorted(FLOORS))
def test_the_live_recorded_decision_is_made_in_mode_only(part):
    found = []
    for module in (m for m in _modules() if _part(m) == part and m != "graphlab.mode"):
        for node in ast.walk(_tree(module)):
            if isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] in ("is_recorded", "current_mode"):
                found.append(f"{module}:{node.lineno}: {ast.unparse(node.func)}() decides here")
    assert found == [], "use @graphlab.mode.stand_in(recorded) or graphlab.mode.pick(live=..., recorded=...)"


def test_every_module_says_what_it_exports():
    missing = [m for m, p in _modules().items() if p.name not in ("__init__.py", "__main__.py")
               and not any(isinstance(n, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in n.targets)
                           for n in _tree(m).body)]
    assert missing == [], "add __all__ to these modules"
