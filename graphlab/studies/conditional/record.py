"""`graphlab record --models conditional`: the conditional-node studies, recorded with provenance.

Runs on a GPU, in the fresh process `graphlab record` gives each recorder (about a minute on an
H200): what this machine supports, the three worked uses (early exit, greedy decode in a WHILE
loop, a SWITCH over batch-size buckets) and the route comparison. It writes
`data/recordings/<gpu>/conditional/` with, per study, the DOT of its conditional graph exactly as
`cudaGraphDebugDotPrint` wrote it (flags 1, bodies included) and the parsed model, plus the
measured rows as JSON. A study that fails is recorded as its error, never as numbers.

The studies are the modules of `graphlab.studies.conditional` that name themselves (`STUDY`); they
run in the order of `graphlab.conditional.results.STUDY_NAMES`, and the two must agree one to one.
"""
from __future__ import annotations

import re
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

from graphlab.conditional.results import RECORDING, STUDY_NAMES, ConditionalErrors, ConditionalStudy
from graphlab.conditional.support import conditional_support
from graphlab.errors import ConfigurationError
from graphlab.graph.dot_parser import parse_dot
from graphlab.recordings import gpu_slug, write_recording
from graphlab.studies.conditional import study_modules


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


def studies_in_order() -> list[tuple[str, ModuleType]]:
    """(name, module) of every conditional study, in recording order; ConfigurationError when the study
    modules and the pure table of graphlab.conditional.results disagree."""
    modules = study_modules()
    if set(modules) != set(STUDY_NAMES):
        raise ConfigurationError(
            f"the conditional study modules ({', '.join(sorted(modules))}) and "
            f"graphlab.conditional.results.VERDICTS ({', '.join(STUDY_NAMES)}) must name the same studies: "
            "give each study module its line in VERDICTS")
    return [(name, modules[name]) for name in STUDY_NAMES]


def run_studies(quick: bool = False, names: list[str] | None = None) -> tuple[list[ConditionalStudy], dict[str, str]]:
    """The conditional studies called `names` (default: all; a quarter of the repeats when `quick`);
    returns (studies, {name: error})."""
    studies, errors = [], {}
    for name, module in studies_in_order():
        if names and name not in names:
            continue
        print(f"[record] conditional: {name}", flush=True)
        try:
            study = module.run_for_recording(quick)
        except Exception as exc:  # noqa: BLE001 - a failed study is recorded as its error
            errors[name] = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=4)}"[-2000:]
            print(f"[record]   {name} FAILED: {type(exc).__name__}: {exc}", flush=True)
            continue
        print(f"[record]   {name}: checks {study.checks}", flush=True)
        for line in study.verdict():
            print(f"[record]   {line}", flush=True)
        studies.append(study)
    return studies, errors


def record(out_root: Path, prov: dict[str, Any]) -> Path:
    """Run the studies and write the "conditional" recording; returns its folder."""
    support = conditional_support()
    print(f"[record] conditional support here:\n{support}", flush=True)
    studies, errors = run_studies()
    graphs = {}
    for study in studies:
        if study.dot:
            graphs[study.name] = {"dot": study.dot, "model": parse_dot(study.dot, source=f"{study.name}.dot"),
                                  "dot_flags": 1, "kind": study.facts.get("kind"), "route": study.facts.get("route")}
    # every entry through its results type (gl.load reads them back): ConditionalSupport, ConditionalStudy and,
    # when a study failed, ConditionalErrors
    results: dict[str, Any] = {"support": strip_paths(support.to_dict())}
    results.update({s.name: strip_paths(s.to_dict()) for s in studies})
    if errors:
        results["errors"] = strip_paths(ConditionalErrors(errors).to_dict())
    folder = Path(out_root) / gpu_slug(prov["gpu"]) / RECORDING
    write_recording(folder, name=RECORDING, description=(
        "CUDA conditional nodes with PyTorch bodies: early exit (IF/ELSE), greedy decoding in one WHILE launch, "
        "a SWITCH over batch-size buckets, and the two ways of building them, each timed against its host-side "
        "alternative and checked against eager."), provenance=prov, graphs=graphs, results=results)
    return folder


__all__ = ["RECORDING", "record", "run_studies", "strip_paths", "studies_in_order"]
