"""Recordings made by someone else (issue 26): names stay names, paths stay inside the root, symlinks that
leave it are refused, JSON has a size and a depth limit, every failure is one RecordingError naming the file,
and one broken folder does not hide the others from `list_recordings`."""
from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import pytest

from graphlab import recordings
from graphlab.errors import DotLimitError, GraphlabError, RecordingError
from graphlab.graph.dot_limits import DotLimits, dot_limits
from graphlab.recordings import Recording, broken_recordings, list_recordings, load_recording, write_recording

PROVENANCE = {"gpu": "Test GPU", "driver": "0", "torch": "0", "cuda": "0", "graphlab_version": "0",
              "git_commit": "0", "command": "pytest", "date": "2026-01-01T00:00:00Z"}
DOT = ('digraph dot {\nsubgraph cluster_1 {\nlabel="graph_1" graph[style="dashed"];\n'
       '"graph_1_node_0"[style="bold" shape="octagon" label="0\n_Z6kernelv\n"];\n}\n}\n')


def _write(root: Path, name: str = "toy", gpu: str = "test-gpu") -> Recording:
    return write_recording(root / gpu / name, name=name, description="one kernel", provenance=PROVENANCE,
                           graphs={"b1": {"dot": DOT, "batch_size": 1}}, results={"sweep": {"rows": []}})


def _meta(rec: Recording) -> dict:
    return json.loads((rec.path / "meta.json").read_text())


def _set_meta(rec: Recording, meta: dict) -> None:
    (rec.path / "meta.json").write_text(json.dumps(meta))


# -- names ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["../../outside/evil/x", "../outside", "..", "a/b", "a\\b", "*", "to?", "[t]oy",
                                  ".hidden", "", "t" * 101, "toy\n"])
def test_a_recording_name_that_is_not_a_plain_name_is_refused(tmp_path: Path, name: str) -> None:
    _write(tmp_path / "root")
    with pytest.raises(RecordingError, match="is not a plain name"):
        load_recording(name, root=tmp_path / "root")


@pytest.mark.parametrize("gpu", ["..", "*", "../test-gpu", "h?00"])
def test_a_gpu_folder_that_is_not_a_plain_name_is_refused(tmp_path: Path, gpu: str) -> None:
    _write(tmp_path / "root")
    with pytest.raises(RecordingError, match="GPU folder .* is not a plain name"):
        load_recording("toy", gpu=gpu, root=tmp_path / "root")


def test_traversal_out_of_the_root_never_reads_the_outside_recording(tmp_path: Path) -> None:
    _write(tmp_path / "outside", name="x", gpu="evil")  # a valid recording, outside the root
    _write(tmp_path / "root")  # root/test-gpu/toy: "*/../../outside/evil/x" would reach tmp/outside/evil/x
    with pytest.raises(RecordingError, match="is not a plain name"):
        load_recording("../../outside/evil/x", root=tmp_path / "root")
    with pytest.raises(RecordingError, match="outside"):  # opened by path, with a root: kept inside it
        Recording.open(tmp_path / "root" / "test-gpu" / ".." / ".." / "outside" / "evil" / "x", root=tmp_path / "root")


def test_glob_characters_are_not_patterns(tmp_path: Path) -> None:
    _write(tmp_path, name="toy")
    with pytest.raises(RecordingError, match="not a plain name"):
        load_recording("t*", root=tmp_path)
    with pytest.raises(RecordingError, match="not a plain name"):
        load_recording("toy", gpu="*", root=tmp_path)
    assert load_recording("toy", gpu="test-gpu", root=tmp_path).name == "toy"


# -- symlinks ---------------------------------------------------------------------------------------------
def test_a_dot_file_that_is_a_symlink_out_of_the_root_is_refused_unread(tmp_path: Path) -> None:
    rec = _write(tmp_path / "root")
    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0:root:/root:/bin/bash\n")
    (rec.path / "b1.dot").unlink()
    (rec.path / "b1.dot").symlink_to(secret)
    with pytest.raises(RecordingError, match=r"b1\.dot: the file .*\(a symlink\) leads to .*secret\.txt, outside"):
        load_recording("toy", root=tmp_path / "root")
    opened = Recording(rec.path, _meta(rec), tmp_path / "root")  # made before the swap: checked again on read
    with pytest.raises(RecordingError, match="outside"):
        opened.dot("b1")
    with pytest.raises(RecordingError, match="outside"):
        opened.graph("b1")


