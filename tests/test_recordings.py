"""Recordings: format validation, clear errors for broken ones, and the committed H200 recordings."""
from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import REPO

from graphlab.core.model import CudaGraph, Edge, Graph, Node, NodeKind
from graphlab.core.recordings import (
    REQUIRED_PROVENANCE,
    Recording,
    gpu_slug,
    list_recordings,
    load_recording,
    recordings_root,
    write_recording,
)
from graphlab.errors import RecordingError

PROVENANCE = {
    "gpu": "Test GPU",
    "driver": "0",
    "torch": "0",
    "cuda": "0",
    "graphlab_version": "0",
    "git_commit": "0",
    "command": "pytest",
    "date": "2026-01-01T00:00:00Z",
}
DOT = """digraph dot {
subgraph cluster_1 {
label="graph_1" graph[style="dashed"];
"graph_1_node_0"[style="bold" shape="octagon" label="0
_Z6kernelv
"];

"graph_1_node_1"[style="bold" shape="octagon" label="1
_Z6kernelv
"];

"graph_1_node_0" -> "graph_1_node_1";
}
}
"""


def _model() -> CudaGraph:
    nodes = tuple(Node(id=f"graph_1_node_{i}", graph_id="graph_1", index=i, kind=NodeKind.KERNEL) for i in range(2))
    return CudaGraph(graphs=(Graph("graph_1", nodes, (Edge("graph_1_node_0", "graph_1_node_1"),)),))


def _write(tmp_path: Path, **overrides) -> Recording:
    args = dict(
        name="toy",
        description="two kernels",
        provenance=PROVENANCE,
        graphs={"b1": {"dot": DOT, "model": _model(), "batch_size": 1}},
        results={"sweep": {"rows": []}},
    )
    args.update(overrides)
    return write_recording(tmp_path / "test-gpu" / "toy", **args)


def test_round_trip(tmp_path):
    rec = _write(tmp_path)
    again = load_recording("toy", root=tmp_path)
    assert again.graph_names == ["b1"]
    assert again.dot("b1") == DOT
    assert again.stored_model("b1") == _model()
    assert again.results("sweep") == {"rows": []}
    assert again.graph_info("b1")["batch_size"] == 1
    assert "Test GPU" in again.banner() and "pytest" in again.banner()
    assert rec.path == again.path
    assert [r.name for r in list_recordings(tmp_path)] == ["toy"]


def test_unknown_names_list_what_exists(tmp_path):
    _write(tmp_path)
    with pytest.raises(RecordingError, match="available: toy"):
        load_recording("nope", root=tmp_path)
    rec = load_recording("toy", root=tmp_path)
    with pytest.raises(RecordingError, match="it has b1"):
        rec.dot("b8")
    with pytest.raises(RecordingError, match="it has sweep"):
        rec.results("timeline")


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda m: m.pop("provenance"), "missing key"),
        (lambda m: m["provenance"].pop("driver"), "provenance lacks driver"),
        (lambda m: m.update(schema=99), "schema 99"),
        (lambda m: m["graphs"]["b1"].update(dot="../../etc/passwd"), "plain file name"),
        (lambda m: m["graphs"]["b1"].update(dot="gone.dot"), "file missing"),
        (lambda m: m["results"].update(sweep=5), "plain file name"),
    ],
)
def test_broken_meta_is_a_clear_error(tmp_path, damage, message):
    rec = _write(tmp_path)
    meta = json.loads((rec.path / "meta.json").read_text())
    damage(meta)
    (rec.path / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(RecordingError, match=message):
        Recording.open(rec.path)


def test_invalid_json_names_file_and_line(tmp_path):
    rec = _write(tmp_path)
    (rec.path / "meta.json").write_text('{"schema": 1,\n oops}')
    with pytest.raises(RecordingError, match=r"meta.json: not valid JSON \(line 2"):
        Recording.open(rec.path)


def test_write_refuses_incomplete_provenance(tmp_path):
    with pytest.raises(RecordingError, match="provenance lacks"):
        _write(tmp_path, provenance={"gpu": "x"})


def test_gpu_slug():
    assert gpu_slug("NVIDIA H200") == "h200"
    assert gpu_slug("NVIDIA GeForce RTX 4090") == "geforce-rtx-4090"


# -- the committed recordings ---------------------------------------------------------------------
COMMITTED = sorted((REPO / "data" / "recordings").glob("*/*/meta.json"))


def test_recordings_root_is_the_checkout_here():
    assert recordings_root() == REPO / "data" / "recordings"


@pytest.mark.skipif(not COMMITTED, reason="no recordings committed yet")
@pytest.mark.parametrize("meta_path", COMMITTED, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_committed_recording_is_complete_and_consistent(meta_path):
    rec = Recording.open(meta_path.parent)
    prov = rec.provenance
    assert all(prov[key] not in (None, "") for key in REQUIRED_PROVENANCE), prov
    assert rec.graph_names, "a recording holds at least one graph"
    for key in rec.graph_names:
        parsed = rec.graph(key)
        stored = rec.stored_model(key)
        # the stored model is the parse of the stored DOT: same nodes, kinds and edges
        assert [(n.id, n.kind) for n in parsed.nodes()] == [(n.id, n.kind) for n in stored.nodes()]
        assert sorted(parsed.edges(), key=str) == sorted(stored.edges(), key=str)
        assert len(parsed) > 0


@pytest.mark.skipif(not COMMITTED, reason="no recordings committed yet")
def test_recordings_install_with_the_package(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(REPO)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = tmp_path.glob("graphlab-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for meta_path in COMMITTED:
        rel = meta_path.relative_to(REPO / "data" / "recordings").as_posix()
        assert f"graphlab/_data/recordings/{rel}" in names
    assert any(n.startswith("graphlab/_data/notebooks/") and n.endswith(".ipynb") for n in names)
