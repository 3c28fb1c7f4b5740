"""Control flow inside one CUDA graph: IF, IF/ELSE, WHILE and SWITCH nodes with PyTorch bodies.

The condition is a one-element CUDA tensor that your own captured code computes, so the GPU decides
which body runs (or how often) without a host sync:

    >>> import torch, graphlab as gl
    >>> x = torch.randn(8, 256, device="cuda"); out = torch.empty(8, 10, device="cuda")
    >>> confident = torch.zeros((), dtype=torch.bool, device="cuda")
    >>> def head():                                  # runs every launch, before the IF
    ...     h.copy_(first(x)); confident.copy_(probe(h).amax() > 0.9)
    >>> g = gl.cond(confident, lambda: out.copy_(small(h)), lambda: out.copy_(large(h)), before=head)  # doctest: +SKIP
    >>> x.copy_(new_x); g.launch()     # one launch; `out` holds the chosen branch's result  # doctest: +SKIP
    >>> gl.render(g)                                  # the IF/ELSE node and both bodies  # doctest: +SKIP

Every function takes no arguments and works on tensors made outside it, like a `with gl.capturing()`
block. Each one runs `warmup_calls` times eagerly first (cuBLAS handles, lazy init), so set your inputs
*after* building and before each launch. Bodies must be inference code without random ops, host
syncs or collectives (CUDA allows kernels, copies, memsets and child graphs in a body).

Two routes build the same graph (`route=`, default "auto" = "child" where torch allows):
  "child":   each function is captured by `gl.capture` as its own torch graph (memory in one shared
             torch graph pool) and placed as a child-graph node; graphlab adds the set-condition
             kernel and the conditional node through cuda-bindings.
  "capture": each function is captured straight into its body graph (`cudaStreamBeginCaptureToGraph`)
             while torch's allocator serves the capture stream from a private graph pool.

Who owns the memory: the `ConditionalGraph` holds the `CapturedGraph` of every stage (route "child":
their shared pool lives as long as they do) or the private pool (route "capture", released by
`close()`), the functions you passed (so the tensors they close over stay alive), the condition
tensor and the kernel arguments. `close()`, or garbage collection, destroys the executable graph
first, then gives the memory back. Keep tensors the functions only reach through globals alive
yourself.

In recorded mode these functions refuse with `ConditionalUnsupportedError` (a recording holds no
graph to launch); the conditional studies in `graphlab.studies.conditional` answer from recordings.
"""
from __future__ import annotations

import contextlib
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch

from graphlab import present
from graphlab.clock import Stopwatch
from graphlab.capture.api import capture
from graphlab.capture.streams import side_stream
from graphlab.conditional.builder import GraphAssembly
from graphlab.conditional.kernel import ConditionArgs, flag_kind, set_condition_kernel
from graphlab.conditional.support import conditional_support
from graphlab.env import require_cuda
from graphlab.errors import BadInputError, CaptureError, ConditionalUnsupportedError
from graphlab.graph.export import raw_graph_handle
from graphlab.mode import stand_in

ROUTE_CHOICES = ("auto", "child", "capture")
DEFAULT_MAX_ITERATIONS = 10_000
Fn = Callable[[], Any]


class _ChildStages:
    """Route "child": `gl.capture` each function into its own torch graph; one shared torch pool."""

    def __init__(self, asm: GraphAssembly, name: str, warmup_calls: int):
        self.asm, self.name, self.warmup_calls = asm, name, warmup_calls
        self.captured: dict[str, Any] = {}

    def add(self, graph: Any, deps: list[Any], fn: Fn, label: str) -> list[Any]:
        owner = next(iter(self.captured.values()), None)
        cg = capture(fn, warmup_calls=self.warmup_calls, pool=owner, name=f"{self.name}:{label}",
                     device=self.asm.device_index)
        self.captured[label] = cg
        handle = raw_graph_handle(cg.torch_graph)
        if handle is None:
            raise ConditionalUnsupportedError(
                f"route 'child' needs torch.cuda.CUDAGraph(keep_graph=True).raw_cuda_graph(), which torch "
                f"{torch.__version__} did not give for the {label!r} stage (torch >= 2.8 does): use route='capture'")
        return [self.asm.add_child(graph, deps, handle)]

    def close(self) -> None:
        for cg in self.captured.values():
            with contextlib.suppress(Exception):
                cg.reset()


