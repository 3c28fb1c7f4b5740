"""Nodes whose verbose labels differ only in their id, topological id and node handle, read once.

Pure (no torch): standard library only.

A decoder's graph is the same few kernels again and again: with the verbose flags the driver writes each node as
a record whose first rows carry what is the node's own (its index, `topoId` and node handle) and whose rest is
the same for every launch of that kernel (its name and launch shape, its function handle, the access policy,
...). `LabelTemplates` reads the first such label of each kind through the full label reader
(`graphlab.graph.dot_labels`) and keeps the node it made as a template, keyed by everything in the label but
the node's own values; a later label with the same key becomes a copy of it with its own id, `topo_id` and
`handle` (5 µs where the full reader takes about 15: bench/README.md). A template is kept only when the full
reader put this node's own values exactly there (its `topo_id` and `handle` those the label's first rows hold),
so it never says anything the full reader would not: `tests/test_dot_pieces.py` reads every fixture both ways.

Two layouts are recognised (anything else goes to the full reader):
    {KERNEL\\n| {ID | 3 (topoId: 7) | name\\<\\<\\<...\\>\\>\\>}\\n| {{node handle | func handle} | {0x... | ...
    {\\nMEMCPY\\n| {{ID | node handle} | {0 (topoId: 10) | 0x...}}...
"""
from __future__ import annotations

import re
from typing import Any

from graphlab.graph.model import Node

#: templates kept; a table this full is emptied and starts again (a dump whose labels never repeat)
TEMPLATES_MAX = 4096

_KERNEL_HEAD = re.compile(r"\{KERNEL\n\| \{ID \| [0-9]+ \(topoId: ([0-9]+)\) \| ([^\n]*?)\}\n"
                          r"\| \{\{node handle \| func handle\} \| \{(0x[0-9A-Fa-f]+) \| ")
_ROW_HEAD = re.compile(r"\{\n([A-Z_]+)\n\| \{\{ID \| node handle\} \| \{[0-9]+ \(topoId: ([0-9]+)\) \| (0x[0-9A-Fa-f]+)\}\}")
_OWN = ("id", "graph_id", "index", "topo_id", "handle")  # what a template's copy gets of its own


class LabelTemplates:
    """The templates of one parse (see the module docstring)."""

    def __init__(self) -> None:
        self.known: dict[tuple[str, str], dict[str, Any] | None] = {}  # None: this layout did not hold

    @staticmethod
    def key_of(attrs: dict[str, str]) -> tuple[tuple[str, str], str, str] | None:
        """(template key, topo id text, node handle) of a label in one of the two layouts; None otherwise."""
        label = attrs.get("label")
        if label is None or attrs.get("shape") != "record":
            return None
        match = _KERNEL_HEAD.match(label)
        if match is not None:
            topo, constant, handle = match.groups()
        else:
            match = _ROW_HEAD.match(label)
            if match is None:
                return None
            constant, topo, handle = match.groups()
        return (constant, label[match.end():]), topo, handle

    def node(self, key: tuple[str, str], topo: str, handle: str, node_id: str, graph_id: str, index: int) -> Node | None:
        """The node of a label whose template is known; None when it is not (read it in full, then `learn`)."""
        template = self.known.get(key)
        if template is None:
            return None
        values = template.copy()
        values["details"] = dict(template["details"])  # every node its own
        values["id"], values["graph_id"], values["index"] = node_id, graph_id, index
        values["topo_id"], values["handle"] = int(topo), handle
        return Node.from_parser(values)

    def learn(self, key: tuple[str, str], topo: str, handle: str, node: Node) -> None:
        """Keep what the full reader made of this label as its key's template, if its own values are where the
        layout says (else remember that this key has none)."""
        if key in self.known:
            return
        if len(self.known) >= TEMPLATES_MAX:
            self.known.clear()
        ok = node.topo_id == int(topo) and node.handle == handle and "details" in node.__dict__
        self.known[key] = {k: v for k, v in node.__dict__.items() if k not in _OWN} if ok else None


__all__ = ["TEMPLATES_MAX", "LabelTemplates"]
