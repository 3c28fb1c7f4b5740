"""Read one node's label from a `cudaGraphDebugDotPrint` dump: its kind and every field it prints.

Layer 0 (pure): standard library only. Used by `graphlab.core.dot_parser`.

Two label styles exist, and one dump can mix them (the flags pick per node type):

* terse: `shape="octagon" label="3\\nmy_kernel\\<\\<\\<32,128,0\\>\\>\\>\\n"`, one fact per line;
  memcpy/memset/rectangles are `"<i>\\nMEMCPY\\n(HtoD,4096)\\n"`, a child graph is `"<i>\\ngraph_7\\n"`;
* verbose: `shape="record"` with Graphviz record syntax, `{KERNEL | {ID | 1 (topoId: 3) | name...} |
  {{node handle | func handle} | {0x.. | 0x..}} | ...}`, where `\\{ \\} \\| \\< \\>` are escaped text.

`read_label` raises ValueError with a one-line reason; the parser adds source and line.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Union

from graphlab.core.kernel_names import describe_kernel
from graphlab.core.model import ConditionalType, Dim3, Node, NodeKind

# the header word each node type prints -> our kind (several spellings seen across drivers/flags)
KIND_WORDS: dict[str, NodeKind] = {
    "KERNEL": NodeKind.KERNEL,
    "MEMCPY": NodeKind.MEMCPY,
    "MEMSET": NodeKind.MEMSET,
    "HOST": NodeKind.HOST,
    "HOST_FUNC": NodeKind.HOST,
    "GRAPH": NodeKind.CHILD_GRAPH,
    "CHILD_GRAPH": NodeKind.CHILD_GRAPH,
    "EMPTY": NodeKind.EMPTY,
    "EVENT_WAIT": NodeKind.WAIT_EVENT,
    "WAIT_EVENT": NodeKind.WAIT_EVENT,
    "EVENT_RECORD": NodeKind.EVENT_RECORD,
    "EXT_SEMAS_SIGNAL": NodeKind.EXT_SEMAS_SIGNAL,
    "EXT_SEMAS_WAIT": NodeKind.EXT_SEMAS_WAIT,
    "EXTERNAL_SEMAPHORES_SIGNAL": NodeKind.EXT_SEMAS_SIGNAL,
    "EXTERNAL_SEMAPHORES_WAIT": NodeKind.EXT_SEMAS_WAIT,
    "MEM_ALLOC": NodeKind.MEM_ALLOC,
    "MEM_FREE": NodeKind.MEM_FREE,
    "BATCH_MEM_OP": NodeKind.BATCH_MEM_OP,
    "CONDITIONAL": NodeKind.CONDITIONAL,
}
_SHAPE_KIND = {"octagon": NodeKind.KERNEL, "trapezium": NodeKind.MEMCPY, "invtrapezium": NodeKind.MEMSET}
_CONDITIONAL_TYPES = {"IF": ConditionalType.IF, "IF/ELSE": ConditionalType.IF_ELSE, "IF_ELSE": ConditionalType.IF_ELSE,
                      "IFELSE": ConditionalType.IF_ELSE, "WHILE": ConditionalType.WHILE, "SWITCH": ConditionalType.SWITCH}
_DIRECTIONS = {"HTOD": "HtoD", "DTOH": "DtoH", "DTOD": "DtoD", "HTOH": "HtoH", "DEFAULT": "Default"}

_GRAPH_REF = re.compile(r"^graph_\d+$")
_ID_CELL = re.compile(r"^(\d+)\s*(?:\(topoId:\s*(-?\d+)\))?$")
_TOPO = re.compile(r"topoId:\s*(-?\d+)")
_PAREN_PAIR = re.compile(r"^\(\s*([^,()]+?)\s*,\s*([^,()]+?)\s*\)$")
_LINE_SPLIT = re.compile(r"\\[nlr]|\n")
_UNESCAPE = re.compile(r"\\(.)", re.DOTALL)

Tree = Union[str, list["Tree"]]


@dataclass
class NodeFields:
    """What a label says about a node, before it gets its id and graph."""

    kind: NodeKind
    topo_id: int | None = None
    name: str | None = None
    grid: Dim3 | None = None
    block: Dim3 | None = None
    shared_bytes: int | None = None
    copy_direction: str | None = None
    copy_bytes: int | None = None
    memset_bytes: int | None = None
    memset_value: int | None = None
    conditional_type: ConditionalType | None = None
    bodies: list[tuple[str, str]] = field(default_factory=list)  # (row key, graph id)
    handle: str | None = None
    details: dict[str, str] = field(default_factory=dict)

    def to_node(self, node_id: str, graph_id: str, index: int) -> Node:
        kernel = describe_kernel(self.name) if self.kind is NodeKind.KERNEL and self.name else None
        return Node(
            id=node_id, graph_id=graph_id, index=index, kind=self.kind, topo_id=self.topo_id,
            name=self.name, demangled_name=kernel.demangled if kernel else None,
            short_name=kernel.short_name if kernel else None, family=kernel.family if kernel else None,
            grid=self.grid, block=self.block, shared_bytes=self.shared_bytes,
            copy_direction=self.copy_direction, copy_bytes=self.copy_bytes,
            memset_bytes=self.memset_bytes, memset_value=self.memset_value,
            conditional_type=self.conditional_type, body_graph_ids=self._ordered_bodies(),
            handle=self.handle, details=self.details,
        )

    def _ordered_bodies(self) -> tuple[str, ...]:
        def rank(item: tuple[int, tuple[str, str]]) -> tuple[int, int]:
            position, (key, _) = item
            if key.lower() == "true":
                return (0, 0)
            if key.lower() == "false":
                return (0, 1)
            return (0, int(key)) if key.lstrip("-").isdigit() else (1, position)

        return tuple(gid for _, (_, gid) in sorted(enumerate(self.bodies), key=rank))


# -- small value readers -------------------------------------------------------------------
def _int(text: str) -> int | None:
    text = text.strip()
    try:
        return int(text, 16) if text.lower().startswith("0x") else int(text)
    except ValueError:
        return None


def _dim3(text: str) -> Dim3:
    parts = [p for p in text.strip().strip("{}").split(",")]
    values = [_int(p) for p in parts]
    if not 1 <= len(values) <= 3 or any(v is None for v in values):
        raise ValueError(f"cannot read launch dimensions {text!r}")
    return tuple(values + [1] * (3 - len(values)))  # type: ignore[return-value]


def _split_launch(params: str) -> list[str]:
    """'{16,10,2},128,0' -> ['{16,10,2}', '128', '0'] (commas inside braces stay)."""
    out, depth, start = [], 0, 0
    for i, char in enumerate(params):
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        elif char == "," and depth == 0:
            out.append(params[start:i])
            start = i + 1
    out.append(params[start:])
    return out


def _read_kernel_cell(fields: NodeFields, text: str) -> None:
    """'name<<<grid,block,smem>>>' or just 'name'."""
    start = text.find("<<<")
    if start < 0 or not text.rstrip().endswith(">>>"):
        fields.name = text.strip()
        return
    fields.name = text[:start].strip()
    params = text[start + 3 : text.rstrip().rfind(">>>")]
    parts = _split_launch(params)
    if len(parts) != 3:
        raise ValueError(f"cannot read kernel launch parameters <<<{params[:60]}>>>")
    fields.grid, fields.block = _dim3(parts[0]), _dim3(parts[1])
    fields.shared_bytes = _int(parts[2])
    if fields.shared_bytes is None:
        raise ValueError(f"cannot read dynamic shared memory {parts[2][:40]!r}")


def _unescape(text: str) -> str:
    return _UNESCAPE.sub(r"\1", text) if "\\" in text else text


# -- record labels --------------------------------------------------------------------------
_HIDE_ESCAPES = str.maketrans({"\x01": "\\", "\x02": "{", "\x03": "}", "\x04": "|"})
_RECORD_SPLIT = re.compile(r"([{}|])")


def _record_tree(label: str) -> list[Tree]:
    """Graphviz record text -> nested lists of cell texts (escapes removed, cells stripped)."""
    hidden = False
    if "\\" in label:  # hide escaped structure characters (input has no control characters)
        hidden = "\\\\" in label or "\\{" in label or "\\}" in label or "\\|" in label
        if hidden:
            label = label.replace("\\\\", "\x01").replace("\\{", "\x02").replace("\\}", "\x03").replace("\\|", "\x04")
    stack: list[list[Tree]] = [[]]
    top = stack[0]
    for piece in _RECORD_SPLIT.split(label):
        if piece == "{":
            top = []
            stack.append(top)
        elif piece == "}":
            if len(stack) == 1:
                raise ValueError("unbalanced '}' in a record label")
            done = stack.pop()
            top = stack[-1]
            top.append(done)
        elif piece != "|":
            cell = piece.strip()
            if cell:
                if "\\" in cell:
                    cell = _UNESCAPE.sub(r"\1", cell)
                if hidden:
                    cell = cell.translate(_HIDE_ESCAPES).strip()
                top.append(cell)
    if len(stack) != 1:
        raise ValueError("unbalanced '{' in a record label")
    return stack[0]


@functools.lru_cache(maxsize=4096)
def _cached_cells(part: str) -> tuple[Tree, ...]:
    return tuple(_record_tree(part))


def _record_cells(label: str) -> list[Tree]:
    """The top-level cells of a record label.

    Fast path: the driver prints one top-level row per line (`\\n| {...}`), and rows such as
    `{cooperative | 0}` repeat from node to node, so each line is parsed once and cached. Any label
    whose lines do not split into balanced rows goes through the full parse."""
    body = label.strip()
    if body.startswith("{") and body.endswith("}") and "\n|" in body:
        parts = body[1:-1].split("\n|")
        try:  # a part that is not balanced on its own raises, and the full parse decides
            return [cell for part in parts for cell in _cached_cells(part)]
        except ValueError:
            pass
    tree = _unwrap(_record_tree(label))
    return tree if isinstance(tree, list) else [tree]


def _unwrap(tree: Tree) -> Tree:
    while isinstance(tree, list) and len(tree) == 1:
        tree = tree[0]
    return tree


def _key_names(tree: Tree, prefix: str) -> list[str]:
    """Key cells of a header row; a pair [heading, group] names the group's keys
    ('{location | {type | id}}' -> 'location.type', 'location.id')."""
    if isinstance(tree, str):
        return [prefix + tree]
    if len(tree) == 2 and isinstance(tree[0], str) and isinstance(tree[1], list):
        return _key_names(tree[1], f"{prefix}{tree[0]}.")
    return [name for item in tree for name in _key_names(item, prefix)]


def _leaves(tree: Tree) -> list[str]:
    if isinstance(tree, str):
        return [tree]
    return [leaf for item in tree for leaf in _leaves(item)]


def _flat(tree: Tree) -> bool:
    return isinstance(tree, list) and all(isinstance(item, str) for item in tree)


def _row_pairs(row: Tree, prefix: str = "") -> list[tuple[str, str]]:
    """One record row -> (key, value) pairs, for every table layout the driver prints:
    `{key | value}`, `{{k1 | k2} | {v1 | v2}}`, `{name | {k1 | k2} | {v1 | v2}}`,
    `{{head1 | head2} | {sub1 | sub2 | sub1 | sub2} | {v1 | v2 | v3 | v4}}` and
    `{name | {{k1 | v1} | {k2 | v2}}}` (nested to any depth)."""
    row = _unwrap(row)
    if isinstance(row, str):
        return [(prefix.rstrip("."), row)]
    if not row:  # '{}'
        return []
    if _flat(row):
        key = prefix + row[0]  # type: ignore[operator]
        return [(key, value) for value in row[1:]] or [(prefix.rstrip("."), row[0])]  # type: ignore[misc]
    if len(row) == 2 and isinstance(row[0], list) and isinstance(row[1], list):
        keys, values = _key_names(row[0], prefix), _leaves(row[1])
        if len(keys) == len(values):
            return list(zip(keys, values))
    if len(row) == 3 and isinstance(row[0], str) and isinstance(row[1], list) and isinstance(row[2], list):
        keys, values = _key_names(row[1], f"{prefix}{row[0]}."), _leaves(row[2])
        if len(keys) == len(values):
            return list(zip(keys, values))
    if len(row) == 3 and all(_flat(item) for item in row):
        heads, subs, values = row
        if heads and len(subs) == len(values) and len(subs) % len(heads) == 0:
            per_head = len(subs) // len(heads)
            keys = [f"{prefix}{heads[i // per_head]}.{sub}" for i, sub in enumerate(subs)]
            return list(zip(keys, values))  # type: ignore[arg-type]
    if len(row) == 2 and isinstance(row[0], str) and isinstance(row[1], list):
        return [pair for item in row[1] for pair in _row_pairs(item, f"{prefix}{row[0]}.")]
    if all(isinstance(item, list) for item in row):
        return [pair for item in row for pair in _row_pairs(item, prefix)]
    return [(prefix.rstrip("."), " | ".join(_leaves(row)))]


def _read_record(label: str, shape: str | None) -> NodeFields:
    rows = _record_cells(label)
    if not rows or not isinstance(rows[0], str):
        raise ValueError("record label without a node type header")
    header = rows[0].split()[0] if rows[0].split() else ""
    kind = KIND_WORDS.get(header.upper())
    if kind is None:
        raise ValueError(f"unknown node type {rows[0][:40]!r}")
    fields = NodeFields(kind=kind)
    pairs = [pair for row in rows[1:] for pair in _row_pairs(row)]
    if kind is NodeKind.KERNEL:  # the ID row carries the name: {ID | 1 (topoId: 19) | name<<<...>>>}
        for i, (key, value) in enumerate(pairs):
            if key == "ID" and i + 1 < len(pairs) and pairs[i + 1][0] == "ID":
                _read_kernel_cell(fields, pairs[i + 1][1])
                del pairs[i + 1]
                break
    _apply_pairs(fields, pairs)
    return fields


# -- terse (plain text) labels ---------------------------------------------------------------
def _read_plain(label: str, shape: str | None) -> NodeFields:
    lines = [_unescape(line).strip() for line in _LINE_SPLIT.split(label)]
    lines = [line for line in lines if line]
    if not lines:
        raise ValueError("empty label")
    pairs: list[tuple[str, str]] = []
    if _ID_CELL.match(lines[0]):
        pairs.append(("ID", lines.pop(0)))
    if not lines:
        raise ValueError(f"label {label[:40]!r} names no node type")
    head = lines.pop(0)
    kind = KIND_WORDS.get(head.upper())
    shape_kind = _SHAPE_KIND.get((shape or "").lower())
    if shape_kind is NodeKind.KERNEL:  # octagon: the line is the kernel's name, whatever it says
        fields = NodeFields(kind=NodeKind.KERNEL)
        _read_kernel_cell(fields, head)
    elif _GRAPH_REF.match(head) and shape_kind is None:
        fields = NodeFields(kind=NodeKind.CHILD_GRAPH, bodies=[("", head)])
    elif kind is not None:
        fields = NodeFields(kind=kind)
    else:
        raise ValueError(f"unknown node type {head[:40]!r}")
    for line in lines:
        paren = _PAREN_PAIR.match(line)
        if paren and fields.kind in (NodeKind.MEMCPY, NodeKind.MEMSET):
            first, second = paren.groups()
            if fields.kind is NodeKind.MEMCPY:
                pairs += [("kind", first), ("bytes", second)]
            else:
                pairs += [("value", first), ("bytes", second)]  # terse memset: (value, total bytes)
        elif ":" in line:
            key, _, value = line.partition(":")
            pairs.append((key.strip(), value.strip()))
        elif fields.kind is NodeKind.KERNEL and line.startswith("<<<"):
            _read_kernel_cell(fields, (fields.name or "") + line)
        else:
            pairs.append(("", line))
    _apply_pairs(fields, pairs)
    return fields


# -- shared field interpretation --------------------------------------------------------------
def _apply_pairs(fields: NodeFields, pairs: list[tuple[str, str]]) -> None:
    """Put known keys into model fields and every other one into `details`."""
    details = fields.details
    memset: dict[str, int | None] = {}
    for key, value in pairs:
        lowered = key.lower()
        if lowered == "id":
            topo = _TOPO.search(value)
            if topo:
                fields.topo_id = int(topo.group(1))
            continue
        if lowered == "topoid":
            fields.topo_id = _int(value)
            continue
        if lowered == "node handle":
            fields.handle = value
            continue
        if _GRAPH_REF.match(value) and fields.kind in (NodeKind.CONDITIONAL, NodeKind.CHILD_GRAPH):
            fields.bodies.append((key, value))
            continue
        if fields.kind is NodeKind.CONDITIONAL and lowered in ("conditional type", "type"):
            ctype = _CONDITIONAL_TYPES.get(value.strip().upper().replace(" ", ""))
            if ctype is None:
                raise ValueError(f"unknown conditional type {value!r}")
            fields.conditional_type = ctype
            continue
        if fields.kind is NodeKind.MEMCPY and lowered in ("kind", "direction"):
            word = value.split()[0] if value.split() else value
            fields.copy_direction = _DIRECTIONS.get(word.upper(), word)
        elif fields.kind is NodeKind.MEMCPY and lowered in ("bytes", "bytesize", "size", "count"):
            fields.copy_bytes = _int(value)
        elif fields.kind is NodeKind.MEMSET and lowered in ("value", "elementsize", "width", "height", "bytes"):
            memset[lowered] = _int(value)
        if key:
            if key in details and details[key] != value:
                suffix = 2
                while f"{key}#{suffix}" in details:
                    suffix += 1
                key = f"{key}#{suffix}"
            details[key] = value
        elif value:
            details["text"] = f"{details['text']}\n{value}" if "text" in details else value
    if fields.kind is NodeKind.MEMSET:
        fields.memset_value = memset.get("value")
        width = memset.get("width")
        if memset.get("bytes") is not None:
            fields.memset_bytes = memset["bytes"]
        elif width is not None:
            fields.memset_bytes = width * (memset.get("elementsize") or 1) * (memset.get("height") or 1)
    if fields.conditional_type is ConditionalType.IF and len(fields.bodies) == 2:
        fields.conditional_type = ConditionalType.IF_ELSE  # CUDA 12.8+: an IF with an else body
    if fields.kind is NodeKind.CONDITIONAL and fields.conditional_type is None:
        fields.conditional_type = _infer_conditional_type(fields.bodies)
    if fields.kind is NodeKind.MEMCPY and fields.copy_bytes is None:
        fields.copy_bytes = _extent_bytes(details)


def _infer_conditional_type(bodies: list[tuple[str, str]]) -> ConditionalType | None:
    """When the dump omits the type: True/False rows mean IF(/ELSE), numbered rows mean SWITCH."""
    keys = [key.lower() for key, _ in bodies]
    if "false" in keys:
        return ConditionalType.IF_ELSE
    if "true" in keys:
        return ConditionalType.IF
    if keys and all(key.isdigit() for key in keys):
        return ConditionalType.SWITCH
    return None


def _extent_bytes(details: dict[str, str]) -> int | None:
    """Bytes of a verbose memcpy from its extent (width is in bytes for linear memory)."""
    dims: list[int] = []
    for name in ("width", "height", "depth"):
        for key, value in details.items():
            if key.lower().rsplit(".", 1)[-1] == name and "extent" in key.lower():
                number = _int(value)
                if number is not None:
                    dims.append(number)
                break
    if not dims:
        return None
    total = 1
    for dim in dims:
        total *= max(dim, 1)
    return total


def read_label(attrs: dict[str, str]) -> NodeFields:
    """The kind and fields of one node from its DOT attributes (`shape`, `label`)."""
    label = attrs.get("label")
    if label is None:
        raise ValueError("node has no label")
    shape = attrs.get("shape")
    stripped = label.lstrip()
    if (shape or "").lower() in ("record", "mrecord") or stripped.startswith("{"):
        return _read_record(label, shape)
    return _read_plain(label, shape)
