"""Which module launched each node: the capture's node count read at every module's forward start and end.

Pure: standard library only. At capture, a forward pre-hook and a forward hook on every `nn.Module` read how many
nodes the graph under capture holds (`cudaStreamGetCaptureInfo` then `cudaGraphGetNodes`; `graphlab.capture.module_recorder`,
which writes `ModuleSpan`s: `graphlab.capture.module_spans`).
Nodes are created in capture order and the DOT numbers them in that order (`Node.index`), so the nodes created
while module M's forward ran are exactly those with `start <= index < end` of M's span; a node belongs to the
innermost module whose span holds it. This is exact for any model, whatever its launches, as long as each module's
forward runs in one piece (a module called twice gives two spans, both counted).

    >>> spans = [ModuleSpan("", 0, 4), ModuleSpan("0", 0, 2), ModuleSpan("1", 2, 4)]
    >>> assign_modules(spans, range(5))
    {0: '0', 1: '0', 2: '1', 3: '1', 4: None}
"""
from __future__ import annotations

from typing import Iterable

from graphlab.capture.module_spans import ModuleSpan

#: what a node outside every module's forward is attributed to
OUTSIDE = "(outside any module)"


def assign_modules(spans: Iterable[ModuleSpan], indexes: Iterable[int]) -> dict[int, str | None]:
    """node index -> the innermost module whose span holds it (the shortest span; on a tie the deepest path),
    or None when no span holds it."""
    ordered = sorted(spans, key=lambda s: (s.end - s.start, -s.path.count(".") - (s.path != "")))
    out: dict[int, str | None] = {}
    for index in indexes:
        out[index] = next((s.path for s in ordered if s.start <= index < s.end), None)
    return out


def module_prefix(path: str, depth: int | None) -> str:
    """`path` cut to its first `depth` dotted parts ("blocks.1.mlp.0", 2 -> "blocks.1"); None keeps it whole."""
    if depth is None or not path or path == OUTSIDE:
        return path
    return ".".join(path.split(".")[:depth])


__all__ = ["OUTSIDE", "ModuleSpan", "assign_modules", "module_prefix"]
