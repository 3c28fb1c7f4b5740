"""The one-thread kernel that sets a conditional node's value from a device tensor (no host sync).

A conditional node reads a *conditional handle*; only device code can set it, by calling the device
runtime's `cudaGraphSetConditional(handle, value)`. graphlab compiles that kernel once per process
at run time with NVRTC (from cuda-bindings, so no nvcc is needed), loads it into torch's CUDA
context, and adds it to graphs as a kernel node:

    >>> kernel = set_condition_kernel(device_index=0)                      # doctest: +SKIP
    >>> node = kernel.add_node(graph, deps, ConditionArgs(handle, flag), keep)  # doctest: +SKIP

(`flag`: a 1-element CUDA tensor.)

The kernel reads the flag as a bool (IF, WHILE: non-zero means run the body) or as an index (SWITCH:
a negative or too-large index runs no body). For WHILE loops it also counts iterations into a device
int32 and stops the loop at `max_iterations` (0: no limit), so a wrong condition cannot hang the GPU.

The prototype of `cudaGraphSetConditional` is declared in the source (as the CUDA headers declare
it), so no CUDA include directory is needed; `include_dirs()` finds the headers for a fallback.

torch is imported at the top. cuda-bindings (its driver API and NVRTC) is optional and imported
lazily, inside the functions that compile, load and add the kernel: only building a conditional
graph needs it, importing it loads the CUDA libraries, and on a machine without NVRTC (or with a
broken driver) the import itself can fail with more than an ImportError. `set_condition_kernel`
turns its absence into one `ConditionalUnsupportedError` that names the package to install.
"""
from __future__ import annotations

import ctypes
import glob
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from graphlab.errors import BadInputError, ConditionalUnsupportedError
from graphlab.graph.export import check_cuda

KERNEL_NAME = "graphlab_set_conditional"
_BODY = r"""
extern "C" __global__ void graphlab_set_conditional(
    cudaGraphConditionalHandle handle, const void* flag, int flag_bytes, int as_index,
    unsigned int* iterations, unsigned int max_iterations, int first)
{
    long long v;
    if (flag_bytes == 1) v = *(const unsigned char*)flag;
    else if (flag_bytes == 2) v = *(const short*)flag;
    else if (flag_bytes == 4) v = *(const int*)flag;
    else v = *(const long long*)flag;
    unsigned int value;
    if (as_index) value = (v < 0 || v > 0x7fffffffLL) ? 0xffffffffu : (unsigned int)v;
    else value = (v != 0) ? 1u : 0u;
    if (iterations != 0) {
        unsigned int done = first ? 0u : (*iterations + 1u);
        *iterations = done;
        if (max_iterations != 0u && done >= max_iterations) value = 0u;
    }
    cudaGraphSetConditional(handle, value);
}
"""
#: Sources tried in order: the prototype as cuda_device_runtime_api.h declares it; without the builtin
#: attributes; the header itself (needs an include directory).
SOURCES: dict[str, str] = {
    "declared": "typedef __device_builtin__ unsigned long long cudaGraphConditionalHandle;\n"
                "extern \"C\" __device__ __cudart_builtin__ void cudaGraphSetConditional("
                "cudaGraphConditionalHandle handle, unsigned int value);\n" + _BODY,
    "plain": "typedef unsigned long long cudaGraphConditionalHandle;\n"
             "extern \"C\" __device__ void cudaGraphSetConditional(cudaGraphConditionalHandle handle, "
             "unsigned int value);\n" + _BODY,
    "header": "#include <cuda_device_runtime_api.h>\n" + _BODY,
}
FLAG_BYTES = {"bool": 1, "uint8": 1, "int8": 1, "int16": 2, "int32": 4, "int64": 8}
INDEX_DTYPES = ("int32", "int64")


def include_dirs() -> list[str]:
    """Folders holding cuda_device_runtime_api.h: pip's nvidia-* packages, CUDA_HOME, /usr/local/cuda, nvcc's."""
    bases: list[str] = []
    for entry in sys.path:
        if entry and os.path.isdir(os.path.join(entry, "nvidia")):
            bases += glob.glob(os.path.join(entry, "nvidia", "*", "include"))
            bases += glob.glob(os.path.join(entry, "nvidia", "*", "*", "include"))
    for env in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(env):
            bases.append(os.path.join(os.environ[env], "include"))
    bases += ["/usr/local/cuda/include", *sorted(glob.glob("/usr/local/cuda-*/include"))]
    nvcc = shutil.which("nvcc")
    if nvcc:
        bases.append(str(Path(nvcc).resolve().parents[1] / "include"))
    seen: list[str] = []
    for base in bases:
        if os.path.isfile(os.path.join(base, "cuda_device_runtime_api.h")) and base not in seen:
            seen.append(base)
    return seen


