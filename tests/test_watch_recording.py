"""The watch recording on CPU: the recorder writes what the notebook loads, checked with SYNTHETIC examples
built from fixture DOTs in a temporary folder (never committed: real numbers come from the H200)."""
from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, REPO

import graphlab as gl
import graphlab.mode
from graphlab.errors import GraphlabError, RecordingError
from graphlab.studies import watch, watch_examples
from graphlab.studies import watch_overhead as watch_overhead_module
from graphlab.studies.watch_examples import WatchExample, batch_of, load_example, watch_example
from graphlab.studies.watch_overhead import WatchOverhead, watch_overhead
from graphlab.watch.frames import COMPILE_TREES, MAKE_GRAPHED_CALLABLES, TORCH_CUDA_GRAPH
from graphlab.watch.records import WatchedGraphs

MODELS = FIXTURES / "h200" / "models"
PROV = {"gpu": "NVIDIA H200", "driver": "synthetic", "torch": "synthetic", "cuda": "synthetic",
        "cuda_bindings": "synthetic", "graphlab_version": "0", "git_commit": "synthetic", "command": "test",
        "date": "2000-01-01T00:00:00Z"}


def dot(name: str) -> str:
    return (MODELS / f"{name}__verbose.dot").read_text()


def seen_of(*items: dict) -> WatchedGraphs:
    seen = WatchedGraphs()
    for item in items:
        seen.add({"device": "cuda:0", "capture_ms": 1.0, "user_file": "graphlab/studies/watch_examples.py",
                  "user_line": 1, **item})
    return seen


def synthetic_examples() -> dict[str, WatchExample]:
    compile_seen = seen_of(
        {"library": COMPILE_TREES, "role": "pool keeper", "dot": "digraph dot {\n}\n", "pool_bytes": 0},
        {"library": COMPILE_TREES, "role": "recording", "dot": dot("gpt_b1"), "input_shapes": [[1, 64]],
         "pool_bytes": 3, "details": {"compile_id": "0/0"}},
        {"library": COMPILE_TREES, "role": "recording", "dot": dot("gpt_b8"), "input_shapes": [[8, 64]],
         "pool_bytes": 5, "details": {"compile_id": "0/1", "int_inputs": [8]}},
        {"library": COMPILE_TREES, "role": "recording", "dot": None, "dot_error": "lost"})
    refs = {1: dot("gpt_b1"), 8: dot("gpt_b8")}
    compile_ex = WatchExample("compile", "synthetic", compile_seen,
                              calls=[{"batch_size": 1, "call": 0, "seconds": 1.0, "new_graphs": 0}],
                              facts={"recordings": 2}, reference={b: gl.parse_dot(t) for b, t in refs.items()},
                              reference_pool_bytes={1: 7, 8: 9}, reference_dots=refs)
    mgc = WatchExample("make_graphed_callables", "synthetic", seen_of(
        {"library": MAKE_GRAPHED_CALLABLES, "role": "forward", "dot": dot("mlp_b1"), "input_shapes": [[16, 256]]},
        {"library": MAKE_GRAPHED_CALLABLES, "role": "backward", "dot": dot("mlp_b8"), "input_shapes": [[16, 10]]}),
        facts={"graphs": 2})
    block = WatchExample("torch.cuda.graph", "synthetic", seen_of({"library": TORCH_CUDA_GRAPH, "dot": dot("mlp_b8")}),
                         facts={"graphs": 1})
    return {e.name: e for e in (compile_ex, mgc, block)}


OVERHEAD = WatchOverhead(model="gpt", batch_size=8, pairs=4, calls_per_block=2, unwatched_p50_us=1.0,
                         watched_p50_us=1.0, ratio_p50=1.0, ratio_p10=1.0, ratio_p90=1.0, spread_pct=0.0,
                         ratio_by_mode=[1.0], host_modes="1 mode", outputs_identical=True, max_abs_err_vs_eager=0.0,
                         graphs_watched=1, graphs_during_timing=0, compile_s={"watched": 1.0, "unwatched": 1.0},
                         source="synthetic")


@pytest.fixture
def recorded(tmp_path, monkeypatch):
    examples = synthetic_examples()
    monkeypatch.setattr(watch_examples, "run_example", lambda name, *a, **kw: examples[name])
    monkeypatch.setattr(watch_overhead_module, "measure_watch_overhead", lambda **kw: OVERHEAD)
    folder = watch.record(tmp_path, PROV)
    monkeypatch.setenv("GRAPHLAB_RECORDINGS", str(tmp_path))
    monkeypatch.setattr(graphlab.mode, "_current", None)
    gl.set_mode("recorded")
    yield folder, examples


