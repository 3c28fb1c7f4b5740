"""The profile, decode, conditional, multi-GPU and watch recordings read through `gl.load`: which type reads which
entry, what each attaches from its recording, that the writers' formats read back unchanged, and the one error a
missing recording gives (issue 38)."""
from __future__ import annotations

import ast
import json
import shutil
import warnings

import pytest
from conftest import REPO
from multigpu_synthetic import write_multigpu

import graphlab as gl
import graphlab.mode
from graphlab.conditional.results import ConditionalErrors, ConditionalStudy, load_study
from graphlab.conditional.support import ConditionalSupport
from graphlab.decode.results import DecodeReports
from graphlab.distributed.results import MultiGpuRecording, multigpu_recordings
from graphlab.errors import BadInputError, RecordingError
from graphlab.loader import load
from graphlab.profile.recorded import what_if_checks
from graphlab.profile.results import ChromeTrace, Profile, ProfileChecks, ProfileEvents
from graphlab.recordings import load_recording, write_recording
from graphlab.results_types import RESULT_TYPES, type_for
from graphlab.watch.records import WatchCases, WatchComparison, WatchOverhead

H200 = REPO / "data" / "recordings" / "h200"


def _raw(recording: str, entry: str):
    rec = load_recording(recording, gpu="h200", root=REPO / "data" / "recordings")
    return rec.results(entry)


@pytest.fixture
def recorded(monkeypatch):
    monkeypatch.setattr(graphlab.mode, "_current", None)
    gl.set_mode("recorded")
    yield


# -- which type reads which entry ---------------------------------------------------------------------------------
@pytest.mark.parametrize("recording, entry, name", [
    ("profile", "mlp_b1", "Profile"), ("profile", "resnet50_b64", "Profile"),
    ("profile", "events_mlp_b1", "ProfileEvents"), ("profile", "events_resnet50_b64", "ProfileEvents"),
    ("profile", "chrome_mlp_b1", "ChromeTrace"), ("profile", "attribution_check", "ProfileChecks"),
    ("profile", "what_if", "ProfileChecks"), ("profile", "errors", "ProfileChecks"),
    ("decode", "reports", "DecodeReports"), ("decode", "failed", "DecodeReports"),
    ("conditional", "support", "ConditionalSupport"), ("conditional", "routes", "ConditionalStudy"),
    ("conditional", "early_exit", "ConditionalStudy"), ("conditional", "errors", "ConditionalErrors"),
    ("multigpu", "allreduce", "MultiGpuRecording"), ("multigpu", "replicas", "MultiGpuRecording"),
    ("watch", "examples", "WatchCases"), ("watch", "comparison", "WatchComparison"),
    ("watch", "overhead", "WatchOverhead"),
])
def test_each_entry_is_read_by_its_type(recording, entry, name):
    assert type_for(recording, entry).name == name


def test_a_profile_events_entry_is_not_read_as_a_profile():
    """"profile/*_b*" also matches "events_gpt_b1": the events' own type must win (it is registered first)."""
    names = list(RESULT_TYPES)
    assert names.index("ProfileEvents") < names.index("Profile") and names.index("ChromeTrace") < names.index("Profile")


# -- profile -------------------------------------------------------------------------------------------------------
def test_a_loaded_profile_has_its_graph_and_says_where_it_was_recorded():
    prof = load(Profile, entry="gpt_b64", gpu="h200")
    assert prof.name == "gpt b64" and prof.graph.source.startswith("profile gpt_b64")
    assert prof.where() == "Recorded on NVIDIA H200 on 2026-12-02" and "driver" in prof.conditions["recorded"]
    assert {n.node_id for n in prof.nodes} <= {n.id for n in prof.graph.nodes()}
    assert prof == gl.profile.recorded("gpt b64")


def test_recorded_mode_says_what_the_profile_recording_has(recorded):
    with pytest.raises(RecordingError, match="the profile recording has no 'gpt_b3'; it has mlp_b1, mlp_b64"):
        gl.profile("gpt b3")


def test_the_recorded_events_fold_into_the_recorded_profile():
    events = load(ProfileEvents, entry="events_mlp_b64", gpu="h200")
    prof = events.profile(load_recording("profile", gpu="h200").graph("mlp_b64"))
    recorded = load(Profile, entry="mlp_b64", gpu="h200")
    assert prof.replays == len(events.replays) == 3 and prof.matched_fraction == 1.0
    assert {n.node_id: n.modules for n in prof.nodes} == {n.node_id: n.modules for n in recorded.nodes}


