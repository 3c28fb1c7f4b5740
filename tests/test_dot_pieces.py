"""A DOT text read in pieces reads exactly as the whole text does (issue 40: the parser streams).

`read_dot` hands the reader a file piece by piece (`graphlab.graph.dot_file`), and the reader carries a token cut
by a piece's end into the next piece. Checked here: every real dump, and generated and mutated text cut at random
places, give the same graph, or the same error at the same line, as the whole text; a file's checks (UTF-8,
control characters, a BOM) say what they said when the file was read whole; nodes copied from a label template
(`graphlab.graph.dot_templates`) equal those the full label reader makes; and a file's text is never held whole.
"""
from __future__ import annotations

import tracemalloc
from pathlib import Path
from typing import Iterator

import pytest
from conftest import FIXTURES, REPO
from decoder_dump import decoder_dump
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_parser_fuzz import DOT_PIECES, REAL

from graphlab.errors import DotParseError
from graphlab.graph import dot_file, dot_syntax
from graphlab.graph.dot_file import DotFile, read_dot_text
from graphlab.graph.dot_limits import NO_LIMITS, DotLimits
from graphlab.graph.dot_parser import _build, _NodeMaker, parse_dot, read_dot
from graphlab.graph.dot_syntax import DotReader, DotText, WholeText

DUMPS = sorted(FIXTURES.glob("**/*.dot")) + sorted((REPO / "data" / "recordings").glob("*/*/*.dot"))
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class Cut(DotText):
    """A text in memory, handed over in pieces cut at the given places."""

    def __init__(self, text: str, cuts: list[int]):
        self.whole = WholeText(text)
        self.cuts = sorted({min(max(c, 0), len(text)) for c in cuts} | {0, len(text)})

    def pieces(self) -> Iterator[str]:
        for start, end in zip(self.cuts, self.cuts[1:]):
            yield self.whole.text[start:end]

    def line_of(self, pos: int) -> int:
        return self.whole.line_of(pos)


def outcome(read, *args, **kwargs) -> str:
    """What `read(*args, **kwargs)` made: the graph's JSON, or the error's message (with its line)."""
    try:
        return read(*args, **kwargs).to_json()
    except DotParseError as exc:
        return f"error: {exc}"


def read_text(text: DotText | str, *, fast: bool = True, templates: bool = True, limits: DotLimits = NO_LIMITS):
    reader = DotReader(text, "t.dot", fast=fast, limits=limits, on_node=_NodeMaker(templates=templates))
    reader.read()
    return _build(reader)


def whole_file(path: Path, limits: DotLimits | None = None):
    """A file read as it was before the parser streamed: its whole text, then parsed."""
    return parse_dot(read_dot_text(path, limits=limits), source=str(path), limits=limits)


# -- real dumps -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("piece_bytes", [7, 1000])
def test_every_dump_reads_the_same_in_pieces(piece_bytes: int, monkeypatch) -> None:
    assert len(DUMPS) > 300
    monkeypatch.setattr(dot_file, "PIECE_BYTES", piece_bytes)
    for path in DUMPS:
        if piece_bytes < 100 and path.stat().st_size > 50_000:
            continue  # a few thousand pieces each: the small dumps cover the tiny pieces
        assert outcome(read_dot, path, limits=NO_LIMITS) == outcome(whole_file, path, NO_LIMITS), path


def test_every_dump_reads_the_same_with_and_without_label_templates() -> None:
    copied = 0
    for path in DUMPS + [None]:
        text = decoder_dump(layers=32) if path is None else path.read_text(encoding="utf-8")
        with_templates = outcome(read_text, text)
        assert with_templates == outcome(read_text, text, templates=False), path
        copied += with_templates.count('"kind"')
    assert copied > 5000


def test_a_template_is_a_copy_with_the_nodes_own_id_topo_id_handle_and_details() -> None:
    graph = read_text(decoder_dump(layers=2))
    first, again = (n for n in graph.nodes() if n.short_name == "silu (elementwise)")
    assert (first.topo_id, first.handle) != (again.topo_id, again.handle)
    assert first.details == again.details and first.details is not again.details
    assert (first.name, first.grid, first.block) == (again.name, again.grid, again.block)


# -- generated and mutated text, cut anywhere ---------------------------------------------------------------
CUTS = st.lists(st.integers(0, 20_000), max_size=12)


@SETTINGS
@given(st.sampled_from(REAL), st.floats(0, 1), st.integers(0, 30), st.text(max_size=4), CUTS)
def test_mutated_dumps_cut_anywhere_read_as_whole(text: str, where: float, length: int, insert: str,
                                                   cuts: list[int]) -> None:
    at = int(len(text) * where)
    mutated = text[:at] + insert + text[at + length:]
    whole = outcome(lambda: read_text(mutated))
    assert outcome(lambda: read_text(Cut(mutated, cuts))) == whole
    assert outcome(lambda: read_text(Cut(mutated, cuts), fast=False)) == outcome(lambda: read_text(mutated, fast=False))


@SETTINGS
@given(st.lists(st.sampled_from(DOT_PIECES), max_size=60), st.lists(st.integers(0, 400), max_size=12))
def test_token_soup_cut_anywhere_reads_as_whole(pieces: list[str], cuts: list[int]) -> None:
    text = " ".join(pieces)
    assert outcome(lambda: read_text(Cut(text, cuts))) == outcome(lambda: read_text(text))


