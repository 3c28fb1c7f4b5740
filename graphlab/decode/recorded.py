"""The decode recordings, read back without a GPU: the stand-ins of `graphlab.decode.api`.

Pure: reads data/recordings/<gpu>/decode (made by `graphlab record --models decode`) through `gl.load`
(`DecodeReports`); what is specific here is what a call asked for that the recording does not hold.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Sequence

from graphlab.decode.options import DecodeOptions
from graphlab.decode.results import WAYS, DecodeReport, DecodeReports
from graphlab.errors import BadInputError, RecordingError
from graphlab.loader import load, open_recording
from graphlab.mode import recorded_gpu
from graphlab.recordings import Recording

#: the recording's folder name (the type's own: `DecodeReports.RESULTS.recording`)
RECORDING: str = DecodeReports.RESULTS.recording  # type: ignore[attr-defined]


def decode_recording() -> Recording:
    """The decode recording of recorded mode's GPU (its graphs; `gl.load(DecodeReports)` reads its reports)."""
    return open_recording(RECORDING, recorded_gpu())


def _check_like_live(ways: Sequence[str], batch_sizes: Sequence[int]) -> None:
    """Refuse what `compare_decode` refuses, in its words, saying that the recording refused it (the lengths are
    `DecodeOptions`' own check, the same in both modes)."""
    unknown = [w for w in ways if w not in WAYS]
    if unknown:
        raise BadInputError(f"unknown way(s) {unknown}; choose from {', '.join(WAYS)} (recorded mode refuses what a "
                            "live run refuses)")
    buckets = sorted(set(int(b) for b in batch_sizes))
    if not buckets or buckets[0] < 1:
        raise BadInputError(f"buckets must be positive batch sizes, got {list(buckets)} (recorded mode refuses what "
                            "a live run refuses)")


def recorded_report(arch: str = "llama", *, batch_sizes: Sequence[int] = (1, 4, 16, 64), ways: Sequence[str] = WAYS,
                    token_batches: Sequence[int] = (1, 4, 16), options: DecodeOptions = DecodeOptions(),
                    budget_s: float | None = None, progress: bool = True,
                    keep_dots: dict[str, str] | None = None) -> DecodeReport:
    """The decode comparison the GPU recorded for `arch`, with the batch sizes, ways and token checks asked for
    where the recording has them; `report.notes` says "asked for ..., the recording has ..." for each that differs
    (and for the `options`: rounds, size and lengths). Arguments a live run would refuse are refused here too;
    `budget_s`, `progress` and `keep_dots` are the live run's own."""
    _check_like_live(ways, batch_sizes)
    report = load(DecodeReports, RECORDING, gpu=recorded_gpu()).report(arch).subset(batch_sizes, ways, token_batches)
    held = report.conditions
    for name in ("rounds", "size", "new_tokens", "prompt_len", "max_cache_len"):
        asked = getattr(options, name)
        if name in held and held[name] != asked:
            report.notes.append(f"Asked for {name.replace('_', ' ')} {asked}; the recording has {held[name]}.")
    if report.notes:
        report.notes.append("A recording cannot run a new comparison: on a GPU machine, gl.set_mode('live') runs "
                            "the one asked for.")
    return report


def recorded_graph(arch: str = "llama", batch: int = 1, compiled: bool = False) -> Any:
    """The decode step's graph the GPU recorded (a parsed `CudaGraph`)."""
    key = f"{arch}-{'compiled-' if compiled else ''}b{batch}"
    rec = decode_recording()
    try:
        graph = rec.graph(key)
    except (KeyError, RecordingError, BadInputError):
        raise BadInputError(f"the decode recording has no graph {key!r}") from None
    return dataclasses.replace(graph, metadata={**graph.metadata, "recorded": rec.made})


__all__ = ["RECORDING", "decode_recording", "recorded_graph", "recorded_report"]
