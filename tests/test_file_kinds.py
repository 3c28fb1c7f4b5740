"""Every file reader refuses what is not a regular file before reading it: a FIFO (an archive can carry one)
used to make `gl.read_dot`, `graphlab parse`, `Recording.open`, `load_recording` and `list_recordings` wait for
a writer forever. Real FIFOs on disk; a watchdog opens the writing end after a few seconds so that a reader
that does wait gets EOF and the test fails instead of hanging."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import pytest

from graphlab.errors import DotFileError, RecordingError
from graphlab.files import kind_of, open_regular
from graphlab.graph.dot_parser import read_dot
from graphlab.recordings import Recording, list_recordings, load_recording, write_recording

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")
DOT = 'digraph dot {\nsubgraph cluster_1 {\nlabel="graph_1";\n"graph_1_node_0"[shape="rectangle" label="0\\nEMPTY"];\n}\n}\n'
PROVENANCE = {"gpu": "GPU A", "driver": "1", "torch": "9", "cuda": "1", "graphlab_version": "0", "git_commit": "x",
              "command": "test", "date": "2026-01-02T00:00:00Z"}


@pytest.fixture
def fifo(tmp_path):
    """A FIFO, and a watchdog that unblocks a reader stuck on it after 3 s (then the reader sees EOF)."""
    path = tmp_path / "pipe"
    os.mkfifo(path)
    done = threading.Event()

    def unblock():
        if done.wait(3):
            return
        try:  # only succeeds when a reader is waiting on the FIFO; it then reads EOF
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass

    watchdog = threading.Thread(target=unblock, daemon=True)
    watchdog.start()
    yield path
    done.set()
    watchdog.join()


def test_open_regular_refuses_a_fifo_a_folder_and_a_device(fifo, tmp_path):
    with pytest.raises(OSError, match="a FIFO"):
        open_regular(fifo)
    with pytest.raises(IsADirectoryError):
        open_regular(tmp_path)
    if os.path.exists("/dev/null"):
        with pytest.raises(OSError, match="character device"):
            open_regular("/dev/null")
    with pytest.raises(FileNotFoundError):
        open_regular(tmp_path / "absent")
    regular = tmp_path / "a.txt"
    regular.write_bytes(b"x")
    with open_regular(regular) as file:
        assert file.read() == b"x"
    assert kind_of(os.stat(fifo).st_mode) == "a FIFO (named pipe)"


def test_read_dot_refuses_a_fifo(fifo):
    with pytest.raises(DotFileError, match="FIFO") as info:
        read_dot(fifo)
    assert isinstance(info.value, OSError) and info.value.filename == str(fifo)


def test_the_cli_refuses_a_fifo_without_a_traceback(fifo):
    done = subprocess.run([sys.executable, "-m", "graphlab", "parse", str(fifo)], capture_output=True, text=True,
                          timeout=60, cwd=Path(__file__).resolve().parents[1])
    assert done.returncode != 0
    assert "FIFO" in done.stderr and "Traceback" not in done.stderr


def _recording(root: Path, name: str) -> Path:
    folder = root / "gpu-a" / name
    write_recording(folder, name=name, description="", provenance=PROVENANCE, graphs={"g": {"dot": DOT}},
                    results={"r": {"x": 1}})
    return folder


def _fifo_in_place_of(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


@pytest.mark.parametrize("which", ["meta.json", "dot", "results"])
def test_a_recording_with_a_fifo_is_refused_and_skipped(tmp_path, which):
    good, bad = _recording(tmp_path, "good"), _recording(tmp_path, "bad")
    meta = json.loads((bad / "meta.json").read_text())
    target = {"meta.json": bad / "meta.json", "dot": bad / meta["graphs"]["g"]["dot"],
              "results": bad / meta["results"]["r"]}[which]
    _fifo_in_place_of(target)
    unblock = threading.Timer(3, lambda: _unblock(target))
    unblock.start()
    try:
        with pytest.raises(RecordingError, match="FIFO"):
            Recording.open(bad)
        with pytest.raises(RecordingError, match="FIFO"):
            load_recording("bad", root=tmp_path)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            found = list_recordings(tmp_path)
        assert [r.path for r in found] == [good]
        assert any("FIFO" in str(w.message) for w in caught)
    finally:
        unblock.cancel()


def _unblock(path: Path) -> None:
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass


# -- a recording's JSON is read in memory proportional to its size -----------------------------------------------
MEMORY_PROBE = r"""
import json, pathlib, resource, sys
from graphlab.errors import RecordingError
from graphlab.recordings import Recording
folder = pathlib.Path(sys.argv[1])
recording = Recording.open(folder)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    recording.results("r")
    outcome = "read"
except RecordingError as exc:
    outcome = str(exc)
grew_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
print(json.dumps({"outcome": outcome, "grew_mb": grew_mb}))
"""


def test_a_json_of_millions_of_tiny_values_is_refused_before_parsing(tmp_path):
    """20 MB of `[],[],...` is under the byte limit, yet parsing it took 500+ MB (items 30-80 bytes each): the
    value count is checked from the bytes first, so reading it costs about its size."""
    folder = _recording(tmp_path, "wide")
    meta = json.loads((folder / "meta.json").read_text())
    (folder / meta["results"]["r"]).write_text("[" + ",".join(["[]"] * 6_000_000) + "]")
    done = subprocess.run([sys.executable, "-c", MEMORY_PROBE, str(folder)], capture_output=True, text=True,
                          timeout=120, cwd=Path(__file__).resolve().parents[1])
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert "JSON values" in report["outcome"] and "MAX_JSON_VALUES" in report["outcome"], report
    assert report["grew_mb"] < 3 * 20 + 30, report  # the bytes read and one count, not a parsed tree


def test_a_json_at_the_value_limit_still_reads(tmp_path):
    from graphlab.recordings import MAX_JSON_VALUES

    folder = _recording(tmp_path, "full")
    meta = json.loads((folder / "meta.json").read_text())
    (folder / meta["results"]["r"]).write_text("[" + ",".join(["1"] * (MAX_JSON_VALUES - 1)) + "]")
    assert len(Recording.open(folder).results("r")) == MAX_JSON_VALUES - 1
