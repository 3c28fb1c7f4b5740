"""Recordings: format validation, clear errors for broken ones, and the committed H200 recordings."""
from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import REPO

from graphlab.graph.model import CudaGraph, Edge, Graph, Node, NodeKind
from graphlab.recordings import (
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
    graph = again.graph("b1")  # parsed from the DOT on load
    assert [(n.id, n.kind, n.name) for n in graph.nodes()] == [(n.id, n.kind, "_Z6kernelv") for n in _model().nodes()]
    assert list(graph.edges()) == list(_model().edges())
    assert again.results("sweep") == {"rows": []}
    assert again.graph_info("b1")["batch_size"] == 1
    assert "Test GPU" in again.banner() and "pytest" in again.banner()
    assert rec.path == again.path
    assert [r.name for r in list_recordings(tmp_path)] == ["toy"]


def test_the_dot_is_the_record_no_parsed_copy_is_written(tmp_path):
    rec = _write(tmp_path)  # graphs still carry a "model" entry, as older callers pass it: ignored
    assert sorted(p.name for p in rec.path.iterdir()) == ["b1.dot", "meta.json", "sweep.json"]
    entry = json.loads((rec.path / "meta.json").read_text())["graphs"]["b1"]
    assert entry == {"dot": "b1.dot", "batch_size": 1}
    with pytest.raises(RecordingError, match=r"no stored model \(only its DOT\): use .graph\('b1'\)"):
        rec.stored_model("b1")


def test_an_older_recording_with_its_parsed_model_still_loads(tmp_path):
    rec = _write(tmp_path)
    meta = json.loads((rec.path / "meta.json").read_text())
    meta["graphs"]["b1"]["model"] = "b1.json"  # as recordings made before 2026-12 were written
    (rec.path / "meta.json").write_text(json.dumps(meta))
    (rec.path / "b1.json").write_text(_model().to_json())
    old = load_recording("toy", root=tmp_path)
    assert old.stored_model("b1") == _model()
    assert len(old.graph("b1")) == 2
    (rec.path / "b1.json").unlink()  # an index naming a file that is not there is still a broken recording
    with pytest.raises(RecordingError, match="b1.json: file missing"):
        load_recording("toy", root=tmp_path)


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
    assert rec.graph_names or rec.result_names, "a recording holds graphs or measurements"
    census = rec.results("census") if "census" in rec.result_names else {}
    for key in rec.graph_names:
        assert "model" not in rec.graph_info(key), "recordings ship the DOT only; the model is parsed on load"
        parsed = rec.graph(key)
        # CUDAGraph Trees capture an empty graph that only holds its memory pool: the watch records it as such
        assert len(parsed) > 0 or rec.graph_info(key).get("watched", {}).get("role") == "pool keeper", key
        counted = census.get(key)
        if counted is None:
            continue
        # the DOT parsed here against the census taken through the CUDA graph API at record time
        assert parsed.count_by_kind() == counted["count_by_kind"]
        assert len(parsed.graphs) == counted["graph_count"]
        assert sum(1 for _ in parsed.edges()) == counted["edge_count"]
        api_kernels = sorted(n["name"] for n in counted["nodes"] if n["kind"] == "kernel")
        assert sorted(n.name for n in parsed.kernels()) == api_kernels


@pytest.mark.skipif(not COMMITTED, reason="no recordings committed yet")
def test_the_zoo_recordings_carry_a_census_for_every_graph():
    for meta_path in COMMITTED:
        rec = Recording.open(meta_path.parent)
        if "sweep" in rec.result_names and rec.graph_names[0].startswith("b"):
            assert sorted(rec.results("census")) == sorted(rec.graph_names), rec.path


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
