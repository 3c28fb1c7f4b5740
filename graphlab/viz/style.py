"""How a drawing looks: colours per kernel family, shapes per node kind, labels, tooltips, legend.

Pure: no torch, no graphviz (the Graphviz calls live in `drawing.py`).

Colours come from Paul Tol's colour-blind-safe "light" scheme (https://personal.sron.nl/~pault/),
pale enough that black text stays readable; matmul libraries are blues, attention is orange,
elementwise work yellow, reductions green, communication lavender, anything unknown grey.
"""
from __future__ import annotations

import html
import re
from typing import Any

from graphlab.graph.model import Node, NodeKind
from graphlab.present import size as _size

RepeatedBlockLike = Any  # graphlab.graph.structure.RepeatedBlock (id, count, period), or anything with those

# kernel family -> fill colour (legend order)
FAMILY_COLORS: dict[str, str] = {
    "cuBLAS": "#77AADD",  # light blue
    "CUTLASS": "#99DDFF",  # light cyan
    "cuDNN": "#44BB99",  # mint
    "attention": "#EE8866",  # orange
    "ATen elementwise": "#EEDD88",  # light yellow
    "ATen reduction": "#BBCC33",  # pear
    "ATen other": "#E5E5B0",  # pale olive
    "Triton": "#FFAABB",  # pink
    "NCCL": "#CCBBEE",  # lavender
    "other": "#DDDDDD",  # pale grey
}
NON_KERNEL_FILL = "#FFFFFF"
EMPTY_FILL = "#BBBBBB"

# node kind -> Graphviz shape
KIND_SHAPES: dict[NodeKind, str] = {
    NodeKind.KERNEL: "box",
    NodeKind.MEMCPY: "parallelogram",
    NodeKind.MEMSET: "trapezium",
    NodeKind.HOST: "hexagon",
    NodeKind.CHILD_GRAPH: "box3d",
    NodeKind.EMPTY: "circle",
    NodeKind.WAIT_EVENT: "invhouse",
    NodeKind.EVENT_RECORD: "house",
    NodeKind.EXT_SEMAS_SIGNAL: "cds",
    NodeKind.EXT_SEMAS_WAIT: "cds",
    NodeKind.MEM_ALLOC: "cylinder",
    NodeKind.MEM_FREE: "cylinder",
    NodeKind.BATCH_MEM_OP: "note",
    NodeKind.CONDITIONAL: "diamond",
}

# what a non-kernel node says on its first line
KIND_TITLES: dict[NodeKind, str] = {
    NodeKind.HOST: "host function",
    NodeKind.CHILD_GRAPH: "child graph",
    NodeKind.EMPTY: "",
    NodeKind.WAIT_EVENT: "wait event",
    NodeKind.EVENT_RECORD: "record event",
    NodeKind.EXT_SEMAS_SIGNAL: "signal ext. semaphore",
    NodeKind.EXT_SEMAS_WAIT: "wait ext. semaphore",
    NodeKind.MEM_ALLOC: "alloc",
    NodeKind.MEM_FREE: "free",
    NodeKind.BATCH_MEM_OP: "batch mem op",
}

# emphasis (Tol "vibrant" red for highlights; black double border for the selected node)
HIGHLIGHT_COLOR = "#CC3311"
SELECTED_COLOR = "#000000"
LINE_COLOR = "#555555"
EDGE_COLOR = "#888888"
FONT = "Helvetica"
BLOCK_FILL = "#F4F4F4"
BODY_FILL = "#FAFAFA"

