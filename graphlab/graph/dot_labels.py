"""Read one node's label from a `cudaGraphDebugDotPrint` dump: its kind and every field it prints.

Pure (no torch): standard library only. Used by `graphlab.graph.dot_parser`.

Two label styles exist, and one dump can mix them (the flags pick per node type):

* terse: `shape="octagon" label="3\\nmy_kernel\\<\\<\\<32,128,0\\>\\>\\>\\n"`, one fact per line;
  memcpy/memset/rectangles are `"<i>\\nMEMCPY\\n(HtoD,4096)\\n"`, a child graph is `"<i>\\ngraph_7\\n"`;
* verbose: `shape="record"` with Graphviz record syntax, `{KERNEL | {ID | 1 (topoId: 3) | name...} |
  {{node handle | func handle} | {0x.. | 0x..}} | ...}`, where `\\{ \\} \\| \\< \\>` are escaped text.

`read_label` raises `_LabelError` (a ValueError) with a one-line reason; the parser turns it into a
`DotParseError` with the source and line.
"""
from __future__ import annotations

import functools
import re
from dataclasses import MISSING, fields
from typing import Union

from graphlab.graph.kernel_names import describe_kernel
from graphlab.graph.model import LABEL, ConditionalType, Dim3, Node, NodeKind, node_field_names


class _LabelError(ValueError):
    """A label this module cannot read; never leaves graphlab (the parser raises DotParseError instead)."""

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


_LABEL_FIELDS = node_field_names(source=LABEL)  # kind, topo_id, name, grid, ..., handle, details
_LABEL_DEFAULTS = {f.name: f.default for f in fields(Node) if f.name in _LABEL_FIELDS and f.default is not MISSING}


class NodeFields:
    """What a label says about a node, before it gets its id and graph.

    Its attributes (and nothing else) are the `Node` fields whose schema source is "label" (`node_field_names(source=
    "label")`: kind, topo_id, name, grid, ..., handle, details), so a field added to `Node` is one
    here too, plus `bodies`: (row key, graph id) pairs, ordered into `Node.body_graph_ids` by
    `to_node`.
    """

    def __init__(self, kind: NodeKind, bodies: list[tuple[str, str]] | None = None):
        self.__dict__.update(_LABEL_DEFAULTS)
        self.kind = kind
        self.details: dict[str, str] = {}
        self.bodies = [] if bodies is None else bodies

    def to_node(self, node_id: str, graph_id: str, index: int) -> Node:
        values = self.__dict__.copy()
        del values["bodies"]
        values["id"], values["graph_id"], values["index"] = node_id, graph_id, index
        values["body_graph_ids"] = self._ordered_bodies()
        if self.kind is NodeKind.KERNEL and self.name:
            kernel = describe_kernel(self.name)
            values["demangled_name"], values["short_name"], values["family"] = (
                kernel.demangled, kernel.short_name, kernel.family)
        return Node.from_parser(values)

    def _ordered_bodies(self) -> tuple[str, ...]:
        def rank(item: tuple[int, tuple[str, str]]) -> tuple[int, int]:
            position, (key, _) = item
            if key.lower() == "true":
                return (0, 0)
            if key.lower() == "false":
                return (0, 1)
            number = _case_number(key)
            return (0, number) if number is not None else (1, position)

        if not self.bodies:
            return ()
        return tuple(gid for _, (_, gid) in sorted(enumerate(self.bodies), key=rank))


# -- small value readers -------------------------------------------------------------------
_CASE_NUMBER = re.compile(r"-?[0-9]+")


