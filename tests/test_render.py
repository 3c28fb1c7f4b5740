"""render() and render_diff(): golden DOT sources, plus structural checks on what is drawn.

Regenerate the golden files after an intended change of the drawings with
`GRAPHLAB_UPDATE_GOLDEN=1 .venv/bin/pytest tests/test_render.py`, then look at the pictures
(`graphlab render FILE.dot -o /tmp/x.png`) before committing them.
"""
from __future__ import annotations

import html
import os
import re
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES, PUBLIC_SAMPLES, REPO

from graphlab.graph.model import CudaGraph, Edge, Graph, Node, NodeKind
from graphlab.errors import GraphlabError
from graphlab.viz.diff_drawing import render_diff
from graphlab.viz.drawing import Drawing, render

GOLDEN = REPO / "tests" / "golden"
UPDATE = os.environ.get("GRAPHLAB_UPDATE_GOLDEN") == "1"
MODELS = FIXTURES / "h200" / "models"
KINDS = FIXTURES / "h200" / "kinds"
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="needs Graphviz's dot program")

LAYER = [("layer_norm", "ATen other"), ("gemm 64x64 (CUTLASS)", "CUTLASS"), ("attention fwd", "attention"),
         ("gemm 32x32 (cuBLAS)", "cuBLAS"), ("add (elementwise)", "ATen elementwise")]


def twelve_layers() -> CudaGraph:
    """embed -> 12 identical 5-kernel layers -> head, as one stream captures it."""
    specs = [("embedding", "ATen other")] + LAYER * 12 + [("lm_head gemm", "cuBLAS")]
    nodes = tuple(
        Node(f"graph_1_node_{i}", "graph_1", i, NodeKind.KERNEL, name=f"k{i}", demangled_name=f"void {n}<{i}>()",
             short_name=n, family=f, grid=(8, 1, 1), block=(128, 1, 1), shared_bytes=0)
        for i, (n, f) in enumerate(specs)
    )
    edges = tuple(Edge(a.id, b.id) for a, b in zip(nodes, nodes[1:]))
    return CudaGraph((Graph("graph_1", nodes, edges),), source="synthetic/twelve_layers.dot")


def read(path: Path) -> CudaGraph:
    from graphlab.graph.dot_parser import read_dot

    return read_dot(path)


def check_golden(name: str, source: str) -> None:
    path = GOLDEN / f"{name}.gv"
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(source, encoding="utf-8")
    assert path.exists(), f"no golden file {path}: run GRAPHLAB_UPDATE_GOLDEN=1 pytest {__file__}"
    expected = path.read_text(encoding="utf-8")
    assert source == expected, f"{name}: drawing changed; if intended, regenerate with GRAPHLAB_UPDATE_GOLDEN=1"


def node_ids(source: str) -> list[str]:
    """`id=` values of the node statements in the DOT source (clusters and edges excluded)."""
    out = []
    for line in source.splitlines():
        m = re.match(r"\s*(\S+) \[(.*)\]$", line)
        if m and m.group(1) not in ("graph", "node", "edge"):
            ident = re.search(r'\bid="?([^"\s\]]+)"?', m.group(2))
            if ident:
                out.append(ident.group(1))
    return out


def cluster_parents(source: str) -> dict[str, str | None]:
    """cluster name -> name of the cluster it is nested in (None at the top level)."""
    stack: list[str | None] = []
    parents: dict[str, str | None] = {}
    for line in source.splitlines():
        line = line.strip()
        m = re.match(r"subgraph (\S+) \{$", line)
        if m:
            parents[m.group(1)] = next((s for s in reversed(stack) if s), None)
            stack.append(m.group(1))
        elif line == "}" and stack:
            stack.pop()
    return parents


# -- golden files -----------------------------------------------------------------------------

