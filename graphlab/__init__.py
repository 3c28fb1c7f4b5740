"""graphlab: capture, draw and time CUDA Graphs for PyTorch inference, from a notebook.

`import graphlab` is light: it imports neither torch nor any widget or plotting library. Every public
name below loads its module on first use (PEP 562), so GPU and UI features cost nothing until used
and fail, when they must, with one clear error at the point of use.
"""
from __future__ import annotations

import importlib
import sys
import types
from typing import Any

from graphlab import errors as _errors
from graphlab._version import __version__

# every error graphlab raises on purpose, straight from errors.py (light: it imports nothing), one list
globals().update({name: getattr(_errors, name) for name in _errors.__all__})

# public name -> module that defines it: what a user writes. The experiments behind the recordings, the worked
# capture failures among them, are under `graphlab.studies` (`from graphlab.studies.cache import cache_figures`);
# every other module's names are reachable from their module.
_LAZY: dict[str, str] = {
    # the graph: read, query, compare
    "CudaGraph": "graphlab.graph.model",
    "Graph": "graphlab.graph.model",
    "Node": "graphlab.graph.model",
    "Edge": "graphlab.graph.model",
    "NodeKind": "graphlab.graph.model",
    "ConditionalType": "graphlab.graph.model",
    "parse_dot": "graphlab.graph.dot_parser",
    "read_dot": "graphlab.graph.dot_parser",
    "DotLimits": "graphlab.graph.dot_limits",
    "dot_limits": "graphlab.graph.dot_limits",
    "describe_kernel": "graphlab.graph.kernel_names",
    "diff": "graphlab.graph.diff",
    "GraphDiff": "graphlab.graph.diff",
    "find_repeated_blocks": "graphlab.graph.structure",
    "RepeatedBlock": "graphlab.graph.structure",
    # recordings and the model zoo
    "Recording": "graphlab.recordings",
    "load": "graphlab.loader",
    "load_recording": "graphlab.recordings",
    "list_recordings": "graphlab.recordings",
    "recordings_table": "graphlab.recordings",
    "get_model": "graphlab.zoo",
    # capture
    "capture": "graphlab.capture.api",
    "recorded_models": "graphlab.timing.recorded",
    "readable": "graphlab.present",
    "Table": "graphlab.present",
    "Column": "graphlab.present",
    "estimate_launches": "graphlab.timing.recorded",
    "capturing": "graphlab.capture.api",
    "CaptureOptions": "graphlab.capture.options",
    "CapturedGraph": "graphlab.capture.captured",
    "Replayable": "graphlab.capture.surface",
    "VerifyResult": "graphlab.capture.verify",
    "explain": "graphlab.capture.diagnose",
    "recover": "graphlab.capture.recovery",
    # timing
    "sweep": "graphlab.timing.sweep",
    "SweepOptions": "graphlab.timing.options",
    "record_timeline": "graphlab.timing.timeline",
    "Sweep": "graphlab.timing.results",
    "LatencyPoint": "graphlab.timing.results",
    "Timeline": "graphlab.timing.results",
    "check_claims": "graphlab.timing.claims",
    # the graph cache
    "GraphCache": "graphlab.cache.graph_cache",
    "CacheOptions": "graphlab.cache.options",
    "Pad": "graphlab.cache.buckets",
    "bucket_list": "graphlab.cache.buckets",
    "CacheStats": "graphlab.cache.stats",
    "CacheFigures": "graphlab.cache.results",
    "TrafficReplay": "graphlab.cache.results",
    "advise_buckets": "graphlab.cache.advisor",
    "BucketAdvice": "graphlab.cache.advisor",
    "make_trace": "graphlab.cache.traces",
    # other libraries' graphs
    "watch": "graphlab.watch.api",
    "WatchedGraph": "graphlab.watch.records",
    "WatchedGraphs": "graphlab.watch.records",
    "WatchSummary": "graphlab.watch.records",
    "WatchOverhead": "graphlab.watch.records",
    "watch_compile": "graphlab.watch.compile_log",
    "compile_summary": "graphlab.watch.compiled",
    "CompileSummary": "graphlab.watch.compiled",
    # a Hugging Face decode step with a static KV cache
    "decode_report": "graphlab.decode.api",
    "DecodeOptions": "graphlab.decode.options",
    "decode_graph": "graphlab.decode.api",
    "DecodeGraphs": "graphlab.decode.graphs",
    "DecodeReport": "graphlab.decode.results",
    "DecodeReports": "graphlab.decode.results",
    "ScaleReport": "graphlab.decode.scale",
    "kv_cache_writes": "graphlab.decode.reading",
    "decode_step_kernels": "graphlab.decode.reading",
    # where the time goes inside a graph
    "profile": "graphlab.profile.api",
    "Profile": "graphlab.profile.results",
    "plot_modules": "graphlab.viz.heat",
    # what makes a graph answer wrong without an error
    "audit": "graphlab.audit.api",
    "AuditReport": "graphlab.audit.findings",
    # conditional nodes
    "cond": "graphlab.conditional.api",
    "while_loop": "graphlab.conditional.api",
    "switch": "graphlab.conditional.api",
    "ConditionalGraph": "graphlab.conditional.api",
    "conditional_support": "graphlab.conditional.support",
    "ConditionalSupport": "graphlab.conditional.support",
    "ConditionalStudy": "graphlab.conditional.results",
    "capture_with_torch_cond": "graphlab.conditional.torch_cond",
    # several GPUs
    "replicate": "graphlab.distributed.replicas",
    "Replicas": "graphlab.distributed.replicas",
    "init_distributed": "graphlab.distributed.comm",
    "agree_bucket": "graphlab.distributed.comm",
    "common_bucket": "graphlab.distributed.rules",
    "collective_rules": "graphlab.distributed.rules",
    "capture_collective": "graphlab.distributed.capture",
    "multigpu_recordings": "graphlab.distributed.results",
    "load_multigpu": "graphlab.distributed.results",
    "MultiGpuRecording": "graphlab.distributed.results",
    # drawings and plots
    "render": "graphlab.viz.drawing",
    "render_diff": "graphlab.viz.diff_drawing",
    "Drawing": "graphlab.viz.drawing",
    "DrawOptions": "graphlab.viz.drawing",
    "plot_latency": "graphlab.viz.plots",
    "plot_timeline": "graphlab.viz.plots",
    "plot_speedup": "graphlab.viz.plots",
    "plot_overhead": "graphlab.viz.plots",
    "plot_buckets": "graphlab.viz.bucket_plot",
    "plot_roofline": "graphlab.viz.roofline_plot",
    # notebook widgets
    "inspect": "graphlab.ui.inspector",
    "inspect_diff": "graphlab.ui.diff_inspector",
    "latency_lab": "graphlab.ui.latency_lab",
    "check_answer": "graphlab.ui.exercise",
    # serving
    "serve": "graphlab.serve.api",
    "ServedModel": "graphlab.serve.served_model",
    "InferenceService": "graphlab.serve.service",
    "ProtocolAnswer": "graphlab.serve.answer",
    "ServeConfig": "graphlab.serve.config",
    "create_app": "graphlab.serve.app",
    "run_loadtest": "graphlab.loadtest.api",
    "LoadTest": "graphlab.loadtest.report",
    "DynamicBatcher": "graphlab.serve.batcher",
    "serving_diagram": "graphlab.loadtest.figures",
    "plot_load_curves": "graphlab.loadtest.figures",
    "plot_http_capacity": "graphlab.loadtest.figures",
    "load_http_serving": "graphlab.loadtest.over_http",
    "HttpServing": "graphlab.loadtest.over_http",
    "plot_batch_sizes": "graphlab.loadtest.figures",
    "plot_stages": "graphlab.loadtest.figures",
    "plot_serving_timeline": "graphlab.loadtest.figures",
    # this machine and the mode
    "about": "graphlab.about",
    "has_cuda": "graphlab.env",
    "set_mode": "graphlab.mode",
    "current_mode": "graphlab.mode",
    "Mode": "graphlab.mode",
}

__all__ = sorted({*_LAZY, *_errors.__all__, "__version__"})


class _Face(types.ModuleType):
    """The package face. `graphlab.capture` and `graphlab.watch` name both a public function and a feature
    package; Python binds an imported subpackage as an attribute of its parent, which would replace the
    function. The face keeps the function: the package stays importable (`from graphlab.capture import api`)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _LAZY and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Face


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
