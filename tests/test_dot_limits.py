"""The DOT reader's limits (issue 26): file size, node count, label length; defaults sized from the recorded
decoder layers (issue 40: an 80-layer decoder's verbose decode graph, twice over); raised by an argument, a `with`
block or a CLI flag on every path that reads DOT; past a limit it stops before reading further and says which limit
and how to raise it. Timings are in bench/."""
from __future__ import annotations

import io
import re
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO
from decoder_dump import decoder_dump, write_decoder_dump

import graphlab as gl
from graphlab.errors import DotLimitError, DotParseError
from graphlab.graph import dot_file, dot_syntax
from graphlab.graph import dot_limits as limits_module
from graphlab.graph.dot_limits import DEFAULT_LIMITS, NO_LIMITS, DotLimits, current_limits, dot_limits
from graphlab.graph.dot_parser import parse_dot, read_dot

H200 = FIXTURES / "h200"


def nodes_dump(count: int, label: str = "k") -> str:
    lines = ['digraph dot {\nsubgraph cluster_1 {\nlabel="graph_1" graph[style="dashed"];']
    lines += [f'"graph_1_node_{i}"[style="bold" shape="octagon" label="{i}\\n{label}\\n"];' for i in range(count)]
    lines += [f'"graph_1_node_{i - 1}" -> "graph_1_node_{i}";' for i in range(1, count)]
    return "\n".join(lines) + "\n}\n}\n"


def graphlab_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "graphlab", *args], capture_output=True, text=True, cwd=REPO,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}, timeout=300)


# -- the defaults ----------------------------------------------------------------------------------------
def test_the_defaults_are_sized_from_the_recorded_decoder_layers() -> None:
    """The arithmetic of the module docstring, from the recorded decode dumps: an 80-layer decoder's verbose decode
    graph, twice over, within the defaults; and the defaults not so far past it that they guard nothing."""
    from graphlab.graph.structure import find_repeated_blocks

    layers = {}
    for path in sorted((REPO / "data" / "recordings" / "h200" / "decode").glob("*.dot")):
        graph = read_dot(path)
        block = max(find_repeated_blocks(graph, min_saved_nodes=4), key=lambda b: b.count * b.period)
        text = path.read_text(encoding="utf-8")
        statements = {m.group(1): len(m.group(0)) for m in re.finditer(r'^"(\w+)"\[.*?\];\n\n?', text, re.M | re.S)}
        edges = {m.group(1): len(m.group(0)) for m in re.finditer(r'^"(\w+)" -> .*\n', text, re.M)}
        layer_bytes = max(sum(statements[n] + edges.get(n, 0) for n in rep) for rep in block.node_ids)
        layers[path.name] = (block.period, layer_bytes, len(graph) - block.count * block.period)
    nodes, layer_bytes, _ = max(layers.values())
    assert (nodes, layer_bytes) == (limits_module.RECORDED_LAYER_NODES, limits_module.RECORDED_LAYER_BYTES), layers
    assert max(outside for _, _, outside in layers.values()) == limits_module.OUTSIDE_LAYERS_NODES
    per_layer = max(limits_module.LAYER_NODES, nodes)
    node_bytes = layer_bytes / nodes
    sized_nodes = limits_module.HEADROOM * (limits_module.SIZED_FOR_LAYERS * per_layer + limits_module.OUTSIDE_LAYERS_NODES)
    assert sized_nodes <= DEFAULT_LIMITS.max_nodes <= 1.5 * sized_nodes
    assert sized_nodes * node_bytes <= DEFAULT_LIMITS.max_bytes <= 1.5 * sized_nodes * node_bytes
    def longest_label(paths) -> int:
        return max(len(m) for p in paths for m in re.findall(r'label="((?:[^"\\]|\\.)*)"', p.read_text(encoding="utf-8")))

    decode = longest_label((REPO / "data" / "recordings" / "h200" / "decode").glob("*.dot"))
    assert decode == limits_module.LARGEST_REAL_LABEL_CHARS
    assert 10 * decode <= DEFAULT_LIMITS.max_label_chars <= 11 * decode
    every = longest_label(REPO.joinpath("data", "recordings").rglob("*.dot"))  # recordings to come included
    assert 2 * every <= DEFAULT_LIMITS.max_label_chars, f"a recorded label of {every:,} characters: raise the limit"


@pytest.mark.parametrize("layers, nodes", [(80, None), (None, 2 * (80 * 51 + 43))],
                         ids=["80 recorded layers", "80 bf16 layers twice over"])
