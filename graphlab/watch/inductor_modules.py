"""Record, while torch.compile compiles, which modules each Inductor kernel fuses (graphlab/watch/kernel_modules.py).

    >>> with record_kernel_modules() as rec:
    ...     compiled = torch.compile(model); compiled(x)
    >>> rec.kernel_modules           # {"triton_poi_fused_addmm_gelu_0": ("blocks.0.fc1", "blocks.0.act"), ...}
    >>> rec.compiles                 # per compile, every launch in order: [(kernel name, modules), ...]
    >>> rec.reason                   # None, or why nothing was recorded

Two of torch's own records, both read from its structured trace (the `torch.__trace` logger that TORCH_TRACE and
tlparse use; a handler on it for the block, nothing patched):
- Inductor's provenance artifact `inductor_provenance_tracking_node_mappings` (kernel launch -> post-grad FX nodes
  -> Dynamo graph nodes), switched on for the block by `torch._inductor.config.trace.provenance_tracking_level = 1`
  (torch >= 2.9) or `trace.provenance_tracking = True` (2.7-2.8), whichever this torch has. On a cache hit
  (Inductor's FX graph cache, AOTAutograd's cache) Inductor writes the mapping it cached, which names the Dynamo
  nodes of the compile that filled the cache: another model of the same shape (`linear`, `gelu` there are
  `input_1`, `input_2` here) gets no modules or, where names coincide, another's. So the block turns both caches
  off while it is open (each where this torch has it) and every compile inside it runs Inductor afresh: the zoo
  GPT's compile took 1.5 s instead of 0.2 s from a warm cache (CPU, torch 2.13; the kernels' own code caches
  stay on). `gl.watch(modules=False)` leaves Inductor and its caches alone.
- the Dynamo graph (`dynamo_output_graph` record), whose nodes' `meta["nn_module_stack"]` name the modules
  (inline_inbuilt_nn_modules or not). The record carries only text, so the graph object is read from the closure
  of the `payload_fn` that torch's `trace_structured` holds while it calls the handler, and reduced at once to
  {node name: innermost module} (no reference kept).

Feature-detected, never raising into the compile: a torch without the provenance option, a record of another
shape, or a Dynamo graph that cannot be read leaves `reason` saying so (and `kernel_modules` empty or partial).
Nested blocks each record; the option is put back as it was when the outermost ends.

torch is imported at the top.
"""
from __future__ import annotations

import importlib
import json
import logging
import sys
import threading
from typing import Any

import torch

from graphlab.watch.kernel_modules import Launch, innermost_module, kernel_modules, launches_from_provenance

__all__ = ["CACHE_OPTIONS", "POST_GRAD_ARTIFACT", "PROVENANCE_ARTIFACT", "KernelModuleRecorder", "provenance_option", "record_kernel_modules"]

PROVENANCE_ARTIFACT = "inductor_provenance_tracking_node_mappings"
#: the graph entering Inductor's post-grad passes (a GraphModule in its record; most node names survive the passes
#: into `cppCodeToPost`; a node a pass makes is not in it): the second way to a node's module
POST_GRAD_ARTIFACT = "before_post_grad_graph"
TRACE_LOGGER = "torch.__trace"


def _inductor_trace_config() -> Any:
    try:  # torch loads Inductor on first compile: load its config module by name
        config = importlib.import_module("torch._inductor.config")
    except Exception:
        return None
    return getattr(config, "trace", None)


#: (config module, option): the compile caches whose hits would replay another compile's provenance
CACHE_OPTIONS = (("torch._inductor.config", "fx_graph_cache"), ("torch._functorch.config", "enable_autograd_cache"))


def _caches_off() -> list[tuple[Any, str, Any]]:
    """Turn off each compile cache this torch has; (module, option, value before) for each one changed."""
    changed = []
    for module_name, option in CACHE_OPTIONS:
        try:
            module = importlib.import_module(module_name)
        except Exception:
            continue
        before = getattr(module, option, None)
        if isinstance(before, bool) and before:
            setattr(module, option, False)
            changed.append((module, option, before))
    return changed


def provenance_option() -> tuple[str | None, Any]:
    """(the name of this torch's provenance switch in `torch._inductor.config.trace`, the value that turns it on),
    or (None, why there is none)."""
    trace = _inductor_trace_config()
    if trace is None:
        return None, f"torch {torch.__version__} has no torch._inductor.config.trace"
    if isinstance(getattr(trace, "provenance_tracking_level", None), int):
        return "provenance_tracking_level", 1
    if isinstance(getattr(trace, "provenance_tracking", None), bool):
        return "provenance_tracking", True
    return None, (f"torch {torch.__version__} has no Inductor provenance tracking "
                  "(torch._inductor.config.trace.provenance_tracking_level): kernels cannot be attributed to modules")


def _graph_module_of_payload() -> Any:
    """The fx.GraphModule that the running `trace_structured` call's payload prints, or None."""
    frame = sys._getframe(1)
    graph_module = getattr(getattr(torch, "fx", None), "GraphModule", None)
    for _ in range(40):
        if frame is None:
            return None
        if frame.f_code.co_name == "trace_structured" and "payload_fn" in frame.f_locals:
            for cell in getattr(frame.f_locals["payload_fn"], "__closure__", None) or ():
                try:
                    value = cell.cell_contents
                except ValueError:
                    continue
                if graph_module is not None and isinstance(value, graph_module):
                    return value
            return None
        frame = frame.f_back
    return None


