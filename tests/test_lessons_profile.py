"""Notebooks 10 (what did torch.compile capture) and 11 (where the time goes) read as lessons: every result they
show is a library view made for a person (words and units in headers, about three significant digits, kernel names
and module paths as labels, no node ids, no raw dicts, no cut names), on the real H200 recordings."""
from __future__ import annotations

import json
import re

import pytest
from conftest import REPO

import graphlab as gl
import graphlab.mode
from graphlab.output_check import figure_problems, html_problems, text_problems

NB10 = REPO / "notebooks" / "10_what_did_compile_capture.ipynb"
NB11 = REPO / "notebooks" / "11_where_the_time_goes.ipynb"


@pytest.fixture
def recorded(monkeypatch):
    monkeypatch.setattr(graphlab.mode, "_current", None)
    gl.set_mode("recorded")
    yield


def clean(html: str, where: str = "output") -> None:
    problems = html_problems(html, where)
    assert problems == [], "\n".join(problems)


# -- notebook 10: the watch example ------------------------------------------------------------------------------
@pytest.fixture
def compile_example(recorded):
    from graphlab.studies.watch_examples import watch_example

    return watch_example("compile")


def test_the_examples_facts_are_words_not_a_dict_dump(compile_example):
    html = compile_example._repr_html_()
    clean(html)
    text = str(compile_example)
    assert "recordings_per_batch_size" not in text and "{'1'" not in text and "['0/0'" not in text
    assert "1.3e-6" in text and "1.3113021850585938e-06" not in text
    assert "1.19 s at batch 1, 815 ms at batch 4 and 6.00 ms at batch 8" in text
    assert "`0/1` (the batch size a dynamic input) recorded batch 4 and 8" in text
    assert "Recorded on NVIDIA H200" in text  # said once, as the title


def test_the_calls_table_has_words_units_and_what_each_call_did(compile_example):
    table = compile_example.calls_table()
    clean(table._repr_html_())
    text = str(table)
    assert "time (ms)" in text and "1,186" in text and "1.1859" not in text
    assert "batch_size" not in text and "new_graphs" not in text
    did = table.column("did")
    assert did[0].startswith("warm-up") and "pool keeper" in did[0]
    assert did[1] == "captures the recording" and did[2] == "replays the graph"


def test_the_watched_graphs_are_a_library_view_that_shows_the_line_not_a_stale_path(compile_example):
    html = compile_example.seen._repr_html_()
    clean(html)
    assert "graphlab/gpu/" not in html, "the recorded path no longer exists in this package"
    assert "<code>out = compiled(ids)</code>" in html
    assert "pool grew (MiB)" in html and "captured by" in html and "(0, 1)" not in html
    summary = compile_example.seen.summary()
    clean(summary._repr_html_())
    assert "(0, 1)" not in str(summary) and "1 memory pool, holding 36.0 MiB" in str(summary)


def test_the_memory_table_says_its_columns_in_words(compile_example):
    table = compile_example.memory_table()
    clean(table._repr_html_())
    headers = [table.header_of(c) for c in table.columns]
    assert headers == ["batch size", "torch.compile: pool grew (MiB)", "torch.compile: shared pool held after (MiB)",
                       "gl.capture: its own pool (MiB)"]
    assert table.column("compile_pool_reserved_bytes") == [35651584, 37748736, 37748736]


def test_the_diff_shows_a_cut_kernel_name_in_full(compile_example):
    d = compile_example.diff(8)
    html = d._repr_html_()
    clean(html)
    assert "\u2026" not in html and "\u2026" not in d.summary()
    full = [n.name for n in compile_example.recording_for(8).graph.kernels() if "\u2026" in n.label]
    assert full and all(f"<code>{name}</code>" in html for name in full)


def test_a_watched_graph_shows_its_facts_in_words(recorded):
    from graphlab.studies.watch_examples import watch_example

    block = watch_example("torch.cuda.graph").seen[0]
    clean(block._repr_html_())
    assert "graphlab/gpu/" not in repr(block) and "WatchedGraph(" not in repr(block)
    text = str(block.facts())
    assert "kernels by family" in text and "3 cuBLAS and 2 ATen elementwise" in text
    assert "Recorded on NVIDIA H200" in text  # its capture time was measured there, not here
    compiled = watch_example("compile").recording_for(8)
    assert "13 cuBLAS, 10 Triton, 3 attention and 3 CUTLASS" in str(compiled.facts())
    assert watch_example("compile").kernel_counts(1) == (32, 44)