def test_a_results_file_or_meta_json_that_is_a_symlink_out_is_refused(tmp_path: Path) -> None:
    rec = _write(tmp_path / "root")
    outside = tmp_path / "elsewhere.json"
    outside.write_text('{"rows": [1]}')
    (rec.path / "sweep.json").unlink()
    (rec.path / "sweep.json").symlink_to(outside)
    with pytest.raises(RecordingError, match=r"sweep\.json: the file .* outside"):
        load_recording("toy", root=tmp_path / "root")
    meta = rec.path / "meta.json"
    (tmp_path / "meta.json").write_text(meta.read_text())
    meta.unlink()
    meta.symlink_to(tmp_path / "meta.json")
    with pytest.raises(RecordingError, match=r"meta\.json: the file .* outside"):
        load_recording("toy", root=tmp_path / "root")


def test_a_recording_folder_that_is_a_symlink_out_of_the_root_is_refused(tmp_path: Path) -> None:
    real = _write(tmp_path / "outside")
    (tmp_path / "root" / "test-gpu").mkdir(parents=True)
    (tmp_path / "root" / "test-gpu" / "toy").symlink_to(real.path, target_is_directory=True)
    with pytest.raises(RecordingError, match="recording folder .*outside"):
        load_recording("toy", root=tmp_path / "root")


def test_a_symlink_that_stays_inside_the_root_is_followed(tmp_path: Path) -> None:
    rec = _write(tmp_path / "root")
    (rec.path / "shared.dot").write_text(DOT)
    (rec.path / "b1.dot").unlink()
    (rec.path / "b1.dot").symlink_to(rec.path / "shared.dot")
    assert len(load_recording("toy", root=tmp_path / "root").graph("b1")) == 1


def test_a_symlink_loop_is_one_recording_error(tmp_path: Path) -> None:
    rec = _write(tmp_path / "root")
    (rec.path / "sweep.json").unlink()
    os.symlink(rec.path / "loop.json", rec.path / "sweep.json")
    os.symlink(rec.path / "sweep.json", rec.path / "loop.json")
    with pytest.raises(RecordingError, match="sweep.json"):
        load_recording("toy", root=tmp_path / "root")


# -- file names inside meta.json ---------------------------------------------------------------------------
@pytest.mark.parametrize("bad", ["../../../etc/passwd", "/etc/passwd", "..", ".", "sub/b1.dot", "b1.dot\x00"])
def test_file_names_in_meta_json_must_be_plain(tmp_path: Path, bad: str) -> None:
    rec = _write(tmp_path)
    meta = _meta(rec)
    meta["graphs"]["b1"]["dot"] = bad
    _set_meta(rec, meta)
    with pytest.raises(RecordingError, match=r"meta\.json: graphs\.b1\.dot must be a plain file name"):
        Recording.open(rec.path)


