"""parse_dot on hand-written snippets in the exact layouts cudaGraphDebugDotPrint writes, and on bad input.

The snippets copy the driver's text byte for byte from the H200 fixtures (tests/fixtures/h200), cut
down to the node under test; tests/test_dot_fixtures.py parses the full files.
"""
from __future__ import annotations

import errno

import pytest

import graphlab as gl

from graphlab.graph.dot_parser import parse_dot, read_dot
from graphlab.graph.model import ConditionalType, CudaGraph, NodeKind
from graphlab.errors import DotParseError

GELU = (
    "_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_18GeluCUDAKernelImplERNS_18TensorIteratorBaseENS0_8GeluTypeEE"
    "NKUlvE0_clEvENKUlvE0_clEvEUlfE_St5arrayIPcLm2EEEEviT0_T1_"
)
GEMM = "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x128x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas"


def dump(*clusters: str) -> str:
    return "digraph dot {\n" + "".join(clusters) + "}\n"


def cluster(graph: int, body: str) -> str:
    return f'subgraph cluster_{graph} {{\nlabel="graph_{graph}" graph[style="dashed"];\n{body}}}\n'


def only_node(text: str) -> object:
    graph = parse_dot(text)
    (node,) = list(graph.nodes())
    return node


# -- terse labels (flags 0, 4, 1024, 16384) ----------------------------------------------------
def test_terse_kernel_default_flags() -> None:
    node = only_node(dump(cluster(1, f'"graph_1_node_0"[style="bold" shape="octagon" label="0\n{GEMM}\n"];\n\n')))
    assert node.kind is NodeKind.KERNEL
    assert (node.id, node.graph_id, node.index) == ("graph_1_node_0", "graph_1", 0)
    assert node.name == GEMM and node.demangled_name == GEMM
    assert node.short_name == "gemm 32x128 (cuBLAS)" and node.family == "cuBLAS"
    assert node.grid is None and node.block is None and node.shared_bytes is None and node.topo_id is None


def test_terse_kernel_params_with_3d_grid() -> None:
    text = dump(cluster(1, f'"graph_1_node_0"[style="bold" shape="octagon" label="0\n{GEMM}\n\\<\\<\\<\\{{2,8,4\\}},64,6528\\>\\>\\>"];\n'))
    node = only_node(text)
    assert (node.grid, node.block, node.shared_bytes) == ((2, 8, 4), (64, 1, 1), 6528)
    assert node.name == GEMM


def test_terse_kernel_with_escaped_newlines_handles_and_topo() -> None:
    label = f"3 (topoId: 0)\\n{GELU}\\nnode handle: 0x0000000036B80D00\\nfunc handle: 0x00000000330E8590\\n"
    node = only_node(dump(cluster(1, f'"graph_1_node_3"[style="bold" shape="octagon" label="{label}"];\n')))
    assert node.index == 3 and node.topo_id == 0
    assert node.handle == "0x0000000036B80D00"
    assert node.details == {"func handle": "0x00000000330E8590"}
    assert node.short_name == "gelu (elementwise)" and node.family == "ATen elementwise"
    assert node.demangled_name.startswith("void at::native::vectorized_elementwise_kernel<4,")


def test_terse_memcpy_and_memset_without_space_before_label() -> None:
    text = dump(cluster(27, (
        '"graph_27_node_0"[style="solid" shape="trapezium"label="0\nMEMCPY\n(HtoD,4096)\n"];\n\n'
        '"graph_27_node_1"[style="solid" shape="invtrapezium"label="1\nMEMSET\n(7,1024)\n"];\n\n'
        '"graph_27_node_0" -> "graph_27_node_1";\n'
    )))
    graph = parse_dot(text)
    copy, fill = graph.nodes()
    assert (copy.kind, copy.copy_direction, copy.copy_bytes) == (NodeKind.MEMCPY, "HtoD", 4096)
    assert (fill.kind, fill.memset_value, fill.memset_bytes) == (NodeKind.MEMSET, 7, 1024)
    assert [(e.src, e.dst) for e in graph.edges()] == [("graph_27_node_0", "graph_27_node_1")]


