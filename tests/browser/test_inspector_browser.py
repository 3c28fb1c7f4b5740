"""The inspector in a real browser: JupyterLab 4 on 127.0.0.1, driven by Debian's headless Chromium.

Needs `/usr/bin/chromium`, node and `npm ci` in tests/browser (`scripts/browser_test.sh` does it all).
Each test starts its own `jupyter lab` (free port, random token, temporary root, config and
settings folders, news off), copies a notebook in, and runs `drive_lab.mjs` (playwright-core),
which runs the notebook, clicks a node of the first inspector and saves a screenshot.
Timings are printed (run with `-s`), never asserted.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Iterator

import nbformat
import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
NOTEBOOK = REPO / "notebooks" / "04_reading_the_graph.ipynb"
CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS = Path(os.environ.get("GRAPHLAB_SCREENSHOT_DIR", REPO / "out" / "browser"))

pytestmark = pytest.mark.browser


def _missing() -> str | None:
    if not CHROMIUM.exists():
        return "needs Debian's chromium (apt-get install chromium)"
    if shutil.which("node") is None:
        return "needs node (apt-get install nodejs npm)"
    if not (HERE / "node_modules" / "playwright-core").is_dir():
        return "needs playwright-core: run scripts/browser_test.sh (npm ci in tests/browser)"
    return None


if _missing():
    pytestmark = [pytest.mark.browser, pytest.mark.skip(reason=_missing())]


def _lab_settings():  # type: ignore[no-untyped-def]
    """scripts/lab_settings.py, the news-off overrides scripts/lab.sh writes."""
    spec = importlib.util.spec_from_file_location("lab_settings", REPO / "scripts" / "lab_settings.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


# the flags scripts/lab.sh starts JupyterLab with (tests/test_lab_script.py keeps the two the same)
LAB_SH_FLAGS = ("--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Lab:
    """A JupyterLab server on 127.0.0.1 serving `root`."""

    def __init__(self, root: Path):
        self.root = root
        self.port = _free_port()
        self.token = secrets.token_hex(16)
        self.base = f"http://127.0.0.1:{self.port}"
        config = root.parent / "jupyter-config"
        config.mkdir(exist_ok=True)
        # news and update checks off as scripts/lab.sh turns them off (its flags, lab_settings.py's
        # overrides): no network, and no toast over the screenshot (each report says if one showed)
        app_settings = root.parent / "app-settings"
        _lab_settings().write_overrides(app_settings)
        (app_settings / "page_config.json").write_text("{}")  # so the folder is a complete app settings dir
        env = {**os.environ, "JUPYTER_CONFIG_DIR": str(config), "TQDM_DISABLE": "1"}
        self.log = (root.parent / "lab.log").open("w")
        self.proc = subprocess.Popen(
            [
                sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root", "--ip=127.0.0.1",
                f"--port={self.port}", f"--ServerApp.token={self.token}", f"--ServerApp.root_dir={root}",
                f"--LabApp.workspaces_dir={root.parent / 'workspaces'}",
                f"--LabApp.user_settings_dir={root.parent / 'settings'}",
                f"--LabApp.app_settings_dir={app_settings}", *LAB_SH_FLAGS,
                "--LabApp.expose_app_in_browser=True", "--ServerApp.open_browser=False",
            ],
            stdout=self.log, stderr=subprocess.STDOUT, env=env, cwd=root,
        )
        self._wait_ready()

    def _wait_ready(self, timeout_s: float = 90) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyter lab exited early; see {self.log.name}")
            try:
                with urllib.request.urlopen(f"{self.base}/api/status?token={self.token}", timeout=2):
                    return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError(f"jupyter lab did not start in {timeout_s} s; see {self.log.name}")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    root = tmp_path / "root"
    root.mkdir()
    server = Lab(root)
    try:
        yield server
    finally:
        server.stop()


def drive(lab: Lab, notebook: str, name: str, **options: object) -> dict:
    """Run drive_lab.mjs against `lab` (options: pick, search, search_cases, export, expand, diff, heat_ids, ...);
    return its report, also saved beside the screenshots as `<name>.json` (timings and conditions included)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shot = SCREENSHOTS / f"{name}.png"
    args = {
        "base": lab.base, "token": lab.token, "notebook": notebook, "pick": options.get("pick", ""),
        "search": options.get("search", ""), "export": options.get("export", ""),
        "expand": bool(options.get("expand")), "search_cases": options.get("search_cases"),
        "open_only": bool(options.get("open_only")), "warm_cells": int(options.get("warm_cells", 0)),
        "clicks": int(options.get("clicks", 0)), "heat_ids": options.get("heat_ids"), "timeout_ms": 150_000,
        "hide_all_kinds": bool(options.get("hide_all_kinds")), "uncollapse": int(options.get("uncollapse") or 0),
        "screenshot": str(shot), "page_screenshot": str(SCREENSHOTS / f"{name}-page.png"),
    }
    if options.get("diff"):
        args["diff_screenshot"] = str(SCREENSHOTS / f"{name}-diff.png")
    t0 = time.perf_counter()
    done = subprocess.run(
        ["node", str(HERE / "drive_lab.mjs"), json.dumps(args)], capture_output=True, text=True, timeout=300, cwd=HERE
    )
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    assert lines, f"driver printed no report:\n{done.stdout}\n{done.stderr}"
    report = json.loads(lines[-1])
    report["driver_s"] = round(time.perf_counter() - t0, 1)
    report["conditions"] = _conditions()
    (SCREENSHOTS / f"{name}.json").write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
    print(f"\n[{name}] screenshot: {shot}\n[{name}] timings: {json.dumps(report.get('times'))}, "
          f"svg mount {report.get('mount_ms')} ms, clicks answered in {report.get('click_answers_ms')} ms, "
          f"driver {report['driver_s']} s\n[{name}] last output: {report.get('last_output', '')!r}")
    assert report["ok"], report.get("error")
    assert report["external_requests"] == [], "the inspector must work offline (no CDN)"
    assert report["news_prompts"] == 0, "JupyterLab asked about news: scripts/lab_settings.py's overrides did not apply"
    return report


