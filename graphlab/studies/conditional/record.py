"""`graphlab record --models conditional`: the conditional-node studies, recorded with provenance.

Runs on a GPU, in the fresh process `graphlab record` gives each recorder (about a minute on an
H200): what this machine supports, the three worked uses (early exit, greedy decode in a WHILE
loop, a SWITCH over batch-size buckets) and the route comparison. It writes
`data/recordings/<gpu>/conditional/` with, per study, the DOT of its conditional graph exactly as
`cudaGraphDebugDotPrint` wrote it (flags 1, bodies included) and the parsed model, plus the
measured rows as JSON. A study that fails is recorded as its error, never as numbers.
Layer 2: torch is passed in.
"""
from __future__ import annotations

import re
import traceback
from pathlib import Path
from typing import Any

from graphlab.conditional.results import RECORDING

_ABSOLUTE_PATH = re.compile(r"(?<![\w.])/(?:[\w.+-]+/)+([\w.+-]+)")


def strip_paths(value: Any) -> Any:
    """The same JSON-ready value with absolute paths cut to their last part (recordings hold no paths)."""
    if isinstance(value, str):
        return _ABSOLUTE_PATH.sub(r"\1", value)
    if isinstance(value, dict):
        return {k: strip_paths(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strip_paths(v) for v in value]
    return value


def run_studies(quick: bool = False, names: list[str] | None = None) -> tuple[list[Any], dict[str, str]]:
    """The conditional studies called `names` (default: all; a quarter of the repeats when `quick`);
    returns (studies, {name: error})."""
    from graphlab.studies.conditional.bucket_switch import bucket_switch_study
    from graphlab.studies.conditional.decode_loop import decode_loop_study
    from graphlab.studies.conditional.early_exit import early_exit_study
    from graphlab.studies.conditional.routes import conditional_route_study

    scale = 0.25 if quick else 1.0
    plan = [
        ("early_exit", lambda: early_exit_study(repeats=int(200 * scale))),
        ("decode_loop", lambda: decode_loop_study(repeats=max(5, int(20 * scale)))),
        ("bucket_switch", lambda: bucket_switch_study(repeats=int(300 * scale))),
        ("routes", lambda: conditional_route_study(repeats=int(100 * scale))),
    ]
    studies, errors = [], {}
    for name, run in plan:
        if names and name not in names:
            continue
        print(f"[record] conditional: {name}", flush=True)
        try:
            study = run()
        except Exception as exc:  # noqa: BLE001 - a failed study is recorded as its error
            errors[name] = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=4)}"[-2000:]
            print(f"[record]   {name} FAILED: {type(exc).__name__}: {exc}", flush=True)
            continue
        print(f"[record]   {name}: checks {study.checks}", flush=True)
        for line in study.verdict():
            print(f"[record]   {line}", flush=True)
        studies.append(study)
    return studies, errors


def record_conditional(torch: Any, out_root: Path, prov: dict[str, Any]) -> Path:
    """Run the studies and write the "conditional" recording; returns its folder."""
    from graphlab.graph.dot_parser import parse_dot
    from graphlab.recordings import gpu_slug, write_recording
    from graphlab.conditional.support import conditional_support

    support = conditional_support()
    print(f"[record] conditional support here:\n{support}", flush=True)
    studies, errors = run_studies()
    graphs = {}
    for study in studies:
        if study.dot:
            graphs[study.name] = {"dot": study.dot, "model": parse_dot(study.dot, source=f"{study.name}.dot"),
                                  "dot_flags": 1, "kind": study.facts.get("kind"), "route": study.facts.get("route")}
    results: dict[str, Any] = {"support": strip_paths(support.to_dict())}
    results.update({s.name: strip_paths(s.to_dict()) for s in studies})
    if errors:
        results["errors"] = strip_paths(errors)
    folder = Path(out_root) / gpu_slug(prov["gpu"]) / RECORDING
    write_recording(folder, name=RECORDING, description=(
        "CUDA conditional nodes with PyTorch bodies: early exit (IF/ELSE), greedy decoding in one WHILE launch, "
        "a SWITCH over batch-size buckets, and the two ways of building them, each timed against its host-side "
        "alternative and checked against eager."), provenance=prov, graphs=graphs, results=results)
    return folder


__all__ = ["record_conditional", "run_studies", "strip_paths"]
