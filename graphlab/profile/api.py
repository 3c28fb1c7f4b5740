"""`gl.profile`: per-node GPU time inside a CUDA graph replay, with the module behind each node.

Torch at the top. Replays run under `torch.profiler` (CPU + CUDA activities); the Chrome trace's kernel, memcpy and
memset events of each `cudaGraphLaunch` are matched to the graph's DOT nodes (`graphlab.profile.match`). Modules are
recorded at capture (`graphlab.capture.module_recorder.record_modules`): forward hooks read the capture's node count through
`cudaStreamGetCaptureInfo` + `cudaGraphGetNodes` (cuda-bindings), so each node gets the module whose forward made
it. In recorded mode (`gl.set_mode`) the profiles recorded on the H200 answer (`graphlab.profile.recorded`).

    >>> prof = gl.profile(model, ids, replays=20)          # capture with modules, then profile (GPU)
    >>> prof = gl.profile(captured, replays=20)            # a graph captured already
    >>> profs = gl.profile(cache)                          # every graph of a GraphCache (or bucket="8")
    >>> prof = gl.profile(decode_graphs, bucket=8)         # one bucket of gl.DecodeGraphs, by layer (8 or "b8")
    >>> prof = gl.profile(watched, call=lambda: compiled(x))   # a torch.compile graph, by calling it
"""
from __future__ import annotations

import warnings
from datetime import datetime, timezone
from typing import Any, Callable

import torch

from graphlab.capture.api import capture, capture_graph
from graphlab.capture.module_recorder import record_modules
from graphlab.capture.module_spans import ModuleSpan
from graphlab.capture.options import CaptureOptions
from graphlab.env import require_cuda
from graphlab.errors import BadInputError, UnsupportedError
from graphlab.graph.dot_parser import parse_dot
from graphlab.graph.export import has_cuda_bindings
from graphlab.graph.model import CudaGraph
from graphlab.mode import stand_in
from graphlab.profile.events import replays_from_chrome
from graphlab.profile.recorded import recorded_profile
from graphlab.profile.results import Profile, build_profile
from graphlab.progress import progress_bar
from graphlab.timing.chrome_trace import GPU_CATEGORIES, HOST_CATEGORIES, GpuEvent
from graphlab.timing.profiler import run_profiled

DEFAULT_REPLAYS = 20


# -- modules at capture ------------------------------------------------------------------------------------------
def capture_with_modules(model: Any, *inputs: Any, options: CaptureOptions = CaptureOptions(),
                         name: str | None = None) -> tuple[Any, list[ModuleSpan]]:
    """`gl.capture(model, *inputs)` (as `capture_graph` with `options`) with `record_modules` around it: (the
    captured graph, its module spans)."""
    with record_modules(model) as recorder:
        captured = capture_graph(model, inputs, options, name=name)
    if recorder.error is not None:
        warnings.warn(f"module attribution failed, the graph has no modules: {recorder.error}", stacklevel=2)
    captured._graphlab_module_spans = recorder.last  # noqa: SLF001 - kept with the graph for gl.profile
    return captured, recorder.last


# -- replays under the profiler ------------------------------------------------------------------------------------
def profile_replays(replay: Callable[[], Any], replays: int, *, warmup_calls: int = 3,
                    show_progress: bool = True, keep_trace: list[Any] | None = None,
                    uncorrelated: str = "drop") -> list[list[GpuEvent]]:
    """Run `replay()` `replays` times under torch.profiler (after `warmup_calls` unprofiled calls); the GPU events of
    every graph launch, one list per launch. `keep_trace`, a list, receives the trace's GPU and CUDA API events
    as the profiler wrote them (the recordings keep one, for the parser's tests). `uncorrelated`: see
    `replays_from_chrome` ("by_time" for conditional graphs, whose body kernels carry no launch's correlation)."""
    if replays < 1:
        raise BadInputError(f"replays must be at least 1, got {replays}")
    for _ in range(warmup_calls):
        replay()
    torch.cuda.synchronize()
    bar = progress_bar(replays, "Profiling replays", unit="replay", show=show_progress and replays >= 50)

    def replays_one_by_one() -> None:
        for _ in range(replays):
            replay()
            torch.cuda.synchronize()  # one replay at a time: spans never overlap
            if bar is not None:
                bar.update(1)

    data = run_profiled(replays_one_by_one)
    if bar is not None:
        bar.close()
    if keep_trace is not None:
        keep_trace.extend(e for e in data.get("traceEvents", []) if isinstance(e, dict) and e.get("cat") in
                          (*GPU_CATEGORIES, *HOST_CATEGORIES))
    return replays_from_chrome(data, uncorrelated=uncorrelated)


