"""The command-line contract, run as a user runs it: `python -m graphlab ...` in a subprocess.

    graphlab parse FILE.dot   -> JSON {"graphs": [{"id", "nodes": [{"id", "kind", ...}], "edges": [[src, dst]]}]}
    bad input / missing file  -> exit status 2, exactly one line on stderr, no traceback
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, PUBLIC_SAMPLES, REPO

H200 = FIXTURES / "h200"
MANIFEST = H200 / "MANIFEST.json"


def graphlab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "graphlab", *args], cwd=REPO, capture_output=True, text=True, timeout=120
    )


def parse_json(path: Path) -> dict[str, Any]:
    result = graphlab("parse", str(path))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return json.loads(result.stdout)


def check_contract(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Shape of the parse output; returns every node."""
    assert isinstance(data["graphs"], list) and data["graphs"]
    nodes: list[dict[str, Any]] = []
    for graph in data["graphs"]:
        assert isinstance(graph["id"], str)
        ids = {node["id"] for node in graph["nodes"]}
        for node in graph["nodes"]:
            assert isinstance(node["id"], str) and isinstance(node["kind"], str)
            if node["kind"] == "kernel":
                assert {"name", "grid", "block", "shared_bytes"} <= set(node)
                assert isinstance(node["name"], str)
                for key in ("grid", "block"):
                    assert node[key] is None or (len(node[key]) == 3 and all(isinstance(v, int) for v in node[key]))
        for edge in graph["edges"]:
            assert isinstance(edge, list) and len(edge) == 2 and set(edge) <= ids
        nodes += graph["nodes"]
    all_ids = [node["id"] for node in nodes]
    assert len(all_ids) == len(set(all_ids)), "a node appears twice"
    return nodes


@pytest.mark.skipif(not MANIFEST.exists(), reason="H200 fixtures are not there")
@pytest.mark.parametrize(
    "name", ["kinds/mixed__all.dot", "kinds/mixed__default.dot", "kinds/nested__verbose.dot", "models/gpt_b8__all.dot"]
)
def test_parse_prints_every_node_once(name: str) -> None:
    entry = next(e for e in json.loads(MANIFEST.read_text())["files"] if e["file"] == name)
    data = parse_json(H200 / name)
    nodes = check_contract(data)
    assert len(nodes) == sum(entry["census"]["kinds"].values())
    assert len(data["graphs"]) == entry["census"]["graphs"]
    assert sum(len(g["edges"]) for g in data["graphs"]) == entry["census"]["edges"]
    kernels = [n for n in nodes if n["kind"] == "kernel"]
    assert [k["name"] for k in kernels] == [k["name"] for k in entry["census"]["kernels"]]
    for node, expected in zip(kernels, entry["census"]["kernels"]):
        if entry["flag_name"] == "default":
            assert node["grid"] is None and node["block"] is None and node["shared_bytes"] is None
        else:
            assert [node["grid"], node["block"], node["shared_bytes"]] == [
                expected["grid"], expected["block"], expected["shared_bytes"]
            ]


@pytest.mark.skipif(not PUBLIC_SAMPLES.is_dir(), reason="public samples are not there")
def test_parse_public_sample_compact() -> None:
    result = graphlab("parse", "--compact", str(PUBLIC_SAMPLES / "candle_mlp34_69kernels_67a48c5.dot"))
    assert result.returncode == 0 and result.stdout.count("\n") == 1
    nodes = check_contract(json.loads(result.stdout))
    assert sum(n["kind"] == "kernel" for n in nodes) == 69


def bad_inputs(tmp: Path) -> dict[str, str]:
    (tmp / "empty.dot").write_text("")
    (tmp / "binary.dot").write_bytes(bytes(range(256)) * 4)
    (tmp / "notdot.dot").write_text('{"graphs": []}\n')
    (tmp / "unbalanced.dot").write_text('digraph dot {\nsubgraph cluster_1 {\n"graph_1_node_0"[label="0\\nEMPTY"];\n')
    (tmp / "dangling.dot").write_text(
        'digraph dot {\nsubgraph cluster_1 {\n"graph_1_node_0"[label="0\\nEMPTY"];\n'
        '"graph_1_node_0" -> "graph_1_node_7";\n}\n}\n'
    )
    (tmp / "nobody.dot").write_text('digraph dot {\nsubgraph cluster_1 {\n"graph_1_node_0"[label="0\\ngraph_9"];\n}\n}\n')
    cases = {name: str(tmp / name) for name in
             ("empty.dot", "binary.dot", "notdot.dot", "unbalanced.dot", "dangling.dot", "nobody.dot")}
    cases["missing"] = str(tmp / "missing.dot")
    cases["directory"] = str(tmp)
    excerpt = PUBLIC_SAMPLES / "pytorch-issue-126753-excerpt.dot"
    if excerpt.exists():
        cases["truncated"] = str(excerpt)
    return cases


def test_bad_input_exits_2_with_one_line(tmp_path: Path) -> None:
    for case, path in bad_inputs(tmp_path).items():
        result = graphlab("parse", path)
        assert result.returncode == 2, (case, result.stderr)
        assert result.stdout == "", case
        lines = result.stderr.splitlines()
        assert len(lines) == 1, (case, result.stderr)
        assert "Traceback" not in result.stderr
        assert path in lines[0] or case == "missing" and "missing.dot" in lines[0], (case, lines[0])


