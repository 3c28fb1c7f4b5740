"""Fuzz parse_dot: every input either parses into a well-formed model or raises DotParseError.

Inputs: random text, DOT-flavoured token soup, and real dumps (public samples and H200 fixtures)
truncated, with bytes deleted, duplicated or replaced, and with lines shuffled.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import FIXTURES, PUBLIC_SAMPLES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphlab.graph.dot_parser import parse_dot, read_dot
from graphlab.graph.model import CudaGraph
from graphlab.errors import DotParseError


def _real_dumps() -> list[str]:
    paths = sorted(PUBLIC_SAMPLES.glob("*.dot")) if PUBLIC_SAMPLES.is_dir() else []
    h200 = FIXTURES / "h200"
    for pattern in ("kinds/mixed__*.dot", "kinds/conditional_switch__all.dot", "kinds/nested__verbose.dot",
                    "kinds/batch_mem_op__all.dot", "kinds/memcpy__all.dot", "models/mlp_b8__all.dot",
                    "kinds/kernel__kernel_params.dot", "kinds/child_graph__handles.dot"):
        paths += sorted(h200.glob(pattern))
    texts = [p.read_text(encoding="utf-8") for p in paths]
    return [t for t in texts if len(t) < 20000] or [
        'digraph dot {\nsubgraph cluster_1 {\nlabel="graph_1" graph[style="dashed"];\n'
        '"graph_1_node_0"[style="solid" shape="rectangle" label="0\nEMPTY\n"];\n}\n}\n'
    ]


REAL = _real_dumps()
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def parses_or_dot_error(text: str) -> CudaGraph | None:
    try:
        graph = parse_dot(text, source="fuzz.dot")
    except DotParseError as exc:
        assert str(exc).startswith("fuzz.dot")
        assert "\n" not in str(exc)
        assert "internal error" not in str(exc), str(exc)
        return None
    ids = [n.id for n in graph.nodes()]
    assert len(ids) == len(set(ids))
    graph.to_json()  # serialisable
    return graph


@SETTINGS
@given(st.text(max_size=400))
def test_random_text(text: str) -> None:
    parses_or_dot_error(text)


DOT_PIECES = [
    "digraph", "dot", "{", "}", "subgraph", "cluster_1", "cluster_2", "label", "=", '"graph_1"', '"graph_2"', "[", "]",
    ";", ",", "->", "--", ":", '"graph_1_node_0"', '"graph_1_node_1"', '"graph_2_node_0"', "shape", '"record"',
    '"octagon"', '"rectangle"', '"0\\nEMPTY\\n"', '"1\\ngraph_2\\n"', '"{KERNEL | {ID | 0 | k\\<\\<\\<1,2,3\\>\\>\\>}}"',
    '"{\\nCONDITIONAL\\n| {Conditional Type| IF}\\n| {True|graph_2}\\n}"', '"0\\nMEMSET\\n(7,1024)\\n"',
    '"0\\nk\\n\\<\\<\\<\\{1,2\\},3,4\\>\\>\\>"', "headlabel", "0", "//", "\n", " ", "\\", '"', "+", "#", "/*", "*/",
    '"{KERNEL | {} | {{}} | {{a|b}|{}} }"', '"{HOST | {x | {} | {}}}"', '"{MEMSET | {{ID | value | elementSize | width} | {0 | x | 4 | \\{}}}"', "²", "٣", "\x00",
]


@SETTINGS
@given(st.lists(st.sampled_from(DOT_PIECES), max_size=60))
def test_dot_token_soup(pieces: list[str]) -> None:
    parses_or_dot_error(" ".join(pieces))


@SETTINGS
@given(st.sampled_from(REAL), st.floats(min_value=0.0, max_value=1.0))
def test_truncated_real_dumps(text: str, fraction: float) -> None:
    cut = int(len(text) * fraction)
    result = parses_or_dot_error(text[:cut])
    if cut < len(text.rstrip()):  # a real dump cut before its final '}' can never parse
        assert result is None


@SETTINGS
@given(
    st.sampled_from(REAL),
    st.lists(
        st.tuples(st.sampled_from(["delete", "insert", "replace", "duplicate"]), st.floats(0, 1), st.integers(1, 40),
                  st.text(max_size=5)),
        min_size=1, max_size=5,
    ),
)
def test_mutated_real_dumps(text: str, edits: list[tuple[str, float, int, str]]) -> None:
    for action, where, length, insert in edits:
        at = int(len(text) * where)
        if action == "delete":
            text = text[:at] + text[at + length:]
        elif action == "insert":
            text = text[:at] + insert + text[at:]
        elif action == "replace":
            text = text[:at] + insert + text[at + len(insert):]
        else:
            text = text[:at] + text[at:at + length] + text[at:]
    parses_or_dot_error(text)


@SETTINGS
@given(st.sampled_from(REAL), st.randoms(use_true_random=False))
def test_shuffled_lines(text: str, rng) -> None:
    lines = text.split("\n")
    rng.shuffle(lines)
    parses_or_dot_error("\n".join(lines))


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_through_read_dot(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    path = Path(tmp_path_factory.mktemp("fuzz")) / "input.dot"
    path.write_bytes(data)
    try:
        read_dot(path)
    except DotParseError as exc:
        assert exc.source == str(path)


LABEL_WORDS = [
    "KERNEL", "MEMSET", "MEMCPY", "CONDITIONAL", "HOST", "MEM_ALLOC", "graph_2", "ID", "0 (topoId: 3)",
    "Conditional Type", "IF", "WHILE", "SWITCH", "True", "False", "0", "-1", "²", "k\\<\\<\\<1,2,3\\>\\>\\>",
    "k\\<\\<\\<\\{1,2\\},\\{3\\},x\\>\\>\\>", "kind", "HtoD", "bytes", "value", "width", "elementSize", "Extent",
    "Width", "node handle", "0x1", " ", "\\|", "\\{", "\\}", "\\\\", "\n", "(1,2)", "a: b", ":",
]
RECORD_TREES = st.recursive(
    st.sampled_from(LABEL_WORDS),
    lambda inner: st.lists(inner, max_size=4).map(lambda cells: "{" + " | ".join(cells) + "}"),
    max_leaves=12,
)


@SETTINGS
@given(
    st.sampled_from(["record", "octagon", "rectangle", "trapezium", "invtrapezium", "box"]),
    st.one_of(
        st.tuples(st.sampled_from(LABEL_WORDS), st.lists(RECORD_TREES, max_size=5)).map(
            lambda t: "{" + t[0] + " | " + " | ".join(t[1]) + "}"
        ),
        st.lists(st.sampled_from(LABEL_WORDS), max_size=5).map("\\n".join),
    ),
)
def test_random_node_labels(shape: str, label: str) -> None:
    """Labels of any structure: the node's kind and fields, or one DotParseError; never a crash."""
    label = label.replace('"', '\\"')
    text = (
        'digraph dot {\nsubgraph cluster_1 {\nlabel="graph_1";\n'
        f'"graph_1_node_0"[shape="{shape}" label="{label}"];\n}}\n'
        'subgraph cluster_2 {\nlabel="graph_2";\n"graph_2_node_0"[shape="rectangle" label="0\\nEMPTY"];\n}\n}\n'
    )
    parses_or_dot_error(text)


