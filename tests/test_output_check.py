"""The output check finds each thing a learner should not meet, and passes what a learner should read.

Every rule has a case it must flag and a case it must leave alone: the check is only worth its zero if it can fail.
"""
from __future__ import annotations

import pytest

from graphlab.output_check import figure_problems, output_problems, text_problems


def _nb(*outputs, markdown=""):
    cells = [{"cell_type": "markdown", "source": markdown}] if markdown else []
    cells.append({"cell_type": "code", "source": "x", "outputs": list(outputs)})
    return {"cells": cells}


def _stdout(text):
    return {"output_type": "stream", "name": "stdout", "text": text}


def _html(markup, plain="<table>"):
    return {"output_type": "display_data", "data": {"text/html": markup, "text/plain": plain}}


@pytest.mark.parametrize("text", [
    "max_abs_err: 8.195638656616211e-08",
    "start 28.031738 µs",
    "capacity 1,221.1 req/s",
    "first pass 10,562,180 µs",
    "queue 1142547 us",
    "{'kernel': 5}",
    "buckets [2, 10, 14, 23, 44, 64]",
    "compile ids ['0/0', '0/1']",
    "grid=(64, 1, 1)",
    "torch.Size([12, 64, 512])",
    "<graphlab.thing object at 0x7f00deadbeef>",
    "capacity NaN",
    "GPU worker stopped: None",
    "p99 inf ms",
    "graph_13_node_8 is slowest",
    "collapsed block_0",
    "add_addmm_embedding_native_laye… (Triton)",
    "the seed material said",
    "measured on the lent H200",
    "first pass 1.194974e+05 us",
    "see /tmp/ipykernel_7407/3421.py:2",
    "graphlab/cache/graph_cache.py:158: UserWarning: x",
])
def test_text_a_learner_should_not_meet_is_found(text):
    assert text_problems(text, "cell 0"), text


@pytest.mark.parametrize("text", [
    "p50 5,826 µs, p99 6.34 ms",
    "capacity 3,674 req/s (0.61x of in process)",
    "largest difference from eager 1.3e-6",
    "4 rank(s) with sizes 3, 7, 1 and 5 -> bucket 8",
    "torch 2.11.0+cu130, driver 580.159.04, 2026-12-01",
    "the kernel `triton_poi_fused_add_0` and the module `blocks.0.mlp`",
    "shape 8 x 64 x 512",
    "and 12 more rows (`.table(all=True)`): gemm, gelu…",
    "None of the rates was sustained",  # a word at the start of a sentence is not a value
    "p=0.0091, 99.9% of the time",
])
def test_text_for_people_passes(text):
    problems = text_problems(text, "cell 0")
    assert problems == [], problems


def test_table_headers_row_labels_and_cells_are_checked_one_by_one():
    markup = ("<table><thead><tr><th>setting</th><th>p50_us</th><th>first pass max (µs)</th></tr></thead><tbody>"
              "<tr><th>cache_pow2</th><td>211</td><td>10,562,180</td></tr>"
              "<tr><th><code>blocks.0.mlp_proj</code></th><td>NaN</td><td>True</td></tr></tbody></table>")
    problems = output_problems(_nb(_html(markup)), recorded=False)
    text = "\n".join(problems)
    assert "'p50_us'" in text and "'cache_pow2'" in text
    assert "10,562,180 under 'first pass max (µs)'" in text
    assert "NaN shown as a value" in text and "True in a table cell" in text
    assert "blocks.0.mlp_proj" not in text  # a module path shown as code is a fine label
    assert len(problems) == 5, problems


def test_a_readable_table_passes():
    import graphlab as gl

    table = gl.readable([{"setting": "eager", "p50_us": 1603.2, "first_pass_max_us": 10562180.0,
                          "pool_bytes": 37748736, "graphs_held": None, "max_abs_err": 1.3e-06, "ok": True,
                          "buckets": [1, 2, 4], "shape": (4, 64)}], index="setting")
    problems = output_problems(_nb(_html(table._repr_html_()), _stdout(str(table))), recorded=False)
    assert problems == [], problems


def test_a_raw_dot_dump_may_name_its_nodes_by_id():
    dump = 'digraph dot {\nsubgraph cluster_10 {\n"graph_10_node_0"[label="{KERNEL | <<<64,128,0>>>}"];\n'
    assert output_problems(_nb(_stdout(dump)), recorded=False) == []
    assert output_problems(_nb(_stdout("slowest: graph_10_node_0")), recorded=False)


