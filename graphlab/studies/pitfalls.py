"""`graphlab record` (by default, with the zoo): what each capture failure example said on this GPU.

Runs every failure example of `graphlab.capture.pitfalls.EXAMPLES` (those that would spoil this process in a
fresh one), keeps what each diagnosis said, then captures the zoo MLP in this process: proof that the process
stayed usable. Recorded mode's `run_example` (`graphlab.capture.pitfalls`) answers from this recording.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from graphlab.capture.api import capture
from graphlab.capture.pitfalls import EXAMPLES, run_example
from graphlab.graph.dot_parser import parse_dot
from graphlab.recordings import gpu_slug, write_recording
from graphlab.studies.record import RECORD_DOT_FLAGS
from graphlab.zoo import get_model

RECORDING = "pitfalls"
#: a bare `graphlab record` makes this recording, with every zoo model
BY_DEFAULT = True


def record(out_root: Path, prov: dict[str, Any]) -> Path:
    """What each capture failure example said on this GPU, and a capture made right after them."""
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
    graphs = {"recovered": {"dot": dot, "model": parse_dot(dot, source="recovered.dot"), "batch_size": 8,
                            "dot_flags": RECORD_DOT_FLAGS, "verify": check.to_dict(),
                            "note": "mlp captured in the same process right after every failure example"}}
    folder = out_root / gpu_slug(prov["gpu"]) / RECORDING
    write_recording(folder, name=RECORDING, description="What each capture failure example said on this GPU, "
                    "and a capture made right after them in the same process.", provenance=prov, graphs=graphs,
                    results={"pitfalls": outcomes})
    return folder


__all__ = ["BY_DEFAULT", "RECORDING", "record"]