def test_a_token_cut_at_every_place_reads_as_whole() -> None:
    text = ('digraph dot {\n# a comment\nsubgraph cluster_1 {\nlabel="graph_1" graph[style="dashed"];\n/* a\nblock */'
            '"graph_1_node_0"[style="solid" shape="rectangle" label="0\\nEMPTY\\n"];\n'
            '"graph_1_node_1" [shape="octagon" label="1\\nk" + "ernel\\n"];\n"graph_1_node_0" -> "graph_1_node_1";\n}\n}\n')
    whole = outcome(lambda: read_text(text))
    assert whole.count('"kind"') == 2
    for cut in range(len(text)):
        assert outcome(read_text, Cut(text, [cut])) == whole, cut
        assert outcome(read_text, Cut(text, [cut, cut + 1, cut + 2])) == whole, cut


def test_a_string_longer_than_the_pieces_is_read_in_a_few_steps() -> None:
    label = "k" * 100_000
    text = (f'digraph dot {{\nsubgraph cluster_1 {{\n"graph_1_node_0"[style="bold" shape="octagon" label="0\\n{label}\\n"];'
            "\n}\n}\n")
    graph = read_text(Cut(text, list(range(0, len(text), 10))))
    assert graph.node("graph_1_node_0").name == label
    with pytest.raises(DotParseError, match=r"t\.dot:3: a label of at least"):
        read_text(Cut(text, list(range(0, len(text), 10))), limits=DotLimits(max_label_chars=50_000))


# -- a file's checks -----------------------------------------------------------------------------------------
def _write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "x.dot"
    path.write_bytes(data)
    return path


GOOD = (FIXTURES / "h200" / "kinds" / "mixed__verbose.dot").read_bytes()


@pytest.mark.parametrize("data", [
    b"\xef\xbb\xbf" + GOOD,  # a BOM
    GOOD.replace(b"graph_27_node_5", "graph_27_node_\u00e9".encode(), 1),  # a two-byte character in a name
    GOOD[:3000] + b"\xff" + GOOD[3000:],  # not UTF-8, on line 30 or so
    GOOD[:4000] + b"\x01" + GOOD[4000:],  # a control character
    GOOD[:2000] + b"\xff" + GOOD[2000:4000] + b"\x01" + GOOD[4000:],  # both: not UTF-8 is said first
    GOOD + "\u00e9".encode()[:1],  # a character cut by the file's end
    b"\x00" * 50,
    b"",
], ids=["bom", "two-byte", "not-utf8", "control", "both", "cut-character", "zeros", "empty"])
@pytest.mark.parametrize("piece_bytes", [1, 5, 1 << 20])
def test_a_file_is_checked_as_when_it_was_read_whole(tmp_path: Path, data: bytes, piece_bytes: int,
                                                      monkeypatch) -> None:
    monkeypatch.setattr(dot_file, "PIECE_BYTES", piece_bytes)
    path = _write(tmp_path, data)
    assert outcome(lambda: read_dot(path)) == outcome(lambda: whole_file(path))


def test_the_pre_scan_counts_labels_cut_by_a_piece(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(dot_file, "PIECE_BYTES", 3)
    lines = [f'"graph_1_node_{i}"[shape="octagon" label="k"];\n' for i in range(30)]
    path = _write(tmp_path, ("digraph dot {\nsubgraph cluster_1 {\n" + "".join(lines) + "}\n}\n").encode())
    limits = DotLimits(max_nodes=20)
    said = outcome(lambda: read_dot(path, limits=limits))
    assert "nodes (a pre-scan of the text)" in said and said == outcome(lambda: whole_file(path, limits))


def test_an_error_names_the_line_found_by_reading_the_file_again(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(dot_file, "PIECE_BYTES", 64)
    text = GOOD.decode().removesuffix("}\n}\n") + '"graph_27_node_0" -> "nowhere";\n}\n}\n'
    path = _write(tmp_path, text.encode())
    expected = outcome(lambda: whole_file(path))
    assert expected.startswith(f"error: {path}:") and outcome(lambda: read_dot(path)) == expected
    with DotFile.open(path) as dot:
        whole = WholeText(text)
        for pos in (0, 1, 500, 2000, len(text) - 1):
            assert dot.line_of(pos) == whole.line_of(pos)


# -- memory ------------------------------------------------------------------------------------------------
def test_a_file_is_never_held_whole(tmp_path: Path, monkeypatch) -> None:
    """Past the graph it makes, reading a 10,000-node file holds less than half its text at once (the pieces,
    the tokens of a chunk and each statement's node until the graph is built); the whole text would be more."""
    monkeypatch.setattr(dot_file, "PIECE_BYTES", 1 << 16)
    monkeypatch.setattr(dot_syntax, "TOKEN_CHUNK", 256)
    path = tmp_path / "decoder.dot"
    text = decoder_dump(nodes=10_000)
    path.write_text(text, encoding="utf-8")
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        graph = read_dot(path, limits=NO_LIMITS)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(graph) == 10_000
    beyond_graph = peak - held
    assert beyond_graph < len(text) / 2, (beyond_graph, len(text), held - before)  # the whole text: 1.3x its size


def test_parse_dot_of_a_text_and_read_dot_of_its_file_agree_on_a_big_dump(tmp_path: Path) -> None:
    text = decoder_dump(layers=40)
    path = tmp_path / "decoder.dot"
    path.write_text(text, encoding="utf-8")
    assert read_dot(path, limits=NO_LIMITS) == parse_dot(text, source=str(path), limits=NO_LIMITS)
