"""Every shipped recording says where it came from, and holds no path of the machine that made it."""
from __future__ import annotations

import json
import re

import pytest
from conftest import REPO

META = sorted((REPO / "data" / "recordings").glob("*/*/meta.json"))
ABSOLUTE = re.compile(r"(?<![\w.])/(root|home|tmp|work|opt|usr|var|mnt)/")


@pytest.mark.parametrize("path", META, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_recording_has_provenance_and_no_absolute_path(path):
    meta = json.loads(path.read_text())
    prov = meta["provenance"]
    assert prov["gpu"] and prov["driver"] and prov["torch"] and prov["date"] and "graphlab" in prov["command"]
    assert re.fullmatch(r"[0-9a-f]{40}|unknown", prov["git_commit"]), prov["git_commit"]
    for file in path.parent.iterdir():
        if file.suffix in (".json", ".dot"):
            found = ABSOLUTE.search(file.read_text())
            assert found is None, f"{file.name} holds a path of the recording machine: {found.group(0)}..."
