"""Notebooks 10 and 11's views on a real GPU: live results (not recordings) shown through the presentation layer,
with no output-check finding, no node id, and a title that says where they were measured. About a minute on an H200
(torch.compile of the zoo GPT dominates)."""
from __future__ import annotations

import json
import re

import pytest

torch = pytest.importorskip("torch")

import graphlab as gl  # noqa: E402
from graphlab.output_check import figure_problems, html_problems  # noqa: E402
from graphlab.studies.watch_examples import run_example  # noqa: E402
from graphlab.zoo import get_model  # noqa: E402

pytestmark = pytest.mark.gpu


def _clean(html: str, where: str) -> None:
    problems = html_problems(html, where)
    assert problems == [], "\n".join(problems)
    assert not re.search(r"graph_\d+_node_\d+", html), where


def test_live_watch_views_are_for_people():
    ex = run_example("compile", (1, 4, 8), progress=False)
    for name, html in (("facts", ex._repr_html_()), ("calls", ex.calls_table()._repr_html_()),
                       ("seen", ex.seen._repr_html_()), ("summary", ex.seen.summary()._repr_html_()),
                       ("memory", ex.memory_table()._repr_html_()), ("diff", ex.diff(8)._repr_html_()),
                       ("graph", ex.recording_for(8)._repr_html_())):
        _clean(html, name)
        assert "Recorded on" not in html, f"{name}: a live result does not say it was recorded"
    assert "replays the graph" in ex.calls_table().column("did")
    compiled, eager = ex.kernel_counts(8)
    assert 0 < compiled <= eager
    for name in ("make_graphed_callables", "torch.cuda.graph"):
        other = run_example(name)
        _clean(other._repr_html_(), name)
        _clean(other.seen._repr_html_(), f"{name} seen")


def test_live_profile_views_are_for_people():
    zoo = get_model("gpt")
    model = zoo.build()
    prof = gl.profile(model, *zoo.make_inputs(1), replays=10)
    prof64 = gl.profile(model, *zoo.make_inputs(64), replays=10)
    for name, table in (("overview", prof), ("table", prof.table(top=10)), ("by module", prof.by_module(depth=2)),
                        ("compare", prof.compare(prof64)), ("compare modules", prof.compare(prof64, by="module")),
                        ("what if", prof.what_if_table(0.5)), ("critical path", prof.critical_path())):
        html = table._repr_html_()
        _clean(html, name)
        assert "Recorded on" not in html and "recorded on" not in html, name
    assert prof.where().startswith("measured on ")
    fig = json.loads(gl.plot_modules(prof, depth=3).to_json())
    assert figure_problems(fig, "plot_modules", recorded=False) == []
