"""One loader for recorded results (`gl.load`): types declare how they live in recordings, the loader reads them all
the same way, and no other module finds recordings, words the "record it" error or filters known fields itself."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import graphlab as gl
from graphlab.loader import dump, load, record_hint
from graphlab.recordings import write_recording
from graphlab.results_types import RESULT_TYPES, keep_known, recorded_result, schema_version

PROV = {"gpu": "NVIDIA H200", "driver": "580", "torch": "2.11.0+cu130", "cuda": "13.0", "graphlab_version": "0.1",
        "git_commit": "0" * 40, "command": "graphlab record --models probe", "date": "2026-12-04T00:00:00Z"}


@recorded_result(entry="probe", recording="probe", schema=2, fields={"name": 1, "values": 1, "unit": 2},
                 renamed={"old_values": "values"})
@dataclass(frozen=True)
class ProbeResult:
    name: str
    values: list[float]
    unit: str = "us"
    where: str = field(default="", compare=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProbeResult:
        return cls(**keep_known(cls, data))

    @classmethod
    def from_recording(cls, data: dict[str, Any], recording: Any) -> ProbeResult:
        return cls(**{**keep_known(cls, data), "where": recording.made})

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "values": self.values, "unit": self.unit}


@recorded_result(entries=("left", "right", "extra"), recording="probe", optional=("extra",))
class ProbePair:
    def __init__(self, parts: dict[str, Any]):
        self.parts = parts

    @classmethod
    def from_recording(cls, parts: dict[str, Any], recording: Any) -> ProbePair:
        return cls(parts)


def _root(tmp_path: Path, **results: Any) -> Path:
    write_recording(tmp_path / "h200" / "probe", name="probe", description="a probe", provenance=PROV, graphs={},
                    results=results)
    return tmp_path


def test_a_declared_type_loads_with_its_provenance_and_without_fields_it_does_not_know(tmp_path):
    root = _root(tmp_path, probe={"schema": "graphlab.probe/2", "name": "p", "values": [1.0], "unit": "ms",
                                  "added_by_a_newer_graphlab": 3}, left=[1], right={"a": 2})
    got = load(ProbeResult, root=root, gpu="h200")
    assert got == ProbeResult("p", [1.0], "ms") and got.where == "recorded on NVIDIA H200 on 2026-12-04"
    assert load(ProbePair, root=root, gpu="h200").parts == {"left": [1], "right": {"a": 2}}  # "extra" may be absent
    from graphlab.recordings import load_recording

    opened = load_recording("probe", gpu="h200", root=root)
    assert load(ProbeResult, opened) == got  # a recording already open


@pytest.mark.parametrize("marker, version", [(None, 1), (2, 2), ("graphlab.probe/2", 2), ("graphlab.probe/1", 1)])
def test_a_file_says_its_version_as_a_string_an_int_or_not_at_all(marker, version):
    data = {"name": "p"} if marker is None else {"schema": marker, "name": "p"}
    assert schema_version(data, ProbeResult.RESULTS) == version


def test_an_older_file_is_read_and_only_what_its_version_holds_is_asked_of_it(tmp_path):
    root = _root(tmp_path, probe={"name": "old", "old_values": [2.0]})  # version 1: no unit yet, an older name
    assert load(ProbeResult, root=root, gpu="h200") == ProbeResult("old", [2.0], "us")
    incomplete = _root(tmp_path / "x", probe={"schema": 2, "name": "p", "values": [1.0]})  # v2 holds a unit
    with pytest.raises(gl.RecordingError, match=r"probe/probe \(graphlab.probe/2\) lacks unit"):
        load(ProbeResult, root=incomplete, gpu="h200")


def test_a_newer_file_or_another_types_file_is_a_clear_error(tmp_path):
    newer = _root(tmp_path, probe={"schema": "graphlab.probe/3", "name": "p", "values": [], "unit": "s"})
    with pytest.raises(gl.RecordingError, match="graphlab.probe/3, newer than this graphlab reads"):
        load(ProbeResult, root=newer, gpu="h200")
    other = _root(tmp_path / "o", probe={"schema": "graphlab.sweep/3", "name": "p", "values": [], "unit": "s"})
    with pytest.raises(gl.RecordingError, match="a 'sweep' result"):
        load(ProbeResult, root=other, gpu="h200")


def test_a_missing_recording_or_entry_says_how_to_record_it(tmp_path):
    with pytest.raises(gl.RecordingError, match=r"no recording 'probe'.*record it on a GPU with `graphlab record --models probe`"):
        load(ProbeResult, root=tmp_path, gpu="h200")
    root = _root(tmp_path, left=[1])
    with pytest.raises(gl.RecordingError, match=r"holds no 'probe' \(ProbeResult\); it has left; record it"):
        load(ProbeResult, root=root, gpu="h200")
    with pytest.raises(gl.RecordingError, match="lacks right of a ProbePair"):
        load(ProbePair, root=root, gpu="h200")
    assert record_hint("cache") == "record it on a GPU with `graphlab record --models cache`"


def test_what_is_not_a_results_type_or_names_no_recording_is_bad_input():
    with pytest.raises(gl.BadInputError, match="'dict' is not a results type"):
        load(dict)

    @recorded_result(entry="nowhere")
    @dataclass
    class Nowhere:
        pass

    with pytest.raises(gl.BadInputError, match=r"say which recording holds the Nowhere: gl.load\(Nowhere, 'NAME'\)"):
        load(Nowhere)
    del RESULT_TYPES["Nowhere"]
    with pytest.raises(gl.BadInputError, match="entry='name' or entries"):
        recorded_result(entry="a", entries=("b", "c"))


def test_dump_stamps_the_types_schema():
    assert dump(ProbeResult("p", [1.0]))["schema"] == "graphlab.probe/2"


def test_the_most_specific_found_in_pattern_wins_whatever_the_order():
    from graphlab.results_types import type_for

    @recorded_result(entry="wide", found_in=("probe2/*_b*",))
    class Wide:
        pass

    @recorded_result(entry="narrow", found_in=("probe2/events_*",))
    class Narrow:
        pass

    try:
        assert type_for("probe2", "events_gpt_b1").cls is Narrow and type_for("probe2", "gpt_b1").cls is Wide
    finally:
        del RESULT_TYPES["Wide"], RESULT_TYPES["Narrow"]


def test_a_type_that_asks_for_its_entry_is_told_it(tmp_path):
    @recorded_result(entry="one", recording="probe", found_in=("probe/o*",))
    class Named:
        def __init__(self, entry):
            self.entry = entry

        @classmethod
        def from_recording(cls, data, recording, entry):
            return cls(entry)

    try:
        root = _root(tmp_path, one={"a": 1}, other={"a": 2})
        assert load(Named, root=root, gpu="h200", entry="other").entry == "other"
    finally:
        del RESULT_TYPES["Named"]
