"""Every results type is in the registry and every shipped recording entry loads through it; no module but the loader
finds recordings, words the "record it" error or keeps known fields itself (an AST walk over graphlab/)."""
from __future__ import annotations

import ast
import importlib
import json
import pkgutil
from pathlib import Path
from typing import Any

from conftest import REPO

import graphlab
from graphlab.loader import load
from graphlab.recordings import list_recordings
from graphlab.results_types import RESULT_TYPES, type_for


# -- every shipped recording, through the registry ------------------------------------------------------------------
def _import_everything() -> None:
    """Types register when their module is imported: import every module that imports here."""
    for info in pkgutil.walk_packages(graphlab.__path__, "graphlab."):
        if info.name.endswith("__main__"):  # a command line runs when imported
            continue
        try:
            importlib.import_module(info.name)
        except ImportError:  # an optional library not installed here (cuda-bindings, ...)
            continue


def _shipped() -> list[tuple[Any, str]]:
    return [(rec, key) for rec in list_recordings(REPO / "data" / "recordings") for key in rec.result_names]


def test_the_registry_lists_each_type_once_with_its_entry_default_recording_and_schema():
    _import_everything()
    assert {"Sweep", "Timeline"} <= set(RESULT_TYPES)
    for name, spec in RESULT_TYPES.items():
        assert spec.name == name and spec.entries and spec.schema >= 1, name


def test_every_shipped_recording_entry_loads_through_the_registry():
    _import_everything()
    unread, failed = [], []
    for rec, key in _shipped():
        spec = type_for(rec.name, key)
        if spec is None:
            unread.append(f"{rec.name}/{key}")
            continue
        try:
            load(spec.cls, rec.name, gpu=rec.path.parent.name, root=REPO / "data" / "recordings",
                 entry=None if spec.composite else key)
        except Exception as exc:  # noqa: BLE001 (the test lists every failure)
            failed.append(f"{rec.name}/{key}: {type(exc).__name__}: {exc}")
    assert unread == [], f"entries no results type reads: {unread}"
    assert failed == [], "\n".join(failed)


# -- no loader outside the loader ---------------------------------------------------------------------------------
_LOADER_MODULES = ("graphlab/loader.py", "graphlab/results_types.py", "graphlab/recordings.py")


def _library_files() -> list[Path]:
    return [p for p in sorted((REPO / "graphlab").rglob("*.py"))
            if str(p.relative_to(REPO)) not in _LOADER_MODULES]


def _violations(path: Path, root: Path = REPO) -> list[str]:
    tree = ast.parse(path.read_text())
    rel = path.relative_to(root)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None and "graphlab record --models" in ast.unparse(node.exc):
            found.append(f"{rel}:{node.lineno}: words the 'record it' error itself (use loader.record_hint)")
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name == "load_recording" and node.args:
                first = node.args[0]
                if isinstance(first, ast.Constant) or (isinstance(first, ast.Name) and first.id.isupper()):
                    found.append(f"{rel}:{node.lineno}: finds a named recording itself (use gl.load / "
                                 "loader.open_recording)")
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            calls_fields = any(isinstance(n, ast.Call) and getattr(n.func, "id", getattr(n.func, "attr", "")) == "fields"
                               for n in ast.walk(node))
            filters = any(isinstance(n, ast.DictComp) and any(
                isinstance(cond, ast.Compare) and any(isinstance(op, ast.In) for op in cond.ops)
                for gen in n.generators for cond in gen.ifs) for n in ast.walk(node))
            if calls_fields and filters:
                found.append(f"{rel}:{node.lineno}: keeps the known fields itself (use results_types.keep_known)")
    return found


def test_no_module_but_the_loader_finds_recordings_words_the_record_error_or_filters_fields():
    found = [v for path in _library_files() for v in _violations(path)]
    assert found == [], "\n".join(found)


def test_the_ast_rule_finds_what_it_looks_for(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from dataclasses import fields\n"
        "def a():\n    return load_recording('gpt')\n"
        "def b(cls, d):\n    names = {f.name for f in fields(cls)}\n    return {k: v for k, v in d.items() if k in names}\n"
        "def c():\n    raise RecordingError('make it with `graphlab record --models x`')\n")
    assert len(_violations(probe, root=tmp_path)) == 3  # read where it is written: nothing goes into graphlab/


def test_the_loaders_own_files_read_real_json():
    meta = json.loads((REPO / "data" / "recordings" / "h200" / "mlp" / "meta.json").read_text())
    assert "sweep" in meta["results"]
