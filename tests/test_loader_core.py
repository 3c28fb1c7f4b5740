"""The core recordings read through the one loader (`gl.load`): the zoo recordings' census, the pitfalls, the overhead
benchmark, the dense sweeps and their timings; each written by its study through the same type, in the same format;
each recording's name said once, where its type or its reader declares it; the catalog's `open_recording` is the
loader's."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REPO

import graphlab as gl
from graphlab.errors import GPUUnavailableError, RecordingError, ResultsError
from graphlab.graph.census import Census, CensusNode, RecordedCensus, RecordedCensuses
from graphlab.loader import dump, load, record_hint
from graphlab.recordings import load_recording, write_recording
from graphlab.results_types import RESULT_TYPES, type_for
from graphlab.studies.dense import DenseTimings
from graphlab.studies.overhead_report import OverheadBenchmark
from graphlab.studies.pitfalls import RecordedPitfalls
from graphlab.timing.results import Sweep
from graphlab.zoo import ZOO

ROOT = REPO / "data" / "recordings"
ZOO_RECORDINGS = ("mlp", "cnn", "gpt", "encoder", "resnet18")
PROV = {"gpu": "Test GPU", "driver": "1", "torch": "9.9", "cuda": "1", "graphlab_version": "0", "git_commit": "x",
        "command": "test", "date": "2026-01-01T00:00:00Z"}


def _raw(name: str, entry: str) -> object:
    return load_recording(name, gpu="h200", root=ROOT).results(entry)


def _same(a: object, b: object) -> bool:
    """Equal as JSON (a tuple written is a list read)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


# -- what each type reads -----------------------------------------------------------------------------------------
def test_the_types_of_the_core_recordings_are_registered_with_their_entry_recording_and_schema():
    expected = {"RecordedCensuses": ("census", "mlp", 1), "RecordedPitfalls": ("pitfalls", "pitfalls", 1),
                "OverheadBenchmark": ("overhead", "overhead", 1), "DenseTimings": ("dense_timings", "dense", 1)}
    for name, (entry, recording, schema) in expected.items():
        spec = RESULT_TYPES[name]
        assert (spec.entry, spec.recording, spec.schema) == (entry, recording, schema), name
    for name in ZOO_RECORDINGS:
        assert type_for(name, "census").cls is RecordedCensuses
    assert type_for("dense", "dense_timings").cls is DenseTimings
    assert all(type_for("dense", m).cls is Sweep for m in (*ZOO_RECORDINGS, "gpt_seq"))


@pytest.mark.parametrize("name", ZOO_RECORDINGS)
def test_a_zoo_census_reads_and_writes_back_its_file_unchanged(name):
    censuses = load(RecordedCensuses, name, gpu="h200", root=ROOT)
    raw = _raw(name, "census")
    assert list(censuses) == list(raw) and _same(censuses.to_dict(), raw)
    assert censuses.provenance["gpu"] == "NVIDIA H200"
    b8 = censuses["b8"]
    assert b8.agrees_with_dot and b8.compare() == raw["b8"]["disagreements"] == []
    assert b8.count_by_kind() == raw["b8"]["count_by_kind"] and len(b8) == len(raw["b8"]["nodes"])


def test_a_census_round_trips_and_keeps_out_what_it_does_not_know():
    census = Census([CensusNode(0, 0, "kernel", "k", (1, 1, 1), (32, 1, 1), 0), CensusNode(0, 1, "memcpy",
                     copy_direction="HtoD", copy_bytes=64)], edge_count=1, graph_count=1)
    data = json.loads(json.dumps(census.to_dict()))
    data["nodes"][0]["added_later"] = 1
    again = Census.from_dict(data)
    assert again == census and again.nodes[0].grid == (1, 1, 1)
    with pytest.raises(ResultsError, match="not a census"):
        Census.from_dict({"nodes": [{"kind": "kernel"}]})
    failed = RecordedCensus.from_dict({"error": "needs cuda-bindings"})
    assert failed.census is None and not failed.agrees_with_dot and failed.to_dict() == {"error": "needs cuda-bindings"}
    taken = RecordedCensus(census, ("edge count differs",))
    assert RecordedCensus.from_dict(json.loads(json.dumps(taken.to_dict()))) == taken
    assert taken.to_dict()["agrees_with_dot"] is False


