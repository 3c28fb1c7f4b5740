"""The parser's fast paths read exactly what the general paths read.

`DotReader` reads driver-style statements (`"name"[style=... shape=... label="..."];`, edges) as one
token each, and the label reader reads the rows that differ from node to node (`{ID | ...}`,
`{{keys} | {values}}`) without the general record parse. Both are checked here against the general
path: on every real dump, and on generated and mutated text (hypothesis).
"""
from __future__ import annotations

from pathlib import Path

from conftest import FIXTURES, REPO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphlab.graph import dot_labels
from graphlab.graph.dot_parser import _build
from graphlab.graph.dot_syntax import DotReader
from graphlab.errors import DotParseError

DUMPS = sorted(FIXTURES.glob("**/*.dot")) + sorted((REPO / "data" / "recordings").glob("*/*/*.dot"))
SMALL = [p.read_text(encoding="utf-8") for p in DUMPS if p.stat().st_size < 20_000][:40]
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _read(text: str, *, fast: bool) -> object:
    """What the parser makes of `text` (the model's JSON, or the error message), reading statements fast or not."""
    try:
        reader = DotReader(text, "t.dot", fast=fast)
        reader.read()
        return _build(reader).to_json()
    except DotParseError as exc:
        return f"error: {exc}"


def _general_row(part: str) -> object:
    """The pairs of one record line through the general record parse (or its error)."""
    try:
        return tuple(dot_labels._pair(k, v) for cell in dot_labels._cached_cells(part) for k, v in dot_labels._row_pairs(cell))
    except ValueError as exc:
        return f"error: {exc}"


def _fast_row(part: str) -> object:
    dot_labels.clear_caches()
    try:
        pairs, as_dict = dot_labels._read_row(part)
    except ValueError as exc:
        return f"error: {exc}"
    if as_dict is not None:  # the dict form says the same as the pairs
        assert all(plain for _, _, plain in pairs) and as_dict == {k: v for k, v, _ in pairs}
    return pairs


def test_every_dump_reads_the_same_with_and_without_the_statement_fast_path() -> None:
    assert len(DUMPS) > 300
    for path in DUMPS:
        text = path.read_text(encoding="utf-8")
        assert _read(text, fast=True) == _read(text, fast=False), path


def test_every_record_line_of_every_dump_reads_the_same_fast() -> None:
    lines = set()
    for path in DUMPS:
        try:
            reader = DotReader(path.read_text(encoding="utf-8"), str(path))
            reader.read()
        except DotParseError:  # the excerpt of a broken dump kept on purpose
            continue
        for raw in reader.nodes.values():
            body = raw.attrs.get("label", "").strip()
            if body.startswith("{") and "\n|" in body:
                lines.update(body[1:-1].split("\n|")[1:])
    assert len(lines) > 1000
    for line in lines:
        assert _fast_row(line) == _general_row(line), line


CELL = st.sampled_from(["0", "12 (topoId: 3)", " 7 ", "", "graph_2", "node handle", "func handle", "0x0000000036B80D00",
                        "k\\<\\<\\<1,2,3\\>\\>\\>", "k\\<\\<\\<\\{1,2\\},\\{3\\},0\\>\\>\\>", "\\|", "\\\\", "a\\{b",
                        "value", "ID", "x|y", "{", "}", "a b", "\\", "kind"])
SPACE = st.sampled_from(["", " ", "  ", "\n"])


@SETTINGS
@given(st.lists(CELL, min_size=0, max_size=3), st.lists(SPACE, min_size=6, max_size=6))
def test_id_rows_read_the_same_fast(cells: list[str], spaces: list[str]) -> None:
    a, b, c, d, e, f = spaces
    line = f"{a}{{{b}ID{c}|" + "|".join(f"{d}{x}{e}" for x in cells) + f"}}{f}"
    for part in (line, " " + line.lstrip()):
        assert _fast_row(part) == _general_row(part), part


@SETTINGS
@given(st.lists(CELL, min_size=1, max_size=4), st.lists(CELL, min_size=1, max_size=4), SPACE, SPACE)
def test_two_group_rows_read_the_same_fast(keys: list[str], values: list[str], a: str, b: str) -> None:
    for part in (f" {{{{{' | '.join(keys)}}} | {{{' | '.join(values)}}}}}{a}",
                 f"{a}{{{b}{{{'|'.join(keys)}}}{a}|{b}{{{'|'.join(values)}}}}}"):
        assert _fast_row(part) == _general_row(part), part


STATEMENT_PIECES = [
    '"graph_1_node_0"', '"graph_1_node_1"', "[", "]", ";", "->", '"', "=", "style", 'style="bold"', ' style="solid"',
    ' shape="record"', 'shape="octagon"', ' label="', '0\\nEMPTY\\n', '{KERNEL | {ID | 0 | k}}', '"];', "\\", "\\\"",
    " ", "\n", "[headlabel=0]", " [headlabel=0];", "node", "graph", "+", "#", "//", "/*", "*/", "subgraph cluster_1 {",
    "}", 'label="graph_1"', "a", "-1", "1.5",
]


@SETTINGS
@given(st.lists(st.sampled_from(STATEMENT_PIECES), max_size=40))
def test_statement_soup_reads_the_same_fast(pieces: list[str]) -> None:
    text = 'digraph dot {\nsubgraph cluster_1 {\nlabel="graph_1" graph[style="dashed"];\n' + "".join(pieces) + "\n}\n}\n"
    assert _read(text, fast=True) == _read(text, fast=False)


@SETTINGS
@given(st.sampled_from(SMALL), st.floats(0, 1), st.integers(0, 30), st.text(max_size=4))
def test_mutated_dumps_read_the_same_fast(text: str, where: float, length: int, insert: str) -> None:
    at = int(len(text) * where)
    mutated = text[:at] + insert + text[at + length:]
    assert _read(mutated, fast=True) == _read(mutated, fast=False)


def test_a_statement_read_fast_where_no_statement_starts_is_read_again_in_full() -> None:
    # `"b"[...];` after `->` is the edge's target and its attributes, not a node statement
    text = ('digraph dot {\nsubgraph cluster_1 {\nlabel="graph_1";\n"a"[style="solid" shape="rectangle" label="0\\nEMPTY"];\n'
            '"b"[style="solid" shape="rectangle" label="1\\nEMPTY"];\n'
            '"a" -> "b"[style="solid" shape="record" label="x"];\n}\n}\n')
    assert _read(text, fast=True) == _read(text, fast=False)
    assert '"src"' not in str(_read(text, fast=True))


def test_clear_caches_empties_every_cache(tmp_path: Path) -> None:
    dot_labels.read_label({"shape": "record", "label": "{KERNEL\n| {ID | 0 | k\\<\\<\\<1,1,0\\>\\>\\>}\n| {priority | 0}\n}"})
    dot_labels.clear_caches()
    assert not dot_labels._ROW_CACHE and not dot_labels._KERNEL_CELLS and not dot_labels._ID_NAMES
