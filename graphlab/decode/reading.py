"""Reading a decode step's graph: which kernels write the KV cache.

    >>> gl.render(graph, highlight=gl.kv_cache_writes(graph))     # the cache update, coloured

Pure: reads a parsed `CudaGraph` (graphlab.graph.model).
"""
from __future__ import annotations

from typing import Any

#: words in a kernel's (demangled) name that mark an in-place write at an index: ATen's index_copy_ (eager),
#: Inductor's fused index_copy / scatter kernels (compiled)
CACHE_WRITE_WORDS = ("index_copy", "index_put", "scatter")


def kv_cache_writes(graph: Any) -> list[str]:
    """The ids of the kernel nodes that write the KV cache in place (index_copy / scatter kernels)."""
    found = []
    for node in graph.kernels():
        text = f"{node.demangled_name or ''} {node.name or ''}".lower()
        if any(w in text for w in CACHE_WRITE_WORDS):
            found.append(node.id)
    return found


__all__ = ["CACHE_WRITE_WORDS", "kv_cache_writes"]
