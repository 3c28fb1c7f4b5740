"""Which CUDA conditional nodes this machine can build with PyTorch bodies, and what is missing.

    >>> import graphlab as gl
    >>> support = gl.conditional_support()       # doctest: +SKIP
    >>> support.kinds                            # doctest: +SKIP
    {'if': True, 'if_else': True, 'while': True, 'switch': True}
    >>> support.require("switch", "child")       # raises ConditionalUnsupportedError if it cannot  # doctest: +SKIP

The facts come from the driver (`cudaDriverGetVersion`: IF and WHILE need a CUDA 12.3 driver,
IF/ELSE and SWITCH 12.8), cuda-bindings (the graph API from Python; attributes detected, not
versions parsed), NVRTC (compiles the tiny kernel that sets the condition from a device tensor) and
torch (detected features: `keep_graph` + `raw_cuda_graph` for route "child", the allocator's
pool-routing calls for route "capture", `torch._higher_order_ops.cudagraph_conditional_nodes` for
`torch.cond` capture, torch >= 2.12).

Pure of heavy imports: torch, cuda-bindings and NVRTC are only touched inside `detect_facts`, and
every probe there survives their absence. `ConditionalSupport.from_facts` is pure logic (tested on CPU).
"""
from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import inspect
from dataclasses import asdict, dataclass, field
from typing import Any

from graphlab import present
from graphlab.conditional.results import RECORDING
from graphlab.errors import ConditionalUnsupportedError, RecordingError
from graphlab.loader import load
from graphlab.mode import recorded_gpu, stand_in
from graphlab.present import ShownAsTable
from graphlab.results_types import keep_known, recorded_result

#: CUDA driver versions (cudaDriverGetVersion: 1000 * major + 10 * minor) that added each kind.
KIND_MIN_DRIVER = {"if": 12030, "while": 12030, "if_else": 12080, "switch": 12080}
KINDS = tuple(KIND_MIN_DRIVER)
#: "child": bodies captured by torch as their own graphs, placed as child-graph nodes;
#: "capture": bodies captured straight into the conditional's body graph, allocator on a torch pool;
#: "torch": torch.cond captured by torch itself (IF nodes; torch >= 2.12).
ROUTES = ("child", "capture", "torch")
#: each route in words, for the support table
ROUTE_WORDS = {"child": "torch graphs as child nodes", "capture": "captured straight into the body",
               "torch": "torch.cond captured by torch"}
POOL_ROUTING = ("_cuda_beginAllocateCurrentStreamToPool", "_cuda_endAllocateToPool", "_cuda_releasePool")
TORCH_COND_MODULE = "torch._higher_order_ops.cudagraph_conditional_nodes"


def driver_version_text(version: int | None) -> str:
    """12080 -> "12.8"; None -> "unknown"."""
    if not version:
        return "unknown"
    return f"{version // 1000}.{(version % 1000) // 10}"


@dataclass(frozen=True)
class ConditionalFacts:
    """What `detect_facts` found; every field has a safe default so tests can state only what matters."""

    cuda_available: bool = False
    torch_version: str | None = None
    driver_version: int | None = None          # cudaDriverGetVersion, e.g. 13000
    cuda_bindings: str | None = None           # installed cuda-bindings version (display only)
    bindings_kinds: tuple[str, ...] = ()       # conditional kinds cuda-bindings names (cudaGraphCondType*)
    bindings_node_params: bool = False         # cudaGraphNodeParams.conditional and cudaGraphAddNode exist
    nvrtc: str | None = None                   # NVRTC version, when libnvrtc loads
    nvrtc_error: str | None = None
    keep_graph: bool = False                   # torch.cuda.CUDAGraph(keep_graph=...)
    raw_cuda_graph: bool = False               # CUDAGraph.raw_cuda_graph()
    pool_routing: bool = False                 # torch._C._cuda_beginAllocateCurrentStreamToPool & co
    torch_cond: bool = False                   # torch.cond captured into IF nodes (torch >= 2.12)
    torch_while: bool = False                  # torch.while_loop captured into WHILE nodes (torch >= 2.14)


@recorded_result(entry="support", recording=RECORDING, fields={"kinds": 1, "routes": 1, "missing": 1, "facts": 1},
                 optional=("facts",))
