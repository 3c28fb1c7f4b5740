"""`graphlab record`'s table is the studies themselves: every module under graphlab/studies/ with `RECORDING` and
`record(out_root, prov)` is an experiment. The driver finds them by import; `graphlab record --help` lists them from
their source, without torch; the two lists agree one to one."""
from __future__ import annotations

import argparse
import inspect
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import REPO

from graphlab.studies.catalog import listings, read_listing, record_help, zoo_model_names

PROV = {"gpu": "Test GPU", "driver": "1", "torch": "9.9", "cuda": "1", "cuda_bindings": "none",
        "graphlab_version": "0", "git_commit": "x", "command": "test", "date": "2026-01-01T00:00:00Z"}


def _no_torch(code: str) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter in which `import torch` fails (as tests/test_layers.py blocks it)."""
    prelude = "import sys\nsys.modules['torch'] = None\n"
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], cwd=REPO, capture_output=True,
                          text=True, timeout=60)


# -- one table, two ways of reading it ------------------------------------------------------------------------
def test_the_help_list_is_the_drivers_table_one_to_one():
    from graphlab.studies.record import recorders

    listed = [(s.name, s.module, s.by_default) for s in listings()]
    table = recorders()
    assert len(listed) == len({name for name, _, _ in listed}), "two studies declare one RECORDING"
    assert sorted(listed) == sorted((name, m.__name__, getattr(m, "BY_DEFAULT", False)) for name, m in table.items())
    for listing in listings():  # the help line is the record() docstring's first line
        assert listing.summary and listing.summary == inspect.getdoc(table[listing.name].record).splitlines()[0]


def test_every_recorder_takes_out_root_and_prov_and_names_its_folder():
    from graphlab.studies.record import recorders

    for name, module in recorders().items():
        assert list(inspect.signature(module.record).parameters) == ["out_root", "prov"], module.__name__
        assert module.RECORDING == name


def test_the_catalog_reads_only_complete_studies(tmp_path, monkeypatch):
    from graphlab.studies.catalog import Listing

    monkeypatch.setattr("graphlab.studies.catalog._module_name", lambda path: path.stem)
    study = tmp_path / "study.py"
    study.write_text('RECORDING = "x"\nBY_DEFAULT = True\ndef record(out_root, prov):\n    """Does x.\n\n    More."""\n')
    reader = tmp_path / "reader.py"
    reader.write_text('RECORDING = "x"  # the name of a recording this module reads\n')
    borrowed = tmp_path / "borrowed.py"  # not a literal: the help could not say its name, so the test above fails
    borrowed.write_text('from elsewhere import NAME\nRECORDING = NAME\ndef record(out_root, prov):\n    pass\n')
    assert read_listing(study) == Listing("x", "study", "Does x.", by_default=True)
    assert read_listing(reader) is None and read_listing(borrowed) is None


def test_zoo_names_read_from_source_are_the_zoo():
    from graphlab.zoo import ZOO

    assert zoo_model_names() == list(ZOO)


def test_every_shipped_recording_is_a_zoo_model_or_an_experiment():
    from graphlab.zoo import ZOO

    shipped = {p.parent.name for p in (REPO / "data" / "recordings").glob("*/*/meta.json")}
    assert shipped - {*ZOO, *(s.name for s in listings())} == set()


def test_readers_name_the_recordings_their_studies_write():
    from graphlab.distributed import results as distributed_results
    from graphlab.loadtest import api as loadtest
    from graphlab.studies import multigpu, overhead, overhead_report, serving, watch, watch_examples

    assert serving.RECORDING == loadtest.RECORDING
    assert overhead.RECORDING == overhead_report.NAME
    assert multigpu.RECORDING == distributed_results.NAME
    assert watch.RECORDING == watch_examples.RECORDING


# -- the driver -------------------------------------------------------------------------------------------------
def _args(**kw):
    return argparse.Namespace(**{"out": "rec", "models": None, "batch_sizes": None, "no_sweep": True,
                                 "repeats": None, **kw})


def test_a_bare_record_makes_the_zoo_and_the_pitfalls_each_in_a_fresh_process(monkeypatch):
    from graphlab.studies import record
    from graphlab.zoo import ZOO

    monkeypatch.setattr("graphlab.env.require_cuda", lambda what: None)
    calls = []
    monkeypatch.setattr(record.subprocess, "run", lambda argv: calls.append(argv) or argparse.Namespace(returncode=0))
    assert record.record_main(_args()) == 0
    assert [c[c.index("--models") + 1] for c in calls] == [*ZOO, "pitfalls"]


def test_a_named_experiment_is_recorded_in_this_process_with_out_root_and_prov(monkeypatch, tmp_path):
    from graphlab.studies import cells, record

    monkeypatch.setattr("graphlab.env.require_cuda", lambda what: None)
    monkeypatch.setattr(record, "provenance", lambda command: PROV)
    seen = []
    monkeypatch.setattr(cells, "record", lambda out_root, prov: seen.append((out_root, prov)) or out_root / "cells")
    assert record.record_main(_args(out=str(tmp_path), models=["cells"])) == 0
    assert seen == [(Path(tmp_path), PROV)]


def test_unknown_recordings_and_bad_batch_sizes_are_bad_input(monkeypatch):
    from graphlab.errors import BadInputError
    from graphlab.studies import record

    monkeypatch.setattr("graphlab.env.require_cuda", lambda what: None)
    with pytest.raises(BadInputError, match=r"unknown recording\(s\) nope; choose from mlp, .*pitfalls, audit, cache"):
        record.record_main(_args(models=["nope"]))
    with pytest.raises(BadInputError, match="--batch-sizes must be positive"):
        record.record_main(_args(models=["mlp"], batch_sizes=[0]))


# -- the command line ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv", [["--help"], ["record", "--help"]])
def test_help_needs_no_torch(argv):
    result = _no_torch(f"""
        from graphlab.cli import main
        try:
            main({argv!r})
        except SystemExit as exc:
            assert exc.code == 0, exc.code
        assert sys.modules.get("torch") is None
        """)
    assert result.returncode == 0, result.stderr
    if argv[0] == "record":
        for listing in listings():
            assert f"  {listing.name}  " in result.stdout and listing.summary in result.stdout
        assert ", ".join(zoo_model_names()) in result.stdout


def test_record_help_lists_the_default_recordings_before_the_named_ones():
    text = record_help()
    default, named = text.split("made only when named")
    assert "<zoo model>" in default and "  pitfalls  " in default and "  cache  " in named


def test_an_unknown_recording_is_one_line_exit_2():
    result = subprocess.run([sys.executable, "-m", "graphlab", "record", "--models", "nope"], cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr
    assert "unknown recording(s) nope" in result.stderr


def test_the_pure_studies_import_without_torch():
    result = _no_torch("""
        import importlib
        import graphlab.studies
        for name in graphlab.studies.PURE:
            importlib.import_module("graphlab.studies." + name)
        assert sys.modules.get("torch") is None
        """)
    assert result.returncode == 0, result.stderr
