"""Probe: CUDA conditional nodes (IF, IF/ELSE, WHILE, SWITCH) with PyTorch bodies on this GPU.

Checks every API fact graphlab's conditional-node support (issue 13) depends on, each in its own
try/except, and writes DIR/conditional_probe.json (results and exact error messages) plus the DOT
dumps of the graphs it built under DIR/conditional_probe_dot/. Runs in well under 60 s on an H200:

    PYTHONPATH=. python3 scripts/probes/conditional_probe.py --out DIR

Sections (the JSON has one entry per name):
  env              torch / CUDA / driver / cuda-bindings / cuda-core / NVRTC versions, device
  torch_api        torch features: keep_graph, raw_cuda_graph, allocator pool routing, torch.cond capture
  headers          where cuda_device_runtime_api.h lives (pip packages, /usr/local/cuda, nvcc, CUDA_HOME)
  nvrtc_*          compiling the set-conditional kernel: self-declared prototype (cubin / ptx), the header
                   include, no builtin macros, torch.cuda._compile_kernel
  load_kernel      cuModuleLoadData + cuModuleGetFunction in torch's context
  raw_if           hand-built IF (memset body) set from a device flag by the kernel node
  route_a_*        torch-captured graphs as CHILD graph nodes inside IF/ELSE, WHILE, SWITCH bodies
  route_a_gpt      the zoo GPT forward inside an IF body, vs eager
  route_b_*        capture straight into the body (cudaStreamBeginCaptureToGraph) with the allocator on a pool
  nested_in_torch  a conditional node added in the middle of a torch.cuda.graph capture (body on a side stream)
  illegal_body     what instantiate says about an event-record node inside a body
  default_value    cudaGraphConditionalHandleCreate(flags=1) default value, no setter kernel
  torch_cond       torch.cond captured into IF nodes (torch >= 2.12 only)
  timing           host launch time of an outer graph vs torch replay (small)
  route_b_pool_release  one pool reference per captured stage, released at the end: memory comes back
  library          graphlab.conditional.selftest: every kind by every route, when that module exists
  study_*          the worked uses (graphlab.studies.conditional) with 3 repeats: code paths, not numbers
"""
from __future__ import annotations

import argparse
import contextlib
import ctypes
import glob
import importlib
import importlib.util
import json
import os
import platform
import shutil
import sys
import time
import traceback
from pathlib import Path

RESULTS: dict = {}
KEEP: list = []  # ctypes argument storage, tensors and graphs the built graphs point at
T0 = time.perf_counter()
DOT_DIR: Path | None = None


@contextlib.contextmanager
def section(name: str):
    """Record one probe section: ok, seconds, values, or the exact error and a short traceback."""
    entry: dict = {"ok": False, "values": {}}
    RESULTS[name] = entry
    start = time.perf_counter()
    try:
        yield entry["values"]
        entry["ok"] = True
    except Exception as exc:  # noqa: BLE001 - a probe records every failure
        entry["error"] = f"{type(exc).__name__}: {exc}"
        entry["traceback"] = traceback.format_exc(limit=6)[-3000:]
    entry["seconds"] = round(time.perf_counter() - start, 3)
    status = "ok " if entry["ok"] else "ERR"
    detail = "" if entry["ok"] else f"  {entry['error'][:300]}"
    print(f"[{status}] {name} ({entry['seconds']:.2f} s){detail}", flush=True)


def ok(result, what: str):
    """Unpack a cuda-bindings result (err, *values); raise with the error's name on failure."""
    err, *values = result if isinstance(result, tuple) else (result,)
    if int(err) != 0:
        raise RuntimeError(f"{what} failed: {err!r}")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


# -- the set-conditional kernel ------------------------------------------------------------------
KERNEL_NAME = "graphlab_set_conditional"
KERNEL_BODY = r"""
extern "C" __global__ void graphlab_set_conditional(cudaGraphConditionalHandle handle, const void* flag,
                                                     int flag_bytes, int as_index)
{
    long long v;
    if (flag_bytes == 1) v = *(const unsigned char*)flag;
    else if (flag_bytes == 4) v = *(const int*)flag;
    else v = *(const long long*)flag;
    unsigned int value;
    if (as_index) value = (v < 0 || v > 0x7fffffffLL) ? 0xffffffffu : (unsigned int)v;
    else value = (v != 0) ? 1u : 0u;
    cudaGraphSetConditional(handle, value);
}
"""
DECLARED = r"""
typedef __device_builtin__ unsigned long long cudaGraphConditionalHandle;
extern "C" __device__ __cudart_builtin__ void cudaGraphSetConditional(cudaGraphConditionalHandle handle,
                                                                      unsigned int value);
""" + KERNEL_BODY
DECLARED_PLAIN = r"""
typedef unsigned long long cudaGraphConditionalHandle;
extern "C" __device__ void cudaGraphSetConditional(cudaGraphConditionalHandle handle, unsigned int value);
""" + KERNEL_BODY
INCLUDED = "#include <cuda_device_runtime_api.h>\n" + KERNEL_BODY