# diff status -> fill colour (Tol light: grey, pale and full yellow, mint, orange)
STATUS_COLORS: dict[str, str] = {
    "same": "#EEEEEE",
    "launch changed": "#F6EFCB",
    "kernel changed": "#EEDD88",
    "added": "#44BB99",
    "removed": "#EE8866",
    "fused": "#99DDFF",  # one kernel standing for a run of them on the other side (torch.compile vs eager)
}
#: each family's and each diff status's colour in words, as docs/reading-a-drawing.md, the notebooks and the
#: inspector's hints name them
FAMILY_COLOUR_WORDS: dict[str, str] = {
    "cuBLAS": "light blue", "CUTLASS": "light cyan", "cuDNN": "mint", "attention": "orange",
    "ATen elementwise": "light yellow", "ATen reduction": "pear green", "ATen other": "pale olive", "Triton": "pink",
    "NCCL": "lavender", "other": "grey",
}
STATUS_COLOUR_WORDS: dict[str, str] = {
    "same": "grey", "launch changed": "pale yellow", "kernel changed": "yellow", "added": "mint", "removed": "orange",
    "fused": "light blue",
}
BLOCK_NOTE = "xN box: a block drawn once that ran N times in a row"

MAX_NAME_CHARS = 34  # longer short names are cut with an ellipsis; the tooltip has the full name


def slug(text: str) -> str:
    """CSS-class-friendly form: "ATen elementwise" -> "aten-elementwise"."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def family_of(node: Node) -> str | None:
    """The node's family for colouring (None for non-kernels; unknown families count as "other")."""
    if node.kind is not NodeKind.KERNEL:
        return None
    return node.family if node.family in FAMILY_COLORS else "other"


def fill_color(node: Node) -> str:
    fam = family_of(node)
    if fam is not None:
        return FAMILY_COLORS[fam]
    return EMPTY_FILL if node.kind is NodeKind.EMPTY else NON_KERNEL_FILL


def css_classes(node: Node) -> list[str]:
    """["kind-kernel", "family-cublas"]: lets the SVG DOM be mapped back to kinds and families."""
    out = [f"kind-{slug(node.kind.value)}"]
    fam = family_of(node)
    if fam is not None:
        out.append(f"family-{slug(fam)}")
    return out


def _clip(text: str, limit: int = MAX_NAME_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "\u2026"


def format_bytes(size_bytes: int) -> str:
    """1536 -> "1.50 KiB"; binary units, as CUDA allocations are (`graphlab.present.size`)."""
    return _size(size_bytes)


def _dim(dims: tuple[int, int, int]) -> str:
    """(16, 1, 1) -> "16"; (16, 8, 1) -> "16x8"."""
    parts = list(dims)
    while len(parts) > 1 and parts[-1] == 1:
        parts.pop()
    return "x".join(str(p) for p in parts)


def _detail_bytes(node: Node) -> int | None:
    for key in ("bytesize", "bytes", "size"):
        value = node.details.get(key)
        if value is not None and str(value).strip().isdigit():
            return int(str(value).strip())
    return None


def label_lines(node: Node) -> tuple[str, str]:
    """(main line, detail line) of a node's label; the detail line may be empty."""
    kind = node.kind
    if kind is NodeKind.KERNEL:
        name = node.short_name or _fallback_kernel_name(node)
        parts = []
        if node.grid is not None:
            parts.append(f"grid {_dim(node.grid)}")
        if node.block is not None:
            parts.append(f"block {_dim(node.block)}")
        if node.shared_bytes:
            parts.append(f"smem {format_bytes(node.shared_bytes)}")
        return _clip(name), " \u00b7 ".join(parts)
    if kind is NodeKind.MEMCPY:
        main = f"memcpy {node.copy_direction}" if node.copy_direction else "memcpy"
        return main, format_bytes(node.copy_bytes) if node.copy_bytes is not None else ""
    if kind is NodeKind.MEMSET:
        return "memset", format_bytes(node.memset_bytes) if node.memset_bytes is not None else ""
    if kind is NodeKind.CONDITIONAL:
        return (str(node.conditional_type) if node.conditional_type else "conditional"), ""
    size = _detail_bytes(node) if kind in (NodeKind.MEM_ALLOC, NodeKind.MEM_FREE) else None
    return KIND_TITLES.get(kind, kind.value), format_bytes(size) if size is not None else ""


def _fallback_kernel_name(node: Node) -> str:
    """A readable name when the dump gave no short name: the demangled name without scopes."""
    text = node.demangled_name or node.name or "kernel"
    depth, kept = 0, []
    for ch in text:  # drop template arguments and parameter lists
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth = max(0, depth - 1)
        elif depth == 0:
            kept.append(ch)
    base = "".join(kept).split()[-1] if "".join(kept).split() else text
    return base.rsplit("::", 1)[-1] or text


def html_label(main: str, detail: str, *, extra: str = "", on_dark: bool = False) -> str:
    """A Graphviz HTML-like label: the name, then a smaller grey detail line (light grey `on_dark` fills, where
    the node's `fontcolor` is white)."""
    grey = "#DDDDDD" if on_dark else "#444444"
    out = html.escape(main) if main else " "
    if detail:
        out += f'<BR/><FONT POINT-SIZE="8" COLOR="{grey}">{html.escape(detail)}</FONT>'
    if extra:
        out += f'<BR/><FONT POINT-SIZE="8" COLOR="{grey}"><I>{html.escape(extra)}</I></FONT>'
    return f"<{out}>"


def is_dark(color: str) -> bool:
    """A "#RRGGBB" fill on which black text is hard to read (relative luminance under 0.3).

        >>> is_dark("#7A0C14"), is_dark("#FFF3B0")
        (True, False)
    """
    if not (isinstance(color, str) and len(color) == 7 and color.startswith("#")):
        return False
    r, g, b = (int(color[i:i + 2], 16) / 255.0 for i in (1, 3, 5))
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2] < 0.3