def compile_image(source: str, options: list[str], cubin: bool) -> bytes:
    """Compile `source` with NVRTC; return the CUBIN (cubin=True) or PTX bytes.

    Raises:
        ConditionalUnsupportedError: NVRTC refused the source; the message holds its log.
    """
    from cuda.bindings import nvrtc

    prog = check_cuda(nvrtc.nvrtcCreateProgram(source.encode(), b"graphlab_set_conditional.cu", 0, [], []),
                      "nvrtcCreateProgram")
    try:
        encoded = [o.encode() for o in options]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(encoded), encoded)
        if int(err) != 0:
            size = check_cuda(nvrtc.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
            log = bytearray(max(int(size), 1))  # NVRTC writes into it: never an immutable bytes object
            check_cuda(nvrtc.nvrtcGetProgramLog(prog, log), "nvrtcGetProgramLog")
            text = bytes(log).rstrip(b"\0").decode(errors="replace").strip()
            raise ConditionalUnsupportedError(f"NVRTC could not compile the set-condition kernel ({err!r}): "
                                              f"{text[:600]}")
        get_size, get = (nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN) if cubin else \
            (nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX)
        image = bytearray(int(check_cuda(get_size(prog), "nvrtcGet*Size")))
        check_cuda(get(prog, image), "nvrtcGet*")
        return bytes(image)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


@dataclass(frozen=True)
class ConditionArgs:
    """What a set-condition node reads, the same for every node of one conditional graph.

    Attributes:
        handle: the conditional handle the node sets.
        flag: the one-element CUDA tensor it reads the value from.
        as_index: read `flag` as an index (SWITCH) rather than a bool (IF, WHILE).
        iterations: WHILE only: a CUDA int32 the node counts iterations into; None otherwise.
        max_iterations: WHILE only: stop the loop after this many iterations (0: no limit).
    """

    handle: Any
    flag: Any
    as_index: bool = False
    iterations: Any = None
    max_iterations: int = 0


class SetConditionKernel:
    """The compiled kernel, loaded in one device's context; adds kernel nodes that set a handle."""

    def __init__(self, function: Any, module: Any, device_index: int, how: str):
        self.function = function
        self.module = module  # kept: unloading it would invalidate every node that uses the function
        self.device_index = device_index
        self.how = how  # which source and image format worked, e.g. "declared/cubin sm_90"

    def node_params(self, args: ConditionArgs, *, first: bool = True) -> tuple[Any, Any]:
        """(CUDA_KERNEL_NODE_PARAMS, the ctypes storage its kernelParams points at: keep it alive). `first`: the
        node before the loop (it resets the iteration count), not the one at the end of each iteration."""
        from cuda.bindings import driver as dr

        handle, flag, as_index, iterations = args.handle, args.flag, args.as_index, args.iterations
        max_iterations = args.max_iterations

        values = [ctypes.c_ulonglong(int(handle)), ctypes.c_void_p(int(flag.data_ptr())),
                  ctypes.c_int(int(flag.element_size())), ctypes.c_int(1 if as_index else 0),
                  ctypes.c_void_p(int(iterations.data_ptr()) if iterations is not None else 0),
                  ctypes.c_uint(int(max_iterations)), ctypes.c_int(1 if first else 0)]
        pointers = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
        params = dr.CUDA_KERNEL_NODE_PARAMS()
        params.func = self.function
        params.gridDimX = params.gridDimY = params.gridDimZ = 1
        params.blockDimX = params.blockDimY = params.blockDimZ = 1
        params.sharedMemBytes = 0
        params.kernelParams = ctypes.addressof(pointers)
        params.extra = 0
        return params, (values, pointers)

    def add_node(self, graph: Any, deps: list[Any], args: ConditionArgs, keep: list[Any], *, first: bool = True) -> Any:
        """Add a kernel node setting `args.handle` from `args.flag` to `graph` after `deps`; returns the node.

        `keep` receives the argument storage (the node copies the values, but keeping them costs
        nothing and guards against a driver that reads them late).
        """
        from cuda.bindings import driver as dr

        params, storage = self.node_params(args, first=first)
        keep.append(storage)
        parents = [dr.CUgraphNode(init_value=int(d)) for d in deps]
        return check_cuda(dr.cuGraphAddKernelNode(graph, parents, len(parents), params), "cuGraphAddKernelNode")


_KERNELS: dict[int, SetConditionKernel] = {}


def _load(image: bytes) -> Any:
    from cuda.bindings import driver as dr

    buffer = ctypes.create_string_buffer(image, len(image))
    return check_cuda(dr.cuModuleLoadData(ctypes.addressof(buffer)), "cuModuleLoadData")


def set_condition_kernel(device_index: int) -> SetConditionKernel:
    """The kernel for `device_index`, compiled and loaded on first use (then cached).

    Raises:
        ConditionalUnsupportedError: NVRTC is missing or no source variant compiles and loads; the
            message lists what each attempt said.
    """
    if device_index in _KERNELS:
        return _KERNELS[device_index]
    try:
        from cuda.bindings import driver as dr
    except ImportError as exc:
        raise ConditionalUnsupportedError(f"conditional nodes need cuda-bindings (pip install cuda-bindings): {exc}") \
            from None
    try:
        from cuda.bindings import nvrtc

        nvrtc_version = check_cuda(nvrtc.nvrtcVersion(), "nvrtcVersion")
    except Exception as exc:  # noqa: BLE001 - libnvrtc not found, typically
        raise ConditionalUnsupportedError("conditional nodes need NVRTC to compile the kernel that sets the condition "
                                          f"(pip install nvidia-cuda-nvrtc): {str(exc).splitlines()[0][:200]}"
                                          ) from None
    major, minor = torch.cuda.get_device_capability(device_index)
    attempts: list[str] = []
    includes = include_dirs()
    with torch.cuda.device(device_index):
        torch.zeros(1, device="cuda")  # makes torch's (primary) context current on this thread
        check_cuda(dr.cuInit(0), "cuInit")
        for name, source in SOURCES.items():
            if name == "header" and not includes:
                attempts.append("header: no cuda_device_runtime_api.h found")
                continue
            extra = [f"--include-path={includes[0]}"] if name == "header" else []
            for cubin, arch in ((True, f"sm_{major}{minor}"), (False, f"compute_{major}{minor}")):
                how = f"{name}/{'cubin' if cubin else 'ptx'} {arch}"
                try:
                    image = compile_image(source, [f"--gpu-architecture={arch}", *extra], cubin)
                    module = _load(image)
                    function = check_cuda(dr.cuModuleGetFunction(module, KERNEL_NAME.encode()), "cuModuleGetFunction")
                except Exception as exc:  # noqa: BLE001 - try the next variant, report them all
                    attempts.append(f"{how}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
                    continue
                how += f" (NVRTC {nvrtc_version[0]}.{nvrtc_version[1]})"
                _KERNELS[device_index] = SetConditionKernel(function, module, device_index, how)
                return _KERNELS[device_index]
    raise ConditionalUnsupportedError("cannot build the kernel that sets a conditional node from a device tensor "
                                      "(pip install nvidia-cuda-nvrtc for NVRTC): " + "; ".join(attempts))


def flag_kind(flag: Any, *, as_index: bool, what: str) -> None:
    """Check `flag` is a one-element CUDA tensor of a dtype the kernel reads; raise BadInputError if not."""
    if not isinstance(flag, torch.Tensor):
        raise BadInputError(f"{what} must be a CUDA tensor (the condition stays on the device), got "
                            f"{type(flag).__name__}: make it with torch.tensor(..., device='cuda')")
    allowed = INDEX_DTYPES if as_index else tuple(FLAG_BYTES)
    dtype = str(flag.dtype).replace("torch.", "")
    problems = []
    if not flag.is_cuda:
        problems.append(f"on {flag.device}, not a CUDA device")
    if flag.numel() != 1:
        problems.append(f"{flag.numel()} elements, not 1")
    if dtype not in allowed:
        problems.append(f"dtype {dtype}, not one of {', '.join(allowed)}")
    if problems:
        raise BadInputError(f"{what} must be a 1-element CUDA tensor of {'/'.join(allowed)}; this one has "
                            f"{'; '.join(problems)}")


__all__ = ["ConditionArgs", "FLAG_BYTES", "INDEX_DTYPES", "KERNEL_NAME", "SOURCES", "SetConditionKernel", "compile_image", "flag_kind",
           "include_dirs", "set_condition_kernel"]
