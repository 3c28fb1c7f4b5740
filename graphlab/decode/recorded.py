"""The decode recordings, read back without a GPU: the stand-ins of `graphlab.decode.api`.

Pure: reads data/recordings/<gpu>/decode (made by `graphlab record --models decode`).
"""
from __future__ import annotations

from typing import Any

from graphlab.decode.results import DecodeReport
from graphlab.errors import BadInputError, RecordingError
from graphlab.mode import recorded_gpu
from graphlab.recordings import Recording, load_recording
from graphlab.watch.compiled import compile_summary

#: the recording's folder name
RECORDING = "decode"


def decode_recording() -> Recording:
    try:
        return load_recording(RECORDING, gpu=recorded_gpu())
    except RecordingError as exc:
        raise RecordingError(f"no {RECORDING!r} recording for {recorded_gpu()} ({exc}); make it on a GPU with "
                             f"`graphlab record --models {RECORDING}`") from None


def recorded_report(arch: str = "llama", **not_recorded: Any) -> DecodeReport:
    """The decode comparison the GPU recorded for `arch` (other arguments are the live run's: ignored)."""
    rec = decode_recording()
    reports = rec.results("reports")
    if arch not in reports:
        raise BadInputError(f"the decode recording has {', '.join(sorted(reports))}, not {arch!r}")
    report = DecodeReport.from_dict(reports[arch], source=f"recorded: {rec.banner()}")
    records = report.conditions.get("compile_records")
    stored = report.compile.get("all")
    if records and stored is not None:  # read torch's recorded words again, with this graphlab's reader
        watched = [{"library": "torch.compile (CUDAGraph Trees)", "role": "recording", "capture_ms": e.capture_ms,
                    "pool_bytes": e.pool_bytes, "input_shapes": e.input_shapes}
                   for e in stored.recordings if e.message == "seen by gl.watch" or e.capture_ms is not None]
        sources = [s for s in stored.sources if not s.startswith("gl.watch")]
        report.compile["all"] = compile_summary(records, counters=stored.counters, watched=watched, sources=sources)
    return report


def recorded_graph(arch: str = "llama", batch: int = 1, compiled: bool = False, **not_recorded: Any) -> Any:
    """The decode step's graph the GPU recorded (a parsed `CudaGraph`)."""
    key = f"{arch}-{'compiled-' if compiled else ''}b{batch}"
    rec = decode_recording()
    try:
        return rec.graph(key)
    except (KeyError, RecordingError, BadInputError):
        raise BadInputError(f"the decode recording has no graph {key!r}") from None


__all__ = ["RECORDING", "decode_recording", "recorded_graph", "recorded_report"]