GOLDEN_CASES = {
    "twelve_layers": lambda: render(twelve_layers()),
    "gpt_b1_verbose": lambda: render(read(MODELS / "gpt_b1__verbose.dot")),
    "gpt_b1_filtered_lr": lambda: render(read(MODELS / "gpt_b1__verbose.dot"), rankdir="LR", collapse=False,
                                         hide_families=["ATen elementwise"], highlight=["graph_1_node_4"],
                                         selected="graph_1_node_2", legend=False),
    "mixed_all": lambda: render(read(KINDS / "mixed__all.dot")),
    "nested_while_if": lambda: render(read(KINDS / "nested__verbose.dot")),
    "conditional_switch": lambda: render(read(KINDS / "conditional_switch__default.dot")),
    "candle_mlp34": lambda: render(read(PUBLIC_SAMPLES / "candle_mlp34_69kernels_67a48c5.dot")),
    "diff_mlp_b1_b8": lambda: render_diff(read(MODELS / "mlp_b1__verbose.dot"), read(MODELS / "mlp_b8__verbose.dot"),
                                          names=("batch 1", "batch 8")),
}


@pytest.mark.parametrize("name", sorted(GOLDEN_CASES))
def test_golden_source(name):
    check_golden(name, GOLDEN_CASES[name]().source)


def test_rendering_is_deterministic():
    assert render(twelve_layers()).source == render(twelve_layers()).source


# -- repeated blocks -------------------------------------------------------------------------


def test_twelve_layers_collapse_into_one_x12_cluster():
    g = twelve_layers()
    d = render(g)
    assert "x12" in d.source
    assert d.collapsed == ["block_0"] and d.blocks[0].count == 12
    assert node_ids(d.source) == [f"graph_1_node_{i}" for i in range(6)] + ["graph_1_node_61"]
    parents = cluster_parents(d.source)
    assert parents == {"cluster_block_0": None}
    # the layers are chained to each other: no edge may run from the block back into itself
    assert "graph_1_node_5 -> graph_1_node_1" not in d.source
    assert "graph_1_node_5 -> graph_1_node_61" in d.source  # last layer's output reaches the head


def test_every_node_is_drawn_once_without_collapse_or_when_expanded():
    g = twelve_layers()
    everything = [n.id for n in g.nodes()]
    for d in (render(g, collapse=False), render(g, expand=["block_0"])):
        ids = node_ids(d.source)
        assert sorted(ids) == sorted(everything) and len(ids) == len(set(ids))
        assert "x12" not in d.source
    expanded = render(g, expand=["block_0"])
    assert cluster_parents(expanded.source)["cluster_block_0_11"] is None
    assert "repeat 12 of 12" in expanded.source and "block_0 12/12" not in expanded.source  # words, not the id


def test_highlight_inside_a_collapsed_repeat_lights_its_stand_in():
    d = render(twelve_layers(), highlight=["graph_1_node_27"], selected="graph_1_node_58")
    # layers are nodes 1..60, 5 each: node 27 is offset 1 of layer 6, node 58 offset 2 of layer 12
    lines = {i: line for line in d.source.splitlines() for i in node_ids(line)}
    assert "highlighted" in lines["graph_1_node_2"] and 'color="#CC3311"' in lines["graph_1_node_2"]
    assert "selected" in lines["graph_1_node_3"] and "penwidth=4" in lines["graph_1_node_3"]
    assert "highlighted" not in lines["graph_1_node_4"] and "selected" not in lines["graph_1_node_4"]


# -- what is drawn ----------------------------------------------------------------------------


def test_real_gpt_capture_draws_every_node_once_without_collapse():
    g = read(MODELS / "gpt_b1__verbose.dot")
    ids = node_ids(render(g, collapse=False).source)
    assert sorted(ids) == sorted(n.id for n in g.nodes())


def test_collapsed_real_capture_draws_each_node_once_except_later_repeats():
    g = read(MODELS / "gpt_b1__verbose.dot")
    d = render(g)
    (block,) = d.blocks
    folded = set(block.all_node_ids()) - set(block.representative)
    ids = node_ids(d.source)
    assert len(ids) == len(set(ids)) == len(g) - len(folded) == 18
    assert set(ids) == {n.id for n in g.nodes()} - folded
    assert "x6" in d.source