class _CapturedStages:
    """Route "capture": capture each function straight into its graph, allocator on one private pool.

    The pool is a `torch.cuda.graph_pool_handle()`. Each stage's `beginAllocate...ToPool` takes one
    reference on it (as each torch `capture_begin` does); `close` gives back exactly those, as each
    torch graph's `reset` does, so the pool's memory is freed only after the graph that uses it.
    """

    def __init__(self, asm: GraphAssembly, name: str, warmup_calls: int, mode: str = "thread_local"):
        for needed in ("_cuda_beginAllocateCurrentStreamToPool", "_cuda_endAllocateToPool", "_cuda_releasePool"):
            if not hasattr(torch._C, needed):
                raise ConditionalUnsupportedError(f"route 'capture' needs torch._C.{needed}, which torch "
                                                  f"{torch.__version__} lacks: use route='child'")
        self.asm, self.name, self.warmup_calls, self.mode = asm, name, warmup_calls, mode
        self.pool = torch.cuda.graph_pool_handle()
        self.pool_refs = 0
        self.stream = side_stream(asm.device_index)
        self.results: dict[str, Any] = {}
        self.captured: dict[str, Any] = {}  # route "child" only; kept for a uniform interface

    def add(self, graph: Any, deps: list[Any], fn: Fn, label: str) -> list[Any]:
        index = self.asm.device_index
        with torch.cuda.device(index):
            current = torch.cuda.current_stream()
            self.stream.wait_stream(current)
            with torch.cuda.stream(self.stream):
                for _ in range(self.warmup_calls):
                    fn()
            current.wait_stream(self.stream)
            torch.cuda.synchronize()
            with torch.cuda.stream(self.stream):  # the allocator routes the *current* stream to the pool
                torch._C._cuda_beginAllocateCurrentStreamToPool(index, self.pool)
            self.pool_refs += 1
            try:
                leaves, result = self.asm.capture_into(
                    graph, deps, fn, stream=self.stream, mode=self.mode,
                    prefer_filename=getattr(getattr(fn, "__code__", None), "co_filename", None))
            finally:
                torch._C._cuda_endAllocateToPool(index, self.pool)
        if {int(n) for n in leaves} == {int(d) for d in deps}:
            raise BadInputError(f"{self.name}: the {label!r} function captured no GPU work, and a body needs at "
                                "least one kernel or copy: give it PyTorch ops on CUDA tensors")
        self.results[label] = result
        return leaves

    def close(self) -> None:
        self.results.clear()
        refs, self.pool_refs = self.pool_refs, 0
        for _ in range(refs):
            with contextlib.suppress(Exception):
                torch._C._cuda_releasePool(self.asm.device_index, self.pool)


#: graphs whose build failed part-way: kept, not destroyed, for the life of the process. Destroying one
#: after a capture into its body had failed aborted the process on the H200 (torch 2.11, driver 580):
#: "Fatal Python error: Aborted" in cudaGraphDestroy. A failed build costs its host-side graph object.
_ABANDONED: list[Any] = []


def _abandon(asm: GraphAssembly, stages: Any) -> None:
    """After a failed build: drop the executable if any, keep the half-built graph alive, release the pools."""
    if asm.exec is not None:
        with contextlib.suppress(Exception):
            asm._rt.cudaGraphExecDestroy(asm.exec)
        asm.exec = None
    _ABANDONED.append((asm.graph, list(asm.keep)))
    asm.graph = None
    asm.keep.clear()
    stages.close()


def _cleanup(asm: GraphAssembly, stages: Any) -> None:
    """Destroy the executable graph first (it points into the pools), then give the memory back."""
    asm.destroy()
    stages.close()


@dataclass(frozen=True)
class ConditionalPlan:
    """What a conditional graph is made of, before it is built (`gl.cond`, `gl.while_loop`, `gl.switch` make one).

    Attributes:
        kind: "if", "if_else", "while" or "switch".
        condition: the one-element CUDA tensor the set-condition kernel reads (SWITCH: the index).
        branches: (name, function) of each body, in order ("then", "else" / "body" / "case_0", ...).
        before, after: run in the same graph before / after the conditional node, or None.
        max_iterations: WHILE only: the loop stops after this many iterations (0: no limit).
    """

    kind: str
    condition: Any
    branches: tuple[tuple[str, Fn], ...]
    before: Fn | None = None
    after: Fn | None = None
    max_iterations: int = 0

    @property
    def functions(self) -> dict[str, Fn]:
        """Every function by its stage name, in graph order."""
        stages = [("before", self.before), *self.branches, ("after", self.after)]
        return {label: fn for label, fn in stages if fn is not None}


