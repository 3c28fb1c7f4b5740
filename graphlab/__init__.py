"""graphlab: capture, draw and time CUDA Graphs for PyTorch inference, from a notebook.

`import graphlab` is light: it imports neither torch nor any widget or plotting library. Every public
name below loads its module on first use (PEP 562), so GPU and UI features cost nothing until used
and fail, when they must, with one clear error at the point of use.
"""
from __future__ import annotations

import importlib
from typing import Any

from graphlab import errors as _errors
from graphlab._version import __version__

# every error graphlab raises on purpose, straight from errors.py (light: it imports nothing), one list
globals().update({name: getattr(_errors, name) for name in _errors.__all__})

# public name -> module that defines it
_LAZY: dict[str, str] = {
    # layer 0: pure core
    "CudaGraph": "graphlab.core.model",
    "Graph": "graphlab.core.model",
    "Node": "graphlab.core.model",
    "Edge": "graphlab.core.model",
    "NodeKind": "graphlab.core.model",
    "ConditionalType": "graphlab.core.model",
    "parse_dot": "graphlab.core.dot_parser",
    "read_dot": "graphlab.core.dot_parser",
    "describe_kernel": "graphlab.core.kernel_names",
    "diff": "graphlab.core.diff",
    "GraphDiff": "graphlab.core.diff",
    "find_repeated_blocks": "graphlab.core.structure",
    "RepeatedBlock": "graphlab.core.structure",
    "Recording": "graphlab.core.recordings",
    "load_recording": "graphlab.core.recordings",
    "list_recordings": "graphlab.core.recordings",
    "recordings_table": "graphlab.core.recordings",
    "Sweep": "graphlab.core.results",
    "LatencyPoint": "graphlab.core.results",
    "Timeline": "graphlab.core.results",
    "detect_modes": "graphlab.core.modes",
    "load_overhead": "graphlab.core.overhead_report",
    "overhead_markdown": "graphlab.core.overhead_report",
    "check_claims": "graphlab.core.claims",
    # layer 1: adapters
    "render": "graphlab.viz.drawing",
    "render_diff": "graphlab.viz.diff_drawing",
    "Drawing": "graphlab.viz.drawing",
    "plot_latency": "graphlab.viz.plots",
    "plot_timeline": "graphlab.viz.plots",
    "plot_speedup": "graphlab.viz.plots",
    "plot_overhead": "graphlab.viz.plots",
    "plot_buckets": "graphlab.viz.bucket_plot",
    # layer 2: GPU
    "capture": "graphlab.gpu.capture",
    "capturing": "graphlab.gpu.capture",
    "CapturedGraph": "graphlab.gpu.capture",
    "VerifyResult": "graphlab.gpu.verify",
    "recover": "graphlab.gpu.recovery",
    "explain": "graphlab.gpu.diagnose",
    "run_example": "graphlab.gpu.pitfalls",
    "pitfall_examples": "graphlab.gpu.pitfalls",
    "capture_after_pitfalls": "graphlab.gpu.pitfalls",
    "causes_table": "graphlab.gpu.pitfalls",
    "get_model": "graphlab.gpu.zoo",
    "sweep": "graphlab.gpu.timing",
    "record_timeline": "graphlab.gpu.timeline",
    "probe_weight_update": "graphlab.gpu.weights",
    "repro": "graphlab.gpu.repro",
    "replicate": "graphlab.gpu.replicas",
    "Replicas": "graphlab.gpu.replicas",
    "replica_throughput": "graphlab.gpu.replicas_bench",
    "init_distributed": "graphlab.gpu.distributed",
    "agree_bucket": "graphlab.gpu.distributed",
    "common_bucket": "graphlab.gpu.distributed",
    "capture_collective": "graphlab.gpu.distributed_capture",
    "collective_rules": "graphlab.gpu.distributed_capture",
    "multigpu_recordings": "graphlab.gpu.distributed_results",
    "load_multigpu": "graphlab.gpu.distributed_results",
    "GraphCache": "graphlab.gpu.graph_cache",
    "Pad": "graphlab.core.buckets",
    "bucket_list": "graphlab.core.buckets",
    "CacheStats": "graphlab.core.cache_stats",
    "advise_buckets": "graphlab.core.advisor",
    "cache_figures": "graphlab.gpu.cache_record",
    "traffic_replay": "graphlab.gpu.cache_record",
    "make_trace": "graphlab.core.traffic",
    "BucketAdvice": "graphlab.core.advisor",
    "watch": "graphlab.gpu.watch",
    "WatchedGraph": "graphlab.gpu.watch_records",
    "WatchedGraphs": "graphlab.gpu.watch_records",
    "WatchSummary": "graphlab.gpu.watch_records",
    "watch_example": "graphlab.gpu.watch_examples",
    "WatchExample": "graphlab.gpu.watch_examples",
    "watch_overhead": "graphlab.gpu.watch_overhead",
    "WatchOverhead": "graphlab.gpu.watch_overhead",
    # conditional nodes (issue 13)
    "cond": "graphlab.gpu.conditional",
    "while_loop": "graphlab.gpu.conditional",
    "switch": "graphlab.gpu.conditional",
    "ConditionalGraph": "graphlab.gpu.conditional",
    "conditional_support": "graphlab.conditional_detect",
    "ConditionalSupport": "graphlab.conditional_detect",
    "capture_with_torch_cond": "graphlab.gpu.conditional_torch",
    "early_exit_study": "graphlab.gpu.conditional_early_exit",
    "decode_loop_study": "graphlab.gpu.conditional_decode",
    "bucket_switch_study": "graphlab.gpu.conditional_buckets",
    "conditional_route_study": "graphlab.gpu.conditional_routes",
    "ConditionalStudy": "graphlab.gpu.conditional_results",
    # serving (graphlab.serve, above gpu)
    "InferenceService": "graphlab.serve.service",
    "ServeConfig": "graphlab.serve.config",
    "create_app": "graphlab.serve.app",
    "run_loadtest": "graphlab.serve.loadtest",
    "LoadTest": "graphlab.serve.report",
    "DynamicBatcher": "graphlab.serve.batcher",
    "serving_diagram": "graphlab.serve.figures",
    "plot_load_curves": "graphlab.serve.figures",
    "plot_batch_sizes": "graphlab.serve.figures",
    "plot_stages": "graphlab.serve.figures",
    "plot_serving_timeline": "graphlab.serve.figures",
    # layer 3: UI
    "inspect": "graphlab.ui.inspector",
    "inspect_diff": "graphlab.ui.diff_inspector",
    "latency_lab": "graphlab.ui.latency_lab",
    # environment and mode
    "about": "graphlab.env",
    "has_cuda": "graphlab.env",
    "set_mode": "graphlab.mode",
    "current_mode": "graphlab.mode",
    "Mode": "graphlab.mode",
}

__all__ = sorted({*_LAZY, *_errors.__all__, "__version__"})


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'graphlab' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip __getattr__
    return value


def __dir__() -> list[str]:
    return __all__


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext graphlab` registers the `%%cudagraph` cell magic."""
    from graphlab.ui.magic import load_ipython_extension as _load

    _load(ipython)
