"""Probe for gl.watch (issue 11): how torch creates and captures CUDA graphs, checked on the GPU.

Run on the H200 from the repository root (about 40-60 s; the GPT compile dominates):

    PYTHONPATH=. python3 scripts/probes/watch_probe.py --out DIR [--skip-gpt]

Every question is answered in its own try/except and written to DIR/watch_probe.json as soon as it
is answered (a timeout still leaves the answers so far):

  api            CUDAGraph's constructor signature, which methods the Python class defines itself
                 (so a class-level patch reaches them), weakref/__dict__ on instances
  source_scan    every place under torch/ that creates a CUDAGraph or opens torch.cuda.graph, and how
                 (attribute `torch.cuda.CUDAGraph(` or a name imported at module load)
  keep_graph     keep_graph=True + explicit instantiate() vs the default keep_graph=False: outputs,
                 raw handles before/after instantiate, DOT dump time, replay time ratio
  during_capture memory_reserved() and current_stream() called between capture_begin and capture_end
  inline_*       a minimal class-level patch (independent of graphlab.watch.api) on: a user
                 torch.cuda.graph block, make_graphed_callables, torch.compile(mode="reduce-overhead")
                 on a tiny module at three shapes, and on the zoo GPT (compile time per call)
  outputs        a reduce-overhead module watched vs another copy not watched: torch.equal
  graphlab_watch graphlab.watch.api itself on the tiny compiled module, if importable; gl.capture
                 inside a watch (seen as "graphlab", still verifies; the signature still shows keep_graph)
  keep_graph_abba  kept vs default replay time with capture order default, kept, kept, default
  pool_snapshot  one graph pool's size from torch.cuda.memory_snapshot's segment_pool_id
"""
from __future__ import annotations

import argparse
import functools
import inspect
import json
import os
import re
import sys
import time
import traceback
import weakref
from pathlib import Path
from typing import Any, Callable

RESULTS: dict[str, Any] = {}
OUT: Path | None = None


def save() -> None:
    if OUT is not None:
        (OUT / "watch_probe.json").write_text(json.dumps(RESULTS, indent=1, default=str))


def step(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                RESULTS[name] = {"ok": True, **(fn(*args, **kwargs) or {})}
            except Exception as exc:
                RESULTS[name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}",
                                 "traceback": traceback.format_exc()[-3000:]}
            RESULTS[name]["seconds"] = round(time.perf_counter() - t0, 3)
            print(f"[probe] {name}: {'ok' if RESULTS[name]['ok'] else RESULTS[name]['error']} "
                  f"({RESULTS[name]['seconds']} s)", flush=True)
            save()
        return run
    return wrap


def torch_root() -> str:
    import torch

    return os.path.dirname(torch.__file__)


def short(path: str) -> str:
    root = torch_root()
    if path.startswith(root):
        return "torch" + path[len(root):]
    return os.path.basename(path)


def frames_from(frame: Any, limit: int = 14) -> list[str]:
    out = []
    while frame is not None and len(out) < limit:
        out.append(f"{short(frame.f_code.co_filename)}:{frame.f_code.co_name}:{frame.f_lineno}")
        frame = frame.f_back
    return out


@step("env")
def probe_env() -> dict[str, Any]:
    import torch

    info: dict[str, Any] = {"torch": torch.__version__, "cuda": str(torch.version.cuda),
                            "gpu": torch.cuda.get_device_name(), "python": sys.version.split()[0]}
    try:
        from importlib.metadata import version

        info["cuda_bindings"] = version("cuda-bindings")
    except Exception as exc:
        info["cuda_bindings"] = f"missing: {exc}"
    return info