@dataclass(frozen=True)
class BuildCost:
    """What building a conditional graph cost.

    Attributes:
        capture_ms, instantiate_ms: host time to capture every stage (warm-up included) / to instantiate.
        pool_bytes: growth of torch.cuda.memory_reserved() over the whole build.
        exec_bytes: drop of free device memory over instantiate (the executable graph).
    """

    capture_ms: float
    instantiate_ms: float
    pool_bytes: int
    exec_bytes: int


class ConditionalGraph:
    """One instantiated CUDA graph holding a conditional node with PyTorch bodies (see module docs).

    Attributes:
        kind: "if", "if_else", "while" or "switch"; route: "child" or "capture".
        branches: the body names in order ("then", "else" / "body" / "case_0", ...).
        condition: the CUDA tensor the set-condition kernel reads at each launch.
        iterations: WHILE only: a CUDA int32 holding how many times the body ran in the last launch.
        max_iterations: WHILE only: the loop stops after this many iterations (0: no limit).
        stages: route "child": {"before"/branch/"after": CapturedGraph}; route "capture": {}.
        capture_ms, instantiate_ms: host time to capture every stage (warm-up included) / to instantiate.
        pool_bytes: growth of torch.cuda.memory_reserved() over the whole build.
        exec_bytes: drop of free device memory over instantiate (the executable graph).
    """

    def __init__(self, plan: ConditionalPlan, *, route: str, name: str, asm: GraphAssembly, stages: Any,
                 iterations: Any, cost: BuildCost, kernel_how: str):
        self.plan = plan
        self.kind, self.route, self.name = plan.kind, route, name
        self.branches = tuple(label for label, _ in plan.branches)
        self.condition = plan.condition
        self.iterations = iterations
        self.max_iterations = plan.max_iterations
        self.functions = plan.functions
        self.capture_ms, self.instantiate_ms = cost.capture_ms, cost.instantiate_ms
        self.pool_bytes, self.exec_bytes = cost.pool_bytes, cost.exec_bytes
        self.kernel_how = kernel_how
        self._asm = asm
        self._stages = stages
        self._parsed: Any = None
        self._finalizer = weakref.finalize(self, _cleanup, asm, stages)
        self._finalizer.atexit = False  # at interpreter exit the CUDA context may already be gone

    @property
    def stages(self) -> dict[str, Any]:
        return dict(self._stages.captured)

    @property
    def device(self) -> Any:
        return torch.device("cuda", self._asm.device_index)

    @property
    def closed(self) -> bool:
        return self._asm.exec is None

    def launch(self) -> None:
        """Launch the whole graph once on torch's current stream of its device (no host sync)."""
        self._asm.launch(torch.cuda.current_stream(self._asm.device_index))

    __call__ = launch

    def dot(self, flags: int = 1) -> str:
        """DOT text of the outer graph and every body (`cudaGraphDebugDotPrint`, flags 1 = verbose)."""
        return self._asm.dot(flags)

    @property
    def graph(self) -> Any:
        """The parsed graph (`graphlab.graph.model.CudaGraph`), for gl.render / gl.inspect."""
        if self._parsed is None:
            from graphlab.graph.dot_parser import parse_dot

            self._parsed = parse_dot(self.dot(), source=f"<conditional {self.name}>")
        return self._parsed

    def close(self) -> None:
        """Destroy the executable graph and give its memory back (idempotent)."""
        self._finalizer()

    def summary(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "route": self.route, "branches": list(self.branches),
                "max_iterations": self.max_iterations if self.kind == "while" else None,
                "capture_ms": round(self.capture_ms, 3), "instantiate_ms": round(self.instantiate_ms, 3),
                "pool_bytes": self.pool_bytes, "exec_bytes": self.exec_bytes, "set_condition_kernel": self.kernel_how,
                "closed": self.closed}

    def __repr__(self) -> str:
        s = self.summary()
        state = ("closed" if s["closed"] else
                 f"capture {present.duration(1e3 * s['capture_ms'])}, pool +{present.size(s['pool_bytes'])}")
        return (f"ConditionalGraph({s['name']!r}: {s['kind'].upper().replace('_', '/')} over {', '.join(s['branches'])}"
                f", route {s['route']!r}; {state})")

    def table(self) -> present.Table:
        """What this graph is and what building it cost, as facts in words."""
        s = self.summary()
        rows = [("kind", f"{s['kind'].upper().replace('_', '/')} over {present.listing(s['branches'])}"),
                ("route", s["route"])]
        if s["max_iterations"] is not None:
            rows.append(("at most", f"{present.count(s['max_iterations'])} iterations"))
        rows += [("capture", present.duration(1e3 * s["capture_ms"])),
                 ("instantiate", present.duration(1e3 * s["instantiate_ms"])),
                 ("memory pool", present.size(s["pool_bytes"])), ("graph executable", present.size(s["exec_bytes"])),
                 ("set-condition kernel", s["set_condition_kernel"]), ("closed", present.yes_no(s["closed"]))]
        return present.facts(rows, title=f"ConditionalGraph `{self.name}`")

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