def test_recorder_writes_graphs_metadata_and_results(recorded):
    folder, _ = recorded
    meta = json.loads((folder / "meta.json").read_text())
    assert list(meta["graphs"]) == ["compile-01", "compile-02", "capture-b1", "capture-b8", "mgc-00", "mgc-01",
                                    "block-00"]
    assert meta["graphs"]["compile-02"]["watched"]["input_shapes"] == [[8, 64]]
    assert meta["graphs"]["capture-b8"]["captured_by"] == "gl.capture"
    examples = json.loads((folder / "examples.json").read_text())
    without = examples["compile"]["graphs_without_dot"]
    assert [g["index"] for g in without] == [0, 3] and "lost" in without[1]["why"]
    comparison = json.loads((folder / "comparison.json").read_text())
    assert comparison["8"]["count_by_status"]["same"] > 0  # the same DOT on both sides here
    assert not meta["graphs"]["compile-01"]["watched"]["user_file"].startswith("/")  # no absolute paths


def test_recorded_examples_load_as_they_were(recorded):
    _, examples = recorded
    ex = watch_example("compile")
    assert "Recorded on NVIDIA H200" in ex.source
    assert [g.index for g in ex.seen] == [1, 2] and ex.seen[0].to_dict() == examples["compile"].seen[1].to_dict()
    assert ex.recording_for(8).details["int_inputs"] == [8] and batch_of(ex.recording_for(1)) == 1
    assert ex.reference_graph(8).count_by_kind() == examples["compile"].reference[8].count_by_kind()
    assert ex.diff(8).identical
    rows = ex.memory_rows()
    assert [(r["batch_size"], r["compile_pool_bytes"], r["capture_pool_bytes"]) for r in rows] == [(1, 3, 7), (8, 5, 9)]
    assert list(ex.calls_table().to_pandas().columns) == ["batch_size", "call", "did", "seconds", "new_graphs"]
    assert ex.facts == {"recordings": 2} and "2 graphs" in repr(ex) and "recordings" in ex._repr_html_()
    mgc = watch_example("make_graphed_callables")
    assert [g.role for g in mgc.seen] == ["forward", "backward"]
    assert watch_example("torch.cuda.graph").seen[0].library == TORCH_CUDA_GRAPH
    with pytest.raises(RecordingError, match=r"batch sizes \[1, 8\] only"):
        watch_example("compile", batch_sizes=[2])
    with pytest.raises(GraphlabError, match="no recording at batch size 4"):
        ex.recording_for(4)
    with pytest.raises(GraphlabError, match="no watch example"):
        watch_example("vllm")


def test_recorded_overhead(recorded):
    r = watch_overhead()
    assert r.ratio_p50 == 1.0 and r.outputs_identical and "Recorded on" in r.source
    assert "watched / unwatched 1.00x" in r.describe()
    assert "bit-identical" in str(r) and "Recorded on" in str(r.facts())
    with pytest.raises(RecordingError, match="batch size 8, not 1"):
        watch_overhead(batch_size=1)


def test_a_missing_recording_names_the_command(tmp_path, monkeypatch):
    monkeypatch.setenv("GRAPHLAB_RECORDINGS", str(tmp_path))
    monkeypatch.setattr(graphlab.mode, "_current", None)
    gl.set_mode("recorded")
    with pytest.raises(RecordingError, match="graphlab record --models watch"):
        load_example("compile")
    with pytest.raises(RecordingError, match="graphlab record --models watch"):
        watch_overhead()


def test_the_recorder_is_registered():
    from graphlab.studies.record import recorders

    assert recorders()["watch"] is watch


def test_notebook_runs_on_the_synthetic_recording(recorded, tmp_path, monkeypatch):
    from graphlab.tour import execute_notebook

    monkeypatch.setenv("TQDM_DISABLE", "1")
    path = REPO / "notebooks" / "10_what_did_compile_capture.ipynb"
    out = tmp_path / "executed"
    out.mkdir()
    execute_notebook(path, out, timeout_s=600)
    executed = json.loads((out / path.name).read_text())
    errors = [o for c in executed["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, errors[0]["evalue"] if errors else ""
