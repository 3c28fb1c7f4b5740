"""The inspector widget, driven headless (no browser, no kernel: ipywidgets uses a dummy comm).

Real data only: the H200 recordings (GPT at batch 1 and 8) and the H200 kind fixtures.
"""
from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import graphlab as gl
from graphlab.graph import structure
from graphlab.graph.model import CudaGraph
from graphlab.ui.drawing_widget import _safe_stem
from graphlab.ui.inspector import (
    DiffInspector,
    Inspector,
    InspectorError,
    _default_title,
    inspect,
    inspect_diff,
)

from test_render import FakeCaptured, FakeEager, recorded_graphs  # noqa: F401 - recorded_graphs: a fixture

REPO = Path(__file__).resolve().parent.parent
KINDS = REPO / "tests" / "fixtures" / "h200" / "kinds"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def gpt() -> gl.Recording:
    return gl.load_recording("gpt")


@pytest.fixture(scope="module")
def b1(gpt: gl.Recording) -> CudaGraph:
    return gpt.graph("b1")


@pytest.fixture(scope="module")
def b8(gpt: gl.Recording) -> CudaGraph:
    return gpt.graph("b8")


@pytest.fixture
def w(b1: CudaGraph) -> Inspector:
    return inspect(b1)


def _click(widget: Inspector, node_id: str) -> None:
    """What the front end sends when a node is clicked: a state update of `selected`."""
    widget._handle_msg({"content": {"data": {"method": "update", "state": {"selected": node_id}}}, "buffers": []})


def _type(widget: Inspector, text: str) -> None:
    """What the front end sends when the search box changes."""
    widget._handle_msg({"content": {"data": {"method": "update", "state": {"search": text}}}, "buffers": []})


def _drawn_in_svg(svg: str) -> set[str]:
    return {i.replace("&#45;", "-") for i in re.findall(r'<g id="([^"]+)" class="node', svg)}


# -- opening ---------------------------------------------------------------------------------------


def test_opens_with_drawing_summary_and_options(w: Inspector, b1: CudaGraph) -> None:
    assert w.svg.lstrip().startswith("<svg")
    drawn = _drawn_in_svg(w.svg)
    assert drawn and drawn <= {n.id for n in b1.nodes()} | {"legend"}
    truth = structure.summary(b1)
    rows = dict(w.summary["rows"])
    assert rows["nodes"] == truth.nodes == len(b1)
    assert rows["edges"] == truth.edges
    assert rows["longest chain (depth)"] == f"{truth.depth} nodes"
    assert rows["widest level (parallelism)"].startswith(str(truth.widest_level))
    tables = dict((title, dict(pairs)) for title, pairs in w.summary["tables"])
    assert tables["nodes by kind"] == b1.count_by_kind()
    assert tables["kernels by family"] == b1.count_by_family()
    assert {o["name"]: o["count"] for o in w.kind_options} == b1.count_by_kind()
    assert sum(o["count"] for o in w.family_options) == len(b1.kernels())
    assert w.title == _default_title(b1) and "b1" in w.title
    assert w.render_ms > 0


def test_front_end_is_bundled_offline(w: Inspector) -> None:
    esm, css = w._esm, w._css
    assert "export default" in esm and ".gl-inspector" in css
    assert not re.search(r"^\s*import\s", esm, re.MULTILINE), "the ESM must not import anything"
    assert "http://" not in esm + css and "https://" not in esm + css


def test_default_titles() -> None:
    def titled(source: str) -> str:
        return _default_title(CudaGraph((), source=source))

    assert titled("/repo/data/recordings/h200/gpt/b1.dot") == "gpt/b1"
    assert titled("tests/fixtures/h200/models/gpt_b1__verbose.dot") == "gpt_b1__verbose"
    assert titled("gpt b1 (H200)") == "gpt b1 (H200)"
    assert _safe_stem("gpt b1 (H200)") == "gpt_b1_H200"


def test_accepts_captured_graphs_and_dot_paths(b1: CudaGraph) -> None:
    class Captured:  # what gl.capture returns, as far as the inspector cares
        graph = b1

    assert len(inspect(Captured()).graph) == len(b1)
    path = KINDS / "memcpy__verbose.dot"
    assert inspect(str(path)).graph.count_by_kind() == {"memcpy": 3}
    with pytest.raises(InspectorError, match="cannot inspect a int"):
        inspect(42)
    with pytest.raises(InspectorError, match=r"gl.inspect\(rec.graph\('b1'\)\)"):
        inspect(gl.load_recording("gpt"))


