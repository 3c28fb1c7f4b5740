"""A decoder's identical layers drawn once, marked xN (issue 40), on a synthetic 32-layer decode graph.

The graph is made in the test from the recorded small-Llama decode step's own layer (`decoder_dump.py`), so the
node text is real and the depth is an 8B-class decoder's. Checked: the layers are one repeated block x32; the
drawing and the inspector draw it once and account for every node (drawn, folded into the block's first repeat,
or said to be left out); `INSPECTOR_MAX_NODES` counts what is drawn after collapsing; expanding shows every
repeat; a click, a search and the heat map work on the collapsed graph. The recorded 8B graph
(`data/recordings/*/decode_scale/`) is checked the same way once a GPU run has made it.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REPO
from decoder_dump import decoder_dump, decoder_shape, synthetic_profile

from graphlab.graph.dot_parser import parse_dot, read_dot
from graphlab.graph.model import CudaGraph
from graphlab.graph.structure import find_repeated_blocks
from graphlab.ui.inspector import INSPECTOR_MAX_NODES, Inspector
from graphlab.viz.drawing import COLLAPSE_MIN_SAVED_NODES, render

LAYERS = 32


def _recorded_8b() -> list[Path]:
    """The recorded 8B-class decode graphs of the eager step (a compiled step's fused kernels may differ by layer)."""
    return [p for p in sorted((REPO / "data" / "recordings").glob("*/decode_scale/*.dot")) if "compiled" not in p.stem]


@pytest.fixture(scope="module")
def decoder() -> CudaGraph:
    return parse_dot(decoder_dump(layers=LAYERS), source="decoder32.dot")  # the default limits


def test_32_identical_layers_are_one_block_x32(decoder: CudaGraph) -> None:
    shape = decoder_shape()
    (block,) = find_repeated_blocks(decoder, min_saved_nodes=COLLAPSE_MIN_SAVED_NODES)
    assert (block.count, block.period) == (LAYERS, len(shape.layer)) == (32, 44)
    assert len(decoder) == shape.fixed_nodes + LAYERS * block.period == 1435
    layer_kernels = [decoder.node(n).short_name for n in block.node_ids[17]]
    assert layer_kernels == [decoder.node(n).short_name for n in block.representative]
    assert layer_kernels.count("mem-efficient fwd (attention)") == 1 and layer_kernels.count("silu (elementwise)") == 1


def test_the_drawing_draws_the_block_once_and_accounts_for_every_node(decoder: CudaGraph) -> None:
    drawing = render(decoder)
    (block,) = drawing.blocks
    assert drawing.collapsed == [block.id] and drawing.left_out == 0
    assert "<B>x32</B>" in drawing.source and f"({block.period} nodes" in drawing.source
    drawn = set(drawing.node_ids)
    folded = {nid for rep in block.node_ids[1:] for nid in rep}
    assert drawn.isdisjoint(folded) and drawn | folded == {n.id for n in decoder.nodes()}
    assert len(drawn) + len(folded) == len(decoder)  # nothing silently dropped
    assert set(block.representative) <= drawn
    expanded = render(decoder, expand=[block.id], max_nodes=None)
    assert sorted(expanded.node_ids) == sorted(n.id for n in decoder.nodes())
    assert "repeat 32 of 32" in expanded.source and "<B>x32</B>" not in expanded.source


def test_the_inspector_caps_what_it_draws_after_collapsing() -> None:
    deep = parse_dot(decoder_dump(layers=80))  # 3,547 nodes: more than the inspector draws unless told
    assert len(deep) > INSPECTOR_MAX_NODES
    collapsed = Inspector(deep)
    assert len(collapsed._drawing.node_ids) == 27 + 44 and collapsed._drawing.left_out == 0
    assert not collapsed.status.startswith("only the first")
    (block_id,) = collapsed._facts.blocks
    assert collapsed.summary["rows"][5] == ["repeated blocks", 1]
    for opened in (Inspector(deep, collapse=False), Inspector(deep)):
        if opened.collapse:
            opened.expanded = [block_id]
        left_out = opened._drawing.left_out
        drawn = opened._drawing.node_ids  # the graph's nodes drawn (drawn_ids also names clusters)
        assert len(drawn) == INSPECTOR_MAX_NODES and len(drawn) + left_out == len(deep)
        assert opened.status.startswith(f"only the first 1,000 nodes are drawn ({left_out:,} more left out")


def test_a_click_on_a_folded_node_or_the_block_says_what_it_stands_for(decoder: CudaGraph) -> None:
    w = Inspector(decoder)
    (block,) = w._facts.blocks.values()
    folded = block.node_ids[17][5]  # layer 18's sixth node: drawn as layer 1's
    details = w.details_for(folded)
    assert details["drawn_as"] == block.representative[5] and details["block_id"] == block.id
    assert "repeat 18 of 32" in details["note"] and "drawn once for its 32 repeats" in details["note"]
    w.selected = folded
    assert w.details["id"] == folded
    whole = w.details_for(block.id)
    assert whole["note"].startswith("32 repeats of 44 nodes (1,408 in all)")
    assert [m["id"] for m in whole["members"]] == list(block.representative)


def test_search_finds_every_layers_kernel_and_lights_its_one_drawn_stand_in(decoder: CudaGraph) -> None:
    w = Inspector(decoder)
    (block,) = w._facts.blocks.values()
    found = w.find("silu")
    assert len(found) == LAYERS
    w.search = "silu"
    assert w.hidden_matches == 0 and len(w.matches) == 1 and w.matches[0] in block.representative
    w.search = "argmax"  # outside the layers: drawn as itself
    assert len(w.matches) == 1 and w.matches[0] not in block.all_node_ids()


def test_the_heat_map_works_on_the_collapsed_graph(decoder: CudaGraph) -> None:
    prof = synthetic_profile(decoder)
    w = Inspector(decoder, profile=prof)
    (block,) = w._facts.blocks.values()
    source = w._drawing.source
    assert "<B>x32</B>" in source and "µs in all" in source
    timed = w.details_for(block.id)
    assert timed["gpu_time"].endswith("in all 32 repeats")
    assert timed["module"] == "model.layers.0 to model.layers.31, one per repeat"  # named by the recorded modules
    assert ["module", timed["module"]] in timed["rows"]
    node = w.details_for(block.node_ids[17][0])
    assert "median" in node["gpu_time"] and node["module"] == "model.layers.17"
    w.search = "layers.17"  # a module: every node of layer 18, each lit on its stand-in in the drawn first repeat
    assert w.hidden_matches == 0
    assert sorted(w.matches) == sorted(n for n in block.representative if decoder.node(n).kind.value == "kernel")


@pytest.mark.skipif(not _recorded_8b(), reason="no decode_scale recording yet: the synthetic 32-layer graph stands in")
def test_the_recorded_8b_graph_collapses_its_32_layers() -> None:
    for path in _recorded_8b():
        graph = read_dot(path)  # the default limits
        blocks = find_repeated_blocks(graph, min_saved_nodes=COLLAPSE_MIN_SAVED_NODES)
        assert max(b.count for b in blocks) == LAYERS, (path, [(b.count, b.period) for b in blocks])
        w = Inspector(graph)
        assert w._drawing.left_out == 0 and len(w._drawing.node_ids) < INSPECTOR_MAX_NODES, path


def test_a_block_is_named_by_the_modules_its_repeats_ran_in(recorded) -> None:
    """On the H200 recording of the zoo GPT's profile: its 3 layers are one block, whose repeats start with the residual
    add that ends the layer before (the kernels repeat from there); the block is named by where most of each
    repeat's nodes ran."""
    import graphlab as gl

    zoo = gl.get_model("gpt")
    (ids,) = zoo.make_inputs(1)
    prof = gl.profile(zoo.build(), ids, replays=20)
    w = Inspector(prof.graph, profile=prof)
    (block_id,) = w._facts.blocks
    assert w.details_for(block_id)["module"] == "blocks.0 to blocks.2, one per repeat"
    assert Inspector(prof.graph).details_for(block_id).get("module") is None  # no profile, no module names
