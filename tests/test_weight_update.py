"""`Sweep.weight_update` reads and shows as what the probe measured, and stays the recorded JSON.

Issue 10: in a notebook `sweep.weight_update` showed as a raw dict.
"""
from __future__ import annotations

import json

import pytest

from graphlab.recordings import load_recording
from graphlab.timing.results import Sweep
from graphlab.timing.weight_update import WeightUpdate, as_weight_update


@pytest.fixture(scope="module")
def recorded() -> tuple[dict, Sweep]:
    raw = load_recording("mlp").results("sweep")  # recorded before WeightUpdate existed: plain JSON
    return raw, Sweep.from_dict(raw)


def test_a_recorded_probe_loads_as_a_weight_update_with_typed_readings(recorded) -> None:
    raw, sweep = recorded
    probe = sweep.weight_update
    assert isinstance(probe, WeightUpdate) and probe == raw["weight_update"]  # still the dict it was
    assert probe["inplace_copy"]["replay_follows_new_weights"] is True  # code that indexes it keeps working
    assert probe.probed and probe.inplace_copy_followed is True and probe.rebind_followed is False
    assert probe.output_change_rel == pytest.approx(raw["weight_update"]["output_change_rel"])
    assert [r["replay"] for r in probe.rows()] == ["follows the new weights", "keeps the old weights"]


def test_it_shows_as_a_table_in_a_notebook_and_as_sentences_in_a_terminal(recorded) -> None:
    from IPython.lib.pretty import pretty

    probe = recorded[1].weight_update
    page = probe._repr_html_()
    assert "<table" in page and "<code>param.copy_(new)</code>" in page and "<b>keeps the old weights</b>" in page
    assert "{" not in page  # no raw dict
    text = pretty(probe)  # what IPython prints for it
    assert text == str(probe) == probe.summary()
    lines = text.splitlines()
    assert lines[0].startswith("weight update after capture (batch 1;")
    assert lines[1].startswith("  param.copy_(new), the same tensors: the replay follows the new weights")
    assert lines[2].startswith("  module.weight = nn.Parameter(new), new tensors: the replay keeps the old weights")
    assert repr(probe).startswith("WeightUpdate(param.copy_(new): replay follows") and len(repr(probe)) < 200


def test_json_round_trip_writes_the_plain_dict(recorded) -> None:
    raw, sweep = recorded
    data = sweep.to_dict()
    assert type(data["weight_update"]) is dict and data["weight_update"] == raw["weight_update"]
    again = Sweep.from_json(sweep.to_json())
    assert isinstance(again.weight_update, WeightUpdate) and again.weight_update == sweep.weight_update
    assert json.loads(json.dumps(data))["weight_update"] == raw["weight_update"]


def test_a_plain_dict_passed_to_sweep_is_read_the_same_way() -> None:
    sweep = Sweep("m", (), weight_update={"inplace_copy": {"replay_follows_new_weights": True}})
    assert isinstance(sweep.weight_update, WeightUpdate) and sweep.weight_update.inplace_copy_followed
    assert sweep.weight_update.rebind_followed is None  # not measured
    assert Sweep("m", ()).weight_update is None
    assert as_weight_update(None) is None


def test_a_model_without_parameters_says_so() -> None:
    probe = WeightUpdate({"batch_size": None, "note": "model has no parameters; nothing to probe"})
    assert not probe.probed and probe.rows() == []
    assert str(probe) == "weight update after capture: model has no parameters; nothing to probe"
    assert "nothing to probe" in probe._repr_html_() and "nothing to probe" in repr(probe)