@step("api")
def probe_api() -> dict[str, Any]:
    import torch

    cls = torch.cuda.CUDAGraph
    info: dict[str, Any] = {
        "signature_cls": str(inspect.signature(cls)),
        "mro": [f"{c.__module__}.{c.__qualname__}" for c in cls.__mro__],
        "class_dict_methods": sorted(k for k, v in vars(cls).items() if callable(v) or isinstance(v, staticmethod)),
        "new_is_staticmethod": isinstance(vars(cls).get("__new__"), staticmethod),
        "graphs_module_same_class": torch.cuda.graphs.CUDAGraph is cls,
        "has": {n: hasattr(cls, n) for n in ("instantiate", "raw_cuda_graph", "raw_cuda_graph_exec",
                                             "_has_graph_exec", "register_capture_end_hook", "capture_end_pre",
                                             "get_graph_data", "pools")},
        "graph_ctx_signature": str(inspect.signature(torch.cuda.graph.__init__)),
        "mgc_signature": str(inspect.signature(torch.cuda.make_graphed_callables)),
    }
    try:
        info["capture_begin_signature"] = str(inspect.signature(cls.capture_begin))
    except Exception as exc:
        info["capture_begin_signature"] = f"{type(exc).__name__}: {exc}"
    try:
        src = inspect.getsource(cls)
        info["class_source_lines"] = len(src.splitlines())
        info["new_source"] = inspect.getsource(vars(cls)["__new__"].__func__ if isinstance(
            vars(cls).get("__new__"), staticmethod) else cls.__new__)[:600]
        info["capture_end_source"] = inspect.getsource(cls.capture_end)[-600:] if "capture_end" in vars(cls) else None
    except Exception as exc:
        info["source_error"] = f"{type(exc).__name__}: {exc}"
    g = cls()
    info["instance_has_dict"] = hasattr(g, "__dict__")
    try:
        ref = weakref.ref(g)
        info["weakref_ok"] = ref() is g
        wk: Any = weakref.WeakKeyDictionary()
        wk[g] = 1
        info["weakkeydict_ok"] = wk.get(g) == 1
    except TypeError as exc:
        info["weakref_ok"] = f"TypeError: {exc}"
    # which class-level patch forces keep_graph? (pybind's __init__ takes keep_graph; torch's Python
    # __new__ passes it on to the base __new__, which may ignore it)
    x = torch.randn(8, 8, device="cuda")
    for variant in ("new", "init", "both"):
        saved = {n: vars(cls).get(n) for n in ("__new__", "__init__")}
        orig_new, orig_init = cls.__new__, cls.__init__
        calls: list[str] = []

        def new(c: Any, *a: Any, **k: Any) -> Any:
            calls.append("new")
            return orig_new(c, keep_graph=True)

        def init(self: Any, *a: Any, **k: Any) -> None:
            calls.append("init")
            orig_init(self, keep_graph=True)

        if variant in ("new", "both"):
            cls.__new__ = new  # type: ignore[assignment]
        if variant in ("init", "both"):
            cls.__init__ = init  # type: ignore[assignment]
        try:
            g2 = cls()
            kept: Any
            try:
                _capture(torch, g2, lambda: x * 2)
                kept = hex(int(g2.raw_cuda_graph()))
                g2.instantiate()
                g2.replay()
            except Exception as exc:
                kept = f"{type(exc).__name__}: {str(exc)[:160]}"
            info[f"force_via_{variant}"] = {"calls": calls, "raw_cuda_graph_after_capture": kept,
                                            "type_is_cls": type(g2) is cls,
                                            "signature_while_patched": str(inspect.signature(cls))}
        except Exception as exc:
            info[f"force_via_{variant}"] = f"{type(exc).__name__}: {exc}"
        finally:
            for n, v in saved.items():
                if v is None:
                    if n in vars(cls):
                        delattr(cls, n)
                else:
                    setattr(cls, n, v)
        info[f"restored_after_{variant}"] = all(vars(cls).get(n) is v for n, v in saved.items())
    torch.cuda.synchronize()
    return info


@step("source_scan")
def probe_source_scan() -> dict[str, Any]:
    root = Path(torch_root())
    pattern = re.compile(r"CUDAGraph\(|import[^\n]*\bCUDAGraph\b|torch\.cuda\.graph\(|\bcuda\.graph\(|"
                         r"make_graphed_callables\(|capture_begin\(")
    hits = []
    for sub in ("_inductor", "_dynamo", "cuda", "_functorch", "utils", "distributed", "compiler", "_higher_order_ops"):
        for path in sorted((root / sub).rglob("*.py")):
            try:
                text = path.read_text(errors="replace")
            except OSError:
                continue
            for lineno, line in enumerate(text.splitlines(), 1):
                if pattern.search(line) and not line.lstrip().startswith("#"):
                    hits.append(f"torch/{path.relative_to(root)}:{lineno}: {line.strip()[:140]}")
    return {"hits": hits[:120], "count": len(hits)}


