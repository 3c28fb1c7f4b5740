"""What `graphlab record` can make, read from the studies' source, and the recordings they leave.

A study that `graphlab record` can run is a module under graphlab/studies/ (sub-folders too) that defines
`RECORDING = "<name>"` (a string: the experiment and its recording folder; or the name of the recording of the
results type it writes, `RECORDING = OverheadBenchmark.RESULTS.recording`, read from that type's declaration) and
`def record(out_root, prov)`.
The driver (`graphlab.studies.record.recorders`) imports the studies to run them; this module reads the same
facts with `ast`, without importing anything, so that `graphlab record --help` lists every experiment in a few
milliseconds and without torch. tests/test_recorders.py holds the two lists equal, one to one.

    >>> [(s.name, s.module) for s in listings()][:2]           # doctest: +SKIP
    [('pitfalls', 'graphlab.studies.pitfalls'), ('cache', 'graphlab.studies.cache')]

Pure: standard library and the ground floor only. `open_recording` here is the loader's (`graphlab.loader`): one
way to find a recording by name and one "record it on a GPU with `graphlab record --models NAME`" error.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from graphlab.loader import open_recording

STUDIES = Path(__file__).resolve().parent
#: the model zoo's source: its model names are read from the `ZOO` table without importing torch
ZOO_SOURCE = STUDIES.parent / "zoo.py"


@dataclass(frozen=True)
class Listing:
    """One experiment as its source declares it.

    Attributes:
        name: its `RECORDING` (`graphlab record --models NAME`, and the recording's folder name).
        module: the module that records it, e.g. "graphlab.studies.cache".
        summary: the first line of its `record()` docstring.
        by_default: `BY_DEFAULT = True` in the module: `graphlab record` without --models makes it.
    """

    name: str
    module: str
    summary: str
    by_default: bool = False


def _module_name(path: Path) -> str:
    parts = ["graphlab", *path.relative_to(STUDIES.parent).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _graphlab_source(module: str) -> Path | None:
    """The source file of graphlab module `module` ("graphlab.loadtest.report"), or None for any other module."""
    parts = module.split(".")
    if parts[0] != "graphlab":
        return None
    base = STUDIES.parent.joinpath(*parts[1:])
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _top_level(tree: ast.Module) -> tuple[dict[str, ast.expr], dict[str, tuple[str, str]], dict[str, ast.ClassDef]]:
    """A module's top-level assignments (name -> value), the names it imports from other modules (name -> (module,
    its name there)) and its classes (name -> definition)."""
    values: dict[str, ast.expr] = {}
    imported: dict[str, tuple[str, str]] = {}
    classes: dict[str, ast.ClassDef] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            values.update({t.id: node.value for t in node.targets if isinstance(t, ast.Name)})
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            values[node.target.id] = node.value
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            imported.update({a.asname or a.name: (node.module, a.name) for a in node.names})
        elif isinstance(node, ast.ClassDef):
            classes[node.name] = node
    return values, imported, classes


def _declared_recording(cls: ast.ClassDef, path: Path, depth: int) -> object:
    """The `recording=` a results type's `@recorded_result(...)` names (graphlab.results_types), else None."""
    for decorator in cls.decorator_list:
        if isinstance(decorator, ast.Call) and ast.unparse(decorator.func).split(".")[-1] == "recorded_result":
            for keyword in decorator.keywords:
                if keyword.arg == "recording":
                    return _value(keyword.value, path, depth + 1)
    return None


def _value(value: ast.expr, path: Path, depth: int) -> object:
    """What expression `value` of the module at `path` holds, read from source (see `_resolve`)."""
    if isinstance(value, ast.Constant):
        return value.value
    if isinstance(value, ast.Name):
        return _resolve(value.id, path, depth + 1)
    if isinstance(value, ast.Call) and ast.unparse(value.func) == "str" and len(value.args) == 1:
        return _value(value.args[0], path, depth + 1)  # str(...) of a name
    if isinstance(value, ast.Attribute) and value.attr == "recording":  # Type.RESULTS or results_type(Type)
        spec = value.value
        if isinstance(spec, ast.Attribute) and spec.attr == "RESULTS" and isinstance(spec.value, ast.Name):
            cls = spec.value.id
        elif (isinstance(spec, ast.Call) and ast.unparse(spec.func).split(".")[-1] == "results_type"
              and len(spec.args) == 1 and isinstance(spec.args[0], ast.Name)):
            cls = spec.args[0].id
        else:
            return None
        found = _resolve(cls, path, depth + 1, classes=True)
        return _declared_recording(*found, depth) if isinstance(found, tuple) else None
    return None