# -- SWITCH case keys, and a seeded run over mutated real dumps ------------------------------------------------
SWITCH = FIXTURES / "h200" / "kinds" / "conditional_switch__all.dot"
CASE_KEYS = ["--0", "²", "٣", "-", "+1", "0x1", "1e3", " 1", "-0", "00", "9" * 30, "True", "", "a|b", "\\{"]


@pytest.mark.parametrize("key", ["--0", "²", "٣", "-", "+1"])
def test_switch_case_key_that_only_looks_like_a_number(key: str) -> None:
    """`"--0".lstrip("-").isdigit()` and `"²".isdigit()` are True, yet int() refuses both: the parser used to let
    that ValueError out (the CLI printed a traceback). A key that is not an ASCII integer is a name: kept in order."""
    text = SWITCH.read_text(encoding="utf-8").replace("{1|  graph_20}", "{" + key + "|  graph_20}")
    graph = parses_or_dot_error(text)
    assert graph is not None
    switch = next(n for n in graph.nodes() if n.body_graph_ids)
    assert set(switch.body_graph_ids) == {"graph_19", "graph_20", "graph_21"}
    assert switch.body_graph_ids[:2] == ("graph_19", "graph_21")  # the numbered cases first, the named one last


def _mutate(text: str, rng) -> str:
    """One to five edits of a real dump: a byte run deleted, duplicated or replaced, a line moved, or a SWITCH
    case key swapped for one of CASE_KEYS."""
    for _ in range(rng.randint(1, 5)):
        at = rng.randrange(len(text) + 1)
        action = rng.choice(["delete", "duplicate", "replace", "move", "case", "case"])
        if action == "delete":
            text = text[:at] + text[at + rng.randint(1, 40):]
        elif action == "duplicate":
            text = text[:at] + text[at:at + rng.randint(1, 40)] + text[at:]
        elif action == "replace":
            text = text[:at] + rng.choice(CASE_KEYS + DOT_PIECES) + text[at + rng.randint(0, 5):]
        elif action == "move":
            lines = text.split("\n")
            lines.insert(rng.randrange(len(lines) + 1), lines.pop(rng.randrange(len(lines))))
            text = "\n".join(lines)
        else:
            text = re.sub(r"\{(-?\d+)\|", lambda m: "{" + rng.choice(CASE_KEYS + [m.group(1)]) + "|", text)
    return text


def test_seeded_mutations_of_real_dumps_raise_only_graphlab_errors() -> None:
    """A fixed-seed run (at most 60 s; 4,000 inputs) over real dumps, the SWITCH one weighted up: whatever the
    input, parse_dot returns a well-formed graph or raises a GraphlabError, never a bare Python error."""
    import random
    import time

    from graphlab.errors import GraphlabError

    rng = random.Random(20261204)
    sources = REAL + [SWITCH.read_text(encoding="utf-8")] * 4
    started, tried, failed = time.monotonic(), 0, []
    while tried < 4000 and time.monotonic() - started < 60:
        text = _mutate(rng.choice(sources), rng)
        tried += 1
        try:
            parses_or_dot_error(text)
        except GraphlabError:
            pass
        except Exception as exc:  # noqa: BLE001 - what this test is for
            failed.append(f"{type(exc).__name__}: {exc} <- {text[:300]!r}")
    assert tried >= 200, f"only {tried} inputs in 60 s"
    assert not failed, f"{len(failed)} of {tried} inputs raised a non-graphlab error; first: {failed[0]}"