def test_a_dot_failure_is_one_graphlab_error(monkeypatch):
    import subprocess

    from graphlab.viz import drawing

    def broken(fmt, source, timeout_s):
        return subprocess.CompletedProcess(["dot"], 1, b"", b"Error: syntax error in line 3")

    d = render(twelve_layers())
    monkeypatch.setattr(drawing, "_run_dot", broken)
    with pytest.raises(GraphlabError, match="could not draw this graph as svg: Error: syntax error in line 3"):
        d.svg()
    assert "syntax error" in d._repr_mimebundle_()["text/plain"]


def _chain(n: int) -> CudaGraph:
    """n kernels in a chain, each unlike its neighbours (nothing repeats, so nothing collapses)."""
    nodes = tuple(Node(f"graph_1_node_{i}", "graph_1", i, NodeKind.KERNEL, name=f"k{i}", short_name=f"op{i}",
                       family="other") for i in range(n))
    return CudaGraph((Graph("graph_1", nodes, tuple(Edge(a.id, b.id) for a, b in zip(nodes, nodes[1:]))),),
                     source="chain.dot")


def test_a_drawing_past_max_nodes_draws_the_first_nodes_and_says_so():
    from graphlab.viz.drawing import MAX_DRAWN_NODES

    graph = _chain(MAX_DRAWN_NODES + 500)
    d = render(graph)
    assert len(d.node_ids) == MAX_DRAWN_NODES and d.left_out == 500
    assert d.node_ids == [n.id for n in graph.nodes()][:MAX_DRAWN_NODES]  # the first, in topological order
    assert "only the first 2,000 nodes are drawn (500 more left out, max_nodes=2,000)" in d.source
    assert "500 left out (max_nodes)" in repr(d)
    assert f'"graph_1_node_{MAX_DRAWN_NODES}"' not in d.source  # no edge to a node left out
    small = render(graph, max_nodes=10)
    assert len(small.node_ids) == 10 and small.left_out == len(graph) - 10
    whole = render(graph, max_nodes=None)
    assert len(whole.node_ids) == len(graph) and whole.left_out == 0 and "left out" not in whole.source
    assert render(_chain(50)).left_out == 0


def test_left_out_bodies_count_their_nodes():
    g = read(FIXTURES / "h200" / "kinds" / "mixed__all.dot")
    d = render(g, max_nodes=3)
    assert len(d.node_ids) == 3 and len(d.node_ids) + d.left_out == len(g)


@needs_dot
def test_dot_gets_a_time_limit():
    with pytest.raises(GraphlabError, match=r"dot took over 0.001 s to lay out 2,000 nodes: draw fewer"):
        render(_chain(2500)).pipe("svg", timeout_s=0.001)


def test_bodies_are_nested_clusters():
    g = read(KINDS / "nested__verbose.dot")  # memset -> WHILE { IF { memset } }
    d = render(g)
    while_body, if_body = g.graphs[1].id, g.graphs[2].id
    parents = cluster_parents(d.source)
    assert parents[f"cluster_{while_body}"] is None
    assert parents[f"cluster_{if_body}"] == f"cluster_{while_body}"
    assert "WHILE body" in d.source and "IF body (true)" in d.source
    assert sorted(node_ids(d.source)) == sorted(n.id for n in g.nodes())


def test_switch_cases_and_if_else_bodies_are_labelled():
    assert all(f"SWITCH case {i}" in render(read(KINDS / "conditional_switch__default.dot")).source for i in range(3))
    src = render(read(KINDS / "conditional_if_else__default.dot")).source
    assert "IF/ELSE body (true)" in src and "IF/ELSE body (false)" in src


