"""Kernel names a learner can read: library family and a short name for every GPU kernel.

Pure (no torch): standard library only.

The driver reports kernels by their (usually Itanium-mangled) symbol, e.g.
`_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_...GeluCUDAKernelImpl...`. `describe_kernel`
demangles it (`graphlab.graph.demangle`), sorts it into one of `FAMILIES` and writes a short name:

    >>> describe_kernel("ampere_sgemm_128x64_tn").short_name
    'gemm 128x64 (cuBLAS)'
    >>> describe_kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL").short_name
    'all_reduce (NCCL)'
    >>> describe_kernel("triton_poi_fused_add_mul_0").family
    'Triton'

The rules are ordered (NCCL and attention before the generic GEMM rules, cuDNN convolutions before
cuBLAS, reductions before elementwise); `tests/test_kernel_names.py` pins them on real names.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from graphlab.graph.demangle import demangle

__all__ = ["FAMILIES", "KernelName", "classify_kernel", "describe_kernel", "demangle", "short_kernel_name"]

#: Kernel families in legend order (renderers colour by these).
FAMILIES: tuple[str, ...] = (
    "cuBLAS",
    "CUTLASS",
    "ATen elementwise",
    "ATen reduction",
    "ATen other",
    "attention",
    "Triton",
    "NCCL",
    "cuDNN",
    "other",
)

# what the family looks like in a short name: "gelu (elementwise)"
_SUFFIX = {
    "cuBLAS": "cuBLAS", "CUTLASS": "CUTLASS", "ATen elementwise": "elementwise", "ATen reduction": "reduction",
    "ATen other": "ATen", "attention": "attention", "Triton": "Triton", "NCCL": "NCCL", "cuDNN": "cuDNN",
    "other": "other",
}


@dataclass(frozen=True)
class KernelName:
    """Everything graphlab derives from one kernel symbol."""

    name: str  #: as the driver reported it (mangled)
    demangled: str  #: readable C++ (same as `name` when it was not mangled)
    family: str  #: one of FAMILIES
    short_name: str  #: e.g. "gemm 128x64 (cuBLAS)"


# -- helpers --------------------------------------------------------------------------------
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def _snake(word: str) -> str:
    """'AllReduce' -> 'all_reduce', 'GeluCUDA' -> 'gelu_cuda'."""
    return _CAMEL.sub("_", word).lower().strip("_")


def _strip_groups(text: str) -> str:
    """Drop every <...> and (...) group: 'void a::b<int>(float)' -> 'void a::b'."""
    text = text.replace("(anonymous namespace)", "{anon}")
    out: list[str] = []
    depth = 0
    for char in text:
        if char in "<(":
            depth += 1
        elif char in ">)":
            depth = max(depth - 1, 0)
        elif depth == 0:
            out.append(char)
    return "".join(out)


def function_path(demangled: str) -> str:
    """The qualified function name without return type, templates or arguments.

    >>> function_path("std::enable_if<true, void>::type internal::gemvx::kernel<int, float>(Params)")
    'internal::gemvx::kernel'
    """
    skeleton = _strip_groups(demangled).strip()
    return skeleton.split()[-1] if skeleton else demangled


def _base(demangled: str) -> str:
    """Last component of the function path: 'at::native::reduce_kernel' -> 'reduce_kernel'."""
    return function_path(demangled).rsplit("::", 1)[-1]


def _tile(text: str) -> str | None:
    """GEMM tile 'MxN' from cuBLAS/CUTLASS kernel names, when the name carries one."""
    for pattern in (r"tilesize(\d+)x(\d+)", r"gemm[a-z0-9]*?_(?:[a-z]+\d+_)?(\d+)x(\d+)", r"_(\d+)x(\d+)(?:x\d+)?_"):
        match = re.search(pattern, text)
        if match:
            return f"{match.group(1)}x{match.group(2)}"
    return None


# op-name words that wrap the real operation and say nothing on their own
_GENERIC = {
    "binary", "a_unary", "b_unary", "unary", "cuda", "elementwise", "vectorized_elementwise", "unrolled_elementwise",
    "gpu", "gpu_kernel", "gpu_kernel_impl", "gpu_kernel_impl_nocast", "launch", "func_wrapper", "func_wrapper_t",
    "opmath", "opmath_gpu_kernel_with_scalars", "reduce", "reduce_op", "", "kernel", "operator",
    "lambda", "type", "trivial_offset_calculator", "offset_calculator", "load_with_cast", "store_with_cast",
    "make_offset_calculator", "array", "tensor_iterator_base", "tensor_iterator", "detail", "native", "at",
}
_OP_ALIASES = {
    "direct_copy": "copy", "copy_device_to_device": "copy", "copy_kernel": "copy", "fill": "fill",
    "mul": "mul", "div_true": "div", "div_trunc": "div", "div_floor": "div", "sum_functor": "sum",
    "launch_clamp_scalar": "clamp", "clamp_scalar": "clamp", "gelu": "gelu", "silu": "silu",
    "where_kernel": "where", "compare_scalar": "compare", "compare_eq_ne": "compare", "pow_tensor_scalar": "pow",
    "pow_tensor_tensor": "pow", "neg": "neg", "rsqrt": "rsqrt", "sqrt": "sqrt", "exp": "exp", "tanh": "tanh",
    "sigmoid": "sigmoid", "relu": "relu", "threshold": "relu", "abs": "abs", "index_elementwise": "index",
    "bitwise_not": "bitwise_not", "logical_not": "logical_not", "max_values": "max", "min_values": "min",
    "arg_max": "argmax", "arg_min": "argmin", "norm_two": "norm", "mean": "mean", "max": "max", "min": "min",
    "and": "all", "or": "any", "cumsum": "cumsum", "nan_sum": "nansum", "max_nan": "max", "min_nan": "min",
    "welford": "var_mean", "gpu_index": "index",
}
_ELEMENTWISE_OP = [
    re.compile(r"CUDAFunctor(?:OnSelf|OnOther)?_(\w+?)<"),
    re.compile(r"\b(?:at::native::)?(?:\w+::)*(\w+?)(?:CUDAKernelImpl|_kernel_cuda|_kernel_impl|_kernel)\b"),
    re.compile(r"\b(?:\w+::)*(\w+?)_?Functor\b"),
    re.compile(r"\blaunch_(\w+?)_kernel\b|\blaunch_(\w+)\b"),
]
_REDUCE_OP = [
    re.compile(r"\b(\w+?)_functor\b"),
    re.compile(r"\b(?:\w+::)*(\w+?)Functor\b"),
    re.compile(r"\b(\w+?)Ops<"),
    re.compile(r"\b(\w+?)_kernel_cuda\b"),
    re.compile(r"\b(\w+?)_impl\b"),
]


def _first_op(text: str, patterns: list[re.Pattern[str]]) -> str | None:
    for pattern in patterns:
        for match in pattern.finditer(text):
            word = next((g for g in match.groups() if g), "")
            op = _snake(word)
            op = _OP_ALIASES.get(op, op)
            if op not in _GENERIC and not op.startswith(("gpu_", "vectorized", "unrolled", "elementwise")):
                return op
    return None


# -- family rules -----------------------------------------------------------------------------
def _nccl(name: str, demangled: str) -> str | None:
    match = re.search(r"nccl(?:Dev)?Kernel_([A-Za-z]+)", name)
    if match:
        return _snake(match.group(1))
    if "nccl" in name.lower():
        return "collective"
    return None


def _attention(name: str, demangled: str) -> str | None:
    low = demangled.lower()
    base = _base(demangled).lower()
    if "fmha_cutlassb" in low or "attentionbackwardkernel" in low:
        return "mem-efficient bwd"
    if "fmha_cutlassf" in low or "memeffattention" in low:
        return "mem-efficient fwd"
    if "sdpa" in low and ("cudnn" in low or "fprop" in low or "bprop" in low):
        return "cudnn sdpa bwd" if "bprop" in low or "dgrad" in low or "bwd" in low else "cudnn sdpa fwd"
    if "flashinfer" in low:
        return "flashinfer decode" if "decode" in low else "flashinfer prefill" if "prefill" in low else "flashinfer"
    if "flash" in low and ("fwd" in low or "bwd" in low or "attn" in low or "flash::" in low):
        if "combine" in base:
            return "flash split-KV combine"
        if "splitkv" in low or "split_kv" in low:
            return "flash fwd split-KV"
        return "flash bwd" if "bwd" in base or "bwd" in low and "fwd" not in low else "flash fwd"
    return None


def _triton(name: str, demangled: str) -> str | None:
    """Inductor names its kernels triton_<kind>_fused_<ops>_<n>; ops keep their own underscores."""
    if not name.startswith("triton_"):
        return None
    ops = re.sub(r"_\d+$", "", name[len("triton_") :])
    ops = re.sub(r"^(?:(?:poi|red|per|tem|for|unk)_)?(?:fused(?:_|$))?", "", ops).strip("_").replace("__", "_")
    ops = ops or "fused"
    return ops if len(ops) <= 32 else ops[:31] + "…"


def _cudnn(name: str, demangled: str) -> str | None:
    low = demangled.lower()
    if "sdpa" in low:
        return None
    if "init_device_workspace" in low:
        return "workspace init"
    if re.search(r"xmma_(fprop|dgrad|wgrad)|implicit_convolve|implicit_gemm|convolve_|conv2d|winograd", low):
        op = "conv dgrad" if "dgrad" in low else "conv wgrad" if "wgrad" in low else "conv fwd"
        tile = _tile(_base(demangled).lower())
        return f"{op} {tile}" if tile else op
    if low.startswith("cudnn") or "cudnn::" in low:
        base = _base(demangled)
        if "nchwtonhwc" in low:
            return "nchw→nhwc"
        if "nhwctonchw" in low:
            return "nhwc→nchw"
        if re.search(r"bn_(fw|bw)", low):
            return "batch_norm"
        return _snake(re.sub(r"(?i)kernel|cudnn_?", "", base)) or "kernel"
    return None


def _cublas(name: str, demangled: str) -> str | None:
    low = demangled.lower()
    base = _base(demangled).lower()
    path = function_path(demangled).lower()
    if "gemv" in base or "gemv" in path or re.match(r"^gemv", base) or "gemvx" in path:
        return "gemv"
    if "splitkreduce" in low:
        return "split-K reduce"
    if "cublaslt" in low and "epilogue" in low:
        return "epilogue"
    is_gemm_name = re.match(r"^(ampere|volta|turing|maxwell|hopper|blackwell|sm\d+)_.*gemm", base) is not None
    if (
        base.startswith("nvjet") or is_gemm_name or "xmma_gemm" in base or "cublas" in low
        or re.match(r"^[sdhczb]?gemm", base)
    ):
        if base.startswith("gemmsn") or base.startswith("gemmk1"):
            return "gemm small-N" if base.startswith("gemmsn") else "gemm k=1"
        tile = _tile(base)
        if "largek" in base and not tile:
            return "gemm large-K"
        if "gemm" in base or base.startswith("nvjet") or tile:
            return f"gemm {tile}" if tile else "gemm"
        return _snake(re.sub(r"_kernel.*$", "", base)) or "kernel"
    return None


def _cutlass(name: str, demangled: str) -> str | None:
    low = demangled.lower()
    if "cutlass" not in low:
        return None
    tile = _tile(low)
    if "gemm" in low or tile:
        return f"gemm {tile}" if tile else "gemm"
    return "kernel"


# ATen kernels that live in an anonymous namespace of an ATen .cu file (no at:: in the name)
_ATEN_FILE = re.compile(r"_GLOBAL__N__[0-9a-f]+_\d+_(SoftMax|PersistentSoftmax|Normalization|layer_norm_kernel|"
                        r"Indexing|Embedding|Shape|Sorting|TensorTopK|Dropout|Reduce|Loss)\w*_cu_")


def _aten(name: str, demangled: str) -> tuple[str, str] | None:
    low = demangled.lower()
    is_aten = "at::" in demangled or "c10::" in demangled or "at_cuda_detail" in low
    if not is_aten and _ATEN_FILE.search(name) is None and not re.match(r"(?:softmax_warp_|cunn_)", _base(demangled)):
        return None
    path = function_path(demangled)
    base = path.rsplit("::", 1)[-1]
    inner = demangled.split("<", 1)[1] if "<" in demangled else ""
    if base in ("reduce_kernel",) or "ReduceOp<" in demangled:
        op = _first_op(inner, _REDUCE_OP) or "reduce"
        return "ATen reduction", op
    if re.match(r"^(?:vectorized_|unrolled_|index_)?elementwise_kernel", base):
        op = _first_op(inner, _ELEMENTWISE_OP) or "elementwise"
        return "ATen elementwise", op
    return "ATen other", _aten_other_op(base, low)


_ATEN_OTHER = [
    ("log_softmax", r"logsoftmax|log_softmax"),
    ("softmax", r"softmax"),
    ("layer_norm", r"layer_norm|layernorm|rowwisemoments|computefused|gammabeta"),
    ("rms_norm", r"rms_?norm"),
    ("batch_norm", r"batch_norm|batchnorm"),
    ("group_norm", r"group_norm|groupnorm"),
    ("embedding", r"embedding"),
    ("index_select", r"indexselect|index_select"),
    ("cat", r"catarray|cat_array"),
    ("dropout", r"dropout"),
    ("sort", r"sort"),
    ("topk", r"topk|gatherTopK|gathertopk"),
    ("scan", r"scan"),
    ("scatter/gather", r"scatter_gather"),
    ("scatter", r"scatter"),
    ("gather", r"gather"),
    ("triu/tril", r"triu|tril"),
    ("upsample", r"upsample"),
    ("max_pool", r"max_pool"),
    ("avg_pool", r"avg_pool|adaptive_average_pool|adaptiveaveragepool"),
    ("im2col", r"im2col|col2im"),
    ("multinomial", r"multinomial"),
    ("random", r"distribution|philox|curand"),
    ("multi_tensor", r"multi_tensor"),
    ("index", r"index"),
    ("copy", r"copy"),
]


def _aten_other_op(base: str, low: str) -> str:
    if re.search(r"logsoftmax|log_softmax", low):  # the epilogue template argument tells log_softmax apart
        return "log_softmax"
    path = function_path(low)
    for op, pattern in _ATEN_OTHER:
        if re.search(pattern, path):
            return op
    word = re.sub(r"^cunn_|(?:_kernel|kernel|_cuda|cuda)+$", "", base, flags=re.IGNORECASE)
    return _snake(word) or "kernel"


def _other(name: str, demangled: str) -> str:
    base = _base(demangled) if demangled else name
    return base if len(base) <= 40 else base[:39] + "…"


# -- public ----------------------------------------------------------------------------------
@functools.lru_cache(maxsize=8192)
def describe_kernel(name: str) -> KernelName:
    """Demangle, classify and shorten one kernel name (cached).

    >>> k = describe_kernel("_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_14func_wrapper_tIfZNS0_11sum_functorIfffEclERNS_14TensorIteratorEEUlffE_EEjfLi4ELi4EEEEEvT1_")
    >>> (k.family, k.short_name)
    ('ATen reduction', 'sum (reduction)')
    """
    demangled = demangle(name)
    family, op = _classify(name, demangled)
    return KernelName(name=name, demangled=demangled, family=family, short_name=f"{op} ({_SUFFIX[family]})")


def _classify(name: str, demangled: str) -> tuple[str, str]:
    for family, rule in (("NCCL", _nccl), ("attention", _attention), ("Triton", _triton), ("cuDNN", _cudnn)):
        op = rule(name, demangled)
        if op is not None:
            return family, op
    aten = _aten(name, demangled)
    if aten is not None and "cublas" not in demangled.lower():
        return aten
    for family, rule in (("cuBLAS", _cublas), ("CUTLASS", _cutlass)):
        op = rule(name, demangled)
        if op is not None:
            return family, op
    return "other", _other(name, demangled)


def classify_kernel(name: str) -> str:
    """The family (one of FAMILIES) of a kernel name, mangled or not."""
    return describe_kernel(name).family


def short_kernel_name(name: str) -> str:
    """A short readable name such as "gemm 128x64 (cuBLAS)" or "gelu (elementwise)"."""
    return describe_kernel(name).short_name
