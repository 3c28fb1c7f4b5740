"""`graphlab record`: capture the model zoo on this GPU and write recordings with full provenance.

For each zoo model and batch size: capture (warm-up 3, keep_graph=True), verify replay against eager,
keep the raw DOT (flags 1, Verbose: kernel launch dimensions, copy sizes and topological ids in one
dump, the same text torch's own `debug_dump` writes; the model is parsed from it on load), a census
from the graph API and, unless --no-sweep, the paired eager-vs-replay sweep and a kernel timeline.

Every other recording is a study: a module under graphlab/studies/ (sub-folders too) that defines
`RECORDING = "<name>"` and `def record(out_root: Path, prov: dict) -> Path` (it writes one recording
folder, `out_root / gpu_slug(prov["gpu"]) / RECORDING`, and returns it). The flags a study reads (`--ways`,
`--buckets`: decode_scale) reach it as $GRAPHLAB_RECORD_WAYS and $GRAPHLAB_RECORD_BUCKETS (`study_flags`), so
every study is called the same way. `recorders()` finds them by
importing the package, so a new study needs no line here; `graphlab record --help` lists them
(`graphlab.studies.catalog`, from their source). A study with `BY_DEFAULT = True` (the pitfalls) is made
by a bare `graphlab record`, with the zoo; the others (cells, cache, traffic, dense, overhead, watch,
conditional, serving, multigpu) only when named. Each recording is made in a fresh process, so one
recording's profiling or failed captures cannot colour another's timings.

    graphlab record --out data/recordings --models mlp gpt --batch-sizes 1 8 --no-sweep
"""
from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import shlex
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

import graphlab.studies
from graphlab import env
from graphlab._version import __version__
from graphlab.capture.api import capture
from graphlab.errors import BadInputError, ConfigurationError, GraphlabError
from graphlab.graph.census import RecordedCensus, RecordedCensuses
from graphlab.graph.dot_parser import parse_dot
from graphlab.loader import dump
from graphlab.recordings import gpu_slug, write_recording
from graphlab.results_types import results_type
from graphlab.timing.options import FASTEST, SweepOptions
from graphlab.timing.sweep import sweep
from graphlab.timing.timeline import record_timeline
from graphlab.zoo import ZOO, ZooModel, get_model

#: the DOT detail every recording keeps: 1 = Verbose (launch dimensions, copy sizes, topological ids)
RECORD_DOT_FLAGS = 1


def recorders() -> dict[str, ModuleType]:
    """Every study `graphlab record` can run, by name: the modules under graphlab/studies/ (sub-folders too)
    that define `RECORDING = "<name>"` and a `record(out_root, prov)` function. Found by importing them."""
    found: dict[str, ModuleType] = {}
    for info in pkgutil.walk_packages(graphlab.studies.__path__, "graphlab.studies."):
        module = importlib.import_module(info.name)
        name = getattr(module, "RECORDING", None)
        if not isinstance(name, str) or not callable(getattr(module, "record", None)):
            continue
        if name in found:
            raise ConfigurationError(f"two studies record {name!r}: {found[name].__name__} and {module.__name__}; "
                                     "give one of them another RECORDING")
        found[name] = module
    return found


def git_commit() -> str:
    """$GRAPHLAB_GIT_COMMIT when set (a copy of the tree on a GPU machine may carry a stale .git: seen on the lent
    H200), else the checkout's commit, else "unknown".

    Raises:
        ConfigurationError: $GRAPHLAB_GIT_COMMIT is not a full 40-digit hash (a short one cannot be checked later,
            and the recording's provenance test refuses it): raised before any GPU time is spent.
    """
    given = os.environ.get("GRAPHLAB_GIT_COMMIT", "").strip()
    if given:
        if len(given) != 40 or any(c not in "0123456789abcdef" for c in given.lower()):
            raise ConfigurationError(f"GRAPHLAB_GIT_COMMIT={given!r} is not a full commit hash: give "
                                     "GRAPHLAB_GIT_COMMIT=$(git rev-parse HEAD)")
        return given.lower()
    root = Path(__file__).resolve().parents[2]
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return "unknown"