def _pre_modules(gm: Any) -> dict[str, str]:
    return {node.name: innermost_module(node.meta.get("nn_module_stack"))
            for node in gm.graph.nodes if node.op not in ("placeholder", "output", "get_attr")}


class _Listen(logging.Handler):
    def __init__(self, recorder: KernelModuleRecorder):
        super().__init__(logging.DEBUG)
        self.recorder = recorder

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.recorder._take(record)
        except Exception as exc:  # never into torch's compile
            self.recorder._note(f"a trace record could not be read: {type(exc).__name__}: {exc}")


class KernelModuleRecorder:
    """What a `record_kernel_modules()` block saw (see the module doc)."""

    def __init__(self) -> None:
        self.compiles: list[list[Launch]] = []
        self.notes: list[str] = []
        self._pre: dict[int, dict[str, str]] = {}  # thread -> the last Dynamo graph's {node: module}
        self._post: dict[int, dict[str, str]] = {}  # thread -> the last post-grad graph's {node: module}
        self._handler = _Listen(self)
        self._logger: logging.Logger | None = None
        self._level: int | None = None
        self._option: str | None = None
        self._before: Any = None
        self._caches: list[tuple[Any, str, Any]] = []
        self._lock = threading.Lock()
        self.supported = False
        self.graphs_seen = 0
        self.mappings_seen = 0

    # -- the block --------------------------------------------------------------------------------------------
    def __enter__(self) -> KernelModuleRecorder:
        try:
            self._start()
        except Exception as exc:
            self._note(f"could not listen to torch.compile: {type(exc).__name__}: {exc}")
            self._stop()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop()

    def _start(self) -> None:
        option, value = provenance_option()
        if option is None:
            self._note(str(value))
            return
        trace = _inductor_trace_config()
        self._before = getattr(trace, option)
        if not self._before:
            setattr(trace, option, value)
        self._option = option
        self._caches = _caches_off()
        logger = logging.getLogger(TRACE_LOGGER)
        if not logger.isEnabledFor(logging.DEBUG):
            self._level = logger.level
            logger.setLevel(logging.DEBUG)
        logger.addHandler(self._handler)
        self._logger = logger
        self.supported = True

    def _stop(self) -> None:
        if self._logger is not None:
            self._logger.removeHandler(self._handler)
            if self._level is not None:
                self._logger.setLevel(self._level)
        self._logger, self._level = None, None
        if self._option is not None:
            trace = _inductor_trace_config()
            if trace is not None and not self._before:
                setattr(trace, self._option, self._before)
        self._option = None
        for module, option, before in reversed(self._caches):
            setattr(module, option, before)
        self._caches = []
        self._pre.clear()
        self._post.clear()

    # -- the records ------------------------------------------------------------------------------------------
    def _note(self, text: str) -> None:
        with self._lock:
            if text not in self.notes:
                self.notes.append(text)

    def _take(self, record: logging.LogRecord) -> None:
        metadata = getattr(record, "metadata", None)
        if not isinstance(metadata, dict):
            return
        if "dynamo_output_graph" in metadata:
            self.graphs_seen += 1
            gm = _graph_module_of_payload()
            if gm is None:
                self._note("Dynamo's graph could not be read from its trace record: modules unknown")
                self._pre.pop(record.thread or 0, None)
            else:
                self._pre[record.thread or 0] = _pre_modules(gm)
            return
        artifact = metadata.get("artifact")
        if isinstance(artifact, dict) and artifact.get("name") == POST_GRAD_ARTIFACT:
            gm = _graph_module_of_payload()
            if gm is not None:
                self._post[record.thread or 0] = _pre_modules(gm)
            return
        if not (isinstance(artifact, dict) and artifact.get("name") == PROVENANCE_ARTIFACT):
            return
        self.mappings_seen += 1
        payload = getattr(record, "payload", None)
        mapping = json.loads(payload) if isinstance(payload, str) and payload.strip() else {}
        if not mapping.get("cppCodeToPost"):
            self._note("Inductor wrote an empty provenance mapping for a compile (its kernels are not attributed)")
            return
        pre = self._pre.get(record.thread or 0)
        if pre is None:
            self._note("a provenance mapping came without a Dynamo graph before it: its kernels are not attributed")
            return
        launches = launches_from_provenance(mapping, pre, self._post.pop(record.thread or 0, None))
        with self._lock:
            self.compiles.append(launches)

    # -- what was found ---------------------------------------------------------------------------------------
    @property
    def kernel_modules(self) -> dict[str, tuple[str, ...]]:
        """Kernel name -> the modules of every launch of that name (first seen first)."""
        with self._lock:
            compiles = [list(c) for c in self.compiles]
        return kernel_modules(compiles)

    def snapshot(self) -> tuple[tuple[Launch, ...], ...]:
        """The compiles so far, frozen (what a watched graph keeps)."""
        with self._lock:
            return tuple(tuple(c) for c in self.compiles)

    @property
    def reason(self) -> str | None:
        """None when some compile was attributed; else why not."""
        if self.compiles:
            return None
        if self.notes:
            return "; ".join(self.notes)
        if self.graphs_seen and not self.mappings_seen:
            return (f"Dynamo compiled {self.graphs_seen} graph(s) but Inductor wrote no provenance mapping (a backend "
                    "other than Inductor?)")
        return ("no torch.compile compile ran while the block was open (compiled before it opened, or served "
                "from a cache that skips Inductor)")


def record_kernel_modules() -> KernelModuleRecorder:
    """A `with` block that records, for every torch.compile compile inside it, the modules each kernel fuses."""
    return KernelModuleRecorder()