def _capture(torch: Any, graph: Any, fn: Callable[[], Any], pool: Any = None) -> Any:
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    with torch.cuda.graph(graph, pool=pool):
        out = fn()
    return out


def dot_text(handle: int) -> str:
    import tempfile

    from cuda.bindings import runtime as rt

    fd, path = tempfile.mkstemp(suffix=".dot")
    os.close(fd)
    try:
        err = rt.cudaGraphDebugDotPrint(handle, path.encode(), 1)
        if int(err[0] if isinstance(err, tuple) else err) != 0:
            raise RuntimeError(f"cudaGraphDebugDotPrint: {err}")
        return Path(path).read_text(errors="replace")
    finally:
        os.unlink(path)


@step("keep_graph")
def probe_keep_graph() -> dict[str, Any]:
    import torch

    info: dict[str, Any] = {}
    x = torch.randn(64, 256, device="cuda")
    w = torch.randn(256, 256, device="cuda")

    def fn() -> Any:
        return (x.sin() @ w).relu() + 1

    g_default = torch.cuda.CUDAGraph()
    y_default = _capture(torch, g_default, fn)
    g_kept = torch.cuda.CUDAGraph(keep_graph=True)
    y_kept = _capture(torch, g_kept, fn)
    for label, call in (("default_raw_graph", g_default.raw_cuda_graph), ("default_raw_exec", g_default.raw_cuda_graph_exec),
                        ("kept_raw_graph_before_instantiate", g_kept.raw_cuda_graph),
                        ("kept_raw_exec_before_instantiate", g_kept.raw_cuda_graph_exec)):
        try:
            info[label] = hex(int(call()))
        except Exception as exc:
            info[label] = f"{type(exc).__name__}: {str(exc)[:200]}"
    for obj, label in ((g_default, "default"), (g_kept, "kept")):
        if hasattr(obj, "_has_graph_exec"):
            info[f"{label}_has_graph_exec_after_capture"] = bool(obj._has_graph_exec)
    t0 = time.perf_counter()
    dot_before = dot_text(int(g_kept.raw_cuda_graph()))
    info["dot_ms"] = round((time.perf_counter() - t0) * 1e3, 3)
    info["dot_bytes"] = len(dot_before)
    t0 = time.perf_counter()
    g_kept.instantiate()
    info["instantiate_ms"] = round((time.perf_counter() - t0) * 1e3, 3)
    info["kept_raw_exec_after_instantiate"] = hex(int(g_kept.raw_cuda_graph_exec()))
    info["dot_same_after_instantiate"] = dot_text(int(g_kept.raw_cuda_graph())) == dot_before
    x.copy_(torch.randn_like(x))
    g_default.replay()
    g_kept.replay()
    torch.cuda.synchronize()
    info["outputs_equal"] = bool(torch.equal(y_default, y_kept))
    info["outputs_match_eager"] = bool(torch.allclose(y_kept, fn(), atol=1e-3, rtol=1e-3))
    # replay time: default vs kept, interleaved blocks of 200 replays
    ratios = []
    for i in range(20):
        times = {}
        for label, g in ((("default", g_default), ("kept", g_kept)) if i % 2 == 0 else (("kept", g_kept), ("default", g_default))):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(200):
                g.replay()
            torch.cuda.synchronize()
            times[label] = time.perf_counter() - t0
        ratios.append(times["kept"] / times["default"])
    ratios.sort()
    info["replay_ratio_kept_over_default_median"] = round(ratios[len(ratios) // 2], 4)
    info["replay_ratio_min_max"] = [round(ratios[0], 4), round(ratios[-1], 4)]
    # the empty graph CUDAGraph Trees captures to keep its pool alive: can a kept one be instantiated?
    g_empty = torch.cuda.CUDAGraph(keep_graph=True)
    s = torch.cuda.Stream()
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.cuda.graph(g_empty, stream=s, pool=torch.cuda.graph_pool_handle()):
            pass
    info["empty_warnings"] = [str(c.message)[:160] for c in caught]
    info["empty_dot_head"] = dot_text(int(g_empty.raw_cuda_graph()))[:300]
    try:
        g_empty.instantiate()
        info["empty_instantiate"] = "ok"
    except Exception as exc:
        info["empty_instantiate"] = f"{type(exc).__name__}: {exc}"
    return info


@step("keep_graph_abba")
def probe_keep_graph_abba() -> dict[str, Any]:
    """The first run saw kept graphs replay 1-3% slower than default ones (tiny graph, capture order
    default then kept). Capture order default, kept, kept, default, each in its own pool, and time
    kept vs default in alternating blocks: does the gap follow keep_graph or the capture order?"""
    import torch

    x = torch.randn(64, 256, device="cuda")
    w = torch.randn(256, 256, device="cuda")

    def fn() -> Any:
        return (x.sin() @ w).relu() + 1

    graphs = []
    for kept in (False, True, True, False):
        g = torch.cuda.CUDAGraph(keep_graph=True) if kept else torch.cuda.CUDAGraph()
        _capture(torch, g, fn)
        if kept:
            g.instantiate()
        graphs.append((kept, g))
    per_graph: dict[int, list[float]] = {i: [] for i in range(4)}
    for i in range(40):
        order = list(range(4)) if i % 2 == 0 else list(reversed(range(4)))
        for j in order:
            g = graphs[j][1]
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(200):
                g.replay()
            torch.cuda.synchronize()
            per_graph[j].append((time.perf_counter() - t0) / 200 * 1e6)
    med = {j: sorted(v)[len(v) // 2] for j, v in per_graph.items()}
    return {"order": ["default", "kept", "kept", "default"], "median_us_per_replay": {str(j): round(v, 3) for j, v in med.items()},
            "kept_over_default": round((med[1] + med[2]) / (med[0] + med[3]), 4),
            "second_pair_over_first": round((med[2] + med[3]) / (med[0] + med[1]), 4)}


@step("pool_snapshot")
def probe_pool_snapshot() -> dict[str, Any]:
    """Can the size of one graph pool be read from torch.cuda.memory_snapshot (segment_pool_id)?"""
    import torch

    info: dict[str, Any] = {"signature": str(inspect.signature(torch.cuda.memory_snapshot))}
    x = torch.randn(256, 256, device="cuda")
    g = torch.cuda.CUDAGraph()
    _capture(torch, g, lambda: (x @ x).relu())
    pool = tuple(g.pool())
    info["pool"] = list(pool)
    t0 = time.perf_counter()
    segments = torch.cuda.memory_snapshot()
    info["snapshot_ms"] = round((time.perf_counter() - t0) * 1e3, 3)
    info["segment_keys"] = sorted(segments[0]) if segments else []
    info["pools_seen"] = sorted({str(tuple(s.get("segment_pool_id", ()))) for s in segments})
    info["pool_total_size"] = sum(int(s["total_size"]) for s in segments if tuple(s.get("segment_pool_id", ())) == pool)
    from graphlab.watch.patch import pool_size_bytes

    info["graphlab_pool_size_bytes"] = pool_size_bytes(list(pool), torch.cuda.current_device())
    return info


@step("during_capture")
def probe_during_capture() -> dict[str, Any]:
    import torch

    info: dict[str, Any] = {}
    cls = torch.cuda.CUDAGraph
    orig_begin = cls.capture_begin
    saved = vars(cls).get("capture_begin")

    def begin(self: Any, *a: Any, **k: Any) -> None:
        info["stream_before_begin"] = str(torch.cuda.current_stream())
        info["reserved_before"] = torch.cuda.memory_reserved()
        orig_begin(self, *a, **k)
        info["capturing_after_begin"] = torch.cuda.is_current_stream_capturing()
        info["reserved_during"] = torch.cuda.memory_reserved()
        info["perf_counter_ok"] = time.perf_counter() > 0
        info["begin_kwargs"] = sorted(k)
        info["begin_args_len"] = len(a)
        info["frames"] = frames_from(sys._getframe(1), 6)

    cls.capture_begin = begin  # type: ignore[assignment]
    try:
        x = torch.randn(8, 8, device="cuda")
        g = torch.cuda.CUDAGraph()
        y = _capture(torch, g, lambda: x * 2)
        g.replay()
        torch.cuda.synchronize()
        info["result_ok"] = bool(torch.equal(y, x * 2))
        info["default_capture_stream"] = str(torch.cuda.graph.default_capture_stream)
    finally:
        if saved is None:
            delattr(cls, "capture_begin")
        else:
            cls.capture_begin = saved  # type: ignore[assignment]
    return info


class InlineWatch:
    """A minimal class-level patch: force keep_graph, dump and instantiate at capture_end, log frames."""

    def __init__(self, torch: Any):
        self.torch = torch
        self.cls = torch.cuda.CUDAGraph
        self.created: list[dict[str, Any]] = []
        self.captures: list[dict[str, Any]] = []
        self.requested: Any = weakref.WeakKeyDictionary()

    def __enter__(self) -> InlineWatch:
        cls, torch = self.cls, self.torch
        self.saved = {n: vars(cls).get(n) for n in ("__new__", "__init__", "capture_begin", "capture_end")}
        orig_new, orig_init, orig_begin, orig_end = cls.__new__, cls.__init__, cls.capture_begin, cls.capture_end
        watch = self
        pending: dict[int, dict[str, Any]] = {}

        def new(c: Any, *args: Any, **kwargs: Any) -> Any:
            return orig_new(c, keep_graph=True)

        def init(self_: Any, *args: Any, **kwargs: Any) -> None:
            asked = bool(kwargs.get("keep_graph", args[0] if args else False))
            orig_init(self_, keep_graph=True)
            watch.requested[self_] = asked
            watch.created.append({"type": f"{type(self_).__module__}.{type(self_).__qualname__}",
                                  "keep_graph_asked": asked, "frames": frames_from(sys._getframe(1), 8)})

        def begin(self_: Any, *args: Any, **kwargs: Any) -> None:
            frame = sys._getframe(1)
            entry: dict[str, Any] = {"frames": frames_from(frame, 14), "stream": str(torch.cuda.current_stream()),
                                     "reserved0": torch.cuda.memory_reserved(), "t0": time.perf_counter()}
            locs = {}
            f = frame
            while f is not None:
                if short(f.f_code.co_filename).startswith("torch/") and f.f_code.co_name in (
                        "_record", "make_graphed_callables", "__init__", "_init"):
                    names = sorted(f.f_locals)[:40]
                    shapes = None
                    val = f.f_locals.get("inputs")
                    if val is None:
                        val = f.f_locals.get("args")
                    if isinstance(val, (list, tuple)):
                        shapes = [list(t.shape) if hasattr(t, "shape") else type(t).__name__ for t in val][:12]
                    locs[f"{short(f.f_code.co_filename)}:{f.f_code.co_name}"] = {
                        "locals": names, "shapes": shapes,
                        "is_fwd": f.f_locals.get("fwd_graph") is self_, "is_bwd": f.f_locals.get("bwd_graph") is self_}
                f = f.f_back
            entry["torch_frame_locals"] = locs
            entry["begin_args"] = [str(a) for a in args] + [f"{k}={v}" for k, v in kwargs.items()]
            watch.captures.append(entry)
            pending[id(self_)] = entry
            orig_begin(self_, *args, **kwargs)

        def end(self_: Any) -> None:
            orig_end(self_)
            entry = pending.pop(id(self_), None)
            if entry is None:
                return
            entry["capture_ms"] = round((time.perf_counter() - entry.pop("t0")) * 1e3, 3)
            entry["reserved_growth"] = torch.cuda.memory_reserved() - entry.pop("reserved0")
            try:
                entry["pool"] = str(self_.pool())
            except Exception as exc:
                entry["pool"] = f"{type(exc).__name__}: {exc}"
            try:
                t0 = time.perf_counter()
                text = dot_text(int(self_.raw_cuda_graph()))
                entry["dot_ms"] = round((time.perf_counter() - t0) * 1e3, 3)
                from graphlab.graph.dot_parser import parse_dot

                parsed = parse_dot(text)
                entry["dot_nodes"] = len(parsed)
                entry["dot_kinds"] = parsed.count_by_kind()
            except Exception as exc:
                entry["dot_error"] = f"{type(exc).__name__}: {exc}"
            if not watch.requested.get(self_, True):
                t0 = time.perf_counter()
                self_.instantiate()
                entry["instantiate_ms"] = round((time.perf_counter() - t0) * 1e3, 3)

        cls.__new__ = new  # type: ignore[assignment]
        cls.__init__ = init  # type: ignore[assignment]
        cls.capture_begin = begin  # type: ignore[assignment]
        cls.capture_end = end  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: Any) -> None:
        for n, v in self.saved.items():
            if v is None:
                if n in vars(self.cls):
                    delattr(self.cls, n)
            else:
                setattr(self.cls, n, v)

    def report(self) -> dict[str, Any]:
        return {"created": self.created, "captures": self.captures,
                "restored": all(vars(self.cls).get(n) is v for n, v in self.saved.items())}


@step("inline_user_graph")
def probe_inline_user_graph() -> dict[str, Any]:
    import torch

    x = torch.randn(16, 64, device="cuda")
    with InlineWatch(torch) as w:
        g = torch.cuda.CUDAGraph()
        y = _capture(torch, g, lambda: (x * 3).tanh())
    x.copy_(torch.randn_like(x))
    g.replay()
    torch.cuda.synchronize()
    return {**w.report(), "replay_ok": bool(torch.allclose(y, (x * 3).tanh()))}


@step("inline_make_graphed_callables")
def probe_inline_mgc() -> dict[str, Any]:
    import torch

    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8)).cuda()
    x = torch.randn(16, 64, device="cuda")
    with InlineWatch(torch) as w:
        graphed = torch.cuda.make_graphed_callables(model, (x,))
    out = graphed(torch.randn(16, 64, device="cuda"))
    out.sum().backward()
    torch.cuda.synchronize()
    return {**w.report(), "forward_backward_ok": model[0].weight.grad is not None}


def _tiny_module(torch: Any) -> Any:
    class Tiny(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = torch.nn.Linear(64, 128)
            self.b = torch.nn.Linear(128, 64)

        def forward(self, x: Any) -> Any:
            return self.b(torch.nn.functional.gelu(self.a(x))) + x

    torch.manual_seed(0)
    return Tiny().cuda().eval()


@step("inline_compile_tiny")
def probe_inline_compile_tiny() -> dict[str, Any]:
    import torch

    model = _tiny_module(torch)
    compiled = torch.compile(model, mode="reduce-overhead")
    calls = []
    with InlineWatch(torch) as w, torch.no_grad():
        for batch in (4, 8, 16):
            x = torch.randn(batch, 64, device="cuda")
            for i in range(3):
                before = len(w.captures)
                t0 = time.perf_counter()
                y = compiled(x)
                torch.cuda.synchronize()
                calls.append({"batch": batch, "call": i, "s": round(time.perf_counter() - t0, 3),
                              "captures": len(w.captures) - before})
            ok = bool(torch.allclose(y, model(x), atol=1e-4, rtol=1e-4))
            calls[-1]["matches_eager"] = ok
    # replay after the watch ended (graphs recorded while watched, replayed unpatched)
    with torch.no_grad():
        x = torch.randn(8, 64, device="cuda")
        y = compiled(x)
        after_ok = bool(torch.allclose(y, model(x), atol=1e-4, rtol=1e-4))
    try:
        from torch._dynamo.utils import counters

        skips = {"cudagraph_skips": counters["inductor"]["cudagraph_skips"]}
    except Exception as exc:
        skips = {"error": str(exc)}
    return {**w.report(), "calls": calls, "replay_after_watch_ok": after_ok, "counters": skips}


@step("inline_compile_gpt")
def probe_inline_compile_gpt() -> dict[str, Any]:
    import torch

    from graphlab.zoo import get_model

    zm = get_model("gpt")
    model = zm.build(device="cuda")
    compiled = torch.compile(model, mode="reduce-overhead")
    calls = []
    with InlineWatch(torch) as w, torch.no_grad():
        for batch in (1, 4):
            (ids,) = zm.make_inputs(batch, device="cuda")
            for i in range(3):
                before = len(w.captures)
                t0 = time.perf_counter()
                y = compiled(ids)
                torch.cuda.synchronize()
                calls.append({"batch": batch, "call": i, "s": round(time.perf_counter() - t0, 3),
                              "captures": len(w.captures) - before})
            calls[-1]["matches_eager"] = bool(torch.allclose(y, model(ids), atol=1e-3, rtol=1e-3))
    report = w.report()
    for c in report["captures"]:
        c["frames"] = c["frames"][:8]
    return {**report, "calls": calls}


@step("outputs_watched_vs_not")
def probe_outputs() -> dict[str, Any]:
    import torch

    a, b = _tiny_module(torch), _tiny_module(torch)
    ca, cb = torch.compile(a, mode="reduce-overhead"), torch.compile(b, mode="reduce-overhead")
    x = torch.randn(32, 64, device="cuda")
    with torch.no_grad():
        for _ in range(3):
            ya = ca(x).clone()
        with InlineWatch(torch) as w:
            for _ in range(3):
                yb = cb(x).clone()
        x2 = torch.randn(32, 64, device="cuda")
        za, zb = ca(x2).clone(), cb(x2).clone()
    return {"equal_first": bool(torch.equal(ya, yb)), "equal_replay": bool(torch.equal(za, zb)),
            "watched_captures": len(w.captures)}


@step("graphlab_watch")
def probe_graphlab_watch() -> dict[str, Any]:
    import torch

    from graphlab.watch.api import watch

    model = _tiny_module(torch)
    compiled = torch.compile(model, mode="reduce-overhead")
    with watch() as seen, torch.no_grad():
        for batch in (4, 8):
            x = torch.randn(batch, 64, device="cuda")
            for _ in range(3):
                compiled(x)
    torch.cuda.synchronize()
    from graphlab.capture.api import capture
    from graphlab.capture.engine import torch_keeps_graphs

    with watch() as seen2:
        signature = str(inspect.signature(torch.cuda.CUDAGraph))
        keeps = torch_keeps_graphs()
        cg = capture(model, torch.randn(4, 64, device="cuda"))
        ok = cg.verify(trials=1).passed
    return {"count": len(seen), "table": str(seen.summary()),
            "records": [g.to_dict(include_dot=False) for g in seen],
            "signature_while_open": signature, "engine_sees_keep_graph": keeps, "gl_capture_verify_ok": ok,
            "gl_capture_seen_as": [g.library for g in seen2], "gl_capture_where": [g.where for g in seen2],
            "patched_after": any(n in vars(torch.cuda.CUDAGraph) for n in ("__init__",))}


def main(argv: list[str] | None = None) -> int:
    global OUT
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--skip-gpt", action="store_true", help="skip the zoo GPT compile (saves ~20-40 s)")
    args = parser.parse_args(argv)
    OUT = Path(args.out)
    OUT.mkdir(parents=True, exist_ok=True)
    import torch

    if not torch.cuda.is_available():
        RESULTS["env"] = {"ok": False, "error": "no CUDA GPU"}
        save()
        print("[probe] no CUDA GPU", flush=True)
        return 1
    t0 = time.perf_counter()
    probe_env()
    probe_api()
    probe_source_scan()
    probe_keep_graph()
    probe_keep_graph_abba()
    probe_pool_snapshot()
    probe_during_capture()
    probe_inline_user_graph()
    probe_inline_mgc()
    probe_inline_compile_tiny()
    probe_outputs()
    probe_graphlab_watch()
    if not args.skip_gpt:
        probe_inline_compile_gpt()
    RESULTS["total_seconds"] = round(time.perf_counter() - t0, 2)
    save()
    failed = [k for k, v in RESULTS.items() if isinstance(v, dict) and not v.get("ok", True)]
    print(f"[probe] done in {RESULTS['total_seconds']} s; failed: {failed or 'none'}; "
          f"wrote {OUT / 'watch_probe.json'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
