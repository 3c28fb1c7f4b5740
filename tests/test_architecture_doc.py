"""docs/architecture.md says what the package is: a table row for every package (a folder with an `__init__.py`)
whose last column is the package's `PURE`, and every top-level module named on the page. Read with `ast`, so the
check imports nothing."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from conftest import PACKAGE, REPO

DOC = REPO / "docs" / "architecture.md"
#: a package's row: | `cache/` | its job | buckets, plan, ... |
ROW = re.compile(r"^\| `(?P<package>[\w/]+)/` \|.*\| (?P<pure>[\w, ]*?) *\|$")


def doc_rows(text: str) -> dict[str, tuple[str, ...]]:
    """Package path ("cache", "studies/conditional") -> the names in its row's last column."""
    return {m["package"]: tuple(n.strip() for n in m["pure"].split(",") if n.strip())
            for m in map(ROW.match, text.splitlines()) if m}


def packages(root: Path = PACKAGE) -> list[str]:
    """Every package under `root` but `root` itself, as a path relative to it ("cache", "studies/conditional")."""
    return sorted(str(init.parent.relative_to(root)) for init in root.rglob("__init__.py")
                  if init.parent != root and "__pycache__" not in init.parts)


def pure_of(init: Path) -> tuple[str, ...]:
    """The `PURE = (...)` tuple of a package's `__init__.py`; () where it has none."""
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "PURE" for t in node.targets):
            return tuple(ast.literal_eval(node.value))
    return ()


@pytest.fixture(scope="module")
def rows() -> dict[str, tuple[str, ...]]:
    return doc_rows(DOC.read_text())


def test_every_package_has_a_row_and_every_row_a_package(rows):
    assert sorted(set(packages()) - set(rows)) == [], "add a row for these packages to docs/architecture.md"
    assert sorted(set(rows) - set(packages())) == [], "docs/architecture.md has rows for packages that are gone"


@pytest.mark.parametrize("package", packages())
def test_the_row_lists_the_packages_pure_modules(rows, package):
    if package not in rows:
        pytest.skip("no row (the test above says so)")
    assert sorted(rows[package]) == sorted(pure_of(PACKAGE / package / "__init__.py")), (
        f"the `{package}/` row of docs/architecture.md and graphlab/{package}/__init__.py's PURE differ")


def test_every_top_level_module_is_named():
    text = DOC.read_text()
    missing = sorted(p.name for p in PACKAGE.glob("*.py") if not re.search(rf"(?<![\w/]){re.escape(p.name)}", text))
    assert missing == [], "name these modules in docs/architecture.md (the picture of the floors)"


def test_the_reader_reads_rows_and_pure_tuples(tmp_path):
    text = ("| package | its job | pure modules |\n|---|---|---|\n| `cache/` | a job, with | bars | buckets, plan |\n"
            "| `studies/conditional/` | no pure modules |  |\nnot a row: `viz/` | x |\n")
    assert doc_rows(text) == {"cache": ("buckets", "plan"), "studies/conditional": ()}
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "pkg" / "__init__.py").write_text('"""doc"""\n#: pure\nPURE = ("a", "b")\n')
    (tmp_path / "pkg" / "sub" / "__init__.py").write_text("")
    assert packages(tmp_path) == ["pkg", "pkg/sub"]
    assert pure_of(tmp_path / "pkg" / "__init__.py") == ("a", "b") and pure_of(tmp_path / "pkg" / "sub" / "__init__.py") == ()