def test_takes_any_replayable_graph_and_passes_an_eager_stand_ins_error_on(b1: CudaGraph, b8: CudaGraph) -> None:
    from graphlab.errors import UnsupportedError

    w = inspect(FakeCaptured(b1))
    assert w.graph is b1 and w.summary["rows"][0] == ["nodes", len(b1)]
    diff = inspect(FakeCaptured(b1), compare=FakeCaptured(b8))
    assert isinstance(diff, DiffInspector) and (diff.a, diff.b) == (b1, b8)
    for call in (lambda: inspect(FakeEager(b1, name="eager-b1")), lambda: inspect_diff(b1, FakeEager(b8)),
                 lambda: inspect(b1, compare=FakeEager(b8))):
        with pytest.raises(UnsupportedError, match="eager stand-in .* no CUDA graph to draw"):
            call()


def test_a_recorded_graph_opens_like_its_dump(recorded_graphs) -> None:
    rec_b1, rec_b8 = recorded_graphs
    w = inspect(rec_b1)
    assert w.graph == rec_b1.graph and w.summary == inspect(rec_b1.graph).summary
    d = inspect_diff(rec_b1, rec_b8, names=("batch 1", "batch 8"))
    assert d.result.names == ("batch 1", "batch 8") and d.result.count_by_status()["changed"] > 0


# -- selection and details -------------------------------------------------------------------------


def test_selecting_a_kernel_fills_every_detail(w: Inspector, b1: CudaGraph) -> None:
    info = structure.analyze(b1)
    node_id = info.order[4]
    node = b1.node(node_id)
    w.selected = node_id
    d = w.details
    assert d["id"] == node_id and d["kind"] == "kernel"
    assert d["family"] == node.family and d["short_name"] == node.short_name
    assert d["demangled_name"] == node.demangled_name and d["name"] == node.name
    assert tuple(d["grid"]) == node.grid and tuple(d["block"]) == node.block
    assert d["shared_bytes"] == node.shared_bytes
    assert d["topo_position"] == 5 and d["topo_total"] == len(b1.root.nodes)
    assert [p["id"] for p in d["predecessors"]] == list(info.preds[node_id])
    assert [s["id"] for s in d["successors"]] == list(info.succs[node_id])
    assert d["level"] == info.level[node_id]
    assert d["extra"] == node.details


def test_a_front_end_click_updates_the_details(w: Inspector, b1: CudaGraph) -> None:
    target = b1.kernels()[-1]
    _click(w, target.id)
    assert w.selected == target.id
    assert w.details["demangled_name"] == target.demangled_name


def test_unknown_ids_clear_the_details(w: Inspector) -> None:
    w.selected = "legend"
    assert w.details == {}
    assert "not a node" in w.status
    w.selected = ""
    assert w.details == {}


def test_copy_details_show_direction_and_bytes() -> None:
    g = gl.read_dot(KINDS / "memcpy__verbose.dot")
    w = inspect(g)
    for node in g.nodes():
        w.selected = node.id
        assert w.details["copy_direction"] == node.copy_direction
        assert w.details["copy_bytes"] == node.copy_bytes
    assert {n.copy_direction for n in g.nodes()} == {"HtoD", "DtoD", "DtoH"}


def test_nodes_inside_a_body_graph_say_so() -> None:
    g = gl.read_dot(KINDS / "conditional_if__verbose.dot")
    body = [gr for gr in g.graphs if gr.parent_node_id is not None][0]
    w = inspect(g)
    w.selected = body.nodes[0].id
    owner = g.node(body.parent_node_id)
    # in words, as the drawing labels the body: "Inside the IF body (true) of the conditional IF node."
    assert f"Inside the IF body (true) of the {owner.label} node." in w.details["note"]
    assert ["graph", f"IF body (true) of {owner.label}"] in w.details["rows"]
    assert body.id not in w.details["note"] and body.parent_node_id not in w.details["note"]
    w.selected = owner.id
    assert "Bodies: IF body (true), " in w.details["note"] and "graph_" not in w.details["note"]
    assert body.nodes[0].id in w.drawn_ids