@pytest.mark.parametrize("argv", [[], ["parse"], ["frobnicate"], ["parse", "a.dot", "--bogus"]])
def test_usage_errors_exit_2_with_one_line(argv: list[str]) -> None:
    result = graphlab(*argv)
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr


def test_about_json_runs() -> None:
    result = graphlab("about", "--json")
    assert result.returncode == 0, result.stderr
    assert isinstance(json.loads(result.stdout), dict)


@pytest.mark.parametrize("suffix, magic", [(".svg", b"<?xml"), (".png", b"\x89PNG"), (".gv", b"digraph")])
def test_render_writes_the_format_its_suffix_names(tmp_path: Path, suffix: str, magic: bytes) -> None:
    out = tmp_path / f"gpt{suffix}"
    result = graphlab("render", str(H200 / "models" / "gpt_b1__verbose.dot"), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert out.read_bytes().startswith(magic)
    if suffix == ".gv":
        assert "x6" in out.read_text()  # the six decoder layers are collapsed into one block


def _big_dump(tmp_path: Path, nodes: int = 5000) -> Path:
    """The 5,000-node verbose dump bench/bench_parse.py times (real H200 node text, replicated)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_parse", REPO / "bench" / "bench_parse.py")
    bench = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(bench)  # type: ignore[union-attr]
    path = tmp_path / "big5000.dot"
    path.write_text(bench.build_dump(nodes), encoding="utf-8")
    return path


BIG = ("--max-dot-bytes", "0", "--max-dot-nodes", "0")  # the limits off, for the 5,000-node dump


def test_render_of_a_5000_node_dump_finishes_collapsed_and_says_what_it_drew(tmp_path: Path) -> None:
    dump = _big_dump(tmp_path)
    out = tmp_path / "big.svg"
    # 5,000 nodes: past the defaults of issue 26, within those sized for an 80-layer decoder (issue 40)
    result = graphlab("render", str(dump), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith(f"wrote {out}: ") and "of 5,000 nodes drawn, 1 repeated block(s) drawn once" in result.stderr
    svg = out.read_text()
    assert svg.startswith("<?xml") and "x50" in svg and len(svg) < 1_000_000  # one block of 100 nodes, 50 times
    full = graphlab("render", str(dump), "-o", str(tmp_path / "full.gv"), "--no-collapse", *BIG)
    assert full.returncode == 0 and "2,000 of 5,000 nodes drawn; 3,000 more left out (--max-nodes 2,000)" in full.stderr
    assert "only the first 2,000 nodes are drawn" in (tmp_path / "full.gv").read_text()
    everything = graphlab("render", str(dump), "-o", str(tmp_path / "all.gv"), "--no-collapse", "--max-nodes", "0", *BIG)
    assert everything.returncode == 0 and "5,000 of 5,000 nodes drawn" in everything.stderr


def test_render_time_limit_is_one_line_exit_2(tmp_path: Path) -> None:
    result = graphlab("render", str(H200 / "models" / "gpt_b1__verbose.dot"), "-o", str(tmp_path / "g.svg"),
                      "--no-collapse", "--timeout", "0.001")
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "dot took over 0.001 s" in result.stderr
    bad = graphlab("render", str(H200 / "models" / "gpt_b1__verbose.dot"), "-o", str(tmp_path / "g.svg"),
                   "--max-nodes", "-1")
    assert bad.returncode == 2 and "--max-nodes must be 0" in bad.stderr


def test_the_cli_limits_are_the_drawings() -> None:
    from graphlab import cli
    from graphlab.viz import drawing

    assert (cli.MAX_DRAWN_NODES, cli.DOT_TIMEOUT_S) == (drawing.MAX_DRAWN_NODES, drawing.DOT_TIMEOUT_S)


@pytest.mark.parametrize("target", ["gpt.jpg", "gpt"])
def test_render_unknown_suffix_exits_2_before_reading_anything(tmp_path: Path, target: str) -> None:
    result = graphlab("render", str(tmp_path / "missing.dot"), "-o", str(tmp_path / target))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "cannot tell the format" in result.stderr
    assert not (tmp_path / target).exists()


def test_the_cli_repro_wait_is_the_libraries() -> None:
    from graphlab import cli
    from graphlab.timing import repro_report

    assert cli.REPRO_MAX_EXTRA_S == repro_report.REPRO_MAX_EXTRA_S


@pytest.mark.skipif(not PUBLIC_SAMPLES.is_dir(), reason="public samples are not there")
def test_parse_imports_neither_the_studies_nor_the_load_test() -> None:
    """`graphlab parse` declares `record` and `loadtest` without their flags, so it never imports the modules those
    flags come from; `record` and `loadtest` still get theirs (their --help names them)."""
    sample = str(PUBLIC_SAMPLES / "candle_mlp34_69kernels_67a48c5.dot")
    code = ("import sys, io, contextlib\nfrom graphlab.cli import main\n"
            f"with contextlib.redirect_stdout(io.StringIO()): rc = main(['parse', '--compact', {sample!r}])\n"
            "print(rc, sorted(m for m in sys.modules if m.startswith(('graphlab.studies', 'graphlab.loadtest'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True).stdout
    assert out.strip() == "0 []", out
    assert "--ways" in graphlab("record", "--help").stdout
    assert "--transport" in graphlab("loadtest", "--help").stdout
