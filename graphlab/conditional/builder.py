"""Assemble a CUDA graph with conditional nodes through cuda-bindings, around PyTorch work.

`GraphAssembly` owns one `cudaGraph_t` (and, once instantiated, its `cudaGraphExec_t`) and adds:

- child-graph nodes from torch-captured graphs (`add_child`, route "child": the node clones the
  torch graph, whose kernels keep pointing into that graph's torch memory pool);
- conditional nodes (`add_conditional`): IF (1 or 2 bodies), WHILE, SWITCH; the body graphs are
  created by the driver and returned (`phGraph_out`, read only after the node is added);
- PyTorch work captured straight into any of its graphs (`capture_into`, route "capture"):
  `cudaStreamBeginCaptureToGraph` on a side stream (the caller keeps torch's caching allocator on
  a private graph pool for that stream meanwhile, so the memory the captured kernels use is never
  handed to eager code).

    >>> asm = GraphAssembly(device_index=0)                                 # doctest: +SKIP
    >>> handle = asm.new_handle()                                           # doctest: +SKIP
    >>> node, (then_body, else_body) = asm.add_conditional(asm.graph, [setter], handle, "if", 2)  # doctest: +SKIP
    >>> asm.instantiate(); asm.launch(torch.cuda.current_stream())         # doctest: +SKIP

torch is imported at the top. cuda-bindings is optional and imported lazily, when a graph is built
(`GraphAssembly.__init__` keeps its runtime module as `self._rt`): importing it loads the CUDA
libraries, and only building a conditional graph needs it. Callers check `conditional_support()`
first, so its absence is reported as one `ConditionalUnsupportedError` before any graph is made.
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable

import torch

from graphlab.clock import Stopwatch
from graphlab.capture.diagnose import capture_error, diagnose
from graphlab.errors import BadInputError, CaptureError, GraphlabError, UnsupportedError
from graphlab.graph.export import check_cuda, dot_from_handle

#: cudaStreamCaptureMode names -> cuda-bindings member names
CAPTURE_MODES = {"global": "cudaStreamCaptureModeGlobal", "thread_local": "cudaStreamCaptureModeThreadLocal",
                 "relaxed": "cudaStreamCaptureModeRelaxed"}
COND_TYPES = {"if": "cudaGraphCondTypeIf", "while": "cudaGraphCondTypeWhile", "switch": "cudaGraphCondTypeSwitch"}


def _nodes(rt: Any, deps: list[Any]) -> list[Any]:
    return [rt.cudaGraphNode_t(init_value=int(d)) for d in deps]


def capture_leaves(rt: Any, stream: Any) -> list[Any]:
    """The nodes the next captured operation on `stream` would depend on (cudaStreamGetCaptureInfo).

    cuda-bindings 13 returns (err, status, id, graph, deps, edge_data, count); 12 has no edge data.
    """
    values = check_cuda(rt.cudaStreamGetCaptureInfo(stream), "cudaStreamGetCaptureInfo")
    deps, count = values[3], int(values[-1])
    return list(deps or [])[:count]


class GraphAssembly:
    """One hand-built CUDA graph: nodes added through cuda-bindings, instantiated and launched by us.

    Attributes:
        graph: the `cudaGraph_t` (cuda-bindings object); `handle` is it as an int.
        exec: the `cudaGraphExec_t` after `instantiate()`, else None.
        keep: Python objects the graph's nodes point at (kernel argument storage); dropped on destroy.
    """

    def __init__(self, device_index: int):
        from cuda.bindings import runtime as rt

        self.device_index = device_index
        self._rt = rt
        with torch.cuda.device(device_index):
            self.graph = check_cuda(rt.cudaGraphCreate(0), "cudaGraphCreate")
        self.exec: Any = None
        self.keep: list[Any] = []
        self._streams: dict[int, Any] = {}

    @property
    def handle(self) -> int:
        return int(self.graph)

    # -- nodes --------------------------------------------------------------------------------------------
    def new_handle(self) -> Any:
        """A conditional handle of this graph (default value 0, not reset at launch: a kernel sets it)."""
        return check_cuda(self._rt.cudaGraphConditionalHandleCreate(self.graph, 0, 0),
                          "cudaGraphConditionalHandleCreate")

    def add_child(self, graph: Any, deps: list[Any], child_handle: int) -> Any:
        """A child-graph node in `graph` after `deps`, cloning the graph `child_handle` (an int cudaGraph_t)."""
        rt = self._rt
        parents = _nodes(rt, deps)
        return check_cuda(rt.cudaGraphAddChildGraphNode(graph, parents, len(parents),
                                                        rt.cudaGraph_t(init_value=int(child_handle))),
                          "cudaGraphAddChildGraphNode")

    def add_conditional(self, graph: Any, deps: list[Any], handle: Any, kind: str, size: int) -> tuple[Any, list[Any]]:
        """A conditional node ("if" with 1 or 2 bodies, "while" with 1, "switch" with `size`); returns
        (node, body graphs). The bodies belong to the node: they die with the graph."""
        rt = self._rt
        params = rt.cudaGraphNodeParams()
        params.type = rt.cudaGraphNodeType.cudaGraphNodeTypeConditional
        params.conditional.handle = handle
        params.conditional.type = getattr(rt.cudaGraphConditionalNodeType, COND_TYPES[kind])
        params.conditional.size = size
        parents = _nodes(rt, deps)
        node = check_cuda(rt.cudaGraphAddNode(graph, parents, None, len(parents), params),
                          f"cudaGraphAddNode({kind.upper()} conditional, {size} bodies)")
        bodies = list(params.conditional.phGraph_out)[:size]  # only valid after the add (a null pointer before)
        return node, bodies

    def capture_into(self, graph: Any, deps: list[Any], fn: Callable[[], Any], *, stream: Any,
                     mode: str = "thread_local", prefer_filename: str | None = None) -> tuple[list[Any], Any]:
        """Capture `fn()` (PyTorch work) straight into `graph` after `deps`; return (last nodes, fn's result).

        The caller keeps torch's allocator on a graph pool for `stream` around this call (see
        `_CapturedStages` in graphlab.conditional.api). A failure ends the capture and raises the
        diagnosed CaptureError.
        """
        rt = self._rt
        raw = rt.cudaStream_t(init_value=int(stream.cuda_stream))
        parents = _nodes(rt, deps)
        capture_mode = getattr(rt.cudaStreamCaptureMode, CAPTURE_MODES[mode])
        with torch.cuda.device(self.device_index), torch.cuda.stream(stream):
            check_cuda(rt.cudaStreamBeginCaptureToGraph(raw, graph, parents or None, None, len(parents),
                                                        capture_mode), "cudaStreamBeginCaptureToGraph")
            try:
                result = fn()
                leaves = capture_leaves(rt, raw)
            except Exception as exc:
                with contextlib.suppress(Exception):
                    rt.cudaStreamEndCapture(raw)
                with contextlib.suppress(Exception):
                    rt.cudaGetLastError()
                if isinstance(exc, GraphlabError):
                    raise
                raise capture_error(diagnose(exc, prefer_filename), exc) from None
            err, _ = rt.cudaStreamEndCapture(raw)
            if int(err) != 0:
                rt.cudaGetLastError()
                raise CaptureError(f"capture into the conditional body was invalidated ({err!r}): the body did "
                                   "something stream capture does not allow (a host sync, another stream); keep "
                                   "the body to GPU work on the current stream")
        return leaves, result

    # -- running ------------------------------------------------------------------------------------------
    def instantiate(self) -> float:
        """Instantiate (and upload) the graph; returns the host milliseconds it took."""
        rt = self._rt
        with Stopwatch() as instantiating, torch.cuda.device(self.device_index):
            err, graph_exec = rt.cudaGraphInstantiate(self.graph, 0)
            if int(err) != 0:
                rt.cudaGetLastError()
                raise BadInputError(
                    f"cudaGraphInstantiate refused the conditional graph ({err!r}): a body holds a node conditional "
                    "bodies do not allow (event record/wait, e.g. torch.cuda.Event(external=True) or NCCL; host "
                    "callbacks; memory alloc/free nodes); bodies take kernels, copies, memsets and child graphs")
            self.exec = graph_exec
            stream = torch.cuda.current_stream(self.device_index)
            check_cuda(rt.cudaGraphUpload(self.exec, self._stream(stream)), "cudaGraphUpload")
            torch.cuda.synchronize(self.device_index)
        return instantiating.ms

    def _stream(self, stream: Any) -> Any:
        key = int(stream.cuda_stream)
        raw = self._streams.get(key)
        if raw is None:
            raw = self._streams[key] = self._rt.cudaStream_t(init_value=key)
        return raw

    def launch(self, stream: Any) -> None:
        """Launch the instantiated graph on a torch stream (asynchronous: no host sync)."""
        if self.exec is None:
            raise BadInputError("this conditional graph was closed (or never instantiated): build it again")
        (err,) = self._rt.cudaGraphLaunch(self.exec, self._stream(stream))
        if int(err) != 0:
            raise UnsupportedError(f"cudaGraphLaunch of the conditional graph failed with {err!r}: the driver "
                                   "refused to run it on this stream; rerun with CUDA_LAUNCH_BLOCKING=1 to see the "
                                   "failing node")

    def dot(self, flags: int = 1) -> str:
        """The DOT text of the whole graph (bodies included) from cudaGraphDebugDotPrint."""
        if self.graph is None:
            raise BadInputError("this conditional graph was closed: there is nothing to dump; build it again")
        return dot_from_handle(self.handle, flags)

    def node_count(self) -> int:
        """Nodes in the top-level graph (bodies not counted)."""
        _, count = check_cuda(self._rt.cudaGraphGetNodes(self.graph, numNodes=0), "cudaGraphGetNodes")
        return int(count)

    def destroy(self) -> None:
        """Destroy the executable and the graph (idempotent; errors at interpreter exit are ignored)."""
        rt = self._rt
        if self.exec is not None:
            with contextlib.suppress(Exception):
                rt.cudaGraphExecDestroy(self.exec)
            self.exec = None
        if self.graph is not None:
            with contextlib.suppress(Exception):
                rt.cudaGraphDestroy(self.graph)
            self.graph = None
        self.keep.clear()


__all__ = ["CAPTURE_MODES", "COND_TYPES", "GraphAssembly", "capture_leaves"]
