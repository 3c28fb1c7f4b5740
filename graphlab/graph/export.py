"""Export a captured torch CUDA graph as DOT text through `cudaGraphDebugDotPrint`.

Two paths, chosen by feature detection:

1. cuda-bindings present and the graph was captured with `keep_graph=True`: call
   `cuda.bindings.runtime.cudaGraphDebugDotPrint(g.raw_cuda_graph(), path, flags)`, with any flags.
2. Otherwise torch's own `g.debug_dump(path)` (flags fixed to Verbose = 1). On torch 2.11 it writes a
   file only for `keep_graph=True` graphs (or graphs captured after `enable_debug_mode()`), so
   `capture` always asks for `keep_graph=True` where the constructor takes it.

It needs no torch import of its own (it calls methods of the graph it is given); cuda-bindings is optional and
imported where it is used.
"""
from __future__ import annotations

import importlib.util
import os
import tempfile
from pathlib import Path
from typing import Any

from graphlab.errors import BadInputError, UnsupportedError

# cudaGraphDebugDotFlags (runtime) and CUgraphDebugDot_flags (driver-only values marked)
DOT_FLAGS: dict[str, int] = {
    "verbose": 1,
    "runtime_types": 2,  # driver-only value, honoured by the runtime call
    "kernel_node_params": 4,
    "memcpy_node_params": 8,
    "memset_node_params": 16,
    "host_node_params": 32,
    "event_node_params": 64,
    "ext_semas_signal_node_params": 128,
    "ext_semas_wait_node_params": 256,
    "kernel_node_attributes": 512,
    "handles": 1024,
    "mem_alloc_node_params": 2048,  # driver-only
    "mem_free_node_params": 4096,  # driver-only
    "batch_mem_op_node_params": 8192,  # driver-only
    "extra_topo_info": 16384,  # driver-only
    "conditional_node_params": 32768,
}

#: The default: Verbose prints every node's parameters (kernel grid/block/shared memory, memcpy
#: direction and size, memset value, event handles, topological ids) in one dump, and it is the
#: flag torch's own `debug_dump` uses, so both export paths produce the same text.
DEFAULT_DOT_FLAGS = DOT_FLAGS["verbose"]


def parse_flags(flags: int | str | list[str] | tuple[str, ...] | None) -> int:
    """Flags as an int: 5, "verbose", "verbose|handles", ["kernel_node_params", "handles"]."""
    if flags is None:
        return DEFAULT_DOT_FLAGS
    if isinstance(flags, int):
        if flags < 0:
            raise BadInputError(f"DOT flags must be a non-negative int, got {flags}")
        return flags
    names = flags.replace(",", "|").split("|") if isinstance(flags, str) else list(flags)
    value = 0
    for raw in names:
        name = raw.strip().lower().replace("-", "_")
        if not name:
            continue
        if name.isdigit():
            value |= int(name)
        elif name in DOT_FLAGS:
            value |= DOT_FLAGS[name]
        else:
            raise BadInputError(f"unknown DOT flag {raw!r}; use an int or names from {', '.join(DOT_FLAGS)}")
    return value


def has_cuda_bindings() -> bool:
    """True when `cuda.bindings.runtime` can be imported."""
    try:
        return importlib.util.find_spec("cuda.bindings") is not None
    except (ImportError, ValueError):
        return False


def raw_graph_handle(torch_graph: Any) -> int | None:
    """The `cudaGraph_t` of a torch CUDAGraph as an int, or None when torch did not keep it."""
    getter = getattr(torch_graph, "raw_cuda_graph", None)
    if getter is None:
        return None
    try:
        return int(getter())
    except RuntimeError:  # "...unless CUDAGraph was initialized with keep_graph=true"
        return None


def check_cuda(result: Any, what: str) -> Any:
    """Unpack a cuda-bindings result tuple (err, *values); raise UnsupportedError on a CUDA error (the driver
    refused to read or write the graph here)."""
    err, *values = result if isinstance(result, tuple) else (result,)
    if int(err) != 0:
        raise UnsupportedError(f"{what} failed with {err!r}: this driver cannot do it for this graph")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def dot_from_handle(handle: int, flags: int = DEFAULT_DOT_FLAGS) -> str:
    """DOT text of a raw `cudaGraph_t` (an int), through cuda-bindings."""
    from cuda.bindings import runtime as rt

    fd, path = tempfile.mkstemp(suffix=".dot", prefix="graphlab-")
    os.close(fd)
    try:
        check_cuda(rt.cudaGraphDebugDotPrint(handle, path.encode(), flags), "cudaGraphDebugDotPrint")
        return Path(path).read_text(encoding="utf-8", errors="replace")
    finally:
        Path(path).unlink(missing_ok=True)


def dump_dot(torch_graph: Any, flags: int | str | None = None) -> str:
    """DOT text of a captured `torch.cuda.CUDAGraph`.

    Args:
        torch_graph: the graph; captured with `keep_graph=True` for the cuda-bindings path.
        flags: `cudaGraphDebugDotFlags` as an int or names (see `DOT_FLAGS`); default Verbose (1).

    Raises:
        UnsupportedError: neither path can write the graph (says what to install or change).
    """
    value = parse_flags(flags)
    handle = raw_graph_handle(torch_graph)
    if handle is not None and has_cuda_bindings():
        return dot_from_handle(handle, value)
    if not hasattr(torch_graph, "debug_dump"):
        raise UnsupportedError("this torch cannot export graphs: install cuda-bindings (pip install cuda-bindings)")
    if value != DOT_FLAGS["verbose"]:
        raise UnsupportedError(
            f"DOT flags {value} need cuda-bindings (pip install cuda-bindings); without it only flags=1 "
            "(torch's debug_dump) is available"
        )
    fd, path = tempfile.mkstemp(suffix=".dot", prefix="graphlab-")
    os.close(fd)
    Path(path).unlink()
    try:
        torch_graph.debug_dump(path)
        if not Path(path).is_file():
            raise UnsupportedError(
                "torch's debug_dump wrote no file: the graph was not kept after capture. Capture with "
                "keep_graph=True (torch >= 2.8) or install cuda-bindings"
            )
        return Path(path).read_text(encoding="utf-8", errors="replace")
    finally:
        Path(path).unlink(missing_ok=True)


__all__ = ["DOT_FLAGS", "DEFAULT_DOT_FLAGS", "dump_dot", "dot_from_handle", "parse_flags", "raw_graph_handle"]
