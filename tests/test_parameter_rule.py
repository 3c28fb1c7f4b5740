"""No parameter walls: a function takes at most 8 named parameters (not counting `self`/`cls`; a `**kwargs`
counts as 8, since it is read as options). A public entry point (a name `import graphlab as gl` offers, a name
in a package's `__all__`, their classes' constructors and public methods) may take up to 12, those past the
fourth keyword-only with defaults, and an options dataclass for the rest.

Read from the source (ast), so the rule holds for modules that need torch or a GPU too.
"""
from __future__ import annotations

import ast
import importlib
import pathlib

import graphlab

PACKAGE = pathlib.Path(graphlab.__file__).resolve().parent
INTERNAL_MAX, PUBLIC_MAX, PUBLIC_POSITIONAL_MAX = 8, 12, 4


def _public_names() -> dict[str, set[str]]:
    """module path (graphlab.x.y) -> the public names it defines."""
    public: dict[str, set[str]] = {}
    for name, module in graphlab._LAZY.items():
        public.setdefault(module, set()).add(name)
    for init in PACKAGE.rglob("__init__.py"):
        tree = ast.parse(init.read_text())
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
                package = ".".join(("graphlab",) + init.parent.relative_to(PACKAGE).parts)
                names = [elt.value for elt in getattr(node.value, "elts", []) if isinstance(elt, ast.Constant)]
                for n in names:  # a package's __all__ names what it re-exports: find the defining module
                    try:
                        obj = getattr(importlib.import_module(package), n)
                    except Exception:  # noqa: BLE001 - a name that needs torch: counted where it is defined
                        public.setdefault(package, set()).add(n)
                        continue
                    public.setdefault(getattr(obj, "__module__", package), set()).add(n)
    return public


def _count(args: ast.arguments) -> tuple[int, int]:
    """(named parameters without self/cls, a **kwargs as 8; positional ones among them)."""
    positional = [a.arg for a in args.posonlyargs + args.args if a.arg not in ("self", "cls")]
    return len(positional) + len(args.kwonlyargs) + (INTERNAL_MAX if args.kwarg else 0), len(positional)


def walls() -> list[str]:
    public = _public_names()
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(("graphlab",) + path.relative_to(PACKAGE).with_suffix("").parts).removesuffix(".__init__")
        names = public.get(module, set())
        tree = ast.parse(path.read_text())

        def visit(body, owner_public: bool | None, where: str) -> None:
            for node in body:
                if isinstance(node, ast.ClassDef):
                    visit(node.body, node.name in names, f"{where}{node.name}.")
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    if owner_public is None:
                        is_public = node.name in names
                    else:
                        is_public = owner_public and (not node.name.startswith("_") or node.name in ("__init__", "__new__"))
                    count, positional = _count(node.args)
                    ok = count <= INTERNAL_MAX or (is_public and count <= PUBLIC_MAX and positional <= PUBLIC_POSITIONAL_MAX)
                    if not ok:
                        kind = "public" if is_public else "internal"
                        found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {where}{node.name} "
                                     f"({kind}, {count} named parameters, {positional} positional)")

        visit(tree.body, None, "")
    return found


def test_no_parameter_walls():
    found = walls()
    assert not found, "functions over the parameter rule (settings object instead):\n" + "\n".join(found)


def test_the_rule_sees_a_wall(tmp_path):
    tree = ast.parse("def f(a, b, c, d, e, f, g, h, i): pass\ndef g(**kw): pass\ndef h(a, *, b=1, **kw): pass")
    counts = [_count(n.args)[0] for n in tree.body]
    assert counts == [9, 8, 10]