@dataclass(frozen=True)
class ConditionalSupport(ShownAsTable):
    """Which conditional kinds and routes work here; `missing[...]` says why one does not.

    Attributes:
        kinds: {"if", "if_else", "while", "switch"} -> buildable by graphlab on this machine.
        routes: {"child", "capture", "torch"} -> usable.
        missing: "kind:if" / "route:capture" -> one sentence naming what is missing.
        facts: the raw facts (versions, detected features).
        recorded: in recorded mode, what the recording's GPU supported (shown beside this machine's, never as it);
            None otherwise. `kinds`, `routes` and `require` are always this machine's.
        recorded_where: the recording's GPU and date, as its column says it.
    """

    kinds: dict[str, bool]
    routes: dict[str, bool]
    missing: dict[str, str]
    facts: ConditionalFacts = field(default_factory=ConditionalFacts)
    recorded: ConditionalSupport | None = field(default=None, compare=False, repr=False)
    recorded_where: str = field(default="", compare=False, repr=False)

    @classmethod
    def from_facts(cls, facts: ConditionalFacts) -> ConditionalSupport:
        """Decide from facts alone (pure)."""
        base: list[str] = []
        if not facts.cuda_available:
            base.append("a CUDA GPU (torch.cuda.is_available() is False)")
        if facts.cuda_bindings is None:
            base.append("cuda-bindings (pip install 'cuda-bindings>=12.8')")
        elif not facts.bindings_node_params:
            base.append(f"a cuda-bindings with cudaGraphAddNode/cudaGraphNodeParams.conditional "
                        f"(installed: {facts.cuda_bindings}; pip install -U cuda-bindings)")
        if facts.nvrtc is None:
            detail = f": {facts.nvrtc_error}" if facts.nvrtc_error else ""
            base.append(f"NVRTC, to compile the set-condition kernel (pip install nvidia-cuda-nvrtc){detail}")
        missing: dict[str, str] = {}
        kinds: dict[str, bool] = {}
        for kind, need in KIND_MIN_DRIVER.items():
            why = list(base)
            if facts.driver_version is not None and facts.driver_version < need:
                why.append(f"a CUDA {driver_version_text(need)} driver for {kind.upper().replace('_', '/')} "
                           f"nodes (this driver supports CUDA {driver_version_text(facts.driver_version)})")
            elif facts.driver_version is None and facts.cuda_available:
                why.append("a readable CUDA driver version (cudaDriverGetVersion failed)")
            bindings_name = "if" if kind == "if_else" else kind
            if facts.cuda_bindings is not None and facts.bindings_kinds and bindings_name not in facts.bindings_kinds:
                why.append(f"a cuda-bindings that names {bindings_name.upper()} conditionals "
                           f"(installed: {facts.cuda_bindings})")
            kinds[kind] = not why
            if why:
                missing[f"kind:{kind}"] = "needs " + "; ".join(why)
        routes = {
            "child": facts.keep_graph and facts.raw_cuda_graph,
            "capture": facts.pool_routing,
            "torch": facts.torch_cond,
        }
        torch_text = f"torch {facts.torch_version}" if facts.torch_version else "torch (not installed)"
        if not routes["child"]:
            missing["route:child"] = (f"needs torch.cuda.CUDAGraph(keep_graph=True) and raw_cuda_graph() "
                                      f"(torch >= 2.8); this is {torch_text}")
        if not routes["capture"]:
            missing["route:capture"] = (f"needs torch._C.{', '.join(POOL_ROUTING)} to keep the allocator on a "
                                        f"graph pool; {torch_text} lacks them")
        if not routes["torch"]:
            missing["route:torch"] = (f"needs {TORCH_COND_MODULE} and CUDAGraph.begin_capture_to_if_node "
                                      f"(torch.cond captured into IF nodes: torch >= 2.12 built with CUDA); "
                                      f"{torch_text} lacks them")
        return cls(kinds=kinds, routes=routes, missing=missing, facts=facts)

    # -- asking -------------------------------------------------------------------------------------------
    def can(self, kind: str, route: str = "child") -> bool:
        """True when a conditional of `kind` can be built by `route` here."""
        return bool(self.kinds.get(kind)) and bool(self.routes.get(route))

    def require(self, kind: str, route: str) -> None:
        """Raise one ConditionalUnsupportedError naming everything missing for `kind` by `route`."""
        if kind not in KIND_MIN_DRIVER:
            raise ConditionalUnsupportedError(f"unknown conditional kind {kind!r}; one of {', '.join(KINDS)}")
        if route not in ROUTES:
            raise ConditionalUnsupportedError(f"unknown route {route!r}; one of {', '.join(ROUTES)}")
        reasons = [self.missing[k] for k in (f"kind:{kind}", f"route:{route}") if k in self.missing]
        if reasons:
            label = kind.upper().replace("_", "/")
            raise ConditionalUnsupportedError(f"a {label} conditional node by route {route!r} {'; and '.join(reasons)}")

    def best_route(self) -> str | None:
        """The route graphlab uses by default here ("child", else "capture"), or None."""
        for route in ("child", "capture"):
            if self.routes[route]:
                return route
        return None

    # -- display --------------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {"kinds": dict(self.kinds), "routes": dict(self.routes), "missing": dict(self.missing),
                "facts": asdict(self.facts)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ConditionalSupport:
        facts = keep_known(ConditionalFacts, data.get("facts", {}))  # a newer recorder may detect more
        facts["bindings_kinds"] = tuple(facts.get("bindings_kinds", ()))
        return cls(kinds=dict(data["kinds"]), routes=dict(data["routes"]), missing=dict(data["missing"]),
                   facts=ConditionalFacts(**facts))

    @classmethod
    def from_recording(cls, data: dict[str, Any], recording: Any) -> ConditionalSupport:
        """What the recording's GPU supported (`gl.load(ConditionalSupport)`); `recorded_where` says which GPU and
        when, as the support table's column names it."""
        where = f"{recording.gpu}, recorded on {str(recording.provenance.get('date', '?'))[:10]}"
        return dataclasses.replace(cls.from_dict(data), recorded_where=where)

    def _shared(self) -> str:
        """The reason every kind shares (no GPU, no cuda-bindings, no NVRTC), or ""."""
        reasons = [self.missing.get(f"kind:{k}", "") for k in self.kinds]
        if not all(reasons):
            return ""
        first = reasons[0].removeprefix("needs ").split("; ")
        common = [part for part in first if all(part in r for r in reasons)]
        return "; ".join(common)

    def _column(self) -> dict[str, str]:
        """Row label -> what this support says for it, in words (yes, or no and why; versions for the facts)."""
        f, shared = self.facts, self._shared()
        out: dict[str, str] = {}
        for kind, ok in self.kinds.items():
            label = f"{kind.upper().replace('_', '/')} node"
            if ok:
                out[label] = "yes"
                continue
            own = self.missing[f"kind:{kind}"].removeprefix("needs ")
            if shared:
                own = "; ".join(part for part in own.split("; ") if part not in shared.split("; "))
            out[label] = "no" + (f": needs {own}" if own else "")
        for route, ok in self.routes.items():
            label = f"route '{route}' ({ROUTE_WORDS[route]})"
            if ok and f.cuda_available:
                out[label] = "yes"
            elif ok:
                out[label] = "no: no CUDA GPU (this torch has the calls the route needs)"
            else:
                out[label] = "no: " + self._route_short(route)
        out["CUDA driver"] = (driver_version_text(f.driver_version) if f.driver_version or f.cuda_available
                              else "none (no GPU)")
        out["cuda-bindings"] = f.cuda_bindings or "not installed"
        out["NVRTC"] = f.nvrtc or "not found"
        out["torch"] = f.torch_version or "not installed"
        return out

    def _route_short(self, route: str) -> str:
        """Why a route is missing, in a table cell's few words (`missing` has the full sentence for errors)."""
        torch_text = f"torch {self.facts.torch_version}" if self.facts.torch_version else "torch (not installed)"
        return {
            "child": f"needs CUDAGraph(keep_graph=True) and raw_cuda_graph() (torch >= 2.8); {torch_text} lacks them",
            "capture": f"{torch_text} lacks the allocator's pool-routing calls (`torch._C.{POOL_ROUTING[0]}` and "
                       f"{len(POOL_ROUTING) - 1} more)",
            "torch": f"torch.cond capture needs torch >= 2.12 built with CUDA; {torch_text} lacks it",
        }[route]

    def rows(self) -> list[tuple[str, str]]:
        """(what, this machine's answer) pairs, in words."""
        return list(self._column().items())

    def table(self) -> present.Table:
        """What this machine can build, and in recorded mode what the recording's GPU could, side by side; a
        reason every kind shares is said once, under the table."""
        here = self._column()
        there = self.recorded._column() if self.recorded is not None else {}
        rows = [{"what": label, "here": value, **({"there": there.get(label)} if there else {})}
                for label, value in here.items()]
        columns = [present.Column("what", "", kind="text"), present.Column("here", "this machine", kind="text")]
        if there:
            columns.append(present.Column("there", self.recorded_where, kind="text"))
        notes = []
        shared = self._shared()
        if shared:
            notes.append(f"No conditional kind can be built on this machine: every kind needs {shared}.")
        if self.recorded is not None:
            notes.append(f"The last column is the recording's GPU ({self.recorded_where}), not this machine: the "
                         "conditional studies below come from it.")
        title = ("Conditional nodes: this machine, and the GPU of the recordings" if there else
                 "Conditional nodes on this machine")
        return present.Table(rows, columns, index="what", title=title, notes=notes)