# -- search ----------------------------------------------------------------------------------------


def test_search_is_case_insensitive_and_matches_full_names(b1: CudaGraph) -> None:
    w = inspect(b1, collapse=False)
    w.search = "GEMM"
    expected = [n.id for n in b1.kernels() if "gemm" in f"{n.short_name}{n.demangled_name}{n.name}".lower()]
    assert w.matches == expected and expected
    w.search = "vectorized_gather_kernel"  # only in the demangled / mangled name
    assert w.matches and all("gather" in b1.node(i).demangled_name for i in w.matches)
    w.search = ""
    assert w.matches == []


def test_every_answered_search_reaches_the_front_end_even_when_the_matches_stay_the_same(b1: CudaGraph) -> None:
    """Issue 10: "gemm" (5), then "qxqx" (0), then an empty box left "0 matches" and the drawing dimmed,
    because `matches` went [] -> [] and the front end heard nothing. `searched` now changes with every
    answer, in the same message as the matches (tests/browser checks what the page then shows)."""
    w = inspect(b1)
    sent: list[dict] = []
    w.comm.send = lambda data=None, metadata=None, buffers=None: sent.append(data)  # the dummy comm's
    w.search = "gemm"
    assert len(w.matches) == 5 and w.searched == "gemm"
    for text in ("qxqx", "", "qxqx"):  # 0 matches, cleared, then 0 matches typed into an empty box
        sent.clear()
        _type(w, text)
        assert w.matches == [] and w.searched == text
        updates = [m["state"] for m in sent if m and m.get("method") == "update"]
        assert len(updates) == 1 and updates[0]["searched"] == text
    w.search_regex = True
    w.search = "gemm("
    assert w.search_error and w.searched == "gemm("


def test_regex_search_and_a_bad_regex(b1: CudaGraph) -> None:
    w = inspect(b1, collapse=False)
    w.search_regex = True
    w.search = r"^(layer_norm|gelu)"
    assert w.matches and {b1.node(i).short_name.split(" ")[0] for i in w.matches} == {"layer_norm", "gelu"}
    w.search = "gemm("
    assert w.matches == [] and w.search_error
    with pytest.raises(InspectorError, match="bad regular expression"):
        w.find("gemm(", regex=True)


def test_matches_folded_into_a_collapsed_block_light_their_stand_in(w: Inspector, b1: CudaGraph) -> None:
    w.search = "layer_norm"
    every = w.find("layer_norm")
    assert len(every) > len(w.matches) > 0  # later repeats are drawn once
    assert set(w.matches) <= w.drawn_ids


# -- filters, blocks, layout -----------------------------------------------------------------------


def test_a_node_folded_into_a_collapsed_repeat_is_shown_by_its_stand_in(w: Inspector) -> None:
    block = w._facts.blocks["block_0"]
    hidden = block.node_ids[-1][2]  # third node of the last repeat: not drawn while collapsed
    assert hidden not in w.drawn_ids
    w.selected = hidden
    assert w.details["drawn_as"] == block.representative[2] in w.drawn_ids
    assert f"repeat {block.count} of {block.count}" in w.details["note"]
    w.collapse = False
    w.selected = ""
    w.selected = hidden
    assert w.details["drawn_as"] == hidden and w.details["can_toggle"] is False


def test_hiding_kinds_and_families_redraws(w: Inspector, b1: CudaGraph) -> None:
    memsets = {n.id for n in b1.nodes() if n.kind.value == "memset"}
    assert memsets & w.drawn_ids
    w.hide_kinds = ["memset"]
    assert not memsets & _drawn_in_svg(w.svg)
    attention = {n.id for n in b1.kernels() if n.family == "attention"}
    w.hide_families = ["attention"]
    assert not attention & w.drawn_ids
    w.search = "fmha"  # the attention kernels' names: all hidden now
    assert w.matches == [] and w.hidden_matches == len(attention)
    w.hide_kinds, w.hide_families = [], []
    assert memsets & w.drawn_ids and attention & w.drawn_ids
    assert w.matches and w.hidden_matches == 0


