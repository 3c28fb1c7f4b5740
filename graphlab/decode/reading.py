"""Reading a decode step's graph: which kernels write the KV cache, and what kinds of kernel the step is made of.

    >>> gl.decode_step_kernels(graph)                               # kernels by family, the cache writes counted
    >>> gl.render(graph, highlight=gl.kv_cache_writes(graph))     # the cache update, coloured

Pure: reads a parsed `CudaGraph` (graphlab.graph.model).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from graphlab.present import Column, Table, count
from graphlab.present import ShownAsTable

#: words in a kernel's (demangled) name that mark an in-place write at an index: ATen's index_copy_ (eager),
#: Inductor's fused index_copy / scatter kernels (compiled)
CACHE_WRITE_WORDS = ("index_copy", "index_put", "scatter")


def _writes(node: Any) -> bool:
    text = f"{node.demangled_name or ''} {node.name or ''}".lower()
    return any(w in text for w in CACHE_WRITE_WORDS)


def kv_cache_writes(graph: Any) -> list[str]:
    """The ids of the kernel nodes that write the KV cache in place (index_copy / scatter kernels)."""
    return [node.id for node in graph.kernels() if _writes(node)]


@dataclass(repr=False)
class StepKernels(ShownAsTable):
    """The kernels of one decode step's graph: how many, of which family, and how many write the KV cache.
    Shows itself as a table (kernels by family) titled with the counts in words."""

    source: str
    by_family: dict[str, int] = field(default_factory=dict)      #: family -> kernels, most first
    writes_by_family: dict[str, int] = field(default_factory=dict)  #: family -> kernels that write the KV cache
    recorded: str = ""                                          #: "recorded on <GPU> on <date>", or "" (live)

    @property
    def kernels(self) -> int:
        return sum(self.by_family.values())

    @property
    def cache_writes(self) -> int:
        return sum(self.writes_by_family.values())

    def __repr__(self) -> str:
        return str(self)

    def table(self) -> Table:
        rows = [{"family": family, "kernels": n, "writes": self.writes_by_family.get(family, 0)}
                for family, n in self.by_family.items()]
        where = f" ({self.recorded})" if self.recorded else ""
        title = (f"{self.source}: {count(self.kernels)} kernels, {count(self.cache_writes)} of them write the KV "
                 f"cache{where}")
        return Table(rows, [Column("family", "kernel family", kind="text"), Column("kernels", "kernels", kind="count"),
                            Column("writes", "of them write the KV cache", kind="count")],
                     index="family", title=title,
                     notes=["A KV cache write is a kernel whose name says index_copy, index_put or scatter: it writes "
                            "this step's keys or values at the cache position (`gl.kv_cache_writes(graph)` lists "
                            "them)."])


def decode_step_kernels(graph: Any) -> StepKernels:
    """The kernels of a decode step's graph by family, with the KV cache writes counted (`StepKernels`)."""
    kernels = graph.kernels()
    by_family = dict(Counter(n.family or "other" for n in kernels).most_common())
    writes = Counter(n.family or "other" for n in kernels if _writes(n))
    recorded = str((getattr(graph, "metadata", None) or {}).get("recorded", ""))
    return StepKernels(str(graph.source), by_family, {f: writes[f] for f in by_family if writes[f]}, recorded)


__all__ = ["CACHE_WRITE_WORDS", "StepKernels", "decode_step_kernels", "kv_cache_writes"]