def _case_number(key: str) -> int | None:
    """A SWITCH case key as a number ("-1", "3"), or None: only ASCII digits with one optional minus ("--0" and
    "²" are names, not numbers, though `str.isdigit` says yes to "²")."""
    return int(key) if _CASE_NUMBER.fullmatch(key) else None


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
        raise _LabelError(f"cannot read launch dimensions {text!r}")
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
    kernel = _KERNEL_CELLS.get(text)
    if kernel is None:
        kernel = _kernel_cell(text)
        if len(_KERNEL_CELLS) >= _CACHE_MAX:
            _KERNEL_CELLS.clear()
        _KERNEL_CELLS[text] = kernel
    fields.name, grid, block, shared_bytes = kernel
    if grid is not None:
        fields.grid, fields.block, fields.shared_bytes = grid, block, shared_bytes


def _kernel_cell(text: str) -> tuple[str, Dim3 | None, Dim3 | None, int | None]:
    start = text.find("<<<")
    if start < 0 or not text.rstrip().endswith(">>>"):
        return text.strip(), None, None, None
    return (text[:start].strip(), *_launch(text[start + 3 : text.rstrip().rfind(">>>")]))


_KERNEL_CELLS: dict[str, tuple[str, Dim3 | None, Dim3 | None, int | None]] = {}  # the same kernels repeat


@functools.lru_cache(maxsize=4096)
def _launch(params: str) -> tuple[Dim3, Dim3, int]:
    """'{16,10,2},128,0' -> grid, block, dynamic shared bytes (launch shapes repeat: cached)."""
    parts = _split_launch(params)
    if len(parts) != 3:
        raise _LabelError(f"cannot read kernel launch parameters <<<{params[:60]}>>>")
    shared_bytes = _int(parts[2])
    if shared_bytes is None:
        raise _LabelError(f"cannot read dynamic shared memory {parts[2][:40]!r}")
    return _dim3(parts[0]), _dim3(parts[1]), shared_bytes


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
                raise _LabelError("unbalanced '}' in a record label")
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
        raise _LabelError("unbalanced '{' in a record label")
    return stack[0]


@functools.lru_cache(maxsize=4096)
def _cached_cells(part: str) -> tuple[Tree, ...]:
    return tuple(_record_tree(part))


def _record_cells(label: str) -> list[Tree]:
    """The top-level cells of a record label (the full parse)."""
    tree = _unwrap(_record_tree(label))
    return tree if isinstance(tree, list) else [tree]


# A record is read row by row. A `Row` is its (key, value, plain) pairs and, when every pair is plain
# with its own key, the same as a dict ready for `details.update` (else None).
#
# Rows that differ from node to node are read without the general record parse (same result; kept so
# by tests/test_dot_fast_paths.py): `{ID | 3 (topoId: 84) | name\<\<\<...\>\>\>}` (split at its bars
# when spaced as the driver spaces it, else one regex) and `{{node handle | func handle} | {0x.. | 0x..}}`
# (any `{{keys} | {values}}` row). Every other row is read once and cached: rows such as
# `{cooperative | 0}` repeat from node to node.
_ID_ROW = re.compile(r"\s*\{\s*ID\s*\|([^{}|\\]*)\|([^{}|\\]*(?:\\[<>{}][^{}|\\]*)*)\}\s*")
_TWO_GROUP_ROW = re.compile(r"\s*\{\s*\{([^{}\\]*)\}\s*\|\s*\{([^{}\\]*)\}\s*\}\s*")
_PLAIN_CELL = re.compile(r"[^{}|\\]*")
_ID_NAME_CELL = re.compile(r"([^{}|\\]*(?:\\[<>{}][^{}|\\]*)*)\}\s*")  # the ID row's last cell and its '}'
_ID_NAMES: dict[str, str] = {}  # that cell -> the name text ("" when it is not one plain cell)
_ROW_CACHE: dict[str, Row] = {}
_HEAD_CACHE: dict[str, tuple[str | None, Row]] = {}
_GROUP_KEYS: dict[str, tuple[tuple[str, ...], tuple[bool, ...], bool] | None] = {}
_CACHE_MAX = 20_000  # entries; a cache this full is emptied and starts again