def test_nodes_carry_model_ids_kind_and_family_classes_and_tooltips():
    g = read(KINDS / "mixed__all.dot")
    src = render(g).source
    gemm = next(n for n in g.kernels() if n.family == "cuBLAS")
    line = next(s for s in src.splitlines() if f"id={gemm.id}" in s)
    assert 'class="kind-kernel family-cublas"' in line
    assert "tooltip=" in line and gemm.demangled_name.split("<")[0][:30] in line
    memcpy = next(n for n in g.nodes() if n.kind is NodeKind.MEMCPY)
    line = next(s for s in src.splitlines() if f"id={memcpy.id}" in s)
    assert 'class="kind-memcpy"' in line and "memcpy HtoD" in line and "shape=parallelogram" in line


def test_hidden_kinds_are_dropped_and_edges_bridged():
    g = read(KINDS / "mixed__all.dot")
    memsets = [n.id for n in g.root.nodes if n.kind is NodeKind.MEMSET]
    d = render(g, hide_kinds=["memset"])
    ids = node_ids(d.source)
    assert not set(memsets) & set(ids)
    # memcpy -> memset -> memset -> gemm becomes memcpy -> gemm, dashed
    memcpy = next(n.id for n in g.nodes() if n.kind is NodeKind.MEMCPY)
    gemm = next(n.id for n in g.kernels() if n.family == "cuBLAS")
    assert re.search(rf"{memcpy} -> {gemm} \[style=dashed", d.source)


def test_hidden_families_are_dropped():
    g = read(MODELS / "gpt_b1__verbose.dot")
    d = render(g, collapse=False, hide_families=["ATen elementwise"])
    kept = set(node_ids(d.source))
    assert all((n.id in kept) == (n.family != "ATen elementwise") for n in g.nodes())
    assert "family-aten-elementwise" not in d.source and "[ATen elementwise]" not in d.source
    hidden = sum(n.family == "ATen elementwise" for n in g.nodes())
    assert f"{hidden} nodes hidden (families ATen elementwise); dashed edges pass through them" in d.source


def test_legend_lists_the_families_drawn_and_can_be_left_out():
    src = render(read(MODELS / "gpt_b1__verbose.dot")).source
    assert all(f in src for f in ("<B>kernel family</B>", "cuBLAS", "CUTLASS", "attention", "#77AADD"))
    assert "Triton" not in src and "NCCL" not in src
    assert "<B>kernel family</B>" not in render(read(MODELS / "gpt_b1__verbose.dot"), legend=False).source


def test_render_accepts_a_bare_graph_and_rejects_other_things():
    assert "embedding" in render(twelve_layers().root).source
    with pytest.raises(GraphlabError, match="takes a CudaGraph"):
        render("graph.dot")  # type: ignore[arg-type]
    with pytest.raises(GraphlabError, match="rankdir"):
        render(twelve_layers(), rankdir="UP")


def test_render_diff_colours_by_status_and_keeps_the_diff():
    a, b = read(MODELS / "mlp_b1__verbose.dot"), read(MODELS / "mlp_b8__verbose.dot")
    d = render_diff(a, b, names=("batch 1", "batch 8"))
    assert d.diff is not None and d.diff.names == ("batch 1", "batch 8")
    assert len(d.node_ids) == len(a) + len(b)
    assert {i.split("-", 1)[0] for i in d.node_ids} == {"a", "b"}
    assert "status-added" in d.source and "status-kernel-changed" in d.source
    assert "batch 1" in d.source and "kernel" in d.source  # the counts table


def test_a_long_diff_table_says_what_to_call_for_the_rest():
    """Issue 10: "... 2 more (see Drawing.diff)" gave a reader nothing to type."""
    a, b = read(MODELS / "gpt_b1__verbose.dot"), read(MODELS / "gpt_b8__verbose.dot")
    d = render_diff(a, b, names=("batch 1", "batch 8"))
    rows = len(d.diff.rows())
    assert rows > 12
    assert f"... and {rows - 12} more: print(gl.diff(a, b)) lists every difference" in d.source
    assert "see Drawing.diff" not in d.source
    assert len(str(d.diff).splitlines()) > rows  # and print(gl.diff(a, b)) does list them


