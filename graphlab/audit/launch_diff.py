"""Two graphs of one target, captured at two draws, compared kernel by kernel: name, grid, block, shared memory and,
where the driver gave the layout, the argument words (`arg_words.baked_words`).

Pure: standard library only. The GPU side (`audit/kernel_args.py`) reads the launches; this module decides what
changed. Kernels are aligned by name in capture order (`difflib`), so a kernel added or dropped at one draw (control
flow that depends on a value) is reported as a change of structure rather than shifting every comparison after it.

    >>> a = [KernelLaunch(0, "mul", (4, 1, 1), (128, 1, 1), 0, (0x10, 3))]
    >>> b = [KernelLaunch(0, "mul", (4, 1, 1), (128, 1, 1), 0, (0x10, 5))]
    >>> compare_launches(a, b, AddressSpace()).changes[0].baked[0].kind
    'integer'
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Sequence

from graphlab.audit.arg_words import AddressSpace, BakedWord, baked_words


@dataclass(frozen=True)
class KernelLaunch:
    """One kernel node as the graph API reports it.

    Attributes:
        index: its index among the graph's nodes, in capture order (module spans count in the same order).
        name: the kernel's name (mangled or short).
        grid, block: launch dimensions; shared_bytes: dynamic shared memory.
        words: its argument buffer as 8-byte words, or None when the driver gave no layout.
        node: its DOT id where known ("graph_1_node_12"), else "".
    """

    index: int
    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    words: tuple[int, ...] | None = None
    node: str = ""


@dataclass(frozen=True)
class LaunchChange:
    """A kernel whose launch differs between graph A and graph B: what changed (in words) and the baked words."""

    a: KernelLaunch
    b: KernelLaunch
    changes: tuple[str, ...] = ()
    baked: tuple[BakedWord, ...] = ()

    @property
    def baked_kind(self) -> str:
        """ "address" when a baked word is a pointer, else "value"."""
        return "address" if any(w.kind == "pointer" for w in self.baked) else "value"


@dataclass(frozen=True)
class LaunchComparison:
    """What differs between the two graphs.

    Attributes:
        changes: kernels whose launch changed (dimensions, or baked argument words).
        structure: "" when both graphs launch the same kernels in the same order, else what differs in words.
        kernels: kernel nodes aligned between the graphs; compared: how many of them had argument words on both
            sides (the rest were compared by name, grid, block and shared memory only).
    """

    changes: tuple[LaunchChange, ...] = ()
    structure: str = ""
    kernels: int = 0
    compared: int = 0
    only_a: tuple[KernelLaunch, ...] = field(default=(), repr=False)
    only_b: tuple[KernelLaunch, ...] = field(default=(), repr=False)


def _changes(a: KernelLaunch, b: KernelLaunch) -> tuple[str, ...]:
    out = []
    if a.grid != b.grid:
        out.append(f"grid {'x'.join(map(str, a.grid))} -> {'x'.join(map(str, b.grid))}")
    if a.block != b.block:
        out.append(f"block {'x'.join(map(str, a.block))} -> {'x'.join(map(str, b.block))}")
    if a.shared_bytes != b.shared_bytes:
        out.append(f"shared memory {a.shared_bytes:,} -> {b.shared_bytes:,} bytes")
    return tuple(out)


def compare_launches(a: Sequence[KernelLaunch], b: Sequence[KernelLaunch], space: AddressSpace,
                     again: Sequence[KernelLaunch] | None = None) -> LaunchComparison:
    """Compare graph A's kernel launches with graph B's (see the module docstring).

    Args:
        a, b: the kernels of each graph, in capture order.
        space: what the argument addresses may point at.
        again: the kernels of a second capture at A's draw, to tell noise from baked words (same order as `a`).
    """
    matcher = difflib.SequenceMatcher(a=[k.name for k in a], b=[k.name for k in b], autojunk=False)
    again_by_index = {k.index: k for k in again} if again is not None and len(again) == len(a) else {}
    if again_by_index:
        again_by_index = {ka.index: kg for ka, kg in zip(a, again) if ka.name == kg.name}
    changes: list[LaunchChange] = []
    aligned = compared = 0
    only_a: list[KernelLaunch] = []
    only_b: list[KernelLaunch] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            only_a.extend(a[i1:i2])
            only_b.extend(b[j1:j2])
            continue
        for ka, kb in zip(a[i1:i2], b[j1:j2]):
            aligned += 1
            dims = _changes(ka, kb)
            baked: list[BakedWord] = []
            if ka.words is not None and kb.words is not None and len(ka.words) == len(kb.words):
                compared += 1
                again_words = again_by_index.get(ka.index)
                baked = baked_words(ka.words, kb.words, space,
                                    again_words.words if again_words is not None else None)
            if dims or baked:
                changes.append(LaunchChange(ka, kb, dims, tuple(baked)))
    structure = ""
    if only_a or only_b:
        structure = (f"the graphs launch different kernels: {len(only_a)} only at the first draw, {len(only_b)} only "
                     "at the second (control flow or a kernel choice that depends on the inputs)")
    return LaunchComparison(tuple(changes), structure, aligned, compared, tuple(only_a), tuple(only_b))


__all__ = ["KernelLaunch", "LaunchChange", "LaunchComparison", "compare_launches"]