def tooltip(node: Node, extra: str = "") -> str:
    """Hover text: the full demangled kernel name (or the kind), the family, `extra` (the heat map's GPU time),
    then the node id (what code selects it by).

    Lines are joined with Graphviz's `\\n` escape, so the DOT source keeps one line per node."""
    if node.kind is NodeKind.KERNEL:
        lines = [node.demangled_name or node.name or "kernel"]
        if node.family:
            lines.append(f"[{node.family}]")
    else:
        lines = [" ".join(p for p in (node.kind.value, label_lines(node)[1]) if p)]
    if extra:
        lines.append(extra)
    lines.append(f"id for code: {node.id}")
    return "\\n".join(line.replace("\\", "\\\\") for line in lines)


def block_words(block: "RepeatedBlockLike", blocks: "list[RepeatedBlockLike] | tuple[RepeatedBlockLike, ...]" = ()) -> str:
    """A repeated block in words, as a person reads it: "the repeated block (3 x 14 nodes)"; when the graph has
    several, "repeated block 2 of 3 (3 x 14 nodes)". Its id ("block_0") is for code only.

        >>> from types import SimpleNamespace as B
        >>> block_words(B(id="block_0", count=3, period=14))
        'the repeated block (3 x 14 nodes)'
        >>> block_words(B(id="block_1", count=2, period=5), [B(id="block_0"), B(id="block_1")])
        'repeated block 2 of 2 (2 x 5 nodes)'
    """
    shape = f"{block.count} x {block.period} nodes"
    ids = [b.id for b in blocks]
    if len(ids) > 1 and block.id in ids:
        return f"repeated block {ids.index(block.id) + 1} of {len(ids)} ({shape})"
    return f"the repeated block ({shape})"


def body_label(owner: Node, position: int) -> str:
    """Cluster title of the `position`-th body of `owner`: "IF body (true)", "WHILE body", "case 2"."""
    if owner.kind is NodeKind.CHILD_GRAPH:
        return "child graph body"
    ctype = str(owner.conditional_type) if owner.conditional_type else "conditional"
    if ctype == "SWITCH":
        return f"SWITCH case {position}"
    if ctype in ("IF", "IF/ELSE"):
        return f"{ctype} body ({'true' if position == 0 else 'false'})"
    if ctype == "WHILE":
        return "WHILE body"
    return f"{ctype} body {position}"