def test_an_80_layer_decoders_verbose_decode_graph_reads_with_the_defaults(tmp_path: Path, layers, nodes) -> None:
    path = tmp_path / "decoder.dot"
    with open(path, "w", encoding="utf-8") as out:
        count = write_decoder_dump(out, layers=layers, nodes=nodes)
    assert count >= 3500 and path.stat().st_size > 1_510_000  # past the old defaults (1,510,000 bytes, 2,800 nodes)
    assert len(read_dot(path)) == count
    assert len(parse_dot(path.read_text(encoding="utf-8"))) == count


def test_the_recorded_8b_decode_graph_reads_with_the_defaults() -> None:
    """The 8B-class decoder's recorded graphs (`graphlab record --models decode_scale`, a GPU run) read with the
    defaults; until they are recorded, the synthetic 80-layer graph above stands for them."""
    recorded = sorted((REPO / "data" / "recordings").glob("*/decode_scale/*.dot"))
    for path in recorded:
        assert len(read_dot(path)) >= 32, path  # no DotLimitError: compiled steps included
    if not recorded:
        assert len(parse_dot(decoder_dump(layers=32))) == 32 * 44 + 27


def test_every_real_dump_reads_under_the_defaults() -> None:
    for path in sorted((REPO / "data" / "recordings").rglob("*.dot")):
        read_dot(path)  # no DotLimitError


@pytest.mark.parametrize("bad", [0, -1, 1.5, "10", True])
def test_a_limit_is_a_positive_int_or_none(bad) -> None:
    with pytest.raises(gl.BadInputError, match="must be a positive int or None"):
        DotLimits(max_nodes=bad)