def _conditions(replays: int, how: str) -> dict[str, Any]:
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return {"gpu": props.name, "torch": torch.__version__, "cuda": torch.version.cuda, "replays": replays,
            "how": how, "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "note": "kernel times from torch.profiler (CUPTI); matched to DOT nodes by name, grid, block and DAG order"}


def _profile_captured(cg: Any, name: str, replays: int, spans: list[ModuleSpan] | None,
                      show_progress: bool) -> Profile:
    graph: CudaGraph = cg.graph
    events = profile_replays(cg.replay, replays, show_progress=show_progress)
    spans = spans if spans is not None else getattr(cg, "_graphlab_module_spans", None)
    return build_profile(graph, events, name=name, module_spans=spans,
                         node_modules=getattr(cg, "_graphlab_node_modules", None),
                         conditions=_conditions(replays, "replay() of the captured graph"))


@stand_in(recorded_profile)
def profile(target: Any, *inputs: Any, replays: int = DEFAULT_REPLAYS, name: str | None = None,
            bucket: Any = None, call: Callable[[], Any] | None = None,
            modules: list[ModuleSpan] | None = None, show_progress: bool = True) -> Any:
    """Where a graph's replay time goes, node by node (a `graphlab.profile.results.Profile`).

    Args:
        target: an `nn.Module` or function with `inputs` (captured here with module attribution, then profiled);
            a captured graph (`gl.capture`; modules known when captured by `capture_with_modules`); a
            `gl.GraphCache` (a dict bucket -> Profile, or one Profile for `bucket`); a `gl.DecodeGraphs` (a dict
            bucket -> Profile over its captured buckets, or one Profile for `bucket`, 8 or "b8": its nodes named by
            the modules recorded at capture, `model.layers.17.mlp`; a replay rewrites the bucket's cache at the
            position it was left at); a graph `gl.watch` saw (give
            `call`, which runs the library's own function: a torch.compile graph is never replayed directly, as
            that can overwrite live outputs in its pool); a `gl.cond` / `gl.while_loop` / `gl.switch` graph (its
            bodies' nodes timed where CUDA reports them; a body that did not run is grouped as unmatched).
        replays: replays profiled; each is matched on its own and the node times are their median and p10/p90.
        name: the profile's name (default: the graph's).
        modules: module spans recorded at capture, for a captured graph.

    In recorded mode the profile recorded on the H200 for this zoo model and batch size.
    """
    require_cuda("gl.profile")
    if hasattr(target, "graph_for") and hasattr(target, "captured_buckets") and not inputs:  # a DecodeGraphs
        labels = [bucket] if bucket is not None else list(target.captured_buckets)
        if not labels:
            raise BadInputError("the DecodeGraphs holds no graphs yet: call capture_all() (or capture(bucket)) first")
        graphs = {label: target.graph_for(label) for label in labels}  # an unknown bucket: its error, first
        out = {label: _profile_captured(g, f"{name or 'decode step'} {g.name}", replays, None, show_progress)
               for label, g in graphs.items()}
        return out[bucket] if bucket is not None else out
    if hasattr(target, "graphs") and hasattr(target, "warm_up") and not inputs:  # a GraphCache
        graphs = target.graphs
        if not graphs:
            raise BadInputError("the GraphCache holds no graphs yet: call it (or cache.warm_up(x)) first")
        if bucket is not None:
            if bucket not in graphs:
                raise BadInputError(f"no graph for bucket {bucket!r}; the cache has {', '.join(graphs)}")
            graphs = {bucket: graphs[bucket]}
        out = {label: _profile_captured(g, f"{name or 'cache'} bucket {label}", replays, None, show_progress)
               for label, g in graphs.items()}
        return out[bucket] if bucket is not None else out
    if getattr(target, "library", None) is not None and hasattr(target, "dot"):  # a WatchedGraph
        if call is None:
            raise BadInputError("profile a watched graph by calling its library's function: "
                                "gl.profile(watched, call=lambda: compiled(x))")
        if not target.dot:
            raise UnsupportedError(f"this watched graph has no DOT ({getattr(target, 'dot_error', '')})")
        graph = parse_dot(target.dot, source=f"<watched {target.index}>")
        events = profile_replays(call, replays, show_progress=show_progress)
        kept = [e for e in events if e]
        return build_profile(graph, kept, name=name or f"watched graph {target.index} ({target.library})",
                             node_modules=getattr(target, "node_modules", None),
                             conditions=_conditions(replays, "calls of the library's function"))
    if hasattr(target, "launch") and hasattr(target, "branches") and hasattr(target, "graph"):  # a ConditionalGraph
        if inputs:
            raise BadInputError("a conditional graph is profiled as built: gl.profile(conditional, replays=...)")
        events = profile_replays(target.launch, replays, show_progress=show_progress, uncorrelated="by_time")
        return build_profile(target.graph, events, name=name or f"conditional {target.name}",
                             conditions=_conditions(replays, "launch() of the conditional graph; a body's nodes are "
                                                    "timed only where CUDA reports the kernels it ran"))
    if hasattr(target, "replay") and hasattr(target, "graph"):  # a captured graph
        if inputs:
            raise BadInputError("a captured graph is profiled as captured: gl.profile(captured, replays=...)")
        return _profile_captured(target, name or str(getattr(target, "name", "graph")), replays, modules,
                                 show_progress)
    if callable(target):
        if not inputs:
            raise BadInputError("gl.profile(model, *inputs): a model needs example inputs to capture")
        if isinstance(target, torch.nn.Module) and has_cuda_bindings():
            cg, spans = capture_with_modules(target, *inputs)
        else:
            cg, spans = capture(target, *inputs), None
        try:
            return _profile_captured(cg, name or type(target).__name__, replays, spans, show_progress)
        finally:
            cg.reset()
    raise BadInputError(f"gl.profile takes a model with inputs, a captured graph, a GraphCache or a watched graph, "
                        f"not {type(target).__name__}")


__all__ = ["DEFAULT_REPLAYS", "capture_with_modules", "profile", "profile_replays"]