# -- detection (touches torch, cuda-bindings and NVRTC; never raises) -------------------------------------
def _torch_facts() -> dict[str, Any]:
    if importlib.util.find_spec("torch") is None:
        return {}
    import torch

    graph_cls = getattr(torch.cuda, "CUDAGraph", None)
    try:
        keep_graph = graph_cls is not None and "keep_graph" in inspect.signature(graph_cls).parameters
    except (TypeError, ValueError):
        keep_graph = False
    try:
        torch_cond = importlib.util.find_spec(TORCH_COND_MODULE) is not None
    except (ImportError, ValueError):
        torch_cond = False
    try:
        cuda_available = bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001 - a broken driver reads as "no GPU"
        cuda_available = False
    return {
        "torch_version": torch.__version__,
        "cuda_available": cuda_available,
        "keep_graph": keep_graph,
        "raw_cuda_graph": hasattr(graph_cls, "raw_cuda_graph"),
        "pool_routing": all(hasattr(torch._C, name) for name in POOL_ROUTING),
        "torch_cond": torch_cond and hasattr(graph_cls, "begin_capture_to_if_node"),
        "torch_while": hasattr(graph_cls, "begin_capture_to_while_node"),
    }


def _bindings_facts(cuda_available: bool) -> dict[str, Any]:
    try:
        if importlib.util.find_spec("cuda.bindings") is None:
            return {}
    except (ImportError, ValueError):
        return {}
    out: dict[str, Any] = {}
    try:
        from importlib.metadata import version

        out["cuda_bindings"] = version("cuda-bindings")
    except Exception:  # noqa: BLE001
        out["cuda_bindings"] = "unknown version"
    try:
        rt = importlib.import_module("cuda.bindings.runtime")
    except Exception as exc:  # noqa: BLE001
        out["nvrtc_error"] = f"cuda.bindings.runtime does not import: {exc}"
        return out
    members = getattr(getattr(rt, "cudaGraphConditionalNodeType", None), "__members__", {})
    out["bindings_kinds"] = tuple(k for k in ("if", "while", "switch") if f"cudaGraphCondType{k.title()}" in members)
    out["bindings_node_params"] = hasattr(rt, "cudaGraphAddNode") and hasattr(rt, "cudaGraphNodeParams") and \
        hasattr(rt, "cudaGraphConditionalHandleCreate")
    if cuda_available:
        try:
            err, value = rt.cudaDriverGetVersion()
            if int(err) == 0:
                out["driver_version"] = int(value)
        except Exception:  # noqa: BLE001
            pass
    try:
        nvrtc = importlib.import_module("cuda.bindings.nvrtc")
        err, major, minor = nvrtc.nvrtcVersion()
        if int(err) == 0:
            out["nvrtc"] = f"{major}.{minor}"
    except Exception as exc:  # noqa: BLE001 - libnvrtc not found, typically
        out["nvrtc_error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
    return out


def detect_facts() -> ConditionalFacts:
    """Look at this machine (torch, driver, cuda-bindings, NVRTC); never raises."""
    facts = _torch_facts()
    facts.update(_bindings_facts(bool(facts.get("cuda_available"))))
    return ConditionalFacts(**facts)


_CACHE: dict[str, ConditionalSupport] = {}


def _support_here(refresh: bool = False) -> ConditionalSupport:
    if refresh or "here" not in _CACHE:
        _CACHE["here"] = ConditionalSupport.from_facts(detect_facts())
    return _CACHE["here"]


def _with_recording(refresh: bool = False) -> ConditionalSupport:
    """Recorded mode: this machine's support (what `require` decides by), with the recording's GPU beside it
    for display, so the recorded features never read as this machine's."""
    here = _support_here(refresh)
    try:
        there = load(ConditionalSupport, RECORDING, gpu=recorded_gpu())
    except (RecordingError, KeyError, TypeError, ValueError):
        return here
    return dataclasses.replace(here, recorded=there, recorded_where=there.recorded_where)


@stand_in(_with_recording)
def conditional_support(refresh: bool = False) -> ConditionalSupport:
    """What this machine can build: conditional kinds, routes, and what is missing (cached). In recorded mode the
    table also shows what the recording's GPU supported, in its own column."""
    return _support_here(refresh)


def conditional_features() -> dict[str, bool]:
    """Flat yes/no features for `gl.about()`'s graph-feature line (never raises)."""
    try:
        support = conditional_support()
    except Exception:  # noqa: BLE001 - the environment report must always print
        return {}
    out = {f"cond_{kind}": ok for kind, ok in support.kinds.items()}
    out["cond_torch_cond"] = support.routes["torch"]
    return out


__all__ = ["ConditionalFacts", "ConditionalSupport", "KINDS", "KIND_MIN_DRIVER", "ROUTES", "ROUTE_WORDS",
           "conditional_features",
           "conditional_support", "detect_facts", "driver_version_text"]