@pytest.mark.parametrize(
    ("word", "kind"),
    [
        ("EVENT_RECORD", NodeKind.EVENT_RECORD), ("EVENT_WAIT", NodeKind.WAIT_EVENT), ("EMPTY", NodeKind.EMPTY),
        ("HOST", NodeKind.HOST), ("MEM_ALLOC", NodeKind.MEM_ALLOC), ("MEM_FREE", NodeKind.MEM_FREE),
    ],
)
def test_terse_rectangles(word: str, kind: NodeKind) -> None:
    node = only_node(dump(cluster(2, f'"graph_2_node_5"[style="solid" shape="rectangle" label="5\n{word}\n"];\n\n')))
    assert node.kind is kind and node.index == 5


def test_terse_host_and_event_params_go_to_details() -> None:
    text = dump(cluster(9, (
        '"graph_9_node_1"[style="solid" shape="rectangle" label="1\nHOST\nfn: 0xF5158D4CFA1E0FF3\nuserData: 0x0\n"];\n'
        '"graph_9_node_2"[style="solid" shape="rectangle" label="2\nEVENT_WAIT\nevent: 0x00000000378FA190\n"];\n'
    )))
    host, wait = parse_dot(text).nodes()
    assert host.details == {"fn": "0xF5158D4CFA1E0FF3", "userData": "0x0"}
    assert wait.kind is NodeKind.WAIT_EVENT and wait.details == {"event": "0x00000000378FA190"}


def test_child_graph_body_is_linked_by_label_text() -> None:
    text = dump(
        cluster(6, (
            '"graph_6_node_0"[style="solid" shape="invtrapezium"label="0\nMEMSET\n(7,1024)\n"];\n\n'
            '"graph_6_node_1"[style="solid" shape="rectangle" label="1 (topoId: 0)\ngraph_8\nnode handle: 0x0000000036B899B8\n"];\n\n'
            '"graph_6_node_0" -> "graph_6_node_1" [headlabel=0];\n'
        )),
        cluster(8, '"graph_8_node_0"[style="solid" shape="invtrapezium"label="0\nMEMSET\n(7,1024)\n"];\n'),
    )
    graph = parse_dot(text)
    assert [g.id for g in graph.graphs] == ["graph_6", "graph_8"]
    owner = graph.node("graph_6_node_1")
    assert owner.kind is NodeKind.CHILD_GRAPH and owner.body_graph_ids == ("graph_8",)
    assert owner.handle == "0x0000000036B899B8" and owner.topo_id == 0
    assert graph.graph("graph_8").parent_node_id == "graph_6_node_1"
    assert graph.root.id == "graph_6" and graph.root.parent_node_id is None


def test_root_comes_first_even_when_a_body_is_printed_first() -> None:
    text = dump(
        cluster(8, '"graph_8_node_0"[shape="rectangle" label="0\nEMPTY\n"];\n'),
        cluster(6, '"graph_6_node_0"[shape="rectangle" label="0\ngraph_8\n"];\n'),
    )
    assert [g.id for g in parse_dot(text).graphs] == ["graph_6", "graph_8"]


# -- verbose records ---------------------------------------------------------------------------
VERBOSE_KERNEL = (
    '"graph_1_node_1"[style="bold" shape="record" label="{KERNEL\n'
    "| {ID | 1 (topoId: 19) | ampere_sgemm_128x64_tn\\<\\<\\<\\{16,10,2\\},128,0\\>\\>\\>}\n"
    "| {{node handle | func handle} | {0x000000000A00BB80 | 0x000000000D56CF70}}\n"
    "| {accessPolicyWindow | {base_ptr | num_bytes | hitRatio | hitProp | missProp} | "
    "{0x0000000000000000 | 0 | 0.000000 | N | N}}\n"
    "| {cooperative | 0}\n| {priority | 0}\n}\"];\n\n"
)


