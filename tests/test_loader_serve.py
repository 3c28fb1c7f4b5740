"""The cache, traffic and serving results through the one loader (`gl.load`): each type declares its entries, default
recording and schema; the stand-ins and the deprecated `load_http_serving` read through it; each study writes what
its type reads (studies run here with their GPU measurements replaced by fixed numbers, into a temp folder)."""
from __future__ import annotations

import ast
import json
from types import SimpleNamespace
from typing import Any

import pytest
from conftest import REPO

import graphlab as gl
import graphlab.mode as mode
from graphlab.cache.results import FIGURE_PARTS, CacheFigures, TrafficReplay
from graphlab.errors import RecordingError, ResultsError
from graphlab.loader import record_hint
from graphlab.recordings import load_recording, write_recording
from graphlab.results_types import results_type, type_for
from graphlab.loadtest.over_http import HttpServing
from graphlab.loadtest.report import LoadPoint, LoadTest

RECORDINGS = REPO / "data" / "recordings"
PROV = {"gpu": "synthetic CPU fixture (tests only)", "driver": "-", "torch": "-", "cuda": "-",
        "graphlab_version": "-", "git_commit": "-", "command": "tests", "date": "2026-01-01T00:00:00Z"}


@pytest.fixture
def recorded(monkeypatch):
    """Recorded mode over the shipped recordings; the mode is restored afterwards."""
    monkeypatch.setattr(mode, "_current", None)
    mode.set_mode("recorded")


# -- the declarations -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cls, entries, recording, schema", [
    (CacheFigures, FIGURE_PARTS, "cache", 1),
    (TrafficReplay, ("traffic",), "traffic", 1),
    (LoadTest, ("gpt",), "serving", 1),
    (HttpServing, ("hey", "raw", "protocols", "ray"), "serving_http", 1),
])
def test_each_type_declares_its_entries_default_recording_and_schema(cls, entries, recording, schema):
    spec = results_type(cls)
    assert (spec.entries, spec.recording, spec.schema) == (entries, recording, schema)
    for entry in entries:
        assert type_for(recording, entry) is spec


def test_the_other_load_tests_of_the_serving_recordings_are_load_tests():
    for where in ("serving/gpt_asgi", "serving/resnet18", "serving_http/gpt_http", "serving_http/gpt_direct"):
        assert type_for(*where.split("/")).cls is LoadTest, where


def test_each_study_writes_the_recording_its_type_reads():
    from graphlab.loadtest import api as loadtest
    from graphlab.studies import cache, serving, serving_http, traffic

    assert cache.RECORDING == results_type(CacheFigures).recording
    assert traffic.RECORDING == results_type(TrafficReplay).recording
    assert serving.RECORDING == loadtest.RECORDING == results_type(LoadTest).recording
    assert serving_http.RECORDING == loadtest.RECORDING_OF_TRANSPORT["http"] == results_type(HttpServing).recording


def test_the_types_are_public_so_gl_load_takes_them():
    assert (gl.CacheFigures, gl.TrafficReplay, gl.HttpServing, gl.LoadTest) == (CacheFigures, TrafficReplay,
                                                                                 HttpServing, LoadTest)


# -- the shipped recordings, through the loader ---------------------------------------------------------------
def test_the_cache_figures_are_every_part_of_the_cache_recording_with_its_provenance():
    rec = load_recording("cache", gpu="h200")
    figures = gl.load(gl.CacheFigures, gpu="h200")
    assert figures.data == {key: rec.results(key) for key in rec.result_names} and figures.provenance == rec.provenance
    assert "recorded on NVIDIA H200" in figures.table("pools").title


def test_the_traffic_replay_is_the_traffic_recording_with_its_provenance():
    rec = load_recording("traffic", gpu="h200")
    replay = gl.load(gl.TrafficReplay, gpu="h200")
    assert replay.data == rec.results("traffic") and replay.provenance == rec.provenance


@pytest.mark.parametrize("recording, entry", [("serving", "gpt"), ("serving", "gpt_asgi"), ("serving", "resnet18"),
                                              ("serving_http", "gpt_http"), ("serving_http", "gpt_direct")])
def test_a_load_test_says_the_recording_it_came_from(recording, entry):
    rec = load_recording(recording, gpu="h200")
    sweep = gl.load(gl.LoadTest, recording, gpu="h200", entry=entry)
    assert sweep == LoadTest.from_dict(rec.results(entry), source=rec.banner())
    assert sweep.where().startswith("Recorded on NVIDIA H200")


def test_the_http_measurements_hold_both_sweeps_of_the_same_run():
    http = gl.load(gl.HttpServing, gpu="h200")
    assert http.open_loop == gl.load(gl.LoadTest, "serving_http", gpu="h200", entry="gpt_http")
    assert http.in_process == gl.load(gl.LoadTest, "serving_http", gpu="h200", entry="gpt_direct")
    assert http.raw == load_recording("serving_http", gpu="h200").results("raw")


def test_the_stand_ins_answer_with_what_gl_load_reads(recorded):
    from graphlab.loadtest.api import run_loadtest
    from graphlab.studies.cache import cache_figures
    from graphlab.studies.traffic import traffic_replay

    assert cache_figures() == gl.load(gl.CacheFigures)
    assert traffic_replay() == gl.load(gl.TrafficReplay)
    assert run_loadtest("gpt", transport="asgi").points == gl.load(gl.LoadTest, entry="gpt_asgi").points
    assert run_loadtest("gpt", transport="http").points == gl.load(gl.LoadTest, "serving_http", entry="gpt_http").points