def provenance(command: str) -> dict[str, Any]:
    """Where and how a recording was made: GPU, driver, torch, CUDA, cuda-bindings, graphlab, commit, date."""
    return {
        "gpu": torch.cuda.get_device_name(),
        "driver": env._driver_version() or "unknown",
        "torch": torch.__version__,
        "cuda": str(torch.version.cuda),
        "cuda_bindings": env._cuda_bindings_version() or "not installed",
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


def record_model(name: str, batch_sizes: list[int], out_root: Path, prov: dict[str, Any], with_sweep: bool,
                 repeats: int | None) -> Path:
    """Capture one zoo model at each batch size and write its recording folder; return the folder."""
    zoo_model = get_model(name)
    model = zoo_model.build(device="cuda")
    graphs: dict[str, dict[str, Any]] = {}
    census: dict[str, RecordedCensus] = {}
    for batch_size in batch_sizes:
        inputs = zoo_model.make_inputs(batch_size, device="cuda")
        cg = capture(model, *inputs, warmup_calls=3, dot_flags=RECORD_DOT_FLAGS, name=f"{name}-b{batch_size}")
        check = cg.verify(trials=2)
        dot = cg.dot()
        key = f"b{batch_size}"
        parsed = parse_dot(dot, source=f"{key}.dot")
        entry: dict[str, Any] = {
            "dot": dot, "model": parsed, "batch_size": batch_size, "dot_flags": RECORD_DOT_FLAGS,
            "capture_ms": round(cg.capture_ms, 3), "capture_state": cg.cost.capture_state,
            "instantiate_ms": round(cg.instantiate_ms, 3),
            "pool_bytes": cg.pool_bytes, "peak_bytes": cg.peak_bytes, "exec_bytes": cg.exec_bytes,
            "verify": check.to_dict(),
            "input_shapes": [list(t.shape) for t in inputs],
        }
        try:
            api = cg.census()
            census[key] = RecordedCensus(api, tuple(api.compare(parsed)))
        except GraphlabError as exc:
            census[key] = RecordedCensus(None, error=str(exc))
        graphs[key] = entry
        print(f"[record] {name} batch {batch_size}: {len(parsed)} nodes {parsed.count_by_kind()}, capture "
              f"{cg.capture_ms:.1f} ms, pool +{cg.pool_bytes / 2**20:.1f} MiB, verify "
              f"{'ok' if check.passed else 'FAILED'} (max abs err {check.max_abs_err:.2g})", flush=True)
        cg.reset()
        del cg
    # the census entry is a mapping of graph keys: written as `to_dict()`, no schema marker among them (version 1)
    results: dict[str, Any] = {results_type(RecordedCensuses).entry: RecordedCensuses(census).to_dict()}
    if with_sweep:
        results.update(_timings(model, zoo_model, batch_sizes, repeats))
    folder = out_root / gpu_slug(prov["gpu"]) / name
    write_recording(folder, name=name, description=zoo_model.description, provenance=prov, graphs=graphs,
                    results=results)
    return folder


#: a recording's paired rounds last at least this long, so that the host can show its speed states
RECORD_MIN_ROUNDS_S = 15.0
#: and then go on for up to this long until every batch size has 8 pairs at the fastest speed seen
RECORD_MAX_EXTRA_S = 20.0


def _timings(model: Any, zoo_model: ZooModel, batch_sizes: list[int], repeats: int | None) -> dict[str, Any]:
    """The paired latency sweep (`graphlab.timing.sweep.sweep`), then a kernel timeline (profiling last).

    The rounds last at least `RECORD_MIN_ROUNDS_S` and collect pairs at the fastest host speed seen
    (`host_target="fastest"`): the speed `graphlab repro` compares at later (docs/latency-method.md).
    """
    print(f"[record]   {zoo_model.name}: paired latency sweep over {batch_sizes}", flush=True)
    options = SweepOptions(repetitions=repeats, host_target=FASTEST, min_rounds_s=RECORD_MIN_ROUNDS_S,
                           max_extra_s=RECORD_MAX_EXTRA_S)
    result = sweep(model, lambda b, seed=0: zoo_model.make_inputs(b, device="cuda", seed=seed), list(batch_sizes),
                   name=zoo_model.name, options=options, progress=False)
    print(result.table(), result.modes_report(), f"[record]   sweep took {result.conditions['sweep_s']} s",
          sep="\n", flush=True)
    inputs = zoo_model.make_inputs(batch_sizes[0], device="cuda")
    print(f"[record]   {zoo_model.name}: kernel timeline at batch {batch_sizes[0]}", flush=True)
    return {"sweep": dump(result), "timeline": dump(record_timeline(model, inputs, name=zoo_model.name))}


#: the environment variables that carry `graphlab record`'s study flags to the study (space-separated values)
STUDY_FLAGS = {"ways": "GRAPHLAB_RECORD_WAYS", "batch_sizes": "GRAPHLAB_RECORD_BUCKETS"}


def study_flags(args: argparse.Namespace) -> dict[str, str]:
    """The study flags given on the command line, as the environment a study reads them from (`STUDY_FLAGS`)."""
    out = {}
    for flag, variable in STUDY_FLAGS.items():
        values = getattr(args, flag, None)
        if values:
            out[variable] = " ".join(str(v) for v in values)
    return out


def record_main(args: argparse.Namespace) -> int:
    """Entry point of `graphlab record` (arguments defined in graphlab.cli)."""
    studies = recorders()
    by_default = [n for n, m in sorted(studies.items()) if getattr(m, "BY_DEFAULT", False)]
    names = list(args.models) if args.models else [*ZOO, *by_default]
    known = [*ZOO, *by_default, *sorted(n for n in studies if n not in by_default)]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise BadInputError(f"unknown recording(s) {', '.join(unknown)}; choose from {', '.join(known)} "
                            "(graphlab record --help says what each records)")
    if args.batch_sizes is not None and any(b < 1 for b in args.batch_sizes):
        raise BadInputError(f"--batch-sizes must be positive integers, got {' '.join(map(str, args.batch_sizes))}")
    env.require_cuda("graphlab record")
    if "LOCAL_RANK" in os.environ:  # under torchrun: each rank on its own GPU before anything opens a context
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    if len(names) > 1:
        return _record_each_in_fresh_process(args, names)
    (name,) = names
    prov = provenance(recorded_command(sys.argv[1:]))
    out_root = Path(args.out)
    print(f"[record] {prov['gpu']}, torch {prov['torch']}, CUDA {prov['cuda']}, driver {prov['driver']} -> "
          f"{out_root}", flush=True)
    if name in studies:
        os.environ.update(study_flags(args))
        folder = studies[name].record(out_root, prov)
    elif not ZOO[name].available():
        print(f"[record] {name}: skipped, needs {', '.join(ZOO[name].needs)}", flush=True)
        return 0
    else:
        batch_sizes = list(args.batch_sizes or ZOO[name].default_batch_sizes)
        folder = record_model(name, batch_sizes, out_root, prov, not args.no_sweep, args.repeats)
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
        if getattr(args, "ways", None):
            argv += ["--ways", *args.ways]
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


__all__ = ["RECORD_DOT_FLAGS", "RECORD_MAX_EXTRA_S", "RECORD_MIN_ROUNDS_S", "STUDY_FLAGS", "git_commit", "provenance",
           "record_main", "record_model", "recorded_command", "recorders", "study_flags"]
