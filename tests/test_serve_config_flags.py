"""The service's settings are declared once, in `ServeConfig`: every front door's flags, its environment variables
and its bucket strings come from there, read one way."""
from __future__ import annotations

import argparse
import dataclasses

import pytest

from graphlab.errors import BadInputError
from graphlab.serve.config import ServeConfig, parse_buckets


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    return {s for action in parser._actions for s in action.option_strings}


def _front_door_parsers() -> dict[str, argparse.ArgumentParser]:
    """The parser of every command line that starts a service: each is built the way its `main` builds it."""
    from graphlab.cli import build_parser
    from graphlab.loadtest.plan import LoadPlan

    serve = argparse.ArgumentParser()
    ServeConfig.add_flags(serve)  # what graphlab.serve.__main__.main and ray_deployment.main call
    loadtest = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices["loadtest"]
    plan = argparse.ArgumentParser()
    LoadPlan.add_flags(plan)
    return {"serve": serve, "graphlab loadtest": loadtest, "plan": plan}


def test_every_field_is_a_flag_with_its_default_in_the_help():
    parsers = _front_door_parsers()
    for spec in dataclasses.fields(ServeConfig):
        flag = f"--{spec.name.replace('_', '-')}"
        assert flag in _flags(parsers["serve"]), flag
        if spec.name not in ("model", "setting"):  # the load test sweeps its own model and settings
            assert flag in _flags(parsers["graphlab loadtest"]), flag
    help_text = parsers["serve"].format_help()
    assert "(default: 500)" in help_text and "(default: pow2)" in help_text


def test_a_field_added_to_serveconfig_appears_as_a_flag_and_an_environment_variable():
    from graphlab.serve.config import _setting

    Wider = dataclasses.make_dataclass("Wider", [("queue_slack_ms", int, _setting(7, "a new setting", parse=int))],
                                       bases=(ServeConfig,), frozen=True)
    parser = argparse.ArgumentParser()
    Wider.add_flags(parser)
    assert "--queue-slack-ms" in _flags(parser)
    assert Wider.given(parser.parse_args(["--queue-slack-ms", "9"])) == {"queue_slack_ms": 9}
    assert Wider.given(parser.parse_args([])) == {}  # a flag left out keeps the field's default
    assert Wider.from_env({"GRAPHLAB_SERVE_QUEUE_SLACK_MS": "11"}).queue_slack_ms == 11


def test_buckets_parse_one_way_on_every_front_door():
    cases = {"1,2,4,8": [1, 2, 4, 8], " 1, 4 ,16": [1, 4, 16], "8": [8], "pow2": "pow2"}
    for text, want in cases.items():
        assert parse_buckets(text) == want
        parser = argparse.ArgumentParser()
        ServeConfig.add_flags(parser)
        assert ServeConfig.given(parser.parse_args(["--buckets", text]))["buckets"] == want  # the flags
        assert ServeConfig.from_env({"GRAPHLAB_SERVE_BUCKETS": text, "GRAPHLAB_SERVE_MAX_BATCH_SIZE":  # the env
                                     str(want[-1] if isinstance(want, list) else 32)}).buckets == want
    for bad in ("2,pow2", "", "1,,2"):
        with pytest.raises(BadInputError, match="comma-separated batch sizes"):
            parse_buckets(bad)


def test_a_served_models_buckets_are_the_default_and_given_ones_win():
    class Served:
        name, buckets, max_batch_size = "own", [1, 2, 4, 8], 8

    assert ServeConfig.for_model(Served()).bucket_list() == [1, 2, 4, 8]
    assert ServeConfig.for_model(Served(), buckets=[1, 16]).max_batch_size == 16
    assert ServeConfig.for_model(Served(), max_batch_size=32).bucket_list()[-1] == 32  # pow2 up to it
    assert ServeConfig.for_model(Served(), max_wait_us=0).model == "own"


def test_the_front_doors_print_errors_in_one_format(capsys, monkeypatch):
    from graphlab.env import error_line
    from graphlab.serve.__main__ import main

    assert error_line("prog", BadInputError("two\n  lines")) == "prog: error: two lines"
    pytest.importorskip("uvicorn")
    assert main(["--model", "no_such_module:make", "--device", "cpu"]) == 2
    assert capsys.readouterr().err.startswith("python -m graphlab.serve: error: --model no_such_module:make")