# -- JSON: size, depth, encoding ---------------------------------------------------------------------------
def test_meta_json_nested_100k_deep_is_one_recording_error(tmp_path: Path) -> None:
    rec = _write(tmp_path)
    (rec.path / "meta.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(RecordingError, match=r"meta\.json: JSON nested too deep"):
        Recording.open(rec.path)


def test_results_nested_too_deep_is_one_recording_error(tmp_path: Path) -> None:
    rec = _write(tmp_path)
    (rec.path / "sweep.json").write_text('{"a":' * 100_000 + "1" + "}" * 100_000)
    with pytest.raises(RecordingError, match=r"sweep\.json: JSON nested too deep"):
        Recording.open(rec.path).results("sweep")


def test_a_json_file_past_the_size_limit_is_refused_before_it_is_read(tmp_path: Path, monkeypatch) -> None:
    rec = _write(tmp_path)
    monkeypatch.setattr(recordings, "MAX_JSON_BYTES", 1000)
    (rec.path / "sweep.json").write_text(json.dumps({"rows": list(range(1000))}))
    with pytest.raises(RecordingError, match=r"sweep\.json: [0-9,]+ bytes, more than a recording's JSON may hold"):
        Recording.open(rec.path).results("sweep")
    with open(rec.path / "big.json", "wb") as f:  # a sparse 1 GB file: refused by its size, never read
        f.truncate(2**30)
    with pytest.raises(RecordingError, match=r"big\.json: 1,073,741,824 bytes"):
        recordings._read_json(rec.path / "big.json")


@pytest.mark.parametrize("content", [b"\xff\xfe\x00binary", b'{"schema": 1, "name": "toy"', b""])
def test_binary_or_truncated_meta_json_is_one_recording_error(tmp_path: Path, content: bytes) -> None:
    rec = _write(tmp_path)
    (rec.path / "meta.json").write_bytes(content)
    with pytest.raises(RecordingError, match=r"meta\.json: (cannot read|not valid JSON)"):
        Recording.open(rec.path)


# -- DOT limits apply to recordings ------------------------------------------------------------------------
def test_a_recordings_dot_is_read_under_the_dot_limits(tmp_path: Path) -> None:
    rec = _write(tmp_path)
    with pytest.raises(RecordingError, match=r"b1\.dot: [0-9,]+ bytes, more than the limit of 10 \(max_bytes\)") as info:
        rec.graph("b1", limits=DotLimits(max_bytes=10))
    assert isinstance(info.value.__cause__, DotLimitError) and info.value.__cause__.limit == "max_bytes"
    with dot_limits(max_label_chars=3), pytest.raises(RecordingError, match="max_label_chars"):
        rec.graph("b1")
    assert len(rec.graph("b1")) == 1
    (rec.path / "b1.dot").write_bytes(b"\xff\xfe binary")
    with pytest.raises(RecordingError, match=r"b1\.dot:1: binary data"):
        rec.graph("b1")


# -- list_recordings ---------------------------------------------------------------------------------------
def test_one_broken_folder_is_skipped_and_reported_not_raised(tmp_path: Path) -> None:
    _write(tmp_path, name="good")
    bad = _write(tmp_path, name="bad")
    (bad.path / "meta.json").write_text("[" * 100_000)
    deep = _write(tmp_path, name="deep")
    (deep.path / "b1.dot").unlink()
    (deep.path / "b1.dot").symlink_to("/etc/passwd")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = list_recordings(tmp_path)
    assert [r.name for r in found] == ["good"]
    messages = sorted(str(w.message) for w in caught)
    assert len(messages) == 2 and all(m.startswith("skipped a broken recording: ") for m in messages)
    assert any("bad" in m and "meta.json" in m for m in messages)
    assert any("b1.dot" in m and "outside" in m for m in messages)
    assert sorted(p.name for p, _ in broken_recordings(tmp_path)) == ["bad", "deep"]


def test_folders_with_unsafe_names_are_not_listed(tmp_path: Path) -> None:
    _write(tmp_path, name="good")
    (tmp_path / "test-gpu" / "we*ird").mkdir()
    (tmp_path / "test-gpu" / "we*ird" / "meta.json").write_text("{}")
    assert [r.name for r in list_recordings(tmp_path)] == ["good"]


def test_every_failure_is_a_graphlab_error_naming_the_file(tmp_path: Path) -> None:
    rec = _write(tmp_path)
    (rec.path / "sweep.json").write_bytes(b"\x00\x01\x02")
    with pytest.raises(GraphlabError) as info:
        Recording.open(rec.path).results("sweep")
    assert str(rec.path / "sweep.json") in str(info.value) and "\n" not in str(info.value)


def test_the_committed_recordings_still_all_load() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # none is skipped
        found = list_recordings()
    assert len(found) >= 10 and broken_recordings() == []