def nvrtc_compile(source: str, options: list[str], want_cubin: bool) -> tuple[bytes, str]:
    from cuda.bindings import nvrtc

    prog = ok(nvrtc.nvrtcCreateProgram(source.encode(), b"graphlab_set_conditional.cu", 0, [], []),
              "nvrtcCreateProgram")
    try:
        opts = [o.encode() for o in options]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        size = ok(nvrtc.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
        log = bytearray(max(int(size), 1))
        ok(nvrtc.nvrtcGetProgramLog(prog, log), "nvrtcGetProgramLog")
        log_text = bytes(log).rstrip(b"\0").decode(errors="replace")
        if int(err) != 0:
            raise RuntimeError(f"nvrtcCompileProgram failed: {err!r}; log: {log_text.strip()[:1500]}")
        if want_cubin:
            size = ok(nvrtc.nvrtcGetCUBINSize(prog), "nvrtcGetCUBINSize")
            image = bytearray(int(size))
            ok(nvrtc.nvrtcGetCUBIN(prog, image), "nvrtcGetCUBIN")
        else:
            size = ok(nvrtc.nvrtcGetPTXSize(prog), "nvrtcGetPTXSize")
            image = bytearray(int(size))
            ok(nvrtc.nvrtcGetPTX(prog, image), "nvrtcGetPTX")
        return bytes(image), log_text
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


SET_KERNEL = {"func": None, "how": None}


def set_kernel_params(func, handle, flag, as_index: int):
    from cuda.bindings import driver as dr

    values = [ctypes.c_ulonglong(int(handle)), ctypes.c_void_p(int(flag.data_ptr())),
              ctypes.c_int(int(flag.element_size())), ctypes.c_int(int(as_index))]
    pointers = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
    KEEP.append((values, pointers, flag))
    params = dr.CUDA_KERNEL_NODE_PARAMS()
    params.func = func
    params.gridDimX = params.gridDimY = params.gridDimZ = 1
    params.blockDimX = params.blockDimY = params.blockDimZ = 1
    params.sharedMemBytes = 0
    params.kernelParams = ctypes.addressof(pointers)
    params.extra = 0
    return params, pointers


def add_set_node(graph, deps, handle, flag, as_index: int = 0):
    """A kernel node (driver API) running the set-conditional kernel on `flag`."""
    from cuda.bindings import driver as dr

    params, _ = set_kernel_params(SET_KERNEL["func"], handle, flag, as_index)
    deps = [dr.CUgraphNode(init_value=int(d)) for d in deps]
    return ok(dr.cuGraphAddKernelNode(graph, deps, len(deps), params), "cuGraphAddKernelNode")


def rt_nodes(deps):
    from cuda.bindings import runtime as rt

    return [rt.cudaGraphNode_t(init_value=int(d)) for d in deps]


def add_conditional(graph, deps, kind: str, size: int, default: int = 0, flags: int = 0):
    from cuda.bindings import runtime as rt

    kinds = {"if": rt.cudaGraphConditionalNodeType.cudaGraphCondTypeIf,
             "while": rt.cudaGraphConditionalNodeType.cudaGraphCondTypeWhile,
             "switch": rt.cudaGraphConditionalNodeType.cudaGraphCondTypeSwitch}
    handle = ok(rt.cudaGraphConditionalHandleCreate(graph, default, flags), "cudaGraphConditionalHandleCreate")
    params = rt.cudaGraphNodeParams()
    params.type = rt.cudaGraphNodeType.cudaGraphNodeTypeConditional
    params.conditional.handle = handle
    params.conditional.type = kinds[kind]
    params.conditional.size = size
    deps = rt_nodes(deps)
    node = ok(rt.cudaGraphAddNode(graph, deps, None, len(deps), params), f"cudaGraphAddNode({kind})")
    bodies = list(params.conditional.phGraph_out)[:size]  # read only after the add (before: a null pointer)
    return handle, node, bodies


def add_child(graph, deps, child_handle: int):
    from cuda.bindings import runtime as rt

    deps = rt_nodes(deps)
    return ok(rt.cudaGraphAddChildGraphNode(graph, deps, len(deps), rt.cudaGraph_t(init_value=int(child_handle))),
              "cudaGraphAddChildGraphNode")


def instantiate(graph):
    from cuda.bindings import runtime as rt

    return ok(rt.cudaGraphInstantiate(graph, 0), "cudaGraphInstantiate")


def launch(torch, graph_exec):
    from cuda.bindings import runtime as rt

    stream = rt.cudaStream_t(init_value=int(torch.cuda.current_stream().cuda_stream))
    ok(rt.cudaGraphLaunch(graph_exec, stream), "cudaGraphLaunch")


def dump_dot(graph, name: str, values: dict) -> None:
    """Write the graph's DOT (flags 1) and parse it with graphlab's parser (if importable)."""
    from cuda.bindings import runtime as rt

    assert DOT_DIR is not None
    path = DOT_DIR / f"{name}.dot"
    ok(rt.cudaGraphDebugDotPrint(graph, str(path).encode(), 1), "cudaGraphDebugDotPrint")
    values["dot_file"] = f"conditional_probe_dot/{name}.dot"
    values["dot_bytes"] = path.stat().st_size
    try:
        from graphlab.graph.dot_parser import parse_dot

        parsed = parse_dot(path.read_text(), source=path.name)
        values["parsed_graphs"] = len(parsed.graphs)
        values["parsed_kinds"] = parsed.count_by_kind()
        values["parsed_conditionals"] = [
            {"type": str(n.conditional_type), "bodies": list(n.body_graph_ids)}
            for n in parsed.nodes() if n.conditional_type is not None]
    except Exception as exc:  # noqa: BLE001
        values["parse_error"] = f"{type(exc).__name__}: {exc}"


def torch_graph(torch, fn, warmup: int = 2, instantiate_it: bool = True):
    """Capture fn with keep_graph=True on a side stream (as gl.capture does); return (graph, raw handle)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph(keep_graph=True)
    with torch.cuda.graph(g):
        fn()
    if instantiate_it:
        g.instantiate()
    torch.cuda.synchronize()
    KEEP.append(g)
    return g, int(g.raw_cuda_graph())


# -- sections --------------------------------------------------------------------------------------
def probe_env(torch) -> None:
    with section("env") as v:
        from importlib.metadata import version

        v["python"] = platform.python_version()
        v["torch"] = torch.__version__
        v["torch_cuda"] = str(torch.version.cuda)
        v["device"] = torch.cuda.get_device_name()
        v["capability"] = list(torch.cuda.get_device_capability())
        for pkg in ("cuda-bindings", "cuda-core", "cuda-pathfinder", "nvidia-cuda-nvrtc", "nvidia-cuda-nvrtc-cu13",
                    "nvidia-cuda-runtime", "nvidia-cuda-runtime-cu13", "cuda-toolkit", "nvidia-cuda-cccl"):
            try:
                v[f"pkg:{pkg}"] = version(pkg)
            except Exception:  # noqa: BLE001
                v[f"pkg:{pkg}"] = None
        from cuda.bindings import driver as dr, runtime as rt

        ok(dr.cuInit(0), "cuInit")
        v["cuDriverGetVersion"] = ok(dr.cuDriverGetVersion(), "cuDriverGetVersion")
        v["cudaDriverGetVersion"] = ok(rt.cudaDriverGetVersion(), "cudaDriverGetVersion")
        v["cudaRuntimeGetVersion"] = ok(rt.cudaRuntimeGetVersion(), "cudaRuntimeGetVersion")
        try:
            from cuda.bindings import nvrtc

            v["nvrtcVersion"] = list(ok(nvrtc.nvrtcVersion(), "nvrtcVersion"))
        except Exception as exc:  # noqa: BLE001
            v["nvrtcVersion_error"] = f"{type(exc).__name__}: {exc}"
        try:
            from cuda.pathfinder import load_nvidia_dynamic_lib

            v["libnvrtc_path"] = str(load_nvidia_dynamic_lib("nvrtc").abs_path)
        except Exception as exc:  # noqa: BLE001
            v["libnvrtc_path_error"] = f"{type(exc).__name__}: {exc}"
        v["cudaGraphCondAssignDefault_attr"] = hasattr(rt, "cudaGraphCondAssignDefault")
        v["cond_types"] = [m for m in rt.cudaGraphConditionalNodeType.__members__]
        v["cudaStreamGetCaptureInfo_arity"] = None  # filled by route_b


def probe_torch_api(torch) -> None:
    with section("torch_api") as v:
        import inspect

        cls = torch.cuda.CUDAGraph
        v["keep_graph"] = "keep_graph" in inspect.signature(cls).parameters
        for name in ("raw_cuda_graph", "raw_cuda_graph_exec", "instantiate", "get_currently_capturing_graph",
                     "begin_capture_to_if_node", "begin_capture_to_while_node", "end_capture_to_conditional_node"):
            v[f"CUDAGraph.{name}"] = hasattr(cls, name)
        for name in ("_cuda_beginAllocateCurrentStreamToPool", "_cuda_beginAllocateToPool",
                     "_cuda_beginAllocateCurrentThreadToPool", "_cuda_endAllocateToPool",
                     "_cuda_endAllocateCurrentStreamToPool", "_cuda_releasePool"):
            v[f"torch._C.{name}"] = hasattr(torch._C, name)
            fn = getattr(torch._C, name, None)
            if fn is not None:
                v[f"doc:{name}"] = (fn.__doc__ or "").strip()[:200]
        v["graph_pool_handle"] = hasattr(torch.cuda, "graph_pool_handle")
        v["MemPool"] = hasattr(torch.cuda, "MemPool")
        v["_compile_kernel"] = hasattr(torch.cuda, "_compile_kernel")
        v["torch.cond"] = hasattr(torch, "cond")
        v["cudagraph_conditional_nodes"] = importlib.util.find_spec(
            "torch._higher_order_ops.cudagraph_conditional_nodes") is not None
        v["while_loop"] = importlib.util.find_spec("torch._higher_order_ops.while_loop") is not None
        v["graph_pool_handle_value"] = list(torch.cuda.graph_pool_handle())


def probe_headers(torch) -> None:
    with section("headers") as v:
        roots = set()
        for sp in {*sys.path}:
            if sp and os.path.isdir(os.path.join(sp, "nvidia")):
                roots.add(os.path.join(sp, "nvidia"))
        patterns = []
        for root in sorted(roots):
            patterns += [f"{root}/*/include/cuda_device_runtime_api.h", f"{root}/*/*/include/cuda_device_runtime_api.h"]
        for base in ["/usr/local/cuda/include", *glob.glob("/usr/local/cuda-*/include"),
                     os.environ.get("CUDA_HOME", "") + "/include", os.environ.get("CUDA_PATH", "") + "/include",
                     "/usr/include"]:
            patterns.append(f"{base}/cuda_device_runtime_api.h")
        nvcc = shutil.which("nvcc")
        v["nvcc"] = nvcc
        if nvcc:
            patterns.append(str(Path(nvcc).resolve().parents[1] / "include" / "cuda_device_runtime_api.h"))
        found = sorted({p for pat in patterns for p in glob.glob(pat)})
        v["cuda_device_runtime_api.h"] = found
        v["nvidia_pip_roots"] = sorted(roots)
        v["nvidia_pip_dirs"] = sorted({d for r in roots for d in os.listdir(r)})[:60]
        try:
            from cuda import pathfinder

            finder = getattr(pathfinder, "find_nvidia_header_directory", None)
            v["pathfinder_has_find_header"] = finder is not None
            if finder is not None:
                for lib in ("cudart", "nvrtc", "cccl"):
                    try:
                        v[f"pathfinder:{lib}"] = finder(lib)
                    except Exception as exc:  # noqa: BLE001
                        v[f"pathfinder:{lib}"] = f"{type(exc).__name__}: {exc}"
        except Exception as exc:  # noqa: BLE001
            v["pathfinder_error"] = f"{type(exc).__name__}: {exc}"


def probe_nvrtc(torch) -> None:
    major, minor = torch.cuda.get_device_capability()
    arch = f"{major}{minor}"
    includes = RESULTS.get("headers", {}).get("values", {}).get("cuda_device_runtime_api.h", [])
    variants = [
        ("nvrtc_declared_cubin", DECLARED, [f"--gpu-architecture=sm_{arch}"], True),
        ("nvrtc_declared_ptx", DECLARED, [f"--gpu-architecture=compute_{arch}"], False),
        ("nvrtc_declared_default_arch", DECLARED, [], False),
        ("nvrtc_plain_prototype", DECLARED_PLAIN, [f"--gpu-architecture=sm_{arch}"], True),
    ]
    if includes:
        variants.append(("nvrtc_include_header", INCLUDED,
                         [f"--gpu-architecture=sm_{arch}", f"--include-path={Path(includes[0]).parent}"], True))
    else:
        variants.append(("nvrtc_include_header", INCLUDED, [f"--gpu-architecture=sm_{arch}"], True))
    for name, source, options, cubin in variants:
        with section(name) as v:
            v["options"] = options
            t = time.perf_counter()
            image, log = nvrtc_compile(source, options, cubin)
            v["compile_ms"] = round((time.perf_counter() - t) * 1e3, 2)
            v["image_bytes"] = len(image)
            v["log"] = log.strip()[:500]
            RESULTS.setdefault("_images", {})[name] = image
    with section("nvrtc_torch_compile_kernel") as v:
        compile_kernel = getattr(torch.cuda, "_compile_kernel", None)
        if compile_kernel is None:
            raise RuntimeError("torch.cuda._compile_kernel does not exist in this torch")
        import inspect

        v["signature"] = str(inspect.signature(compile_kernel))
        k = compile_kernel(DECLARED, KERNEL_NAME)
        v["type"] = type(k).__name__
        v["attrs"] = [a for a in dir(k) if not a.startswith("__")][:30]


def probe_load(torch) -> None:
    with section("load_kernel") as v:
        from cuda.bindings import driver as dr

        torch.zeros(1, device="cuda")
        ctx = ok(dr.cuCtxGetCurrent(), "cuCtxGetCurrent")
        v["ctx_current"] = int(ctx) != 0
        images = RESULTS.get("_images", {})
        image = images.get("nvrtc_declared_cubin") or images.get("nvrtc_declared_ptx") or images.get(
            "nvrtc_include_header")
        if image is None:
            raise RuntimeError("no compiled image to load (every NVRTC variant failed)")
        v["image_from"] = next(k for k, x in images.items() if x is image)
        try:
            module = ok(dr.cuModuleLoadData(image), "cuModuleLoadData(bytes)")
            v["load_data_accepts_bytes"] = True
        except Exception as exc:  # noqa: BLE001
            v["load_data_bytes_error"] = f"{type(exc).__name__}: {exc}"
            buf = ctypes.create_string_buffer(image)
            KEEP.append(buf)
            module = ok(dr.cuModuleLoadData(ctypes.addressof(buf)), "cuModuleLoadData(address)")
            v["load_data_accepts_bytes"] = False
        func = ok(dr.cuModuleGetFunction(module, KERNEL_NAME.encode()), "cuModuleGetFunction")
        KEEP.append(module)
        SET_KERNEL["func"] = func
        SET_KERNEL["how"] = v["image_from"]
        # the PTX variant too, to know whether JIT from this NVRTC works on this driver
        ptx = images.get("nvrtc_declared_ptx")
        if ptx is not None:
            try:
                buf = ctypes.create_string_buffer(ptx)
                KEEP.append(buf)
                ok(dr.cuModuleLoadData(ctypes.addressof(buf)), "cuModuleLoadData(ptx)")
                v["ptx_jit_loads"] = True
            except Exception as exc:  # noqa: BLE001
                v["ptx_jit_loads"] = f"{type(exc).__name__}: {exc}"


def probe_raw_if(torch) -> None:
    with section("raw_if") as v:
        from cuda.bindings import runtime as rt

        flag = torch.zeros((), dtype=torch.int32, device="cuda")
        out = torch.zeros(256, dtype=torch.int32, device="cuda")
        KEEP.extend([flag, out])
        graph = ok(rt.cudaGraphCreate(0), "cudaGraphCreate")
        handle = ok(rt.cudaGraphConditionalHandleCreate(graph, 0, 0), "cudaGraphConditionalHandleCreate")
        setter = add_set_node(graph, [], handle, flag)
        kinds = rt.cudaGraphConditionalNodeType
        params = rt.cudaGraphNodeParams()
        params.type = rt.cudaGraphNodeType.cudaGraphNodeTypeConditional
        params.conditional.handle = handle
        params.conditional.type = kinds.cudaGraphCondTypeIf
        params.conditional.size = 1
        node = ok(rt.cudaGraphAddNode(graph, rt_nodes([setter]), None, 1, params), "cudaGraphAddNode(IF)")
        body = list(params.conditional.phGraph_out)[0]
        mp = rt.cudaMemsetParams()
        mp.dst = int(out.data_ptr())
        mp.value = 1
        mp.elementSize = 4
        mp.width = 256
        mp.height = 1
        mp.pitch = 0
        ok(rt.cudaGraphAddMemsetNode(body, [], 0, mp), "cudaGraphAddMemsetNode")
        exe = instantiate(graph)
        for value in (0, 1):
            out.zero_()
            flag.fill_(value)
            launch(torch, exe)
            torch.cuda.synchronize()
            v[f"flag={value}: body ran"] = bool(out.sum().item() == 256)
        v["correct"] = v["flag=0: body ran"] is False and v["flag=1: body ran"] is True
        v["node_is"] = str(node)[:40]
        dump_dot(graph, "raw_if", v)


def probe_route_a(torch) -> None:
    from cuda.bindings import runtime as rt

    with section("route_a_if_else") as v:
        x = torch.arange(8, dtype=torch.float32, device="cuda")
        acc = torch.zeros(8, device="cuda")
        flag = torch.zeros((), dtype=torch.bool, device="cuda")
        KEEP.extend([x, acc, flag])
        _, prefix = torch_graph(torch, lambda: flag.copy_(x.sum() > 100.0))   # device-side decision
        _, then_g = torch_graph(torch, lambda: acc.add_(x * 2))                 # temporaries in the pool
        _, else_g = torch_graph(torch, lambda: acc.sub_(x * 3))
        _, suffix = torch_graph(torch, lambda: acc.mul_(10))
        graph = ok(rt.cudaGraphCreate(0), "cudaGraphCreate")
        p = add_child(graph, [], prefix)
        handle = ok(rt.cudaGraphConditionalHandleCreate(graph, 0, 0), "cudaGraphConditionalHandleCreate")
        s = add_set_node(graph, [p], handle, flag)
        params = rt.cudaGraphNodeParams()
        params.type = rt.cudaGraphNodeType.cudaGraphNodeTypeConditional
        params.conditional.handle = handle
        params.conditional.type = rt.cudaGraphConditionalNodeType.cudaGraphCondTypeIf
        params.conditional.size = 2
        node = ok(rt.cudaGraphAddNode(graph, rt_nodes([s]), None, 1, params), "cudaGraphAddNode(IF/ELSE)")
        bodies = list(params.conditional.phGraph_out)[:2]
        add_child(bodies[0], [], then_g)
        add_child(bodies[1], [], else_g)
        add_child(graph, [node], suffix)
        t = time.perf_counter()
        exe = instantiate(graph)
        v["instantiate_ms"] = round((time.perf_counter() - t) * 1e3, 3)
        for scale, label in ((1.0, "small sum -> else"), (100.0, "large sum -> then")):
            x.copy_(torch.arange(8, dtype=torch.float32, device="cuda") * scale)
            acc.fill_(1.0)
            launch(torch, exe)
            torch.cuda.synchronize()
            expect = (1.0 + (x * 2 if x.sum() > 100 else -x * 3)) * 10
            v[label] = bool(torch.allclose(acc, expect))
        v["correct"] = all(v[k] for k in ("small sum -> else", "large sum -> then"))
        dump_dot(graph, "route_a_if_else", v)
        KEEP.append((graph, exe))

    with section("route_a_while") as v:
        i = torch.zeros((), dtype=torch.int32, device="cuda")
        n = torch.zeros((), dtype=torch.int32, device="cuda")
        cont = torch.zeros((), dtype=torch.bool, device="cuda")
        acc = torch.zeros(4, device="cuda")
        KEEP.extend([i, n, cont, acc])
        _, prefix = torch_graph(torch, lambda: cont.copy_(i < n))

        def body_fn():
            acc.add_(torch.ones_like(acc))
            i.add_(1)
            cont.copy_(i < n)

        _, body = torch_graph(torch, body_fn)
        graph = ok(rt.cudaGraphCreate(0), "cudaGraphCreate")
        p = add_child(graph, [], prefix)
        handle = ok(rt.cudaGraphConditionalHandleCreate(graph, 0, 0), "cudaGraphConditionalHandleCreate")
        s = add_set_node(graph, [p], handle, cont)
        params = rt.cudaGraphNodeParams()
        params.type = rt.cudaGraphNodeType.cudaGraphNodeTypeConditional
        params.conditional.handle = handle
        params.conditional.type = rt.cudaGraphConditionalNodeType.cudaGraphCondTypeWhile
        params.conditional.size = 1
        node = ok(rt.cudaGraphAddNode(graph, rt_nodes([s]), None, 1, params), "cudaGraphAddNode(WHILE)")
        wbody = list(params.conditional.phGraph_out)[0]
        c = add_child(wbody, [], body)
        add_set_node(wbody, [c], handle, cont)
        exe = instantiate(graph)
        for count in (0, 1, 7):
            i.zero_()
            n.fill_(count)
            acc.zero_()
            launch(torch, exe)
            torch.cuda.synchronize()
            v[f"n={count}"] = [float(acc[0].item()), int(i.item())]
        v["correct"] = all(v[f"n={c}"] == [float(c), c] for c in (0, 1, 7))
        dump_dot(graph, "route_a_while", v)
        KEEP.append((graph, exe))

    with section("route_a_switch") as v:
        idx = torch.zeros((), dtype=torch.int64, device="cuda")
        acc = torch.zeros(4, device="cuda")
        KEEP.extend([idx, acc])
        graphs = [torch_graph(torch, lambda k=k: acc.add_(10.0 ** k))[1] for k in range(3)]
        graph = ok(rt.cudaGraphCreate(0), "cudaGraphCreate")
        handle = ok(rt.cudaGraphConditionalHandleCreate(graph, 0, 0), "cudaGraphConditionalHandleCreate")
        s = add_set_node(graph, [], handle, idx, as_index=1)
        params = rt.cudaGraphNodeParams()
        params.type = rt.cudaGraphNodeType.cudaGraphNodeTypeConditional
        params.conditional.handle = handle
        params.conditional.type = rt.cudaGraphConditionalNodeType.cudaGraphCondTypeSwitch
        params.conditional.size = 3
        ok(rt.cudaGraphAddNode(graph, rt_nodes([s]), None, 1, params), "cudaGraphAddNode(SWITCH)")
        bodies = list(params.conditional.phGraph_out)[:3]
        for body, child in zip(bodies, graphs):
            add_child(body, [], child)
        exe = instantiate(graph)
        for k in (0, 1, 2, 3, -1):
            idx.fill_(k)
            acc.zero_()
            launch(torch, exe)
            torch.cuda.synchronize()
            v[f"index={k}"] = float(acc[0].item())
        v["correct"] = [v[f"index={k}"] for k in (0, 1, 2, 3, -1)] == [1.0, 10.0, 100.0, 0.0, 0.0]
        dump_dot(graph, "route_a_switch", v)
        KEEP.append((graph, exe))


def _gpt(torch):
    from graphlab.zoo import get_model

    zoo = get_model("gpt")
    model = zoo.build(device="cuda")
    (ids,) = zoo.make_inputs(1, device="cuda")
    return model, ids


def probe_route_a_gpt(torch) -> None:
    with section("route_a_gpt") as v:
        from cuda.bindings import runtime as rt

        model, ids = _gpt(torch)
        out = torch.zeros(1, 64, 512, device="cuda")
        flag = torch.zeros((), dtype=torch.int32, device="cuda")
        KEEP.extend([model, ids, out, flag])
        with torch.no_grad():
            expect = model(ids).clone()
            before = torch.cuda.memory_reserved()
            _, body = torch_graph(torch, lambda: out.copy_(model(ids)), warmup=3)
            v["pool_growth_bytes"] = torch.cuda.memory_reserved() - before
        graph = ok(rt.cudaGraphCreate(0), "cudaGraphCreate")
        handle = ok(rt.cudaGraphConditionalHandleCreate(graph, 0, 0), "cudaGraphConditionalHandleCreate")
        s = add_set_node(graph, [], handle, flag)
        params = rt.cudaGraphNodeParams()
        params.type = rt.cudaGraphNodeType.cudaGraphNodeTypeConditional
        params.conditional.handle = handle
        params.conditional.type = rt.cudaGraphConditionalNodeType.cudaGraphCondTypeIf
        params.conditional.size = 1
        ok(rt.cudaGraphAddNode(graph, rt_nodes([s]), None, 1, params), "cudaGraphAddNode(IF)")
        add_child(list(params.conditional.phGraph_out)[0], [], body)
        exe = instantiate(graph)
        out.zero_()
        flag.fill_(0)
        launch(torch, exe)
        torch.cuda.synchronize()
        v["flag=0 left out zero"] = bool((out == 0).all().item())
        flag.fill_(1)
        launch(torch, exe)
        torch.cuda.synchronize()
        v["max_abs_err_vs_eager"] = float((out - expect).abs().max().item())
        v["correct"] = v["flag=0 left out zero"] and v["max_abs_err_vs_eager"] < 1e-4
        err, nodes, count = rt.cudaGraphGetNodes(rt.cudaGraph_t(init_value=body), numNodes=0)
        v["body_nodes"] = int(count)
        dump_dot(graph, "route_a_gpt", v)
        KEEP.append((graph, exe))


def capture_info(stream_handle) -> dict:
    """cudaStreamGetCaptureInfo as a dict (cuda-bindings 13 returns 7 values with edge data, 12 returns 6)."""
    from cuda.bindings import runtime as rt

    values = ok(rt.cudaStreamGetCaptureInfo(stream_handle), "cudaStreamGetCaptureInfo")
    RESULTS["env"]["values"]["cudaStreamGetCaptureInfo_arity"] = len(values) + 1
    status, capture_id, graph, deps = values[:4]
    count = int(values[-1])
    return {"status": status, "id": capture_id, "graph": graph, "deps": list(deps or [])[:count]}


def _capture_into(torch, body_graph, fn, mode_name: str, pool, stream, values: dict, deps=()) -> list:
    """Capture fn() straight into body_graph on `stream`, with torch's allocator on `pool`; return the
    capture's last nodes (what the next node must depend on)."""
    from cuda.bindings import runtime as rt

    modes = {"global": rt.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal,
             "thread_local": rt.cudaStreamCaptureMode.cudaStreamCaptureModeThreadLocal,
             "relaxed": rt.cudaStreamCaptureMode.cudaStreamCaptureModeRelaxed}
    device = torch.cuda.current_device()
    handle = rt.cudaStream_t(init_value=int(stream.cuda_stream))
    deps = rt_nodes(deps)
    with torch.cuda.stream(stream):
        torch._C._cuda_beginAllocateCurrentStreamToPool(device, pool)
        try:
            ok(rt.cudaStreamBeginCaptureToGraph(handle, body_graph, deps or None, None, len(deps), modes[mode_name]),
               "cudaStreamBeginCaptureToGraph")
            try:
                fn()
                leaves = capture_info(handle)["deps"]
            finally:
                ended = rt.cudaStreamEndCapture(handle)
            ok(ended, "cudaStreamEndCapture")
        finally:
            torch._C._cuda_endAllocateToPool(device, pool)
    values.setdefault("leaf_counts", []).append(len(leaves))
    return leaves


def probe_route_b(torch) -> None:
    from cuda.bindings import runtime as rt

    for mode in ("global", "thread_local", "relaxed"):
        with section(f"route_b_if_{mode}") as v:
            x = torch.arange(8, dtype=torch.float32, device="cuda")
            acc = torch.zeros(8, device="cuda")
            flag = torch.zeros((), dtype=torch.bool, device="cuda")
            KEEP.extend([x, acc, flag])
            stream = torch.cuda.Stream()
            pool = torch.cuda.graph_pool_handle()
            with torch.cuda.stream(stream):
                acc.add_(x * 2)
            torch.cuda.synchronize()
            graph = ok(rt.cudaGraphCreate(0), "cudaGraphCreate")
            handle = ok(rt.cudaGraphConditionalHandleCreate(graph, 0, 0), "cudaGraphConditionalHandleCreate")
            s = add_set_node(graph, [], handle, flag)
            params = rt.cudaGraphNodeParams()
            params.type = rt.cudaGraphNodeType.cudaGraphNodeTypeConditional
            params.conditional.handle = handle
            params.conditional.type = rt.cudaGraphConditionalNodeType.cudaGraphCondTypeIf
            params.conditional.size = 1
            ok(rt.cudaGraphAddNode(graph, rt_nodes([s]), None, 1, params), "cudaGraphAddNode(IF)")
            body = list(params.conditional.phGraph_out)[0]
            before = torch.cuda.memory_reserved()
            _capture_into(torch, body, lambda: acc.add_(x * 2), mode, pool, stream, v)
            v["pool_growth_bytes"] = torch.cuda.memory_reserved() - before
            exe = instantiate(graph)
            # churn the default pool: the body's temporaries must not be handed out to eager code
            junk = [torch.full((1 << 16,), 7.0, device="cuda") for _ in range(8)]
            del junk
            for value in (0, 1):
                acc.fill_(1.0)
                flag.fill_(bool(value))
                launch(torch, exe)
                torch.cuda.synchronize()
                v[f"flag={value}"] = acc[:3].tolist()
            v["correct"] = v["flag=0"] == [1.0, 1.0, 1.0] and v["flag=1"] == [1.0, 3.0, 5.0]
            dump_dot(graph, f"route_b_if_{mode}", v)
            KEEP.append((graph, exe, pool))

    with section("route_b_gpt_while") as v:
        # prefix captured into the outer graph too (capture-to-graph with no dependencies), then WHILE
        model, ids = _gpt(torch)
        out = torch.zeros(1, 64, 512, device="cuda")
        i = torch.zeros((), dtype=torch.int32, device="cuda")
        n = torch.zeros((), dtype=torch.int32, device="cuda")
        cont = torch.zeros((), dtype=torch.bool, device="cuda")
        KEEP.extend([model, ids, out, i, n, cont])
        stream = torch.cuda.Stream()
        pool = torch.cuda.graph_pool_handle()

        def body_fn():
            out.add_(model(ids))
            i.add_(1)
            cont.copy_(i < n)

        with torch.no_grad():
            expect = model(ids).clone()
            with torch.cuda.stream(stream):
                for _ in range(2):
                    body_fn()
            torch.cuda.synchronize()
            graph = ok(rt.cudaGraphCreate(0), "cudaGraphCreate")
            prefix_leaves = _capture_into(torch, graph, lambda: cont.copy_(i < n), "thread_local", pool, stream, v)
            handle = ok(rt.cudaGraphConditionalHandleCreate(graph, 0, 0), "cudaGraphConditionalHandleCreate")
            s = add_set_node(graph, prefix_leaves, handle, cont)
            params = rt.cudaGraphNodeParams()
            params.type = rt.cudaGraphNodeType.cudaGraphNodeTypeConditional
            params.conditional.handle = handle
            params.conditional.type = rt.cudaGraphConditionalNodeType.cudaGraphCondTypeWhile
            params.conditional.size = 1
            ok(rt.cudaGraphAddNode(graph, rt_nodes([s]), None, 1, params), "cudaGraphAddNode(WHILE)")
            body = list(params.conditional.phGraph_out)[0]
            before = torch.cuda.memory_reserved()
            body_leaves = _capture_into(torch, body, body_fn, "thread_local", pool, stream, v)
            v["pool_growth_bytes"] = torch.cuda.memory_reserved() - before
            add_set_node(body, body_leaves, handle, cont)
            exe = instantiate(graph)
            for count in (0, 3):
                out.zero_()
                i.zero_()
                n.fill_(count)
                launch(torch, exe)
                torch.cuda.synchronize()
                v[f"n={count}: iterations"] = int(i.item())
                v[f"n={count}: max_abs_err"] = float((out - expect * count).abs().max().item())
        v["correct"] = v["n=0: iterations"] == 0 and v["n=3: iterations"] == 3 and v["n=3: max_abs_err"] < 1e-3
        dump_dot(graph, "route_b_gpt_while", v)
        KEEP.append((graph, exe, pool))


def probe_nested_in_torch(torch) -> None:
    with section("nested_in_torch") as v:
        from cuda.bindings import driver as dr, runtime as rt

        x = torch.arange(8, dtype=torch.float32, device="cuda")
        acc = torch.zeros(8, device="cuda")
        flag = torch.zeros((), dtype=torch.bool, device="cuda")
        KEEP.extend([x, acc, flag])
        body_stream = torch.cuda.Stream()
        body_pool = torch.cuda.graph_pool_handle()
        with torch.cuda.stream(body_stream):
            acc.add_(x * 2)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph(keep_graph=True)
        side = torch.cuda.Stream()
        with torch.cuda.graph(g, stream=side):
            flag.copy_(x.sum() > 100.0)
            cs = rt.cudaStream_t(init_value=int(torch.cuda.current_stream().cuda_stream))
            capturing_graph = capture_info(cs)["graph"]
            handle = ok(rt.cudaGraphConditionalHandleCreate(capturing_graph, 0, 0), "ConditionalHandleCreate")
            params_k, pointers = set_kernel_params(SET_KERNEL["func"], handle, flag, 0)
            ok(dr.cuLaunchKernel(SET_KERNEL["func"], 1, 1, 1, 1, 1, 1, 0, dr.CUstream(init_value=int(cs)),
                                 ctypes.addressof(pointers), 0), "cuLaunchKernel(set)")
            deps = capture_info(cs)["deps"]
            params = rt.cudaGraphNodeParams()
            params.type = rt.cudaGraphNodeType.cudaGraphNodeTypeConditional
            params.conditional.handle = handle
            params.conditional.type = rt.cudaGraphConditionalNodeType.cudaGraphCondTypeIf
            params.conditional.size = 1
            node = ok(rt.cudaGraphAddNode(capturing_graph, deps, None, len(deps), params), "cudaGraphAddNode(IF)")
            body = list(params.conditional.phGraph_out)[0]
            ok(rt.cudaStreamUpdateCaptureDependencies(
                cs, [node], None, 1, rt.cudaStreamUpdateCaptureDependenciesFlags.cudaStreamSetCaptureDependencies),
                "cudaStreamUpdateCaptureDependencies")
            _capture_into(torch, body, lambda: acc.add_(x * 2), "relaxed", body_pool, body_stream, v)
            acc.mul_(10)
        g.instantiate()
        for scale in (1.0, 100.0):
            x.copy_(torch.arange(8, dtype=torch.float32, device="cuda") * scale)
            acc.fill_(1.0)
            g.replay()
            torch.cuda.synchronize()
            expect = (1.0 + (x * 2 if x.sum() > 100 else torch.zeros_like(x))) * 10
            v[f"scale={scale}"] = bool(torch.allclose(acc, expect))
        v["correct"] = v["scale=1.0"] and v["scale=100.0"]
        dump_dot(int(g.raw_cuda_graph()), "nested_in_torch", v)
        KEEP.append((g, body_pool))


def probe_illegal_body(torch) -> None:
    with section("illegal_body") as v:
        from cuda.bindings import runtime as rt

        ev = torch.cuda.Event(external=True)
        y = torch.zeros(4, device="cuda")
        KEEP.extend([ev, y])

        def fn():
            y.add_(1)
            ev.record()

        _, child = torch_graph(torch, fn)
        flag = torch.ones((), dtype=torch.int32, device="cuda")
        KEEP.append(flag)
        graph = ok(rt.cudaGraphCreate(0), "cudaGraphCreate")
        handle = ok(rt.cudaGraphConditionalHandleCreate(graph, 0, 0), "cudaGraphConditionalHandleCreate")
        s = add_set_node(graph, [], handle, flag)
        params = rt.cudaGraphNodeParams()
        params.type = rt.cudaGraphNodeType.cudaGraphNodeTypeConditional
        params.conditional.handle = handle
        params.conditional.type = rt.cudaGraphConditionalNodeType.cudaGraphCondTypeIf
        params.conditional.size = 1
        ok(rt.cudaGraphAddNode(graph, rt_nodes([s]), None, 1, params), "cudaGraphAddNode(IF)")
        body = list(params.conditional.phGraph_out)[0]
        try:
            add_child(body, [], child)
            v["add_child"] = "accepted"
        except Exception as exc:  # noqa: BLE001
            v["add_child"] = f"{type(exc).__name__}: {exc}"
        try:
            instantiate(graph)
            v["instantiate"] = "accepted"
        except Exception as exc:  # noqa: BLE001
            v["instantiate"] = f"{type(exc).__name__}: {exc}"


def probe_default_value(torch) -> None:
    with section("default_value") as v:
        from cuda.bindings import runtime as rt

        out = torch.zeros(64, dtype=torch.int32, device="cuda")
        KEEP.append(out)
        for default in (0, 1):
            graph = ok(rt.cudaGraphCreate(0), "cudaGraphCreate")
            handle, node, bodies = add_conditional(graph, [], "if", 1, default=default, flags=1)
            mp = rt.cudaMemsetParams()
            mp.dst = int(out.data_ptr())
            mp.value = 5
            mp.elementSize = 4
            mp.width = 64
            mp.height = 1
            mp.pitch = 0
            ok(rt.cudaGraphAddMemsetNode(bodies[0], [], 0, mp), "cudaGraphAddMemsetNode")
            exe = instantiate(graph)
            out.zero_()
            launch(torch, exe)
            torch.cuda.synchronize()
            v[f"default={default}: body ran"] = bool(out[0].item() == 5)


def probe_torch_cond(torch) -> None:
    with section("torch_cond") as v:
        spec = importlib.util.find_spec("torch._higher_order_ops.cudagraph_conditional_nodes")
        if spec is None:
            raise RuntimeError(f"torch {torch.__version__} has no torch._higher_order_ops."
                               "cudagraph_conditional_nodes (torch.cond capture into IF nodes needs torch >= 2.12)")
        mod = importlib.import_module("torch._higher_order_ops.cudagraph_conditional_nodes")
        pred = torch.tensor(True, device="cuda")
        x = torch.randn(8, device="cuda")

        def fn(p, t):
            return torch.cond(p, lambda a: a * 2, lambda a: a - 1, (t,))

        side = torch.cuda.Stream()
        with torch.cuda.stream(side), mod.ControlFlowOpWarmupDispatchMode():
            fn(pred, x)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph(keep_graph=True)
        with torch.cuda.graph(g, stream=side), mod.CUDAGraphCaptureControlFlowOpDispatchMode():
            out = fn(pred, x)
        g.instantiate()
        for value in (True, False):
            pred.fill_(value)
            g.replay()
            torch.cuda.synchronize()
            v[f"pred={value}"] = bool(torch.allclose(out, x * 2 if value else x - 1))
        dump_dot(int(g.raw_cuda_graph()), "torch_cond", v)
        KEEP.append(g)


def probe_timing(torch) -> None:
    with section("timing") as v:
        from cuda.bindings import runtime as rt

        y = torch.zeros(4, device="cuda")
        flag = torch.ones((), dtype=torch.int32, device="cuda")
        KEEP.extend([y, flag])
        tg, child = torch_graph(torch, lambda: y.add_(1))
        graph = ok(rt.cudaGraphCreate(0), "cudaGraphCreate")
        handle = ok(rt.cudaGraphConditionalHandleCreate(graph, 0, 0), "cudaGraphConditionalHandleCreate")
        s = add_set_node(graph, [], handle, flag)
        params = rt.cudaGraphNodeParams()
        params.type = rt.cudaGraphNodeType.cudaGraphNodeTypeConditional
        params.conditional.handle = handle
        params.conditional.type = rt.cudaGraphConditionalNodeType.cudaGraphCondTypeIf
        params.conditional.size = 1
        ok(rt.cudaGraphAddNode(graph, rt_nodes([s]), None, 1, params), "cudaGraphAddNode(IF)")
        add_child(list(params.conditional.phGraph_out)[0], [], child)
        exe = instantiate(graph)
        stream = rt.cudaStream_t(init_value=int(torch.cuda.current_stream().cuda_stream))
        for label, step in (("torch_replay_us", tg.replay),
                            ("cudaGraphLaunch_us", lambda: rt.cudaGraphLaunch(exe, stream)),
                            ("item_sync_us", lambda: flag.item())):
            for _ in range(20):
                step()
            torch.cuda.synchronize()
            t = time.perf_counter()
            for _ in range(500):
                step()
            v[label] = round((time.perf_counter() - t) / 500 * 1e6, 2)
            torch.cuda.synchronize()


def probe_pool_release(torch) -> None:
    """Route b's pool protocol: one begin (incref) per captured stage, the same number of releases at the
    end; the memory must come back after empty_cache, with no allocator assert."""
    with section("route_b_pool_release") as v:
        from cuda.bindings import runtime as rt

        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        base = torch.cuda.memory_reserved()
        x = torch.randn(1 << 20, device="cuda")
        KEEP.append(x)
        stream = torch.cuda.Stream()
        pool = torch.cuda.graph_pool_handle()
        graph = ok(rt.cudaGraphCreate(0), "cudaGraphCreate")
        with torch.cuda.stream(stream):
            (x * 2).sum()
        torch.cuda.synchronize()
        leaves: list = []
        for _ in range(2):  # two stages into the same pool, as before/after stages do
            leaves = _capture_into(torch, graph, lambda: x.mul_(1.0).add_(x * 3), "thread_local", pool, stream, v,
                                   deps=leaves)
        exe = instantiate(graph)
        launch(torch, exe)
        torch.cuda.synchronize()
        v["reserved_with_graph_bytes"] = torch.cuda.memory_reserved() - base
        ok(rt.cudaGraphExecDestroy(exe), "cudaGraphExecDestroy")
        ok(rt.cudaGraphDestroy(graph), "cudaGraphDestroy")
        for _ in range(2):
            torch._C._cuda_releasePool(torch.cuda.current_device(), pool)
        torch.cuda.empty_cache()
        v["reserved_after_release_bytes"] = torch.cuda.memory_reserved() - base
        v["memory_returned"] = v["reserved_after_release_bytes"] <= 4 * (1 << 20) + (1 << 21)
        with contextlib.suppress(Exception):
            mp = torch.cuda.MemPool()
            v["mempool_id"] = list(mp.id)


def probe_library_studies(torch) -> None:
    """The worked uses end to end with tiny repeats (code paths, not numbers)."""
    for name, module, function in (("study_early_exit", "graphlab.studies.conditional.early_exit", "early_exit_study"),
                                   ("study_decode_loop", "graphlab.studies.conditional.decode_loop", "decode_loop_study"),
                                   ("study_bucket_switch", "graphlab.studies.conditional.bucket_switch", "bucket_switch_study"),
                                   ("study_routes", "graphlab.studies.conditional.routes", "conditional_route_study")):
        with section(name) as v:
            if importlib.util.find_spec(module) is None:
                raise RuntimeError(f"{module} is not in this checkout yet")
            study = getattr(importlib.import_module(module), function)(repeats=3)
            v["checks"] = study.checks
            v["facts"] = study.facts
            v["verdict"] = study.verdict()
            v["rows"] = [{k: r.get(k) for k in ("variant", "case", "wall_p50_us", "gpu_p50_us", "host_p50_us",
                                                "tokens", "max_abs_err")} for r in study.rows]
            if study.dot:
                (DOT_DIR / f"{name}.dot").write_text(study.dot)
            v["correct"] = study.passed


def probe_library(torch) -> None:
    with section("library") as v:
        if importlib.util.find_spec("graphlab.conditional.selftest") is None:
            raise RuntimeError("graphlab.conditional.selftest is not in this checkout yet")
        support = importlib.import_module("graphlab.conditional.support")
        v["support"] = support.conditional_support().to_dict()
        selftest = importlib.import_module("graphlab.conditional.selftest")
        v["self_test"] = selftest.self_test()
        kernel = importlib.import_module("graphlab.conditional.kernel")
        v["kernel_how"] = kernel.set_condition_kernel(torch.cuda.current_device()).how
        v["correct"] = all(r == "ok" for route in v["self_test"].values() for r in route.values())


def main() -> int:
    global DOT_DIR
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder for conditional_probe.json and the DOT dumps")
    args = parser.parse_args()
    out = Path(args.out)
    DOT_DIR = out / "conditional_probe_dot"
    DOT_DIR.mkdir(parents=True, exist_ok=True)
    import torch

    if not torch.cuda.is_available():
        print("no CUDA GPU here: the probe needs one", file=sys.stderr)
        return 2
    probe_env(torch)
    probe_torch_api(torch)
    probe_headers(torch)
    probe_nvrtc(torch)
    probe_load(torch)
    steps = [probe_raw_if, probe_route_a, probe_route_a_gpt, probe_route_b, probe_nested_in_torch,
             probe_illegal_body, probe_default_value, probe_torch_cond, probe_timing, probe_pool_release,
             probe_library, probe_library_studies]
    for step in steps:
        if SET_KERNEL["func"] is None and step not in (probe_torch_cond, probe_default_value, probe_library,
                                                       probe_library_studies):
            with section(step.__name__.replace("probe_", "")):
                raise RuntimeError("skipped: the set-conditional kernel did not compile or load")
            continue
        try:
            step(torch)
        except Exception as exc:  # noqa: BLE001 - a section helper failed outside its section
            RESULTS[f"{step.__name__}_outside"] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        with contextlib.suppress(Exception):
            torch.cuda.synchronize()
    RESULTS.pop("_images", None)
    RESULTS["_summary"] = {
        "ok": sorted(k for k, e in RESULTS.items() if isinstance(e, dict) and e.get("ok")),
        "failed": sorted(k for k, e in RESULTS.items() if isinstance(e, dict) and e.get("ok") is False),
        "seconds": round(time.perf_counter() - T0, 2),
    }
    path = out / "conditional_probe.json"
    path.write_text(json.dumps(RESULTS, indent=1, default=str))
    print(f"[probe] {len(RESULTS['_summary']['ok'])} ok, {len(RESULTS['_summary']['failed'])} failed, "
          f"{RESULTS['_summary']['seconds']} s -> {path}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