# -- output formats ---------------------------------------------------------------------------


@needs_dot
def test_svg_keeps_model_ids_and_classes(tmp_path):
    g = read(KINDS / "mixed__all.dot")
    svg = html.unescape(render(g).svg())
    gemm = next(n for n in g.kernels() if n.family == "cuBLAS")
    assert f'<g id="{gemm.id}" class="node kind-kernel family-cublas">' in svg
    assert 'class="cluster body body-of-conditional"' in svg


@needs_dot
def test_save_picks_the_format_from_the_suffix(tmp_path):
    d = render(twelve_layers())
    assert d.save(tmp_path / "g.svg").read_text().lstrip().startswith("<?xml")
    assert d.save(tmp_path / "g.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert d.save(tmp_path / "g.gv").read_text() == d.source
    with pytest.raises(GraphlabError, match="cannot tell the format"):
        d.save(tmp_path / "g.jpeg")


@needs_dot
def test_mimebundle_has_svg_png_and_text():
    bundle = render(twelve_layers())._repr_mimebundle_()
    assert set(bundle) == {"image/svg+xml", "image/png", "text/plain"}
    assert bundle["image/png"][:4] == b"\x89PNG" and "<svg" in bundle["image/svg+xml"]
    assert "1 repeated block(s) collapsed" in bundle["text/plain"]
    assert set(render(twelve_layers())._repr_mimebundle_(include={"image/png"})) == {"image/png"}


def test_without_dot_the_bundle_falls_back_to_text(monkeypatch):
    from graphlab.viz import drawing

    def missing(*args, **kwargs):
        raise FileNotFoundError(2, "No such file or directory", "dot")

    d = render(twelve_layers())
    monkeypatch.setattr(drawing, "_run_dot", missing)
    bundle = d._repr_mimebundle_()
    assert set(bundle) == {"text/plain"} and "apt-get install graphviz" in bundle["text/plain"]
    assert isinstance(d, Drawing) and d.source.startswith("digraph")


# -- one graph surface: anything Replayable draws, an eager stand-in says why it cannot ------------------------
class FakeCaptured:
    """The smallest object that implements `graphlab.capture.surface.Replayable` around a parsed DAG."""

    origin = "live"
    capture_ms = instantiate_ms = 0.0
    pool_bytes, peak_bytes, exec_bytes = 0, None, None

    def __init__(self, dag: CudaGraph, name: str = "fake"):
        self._dag, self.name, self.inputs, self.outputs = dag, name, (), ()

    def __call__(self, *new_inputs, **named):
        return self.outputs

    def unchecked(self, *new_inputs):
        return self.outputs

    def replay(self):
        return self.outputs

    @property
    def graph(self) -> CudaGraph:
        return self._dag

    def dot(self, flags=None):
        return ""

    def census(self):
        return None

    def verify(self, make_inputs=None, trials=3):
        return None

    def pool(self):
        return None

    def reset(self):
        pass

    def summary(self):
        return {"name": self.name}


class FakeEager(FakeCaptured):
    """An eager stand-in: it replays, but has no DAG, and says so the way `EagerGraph` does."""

    origin = "eager"

    @property
    def graph(self) -> CudaGraph:
        from graphlab.errors import UnsupportedError

        raise UnsupportedError(f"{self.name!r} is an eager stand-in (backend='eager'): it has no CUDA graph to draw")


@pytest.fixture
def recorded_graphs(monkeypatch):
    """`gl.capture` of the zoo's mlp at batch 1 and 8 in recorded mode (CPU): RecordedGraphs; the mode restored."""
    import graphlab.mode as mode
    from graphlab.capture.api import capture
    from graphlab.zoo import get_model

    monkeypatch.setattr(mode, "_current", None)
    mode.set_mode("recorded")
    zoo = get_model("mlp")
    model = zoo.build()
    return capture(model, *zoo.make_inputs(1)), capture(model, *zoo.make_inputs(8))


def test_a_fake_replayable_draws_as_its_dag_does():
    from graphlab.capture.surface import Replayable

    dag = twelve_layers()
    fake = FakeCaptured(dag)
    assert isinstance(fake, Replayable)  # every member of the Protocol, nothing else
    assert render(fake).source == render(dag).source
    assert render_diff(fake, FakeCaptured(read(MODELS / "gpt_b1__verbose.dot"))).diff.a is dag


def test_a_recorded_graph_draws_and_diffs_like_the_dump_it_holds(recorded_graphs):
    import graphlab as gl
    from graphlab.capture.recorded import RecordedGraph

    b1, b8 = recorded_graphs
    assert isinstance(b1, RecordedGraph) and isinstance(b1.graph, CudaGraph)
    assert render(b1).source == render(b1.graph).source
    d = render_diff(b1, b8, names=("batch 1", "batch 8"))
    assert d.diff.a == b1.graph and d.diff.b == b8.graph
    assert gl.diff(b1, b8).count_by_status() == d.diff.count_by_status()


def test_an_eager_stand_in_passes_its_own_error_on():
    from graphlab.errors import UnsupportedError

    for draw in (render, lambda g: render_diff(g, twelve_layers()), lambda g: render_diff(twelve_layers(), g)):
        with pytest.raises(UnsupportedError, match="'stand-in' is an eager stand-in .* no CUDA graph to draw"):
            draw(FakeEager(twelve_layers(), name="stand-in"))


def test_the_caches_eager_graph_says_it_has_no_dag():
    torch = pytest.importorskip("torch")
    from graphlab.cache.graph_cache import GraphCache

    cache = GraphCache(torch.nn.Linear(4, 3).eval(), buckets=[2], backend="eager")
    with torch.no_grad():
        cache(torch.randn(2, 4))
    (eager,) = cache.graphs.values()
    with pytest.raises(GraphlabError, match="eager"):
        render(eager)


def test_something_that_is_no_graph_is_one_clear_error():
    with pytest.raises(GraphlabError, match="render_diff\\(\\) takes a CudaGraph .* not int"):
        render_diff(twelve_layers(), 3)  # type: ignore[arg-type]


def test_the_static_heat_maps_tooltips_give_each_nodes_time():
    """`gl.render(graph, heat=prof)`: hovering a node said its name and family but not the time it is coloured by."""
    import graphlab as gl
    from graphlab.present import duration

    prof = gl.profile.recorded("gpt b1")
    times = prof.heat()
    drawing = render(prof.graph, heat=prof)
    tips = dict(re.findall(r'id=(graph_\d+_node_\d+)\b[^\n]*tooltip="([^"]*)"', drawing.source))
    assert tips and set(tips) <= set(times) | {n.id for n in prof.graph.nodes()}
    folded = {n for b in drawing.blocks for rep in b.node_ids[1:] for n in rep}
    alone = [n for n in tips if n in times and n not in folded and not any(n in b.representative for b in drawing.blocks)]
    assert alone
    for node_id in alone:
        assert f"GPU time {duration(times[node_id])} per replay" in tips[node_id], tips[node_id]
    block = drawing.blocks[0]
    rep = block.representative[0]
    mean = sum(times[r[0]] for r in block.node_ids) / block.count
    assert f"GPU time {duration(mean)} per replay, the mean of its {block.count} repeats" in tips[rep]


def test_a_drawing_with_every_node_hidden_says_so():
    g = read(MODELS / "gpt_b1__verbose.dot") if (MODELS / "gpt_b1__verbose.dot").exists() else twelve_layers()
    kinds = sorted({n.kind.value for n in g.nodes()})
    drawing = render(g, hide_kinds=kinds)
    assert drawing.node_ids == []
    assert "no node drawn: every node is hidden" in drawing.source and "tick a kind or family again" in drawing.source
