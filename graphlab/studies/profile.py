"""`graphlab record --models profile`: where the time goes inside the zoo's graphs, node by node, on a GPU.

For every zoo model (and torchvision's ResNet-50 where torchvision is installed) at batch 1 and 64: capture with
module attribution (`capture_with_modules`), profile 20 replays (`gl.profile`), and keep the DOT, the profile, the
module spans and the raw GPU events of 3 replays (so the CPU tests re-run the matcher on real traces). Two checks
ride along: module attribution on a model whose modules launch known numbers of kernels, and the what-if (one GEMM
on half its inner dimension, predicted vs measured span: `what_if_check`) on a chain and on two branches captured
on two streams.
Notebook 11 reads it (`graphlab.profile.recorded`; `what_if_checks()` shows the what-if check as a table). Every
entry is written through its results type (`Profile`, `ProfileEvents`, `ChromeTrace`, `ProfileChecks` in
`graphlab.profile.results`), which `gl.load` reads back.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn

from graphlab.graph.dot_parser import parse_dot
from graphlab.profile.api import capture_with_modules, profile_replays
from graphlab.profile.modules import assign_modules
from graphlab.profile.recorded import what_if_checks
from graphlab.profile.results import ChromeTrace, Profile, ProfileChecks, ProfileEvents, build_profile
from graphlab.recordings import gpu_slug, write_recording
from graphlab.capture.api import capture
from graphlab.capture.options import CaptureOptions
from graphlab.studies.record import RECORD_DOT_FLAGS
from graphlab.zoo import ZOO, get_model

RECORDING: str = Profile.RESULTS.recording  # type: ignore[attr-defined]
BATCH_SIZES = (1, 64)
REPLAYS = 20
EVENT_REPLAYS = 3

#: how the profiled graphs are captured: the recorder's DOT flags, the usual warm-up
RECORD_OPTIONS = CaptureOptions(dot_flags=RECORD_DOT_FLAGS)


class Counted(nn.Module):
    """A module that launches exactly `launches` elementwise kernels (x * 1.0001, then + 0.5, alternately)."""

    def __init__(self, launches: int):
        super().__init__()
        self.launches = launches

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i in range(self.launches):
            x = x * 1.0001 if i % 2 == 0 else x + 0.5
        return x


def counted_model() -> nn.Module:
    """Modules with known launch counts, nested: "0" launches 1 kernel, "1.0" 2, "1.1" 1, "2" 3 (`EXPECTED`)."""
    inner = nn.Sequential(Counted(2), Counted(1))
    return nn.Sequential(Counted(1), inner, Counted(3))


#: the module each node of `counted_model` must be attributed to, in capture order
EXPECTED = ["0", "1.0", "1.0", "1.1", "2", "2", "2"]


def _entry(name: str, model: nn.Module, inputs: tuple[Any, ...]) -> tuple[dict[str, Any], dict[str, Any]]:
    cg, spans = capture_with_modules(model, *inputs, options=RECORD_OPTIONS, name=name)
    dot = cg.dot()
    graph = parse_dot(dot, source=f"{name}.dot")
    events = profile_replays(cg.replay, REPLAYS, show_progress=False)
    prof = build_profile(graph, events, name=name.replace("_", " "), module_spans=spans,
                         conditions={"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                                     "replays": REPLAYS, "how": "replay() of the captured graph"})
    cg.reset()
    result = {**prof.to_dict(), "module_spans": [s.to_list() for s in spans], "summary": prof.summary(),
              "critical_path": prof.critical_path().to_dict()}
    trace = ProfileEvents(tuple(tuple(r) for r in events[:EVENT_REPLAYS]), tuple(spans)).to_dict()
    print(f"[record] profile {name}: {prof}", flush=True)
    return {"dot": dot, "dot_flags": RECORD_DOT_FLAGS, "batch_size": inputs[0].shape[0]}, {name: result,
                                                                                              f"events_{name}": trace}


class HalfK(nn.Module):
    """`x[:, :k] @ w[:k]`: the output has the same shape for any k, so k = K/2 is the same node doing half the
    work (half the weight read, half the multiply-adds), and nothing after it changes."""

    def __init__(self, w: torch.Tensor, k: int):
        super().__init__()
        self.register_buffer("w", w)
        self.k = k

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[:, :self.k] @ self.w[:self.k]


class GemmChain(nn.Module):
    """GEMMs one after another ("mm0", "mm1", ...); the module named `half` on half its inner dimension."""

    def __init__(self, ws: list[torch.Tensor], half: str | None = None):
        super().__init__()
        k = ws[0].shape[0]
        for i, w in enumerate(ws):
            self.add_module(f"mm{i}", HalfK(w, k // 2 if f"mm{i}" == half else k))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for m in self.children():
            x = m(x)
        return x


class GemmFork(nn.Module):
    """Two streams inside the capture: "main" (a `GemmChain`) on the capturing stream, "side0" (one GEMM with a
    quarter of the columns) on a side stream, joined at the end."""

    def __init__(self, ws: list[torch.Tensor], side_w: torch.Tensor, half: str | None = None):
        super().__init__()
        self.main = GemmChain(ws, half)
        self.side0 = HalfK(side_w, side_w.shape[0])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        here = torch.cuda.current_stream()
        side = torch.cuda.Stream()
        side.wait_stream(here)
        with torch.cuda.stream(side):
            b = self.side0(x)
        a = self.main(x)
        here.wait_stream(side)
        return a[:, :b.shape[1]] + b


def nodes_of(prof: Any, module: str) -> list[Any]:
    """The timed nodes a module (or a module ending in `.module`) launched."""
    return [n for n in prof.nodes if n.median_us is not None
            and any(m == module or m.endswith("." + module) for m in n.modules)]


def what_if_check(two_streams: bool, replays: int = 50) -> dict[str, Any]:
    """Profile a graph of GEMMs, predict its span with "mm1" twice as fast (`Profile.what_if`), then profile the
    same graph with mm1 on half its inner dimension and measure. Also predicts with the factor halving really
    gave mm1's nodes, which separates the span model's error from the GEMM's. Two streams: mm0 -> mm1 beside
    a shorter side branch, which must stay off the critical path."""
    from graphlab.profile.api import profile

    torch.manual_seed(0)
    x = torch.randn(64, 8192, device="cuda")
    ws = [torch.randn(8192, 8192, device="cuda") / 90.0 for _ in range(2 if two_streams else 3)]
    side_w = torch.randn(8192, 2048, device="cuda") / 90.0

    def build(half: str | None) -> nn.Module:
        return (GemmFork(ws, side_w, half) if two_streams else GemmChain(ws, half)).cuda()

    full = profile(build(None), x, replays=replays, name="what-if full", show_progress=False)
    halved = profile(build("mm1"), x, replays=replays, name="what-if half", show_progress=False)
    chosen, now = nodes_of(full, "mm1"), nodes_of(halved, "mm1")
    out: dict[str, Any] = {"two_streams": two_streams, "replays": replays, "shape": "x 64x8192 @ w 8192x8192 (fp32)",
                           "chosen": "mm1 on half its inner dimension (K 8192 -> 4096)"}
    if not chosen or not now:
        out["error"] = f"mm1's nodes not found (full: {len(chosen)}, half: {len(now)})"
        print(f"[record] what-if two_streams={two_streams}: {out['error']}", flush=True)
        return out
    factor = sum(n.median_us for n in now) / sum(n.median_us for n in chosen)
    path = full.critical_path()
    out.update(node=[n.node_id for n in chosen], node_us=sum(n.median_us for n in chosen),
               half_node_us=sum(n.median_us for n in now), factor=factor, span_us=full.span_us,
               model_span_us=path.span_us, predicted_span_us=full.what_if({n.node_id: 0.5 for n in chosen}),
               predicted_with_factor_us=full.what_if({n.node_id: factor for n in chosen}),
               measured_span_us=halved.span_us, critical_path=list(path.node_ids),
               side_on_critical_path=bool({n.node_id for n in nodes_of(full, "side0")} & set(path.node_ids)))
    out["error_pct"] = 100.0 * (out["predicted_span_us"] - out["measured_span_us"]) / out["measured_span_us"]
    out["error_with_factor_pct"] = (100.0 * (out["predicted_with_factor_us"] - out["measured_span_us"])
                                    / out["measured_span_us"])
    print(f"[record] what-if two_streams={two_streams}: " + ", ".join(
        f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in out.items() if k != "critical_path"),
        flush=True)
    return out


def record(out_root: Path, prov: dict[str, Any]) -> Path:
    """Per-node GPU time of every zoo model's graph (and ResNet-50), modules attributed at capture."""
    graphs: dict[str, Any] = {}
    results: dict[str, Any] = {}
    models: list[tuple[str, Any]] = [(name, zm) for name, zm in ZOO.items() if zm.available()]
    try:
        from torchvision.models import resnet50
    except ImportError:
        resnet50 = None
    errors: dict[str, str] = {}

    def one(key: str, model: Any, inputs: tuple[Any, ...]) -> None:
        try:
            g, r = _entry(key, model, inputs)
        except Exception as exc:  # keep the others; the recording says what failed
            errors[key] = f"{type(exc).__name__}: {exc}"
            print(f"[record] profile {key} FAILED: {errors[key]}", flush=True)
            return
        graphs[key] = g
        results.update(r)

    for name, zm in models:
        for bs in BATCH_SIZES:
            one(f"{name}_b{bs}", zm.build(), zm.make_inputs(bs))
    if resnet50 is not None:
        torch.manual_seed(0)
        model = resnet50(weights=None).cuda().eval()
        for bs in BATCH_SIZES:
            one(f"resnet50_b{bs}", model, (torch.randn(bs, 3, 224, 224, device="cuda"),))
    # one raw trace as the profiler wrote it (3 replays of the mlp at batch 1), for the trace parser's tests
    zm = get_model("mlp")
    cg = capture(zm.build(), *zm.make_inputs(1), name="raw")
    raw: list[Any] = []
    profile_replays(cg.replay, EVENT_REPLAYS, show_progress=False, keep_trace=raw)
    results["chrome_mlp_b1"] = ChromeTrace(raw, "torch.profiler's Chrome trace of 3 replays of the zoo mlp at batch "
                                           "1 (a fresh capture: its DOT is mlp_b1's), GPU and CUDA API events "
                                           "only").to_dict()
    cg.reset()
    # module attribution, exact on a model whose launch counts are known
    attribution: dict[str, Any]
    try:
        x = torch.randn(64, 64, device="cuda")
        cg, spans = capture_with_modules(counted_model().cuda(), x, options=RECORD_OPTIONS, name="counted")
        graph = parse_dot(cg.dot(), source="counted.dot")
        found = assign_modules(spans, [n.index for n in graph.root.nodes])
        got = [found[n.index] for n in graph.root.nodes if n.kind.value == "kernel"]
        attribution = {"expected": EXPECTED, "found": got, "exact": got == EXPECTED,
                       "spans": [s.to_list() for s in spans], "nodes": len(graph)}
        graphs["counted"] = {"dot": cg.dot(), "dot_flags": RECORD_DOT_FLAGS}
        cg.reset()
        print(f"[record] attribution exact: {got == EXPECTED} ({got})", flush=True)
    except Exception as exc:
        attribution = {"error": f"{type(exc).__name__}: {exc}"}
        print(f"[record] attribution check FAILED: {exc}", flush=True)

    what_if: dict[str, dict[str, Any]] = {}
    for case, two in (("chain", False), ("two_streams", True)):
        try:
            what_if[case] = what_if_check(two)
        except Exception as exc:
            what_if[case] = {"error": f"{type(exc).__name__}: {exc}"}
            print(f"[record] what-if {case} FAILED: {exc}", flush=True)
    results.update(ProfileChecks(attribution, what_if, errors).to_dict())
    folder = out_root / gpu_slug(prov["gpu"]) / RECORDING
    write_recording(folder, name=RECORDING, description="Per-node GPU time inside the zoo's graphs (and ResNet-50) at "
                    "batch 1 and 64, with the module behind each node, recorded by gl.profile.", provenance=prov,
                    graphs=graphs, results=results)
    return folder


__all__ = ["BATCH_SIZES", "EXPECTED", "RECORDING", "REPLAYS", "counted_model", "record", "what_if_checks"]