def test_a_recorded_graph_census_comes_through_the_loader_and_a_failed_one_says_so(recorded, tmp_path, monkeypatch):
    zoo = gl.get_model("mlp")
    cg = gl.capture(zoo.build(), *zoo.make_inputs(8))
    assert isinstance(cg.census(), RecordedCensus) and cg.census().compare(cg.graph) == []
    assert "Recorded on NVIDIA H200" in str(cg.check_census())
    # a recording whose census could not be taken on its GPU: said, not read as "they agree"
    rec = load_recording("mlp", gpu="h200", root=ROOT)
    graphs = {"b8": {"dot": rec.dot("b8"), "batch_size": 8, "dot_flags": 1}}
    write_recording(tmp_path / "h200" / "mlp", name="mlp", description="", provenance=PROV, graphs=graphs,
                    results={"census": RecordedCensuses({"b8": RecordedCensus(None, error="no bindings")}).to_dict()})
    monkeypatch.setenv("GRAPHLAB_RECORDINGS", str(tmp_path))
    cg = gl.capture(zoo.build(), *zoo.make_inputs(8))
    with pytest.raises(GPUUnavailableError, match="no census was taken when b8 was recorded .no bindings."):
        cg.census()


def test_the_pitfalls_read_through_their_type_as_the_notebook_shows_them(recorded):
    from graphlab.studies import pitfalls

    recorded_pitfalls = gl.load(RecordedPitfalls)
    raw = _raw("pitfalls", "pitfalls")
    assert recorded_pitfalls.to_dict() == raw and recorded_pitfalls.examples == list(pitfalls.EXAMPLES)
    rec = load_recording("pitfalls", gpu="h200", root=ROOT)
    assert recorded_pitfalls.where == f"{rec.made} with torch {rec.provenance['torch']}"
    assert recorded_pitfalls.where.startswith("recorded on NVIDIA H200 on 2026-")
    item = pitfalls.run_example("item")
    assert item.cause.key == "host_sync" and item.where == recorded_pitfalls.where and item.code
    assert pitfalls.recorded_diagnoses(rec).keys() == recorded_pitfalls.diagnoses.keys()
    after = pitfalls.capture_after_pitfalls()
    assert after.verify().passed
    with pytest.raises(ResultsError, match="pitfalls' outcomes"):
        RecordedPitfalls.from_dict({"example": "item"})


def test_a_pitfalls_recording_without_an_example_says_what_it_has(recorded, tmp_path, monkeypatch):
    from graphlab.studies import pitfalls

    outcomes = RecordedPitfalls(tuple(o for o in _raw("pitfalls", "pitfalls") if o["example"] != "cpu"))
    write_recording(tmp_path / "h200" / "pitfalls", name="pitfalls", description="", provenance=PROV, graphs={},
                    results={"pitfalls": dump(outcomes)})
    monkeypatch.setenv("GRAPHLAB_RECORDINGS", str(tmp_path))
    with pytest.raises(GPUUnavailableError, match="no outcome of example 'cpu' .it has item, print"):
        pitfalls.run_example("cpu")


def test_the_overhead_benchmark_reads_its_shipped_file_unchanged():
    bench = load(OverheadBenchmark, gpu="h200", root=ROOT)
    raw = _raw("overhead", "overhead")
    assert dump(bench) == bench.to_dict() == raw
    assert bench.provenance["command"] == "graphlab record --models overhead"
    assert "recorded on NVIDIA H200 on 2026-12-02" in bench.table().title


