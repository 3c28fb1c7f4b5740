"""Every shipped recording says where it came from, and holds no path of the machine that made it."""
from __future__ import annotations

import json
import re
import types

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


def test_the_driver_writes_the_provenance_every_shipped_recording_has(monkeypatch):
    """`graphlab record`'s provenance: the fields of a zoo recording's, no more, no fewer (multigpu adds its own)."""
    from graphlab.studies import record

    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(get_device_name=lambda: "Test GPU"), __version__="9.9",
                                 version=types.SimpleNamespace(cuda="12.8"))
    monkeypatch.setattr(record, "torch", fake)
    prov = record.provenance("graphlab record --models mlp")
    assert (prov["gpu"], prov["torch"], prov["cuda"], prov["command"]) == ("Test GPU", "9.9", "12.8",
                                                                          "graphlab record --models mlp")
    shipped = json.loads((REPO / "data" / "recordings" / "h200" / "mlp" / "meta.json").read_text())["provenance"]
    assert set(prov) == set(shipped)
