"""The errors graphlab raises on purpose live in one module, and carry their fields from the constructor."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

import graphlab
from graphlab import errors
from graphlab.errors import CaptureError, GraphlabError, GraphvizMissingError

PACKAGE = Path(graphlab.__file__).parent


def _exception_classes_outside_errors_py() -> list[str]:
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "errors.py" and path.parent == PACKAGE:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(b) for b in node.bases]
                if any(b.endswith("Error") or b.endswith("Exception") for b in bases):
                    found.append(f"{path.relative_to(PACKAGE.parent)}: class {node.name}({', '.join(bases)})")
    return found


def test_every_error_class_is_defined_in_errors_py():
    # private exceptions (a leading underscore: the CLI's usage error, a parser's control flow) never
    # leave their module, so they are not errors graphlab raises to its callers
    outside = [c for c in _exception_classes_outside_errors_py() if ": class _" not in c]
    assert outside == []


def test_every_error_class_in_errors_py_is_in_its_all():
    import inspect

    defined = {name for name, value in vars(errors).items()
               if inspect.isclass(value) and issubclass(value, Exception) and value.__module__ == errors.__name__}
    assert defined == set(errors.__all__)


def test_every_error_is_public_and_a_graphlab_error():
    for name in errors.__all__:
        cls = getattr(errors, name)
        assert issubclass(cls, GraphlabError)
        assert getattr(graphlab, name) is cls
        assert name in graphlab.__all__


def test_capture_error_takes_its_fields_in_the_constructor():
    original = RuntimeError("operation not permitted when stream is capturing")
    err = CaptureError("capture failed: host sync", cause="host_sync", original=original, original_traceback="tb")
    assert (err.cause, err.original, err.original_traceback, err.diagnosis) == ("host_sync", original, "tb", None)
    assert str(err) == "capture failed: host sync"
    assert CaptureError("x").cause == "unknown"


def test_one_error_for_a_missing_dot_program():
    assert "apt-get install graphviz" in str(GraphvizMissingError())
    assert isinstance(GraphvizMissingError(), RuntimeError)


# -- errors by kind ---------------------------------------------------------------------------------------------
#: raising one of these on purpose says nothing a caller can catch by meaning: raise a kind from errors.py
BARE = ("GraphlabError", "ValueError", "RuntimeError", "TypeError", "Exception", "ServeError")
PACKAGES = sorted({p.relative_to(PACKAGE).parts[0].removesuffix(".py") for p in PACKAGE.glob("*")
                   if p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists())})


def _bare_raises(part: str) -> list[str]:
    found = []
    paths = [PACKAGE / f"{part}.py"] if (PACKAGE / f"{part}.py").exists() else sorted((PACKAGE / part).rglob("*.py"))
    for path in paths:
        if path == PACKAGE / "errors.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Raise) and node.exc is not None:
                called = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                if ast.unparse(called) in BARE:
                    found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: raise {ast.unparse(called)}")
    return found


@pytest.mark.parametrize("part", PACKAGES)
def test_errors_are_raised_by_kind(part):
    assert _bare_raises(part) == [], "raise a kind from graphlab.errors (BadInputError, ConfigurationError, ...)"


def test_every_error_is_one_of_the_five_kinds():
    kinds = errors.KINDS
    assert [k.__name__ for k in kinds] == ["BadInputError", "ConfigurationError", "CaptureError", "UnsupportedError",
                                           "RecordingError"]
    for name in errors.__all__:
        cls = getattr(errors, name)
        if cls is GraphlabError or cls in kinds or cls is errors.ServeError:  # ServeError: the HTTP status they share
            continue
        assert sum(issubclass(cls, kind) for kind in kinds) == 1, f"{name} is not one of the five kinds"
    # what a caller used to catch still catches it
    assert issubclass(errors.DotParseError, ValueError) and issubclass(errors.GPUUnavailableError, RuntimeError)
    assert issubclass(errors.DistributedError, RuntimeError) and issubclass(errors.BadRequestError, ValueError)
