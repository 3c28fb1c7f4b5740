"""No `assert` statement in library code: `python -O` strips them, so a check the library relies on raises an error
of its kind (`graphlab/errors.py`), and a case that cannot happen is written out of the code."""
from __future__ import annotations

import ast

from conftest import PACKAGE, REPO


def asserts_in(source: str, name: str) -> list[str]:
    """`name:line` for every assert statement in `source`."""
    return [f"{name}:{node.lineno}" for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Assert)]


def test_no_library_module_asserts():
    found = [where for path in sorted(PACKAGE.rglob("*.py"))
             for where in asserts_in(path.read_text(), str(path.relative_to(REPO)))]
    assert found == [], f"asserts at {found}: raise an error of its kind (graphlab/errors.py), or remove the case"


def test_the_walk_finds_an_assert_anywhere_in_a_module():
    source = "assert x\ndef f():\n    class C:\n        def g(self):\n            assert self, 'why'\n"
    assert asserts_in(source, "m.py") == ["m.py:1", "m.py:5"]
    assert asserts_in("x = 'assert y'\n# assert z\n", "m.py") == []