def test_the_chrome_trace_and_the_checks():
    assert len(load(ChromeTrace, gpu="h200").replays()) == 3
    checks = load(ProfileChecks, gpu="h200")
    assert checks.attribution_exact and checks.errors == {} and set(checks.what_if) == {"chain", "two_streams"}
    assert str(checks) == str(what_if_checks()) and "recorded on NVIDIA H200" in checks.table().title


@pytest.mark.parametrize("entry, cls", [("events_mlp_b1", ProfileEvents), ("chrome_mlp_b1", ChromeTrace)])
def test_the_profile_writers_format_reads_back_unchanged(entry, cls):
    raw = _raw("profile", entry)
    assert cls.from_dict(raw).to_dict() == raw


def test_the_profile_checks_write_the_three_entries_as_recorded():
    parts = {k: _raw("profile", k) for k in ("attribution_check", "what_if", "errors")}
    assert ProfileChecks.from_dict(parts).to_dict() == parts


def test_a_newer_profile_file_is_a_clear_error(tmp_path):
    shutil.copytree(H200 / "profile", tmp_path / "h200" / "profile")
    path = tmp_path / "h200" / "profile" / "mlp_b1.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "schema": 2}))
    with pytest.raises(RecordingError, match=r"profile/mlp_b1 is graphlab.gpt_b1/2, newer than this graphlab"):
        load(Profile, entry="mlp_b1", gpu="h200", root=tmp_path)
    assert load(Profile, entry="mlp_b64", gpu="h200", root=tmp_path).name == "mlp b64"


# -- decode --------------------------------------------------------------------------------------------------------
def test_the_decode_reports_load_with_where_they_were_recorded():
    recorded = load(DecodeReports, gpu="h200")
    assert recorded.archs == ["llama", "gpt2"] and recorded.failed == {}
    assert recorded.report("llama").source == "recorded on NVIDIA H200 on 2026-12-02"
    with pytest.raises(BadInputError, match="arch must be one of llama, gpt2, got 'mistral'"):
        recorded.report("mistral")


def test_the_decode_writer_keeps_its_entries():
    parts = {"reports": _raw("decode", "reports"), "failed": {"gpt2": "RuntimeError: no"}}
    written = DecodeReports.from_dict(parts).to_dict()
    assert set(written) == {"reports", "failed"} and written["failed"] == parts["failed"]
    assert set(written["reports"]) == {"llama", "gpt2"}
    assert [(t["way"], t["batch"], t["p50_us"], t["p99_us"]) for t in written["reports"]["llama"]["timings"]] == \
        [(t["way"], t["batch"], t["p50_us"], t["p99_us"]) for t in parts["reports"]["llama"]["timings"]]


def test_a_recording_without_the_optional_entries_still_loads(tmp_path):
    for name, entry in (("decode", "failed"), ("profile", "errors")):
        shutil.copytree(H200 / name, tmp_path / "h200" / name)
        meta_path = tmp_path / "h200" / name / "meta.json"
        meta = json.loads(meta_path.read_text())
        del meta["results"][entry]
        meta_path.write_text(json.dumps(meta))
    assert load(DecodeReports, gpu="h200", root=tmp_path).failed == {}
    assert load(ProfileChecks, gpu="h200", root=tmp_path).errors == {}


# -- conditional ---------------------------------------------------------------------------------------------------
def test_the_conditional_studies_and_the_support_load():
    study = load(ConditionalStudy, entry="decode_loop", gpu="h200")
    assert study.source.startswith("Recorded on NVIDIA H200") and study.dot
    assert study == load_study("decode_loop", "h200")
    assert load(ConditionalStudy, entry="routes", gpu="h200").dot is None  # the routes study keeps no graph
    support = load(ConditionalSupport, gpu="h200")
    assert support.recorded_where == "NVIDIA H200, recorded on 2026-12-01" and support.kinds["switch"]
    written = ConditionalSupport.from_dict(_raw("conditional", "support")).to_dict()
    assert json.loads(json.dumps(written)) == _raw("conditional", "support")


def test_newer_support_facts_are_left_out():
    data = _raw("conditional", "support")
    newer = {**data, "facts": {**data["facts"], "found_by_a_newer_graphlab": True}}
    assert ConditionalSupport.from_dict(newer) == ConditionalSupport.from_dict(data)


def test_a_failed_study_is_read_as_its_error(tmp_path):
    shutil.copytree(H200 / "conditional", tmp_path / "h200" / "conditional")
    meta_path = tmp_path / "h200" / "conditional" / "meta.json"
    meta = json.loads(meta_path.read_text())
    (tmp_path / "h200" / "conditional" / "errors.json").write_text(json.dumps({"routes": "RuntimeError: boom"}))
    meta["results"]["errors"] = "errors.json"
    meta_path.write_text(json.dumps(meta))
    assert load(ConditionalErrors, gpu="h200", root=tmp_path).errors == {"routes": "RuntimeError: boom"}
    assert type_for("conditional", "errors").cls is ConditionalErrors