def _check_fn(fn: Any, what: str) -> None:
    if not callable(fn):
        raise BadInputError(f"{what} must be a function of no arguments (it works on tensors made outside it), "
                            f"got {type(fn).__name__}")


def _route(route: str, kind: str) -> str:
    if route not in ROUTE_CHOICES:
        raise BadInputError(f"route must be one of {', '.join(ROUTE_CHOICES)}, got {route!r}")
    support = conditional_support()
    chosen = (support.best_route() or "child") if route == "auto" else route
    support.require(kind, chosen)
    return chosen


def _no_graph_when_recorded(plan: ConditionalPlan, *, route: str, warmup_calls: int, name: str,
                            capture_mode: str = "thread_local") -> ConditionalGraph:
    """`build`'s recorded stand-in: a recording holds no graph to launch, so say where recorded results are."""
    api = {"if": "cond", "if_else": "cond", "while": "while_loop"}.get(plan.kind, plan.kind)
    raise ConditionalUnsupportedError(
        f"gl.{api} builds a graph on this machine's GPU, but recorded mode is on: the conditional studies "
        "(graphlab.studies.conditional: early_exit_study, decode_loop_study, ...) show recorded results, or "
        "gl.set_mode('live') on a GPU builds the graph")


@stand_in(_no_graph_when_recorded)
def build(plan: ConditionalPlan, *, route: str, warmup_calls: int, name: str,
          capture_mode: str = "thread_local") -> ConditionalGraph:
    """Build the ConditionalGraph `plan` describes; the public functions below check their arguments and call this."""
    kind, condition, branches, before, after = plan.kind, plan.condition, plan.branches, plan.before, plan.after
    require_cuda(f"a {kind.upper()} conditional graph")
    chosen = _route(route, kind)
    flag_kind(condition, as_index=kind == "switch", what="the switch index" if kind == "switch" else
              "the condition")
    for label, fn in [("before", before), ("after", after)]:
        if fn is not None:
            _check_fn(fn, label)
    for label, fn in branches:
        _check_fn(fn, f"the {label!r} body")
    if warmup_calls < 0:
        raise BadInputError(f"warmup_calls must be 0 or more, got {warmup_calls}")
    device_index = condition.device.index if condition.device.index is not None else torch.cuda.current_device()
    kernel = set_condition_kernel(device_index)
    with torch.cuda.device(device_index):
        torch.cuda.synchronize()
        torch.cuda.empty_cache()  # captures empty the cache too: start the memory count from the same floor
        reserved0 = torch.cuda.memory_reserved()
    asm = GraphAssembly(device_index)
    stages: Any = (_ChildStages(asm, name, warmup_calls) if chosen == "child" else
                   _CapturedStages(asm, name, warmup_calls, capture_mode))
    try:
        building = Stopwatch().start()
        with torch.no_grad():
            deps = stages.add(asm.graph, [], before, "before") if before is not None else []
            handle = asm.new_handle()
            iterations = torch.zeros((), dtype=torch.int32, device=condition.device) if kind == "while" else None
            args = ConditionArgs(handle, condition, as_index=kind == "switch", iterations=iterations,
                                 max_iterations=plan.max_iterations if kind == "while" else 0)
            setter = kernel.add_node(asm.graph, deps, args, asm.keep, first=True)
            node, bodies = asm.add_conditional(asm.graph, [setter], handle, "if" if kind == "if_else" else kind,
                                               len(branches))
            for body, (label, fn) in zip(bodies, branches):
                leaves = stages.add(body, [], fn, label)
                if kind == "while":  # re-evaluate the condition at the end of every iteration
                    kernel.add_node(body, leaves, args, asm.keep, first=False)
            if after is not None:
                stages.add(asm.graph, [node], after, "after")
        capture_ms = building.stop() * 1e3
        free0 = torch.cuda.mem_get_info(device_index)[0]
        instantiate_ms = asm.instantiate()
        exec_bytes = max(0, int(free0 - torch.cuda.mem_get_info(device_index)[0]))
        pool_bytes = max(0, torch.cuda.memory_reserved(device_index) - reserved0)
    except CaptureError:  # a capture into a body failed: destroying that graph aborted the process (see _ABANDONED)
        _abandon(asm, stages)
        raise
    except BaseException:
        _cleanup(asm, stages)
        raise
    cost = BuildCost(capture_ms, instantiate_ms, int(pool_bytes), exec_bytes)
    return ConditionalGraph(plan, route=chosen, name=name, asm=asm, stages=stages, iterations=iterations, cost=cost,
                            kernel_how=kernel.how)


