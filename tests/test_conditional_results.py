"""Conditional studies as data: round trip, table, verdicts computed from the rows, recorded mode that
names the missing recording and its command, and the recorder's path stripping. No GPU needed."""
from __future__ import annotations

import json

import pytest
from conftest import FIXTURES

import graphlab as gl
from graphlab.graph.dot_parser import parse_dot
from graphlab.recordings import write_recording
from graphlab.errors import RecordingError
from graphlab.conditional import results as cr
from graphlab.studies import conditional as studies
from graphlab.studies.conditional import record as conditional_record
from graphlab.studies.conditional.record import strip_paths

DOT = (FIXTURES / "h200" / "conditional" / "route_b_gpt_while.dot").read_text()
PROV = {"gpu": "NVIDIA H200", "driver": "580.159.04", "torch": "2.11.0+cu130", "cuda": "13.0",
        "cuda_bindings": "13.3.1", "graphlab_version": "0.1.0", "git_commit": "test", "command": "test",
        "date": "2026-12-01T00:00:00Z"}


def _row(variant, case, wall, gpu=None, host=None, **extra):
    return {"variant": variant, "case": case, "wall_p50_us": wall, "gpu_p50_us": gpu or wall * 0.9,
            "host_p50_us": host or wall * 0.1, "launches": 1, "syncs": 0, **extra}


def _decode_study():
    rows = [_row(cr.WHILE_LOOP, "to the maximum (no EOS)", 2000.0, tokens=48),
            _row(cr.PER_TOKEN, "to the maximum (no EOS)", 5000.0, tokens=48),
            _row(cr.EAGER, "to the maximum (no EOS)", 20000.0, tokens=48)]
    return cr.ConditionalStudy(name="decode_loop", title="decode", question="q?", rows=rows,
                               checks={"tokens_identical": True, "iterations_counted": True},
                               facts={"route": "child"}, conditions={"gpu": "test"}, dot=DOT)


def test_a_study_round_trips_and_reads_rows():
    study = _decode_study()
    again = cr.ConditionalStudy.from_dict(json.loads(json.dumps(study.to_dict())), dot=DOT)
    assert again.rows == study.rows and again.checks == study.checks and again.passed
    assert study.variants == [cr.WHILE_LOOP, cr.PER_TOKEN, cr.EAGER]
    assert study.row(cr.PER_TOKEN)["wall_p50_us"] == 5000.0
    with pytest.raises(RecordingError, match="no row 'nope'"):
        study.row("nope")
    with pytest.raises(RecordingError, match="needs name"):
        cr.ConditionalStudy.from_dict({})


def test_the_verdict_compares_measured_rows_only():
    lines = _decode_study().verdict()
    assert lines[0] == ("to the maximum (no EOS): one WHILE launch 2.00 ms; one replay per token 5.00 ms "
                        "(2.50x as long), eager 20.0 ms (10.0x as long).")


def test_the_bucket_verdict_covers_launch_gpu_memory_and_build():
    rows = [_row(cr.SWITCH, "batch 1", 30.0, host=9.0), _row(cr.PER_BUCKET, "batch 1", 28.0, host=8.0)]
    facts = {"switch_pool_bytes": 4 << 20, "per_bucket_pool_bytes": 6 << 20, "switch_build_ms": 50.0,
             "per_bucket_build_ms": 70.0}
    study = cr.ConditionalStudy(name="bucket_switch", title="t", question="q", rows=rows, checks={}, facts=facts,
                                conditions={})
    text = "\n".join(study.verdict())
    assert "host time: one SWITCH graph takes 1.00 µs more than one graph per bucket" in text
    assert "memory pool for all buckets: one SWITCH graph 4.00 MiB, one graph per bucket 6.00 MiB" in text
    assert "building all buckets: one SWITCH graph 50.0 ms, one graph per bucket 70.0 ms" in text


def test_table_text_html_and_pandas():
    study = _decode_study()
    table = study.table()
    assert [table.header_of(c) for c in table.columns][:3] == ["variant", "case", "latency p50 (ms)"]
    assert "tokens" in [c.key for c in table.columns]
    assert table.cell(table.columns[2], study.rows[0]["wall_p50_us"]) == "2"
    assert "decode" in str(study) and "measured now on test" in str(study) and "<table" in study._repr_html_()
    pytest.importorskip("pandas")
    assert list(study.to_pandas()["variant"]) == study.variants