def test_verbose_kernel_record() -> None:
    node = only_node(dump(cluster(1, VERBOSE_KERNEL)))
    assert node.kind is NodeKind.KERNEL and node.index == 1 and node.topo_id == 19
    assert node.name == "ampere_sgemm_128x64_tn" and node.short_name == "gemm 128x64 (cuBLAS)"
    assert (node.grid, node.block, node.shared_bytes) == ((16, 10, 2), (128, 1, 1), 0)
    assert node.handle == "0x000000000A00BB80"
    assert node.details == {
        "func handle": "0x000000000D56CF70",
        "accessPolicyWindow.base_ptr": "0x0000000000000000",
        "accessPolicyWindow.num_bytes": "0",
        "accessPolicyWindow.hitRatio": "0.000000",
        "accessPolicyWindow.hitProp": "N",
        "accessPolicyWindow.missProp": "N",
        "cooperative": "0",
        "priority": "0",
    }


def test_verbose_kernel_2d_block() -> None:
    label = "{KERNEL\n| {ID | 1 (topoId: 4) | k\\<\\<\\<1,\\{2,64\\},784\\>\\>\\>}\n}"
    node = only_node(dump(cluster(1, f'"graph_1_node_1"[style="bold" shape="record" label="{label}"];\n')))
    assert (node.grid, node.block, node.shared_bytes) == ((1, 1, 1), (2, 64, 1), 784)


def test_kernel_attributes_only_record_has_name_but_no_launch() -> None:
    label = f"{{KERNEL\n| {{ID | 0 | {GEMM}}}\n| {{cooperative | 0}}\n| {{priority | 0}}\n}}"
    node = only_node(dump(cluster(1, f'"graph_1_node_0"[style="bold" shape="record" label="{label}"];\n')))
    assert node.name == GEMM and node.grid is None and node.topo_id is None
    assert node.details == {"cooperative": "0", "priority": "0"}


def test_verbose_memset_with_duplicated_style() -> None:
    text = dump(cluster(18, (
        '"graph_18_node_0"[style="solid" style="solid" shape="record" label="{MEMSET\n'
        "| {{ID | node handle | dptr | pitch | value | elementSize | width | height} | "
        '{0 (topoId: 2) | 0x0000000036B93540 | 0x00007FF443E6CC00 | 0 | 7 | 4 | 256 | 1}}}"];\n'
    )))
    node = only_node(text)
    assert (node.kind, node.memset_value, node.memset_bytes, node.topo_id) == (NodeKind.MEMSET, 7, 1024, 2)
    assert node.handle == "0x0000000036B93540"
    assert node.details["elementSize"] == "4" and node.details["dptr"] == "0x00007FF443E6CC00"


def test_verbose_memcpy_record() -> None:
    label = (
        "{\nMEMCPY\n| {{ID | node handle} | {1 (topoId: 1) | 0x0000000036B83970}}\n"
        "| {kind | DtoD (DEVICE to DEVICE)}\n"
        "| {{srcPtr | dstPtr} | {pitch | ptr | xsize | ysize | pitch | ptr | xsize | ysize} | "
        "{0 | 0x00007FF443E50000 | 0 | 0 | 0 | 0x00007FF443E54000 | 0 | 0}}\n"
        "| {{srcPos | {{x | 0} | {y | 0} | {z | 0}}} | {dstPos | {{x | 0} | {y | 0} | {z | 0}}} | "
        "{Extent | {{Width | 16384} | {Height | 1} | {Depth | 1}}}}\n}"
    )
    node = only_node(dump(cluster(2, f'"graph_2_node_1"[style="solid" shape="record" label="{label}"];\n')))
    assert (node.copy_direction, node.copy_bytes, node.topo_id) == ("DtoD", 16384, 1)
    assert node.details["srcPtr.ptr"] == "0x00007FF443E50000" and node.details["dstPtr.ptr"] == "0x00007FF443E54000"
    assert node.details["Extent.Width"] == "16384" and node.details["dstPos.z"] == "0"