def test_code_in_html_text_is_code_in_cells_and_outside_them():
    note = _html("<p>torch's guard <code>ids.size()[0] &lt;= 2147483647</code> on `x`</p>", plain="x")
    bare = _html("<p>torch's guard ids.size()[0] and [1, 2]</p>", plain="x")
    assert output_problems(_nb(note), recorded=False) == []
    assert output_problems(_nb(bare), recorded=False)


def test_plain_text_is_checked_only_when_nothing_richer_is_shown():
    rich = _html("<p>fine</p>", plain="{'a': 1}")
    bare = {"output_type": "execute_result", "data": {"text/plain": "{'a': 1}"}}
    assert output_problems(_nb(rich), recorded=False) == []
    assert output_problems(_nb(bare), recorded=False)


def test_history_words_in_markdown_are_found():
    assert output_problems(_nb(markdown="When it arrived (the seed material said 11.2)"), recorded=False)


def _figure(traces, **layout):
    return {"data": traces, "layout": {"title": {"text": "p99 vs throughput<br><sup>recorded on the H200</sup>"},
                                       **layout}}


def test_a_log_axis_annotation_given_in_data_units_is_found():
    """plot_http_capacity's p99 axis ran from 1 to 10^54: its 'p99 50 ms' line label sat at y=50 on a log axis."""
    traces = [{"type": "scatter", "name": "graphs", "x": [1, 2], "y": [1.1, 212.0]}]
    bad = _figure(traces, yaxis={"type": "log", "title": {"text": "p99 (ms)"}},
                  annotations=[{"text": "p99 50 ms", "y": 50, "yref": "y", "x": 1, "xref": "paper"}])
    good = _figure(traces, yaxis={"type": "log", "title": {"text": "p99 (ms)"}},
                   annotations=[{"text": "p99 50 ms", "y": 1.699, "yref": "y", "x": 1, "xref": "paper"}])
    assert any("10^50" in p for p in figure_problems(bad, "cell 1"))
    assert figure_problems(good, "cell 1") == []


def test_ranges_must_be_finite_and_hold_the_data():
    traces = [{"type": "scatter", "name": "eager", "x": [0, 10], "y": [5.0, 30.0]}]
    assert any("leaves data out" in p for p in figure_problems(_figure(traces, yaxis={"range": [0, 20]}), "c"))
    assert any("not finite" in p for p in figure_problems(_figure(traces, yaxis={"range": [0, float("inf")]}), "c"))
    assert figure_problems(_figure(traces, yaxis={"range": [0, 40]}), "c") == []
    nan = [{"type": "scatter", "name": "eager", "x": [0, 10], "y": [5.0, float("inf")]}]
    assert any("not finite" in p for p in figure_problems(_figure(nan), "c"))


def test_each_legend_entry_has_its_own_name_and_colour():
    same_colour = [{"type": "scatter", "name": n, "x": [1], "y": [1], "line": {"color": "#3B1F2B"}}
                   for n in ("graphs over HTTP", "eager over HTTP")]
    same_name = [{"type": "scatter", "name": "graphs", "x": [1], "y": [1], "line": {"color": c}}
                 for c in ("#111111", "#222222")]
    keyed = [{"type": "scatter", "name": "eager_p50", "x": [1], "y": [1]}]
    distinct = [{"type": "scatter", "name": n, "x": [1], "y": [1], "line": {"color": c}}
                for n, c in (("graphs", "#111111"), ("eager", "#222222"))]
    assert any("share the colour" in p for p in figure_problems(_figure(same_colour), "c"))
    assert any("two legend entries" in p for p in figure_problems(_figure(same_name), "c"))
    assert any("key instead of words" in p for p in figure_problems(_figure(keyed), "c"))
    assert figure_problems(_figure(distinct), "c") == []


def test_axis_titles_are_words_and_recorded_figures_say_so():
    traces = [{"type": "scatter", "name": "eager", "x": [1], "y": [1]}]
    fig = {"data": traces, "layout": {"title": {"text": "latency"}, "yaxis": {"title": {"text": "p50_us"}}}}
    problems = figure_problems(fig, "c", recorded=True)
    assert any("recorded banner" in p for p in problems) and any("'p50_us'" in p for p in problems)


def test_drawings_in_recorded_mode_carry_the_banner_and_show_no_ids():
    svg = {"output_type": "display_data", "data": {"image/svg+xml": "<svg><text>graph_3_node_1</text></svg>",
                                                   "text/plain": "<Drawing>"}}
    problems = output_problems(_nb(svg), recorded=True)
    assert any("banner" in p for p in problems) and any("graph_3_node_1" in p for p in problems)


def test_a_failed_cell_is_a_finding():
    error = {"output_type": "error", "ename": "BadInputError", "evalue": "no", "traceback": []}
    assert output_problems(_nb(error), recorded=False)