def test_the_graph_is_the_parsed_dot():
    graph = _decode_study().graph
    assert graph.count_by_kind()["conditional"] == 1
    with pytest.raises(RecordingError, match="kept no DOT"):
        cr.ConditionalStudy(name="x", title="t", question="q", rows=[], checks={}, facts={}, conditions={}).graph


def test_recorded_mode_without_the_recording_names_the_command(tmp_path, monkeypatch):
    monkeypatch.setenv("GRAPHLAB_RECORDINGS", str(tmp_path))
    with pytest.raises(RecordingError, match=r"no recording 'conditional' for GPU 'h200'.*; record it on a GPU "
                                             r"with `graphlab record --models conditional`"):
        cr.load_study("decode_loop", gpu="h200")
    with pytest.raises(RecordingError, match="no conditional study 'nope'"):
        cr.load_study("nope")


def test_recorded_mode_loads_the_study_and_its_graph(tmp_path, monkeypatch):
    monkeypatch.setenv("GRAPHLAB_RECORDINGS", str(tmp_path))
    study = _decode_study()
    write_recording(tmp_path / "h200" / "conditional", name="conditional", description="synthetic, test only",
                    provenance=PROV, graphs={"decode_loop": {"dot": DOT, "model": parse_dot(DOT)}},
                    results={"decode_loop": study.to_dict()})
    gl.set_mode("recorded")
    try:
        loaded = studies.decode_loop_study()
        assert loaded.rows == study.rows
        assert loaded.source.startswith("Recorded on NVIDIA H200")
        assert loaded.graph.count_by_kind() == parse_dot(DOT).count_by_kind()
        with pytest.raises(RecordingError, match="holds no 'early_exit' \\(ConditionalStudy\\); it has decode_loop"):
            studies.early_exit_study()
        with pytest.raises(gl.ConditionalUnsupportedError, match="recorded mode is on"):
            gl.cond(None, lambda: None)
    finally:
        gl.set_mode("auto")
        import graphlab.mode as mode

        mode._current = None


def test_recordings_hold_no_absolute_paths():
    value = {"error": "OSError: /opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libnvrtc.so.13 failed",
             "list": ["see /usr/local/cuda/include/cuda_device_runtime_api.h"], "n": 3, "ratio": "1/2"}
    clean = strip_paths(value)
    assert clean == {"error": "OSError: libnvrtc.so.13 failed", "list": ["see cuda_device_runtime_api.h"], "n": 3,
                     "ratio": "1/2"}


def test_every_study_module_has_its_line_in_the_pure_table_and_one_recording():
    """A study registers by being a module of graphlab.studies.conditional that names itself; the recorder runs
    them in the order of the pure table graphlab.conditional.results.VERDICTS, which must name the same ones."""
    order = [name for name, _ in conditional_record.studies_in_order()]
    assert order == list(cr.STUDY_NAMES) == ["early_exit", "decode_loop", "bucket_switch", "routes"]
    assert all(callable(module.run_for_recording) for module in studies.study_modules().values())
    assert conditional_record.RECORDING == cr.RECORDING
    assert callable(conditional_record.record)


def test_the_study_functions_are_found_by_name_and_answer_from_the_recording_in_recorded_mode():
    from graphlab.mode import STAND_INS

    for name in ("early_exit_study", "decode_loop_study", "bucket_switch_study", "conditional_route_study"):
        study = getattr(studies, name)
        assert study.__name__ == name and f"{study.__module__}.{name}" in STAND_INS
    assert studies.ConditionalStudy is cr.ConditionalStudy
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        studies.nope  # noqa: B018


def test_the_recorder_writes_what_recorded_mode_reads(tmp_path, monkeypatch):
    """record(out_root, prov), the protocol `graphlab record` calls, with the GPU studies replaced by one made up."""
    monkeypatch.setattr(conditional_record, "run_studies", lambda: ([_decode_study()], {"routes": "/opt/x/y.so: no"}))
    folder = conditional_record.record(tmp_path, PROV)
    assert folder == tmp_path / "h200" / cr.RECORDING
    monkeypatch.setenv("GRAPHLAB_RECORDINGS", str(tmp_path))
    loaded = cr.load_study("decode_loop", gpu="h200")
    assert loaded.rows == _decode_study().rows and loaded.graph.count_by_kind()["conditional"] == 1
    assert "/opt/" not in (folder / "errors.json").read_text()
