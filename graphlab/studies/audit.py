"""`graphlab record --models audit`: every worked example of `gl.audit` and the zoo models, audited on this GPU.

Writes `<out>/<gpu>/audit/` with one `AuditReport` per entry (`gl.load(AuditReport, "audit", entry=name)`, and
`gl.audit(name)` in recorded mode): each worked example and its fixed version (`studies/audit_examples.py`), and
`zoo_<model>_b1` for the zoo models. No graph is kept: the findings name nodes, kernels, modules and lines.
A CUDA error cannot be recorded this way (it ends the process's CUDA context): `tests/gpu/test_gpu_audit.py` checks
that path in a process of its own. Refuses without a GPU (`graphlab record` does, before any study runs).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from graphlab.audit.findings import RECORDING
from graphlab.env import require_cuda
from graphlab.loader import dump
from graphlab.recordings import gpu_slug, write_recording
from graphlab.studies.audit_examples import EXAMPLES, ZOO_AUDITS, run_example, run_zoo


def record(out_root: Path, prov: dict[str, Any]) -> Path:
    """Audit each worked example, its fixed version and the zoo models; write the reports."""
    require_cuda("graphlab record --models audit")
    results: dict[str, Any] = {}
    for name, example in EXAMPLES.items():
        print(f"[record] audit: {name} ...", flush=True)
        report = run_example(name)
        expected = example.cause or "no finding"
        print(f"[record] audit: {name}: {report.causes() or 'no finding'} (planted: {expected}), "
              f"{report.seconds:.2f} s", flush=True)
        results[name] = dump(report)
    for model in ZOO_AUDITS:
        print(f"[record] audit: zoo {model} b1 ...", flush=True)
        report = run_zoo(model, 1)
        print(f"[record] audit: zoo {model} b1: {report.causes() or 'no finding'}, {report.seconds:.2f} s, "
              f"{report.seconds_per_draw:.3f} s per draw", flush=True)
        results[f"zoo_{model}_b1"] = dump(report)
    folder = out_root / gpu_slug(prov["gpu"]) / RECORDING
    write_recording(folder, name=RECORDING,
                    description="gl.audit on its worked examples (one planted cause each, and the fixed version) and "
                                "on the zoo models at batch 1: findings, where, what was tried, what was not varied.",
                    provenance=prov, graphs={}, results=results)
    return folder


__all__ = ["RECORDING", "record"]