def test_mem_alloc_record_with_pool_props() -> None:
    label = (
        "{\nMEM_ALLOC\n| {{ID | node handle} | {0 (topoId: 1) | 0x00007F87995EA490}}\n"
        "| {{{poolProps | {allocType | handleTypes | {location | {type | id}}} | {PINNED | NONE | DEVICE | 0}}}}\n"
        "| {{bytesize | dptr} | {32 | 0x0000001A00000000}}\n}"
    )
    node = only_node(dump(cluster(1, f'"graph_1_node_0"[style="solid" shape="record" label="{label}"];\n')))
    assert node.kind is NodeKind.MEM_ALLOC
    assert node.details == {
        "poolProps.allocType": "PINNED", "poolProps.handleTypes": "NONE", "poolProps.location.type": "DEVICE",
        "poolProps.location.id": "0", "bytesize": "32", "dptr": "0x0000001A00000000",
    }


def test_batch_mem_op_and_ext_semaphores() -> None:
    text = dump(cluster(25, (
        '"graph_25_node_0"[style="solid" shape="record" label="{\nBATCH_MEM_OP\n'
        "| {{ID | node handle | count | flags } | {0 (topoId: 1) | 0x0000000036B97F50 | 1 | 0x00000000 }}\n"
        "| {{{paramArray[0] | {op | addr | val | flags }}}\n"
        '| {WRITE_VALUE_32 | 0x00007FF443E6E800 | 0x00000001 | DEFAULT}}\n}"];\n'
        '"graph_25_node_1"[style="solid" shape="record" label="{\nEXT_SEMAS_SIGNAL\n'
        '| {{ID | node handle | numExtSems} | {1 (topoId: 1) | 0x0000000036B98E20 | 0}}\n}"];\n'
        '"graph_25_node_2"[style="solid" shape="record" label="{\nEXT_SEMAS_WAIT\n'
        '| {{ID | node handle | numExtSems} | {2 (topoId: 0) | 0x0000000036B99588 | 0}}\n}"];\n'
    )))
    batch, signal, wait = parse_dot(text).nodes()
    assert batch.kind is NodeKind.BATCH_MEM_OP
    assert batch.details["paramArray[0].op"] == "WRITE_VALUE_32" and batch.details["count"] == "1"
    assert signal.kind is NodeKind.EXT_SEMAS_SIGNAL and signal.details == {"numExtSems": "0"}
    assert wait.kind is NodeKind.EXT_SEMAS_WAIT


# -- conditionals --------------------------------------------------------------------------------
def conditional(rows: str, bodies: list[int]) -> str:
    label = "{\nCONDITIONAL\n| {ID | 1 (topoId: 1)}\n| {node handle| 0x0000000036B93CA8}\n" + rows + "}\n"
    owner = cluster(18, f'"graph_18_node_1"[style="bold" shape="record" label="{label}"];\n')
    return dump(owner, *(cluster(b, f'"graph_{b}_node_0"[shape="rectangle" label="0\nEMPTY\n"];\n') for b in bodies))


@pytest.mark.parametrize(
    ("rows", "bodies", "ctype"),
    [
        ("| {Conditional Handle|1}\n| {Conditional Type| IF}\n| {True|graph_10}\n", [10], ConditionalType.IF),
        ("| {Conditional Type| IF}\n| {True | graph_12}\n| {False| graph_13}\n", [12, 13], ConditionalType.IF_ELSE),
        ("| {Conditional Type| WHILE}\n| {True|graph_17}\n", [17], ConditionalType.WHILE),
        ("| {Conditional Type| SWITCH}\n| {0|  graph_19}\n| {1|  graph_20}\n| {2|  graph_21}\n", [19, 20, 21],
         ConditionalType.SWITCH),
    ],
)
def test_conditional_types_and_bodies(rows: str, bodies: list[int], ctype: ConditionalType) -> None:
    graph = parse_dot(conditional(rows, bodies))
    node = graph.node("graph_18_node_1")
    assert node.kind is NodeKind.CONDITIONAL and node.conditional_type is ctype
    assert node.body_graph_ids == tuple(f"graph_{b}" for b in bodies)
    assert node.handle == "0x0000000036B93CA8" and node.topo_id == 1
    for body in bodies:
        assert graph.graph(f"graph_{body}").parent_node_id == "graph_18_node_1"
    assert graph.root.id == "graph_18"


