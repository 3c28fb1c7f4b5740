"""`graphlab record`: capture the model zoo on this GPU and write recordings with full provenance.

For each zoo model and batch size: capture (warm-up 3, keep_graph=True), verify replay against eager,
keep the raw DOT (flags 1, Verbose: kernel launch dimensions, copy sizes and topological ids in one
dump, the same text torch's own `debug_dump` writes; the model is parsed from it on load), a census
from the graph API and, unless --no-sweep, the paired eager-vs-replay sweep and a kernel timeline. A
"pitfalls" recording keeps what each failure example (`graphlab.capture.pitfalls.EXAMPLES`) said here,
and the graph captured right after all of them (proof that the process stayed usable). Named
experiments (`EXTRA_RECORDERS`: cells, cache, traffic, dense, overhead, watch, conditional, serving,
multigpu) record only when asked for. Each recording is made in a fresh process, so one recording's
profiling or failed captures cannot colour another's timings.

    graphlab record --out data/recordings --models mlp gpt --batch-sizes 1 8 --no-sweep

Layer 2: torch imported inside functions only; no plotly, graphviz or widgets.
"""
from __future__ import annotations

import argparse
import importlib
import os
import shlex
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from graphlab.errors import GraphlabError

RECORD_DOT_FLAGS = 1
PITFALLS = "pitfalls"

#: Recordings beyond the zoo models, by name: "module:function". Each function is called as
#: `function(torch, out_root: Path, prov: dict) -> Path` in a fresh process and writes one recording
#: folder (`write_recording(out_root / gpu_slug(prov["gpu"]) / name, ...)`), returning it. They are
#: made only when named (`graphlab record --models cache`); the default set is the zoo and pitfalls.
EXTRA_RECORDERS: dict[str, str] = {
    "cache": "graphlab.studies.cache:record_cache",
    "cells": "graphlab.studies.cells:record_cells",
    "traffic": "graphlab.studies.cache:record_traffic",
    "watch": "graphlab.studies.watch:record_watch",
    "multigpu": "graphlab.studies.multigpu:record_multigpu",
    "serving": "graphlab.studies.serving:record_serving",
    "conditional": "graphlab.studies.conditional.record:record_conditional",
    "dense": "graphlab.studies.dense:record_dense",
    "overhead": "graphlab.studies.overhead:record_overhead",
}


def git_commit() -> str:
    """$GRAPHLAB_GIT_COMMIT when set (a copy of the tree on a GPU machine may carry a stale .git: seen on the lent
    H200), else the checkout's commit, else "unknown"."""
    if os.environ.get("GRAPHLAB_GIT_COMMIT"):
        return os.environ["GRAPHLAB_GIT_COMMIT"]
    root = Path(__file__).resolve().parents[2]
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return "unknown"