def title_label(title: str, entries: list[tuple[str, str]], *, heading: str = "", note: str = "",
                per_row: int = 4, table: str = "") -> str:
    """The drawing's title as an HTML table: the title, then the legend (colour swatch + name,
    `per_row` to a row), a note, and optionally another table (the diff summary) below.

    Putting the legend in the graph label keeps it out of the layout: as a node it would sit on
    the first rank and push the whole graph down."""
    esc = html.escape
    cells = [f'<TR><TD ALIGN="LEFT"><FONT POINT-SIZE="12">{esc(title)}</FONT></TD></TR>']
    if entries:
        row = [f'<TD ALIGN="LEFT"><B>{esc(heading)}</B></TD>'] if heading else []
        rows = []
        for i, (name, color) in enumerate(entries):
            if i and i % per_row == 0:
                rows.append(row)
                row = ["<TD></TD>"] if heading else []
            row.append(
                f'<TD BGCOLOR="{color}" BORDER="1" COLOR="#888888" WIDTH="14" HEIGHT="11" FIXEDSIZE="TRUE"></TD>'
                f'<TD ALIGN="LEFT">{esc(name)}  </TD>'
            )
        rows.append(row)
        inner = "".join(f"<TR>{''.join(r)}</TR>" for r in rows)
        cells.append(
            '<TR><TD ALIGN="LEFT"><TABLE BORDER="0" CELLBORDER="0" CELLSPACING="2" CELLPADDING="1">'
            f"{inner}</TABLE></TD></TR>"
        )
    if note:
        cells.append(f'<TR><TD ALIGN="LEFT"><FONT POINT-SIZE="9" COLOR="#444444">{esc(note)}</FONT></TD></TR>')
    if table:
        cells.append(f'<TR><TD ALIGN="LEFT">{table}</TD></TR>')
    return '<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="2">' + "".join(cells) + "</TABLE>>"


def diff_table(names: tuple[str, str], counts: dict[str, tuple[int, int]], lines: list[tuple[str, str]]) -> str:
    """The diff summary as an HTML table: node counts by kind (differing counts in yellow), then
    one line per difference, filled with its status colour (`lines`: (status, text))."""
    esc = html.escape
    cells = ['<TR><TD ALIGN="LEFT"><B>kind</B></TD>'
             f"<TD><B>{esc(names[0])}</B></TD><TD><B>{esc(names[1])}</B></TD></TR>"]
    for kind, (x, y) in counts.items():
        bg = f' BGCOLOR="{STATUS_COLORS["kernel changed"]}"' if x != y else ""
        cells.append(f'<TR><TD ALIGN="LEFT">{esc(kind)}</TD><TD{bg}>{x}</TD><TD{bg}>{y}</TD></TR>')
    for status, text in lines:
        bg = f' BGCOLOR="{STATUS_COLORS[status]}"' if status in STATUS_COLORS else ""
        cells.append(f'<TR><TD COLSPAN="3" ALIGN="LEFT"{bg}>{esc(_clip(text, 90))}</TD></TR>')
    return ('<TABLE BORDER="1" CELLBORDER="0" CELLSPACING="0" CELLPADDING="3" COLOR="#BBBBBB">'
            + "".join(cells) + "</TABLE>")


__all__ = ["BLOCK_FILL", "BLOCK_NOTE", "BODY_FILL", "FAMILY_COLOUR_WORDS", "STATUS_COLOUR_WORDS", "EDGE_COLOR", "EMPTY_FILL", "FAMILY_COLORS", "FONT",
           "HIGHLIGHT_COLOR", "KIND_SHAPES", "KIND_TITLES", "LINE_COLOR", "MAX_NAME_CHARS", "NON_KERNEL_FILL",
           "SELECTED_COLOR", "STATUS_COLORS", "block_words", "body_label", "css_classes", "diff_table", "family_of",
           "fill_color", "format_bytes", "html_label", "label_lines", "slug", "title_label", "tooltip"]