def test_else_body_listed_first_still_comes_second() -> None:
    node = parse_dot(conditional("| {Conditional Type| IF}\n| {False| graph_13}\n| {True | graph_12}\n", [12, 13])).node(
        "graph_18_node_1"
    )
    assert node.body_graph_ids == ("graph_12", "graph_13")


# -- DOT syntax variations ---------------------------------------------------------------------
def test_comments_headlabels_semicolons_and_edge_chains() -> None:
    text = (
        "// written by hand\n/* block\ncomment */\n# hash comment\ndigraph dot {\n"
        "subgraph cluster_3 {\n label = \"graph_3\";\n"
        '"graph_3_node_0" [shape=rectangle, label="0\\nEMPTY\\n"]\n'
        '"graph_3_node_1" [shape=rectangle; label="1\\nEMPTY\\n"];\n'
        'graph_3_node_2 [shape="rectangle" label="2\\nEMPTY\\n"];\n'
        '"graph_3_node_0" -> "graph_3_node_1" -> graph_3_node_2 [headlabel=0];\n'
        "}\n}\n"
    )
    graph = parse_dot(text)
    assert [(e.src, e.dst) for e in graph.edges()] == [
        ("graph_3_node_0", "graph_3_node_1"), ("graph_3_node_1", "graph_3_node_2"),
    ]
    assert graph.count_by_kind() == {"empty": 3}


def test_empty_cuda_graph_is_a_graph_with_no_nodes() -> None:
    graph = parse_dot(dump(cluster(1, "")))
    assert [g.id for g in graph.graphs] == ["graph_1"] and len(graph) == 0


def test_to_dict_lists_every_node_once() -> None:
    graph = parse_dot(conditional("| {Conditional Type| SWITCH}\n| {0|graph_19}\n| {1|graph_20}\n", [19, 20]))
    ids = [n["id"] for g in graph.to_dict()["graphs"] for n in g["nodes"]]
    assert sorted(ids) == sorted({"graph_18_node_1", "graph_19_node_0", "graph_20_node_0"})
    assert CudaGraph.from_json(graph.to_json()).node("graph_18_node_1").conditional_type is ConditionalType.SWITCH


# -- bad input -----------------------------------------------------------------------------------
GOOD = dump(cluster(1, '"graph_1_node_0"[shape="rectangle" label="0\nEMPTY\n"];\n'))


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("", None, "empty"),
        ("   \n\n", None, "empty"),
        ('{"graphs": []}', 1, "not a CUDA graph DOT dump"),
        ("hello world", 1, "not a CUDA graph DOT dump"),
        ("digraph dot {\n}\n", None, "no CUDA graph"),
        (GOOD[:-3], 7, "missing '}'"),
        (GOOD.replace('EMPTY\n"', "EMPTY\n", 1), 4, "unterminated string"),
        ("digraph dot {\nsubgraph cluster_1 {\n\"a\" [label=\"x\x00\"];\n}\n}\n", 3, "binary"),
        (GOOD + "}\n", 9, "after the end"),
        (GOOD.replace("EMPTY", "FROBNICATE"), 4, "unknown node type"),
        (GOOD.replace("}\n}", '"graph_1_node_0" -> "graph_1_node_9";\n}\n}'), 7, "unknown node 'graph_1_node_9'"),
        (GOOD.replace("EMPTY", "graph_77"), 4, "not in the dump"),
        (GOOD.replace("}\n}", '"graph_1_node_0"[shape="rectangle" label="0\nEMPTY\n"];\n}\n}'), 7, "declared twice"),
        ('digraph dot {\n"graph_1_node_0"[label="0\nEMPTY\n"];\n}\n', 2, "outside every"),
        (GOOD.replace('label="0\nEMPTY\n"', 'label="{KERNEL | {ID | 0 | k}"'), 4, "unbalanced"),
        (GOOD.replace('label="0\nEMPTY\n"', 'label="0\nk\\<\\<\\<1,2\\>\\>\\>"').replace("rectangle", "octagon"), 4,
         "launch parameters"),
    ],
)
def test_bad_input_raises_one_dot_parse_error_with_line(text: str, line: int | None, words: str) -> None:
    with pytest.raises(DotParseError) as info:
        parse_dot(text, source="bad.dot")
    assert words in str(info.value)
    assert info.value.source == "bad.dot" and info.value.line == line
    assert str(info.value).startswith("bad.dot:" if line is None else f"bad.dot:{line}:")
    assert "\n" not in str(info.value)