def _row(pairs: tuple[Pair, ...]) -> Row:
    keys = [key for key, _, plain in pairs if plain]
    if len(keys) == len(pairs) and len(set(keys)) == len(keys):
        return pairs, {key: value for key, value, _ in pairs}
    return pairs, None


def _group_keys(text: str) -> tuple[tuple[str, ...], tuple[bool, ...], bool] | None:
    """The key cells of a `{{k1 | k2} | {...}}` row, whether each key is plain, and whether all are
    and differ (cached: the keys repeat); None if a key cell is empty."""
    keys = _GROUP_KEYS.get(text)
    if keys is None and text not in _GROUP_KEYS:
        cells = tuple(k.strip() for k in text.split("|"))
        if all(cells):
            plain = tuple(_pair(k, "")[2] for k in cells)
            keys = (cells, plain, all(plain) and len(set(cells)) == len(cells))
        if len(_GROUP_KEYS) >= _CACHE_MAX:
            _GROUP_KEYS.clear()
        _GROUP_KEYS[text] = keys
    return keys


def _read_row(part: str) -> Row:
    """One line of a verbose record (a row, or several); _LabelError when it is not balanced on its own."""
    if part.startswith(" {ID | "):  # the driver's spacing: split the row, look its kernel cell up
        topo, bar, cell = part[7:].partition(" | ")
        if bar and _PLAIN_CELL.fullmatch(topo):
            name = _ID_NAMES.get(cell)
            if name is None:
                match = _ID_NAME_CELL.fullmatch(cell)
                name = match.group(1).replace("\\", "").strip() if match is not None else ""
                if len(_ID_NAMES) >= _CACHE_MAX:
                    _ID_NAMES.clear()
                _ID_NAMES[cell] = name
            topo = topo.strip()
            if name and topo:
                return (("ID", topo, False), ("ID", name, False)), None
    if part.startswith(" {ID "):
        match = _ID_ROW.fullmatch(part)
        if match is not None:
            topo, name = match.group(1).strip(), match.group(2).replace("\\", "").strip()
            if topo and name:
                return (("ID", topo, False), ("ID", name, False)), None
    elif part.startswith(" {{"):
        match = _TWO_GROUP_ROW.fullmatch(part)
        if match is not None:
            group = _group_keys(match.group(1))
            values_text = match.group(2)
            values = [v.strip() for v in values_text.split("|")]
            if group is not None and len(group[0]) == len(values) and all(values) and "graph_" not in values_text:
                keys, plain, as_dict = group  # no value names a graph: plain keys make plain pairs
                pairs = tuple(zip(keys, values, plain))
                return pairs, dict(zip(keys, values)) if as_dict else None
    row = _row(tuple(_pair(k, v) for cell in _cached_cells(part) for k, v in _row_pairs(cell)))
    if len(_ROW_CACHE) >= _CACHE_MAX:
        _ROW_CACHE.clear()
    _ROW_CACHE[part] = row
    return row


def _read_head(part: str) -> tuple[str | None, Row]:
    """The first line of a record: its header cell ("KERNEL"; None if it has none) and any row after it."""
    cells = _cached_cells(part)
    if cells and isinstance(cells[0], str):
        head = (cells[0], _row(tuple(_pair(k, v) for cell in cells[1:] for k, v in _row_pairs(cell))))
    else:
        head = (None, ((), None))
    if len(_HEAD_CACHE) >= _CACHE_MAX:
        _HEAD_CACHE.clear()
    _HEAD_CACHE[part] = head
    return head


