"""One source per figure: every figure a notebook quotes is read from one field of one recording, and where two
figures could be mistaken for one another (a cold first capture and a warm one; how far new weights moved eager's
output and how far a replay is from eager), the text names which quantity it is."""
from __future__ import annotations

import json
import re

import pytest

from conftest import REPO

REC = REPO / "data" / "recordings" / "h200"


def _meta(name: str) -> dict:
    return json.loads((REC / name / "meta.json").read_text())


@pytest.fixture
def recorded():
    import graphlab as gl

    gl.set_mode("recorded")
    yield gl
    gl.set_mode("auto")


def test_a_recorded_capture_says_cold_or_warm_and_quotes_its_recording(recorded):
    pytest.importorskip("torch")
    gl = recorded
    zoo = gl.get_model("gpt")
    graphs = _meta("gpt")["graphs"]
    first = next(iter(graphs))
    for key, state in ((first, "cold"), ("b2", "warm")):
        cg = gl.capture(zoo.build(), *zoo.make_inputs(batch_size=int(key[1:])))
        text = repr(cg)
        assert f"capture {graphs[key]['capture_ms']:.1f} ms ({state}" in text, text
        assert cg.summary()["capture_state"] == state


def test_the_latency_table_and_the_claims_quote_the_sweep_and_call_it_warm(recorded):
    from graphlab.timing.claims import check_claims
    from graphlab.timing.results import Sweep
    from graphlab.ui.latency_lab import _table_html

    sweep = Sweep.from_dict(json.loads((REC / "gpt" / "sweep.json").read_text()))
    b1 = sweep.point(1, "graph")
    table = _table_html([sweep])
    assert f">{b1.capture_ms:.1f}<" in table, "the table's capture cell is the sweep's own figure"
    assert "(cold)" not in table  # the sweep captured after the zoo's own captures: warm
    capture = next(v for v in check_claims() if v.key == "capture")
    assert capture.per_model["gpt"] == max(p.capture_ms for p in sweep.by_mode("graph") if p.capture_ms is not None)


def test_the_weight_probe_names_its_two_figures_apart():
    from graphlab.timing.weight_update import CHANGE_LABEL, WeightUpdate

    data = json.loads((REC / "resnet18" / "sweep.json").read_text())
    probe = WeightUpdate(data["weight_update"])
    text = probe.summary()
    change = f"{CHANGE_LABEL} {probe.output_change_rel:.3g}"
    assert change in text
    rebound = probe["rebind_parameter"]["replay_vs_eager_new_rel"]
    assert f"replay vs eager with the new weights {rebound:.3g}" in text
    assert "replay vs eager, new weights" in probe._repr_html_()
    assert not re.search(r"\de[+-]\d", text + probe._repr_html_()), "no scientific notation"