def test_the_dense_timings_read_and_written_through_their_type():
    timings = load(DenseTimings, gpu="h200", root=ROOT)
    raw = _raw("dense", "dense_timings")
    assert _same(timings.to_dict(), raw) and set(timings.seconds_per_part) == {*ZOO_RECORDINGS, "gpt_seq"}
    assert dump(timings) == {**timings.to_dict(), "schema": "graphlab.dense_timings/1"}
    assert DenseTimings.from_dict(json.loads(json.dumps(dump(timings)))) == timings
    gpt = load(Sweep, "dense", gpu="h200", root=ROOT, entry="gpt")
    assert gpt.batch_sizes == list(range(1, 65)) and gpt.conditions["gpu"] == "NVIDIA H200"


def test_recorded_models_reads_the_same_batch_sizes_as_the_files_hold(recorded):
    models = {r["model"]: r for r in gl.recorded_models().rows}
    dense = load_recording("dense", gpu="h200", root=ROOT)
    for name in ZOO_RECORDINGS:
        rec = load_recording(name, gpu="h200", root=ROOT)
        swept = {r["batch_size"] for r in dense.results(name)["rows"] if r.get("seq_len") is None}
        swept |= {r["batch_size"] for r in rec.results("sweep")["rows"]}
        assert models[name]["latency_batch_sizes"] == sorted(swept)
        assert models[name]["graph_batch_sizes"] == sorted(int(k[1:]) for k in rec.graph_names)
    assert "gl.load(gl.Sweep, 'dense', entry='gpt')" in str(gl.recorded_models().table().notes)


# -- one name, one wording ------------------------------------------------------------------------------------------
def test_each_core_recording_is_named_once():
    from graphlab.capture.recorded import CELLS_RECORDING
    from graphlab.studies import cells, dense, overhead, overhead_report, pitfalls
    from graphlab.timing.recorded import DENSE_RECORDING

    assert cells.RECORDING == CELLS_RECORDING == "cells"
    assert dense.RECORDING == DENSE_RECORDING == DenseTimings.RESULTS.recording == "dense"
    assert overhead.RECORDING == overhead_report.NAME == OverheadBenchmark.RESULTS.recording == "overhead"
    assert pitfalls.RECORDING == RecordedPitfalls.RESULTS.recording == "pitfalls"


def test_every_types_default_recording_is_a_zoo_model_or_an_experiment():
    from test_loader_coverage import _import_everything

    from graphlab.studies.catalog import listings

    _import_everything()
    made = {*ZOO, *(s.name for s in listings())}
    unknown = {name: spec.recording for name, spec in RESULT_TYPES.items()
               if spec.recording is not None and spec.recording not in made and not name.startswith("Probe")}
    assert unknown == {}


def test_the_catalog_reads_a_recording_name_declared_by_a_type_or_imported(tmp_path, monkeypatch):
    from graphlab.studies.catalog import read_listing

    monkeypatch.setattr("graphlab.studies.catalog._module_name", lambda path: path.stem)
    body = 'def record(out_root, prov):\n    """Does x."""\n'
    cases = {
        "typed": "from graphlab.studies.overhead_report import OverheadBenchmark\n"
                 "RECORDING: str = OverheadBenchmark.RESULTS.recording\n",
        "imported": "from graphlab.capture.recorded import CELLS_RECORDING as RECORDING\n",
        "assigned": "from graphlab.timing.recorded import DENSE_RECORDING\nRECORDING = DENSE_RECORDING\n",
        "chained": "from graphlab.studies.dense import RECORDING\n",  # dense's own: a name assigned from an import
        "elsewhere": "from elsewhere import NAME\nRECORDING = NAME\n",  # not graphlab's: the source cannot say
        "computed": "RECORDING = 'over' + 'head'\n",
        "spec": "from graphlab.results_types import results_type\nfrom graphlab.studies.dense import DenseTimings\n"
                "RECORDING = str(results_type(DenseTimings).recording)\n",  # a Name keyword: read in dense.py
    }
    found = {}
    for name, head in cases.items():
        (tmp_path / f"{name}.py").write_text(head + body)
        listing = read_listing(tmp_path / f"{name}.py")
        found[name] = listing.name if listing else None
    assert found == {"typed": "overhead", "imported": "cells", "assigned": "dense", "chained": "dense",
                     "elsewhere": None, "computed": None, "spec": "dense"}