def test_body_graph_owned_twice_or_cyclic_is_rejected() -> None:
    twice = dump(
        cluster(1, '"graph_1_node_0"[shape="rectangle" label="0\ngraph_2\n"];\n'
                   '"graph_1_node_1"[shape="rectangle" label="1\ngraph_2\n"];\n'),
        cluster(2, '"graph_2_node_0"[shape="rectangle" label="0\nEMPTY\n"];\n'),
    )
    with pytest.raises(DotParseError, match="body of two nodes"):
        parse_dot(twice)
    cyclic = dump(
        cluster(1, '"graph_1_node_0"[shape="rectangle" label="0\ngraph_2\n"];\n'),
        cluster(2, '"graph_2_node_0"[shape="rectangle" label="0\ngraph_1\n"];\n'),
    )
    with pytest.raises(DotParseError, match="cycle"):
        parse_dot(cyclic)


def test_edge_between_two_graphs_is_rejected() -> None:
    text = dump(
        cluster(1, '"graph_1_node_0"[shape="rectangle" label="0\ngraph_2\n"];\n'
                   '"graph_1_node_0" -> "graph_2_node_0";\n'),
        cluster(2, '"graph_2_node_0"[shape="rectangle" label="0\nEMPTY\n"];\n'),
    )
    with pytest.raises(DotParseError, match="two different graphs"):
        parse_dot(text)


def test_non_text_argument_is_a_dot_parse_error() -> None:
    with pytest.raises(DotParseError, match="expected DOT text"):
        parse_dot(b"digraph dot {}")  # type: ignore[arg-type]


def test_deep_nesting_is_a_dot_parse_error() -> None:
    with pytest.raises(DotParseError):
        parse_dot("digraph dot {" + "subgraph {" * 5000 + "}" * 5001)


def test_read_dot_file_errors(tmp_path) -> None:
    good = tmp_path / "good.dot"
    good.write_text(GOOD, encoding="utf-8")
    assert read_dot(good).source == str(good)
    with_bom = tmp_path / "bom.dot"
    with_bom.write_bytes(b"\xef\xbb\xbf" + GOOD.encode())
    assert len(read_dot(with_bom)) == 1
    binary = tmp_path / "binary.dot"
    binary.write_bytes(b"digraph dot {\n\xff\xfe\x00\x01")
    with pytest.raises(DotParseError, match="binary") as info:
        read_dot(binary)
    assert info.value.line == 2 and info.value.source == str(binary)
    with pytest.raises(gl.BadInputError, match="cannot read the DOT file .*missing.dot.*no such file") as missing:
        read_dot(tmp_path / "missing.dot")
    assert isinstance(missing.value, OSError) and missing.value.errno == errno.ENOENT  # what Python raised, kept
    with pytest.raises(gl.BadInputError, match="it is a folder"):
        read_dot(tmp_path)