def _conditions() -> dict:
    """Where a run's timings were taken: cores, load, date (the figures are printed and saved, never asserted)."""
    import platform

    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {"cores": os.cpu_count(), "load_1_5_15": [round(x, 2) for x in load] if load else None,
            "machine": platform.machine(), "python": platform.python_version(),
            "utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime())}


def test_click_node_in_reading_the_graph_notebook(lab: Lab) -> None:
    """Run notebook 04 in JupyterLab, click a kernel node, and see its full name in the details panel."""
    shutil.copy(NOTEBOOK, lab.root / NOTEBOOK.name)
    report = drive(lab, NOTEBOOK.name, "reading_the_graph", search="gemm", export="svg", expand=True, diff=True,
                   pick=_first_kernel_in_a_block(), search_cases=["gemm", "qxqx", "", "qxqx"], hide_all_kinds=True,
                   uncollapse=2)  # notebook 04's second inspector drawn (the glue hidden): a node of its collapsed block
    assert report["tracebacks"] == [], report["tracebacks"]
    assert report["inspectors"] >= 2  # the graph and the batch-size diff
    import graphlab as gl

    graph = _notebook_graph(gl)
    node = graph.node(report["clicked"])
    assert node.kind.value == "kernel"
    assert report["details_kernel"].strip() == node.demangled_name
    assert node.label in report["details_title"]
    assert f"of {len(graph.root.nodes)}" in report["details_text"]  # position in topological order
    # typing in the search box reaches Python and comes back as highlights
    assert report["search_highlighted"] > 0
    assert "match" in report["search_count_text"]
    assert report["enter_selected"]  # Shift+Enter in the search box selected a match...
    assert report["selected_in_view"]  # ...and the view moved to show it
    # issue 10: after "0 matches", clearing the box clears the count and the dimming; "qxqx" typed
    # into an empty box says "0 matches" and dims the drawing
    gemm, none, cleared, none_again = report["search_cases"]
    assert gemm["count"].endswith("matches") and gemm["highlighted"] > 0 and gemm["dimmed"]
    assert gemm["count"].startswith(f"{gemm['highlighted']} match")
    assert none == {"text": "qxqx", "count": "0 matches", "dimmed": True, "highlighted": 0}
    assert cleared == {"text": "", "count": "", "dimmed": False, "highlighted": 0}
    assert none_again == {"text": "qxqx", "count": "0 matches", "dimmed": True, "highlighted": 0}
    # an export button wrote the file in graphlab-exports/ beside the notebook and offered it for download
    from graphlab.ui.drawing_widget import DEFAULT_EXPORT_DIR, _safe_stem
    from graphlab.ui.inspector import _default_title

    exported = f"{_safe_stem(_default_title(graph))}.svg"  # the widget's title names the file
    assert report["export_link"] == exported
    assert (lab.root / DEFAULT_EXPORT_DIR / exported).read_text().startswith("<svg")  # git ignores the folder
    assert str(lab.root / DEFAULT_EXPORT_DIR / exported) in report["export_status"]  # the page says where
    # the first clicked node lies in the collapsed block: expanding it draws every repeat
    assert report["nodes_after_expand"] > report["nodes_before_expand"]
    # the diff view: a changed node says what changed and lights up its counterpart on side B
    assert report["diff_clicked"].startswith("a-")
    assert report["diff_note"].startswith("Changed (")
    assert report["diff_counterparts"] == 1
    # issue 37: the diff view names its colours as notebook 04 does (mint, not green) ...
    assert "Mint: only in batch 8 (added)" in report["diff_hint"] or "mint: only in batch 8 (added)" in report["diff_hint"]
    assert "green" not in report["diff_hint"].lower()
    # ... and "fit" keeps its text readable (it drew 3 px text): 10 pt labels at 8 px or more, the rest by panning
    fit = report["diff_fit"]
    print(f"[reading_the_graph] diff view after fit: {fit}")
    assert fit["texts_in_view"] > 0 and fit["smallest_text_px"] >= 6.3  # 8 pt detail lines at the 0.8 minimum scale
    assert "too small to read" in fit["status"]
    # every kind unticked: the canvas says what is hidden and how to show it (it went blank)
    assert report["nodes_with_every_kind_hidden"] == 0
    assert report["notice_text"].startswith("no node drawn: every node is hidden (kinds kernel and memset")
    assert "tick a kind or family again" in report["notice_text"]
    assert report["nodes_after_ticking_again"] > 0
    # "collapse repeats" unticked: the panel follows (it kept "drawn once ... expand this block")
    assert "drawn once" in report["note_before_uncollapse"] and report["toggle_buttons_before_uncollapse"] == 1
    assert "every repeat is drawn" in report["note_after_uncollapse"] and "Expand" not in report["note_after_uncollapse"]
    assert report["toggle_buttons_after_uncollapse"] == 0


def test_opening_a_committed_notebook_leaves_it_unchanged(lab: Lab) -> None:
    """Issue 10: JupyterLab's autosave rewrote 00_start_here's metadata, so opening it dirtied the clone.
    Committed as scripts/normalize_notebooks.py writes them, the notebooks give it nothing to change."""
    source = REPO / "notebooks" / "00_start_here.ipynb"
    copy = lab.root / source.name
    copy.write_text(_normalizer().normalized_text(source), encoding="utf-8")  # as committed, once normalised
    before = copy.read_bytes()
    report = drive(lab, source.name, "open_start_here", open_only=True)
    assert report["dirty_after_open"] is False  # JupyterLab found nothing to change...
    assert copy.read_bytes() == before  # ...and saving it wrote the same bytes


def _normalizer():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("normalize_notebooks", REPO / "scripts" / "normalize_notebooks.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _first_kernel_in_a_block() -> str:
    """A kernel the drawing shows inside a collapsed block (the first repetition is the one drawn), so the
    details panel offers "expand this block"; the graph may start with kernels outside any block."""
    import graphlab as gl
    from graphlab.ui.inspector import _GraphFacts

    graph = _notebook_graph(gl)
    facts = _GraphFacts(graph)
    assert facts.blocks, "notebook 04's graph has no repeated block to expand"
    in_blocks = [n for n in graph.root.nodes if n.id in facts.block_of and n.kind.value == "kernel"]
    return min(in_blocks, key=lambda n: n.index).id


def _notebook_graph(gl):  # type: ignore[no-untyped-def]
    """The graph notebook 04 opens first: the GPT recording at batch 1 (made on an H200)."""
    return gl.load_recording("gpt").graph("b1")


HEAT_NOTEBOOK = REPO / "notebooks" / "11_where_the_time_goes.ipynb"
HEAT_SEARCH = "blocks.1.mlp"  # the module notebook 11 suggests searching for


def _recorded_copy_of_notebook_11(root: Path) -> str:
    """Notebook 11 as a learner runs it, in recorded mode even on a GPU machine (the test compares the page with
    the H200 recording): its `gl.set_mode("auto")` becomes `gl.set_mode("recorded")`, nothing else changes."""
    nb = nbformat.read(HEAT_NOTEBOOK, as_version=4)
    setting = [c for c in nb.cells if c.cell_type == "code" and 'gl.set_mode("auto")' in c.source]
    assert len(setting) == 1, "notebook 11 no longer sets the mode in one cell: update this test"
    setting[0].source = setting[0].source.replace('gl.set_mode("auto")', 'gl.set_mode("recorded")')
    assert any("gl.inspect(prof.graph, profile=prof)" in c.source for c in nb.cells), "notebook 11 opens no heat map"
    nbformat.write(nb, root / HEAT_NOTEBOOK.name)
    return HEAT_NOTEBOOK.name


def _heat_expectations(gl):  # type: ignore[no-untyped-def]
    """What notebook 11's heat-map inspector should show, worked out here from the same recording: each drawn
    node's time (a collapsed block's drawn node carries the sum over its repeats), the critical path's drawn
    nodes, and what a search for HEAT_SEARCH lights up."""
    from graphlab import mode
    from graphlab.ui.inspector import Inspector

    before = mode._current
    try:
        gl.set_mode("recorded")
        zoo = gl.get_model("gpt")
        (ids,) = zoo.make_inputs(1)
        prof = gl.profile(zoo.build(), ids, replays=20)
        inspector = Inspector(prof.graph, profile=prof)
    finally:
        mode._current = before
    heat = prof.heat()
    drawn = [n for n in inspector.drawn_ids if n not in inspector._facts.blocks]
    summed: dict[str, list[float]] = {}
    for node_id, us in heat.items():
        where = inspector.details_for(node_id)["drawn_as"]
        if where:
            summed.setdefault(where, []).append(us)
    # a node drawn for a collapsed block's repeats is filled by their mean (its block's label gives the sum)
    shown = {where: sum(times) / len(times) for where, times in summed.items()}
    timed = [n for n in drawn if n in shown]
    critical = {inspector.details_for(n)["drawn_as"] for n in prof.critical_path().node_ids} - {""}
    inspector.search = HEAT_SEARCH
    from graphlab.viz.heat import HeatScale

    scale = HeatScale.of(heat)  # over every node's own time, however the blocks are drawn
    return {"prof": prof, "drawn": drawn, "shown": shown, "slow": max(timed, key=shown.__getitem__),
            "fast": min(timed, key=shown.__getitem__), "critical": critical, "min_us": min(heat.values()),
            "matches": list(inspector.matches), "hidden_matches": inspector.hidden_matches, "scale": scale,
            "legend": [label for label, _ in scale.legend()]}


def _rgb(hex_colour: str) -> str:
    """"#7A0C14" as getComputedStyle writes it: "rgb(122, 12, 20)"."""
    r, g, b = (int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgb({r}, {g}, {b})"


def _luminance(hex_colour: str) -> float:
    r, g, b = (int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_heat_map_in_where_the_time_goes_notebook(lab: Lab) -> None:
    """Issue 24: notebook 11's `gl.inspect(prof.graph, profile=prof)` (the H200 recording) in JupyterLab: nodes
    filled by GPU time (a slow node dark, a fast one light), a legend in µs, the critical path outlined, a
    click shows the node's median µs and its module, and a search by module name finds its nodes."""
    import graphlab as gl
    from graphlab.viz.heat import RAMP
    from graphlab.viz.style import HIGHLIGHT_COLOR

    want = _heat_expectations(gl)
    prof, slow, fast = want["prof"], want["slow"], want["fast"]
    notebook = _recorded_copy_of_notebook_11(lab.root)
    report = drive(lab, notebook, "heat_map_notebook_11", pick=slow, search=HEAT_SEARCH, heat_ids=[slow, fast])
    assert report["tracebacks"] == [], report["tracebacks"]
    heat = report["heat"]
    print(f"[heat_map_notebook_11] slow {slow} ({want['shown'][slow]:.1f} µs drawn): {heat['nodes'][slow]}\n"
          f"[heat_map_notebook_11] fast {fast} ({want['shown'][fast]:.1f} µs drawn): {heat['nodes'][fast]}\n"
          f"[heat_map_notebook_11] legend {[e['label'] for e in heat['legend']]}, block {heat['block_labels']}")
    # every node of the graph is drawn or folded into the one collapsed block
    assert heat["drawn"] == len(want["drawn"])
    # heat colours: the slowest drawn node has the ramp's darkest colour, the fastest a light one, as painted
    slow_look, fast_look = heat["nodes"][slow], heat["nodes"][fast]
    painted = want["scale"].color(want["shown"][slow])
    assert slow_look["fill_attr"].upper() == painted.upper()
    assert want["scale"].position(want["shown"][slow]) > 0.95  # the darkest end of the ramp
    assert slow_look["fill"] == _rgb(painted)  # no stylesheet repaints it
    assert fast_look["fill"] == _rgb(fast_look["fill_attr"]) != slow_look["fill"]
    assert _luminance(fast_look["fill_attr"]) > _luminance(slow_look["fill_attr"]) + 0.4
    # the legend: a heading and five labels in µs, from the fastest node's time to the slowest node's (over every
    # node: issue 37, it no longer moves when blocks are collapsed or expanded), each with its swatch, light to dark
    assert heat["legend_heading"] == "GPU time per replay"
    labels = [entry["label"] for entry in heat["legend"]]
    assert len(labels) == 5 and all(label.endswith(" µs") for label in labels)
    assert labels == want["legend"]
    assert heat["legend"][0]["swatch"].upper() == RAMP[0] and heat["legend"][-1]["swatch"].upper() == RAMP[-1]
    assert heat["block_labels"] and all("µs in all" in label for label in heat["block_labels"])
    # the critical path: exactly its drawn nodes carry the class, each outlined in the highlight colour (one
    # stream: every node is on it, as notebook 11 says)
    assert {c["id"] for c in heat["critical"]} == want["critical"]
    assert all(c["stroke"] == _rgb(HIGHLIGHT_COLOR) and c["stroke_width"] == "3px" for c in heat["critical"])
    assert [o["id"] for o in heat["off_path"]] == sorted(set(want["drawn"]) - want["critical"])
    # a click on the slowest drawn node: its own median µs (not the block's sum), its module, on the path
    timed = prof.node(slow)
    assert report["clicked"] == slow
    details = report["details_text"]
    from graphlab.present import duration

    assert f"GPU time\t{duration(timed.median_us)} median" in details
    assert f"module\t{', '.join(timed.modules)}" in details
    assert "critical path\tyes" in details
    # search by a module name lights up its nodes (folded into the block: their drawn stand-ins)
    assert want["matches"] and sorted(report["search_matched"]) == sorted(want["matches"])
    assert report["search_count_text"] == f"{len(want['matches'])} matches" + (
        f" (+{want['hidden_matches']} not drawn)" if want["hidden_matches"] else "")


def _big_graph_notebook(root: Path, nodes_wanted: int = 1000) -> str:
    """A notebook that opens a ~1,000-node graph: the real GPT capture repeated end to end."""
    import graphlab as gl
    from graphlab.graph.model import CudaGraph, Edge, Graph

    base = _notebook_graph(gl).root
    copies = -(-nodes_wanted // len(base.nodes))
    nodes, edges, prev_tail = [], [], None
    for c in range(copies):
        rename = {n.id: f"graph_1_node_{c * len(base.nodes) + n.index}" for n in base.nodes}
        for n in base.nodes:
            data = {**n.to_dict(), "id": rename[n.id], "graph_id": "graph_1", "index": c * len(base.nodes) + n.index}
            nodes.append(type(n).from_dict(data))
        edges += [Edge(rename[e.src], rename[e.dst]) for e in base.edges]
        if prev_tail is not None:
            edges.append(Edge(prev_tail, rename[base.nodes[0].id]))
        prev_tail = rename[base.nodes[-1].id]
    big = CudaGraph((Graph("graph_1", tuple(nodes), tuple(edges)),), source="gpt_repeated.dot")
    (root / "big.json").write_text(big.to_json(indent=None))
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import graphlab as gl\nbig = gl.CudaGraph.from_json(open('big.json').read())\nlen(big)"
        ),
        nbformat.v4.new_code_cell("w = gl.inspect(big, collapse=False, max_nodes=2000)\nw"),  # all ~1,034 drawn
        nbformat.v4.new_code_cell("print(f'python layout {w.render_ms:.0f} ms')"),
    ]
    nbformat.write(nb, root / "big_graph.ipynb")
    return "big_graph.ipynb"


def test_thousand_node_graph_opens_and_responds(lab: Lab) -> None:
    """A ~1,000-node graph drawn in full: record how long it takes to appear and to answer a click."""
    notebook = _big_graph_notebook(lab.root)
    report = drive(lab, notebook, "thousand_nodes", search="gelu")
    assert report["tracebacks"] == [], report["tracebacks"]
    assert report["details_kernel"].strip()
    assert report["search_highlighted"] > 20  # one gelu per layer, 22 copies of the model
    assert report["selected_in_view"]  # the last match, ~1,000 nodes down, was scrolled into view


BIG_VIEWS = {  # how the 5,000-node graph is opened: gl.inspect's options, and how many nodes get drawn
    "collapsed": ("", 101),  # the default: its 100-node block drawn once (x50), plus the drawing's block node
    "full": (", collapse=False", 1000),  # capped at the inspector's max_nodes
    "full_2000": (", collapse=False, max_nodes=2000", 2000),
}


def _bench_graph_notebook(root: Path, view: str, *, heat: bool = False) -> str:
    """A notebook that opens the 5,000-node verbose dump of bench/bench_parse.py in the inspector; with `heat`, as
    a heat map: `gl.inspect(big, profile=prof)`, prof matched from bench/bench_profile.py's synthetic replays."""
    spec = importlib.util.spec_from_file_location("bench_parse", REPO / "bench" / "bench_parse.py")
    bench = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(bench)  # type: ignore[union-attr]
    (root / "big5000.dot").write_text(bench.build_dump(5000), encoding="utf-8")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    option = BIG_VIEWS[view][0] + (", profile=prof" if heat else "")
    profile = (  # matching the replays is timed in bench/bench_profile.py; here it runs before the clock starts
        f"\nimport sys\nsys.path.insert(0, {str(REPO / 'bench')!r})\nfrom bench_profile import synthetic_replays\n"
        "from graphlab.profile.results import build_profile\n"
        "prof = build_profile(big, synthetic_replays(big, 3), name='synthetic')" if heat else "")
    nb.cells = [
        nbformat.v4.new_code_cell(  # run before the clock starts: imports and parsing are measured in bench/
            "import time\nimport graphlab as gl\nimport graphlab.ui.inspector\n"
            "t0 = time.perf_counter(); big = gl.read_dot('big5000.dot', limits=gl.DotLimits(max_bytes=None, max_nodes=None)); parse_s = time.perf_counter() - t0"
            f"{profile}\nlen(big)"
        ),
        nbformat.v4.new_code_cell(f"t0 = time.perf_counter(); w = gl.inspect(big{option}); inspect_s = time.perf_counter() - t0\nw"),
        nbformat.v4.new_code_cell(
            "print(f'parse {parse_s * 1e3:.0f} ms, gl.inspect {inspect_s * 1e3:.0f} ms (layout {w.render_ms:.0f} ms), '\n"
            "      f'{len(w.drawn_ids)} drawn, status: {w.status}')"
        ),
    ]
    name = f"big5000_{'heat_' if heat else ''}{view}.ipynb"
    nbformat.write(nb, root / name)
    return name


@pytest.mark.parametrize("view", sorted(BIG_VIEWS))
def test_five_thousand_node_graph_opens_and_answers_clicks(lab: Lab, view: str) -> None:
    """Issue 10's goal: a 5,000-node graph opens in under 2 s and a click answers in under 100 ms.
    Timed, printed and recorded in docs/inspector.md, not asserted (a loaded machine must not fail)."""
    notebook = _bench_graph_notebook(lab.root, view)
    report = drive(lab, notebook, f"five_thousand_{view}", warm_cells=1, clicks=5, search="gemm")
    assert report["tracebacks"] == [], report["tracebacks"]
    assert report["details_kernel"].strip() and len(report["click_answers_ms"]) == 6
    assert report["search_highlighted"] > 0
    drawn = int(report["last_output"].split(" drawn")[0].rsplit(" ", 1)[-1])
    assert drawn == BIG_VIEWS[view][1]
    if view != "collapsed":
        assert f"only the first {drawn:,} nodes are drawn" in report["last_output"]


HEAT_VIEWS = ("collapsed", "full")  # the heat map as gl.inspect(big, profile=prof) opens it, and drawn in full (1,000)


def _bench_heat_expectations(view: str) -> dict:
    """The same 5,000-node heat map worked out here: the drawn nodes on the critical path (most, not all: the dump
    has side branches) and the legend's ends."""
    import graphlab as gl

    sys.path.insert(0, str(REPO / "bench"))
    try:
        from bench_parse import build_dump
        from bench_profile import synthetic_replays
    finally:
        sys.path.remove(str(REPO / "bench"))
    from graphlab.profile.results import build_profile
    from graphlab.ui.inspector import Inspector

    big = gl.parse_dot(build_dump(5000), source="big5000.dot", limits=gl.DotLimits(max_bytes=None, max_nodes=None))
    prof = build_profile(big, synthetic_replays(big, 3), name="synthetic")
    inspector = Inspector(big, profile=prof, collapse=view == "collapsed")
    critical = {inspector.details_for(n)["drawn_as"] for n in prof.critical_path().node_ids} - {""}
    drawn = [n for n in inspector.drawn_ids if n not in inspector._facts.blocks]
    from graphlab.viz.heat import HeatScale

    legend = [label for label, _ in HeatScale.of(prof.heat()).legend()]
    return {"drawn": drawn, "critical": critical, "min_us": min(prof.heat().values()), "legend": legend}


@pytest.mark.parametrize("view", HEAT_VIEWS)
def test_five_thousand_node_heat_map_opens_and_answers_clicks(lab: Lab, view: str) -> None:
    """Issue 24's goal: the heat map of a 5,000-node graph renders in under 2 s and a click shows details in
    under 100 ms. Timed in the page (opening: running the cell to the first node drawn; a click: pointer up to
    the details drawn), printed and saved with the report, not asserted. Checked: the heat colours, the legend
    in µs, and that only the critical path's nodes are outlined."""
    from graphlab.viz.style import HIGHLIGHT_COLOR

    want = _bench_heat_expectations(view)
    notebook = _bench_graph_notebook(lab.root, view, heat=True)
    report = drive(lab, notebook, f"five_thousand_heat_{view}", warm_cells=1, clicks=5, heat_ids=want["drawn"][:1])
    assert report["tracebacks"] == [], report["tracebacks"]
    heat = report["heat"]
    print(f"[five_thousand_heat_{view}] heat map drawn {report['times'].get('inspector_cell_to_drawn_ms')} ms after "
          f"its cell ran, {len(report['click_answers_ms'])} clicks answered in {report['click_answers_ms']} ms "
          f"(in the page), {report['conditions']}")
    assert heat["drawn"] == len(want["drawn"]) == BIG_VIEWS[view][1] - (view == "collapsed")
    assert len(report["click_answers_ms"]) == 6 and "GPU time" in report["details_text"]
    assert "µs median" in report["details_text"] and "critical path" in report["details_text"]
    labels = [entry["label"] for entry in heat["legend"]]
    assert len(labels) == 5 and labels == want["legend"]
    assert heat["legend_heading"] == "GPU time per replay"
    # filled by time: the drawn nodes take many shades of the ramp
    assert len({look["fill"] for look in heat["critical"] + heat["off_path"]}) > 10
    # outlined: the critical path's drawn nodes, and none of the others
    assert {c["id"] for c in heat["critical"]} == want["critical"]
    off = [o for o in heat["off_path"] if o["id"] in want["drawn"]]
    assert off, "the 5,000-node dump has side branches: some drawn nodes are off the critical path"
    assert all(c["stroke"] == _rgb(HIGHLIGHT_COLOR) for c in heat["critical"])
    assert all(o["stroke"] != _rgb(HIGHLIGHT_COLOR) for o in off)


def _decoder_graph(root: Path) -> tuple[str, str]:
    """Issue 40's graph at the size its users work at, written into the lab's root as decoder.dot: the recorded
    8B-class decode graph once a GPU run has made it (`data/recordings/*/decode_scale/`), else a synthetic 32-layer
    one made from the recorded small Llama's layer (`tests/decoder_dump.py`). Returns (file name, what it is)."""
    recorded = [p for p in sorted((REPO / "data" / "recordings").glob("*/decode_scale/*.dot"))
                if "compiled" not in p.stem]  # the eager step's graph: its layers launch the same kernels
    if recorded:
        shutil.copy(recorded[0], root / "decoder.dot")
        return "decoder.dot", str(recorded[0].relative_to(REPO))
    sys.path.insert(0, str(REPO / "tests"))
    try:
        from decoder_dump import decoder_dump
    finally:
        sys.path.remove(str(REPO / "tests"))
    (root / "decoder.dot").write_text(decoder_dump(layers=32), encoding="utf-8")
    return "decoder.dot", "synthetic: the recorded small Llama's layer x32 (tests/decoder_dump.py)"


def _decoder_notebook(root: Path) -> str:
    """A notebook that reads decoder.dot with the default DOT limits and opens it as a heat map (a synthetic profile
    with module names by layer: tests/decoder_dump.py), the clock around `gl.inspect` only."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    nb.cells = [
        nbformat.v4.new_code_cell(
            f"import sys, time\nsys.path.insert(0, {str(REPO / 'tests')!r})\nimport graphlab as gl\nimport graphlab.ui.inspector\n"
            "from decoder_dump import synthetic_profile\n"
            "t0 = time.perf_counter(); g = gl.read_dot('decoder.dot'); read_s = time.perf_counter() - t0\n"
            "prof = synthetic_profile(g)\nlen(g)"),
        nbformat.v4.new_code_cell("t0 = time.perf_counter(); w = gl.inspect(g, profile=prof); inspect_s = time.perf_counter() - t0\nw"),
        nbformat.v4.new_code_cell(
            "print(f'read {read_s * 1e3:.0f} ms, gl.inspect {inspect_s * 1e3:.0f} ms (layout {w.render_ms:.0f} ms), '\n"
            "      f'{len(g)} nodes, {len(w.drawn_ids)} drawn, status: {w.status!r}')"),
    ]
    nbformat.write(nb, root / "decoder.ipynb")
    return "decoder.ipynb"


def test_a_32_layer_decoder_opens_collapsed_and_answers_click_search_and_heat(lab: Lab) -> None:
    """Issue 40: a decoder's 32 identical layers open as one block marked x32 (read with the default DOT limits), as
    a heat map; a click on a node of the block shows its time and layer, expanding the block draws its repeats, and
    a search by a layer's module lights that layer's kernels. The opening time is printed (goal: under 2 s), not
    asserted."""
    import graphlab as gl
    from graphlab.ui.inspector import Inspector

    dot, what = _decoder_graph(lab.root)
    graph = gl.read_dot(lab.root / dot)
    sys.path.insert(0, str(REPO / "tests"))
    try:
        from decoder_dump import synthetic_profile
    finally:
        sys.path.remove(str(REPO / "tests"))
    prof = synthetic_profile(graph)
    want = Inspector(graph, profile=prof)
    (block,) = [b for b in want._facts.blocks.values() if b.count == 32]
    pick = next(n for n in block.representative if graph.node(n).kind.value == "kernel")
    outside = next(n for n in want._drawing.node_ids if n not in block.all_node_ids())
    drawn = [n for n in want.drawn_ids if n not in want._facts.blocks]
    painted = {n: re.search(rf'(?m)^\s*"?{n}"? \[[^\n]*?fillcolor="(#[0-9A-Fa-f]{{6}})"', want._drawing.source).group(1)
               for n in (pick, outside)}  # the fill the drawing gave it (its time's colour on the heat scale)
    search = "model.layers.17"
    want.expanded = [block.id]  # the driver expands the clicked node's block before it searches
    want.search = search
    report = drive(lab, _decoder_notebook(lab.root), "decoder_32_layers", warm_cells=1, pick=pick, expand=True,
                   search=search, heat_ids=[pick, outside])
    print(f"[decoder_32_layers] {what}: drawn {report['times'].get('inspector_cell_to_drawn_ms')} ms after its cell "
          f"ran, click answered in {report['click_answers_ms']} ms; {report['last_output']!r}; {report['conditions']}")
    assert report["tracebacks"] == [], report["tracebacks"]
    heat = report["heat"]
    assert heat["drawn"] == len(drawn) < 100  # 1,435 nodes: the block drawn once
    titles = [" ".join(t.split()) for t in heat["block_titles"]]  # the one block: x32, its nodes, their time summed
    assert len(titles) == 1 and titles[0].startswith(f"x32 ({block.period} nodes, ") and titles[0].endswith(" µs in all)")
    for node_id, colour in painted.items():  # filled by its time (a block's node: the mean of its repeats)
        assert heat["nodes"][node_id]["fill_attr"].upper() == colour.upper()
        assert heat["nodes"][node_id]["fill"] == _rgb(colour)
    assert report["clicked"] == pick
    assert "GPU time" in report["details_text"] and "module\tmodel.layers.0" in report["details_text"]
    assert "drawn once for its 32 repeats" in report["details_text"]
    assert report["nodes_after_expand"] > report["nodes_before_expand"]
    assert want.matches and sorted(report["search_matched"]) == sorted(want.matches)
    assert report["search_count_text"].startswith(f"{len(want.matches)} match")