def _resolve(name: str, path: Path, depth: int = 0, classes: bool = False) -> object:
    """The value of top-level `name` in the module at `path`, read from source: a literal; a name assigned from
    another, or imported from a graphlab module, read there; or `Type.RESULTS.recording` (or
    `results_type(Type).recording`), the default recording a results type declares (in that module, or imported from
    a graphlab module). None when the source does not say. With `classes`, a class is found too, as (its definition,
    its module's path)."""
    if depth > 8:
        return None
    values, imported, defined = _top_level(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
    if name in values:
        return _value(values[name], path, depth)
    if classes and name in defined:
        return defined[name], path
    if name in imported:
        module, original = imported[name]
        source = _graphlab_source(module)
        return _resolve(original, source, depth + 1, classes) if source is not None else None
    return None


def read_listing(path: Path) -> Listing | None:
    """The experiment one study module declares, or None when it declares none.

    A module is an experiment when its top level assigns `RECORDING` a string and defines `record`; a module that
    only names a recording it reads (`RECORDING` without `record`) is not one. The string is read from source: a
    literal, a name imported from (or assigned from a name of) a graphlab module that assigns one, or
    `Type.RESULTS.recording` (the recording the results type it writes declares,
    `graphlab.results_types.recorded_result`).
    """
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    record = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "record"), None)
    values, imported, _ = _top_level(tree)
    name = _resolve("RECORDING", path) if "RECORDING" in values or "RECORDING" in imported else None
    if record is None or not isinstance(name, str):
        return None
    doc = ast.get_docstring(record) or ast.get_docstring(tree) or ""
    by_default = values.get("BY_DEFAULT")
    return Listing(name, _module_name(path), doc.strip().splitlines()[0] if doc.strip() else "",
                   isinstance(by_default, ast.Constant) and by_default.value is True)


def listings() -> list[Listing]:
    """Every experiment under graphlab/studies/, those made by default first, then by name."""
    found = [listing for path in sorted(STUDIES.rglob("*.py")) if (listing := read_listing(path)) is not None]
    return sorted(found, key=lambda s: (not s.by_default, s.name))


def zoo_model_names() -> list[str]:
    """The keys of `graphlab.zoo.ZOO`, in order, read from its source (importing the zoo would import torch)."""
    for node in ast.parse(ZOO_SOURCE.read_text(encoding="utf-8")).body:
        target = node.target if isinstance(node, ast.AnnAssign) else (node.targets[0] if isinstance(node, ast.Assign)
                                                                      else None)
        if isinstance(target, ast.Name) and target.id == "ZOO" and isinstance(node.value, ast.Dict):
            return [k.value for k in node.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    return []


def record_help() -> str:
    """The list `graphlab record --help` prints after its options: every recording, one line each."""
    studies = listings()
    width = max(len("<zoo model>"), *(len(s.name) for s in studies)) + 2
    zoo = (f"  {'<zoo model>':<{width}}{', '.join(zoo_model_names())}: the graph at each batch size (DOT, census, "
           f"verified),\n  {'':<{width}}the latency sweep (unless --no-sweep) and a kernel timeline")
    lines = ["made by a bare `graphlab record`, each in a fresh process:", zoo]
    lines += [f"  {s.name:<{width}}{s.summary}" for s in studies if s.by_default]
    lines.append("made only when named (--models NAME ...):")
    lines += [f"  {s.name:<{width}}{s.summary}" for s in studies if not s.by_default]
    return "\n".join(lines)


__all__ = ["STUDIES", "ZOO_SOURCE", "Listing", "listings", "open_recording", "read_listing", "record_help",
           "zoo_model_names"]