def _record_rows(label: str) -> tuple[str, list[Row]]:
    """The header cell ("KERNEL", ...) and the rows of a record label.

    Fast path: the driver prints one top-level row per line (`\\n| {...}`), so the label is read line
    by line (`_read_row`, cached). Any label whose lines do not split into balanced rows goes through
    the full parse."""
    body = label.strip()
    cells: list[Tree] | None = None
    if body[:1] == "{" and body[-1:] == "}" and "\n|" in body:
        parts = body[1:-1].split("\n|")
        try:  # a part that is not balanced on its own raises, and the full parse decides
            header, head_row = _HEAD_CACHE.get(parts[0]) or _read_head(parts[0])
            if header is not None:  # the usual "KERNEL" line
                cached = _ROW_CACHE.get
                return header, [head_row, *[cached(part) or _read_row(part) for part in parts[1:]]]
            cells = [*_cached_cells(parts[0]), *(cell for part in parts[1:] for cell in _cached_cells(part))]
        except ValueError:
            cells = None
    if cells is None:
        cells = _record_cells(label)
    if not cells or not isinstance(cells[0], str):
        raise _LabelError("record label without a node type header")
    return cells[0], [(tuple(_pair(k, v) for cell in cells[1:] for k, v in _row_pairs(cell)), None)]


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
    header_cell, rows = _record_rows(label)
    fields = NodeFields(_header_kind(header_cell))
    # a kernel's ID row carries its name: {ID | 1 (topoId: 19) | name<<<...>>>}
    _apply_rows(fields, rows, kernel_name=fields.kind is NodeKind.KERNEL)
    return fields


@functools.lru_cache(maxsize=256)
def _header_kind(header_cell: str) -> NodeKind:
    words = header_cell.split()
    kind = KIND_WORDS.get(words[0].upper() if words else "")
    if kind is None:
        raise _LabelError(f"unknown node type {header_cell[:40]!r}")
    return kind


# -- terse (plain text) labels ---------------------------------------------------------------
def _read_plain(label: str, shape: str | None) -> NodeFields:
    lines = [_unescape(line).strip() for line in _LINE_SPLIT.split(label)]
    lines = [line for line in lines if line]
    if not lines:
        raise _LabelError("empty label")
    pairs: list[tuple[str, str]] = []
    if _ID_CELL.match(lines[0]):
        pairs.append(("ID", lines.pop(0)))
    if not lines:
        raise _LabelError(f"label {label[:40]!r} names no node type")
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
        raise _LabelError(f"unknown node type {head[:40]!r}")
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
    _apply_rows(fields, [(tuple(_pair(key, value) for key, value in pairs), None)], kernel_name=False)
    return fields


# -- shared field interpretation --------------------------------------------------------------
# keys `_apply_pairs` reads into model fields (lower case); a pair with none of them, a key, and a
# value that names no graph only lands in `details` ("plain")
_SPECIAL_KEYS = frozenset({"id", "topoid", "node handle", "conditional type", "type", "kind", "direction", "bytes",
                           "bytesize", "size", "count", "value", "elementsize", "width", "height"})
Pair = tuple[str, str, bool]
Row = tuple[tuple[Pair, ...], Union[dict[str, str], None]]


_PLAIN_KEYS: dict[str, bool] = {}


def _pair(key: str, value: str) -> Pair:
    """(key, value, plain): plain pairs go straight to `details`."""
    plain = _PLAIN_KEYS.get(key)
    if plain is None:
        plain = _PLAIN_KEYS[key] = bool(key) and key.lower() not in _SPECIAL_KEYS
        if len(_PLAIN_KEYS) > _CACHE_MAX:
            _PLAIN_KEYS.clear()
    return key, value, plain and not (value[:6] == "graph_" and _GRAPH_REF.match(value))


