"""A captured graph's kernel launches with their argument bytes, read through the driver (GPU, cuda-bindings).

For each kernel node of the root graph, in capture order: `cuGraphKernelNodeGetParams` gives the function (or, when
`func` is NULL, the library kernel `kern`), the launch dimensions, and the arguments, either as `kernelParams` (an
array of pointers, one per parameter) or in `extra` form (one packed buffer). The layout (each parameter's offset and
size) comes from `cuFuncGetParamInfo`, or `cuKernelGetParamInfo` for `kern`; where neither answers, the kernel is
compared by name, grid, block and shared memory only, and the report says for how many.

The getters' return types differ between cuda-bindings releases (an int address, a wrapper object): `probe_getters`
looks at the first node's answer once and says what it found; anything it cannot read as an address leaves the
arguments unread rather than guessed. The addresses the words may point at come from the caching allocator's
segments (`torch.cuda.memory_snapshot()`) and the driver's `cuMemGetAddressRange`.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import Any

import torch

from graphlab.audit.arg_words import AddressSpace, Range, param_blob, words_of
from graphlab.audit.launch_diff import KernelLaunch
from graphlab.capture.tensors import flatten
from graphlab.errors import UnsupportedError
from graphlab.graph.export import check_cuda, has_cuda_bindings, raw_graph_handle

#: the most parameters asked of one kernel (the driver answers CUDA_ERROR_INVALID_VALUE past the last)
MAX_PARAMS = 1024
#: `extra` keys (cuda.h): CU_LAUNCH_PARAM_END, CU_LAUNCH_PARAM_BUFFER_POINTER, CU_LAUNCH_PARAM_BUFFER_SIZE
_END, _BUFFER_POINTER, _BUFFER_SIZE = 0, 1, 2
_KERNEL_NODE = 0


@dataclass
class GetterProbe:
    """What the driver's getters returned, looked at once (the first kernel node): type names, and whether the
    arguments can be read."""

    types: dict[str, str] = field(default_factory=dict)
    readable: bool = True
    why: str = ""

    def note(self) -> str:
        shown = ", ".join(f"{k} {v}" for k, v in self.types.items())
        state = "arguments read" if self.readable else f"arguments not read: {self.why}"
        return f"kernel-node getters answered {shown}: {state}"


def _address(value: Any) -> int | None:
    """An address from what a getter returned (an int, or a wrapper with getPtr or __int__); None when not one."""
    if value is None:
        return None
    if isinstance(value, int):
        return value
    getter = getattr(value, "getPtr", None)
    try:
        return int(getter()) if callable(getter) else int(value)
    except (TypeError, ValueError):
        return None


def probe_getters(params: Any) -> GetterProbe:
    """The types of the first kernel node's `func`, `kern`, `kernelParams` and `extra`, and whether they read."""
    probe = GetterProbe({name: type(getattr(params, name, None)).__name__
                         for name in ("func", "kern", "kernelParams", "extra")})
    if _address(getattr(params, "kernelParams", None)) is None and _address(getattr(params, "extra", None)) is None:
        probe.readable = False
        probe.why = "neither kernelParams nor extra came back as an address"
    return probe


def _layout(dr: Any, params: Any) -> list[tuple[int, int]] | None:
    """(offset, size) of each parameter, from cuFuncGetParamInfo (func) or cuKernelGetParamInfo (kern)."""
    func, kern = getattr(params, "func", None), getattr(params, "kern", None)
    if func is not None and _address(func) and hasattr(dr, "cuFuncGetParamInfo"):
        ask = lambda i: dr.cuFuncGetParamInfo(func, i)  # noqa: E731
    elif kern is not None and _address(kern) and hasattr(dr, "cuKernelGetParamInfo"):
        ask = lambda i: dr.cuKernelGetParamInfo(kern, i)  # noqa: E731
    else:
        return None
    layout = []
    for i in range(MAX_PARAMS):
        result = ask(i)
        if int(result[0]) != 0:
            break
        layout.append((int(result[1]), int(result[2])))
    return layout or None


def _from_extra(extra: int) -> bytes | None:
    """The packed argument buffer of `extra` form: (key, value) pointer pairs up to CU_LAUNCH_PARAM_END."""
    entries = (ctypes.c_void_p * 8).from_address(extra)
    pointer = size = None
    for i in range(0, 8, 2):
        key = entries[i] or 0
        if key == _END:
            break
        if key == _BUFFER_POINTER:
            pointer = entries[i + 1]
        elif key == _BUFFER_SIZE and entries[i + 1]:
            size = ctypes.c_size_t.from_address(entries[i + 1]).value
    if not pointer or size is None:
        return None
    return ctypes.string_at(pointer, size)