def test_the_catalogs_open_recording_is_the_loaders(tmp_path, monkeypatch):
    from graphlab import loader
    from graphlab.studies import catalog

    assert catalog.open_recording is loader.open_recording
    monkeypatch.setenv("GRAPHLAB_RECORDINGS", str(tmp_path))
    with pytest.raises(RecordingError, match=f"no recording 'overhead'.*; {record_hint('overhead')}"):
        catalog.open_recording("overhead")


def test_a_cell_the_recording_lacks_names_the_recording_not_a_command(recorded):
    from graphlab.capture.recorded import recorded_cell

    with pytest.raises(GPUUnavailableError, match="notebook cells the 'cells' recording holds") as info:
        recorded_cell("logits = model(ids) * 2", {}, name="step")
    assert "graphlab record" not in str(info.value)


def test_no_core_module_calls_a_deprecated_alias():
    """Nothing inside graphlab calls `load_overhead` (a warning pointing into graphlab is a notebook finding)."""
    for path in (REPO / "graphlab").rglob("*.py"):
        text = path.read_text()
        calls = [line for line in text.splitlines() if "load_overhead(" in line and "def load_overhead" not in line
                 and "warnings.warn" not in line]
        assert calls == [], f"{path.relative_to(REPO)} calls load_overhead: {calls}"


def test_repro_reads_the_recorded_sweep_through_the_loader():
    import ast

    tree = ast.parse(Path(REPO / "graphlab" / "timing" / "repro.py").read_text())
    called = {ast.unparse(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    assert "load" in called and "Sweep.from_dict" not in called


def test_graphlab_record_writes_the_census_through_its_type_in_the_shipped_format(tmp_path, monkeypatch):
    """`record_model` on a stand-in GPU: the graphs and census of the shipped mlp recording go in, the same census
    file comes out (a failed census is written as its error)."""
    import types

    from graphlab.capture.verify import VerifyResult
    from graphlab.studies import record

    shipped = load_recording("mlp", gpu="h200", root=ROOT)
    censuses = load(RecordedCensuses, "mlp", gpu="h200", root=ROOT)

    class FakeGraph:
        def __init__(self, key):
            self.key, self.capture_ms, self.instantiate_ms = key, 1.0, 0.5
            self.cost = types.SimpleNamespace(capture_state="warm")
            self.pool_bytes, self.peak_bytes, self.exec_bytes = 1 << 20, 1 << 19, 0

        def verify(self, trials):
            return VerifyResult(True, 0.0, 0.0, trials, 1, "output", 1e-3, 1e-5)

        def dot(self):
            return shipped.dot(self.key)

        def census(self):
            if self.key == "b2":
                raise gl.UnsupportedError("a census needs cuda-bindings")
            return censuses[self.key].census

        def reset(self):
            pass

    zoo = types.SimpleNamespace(description="stand-in", build=lambda device: None,
                                make_inputs=lambda b, device: ())
    monkeypatch.setattr(record, "get_model", lambda name: zoo)
    monkeypatch.setattr(record, "capture", lambda model, *inputs, name, **kw: FakeGraph(name.split("-")[-1]))
    folder = record.record_model("mlp", [1, 2, 8], tmp_path, {**PROV, "gpu": "Test GPU"}, False, None)
    written = load(RecordedCensuses, "mlp", gpu="test-gpu", root=tmp_path)
    raw = json.loads((folder / "census.json").read_text())
    assert "schema" not in raw and list(raw) == ["b1", "b2", "b8"]
    assert _same(raw["b1"], shipped.results("census")["b1"]) and _same(raw["b8"], shipped.results("census")["b8"])
    assert raw["b2"] == {"error": "a census needs cuda-bindings"} and written["b2"].error == raw["b2"]["error"]