# -- multi-GPU -----------------------------------------------------------------------------------------------------
def test_a_multigpu_recording_loads_its_four_entries_once(tmp_path):
    write_multigpu(tmp_path, 2)
    rec = gl.load(MultiGpuRecording, gpu="h200x2", root=tmp_path)
    assert set(rec.parts) == {"distributed", "tensor_parallel", "replicas", "allreduce"}
    assert rec.world_size == 2 and [r["rank"] for r in rec.allreduce()] == [0, 1]
    assert multigpu_recordings("h200", root=tmp_path).largest() == rec


def test_the_shipped_multigpu_recording_and_no_deprecated_call_inside_graphlab(recorded):
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        rec = gl.multigpu_recordings().largest()
        from graphlab.studies.replica_throughput import replica_throughput

        assert "requests per second" in str(replica_throughput()).lower()
    assert rec == load(MultiGpuRecording, gpu="h200") and rec.allreduce()[0]["correct"]
    def called(node: ast.AST) -> str:
        return getattr(node.func, "id", getattr(node.func, "attr", "")) if isinstance(node, ast.Call) else ""

    calls = [f"{path.relative_to(REPO)}:{node.lineno}" for path in (REPO / "graphlab").rglob("*.py")
             for node in ast.walk(ast.parse(path.read_text())) if called(node) == "load_multigpu"]
    assert calls == []


# -- watch ---------------------------------------------------------------------------------------------------------
def test_the_watch_cases_read_their_graphs_from_the_recording():
    cases = load(WatchCases, gpu="h200")
    assert cases.names == ["compile", "make_graphed_callables", "torch.cuda.graph"]
    seen = cases.seen("compile")
    assert len(seen) == len(cases.case("compile")["graph_keys"]) and seen.recorded == cases.where
    assert sorted(cases.references("compile")) == [1, 4, 8]
    with pytest.raises(RecordingError, match="has no 'vllm' example; it has compile"):
        cases.case("vllm")
    with pytest.raises(RecordingError, match="not read from a recording"):
        WatchCases.from_dict(_raw("watch", "examples")).seen("compile")
    assert WatchCases.from_dict(_raw("watch", "examples")).to_dict() == _raw("watch", "examples")


def test_the_watch_comparison_and_overhead():
    comparison = load(WatchComparison, gpu="h200")
    assert [r["batch_size"] for r in comparison.rows()] == [1, 4, 8] and "gl.capture b1" in comparison.summary(1)
    assert "torch.compile's graph vs gl.capture's" in str(comparison)
    assert WatchComparison.from_dict(_raw("watch", "comparison")).to_dict() == _raw("watch", "comparison")
    overhead = load(WatchOverhead, gpu="h200")
    assert overhead.source.startswith("Recorded on NVIDIA H200") and overhead.outputs_identical
    written = overhead.to_dict()
    written.pop("source")
    assert written == _raw("watch", "overhead")


# -- one error when the recording is missing -----------------------------------------------------------------------
@pytest.mark.parametrize("cls, name", [(Profile, "profile"), (ProfileChecks, "profile"), (DecodeReports, "decode"),
                                       (ConditionalStudy, "conditional"), (ConditionalSupport, "conditional"),
                                       (MultiGpuRecording, "multigpu"), (WatchCases, "watch"),
                                       (WatchOverhead, "watch")])
def test_a_missing_recording_says_how_to_record_it(tmp_path, cls, name):
    write_recording(tmp_path / "h200" / "other", name="other", description="test", graphs={}, results={},
                    provenance={"gpu": "NVIDIA H200", "driver": "0", "torch": "0", "cuda": "0",
                                "graphlab_version": "0", "git_commit": "0", "command": "test",
                                "date": "2026-01-01T00:00:00Z"})
    with pytest.raises(RecordingError, match=f"record it on a GPU with `graphlab record --models {name}`"):
        load(cls, gpu="h200", root=tmp_path)


def test_the_types_are_public_names():
    """gl.MultiGpuRecording etc. (graphlab._LAZY), so gl.load(gl.MultiGpuRecording, gpu=...) reads as the docs say."""
    assert gl.MultiGpuRecording is MultiGpuRecording and gl.DecodeReports is DecodeReports
    assert gl.ConditionalStudy is ConditionalStudy and gl.WatchOverhead is WatchOverhead