# -- errors and schemas -----------------------------------------------------------------------------------------
def test_no_recording_names_the_one_record_hint(tmp_path):
    for cls, name in ((gl.CacheFigures, "cache"), (gl.TrafficReplay, "traffic"), (gl.LoadTest, "serving"),
                      (gl.HttpServing, "serving_http")):
        with pytest.raises(RecordingError, match=record_hint(name).replace("`", ".")):
            gl.load(cls, gpu="h200", root=tmp_path)


def test_a_cache_recording_lacking_a_part_says_which(tmp_path):
    parts = {key: {"error": "RuntimeError: not measured"} for key in FIGURE_PARTS if key != "threads"}
    write_recording(tmp_path / "cpu" / "cache", name="cache", description="test", provenance=PROV, graphs={},
                    results=parts)
    with pytest.raises(RecordingError, match="lacks threads of a CacheFigures"):
        gl.load(gl.CacheFigures, gpu="cpu", root=tmp_path)


def _sweep_file(**extra: Any) -> dict[str, Any]:
    data = json.loads((RECORDINGS / "h200" / "serving" / "gpt_asgi.json").read_text())
    return {**data, **extra}


def test_a_load_test_newer_than_this_graphlab_is_a_clear_error_and_unknown_fields_stay_out(tmp_path):
    write_recording(tmp_path / "cpu" / "serving", name="serving", description="test", provenance=PROV, graphs={},
                    results={"gpt": _sweep_file(schema=2), "gpt_asgi": _sweep_file(added_later=[1, 2])})
    with pytest.raises(RecordingError, match="newer than this graphlab reads"):
        gl.load(gl.LoadTest, gpu="cpu", root=tmp_path)
    assert gl.load(gl.LoadTest, gpu="cpu", root=tmp_path, entry="gpt_asgi").points  # read as version 1


def test_a_load_test_without_points_is_incomplete(tmp_path):
    data = {k: v for k, v in _sweep_file().items() if k != "points"}
    write_recording(tmp_path / "cpu" / "serving", name="serving", description="test", provenance=PROV, graphs={},
                    results={"gpt": data})
    with pytest.raises(RecordingError, match="lacks points"):
        gl.load(gl.LoadTest, gpu="cpu", root=tmp_path)


def test_a_load_point_keeps_the_fields_it_knows_and_names_those_it_lacks():
    point = _sweep_file()["points"][0]
    assert LoadPoint.from_dict({**point, "added_later": 1}) == LoadPoint.from_dict(point)
    with pytest.raises(ResultsError, match="a load point lacks gpu_busy_pct, slot_wait_pct"):
        LoadPoint.from_dict({k: v for k, v in point.items() if k not in ("gpu_busy_pct", "slot_wait_pct")})


def test_cache_stats_keep_the_fields_they_know():
    stats = load_recording("cache", gpu="h200").results("demo_stats")["stats"]
    read = gl.CacheStats.from_dict({**stats, "added_later": 1,
                                    "per_bucket": {k: {**v, "added_later": 2} for k, v in stats["per_bucket"].items()}})
    assert read == gl.CacheStats.from_dict(stats) and read.captures == stats["captures"]


# -- the studies write what the types read ----------------------------------------------------------------------
def test_the_cache_study_writes_every_part_cache_figures_reads(tmp_path, monkeypatch):
    from graphlab.studies import cache, cache_bench

    for name in ("hot_path", "pool_memory", "eviction_memory", "threads", "padding_check_demo"):
        monkeypatch.setattr(cache_bench, name, lambda *args, name=name: {"measured": name})
    monkeypatch.setattr(cache, "demo_stream", lambda: (SimpleNamespace(graphs={}), {"stats": {"hits": 3}}))
    folder = cache.record(tmp_path, PROV)
    figures = gl.load(gl.CacheFigures, gpu=folder.parent.name, root=tmp_path)
    assert set(figures.data) == set(FIGURE_PARTS) and figures.data["pools"] == {"measured": "pool_memory"}
    assert figures.provenance == PROV


def test_the_traffic_study_writes_the_replay_stamped_with_its_schema(tmp_path, monkeypatch):
    from graphlab.studies import traffic

    shipped = load_recording("traffic", gpu="h200").results("traffic")
    monkeypatch.setattr(traffic, "replay_all", lambda: shipped)
    folder = traffic.record(tmp_path, PROV)
    written = json.loads((folder / "traffic.json").read_text())
    assert written == {**shipped, "schema": "graphlab.traffic/1"}
    replay = gl.load(gl.TrafficReplay, root=tmp_path)
    assert replay.settings() == gl.load(gl.TrafficReplay, gpu="h200").settings() and replay.provenance == PROV


def test_the_serving_study_writes_load_tests_in_their_own_format(tmp_path, monkeypatch):
    from graphlab.studies import serving

    shipped = gl.load(gl.LoadTest, gpu="h200", entry="gpt_asgi")
    monkeypatch.setattr(serving, "run_loadtest", lambda *args, **kwargs: LoadTest.from_dict(shipped.to_dict()))
    monkeypatch.setattr(serving.importlib.util, "find_spec", lambda name: object())
    folder = serving.record(tmp_path, PROV)
    assert json.loads((folder / "gpt.json").read_text())["schema"] == 1  # an int, as the shipped files say
    for entry in ("gpt", "gpt_asgi", "resnet18"):
        assert gl.load(gl.LoadTest, root=tmp_path, entry=entry).points == shipped.points


# -- nothing in graphlab calls the deprecated loader (tests/test_serve_over_http.py: it warns) -------------------------
def test_no_module_of_graphlab_calls_load_http_serving():
    calls = []
    for path in sorted((REPO / "graphlab").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if name == "load_http_serving":
                    calls.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert calls == []