def _apply_rows(fields: NodeFields, rows: list[Row], *, kernel_name: bool) -> None:
    """Put known keys into model fields and every other one into `details`, row by row, in order.

    With `kernel_name`, the first pair keyed "ID" that follows another pair keyed "ID" is the
    kernel's `name<<<grid,block,smem>>>` cell (`_read_kernel_cell`), not a field.
    """
    details = fields.details
    memset: dict[str, int | None] = {}
    after_id = False  # the pair just read was keyed "ID"
    for pairs, as_dict in rows:
        if as_dict is not None and details.keys().isdisjoint(as_dict):  # only plain pairs: no ID either
            if as_dict:
                details.update(as_dict)
                after_id = False
            continue
        for key, value, plain in pairs:
            if kernel_name:
                if key == "ID" and after_id:
                    _read_kernel_cell(fields, value)
                    kernel_name = False
                    continue
                after_id = key == "ID"
            if plain and key not in details:
                details[key] = value
            elif key == "ID":  # as `_apply_pair` would, without the call
                topo = _TOPO.search(value)
                if topo:
                    fields.topo_id = int(topo.group(1))
            else:
                _apply_pair(fields, key, value, memset)
    _finish(fields, memset)


def _apply_pair(fields: NodeFields, key: str, value: str, memset: dict[str, int | None]) -> None:
    """One (key, value) pair that is not simply a new detail."""
    lowered = key.lower()
    if lowered == "id":
        topo = _TOPO.search(value)
        if topo:
            fields.topo_id = int(topo.group(1))
        return
    if lowered == "topoid":
        fields.topo_id = _int(value)
        return
    if lowered == "node handle":
        fields.handle = value
        return
    if fields.kind in (NodeKind.CONDITIONAL, NodeKind.CHILD_GRAPH) and _GRAPH_REF.match(value):
        fields.bodies.append((key, value))
        return
    if fields.kind is NodeKind.CONDITIONAL and lowered in ("conditional type", "type"):
        ctype = _CONDITIONAL_TYPES.get(value.strip().upper().replace(" ", ""))
        if ctype is None:
            raise _LabelError(f"unknown conditional type {value!r}")
        fields.conditional_type = ctype
        return
    if fields.kind is NodeKind.MEMCPY and lowered in ("kind", "direction"):
        word = value.split()[0] if value.split() else value
        fields.copy_direction = _DIRECTIONS.get(word.upper(), word)
    elif fields.kind is NodeKind.MEMCPY and lowered in ("bytes", "bytesize", "size", "count"):
        fields.copy_bytes = _int(value)
    elif fields.kind is NodeKind.MEMSET and lowered in ("value", "elementsize", "width", "height", "bytes"):
        memset[lowered] = _int(value)
    details = fields.details
    if key:
        if key in details and details[key] != value:
            suffix = 2
            while f"{key}#{suffix}" in details:
                suffix += 1
            key = f"{key}#{suffix}"
        details[key] = value
    elif value:
        details["text"] = f"{details['text']}\n{value}" if "text" in details else value


def _finish(fields: NodeFields, memset: dict[str, int | None]) -> None:
    """What follows from all pairs together: memset bytes, IF/ELSE, an omitted conditional type, copy bytes."""
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
        fields.copy_bytes = _extent_bytes(fields.details)


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


def clear_caches() -> None:
    """Forget every row, kernel cell and launch shape read so far (benchmarks start cold with it)."""
    for cache in (_ROW_CACHE, _HEAD_CACHE, _GROUP_KEYS, _ID_NAMES, _KERNEL_CELLS, _PLAIN_KEYS):
        cache.clear()
    for cached in (_cached_cells, _launch, _header_kind):
        cached.cache_clear()


def read_label(attrs: dict[str, str]) -> NodeFields:
    """The kind and fields of one node from its DOT attributes (`shape`, `label`)."""
    label = attrs.get("label")
    if label is None:
        raise _LabelError("node has no label")
    shape = attrs.get("shape")
    stripped = label.lstrip()
    if (shape or "").lower() in ("record", "mrecord") or stripped.startswith("{"):
        return _read_record(label, shape)
    return _read_plain(label, shape)


__all__ = ["KIND_WORDS", "NodeFields", "_GROUP_KEYS", "_HEAD_CACHE", "_ID_NAMES", "_KERNEL_CELLS", "_PLAIN_KEYS",
           "_ROW_CACHE", "clear_caches", "read_label"]