def test_collapse_and_expand_repeated_blocks(w: Inspector, b1: CudaGraph) -> None:
    collapsed = len(w.drawn_ids)
    assert "block_0" in w.drawn_ids
    w.selected = "block_0"
    block = w.details
    assert block["kind"] == "repeated block" and block["members"]
    w.expanded = ["block_0"]
    assert len(w.drawn_ids) > collapsed
    w.selected = "block_0-1"  # a click on one repeat of the expanded block
    assert w.details["id"] == "block_0" and w.details["expanded"] is True
    w.expanded = []
    w.collapse = False
    assert {n.id for n in b1.nodes()} <= w.drawn_ids


def test_rankdir(w: Inspector) -> None:
    before = w.svg
    w.rankdir = "lr"
    assert w.rankdir == "LR" and w.svg != before
    with pytest.raises(InspectorError, match="rankdir"):
        w.rankdir = "sideways"


def test_a_big_drawing_is_capped_and_the_status_says_so() -> None:
    from graphlab.graph.model import Edge, Graph, Node, NodeKind
    from graphlab.ui.inspector import INSPECTOR_MAX_NODES

    nodes = tuple(Node(f"graph_1_node_{i}", "graph_1", i, NodeKind.KERNEL, name=f"kernel_{i}", short_name=f"op{i}",
                       family="other") for i in range(INSPECTOR_MAX_NODES + 200))
    chain = CudaGraph((Graph("graph_1", nodes, tuple(Edge(a.id, b.id) for a, b in zip(nodes, nodes[1:]))),))
    w = inspect(chain)
    assert len(w.drawn_ids) == INSPECTOR_MAX_NODES and w.status.startswith("only the first 1,000 nodes are drawn (200 more")
    w.search = "kernel_1100"  # past the cap: found, not drawn
    assert w.matches == [] and w.hidden_matches == 1
    w.selected = "graph_1_node_1100"  # its details still come (e.g. from a neighbour's link)
    assert w.details["id"] == "graph_1_node_1100" and w.details["drawn_as"] == ""
    w.hide_kinds = ["kernel"]  # nothing left to cap: the note goes
    assert not w.status.startswith("only the first")
    assert len(inspect(chain, max_nodes=0).drawn_ids) == len(chain)


# -- export and the static picture -----------------------------------------------------------------


def test_export_every_format(w: Inspector, b1: CudaGraph, tmp_path: Path) -> None:
    w.export_dir = tmp_path
    svg, png, dot, js = (w.export(fmt) for fmt in ("svg", "png", "dot", "json"))
    assert svg == tmp_path / f"{_safe_stem(w.title)}.svg" and svg.read_text().startswith("<svg")
    assert png.read_bytes().startswith(PNG_MAGIC)
    assert dot.read_text().startswith("digraph")
    assert CudaGraph.from_json(js.read_text()).to_dict() == b1.to_dict()
    assert "saved" in w.status
    with pytest.raises(InspectorError, match="cannot export"):
        w.export("gif")


