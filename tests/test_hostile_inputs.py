"""A corpus of hostile files (issue 26), run like the parser fuzz: DOT dumps and recordings that are truncated,
binary, nested deep, huge, symlinked, or carry HTML/JS in their labels. Each either reads or fails with one
graphlab error on one line (the CLI: exit 2, one line on stderr), never a traceback, a hang or markup that runs
in the inspector."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import graphlab as gl
from graphlab.errors import DotParseError, GraphlabError, RecordingError
from graphlab.graph.dot_parser import parse_dot, read_dot

H200 = FIXTURES / "h200"
REAL = (H200 / "models" / "mlp_b1__verbose.dot").read_text()

#: markup and script that must never come out of a drawing or the inspector as markup
PAYLOADS = [
    "<script>alert(1)</script>", "</title><script>alert(1)</script>", "<img src=x onerror=alert(1)>",
    '\\" onload=\\"alert(1)', "<svg onload=alert(1)>", "javascript:alert(1)", "]]><script>x</script>",
    "&lt;script&gt;", "<!--", "<iframe srcdoc='<script>1</script>'>", "{{7*7}}", "${alert(1)}",
]


def kernel_dump(name: str, count: int = 2) -> str:
    nodes = "".join(f'"graph_1_node_{i}"[style="bold" shape="octagon" label="{i}\n{name}\n"];\n' for i in range(count))
    edges = "".join(f'"graph_1_node_{i - 1}" -> "graph_1_node_{i}";\n' for i in range(1, count))
    return 'digraph dot {\nsubgraph cluster_1 {\nlabel="graph_1" graph[style="dashed"];\n' + nodes + edges + "}\n}\n"


def hostile_dots() -> dict[str, bytes]:
    """name -> file content. Each must be refused with one DotParseError (or read, where noted)."""
    text = REAL.encode()
    return {
        "truncated_half.dot": text[: len(text) // 2],
        "truncated_before_last_brace.dot": text.rstrip()[:-1],
        "binary_zeros.dot": b"\x00" * 4096,
        "binary_elf.dot": b"\x7fELF\x02\x01\x01" + bytes(range(256)),
        "utf16.dot": REAL.encode("utf-16"),
        "nested_100k_braces.dot": b"digraph dot {" + b"{" * 100_000 + b"}" * 100_001,
        "nested_subgraphs.dot": b"digraph dot {" + b"subgraph cluster_1 {" * 5000 + b"}" * 5001,
        "empty.dot": b"",
        "only_whitespace.dot": b" \n\t\n" * 1000,
        "not_dot.dot": b"root:x:0:0:root:/root:/bin/bash\n",
        "unterminated_string.dot": b'digraph dot {\nsubgraph cluster_1 {\n"graph_1_node_0"[label="0\n',
        "unterminated_comment.dot": b"digraph dot { /* " + b"x" * 1000,
        "edge_to_nowhere.dot": kernel_dump("k").replace('"graph_1_node_1";', '"graph_9_node_9";').encode(),
        "node_declared_twice.dot": kernel_dump("k").replace("graph_1_node_1", "graph_1_node_0").encode(),
        "self_body.dot": (b'digraph dot {\nsubgraph cluster_1 {\nlabel="graph_1";\n"graph_1_node_0"'
                          b'[shape="rectangle" label="0\ngraph_1\n"];\n}\n}\n'),
        "many_nodes.dot": kernel_dump("k", 12_000).encode(),  # past the node limit (10,000)
        "long_label.dot": kernel_dump("k" * 10_000).encode(),  # past the label limit
    }


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hostile")
    for name, content in hostile_dots().items():
        (folder / name).write_bytes(content)
    with open(folder / "sparse_1gb.dot", "wb") as f:
        f.truncate(2**30)
    (folder / "passwd_link.dot").symlink_to("/etc/passwd")
    (folder / "dangling_link.dot").symlink_to(folder / "nothing-here")
    (folder / "a_folder.dot").mkdir()
    return folder


def test_every_hostile_dot_is_one_dot_parse_error(corpus: Path) -> None:
    for path in sorted(corpus.glob("*.dot")):
        if path.name in ("dangling_link.dot", "a_folder.dot"):
            with pytest.raises(OSError):
                read_dot(path)
            continue
        with pytest.raises(DotParseError) as info:
            read_dot(path)
        message = str(info.value)
        assert message.startswith(str(path)) and "\n" not in message, (path.name, message)
        assert "internal error" not in message, (path.name, message)


def test_the_cli_answers_every_hostile_dot_with_exit_2_and_one_line(corpus: Path, tmp_path: Path) -> None:
    for path in sorted(corpus.glob("*.dot")):
        for command in (["parse", str(path)], ["render", str(path), "-o", str(tmp_path / "out.gv")]):
            done = subprocess.run([sys.executable, "-m", "graphlab", *command], capture_output=True, text=True,
                                  cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}, timeout=120)
            assert done.returncode == 2, (path.name, command[0], done.stderr[-500:])
            assert done.stderr.count("\n") == 1 and done.stderr.startswith("graphlab: error: "), (path.name, done.stderr)
            assert "Traceback" not in done.stderr and done.stdout == ""


# -- labels carrying markup, through render and inspect ------------------------------------------------
def _markup_free(svg: str) -> bool:
    """Only drawing elements, and no event-handler attribute, anywhere in the SVG (parsed as XML: text that
    merely reads like markup is escaped text, and harmless)."""
    import xml.etree.ElementTree as ET

    allowed = {"svg", "g", "title", "polygon", "path", "text", "ellipse", "polyline", "a", "defs", "linearGradient",
               "stop", "image", "rect", "circle", "line", "style"}
    root = ET.fromstring(svg.encode("utf-8"))
    for element in root.iter():
        tag = element.tag.rsplit("}", 1)[-1]
        if tag not in allowed or tag in ("image", "style"):
            return False
        if any(name.rsplit("}", 1)[-1].lower().startswith("on") for name in element.attrib):
            return False
        href = element.attrib.get("{http://www.w3.org/1999/xlink}href", "") + element.attrib.get("href", "")
        if href.strip().lower().startswith("javascript:"):
            return False
    return True


@pytest.mark.skipif(shutil.which("dot") is None, reason="needs Graphviz's dot")
@pytest.mark.parametrize("payload", PAYLOADS)
def test_markup_in_a_label_is_text_in_the_drawing_and_the_inspector(payload: str) -> None:
    graph = parse_dot(kernel_dump(payload), source="evil.dot")
    assert _markup_free(gl.render(graph).svg())
    inspector = gl.inspect(graph)
    assert _markup_free(inspector.svg)
    details = inspector.details_for(graph.root.nodes[0].id)  # data for the page, which shows it as text
    assert json.loads(json.dumps(details)) == details


@pytest.mark.skipif(shutil.which("dot") is None, reason="needs Graphviz's dot")
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(list("<>&'/=() scriptonlaeim:{}$\\x1") + ["<script>", "onload=", "</", '\\"']),
                min_size=1, max_size=30).map("".join))
def test_any_label_text_reads_or_fails_cleanly_and_never_draws_markup(name: str) -> None:
    try:
        graph = parse_dot(kernel_dump(name), source="fuzz.dot")
    except DotParseError as exc:
        assert str(exc).startswith("fuzz.dot") and "\n" not in str(exc) and "internal error" not in str(exc)
        return
    assert _markup_free(gl.render(graph).svg())


def test_the_inspector_puts_svg_in_the_page_and_everything_else_as_text() -> None:
    js = (REPO / "graphlab" / "ui" / "inspector.js").read_text()
    assert js.count("innerHTML") == 1 and 'canvas.innerHTML = model.get("svg")' in js  # Graphviz's escaped SVG only


# -- hostile recordings -------------------------------------------------------------------------------
def _recording(root: Path, name: str = "toy") -> Path:
    src = REPO / "data" / "recordings" / "h200" / "mlp"
    dst = root / "h200" / name
    shutil.copytree(src, dst)
    meta = json.loads((dst / "meta.json").read_text())
    meta["name"] = name
    (dst / "meta.json").write_text(json.dumps(meta))
    return dst


def hostile_recordings(root: Path) -> list[str]:
    """Damage copies of a real recording in every way the issue lists; returns their names."""
    names = []

    def damage(name: str, how) -> None:
        folder = _recording(root, name)
        how(folder)
        names.append(name)

    meta_of = lambda folder: json.loads((folder / "meta.json").read_text())  # noqa: E731

    def set_meta(folder: Path, change) -> None:
        meta = meta_of(folder)
        change(meta)
        (folder / "meta.json").write_text(json.dumps(meta))

    damage("dot_traversal", lambda f: set_meta(f, lambda m: m["graphs"]["b1"].update(dot="../../../../etc/passwd")))
    damage("results_absolute", lambda f: set_meta(f, lambda m: m["results"].update(sweep="/etc/passwd")))
    damage("dot_symlink_out", lambda f: ((f / "b1.dot").unlink(), (f / "b1.dot").symlink_to("/etc/passwd")))
    damage("results_symlink_out", lambda f: ((f / "sweep.json").unlink(), (f / "sweep.json").symlink_to("/etc/hostname")))
    damage("meta_deep", lambda f: (f / "meta.json").write_text("{\"a\":" * 200_000))
    damage("meta_truncated", lambda f: (f / "meta.json").write_text((f / "meta.json").read_text()[:100]))
    damage("meta_binary", lambda f: (f / "meta.json").write_bytes(b"\xff\xd8\xff\xe0" + bytes(300)))
    damage("dot_binary", lambda f: (f / "b1.dot").write_bytes(b"\x00\x01" * 1000))
    damage("dot_huge", lambda f: open(f / "b1.dot", "wb").truncate(2**30))
    damage("results_huge", lambda f: open(f / "sweep.json", "wb").truncate(2**30))
    damage("results_deep", lambda f: (f / "sweep.json").write_text("[" * 200_000 + "]" * 200_000))
    return names


def test_every_hostile_recording_is_one_recording_error_or_dot_error_and_the_rest_still_list(tmp_path: Path) -> None:
    names = hostile_recordings(tmp_path)
    _recording(tmp_path, "good")
    for name in names:
        try:
            rec = gl.load_recording(name, root=tmp_path)
            for key in rec.graph_names:
                rec.graph(key)
            for key in rec.result_names:
                rec.results(key)
        except GraphlabError as exc:
            message = str(exc)
            assert "\n" not in message and str(tmp_path / "h200" / name) in message, (name, message)
            assert isinstance(exc, RecordingError), (name, type(exc))
            assert "root:x:0" not in message
        else:
            raise AssertionError(f"{name}: read without an error")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        listed = [r.name for r in gl.list_recordings(tmp_path)]
    assert "good" in listed and "meta_deep" not in listed and "dot_symlink_out" not in listed
    assert all("skipped a broken recording" in str(w.message) for w in caught) and len(caught) >= 6


def test_the_markup_check_itself_catches_markup() -> None:
    assert _markup_free('<svg xmlns="http://www.w3.org/2000/svg"><g><text>&lt;script&gt;</text></g></svg>')
    assert not _markup_free('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>')
    assert not _markup_free('<svg xmlns="http://www.w3.org/2000/svg"><g onload="alert(1)"/></svg>')
    assert not _markup_free('<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">'
                            '<a xlink:href="javascript:alert(1)"/></svg>')