def _argument_words(dr: Any, params: Any) -> tuple[int, ...] | None:
    layout = _layout(dr, params)
    if layout is None:
        return None
    pointers = _address(getattr(params, "kernelParams", None))
    if pointers:
        slots = (ctypes.c_void_p * len(layout)).from_address(pointers)
        if any(not slots[i] for i in range(len(layout))):
            return None
        return words_of(param_blob([(offset, ctypes.string_at(slots[i], size))
                                    for i, (offset, size) in enumerate(layout)]))
    extra = _address(getattr(params, "extra", None))
    blob = _from_extra(extra) if extra else None
    return words_of(blob) if blob is not None else None


def _kernel_name(dr: Any, params: Any) -> str:
    func, kern = getattr(params, "func", None), getattr(params, "kern", None)
    try:
        if func is not None and _address(func):
            raw = check_cuda(dr.cuFuncGetName(func), "cuFuncGetName")
        elif kern is not None and hasattr(dr, "cuKernelGetName"):
            raw = check_cuda(dr.cuKernelGetName(kern), "cuKernelGetName")
        else:
            return "(unnamed kernel)"
    except UnsupportedError:
        return "(unnamed kernel)"
    return raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)


def graph_launches(cg: Any) -> tuple[list[KernelLaunch], GetterProbe]:
    """The kernel launches of `cg`'s root graph in capture order, with their argument words where readable.

    Raises:
        UnsupportedError: no cuda-bindings, or a torch that does not keep the graph.
    """
    handle = raw_graph_handle(cg.torch_graph)
    if handle is None or not has_cuda_bindings():
        raise UnsupportedError("reading kernel arguments needs cuda-bindings (pip install cuda-bindings) and a torch "
                               "with CUDAGraph(keep_graph=True)")
    from cuda.bindings import driver as dr
    from cuda.bindings import runtime as rt

    count = int(rt.cudaGraphGetNodes(handle, numNodes=0)[-1])
    nodes = check_cuda(rt.cudaGraphGetNodes(handle, numNodes=count), "cudaGraphGetNodes")[0] if count else []
    launches: list[KernelLaunch] = []
    probe: GetterProbe | None = None
    for index, node in enumerate(nodes):
        kind = check_cuda(rt.cudaGraphNodeGetType(node), "cudaGraphNodeGetType")
        if int(getattr(kind, "value", kind)) != _KERNEL_NODE:
            continue
        params = check_cuda(dr.cuGraphKernelNodeGetParams(dr.CUgraphNode(init_value=int(node))),
                            "cuGraphKernelNodeGetParams")
        if probe is None:
            probe = probe_getters(params)
        words = _argument_words(dr, params) if probe.readable else None
        launches.append(KernelLaunch(index, _kernel_name(dr, params),
                                     (int(params.gridDimX), int(params.gridDimY), int(params.gridDimZ)),
                                     (int(params.blockDimX), int(params.blockDimY), int(params.blockDimZ)),
                                     int(params.sharedMemBytes), words))
    return launches, probe or GetterProbe(readable=False, why="the graph has no kernel node")


def _storage_ranges(tree: Any) -> list[Range]:
    out = []
    for _, t in flatten(tree):
        if isinstance(t, torch.Tensor) and t.is_cuda:
            storage = t.untyped_storage()
            out.append((int(storage.data_ptr()), int(storage.nbytes())))
    return out


def _device_address(value: int) -> bool:
    from cuda.bindings import driver as dr

    try:
        return int(dr.cuMemGetAddressRange(dr.CUdeviceptr(value))[0]) == 0
    except (TypeError, ValueError, OverflowError):
        return False


def address_space(graph_a: Any, graph_b: Any) -> AddressSpace:
    """The caching allocator's segments, and each graph's own memory (its pool's segments, its static inputs and
    outputs), from `torch.cuda.memory_snapshot()`."""
    snapshot = torch.cuda.memory_snapshot()
    segments = tuple((int(s["address"]), int(s["total_size"])) for s in snapshot)

    def owned(cg: Any) -> tuple[Range, ...]:
        pool = tuple(cg.pool())
        mine = [(int(s["address"]), int(s["total_size"])) for s in snapshot
                if tuple(s.get("segment_pool_id") or ()) == pool]
        return tuple(mine + _storage_ranges(cg.inputs) + _storage_ranges(cg.outputs))

    return AddressSpace(segments, owned(graph_a), owned(graph_b), _device_address)


__all__ = ["GetterProbe", "address_space", "graph_launches", "probe_getters"]