# -- notebook 11: the profile ----------------------------------------------------------------------------------------
@pytest.fixture
def profiles(recorded):
    return gl.profile.recorded("gpt b1"), gl.profile.recorded("gpt b64")


def test_the_profile_names_kernels_and_modules_not_node_ids(profiles):
    prof, _ = profiles
    for html in (prof._repr_html_(), prof.table(top=10)._repr_html_()):
        clean(html)
        assert not re.search(r"graph_\d+_node_\d+", html)
    text = str(prof.table(top=10))
    assert "median (µs)" in text and "share of node time (%)" in text and "starts at (µs)" in text
    assert "28.031738" not in text and "5.878925" not in text and "9.2800" not in text
    assert "kernel name, grid and block" in text and "signature" not in text  # how nodes were matched, in words
    assert "and 37 more rows" in text
    assert "GPU span 179 µs, of it 21.4 µs idle (12%)" in str(prof)


def test_time_by_module_and_the_comparison_are_library_views(profiles):
    prof, prof64 = profiles
    for table in (prof.by_module(depth=2), prof.compare(prof64), prof.compare(prof64, by="module", depth=2)):
        clean(table._repr_html_())
    text = str(prof.by_module(depth=2))
    assert "GPU time (µs)" in text and "48.9600" not in text and "31.016395" not in text
    assert prof.by_module(depth=2).column("module")[0] == "blocks.0"
    both = prof.compare(prof64)
    assert [round(v, 1) for v in both.column("idle_pct")] == [12.0, 1.4]
    assert "idle share of the span (%)" in str(both)


def test_the_what_if_and_its_check_are_tables_in_words(profiles):
    prof, _ = profiles
    table = prof.what_if_table(0.5)
    clean(table._repr_html_())
    assert "47 nodes on the critical path: 179 µs, of it 21.3 µs gaps between nodes." in str(table)
    assert str(prof.critical_path()) == "47 nodes on the critical path: 179 µs, of it 21.3 µs gaps between nodes."
    from graphlab.studies.profile import what_if_checks

    checks = what_if_checks()
    clean(checks._repr_html_())
    assert "564.221680" not in str(checks) and "564 µs" in str(checks) and "-1.7%" in str(checks)


def test_plot_modules_says_its_finding_with_units(profiles):
    prof, _ = profiles
    fig = gl.plot_modules(prof, depth=3)
    data = json.loads(fig.to_json())
    assert figure_problems(data, "plot_modules", recorded=True) == []
    assert fig.layout.xaxis.title.text.startswith("GPU time per replay (µs)")
    assert "the 3 slowest modules hold 29% of the GPU time" in fig.layout.title.text
    assert all(t.endswith("%") and len(t) <= 4 for t in fig.data[0].text)


def test_the_heat_legend_labels_go_through_the_presentation_layer(profiles):
    from graphlab.viz.heat import HeatScale

    prof, _ = profiles
    labels = [label for label, _ in HeatScale.of(prof.heat()).legend()]
    assert labels[-1] == "9.28 µs" and all(text_problems(label, "legend") == [] for label in labels)


# -- the notebooks' cells and text ----------------------------------------------------------------------------------
def _cells(path, kind):
    return ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == kind]


@pytest.mark.parametrize("path", [NB10, NB11], ids=lambda p: p.name[:2])
def test_the_cells_call_the_library_and_format_nothing(path):
    code = _cells(path, "code")
    checked = code[:-1]  # the exercise's check cell may compute its answer
    for src in checked:
        assert not re.search(r"\bpd\.|import pandas|to_pandas\(\)|gl\.readable\(|print\(f?\"|\.head\(", src), src


def test_notebook_11_says_what_the_heat_map_really_fills_a_collapsed_block_with():
    text = "\n".join(_cells(NB11, "markdown"))
    assert "each node there shows the sum" not in text
    assert re.search(r"mean of (its|the) (three )?repeats", text) and "total" in text


def test_notebook_11s_exercise_asks_about_a_real_difference():
    text = "\n".join(_cells(NB11, "markdown"))
    exercise = text.split("## Exercise", 1)[1]
    assert "idle share" in exercise and re.search(r"batch\s+64", exercise)
    assert "takes the most" not in exercise  # three blocks within 0.5% of each other: noise, not an answer
    from notebook_answers import ANSWERS

    assert "idle" in ANSWERS[NB11.name]["my_idle_ratio"]