def provenance(torch: Any, command: str) -> dict[str, Any]:
    """Where and how a recording was made: GPU, driver, torch, CUDA, cuda-bindings, graphlab, commit, date."""
    from graphlab._version import __version__
    from graphlab.env import _cuda_bindings_version, _driver_version

    return {
        "gpu": torch.cuda.get_device_name(),
        "driver": _driver_version() or "unknown",
        "torch": torch.__version__,
        "cuda": str(torch.version.cuda),
        "cuda_bindings": _cuda_bindings_version() or "not installed",
        "graphlab_version": __version__,
        "git_commit": git_commit(),
        "command": command,
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def recorded_command(argv: list[str]) -> str:
    """The command line as provenance: `graphlab record ...` without the output folder, whose path is the
    recording machine's own (a recording says where it came from, never where it was written)."""
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg == "--out":
            skip = True
            continue
        if arg.startswith("--out="):
            continue
        kept.append(arg)
    return "graphlab " + " ".join(shlex.quote(a) for a in kept) if kept else "graphlab record"


def _parse(dot: str, source: str) -> Any:
    from graphlab.graph.dot_parser import parse_dot

    return parse_dot(dot, source=source)


def record_model(torch: Any, name: str, batch_sizes: list[int], out_root: Path, prov: dict[str, Any],
                 sweep: bool, repeats: int | None) -> Path:
    """Capture one zoo model at each batch size and write its recording folder; return the folder."""
    from graphlab.recordings import gpu_slug, write_recording
    from graphlab.capture.api import capture
    from graphlab.zoo import get_model

    zoo_model = get_model(name)
    model = zoo_model.build(device="cuda")
    graphs: dict[str, dict[str, Any]] = {}
    census: dict[str, Any] = {}
    for batch_size in batch_sizes:
        inputs = zoo_model.make_inputs(batch_size, device="cuda")
        cg = capture(model, *inputs, warmup=3, dot_flags=RECORD_DOT_FLAGS, name=f"{name}-b{batch_size}")
        check = cg.verify(trials=2)
        dot = cg.dot()
        key = f"b{batch_size}"
        parsed = _parse(dot, f"{key}.dot")
        entry: dict[str, Any] = {
            "dot": dot, "model": parsed, "batch_size": batch_size, "dot_flags": RECORD_DOT_FLAGS,
            "capture_ms": round(cg.capture_ms, 3), "instantiate_ms": round(cg.instantiate_ms, 3),
            "memory_bytes": cg.pool_bytes, "peak_bytes": cg.peak_bytes, "exec_bytes": cg.exec_bytes,
            "verify": check.to_dict(),
            "input_shapes": [list(t.shape) for t in inputs],
        }
        try:
            api = cg.census()
            census[key] = {**api.to_dict(), "agrees_with_dot": not api.compare(parsed),
                           "disagreements": api.compare(parsed)}
        except GraphlabError as exc:
            census[key] = {"error": str(exc)}
        graphs[key] = entry
        print(f"[record] {name} batch {batch_size}: {len(parsed)} nodes {parsed.count_by_kind()}, capture "
              f"{cg.capture_ms:.1f} ms, pool +{cg.pool_bytes / 2**20:.1f} MiB, verify "
              f"{'ok' if check.passed else 'FAILED'} (max abs err {check.max_abs_err:.2g})", flush=True)
        cg.reset()
        del cg
    results: dict[str, Any] = {"census": census}
    if sweep:
        results.update(_timings(torch, model, zoo_model, batch_sizes, repeats))
    folder = out_root / gpu_slug(prov["gpu"]) / name
    write_recording(folder, name=name, description=zoo_model.description, provenance=prov, graphs=graphs,
                    results=results)
    return folder


#: a recording's paired rounds last at least this long, so that the host can show its speed states
RECORD_MIN_ROUNDS_S = 15.0
#: and then go on for up to this long until every batch size has 8 pairs at the fastest speed seen
RECORD_MAX_EXTRA_S = 20.0


def _timings(torch: Any, model: Any, zoo_model: Any, batch_sizes: list[int], repeats: int | None) -> dict[str, Any]:
    """The paired latency sweep (`graphlab.timing.sweep.sweep`), then a kernel timeline (profiling last).

    The rounds last at least `RECORD_MIN_ROUNDS_S` and collect pairs at the fastest host speed seen
    (`host_target="fastest"`): the speed `graphlab repro` compares at later (docs/latency-method.md).
    """
    from graphlab.timing.timeline import record_timeline
    from graphlab.timing.sweep import FASTEST, sweep

    print(f"[record]   {zoo_model.name}: paired latency sweep over {batch_sizes}", flush=True)
    result = sweep(model, lambda b, seed=0: zoo_model.make_inputs(b, device="cuda", seed=seed), list(batch_sizes),
                   name=zoo_model.name, repetitions=repeats, progress=False, host_target=FASTEST,
                   min_rounds_s=RECORD_MIN_ROUNDS_S, max_extra_s=RECORD_MAX_EXTRA_S)
    print(result.table(), result.modes_report(), f"[record]   sweep took {result.conditions['sweep_s']} s",
          sep="\n", flush=True)
    inputs = zoo_model.make_inputs(batch_sizes[0], device="cuda")
    print(f"[record]   {zoo_model.name}: kernel timeline at batch {batch_sizes[0]}", flush=True)
    return {"sweep": result.to_dict(), "timeline": record_timeline(model, inputs, name=zoo_model.name).to_dict()}


def record_pitfalls(torch: Any, out_root: Path, prov: dict[str, Any]) -> Path:
    """Run every failure example, keep its diagnosis, then prove the process still captures."""
    from graphlab.recordings import gpu_slug, write_recording
    from graphlab.capture.api import capture
    from graphlab.capture.pitfalls import EXAMPLES, run_example
    from graphlab.zoo import get_model

    outcomes = []
    for key, example in EXAMPLES.items():
        try:
            diagnosis = run_example(key)
            entry = {"example": key, "expected_cause": example.cause, "code": example.code,
                     "setup": example.setup, "warmup": example.warmup, **diagnosis.to_dict()}
        except Exception as exc:  # the failure did not happen (or something else broke): record that too
            entry = {"example": key, "expected_cause": example.cause, "code": example.code, "setup": example.setup,
                     "warmup": example.warmup, "cause": "none", "message": f"{type(exc).__name__}: {exc}"}
        outcomes.append(entry)
        print(f"[record] pitfall {key}: {entry['cause']} (expected {example.cause})", flush=True)
    zoo_model = get_model("mlp")
    inputs = zoo_model.make_inputs(8, device="cuda")
    cg = capture(zoo_model.build(device="cuda"), *inputs, dot_flags=RECORD_DOT_FLAGS, name="recovered")
    check = cg.verify(trials=2)
    dot = cg.dot()
    print(f"[record] pitfalls: capture after all failures: verify {'ok' if check.passed else 'FAILED'}", flush=True)
    graphs = {"recovered": {"dot": dot, "model": _parse(dot, "recovered.dot"), "batch_size": 8,
                            "dot_flags": RECORD_DOT_FLAGS, "verify": check.to_dict(),
                            "note": "mlp captured in the same process right after every failure example"}}
    folder = out_root / gpu_slug(prov["gpu"]) / PITFALLS
    write_recording(folder, name=PITFALLS, description="What each capture failure example said on this GPU, "
                    "and a capture made right after them in the same process.", provenance=prov, graphs=graphs,
                    results={"pitfalls": outcomes})
    return folder


def record_main(args: argparse.Namespace) -> int:
    """Entry point of `graphlab record` (arguments defined in graphlab.cli)."""
    from graphlab.env import require_cuda
    from graphlab.zoo import ZOO

    torch = require_cuda("graphlab record")
    if "LOCAL_RANK" in os.environ:  # under torchrun: each rank on its own GPU before anything opens a context
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    names = list(args.models) if args.models else [*ZOO, PITFALLS]
    known = [*ZOO, PITFALLS, *EXTRA_RECORDERS]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise GraphlabError(f"unknown recording(s) {', '.join(unknown)}; choose from {', '.join(known)}")
    if args.batch_sizes is not None and any(b < 1 for b in args.batch_sizes):
        raise GraphlabError("--batch-sizes must be positive integers")
    if len(names) > 1:
        return _record_each_in_fresh_process(args, names)
    prov = provenance(torch, recorded_command(sys.argv[1:]))
    out_root = Path(args.out)
    print(f"[record] {prov['gpu']}, torch {prov['torch']}, CUDA {prov['cuda']}, driver {prov['driver']} -> "
          f"{out_root}", flush=True)
    written = []
    for name in names:
        if name == PITFALLS:
            written.append(record_pitfalls(torch, out_root, prov))
            continue
        if name in EXTRA_RECORDERS:
            module, function = EXTRA_RECORDERS[name].split(":")
            written.append(getattr(importlib.import_module(module), function)(torch, out_root, prov))
            continue
        zoo_model = ZOO[name]
        if not zoo_model.available():
            print(f"[record] {name}: skipped, needs {', '.join(zoo_model.needs)}", flush=True)
            continue
        batch_sizes = list(args.batch_sizes or zoo_model.default_batch_sizes)
        written.append(record_model(torch, name, batch_sizes, out_root, prov, not args.no_sweep, args.repeats))
    for folder in written:
        print(f"[record] wrote {folder}", flush=True)
    return 0


def _record_each_in_fresh_process(args: argparse.Namespace, names: list[str]) -> int:
    """Record each model in its own Python process.

    A process that has run torch.profiler (the kernel timeline) or failed captures (the pitfalls)
    launches kernels more slowly afterwards (docs/overhead.md), so timings of a model recorded after
    another one in the same process would be biased against eager.
    """
    failed = []
    for name in names:
        argv = [sys.executable, "-m", "graphlab", "record", "--out", str(args.out), "--models", name]
        if args.batch_sizes:
            argv += ["--batch-sizes", *map(str, args.batch_sizes)]
        if args.no_sweep:
            argv.append("--no-sweep")
        if args.repeats is not None:
            argv += ["--repeats", str(args.repeats)]
        print(f"[record] {name}: in a fresh process", flush=True)
        if subprocess.run(argv).returncode != 0:
            failed.append(name)
    if failed:
        print(f"[record] failed: {', '.join(failed)}", file=sys.stderr, flush=True)
        return 1
    return 0


__all__ = ["EXTRA_RECORDERS", "RECORD_DOT_FLAGS", "RECORD_MAX_EXTRA_S", "RECORD_MIN_ROUNDS_S", "git_commit",
           "provenance", "record_main", "record_model", "record_pitfalls", "recorded_command"]
