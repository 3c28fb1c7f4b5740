"""Notebook 08 runs top to bottom in recorded mode, here from a SYNTHETIC recording written to a temp folder
(made-up rows, real H200 DOT fixtures): it checks the notebook's code paths, never its numbers. The real
recording comes from `graphlab record --models conditional` on the H200."""
from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, REPO

from graphlab.graph.dot_parser import parse_dot
from graphlab.recordings import write_recording
from graphlab.conditional import results as cr
from graphlab.studies.conditional.bucket_switch import PAD_TO_MAX
from graphlab.conditional.support import ConditionalFacts, ConditionalSupport

NOTEBOOK = REPO / "notebooks" / "08_conditional_nodes.ipynb"
COND = FIXTURES / "h200" / "conditional"
PROV = {"gpu": "NVIDIA H200", "driver": "synthetic", "torch": "synthetic", "cuda": "synthetic",
        "cuda_bindings": "synthetic", "graphlab_version": "0.1.0", "git_commit": "synthetic",
        "command": "tests/test_conditional_notebook.py (synthetic)", "date": "2000-01-01T00:00:00Z"}


def _rows(variants, cases, **extra):
    return [{"variant": v, "case": c, "wall_p50_us": 100.0 + i, "gpu_p50_us": 50.0 + i, "host_p50_us": 10.0 + i,
             "launches": 1, "syncs": 9, **extra} for c in cases for i, v in enumerate(variants)]


def _study(name, variants, cases, dot=None, facts=None, **extra):
    study = cr.ConditionalStudy(name=name, title=f"{name} (synthetic)", question="synthetic?",
                                rows=_rows(variants, cases, **extra), checks={"matches_eager": True},
                                facts=facts or {}, conditions={"gpu": "synthetic"}, dot=dot)
    return study


def _write(root):
    dots = {"early_exit": (COND / "route_a_if_else.dot").read_text(),
            "decode_loop": (COND / "route_b_gpt_while.dot").read_text(),
            "bucket_switch": (COND / "route_a_switch.dot").read_text()}
    studies = [
        _study("early_exit", [cr.CONDITIONAL, cr.HOST_SYNC, cr.FULL_GRAPH, cr.EAGER], ["exits", "all blocks"],
               dots["early_exit"]),
        _study("decode_loop", [cr.WHILE_LOOP, cr.PER_TOKEN, cr.EAGER], ["to the maximum (no EOS)"],
               dots["decode_loop"], tokens=8),
        _study("bucket_switch", [cr.SWITCH, cr.PER_BUCKET, PAD_TO_MAX, cr.EAGER], ["batch 1", "batch 64"],
               dots["bucket_switch"], facts={"switch_pool_bytes": 1, "per_bucket_pool_bytes": 2}),
        _study("routes", ["route child", "route capture"], ["early exit (IF/ELSE)"]),
    ]
    support = ConditionalSupport.from_facts(ConditionalFacts())
    write_recording(root / "h200" / cr.RECORDING, name=cr.RECORDING, description="SYNTHETIC, tests only",
                    provenance=PROV,
                    graphs={k: {"dot": v, "model": parse_dot(v)} for k, v in dots.items()},
                    results={"support": support.to_dict(), **{s.name: s.to_dict() for s in studies}})


def test_notebook_08_runs_from_a_recording(tmp_path, monkeypatch):
    pytest.importorskip("nbclient")
    from graphlab.tour import execute_notebook

    _write(tmp_path / "recordings")
    monkeypatch.setenv("GRAPHLAB_RECORDINGS", str(tmp_path / "recordings"))
    monkeypatch.setenv("TQDM_DISABLE", "1")
    (tmp_path / "out").mkdir()
    execute_notebook(NOTEBOOK, tmp_path / "out", timeout_s=600)
    executed = json.loads((tmp_path / "out" / NOTEBOOK.name).read_text())
    errors = [o for c in executed["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, errors[0] if errors else None
    text = json.dumps(executed)
    assert "Not answered yet: " in text and "(synthetic)" in text  # the exercise's check runs, unanswered


def test_notebook_08_is_thin_and_names_no_numbers_of_its_own():
    nb = json.loads(NOTEBOOK.read_text())
    code = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    assert code[0].splitlines() == ["import graphlab as gl", 'gl.set_mode("auto")']
    assert sum("set_mode" in c for c in code) == 1
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