# -- each limit, and what it says -----------------------------------------------------------------------
def test_past_the_size_limit_a_2_gb_file_is_not_read(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "huge.dot"
    with open(path, "wb") as f:
        f.truncate(2 * 2**30)  # a sparse 2 GB file: reading it would take seconds and 2 GB
    read = []
    monkeypatch.setattr(dot_syntax.DotReader, "__init__", lambda *a, **k: read.append(1))
    monkeypatch.setattr(dot_file, "_check", lambda *a, **k: read.append(1))
    with pytest.raises(DotLimitError) as info:
        read_dot(path)
    assert info.value.limit == "max_bytes" and not read
    message = str(info.value)
    assert message.startswith(f"{path}: 2,147,483,648 bytes, more than the limit of 6,000,000 (max_bytes)")
    assert "--max-dot-bytes N" in message and "gl.DotLimits(max_bytes=N)" in message and "\n" not in message


def test_past_the_node_limit_the_prescan_stops_before_tokenising(monkeypatch) -> None:
    text = nodes_dump(12_000)

    def never(*args, **kwargs):
        raise AssertionError("tokenised a text the pre-scan should have refused")

    monkeypatch.setattr(dot_syntax.DotReader, "_token_chunks", never)
    with pytest.raises(DotLimitError, match=r"about 12,000 nodes \(a pre-scan of the text\), more than the limit "
                                            r"of 10,000 \(max_nodes\)") as info:
        parse_dot(text, source="many.dot")
    assert info.value.limit == "max_nodes" and str(info.value).startswith("many.dot: ")


def test_a_million_node_file_is_refused_before_it_costs_memory(tmp_path: Path, monkeypatch) -> None:
    """By its size before a byte is read; with the size limit lifted, by the pre-scan, which reads the file a piece
    at a time: no more than a few pieces' memory, and no node made."""
    path = tmp_path / "million.dot"
    with open(path, "w", encoding="utf-8") as out:
        out.write('digraph dot {\nsubgraph cluster_1 {\nlabel="graph_1" graph[style="dashed"];\n')
        for start in range(0, 1_000_000, 10_000):
            out.write("".join(f'"n{i}"[label="k"];\n' for i in range(start, start + 10_000)))
        out.write("}\n}\n")
    size = path.stat().st_size
    with pytest.raises(DotLimitError, match=f"{size:,} bytes, more than the limit of 6,000,000"):
        read_dot(path)
    made = []
    monkeypatch.setattr(dot_syntax.DotReader, "__init__", lambda *a, **k: made.append(1))
    tracemalloc.start()
    try:
        with pytest.raises(DotLimitError, match=r"about 1,000,000 nodes \(a pre-scan of the text\), more than the "
                                                r"limit of 10,000 \(max_nodes\)"):
            read_dot(path, limits=DotLimits(max_bytes=None))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert not made and peak < 4 * dot_file.PIECE_BYTES < size / 4, (peak, size)


def test_nodes_the_prescan_cannot_see_are_counted_while_reading() -> None:
    # no `label="` at all: the pre-scan sees nothing, the exact count stops at the node past the limit
    text = "digraph dot {\nsubgraph cluster_1 {\n" + "".join(f'"graph_1_node_{i}";\n' for i in range(30)) + "}\n}\n"
    with pytest.raises(DotLimitError, match=r"many\.dot:13: more than 10 nodes") as info:
        parse_dot(text, source="many.dot", limits=DotLimits(max_nodes=10))
    assert info.value.limit == "max_nodes"


def test_the_fast_path_counts_nodes_as_it_tokenises(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(DotLimits, "prescan_nodes", lambda self, text, source: None)  # as if the pre-scan missed
    with pytest.raises(DotLimitError, match=r"x\.dot:14: more than 10 nodes"):
        parse_dot(nodes_dump(5000), source="x.dot", limits=DotLimits(max_nodes=10))
    monkeypatch.setattr(DotLimits, "check_prescan", lambda self, labels, not_nodes, source: None)
    path = tmp_path / "x.dot"
    path.write_text(nodes_dump(5000))
    with pytest.raises(DotLimitError, match=r"x\.dot:14: more than 10 nodes"):  # a file too, read in pieces
        read_dot(path, limits=DotLimits(max_nodes=10))


def test_a_huge_label_stops_the_reader_where_it_starts() -> None:
    text = nodes_dump(3).replace("\\nk\\n", "\\n" + "k" * 100_000 + "\\n", 1)
    with pytest.raises(DotLimitError, match=r"big\.dot:4: a label of at least 100,00\d characters, more than the "
                                            r"limit of 5,700 \(max_label_chars\)"):
        parse_dot(text, source="big.dot")
    general = '"graph_1_node_0" [label="' + "k" * 10_000 + '"];'  # not the driver's form: the general tokens
    with pytest.raises(DotLimitError, match="max_label_chars"):
        parse_dot("digraph dot {\nsubgraph cluster_1 {\n" + general + "\n}\n}\n", source="g.dot")
    unterminated = 'digraph dot {\nsubgraph cluster_1 {\n"graph_1_node_0"[style="bold" shape="octagon" label="' + "k" * 9000
    with pytest.raises(DotLimitError, match="max_label_chars"):
        parse_dot(unterminated, source="u.dot")


def test_a_label_built_by_concatenation_is_checked_too() -> None:
    parts = " + ".join(['"0\\n' + "k" * 997 + '"'] + ['"' + "k" * 1000 + '"'] * 7)
    text = f'digraph dot {{\nsubgraph cluster_1 {{\n"graph_1_node_0" [shape="octagon" label={parts}];\n}}\n}}\n'
    with pytest.raises(DotLimitError, match="a label of 8,000 characters"):
        parse_dot(text, source="c.dot")
    assert len(parse_dot(text, limits=DotLimits(max_label_chars=8000))) == 1


# -- raising them ---------------------------------------------------------------------------------------
def test_an_argument_a_block_or_no_limits_raise_them() -> None:
    text = nodes_dump(12_000)
    assert len(parse_dot(text, limits=DotLimits(max_nodes=12_000, max_bytes=None))) == 12_000
    assert len(parse_dot(text, limits=NO_LIMITS)) == 12_000
    with dot_limits(max_nodes=None, max_bytes=None) as chosen:
        assert current_limits() is chosen and chosen.max_label_chars == DEFAULT_LIMITS.max_label_chars
        assert len(parse_dot(text)) == 12_000
    assert current_limits() is DEFAULT_LIMITS
    with pytest.raises(DotLimitError):
        parse_dot(text)
    with pytest.raises(gl.BadInputError, match="limits must be a gl.DotLimits"):
        parse_dot(text, limits={"max_nodes": 5})  # type: ignore[arg-type]
    assert gl.DotLimits is DotLimits and gl.dot_limits is dot_limits


def test_watched_graphs_read_under_the_limits_and_a_block_raises_them() -> None:
    from graphlab.watch.records import WatchedGraph

    seen = WatchedGraph(index=0, library="test", dot=nodes_dump(12_000))
    with pytest.raises(DotLimitError, match="max_nodes"):
        seen.graph  # noqa: B018
    assert seen.nodes is None  # the summary shows it has no readable graph (it does not raise)
    with dot_limits(NO_LIMITS):
        assert len(seen.graph) == 12_000


def test_graphs_graphlab_captures_itself_parse_without_limits() -> None:
    import inspect

    from graphlab.capture import captured

    assert "limits=NO_LIMITS" in inspect.getsource(captured.CapturedGraph.graph.fget)


# -- the command line -----------------------------------------------------------------------------------
def test_parse_and_render_refuse_past_a_limit_and_take_a_flag_to_raise_it(tmp_path: Path) -> None:
    path = tmp_path / "many.dot"
    path.write_text(nodes_dump(12_000))
    for command in (["parse", str(path)], ["render", str(path), "-o", str(tmp_path / "g.gv")]):
        refused = graphlab_cli(*command)
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
        assert "(max_nodes)" in refused.stderr and "--max-dot-nodes N" in refused.stderr
        done = graphlab_cli(*command, "--max-dot-nodes", "0", "--max-dot-bytes", "3000000")
        assert done.returncode == 0, done.stderr
        done = graphlab_cli(*command, "--max-dot-nodes", "12000")
        assert done.returncode == 0, done.stderr
    label = tmp_path / "label.dot"
    label.write_text(nodes_dump(2, label="k" * 6000))
    refused = graphlab_cli("parse", str(label))
    assert refused.returncode == 2 and "(max_label_chars)" in refused.stderr
    assert graphlab_cli("parse", str(label), "--max-label-chars", "7000").returncode == 0
    small = graphlab_cli("parse", str(H200 / "models" / "gpt_b1__verbose.dot"), "--max-dot-bytes", "100")
    assert small.returncode == 2 and "(max_bytes)" in small.stderr
    negative = graphlab_cli("parse", str(label), "--max-dot-nodes", "-1")
    assert negative.returncode == 2 and "--max-dot-nodes must be 0 (no limit) or more" in negative.stderr


# -- the JSON stream ------------------------------------------------------------------------------------
@pytest.mark.parametrize("indent", [None, 1, 2])
def test_write_json_streams_the_same_text_as_to_json(indent, monkeypatch) -> None:
    from graphlab.graph import model

    monkeypatch.setattr(model._Stream, "CHUNK", 3)  # several chunks even in a small graph
    for path in sorted(H200.glob("kinds/*__all.dot")) + [H200 / "models" / "gpt_b1__verbose.dot"]:
        graph = read_dot(path)
        out = io.StringIO()
        graph.write_json(out, indent=indent)
        assert out.getvalue() == graph.to_json(indent), path
    empty = gl.CudaGraph(graphs=(gl.Graph("graph_1", (), ()),), metadata={"rank": 0})
    out = io.StringIO()
    empty.write_json(out)
    assert out.getvalue() == empty.to_json()


def test_compact_json_made_from_cached_pieces_is_json_dumps_text(monkeypatch) -> None:
    """`write_json(indent=None)` joins each node's text from cached pieces (`graphlab.graph.node_json`): the text is
    `json.dumps`'s, with the CLI's kernel fields, for parsed nodes and for nodes made by `Node(...)` (every field
    set, None included), with the cache emptied as it fills."""
    import json

    from graphlab.graph import node_json
    from graphlab.graph.model import node_field_names

    monkeypatch.setattr(node_json, "PIECES_MAX", 5)
    kernel_fields = node_field_names(kind="kernel", census=True)
    for path in sorted(H200.glob("kinds/*__all.dot")) + sorted(H200.glob("models/*.dot")):
        for graph in (read_dot(path), gl.CudaGraph.from_json(read_dot(path).to_json())):
            expected = graph.to_dict()
            for entry in expected["graphs"]:
                for node in entry["nodes"]:
                    if node["kind"] == "kernel":
                        for key in kernel_fields:
                            node.setdefault(key, None)
            out = io.StringIO()
            graph.write_json(out, indent=None, kernel_fields=kernel_fields)
            assert out.getvalue() == json.dumps(expected), path


def test_a_big_dump_reads_in_chunks_the_same_as_in_one_piece(monkeypatch) -> None:
    text = nodes_dump(3000)
    whole = parse_dot(text, limits=NO_LIMITS)
    monkeypatch.setattr(dot_syntax, "TOKEN_CHUNK", 7)
    assert parse_dot(text, limits=NO_LIMITS) == whole
    broken = text.replace('"graph_1_node_2000" -> "graph_1_node_2001";', '"graph_1_node_2000" -> "nowhere";')
    with pytest.raises(DotParseError, match="unknown node 'nowhere'"):
        parse_dot(broken, limits=NO_LIMITS)


def test_the_cli_help_names_the_default_limits() -> None:
    from graphlab.cli import build_parser

    parse = next(a for a in build_parser()._subparsers._group_actions[0].choices.values() if a.prog.endswith("parse"))
    text = parse.format_help()
    for value in (DEFAULT_LIMITS.max_bytes, DEFAULT_LIMITS.max_nodes, DEFAULT_LIMITS.max_label_chars):
        assert f"{value:,}" in text