def test_exports_go_to_an_ignored_folder_and_say_where(b1: CudaGraph, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 10: exporting from a tutorial notebook wrote notebooks/gpt_b1_H200.png into the clone."""
    monkeypatch.chdir(tmp_path)  # the kernel's working directory: the notebook's folder
    w = inspect(b1)
    out = w.export("png")
    assert out.resolve() == tmp_path / "graphlab-exports" / "gpt_b1_H200.png" and out.is_file()
    assert str(out.resolve()) in w.status
    assert inspect_diff(b1, b1).export_dir == Path("graphlab-exports")
    if shutil.which("git") and (REPO / ".git").exists():
        ignored = subprocess.run(["git", "check-ignore", "-q", "notebooks/graphlab-exports/gpt_b1_H200.png"],
                                 cwd=REPO, capture_output=True)
        assert ignored.returncode == 0, "graphlab-exports/ must be in .gitignore"


def test_export_button_writes_and_sends_the_file(w: Inspector, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    w.export_dir = tmp_path
    sent: list[dict] = []
    monkeypatch.setattr(w, "send", lambda content, buffers=None: sent.append(content))
    message = {"method": "custom", "content": {"event": "export", "format": "png"}}
    w._handle_msg({"content": {"data": message}, "buffers": []})
    assert (tmp_path / f"{_safe_stem(w.title)}.png").is_file()
    assert sent and sent[0]["event"] == "exported" and sent[0]["base64"] is True
    assert base64.b64decode(sent[0]["data"]).startswith(PNG_MAGIC)


def test_mimebundle_has_a_static_picture(w: Inspector) -> None:
    data, _meta = w._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data
    assert data["image/svg+xml"] == w.svg
    assert base64.b64decode(data["image/png"]).startswith(PNG_MAGIC)
    assert data["text/plain"].startswith(f"<Inspector of {w.title}: {len(w.graph)} nodes")
    assert data["text/plain"].endswith("; no node selected>")  # words, never selected=None (the output check)


# -- diff view -------------------------------------------------------------------------------------


def test_diff_view_of_batch_1_and_8(b1: CudaGraph, b8: CudaGraph) -> None:
    d = inspect(b1, compare=b8, names=("batch 1", "batch 8"))
    assert isinstance(d, DiffInspector) and d.mode == "diff"
    assert d.title == "batch 1 vs batch 8"
    truth = gl.diff(b1, b8, names=("batch 1", "batch 8")).count_by_status()
    assert {k: v for k, v in d.summary["rows"] if k in truth} == truth
    changed = next(m for m in d.result.matches if m.status == "changed")
    d.selected = f"a-{changed.a_id}"
    assert d.details["note"].startswith("Changed (")
    assert [s["id"] for s in d.details["sides"]] == [changed.a_id, changed.b_id]
    assert d.matches == [f"b-{changed.b_id}"]  # the counterpart lights up
    removed = next(m for m in d.result.matches if m.status == "removed")
    d.selected = f"a-{removed.a_id}"
    assert d.details["status"] == "removed" and "Only in batch 1" in d.details["note"]
    assert d.matches == []


def test_diff_exports_and_static_picture(b1: CudaGraph, b8: CudaGraph, tmp_path: Path) -> None:
    d = inspect_diff(b1, b8, export_dir=tmp_path)
    data = json.loads(d.export("json").read_text())
    assert data["count_by_status"] == d.result.count_by_status()
    assert d.export("svg").read_text().startswith("<svg")
    bundle, _ = d._repr_mimebundle_()
    assert base64.b64decode(bundle["image/png"]).startswith(PNG_MAGIC)


def test_nbconvert_shows_the_static_picture(w: Inspector) -> None:
    """A saved notebook without widget state (GitHub, nbconvert) falls back to the picture."""
    import nbformat
    from nbconvert import HTMLExporter

    data, metadata = w._repr_mimebundle_()
    cell = nbformat.v4.new_code_cell("w", execution_count=1)
    cell.outputs = [nbformat.v4.new_output("execute_result", data=data, metadata=metadata, execution_count=1)]
    nb = nbformat.v4.new_notebook(cells=[cell])
    html_text, _ = HTMLExporter().from_notebook_node(nb)
    assert 'data-mime-type="image/svg+xml"' in html_text or 'data-mime-type="image/png"' in html_text


# -- issue 37: what a person reads in the inspector --------------------------------------------------


def _node_in_block(w: Inspector) -> str:
    return w._facts.blocks["block_0"].representative[2]


def test_unticking_collapse_redraws_the_details_too(w: Inspector) -> None:
    """After "collapse repeats" is unticked, the panel no longer says the block is drawn once or offers to expand it
    (it kept the collapsed drawing's words and button)."""
    w.selected = _node_in_block(w)
    assert w.details["can_toggle"] and "drawn once" in w.details["note"] and "Expand" in w.details["note"]
    w.collapse = False
    assert w.details["can_toggle"] is False
    assert "drawn once" not in w.details["note"] and "Expand" not in w.details["note"]
    assert "every repeat is drawn" in w.details["note"]
    w.collapse = True
    assert w.details["can_toggle"] and "drawn once" in w.details["note"]


def test_expanding_a_block_redraws_its_details(w: Inspector) -> None:
    w.selected = "block_0"
    assert "drawn once" in w.details["note"]
    w.expanded = ["block_0"]
    assert w.details["expanded"] is True and "every repeat drawn" in w.details["note"]


def test_blocks_and_node_ids_are_words_where_a_person_reads_them(w: Inspector) -> None:
    """'block_0' in the panel's title and notes, and in the expanded drawing's cluster labels: say the block in words
    ("the repeated block (3 x 14 nodes)"); ids stay only where code needs them (`code`, the tooltip's last line)."""
    from graphlab.output_check import svg_problems, text_problems

    block = w._facts.blocks["block_0"]
    w.selected = "block_0"
    d = w.details
    assert d["label"] == f"The repeated block ({block.count} x {block.period} nodes)"
    w.selected = _node_in_block(w)
    n = w.details
    for text in [d["label"], d["note"], n["note"], *(v for _, v in d["rows"] + n["rows"])]:
        assert text_problems(text, "details") == [], text
    assert n["code"] == _node_in_block(w)  # for code: w.selected = ...
    w.expanded = ["block_0"]
    assert svg_problems(w.svg, "drawing") == []
    assert f"repeat 1 of {block.count}" in w.svg


def test_the_details_rows_are_for_people(w: Inspector, b1: CudaGraph) -> None:
    """Launch shapes as "2 x 12 x 1" (not the tuple "(2, 12, 1)"), bytes in binary units, no node id as a row."""
    kernel = next(n for n in b1.kernels() if n.shared_bytes)
    w.selected = kernel.id
    rows = dict(w.details["rows"])
    assert rows["grid"] == " x ".join(str(g) for g in kernel.grid)
    assert rows["shared memory"] == gl.present.size(kernel.shared_bytes)
    assert "node id" not in rows and "graph" not in rows and not any("graph_" in v for v in rows.values())


def test_hiding_every_node_says_so_instead_of_a_blank_canvas(w: Inspector, b1: CudaGraph) -> None:
    assert w.notice == ""
    w.hide_kinds = list(b1.count_by_kind())  # "kernel" and "memset": both unticked
    assert w.drawn_ids <= {"legend"} and not any(n.id in w.drawn_ids for n in b1.nodes())
    assert w.notice.startswith("no node drawn") and "kernel and memset" in w.notice and "tick" in w.notice
    assert w.status == w.notice
    assert "no node drawn" in w._drawing.source  # the static picture says it too
    w.hide_kinds = []
    assert w.notice == "" and not w.status.startswith("no node drawn")


def test_the_heat_maps_legend_stays_put_when_blocks_are_collapsed_or_expanded() -> None:
    """The legend's maximum moved with "collapse repeats" (the mean of a collapsed block's node vs its slowest
    repeat): the scale spans every node's own time, however the blocks are drawn."""
    prof = gl.profile.recorded("gpt b1")
    ins = inspect(prof.graph, profile=prof)

    def legend(svg: str) -> list[str]:
        return re.findall(r">([\d.,]+ µs)(?:\s|&#160;)*<", svg)

    collapsed = legend(ins.svg)
    ins.collapse = False
    assert legend(ins.svg) == collapsed and len(collapsed) == 5
    from graphlab.viz.heat import HeatScale

    assert collapsed == [label for label, _ in HeatScale.of(prof.heat()).legend()]  # fastest to slowest node


def test_the_diff_views_colours_are_named_as_the_notebook_names_them(b1: CudaGraph, b8: CudaGraph) -> None:
    """The panel said "green" for what the drawing and notebook 04 call mint; it now names each colour as the
    legend does, with the graphs' names."""
    d = inspect(b1, compare=b8, names=("batch 1", "batch 8"))
    assert "mint: only in batch 8 (added)" in d.hint and "orange: only in batch 1 (removed)" in d.hint
    assert "green" not in d.hint.lower()
    assert "green" not in d._esm.lower()  # the front end names no colour of its own


def test_the_details_panel_as_a_table_for_a_notebook(w: Inspector, b1: CudaGraph) -> None:
    """Notebook 04 printed `found.details` key by key (grid as "[2, 12, 1]"); `details_table()` is the panel in
    words, with where the node stands among the search's matches."""
    from graphlab.output_check import html_problems

    with pytest.raises(InspectorError, match="nothing selected"):
        w.details_table()
    w.search = "gemm"
    w.selected = w.matches[0]
    table = w.details_table()
    rows = {row["what"]: row["value"] for row in table.rows}
    node = b1.node(w.matches[0])
    assert rows["node"] == node.label and rows["grid"] == " x ".join(str(g) for g in node.grid)
    assert rows["waits for"] and rows["runs before"]
    assert f"Match 1 of the {len(w.matches)} drawn nodes that match “gemm”." in table.notes
    assert html_problems(table._repr_html_(), "details") == []
