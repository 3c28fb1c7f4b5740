"""Recorded mode's `gl.audit`: the worked examples' audits that `graphlab record --models audit` made on a GPU.

Pure: reads the `audit` recording through `gl.load` (`AuditReport`). A worked example is asked for by name
(`gl.audit("baked_scalar")`); the answer says where and when it was recorded. Anything else (a model, a graph, a
name the recording lacks) gets one `RecordingError` that says what the recording has; with no recording at all, it
says plainly that there is no audit recording yet.
"""
from __future__ import annotations

from typing import Any

from graphlab.audit.findings import RECORDING, AuditReport
from graphlab.errors import RecordingError
from graphlab.loader import load, open_recording, record_hint
from graphlab.mode import recorded_gpu
from graphlab.present import listing

#: the worked examples, each a planted cause and its fixed version (`graphlab.studies.audit_examples` builds them)
WORKED_EXAMPLES = ("baked_scalar", "baked_scalar_fixed", "baked_address", "baked_address_fixed", "kept_output",
                   "kept_output_fixed", "rng_repeats", "rng_repeats_fixed", "input_replaced", "input_replaced_fixed",
                   "padding_reaches_rows", "padding_reaches_rows_fixed")


def recorded_audit(target: Any, make_inputs: Any = None, *, eager: Any = None, vary: Any = None, draws: int = 6,
                   grad_mode: str = "no_grad", name: str | None = None) -> AuditReport:
    """The recorded audit of the worked example named `target`; takes `gl.audit`'s arguments (the others are the
    recording's own).

    Raises:
        RecordingError: no audit recording yet, or `target` is not one of the audits it holds.
    """
    try:
        rec = open_recording(RECORDING, recorded_gpu())
    except RecordingError:
        raise RecordingError(f"no audit recording yet for {recorded_gpu()!r}: recorded mode answers gl.audit from "
                             f"the worked examples' audits made on a GPU, and none was made; {record_hint(RECORDING)}, "
                             "or run gl.audit live on a GPU") from None
    held = list(rec.result_names)
    if not isinstance(target, str):
        raise RecordingError(f"recorded mode audits the worked examples by name, and was asked for a "
                             f"{type(target).__name__}; the audit recording has {listing(held)} "
                             "(gl.audit(\"baked_scalar\")); auditing your own model needs a CUDA GPU")
    if target not in held:
        raise RecordingError(f"asked for {target!r}; the audit recording has {listing(held)}")
    return load(AuditReport, rec, entry=target)


__all__ = ["WORKED_EXAMPLES", "recorded_audit"]