def cond(condition: Any, then_fn: Fn, else_fn: Fn | None = None, *, before: Fn | None = None,
         after: Fn | None = None, route: str = "auto", warmup_calls: int = 2, name: str = "cond") -> ConditionalGraph:
    """An IF node (IF/ELSE with `else_fn`) whose branch the GPU picks from `condition` at each launch.

    Args:
        condition: a one-element CUDA tensor (bool or integer); non-zero runs `then_fn`, zero runs
            `else_fn` (or nothing). `before` usually computes it.
        then_fn, else_fn: functions of no arguments (PyTorch code on tensors made outside them).
        before, after: run in the same graph before / after the conditional node, at every launch.
        route: "auto", "child" or "capture" (module docstring); warmup_calls: eager runs of each function first.

    Raises:
        ConditionalUnsupportedError: this machine cannot build it (the message says what is missing).
        CaptureError: a function did something capture does not allow (named cause, line and fix).
    """
    branches = [("then", then_fn)] + ([("else", else_fn)] if else_fn is not None else [])
    plan = ConditionalPlan("if_else" if else_fn is not None else "if", condition, tuple(branches), before, after)
    return build(plan, route=route, warmup_calls=warmup_calls, name=name)


def while_loop(condition: Any, body_fn: Fn, *, before: Fn | None = None, after: Fn | None = None,
               max_iterations: int = DEFAULT_MAX_ITERATIONS, route: str = "auto", warmup_calls: int = 2,
               name: str = "while_loop") -> ConditionalGraph:
    """A WHILE node: `while condition: body_fn()`, all on the GPU, in one launch.

    `body_fn` must update `condition` (a one-element CUDA bool or integer tensor); it is read after
    `before` and again after every iteration. `max_iterations` stops the loop
    after that many iterations whatever the condition says (default 10,000, so a condition that never
    turns false cannot hang the GPU; 0: no limit); `.iterations` (a CUDA int32) tells how many ran in
    the last launch. Arguments otherwise as `gl.cond`.
    """
    if not isinstance(max_iterations, int) or not 0 <= max_iterations < 2**31:
        raise BadInputError(f"max_iterations must be an int from 0 (no limit) to 2**31-1, got {max_iterations!r}")
    plan = ConditionalPlan("while", condition, (("body", body_fn),), before, after, max_iterations)
    return build(plan, route=route, warmup_calls=warmup_calls, name=name)


def switch(index: Any, branches: Sequence[Fn], *, before: Fn | None = None, after: Fn | None = None,
           route: str = "auto", warmup_calls: int = 2, name: str = "switch") -> ConditionalGraph:
    """A SWITCH node: runs `branches[index]` (none when `index` is negative or too large), in one launch.

    `index` is a one-element CUDA int32/int64 tensor, usually computed by `before`. Arguments
    otherwise as `gl.cond`.
    """
    fns = list(branches)
    if not fns:
        raise BadInputError("switch needs at least one branch: pass a list of functions, one per case")
    plan = ConditionalPlan("switch", index, tuple((f"case_{i}", fn) for i, fn in enumerate(fns)), before, after)
    return build(plan, route=route, warmup_calls=warmup_calls, name=name)


__all__ = ["BuildCost", "ConditionalGraph", "ConditionalPlan", "DEFAULT_MAX_ITERATIONS", "ROUTE_CHOICES", "build", "cond",
           "switch", "while_loop"]
