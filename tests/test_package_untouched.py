"""The session fixture in conftest.py that fails a run which wrote into graphlab/: its file listing."""
from __future__ import annotations

from conftest import PACKAGE, files_under


def test_files_under_lists_nested_files_relative_to_the_root_without_pycache(tmp_path):
    (tmp_path / "pkg" / "__pycache__").mkdir(parents=True)
    (tmp_path / "pkg" / "__pycache__" / "mod.cpython-312.pyc").write_bytes(b"")
    (tmp_path / "pkg" / "mod.py").write_text("")
    (tmp_path / "top.py").write_text("")
    before = files_under(tmp_path)
    assert before == {"top.py", "pkg/mod.py"}
    (tmp_path / "pkg" / "written.json").write_text("{}")
    assert sorted(files_under(tmp_path) - before) == ["pkg/written.json"]


def test_the_package_listing_holds_its_modules_and_no_bytecode():
    listed = files_under(PACKAGE)
    assert {"__init__.py", "graph/model.py"} <= listed
    assert not [f for f in listed if "__pycache__" in f]
