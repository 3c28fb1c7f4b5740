"""Recorded mode's `gl.profile`: the profile `graphlab record --models profile` made on a GPU.

Pure: reads the `profile` recording. A recorded graph from `gl.capture(zoo_model, inputs)` (a `RecordedGraph`:
recording "gpt", key "b1") answers with that model's recorded profile; so does a name ("gpt b1", "resnet50 b64").
The answer's conditions say it is recorded, where and when.
"""
from __future__ import annotations

from typing import Any

from graphlab import present
from graphlab.errors import GPUUnavailableError, RecordingError
from graphlab.mode import recorded_gpu
from graphlab.present import Column, Table
from graphlab.profile.modules import ModuleSpan
from graphlab.profile.results import Profile
from graphlab.recordings import load_recording

RECORDING = "profile"


def profile_key(target: Any, *inputs: Any) -> str:
    """The recording key of what is asked for: "gpt_b1" for a zoo gpt with inputs of batch 1, a recorded graph of
    gpt at batch 1, or the name "gpt b1"."""
    zoo = getattr(target, "graphlab_zoo", None)  # what gl.get_model(name).build() carries
    if zoo is not None and inputs and getattr(inputs[0], "shape", None):
        return f"{zoo}_b{int(inputs[0].shape[0])}"
    if isinstance(target, str):
        return target.strip().replace(" ", "_").replace("/", "_")
    rec, key = getattr(target, "recording", None), getattr(target, "key", None)
    if rec is not None and key is not None:
        return f"{rec.name}_{key}"
    raise GPUUnavailableError(
        f"recorded mode has profiles of the zoo models only (gl.profile(gl.get_model(name).build(), inputs), or a "
        f"name such as 'gpt b1'); profiling a {type(target).__name__} needs a CUDA GPU")


def recorded_keys() -> list[str]:
    """The profiles the recording holds ("gpt_b1", ...)."""
    return [k for k in load_recording(RECORDING, gpu=recorded_gpu()).graph_names]


def recorded_profile(target: Any, *inputs: Any, replays: int = 20, **options: Any) -> Profile:
    """The recorded profile of `target` (a recorded graph or a name); takes `gl.profile`'s arguments."""
    key = profile_key(target, *inputs)
    try:
        rec = load_recording(RECORDING, gpu=recorded_gpu())
    except RecordingError as exc:
        raise RecordingError(f"{exc}; make it on a GPU with `graphlab record --models profile`") from None
    if key not in rec.graph_names:
        raise RecordingError(f"the profile recording has no {key!r}; it has {', '.join(rec.graph_names)}")
    data = rec.results(key)
    prof = Profile.from_dict(data, rec.graph(key))
    prof.conditions["recorded"] = rec.banner()
    prof.conditions["recorded_on"] = recorded_on(rec.provenance)
    return prof


def recorded_on(provenance: dict[str, Any]) -> str:
    """ "Recorded on NVIDIA H200 on 2026-12-02": where and when, in the words a result's title says it."""
    gpu, date = provenance.get("gpu"), str(provenance.get("date") or "")[:10]
    return "Recorded" + (f" on {gpu}" if gpu else "") + (f" on {date}" if date else "")


def recorded_spans(key: str) -> list[ModuleSpan]:
    """The module spans recorded at capture for a profile (for re-running the matcher on its recorded trace)."""
    data = load_recording(RECORDING, gpu=recorded_gpu()).results(key)
    return [ModuleSpan.from_list(s) for s in data.get("module_spans", [])]


#: the what-if check's cases, in words (the table's column titles)
WHAT_IF_CASES = {"chain": "one stream: three GEMMs in a row",
                 "two_streams": "two streams: two GEMMs in a row, a smaller one beside them"}

#: the what-if check's measures, in the order the table reads them: (key, what, how to show it)
_WHAT_IF_ROWS = (
    ("span_us", "span, measured", "time"),
    ("predicted_span_us", "predicted with mm1 twice as fast", "time"),
    ("measured_span_us", "measured with mm1 on half its work", "time"),
    ("error_pct", "error of the prediction", "percent"),
    ("factor", "mm1's real time factor (half the work)", "ratio"),
    ("predicted_with_factor_us", "predicted with that factor", "time"),
    ("error_with_factor_pct", "error then", "percent"),
)


def what_if_table(checks: dict[str, Any], where: str = "") -> Table:
    """The what-if check (`graphlab record --models profile`) as a table, one column per graph: the span measured,
    the span predicted with the GEMM "mm1" twice as fast, the span measured with mm1 really on half its work and
    the prediction's error; then the factor halving the work really gave mm1 and the prediction with that factor."""
    show = {"time": present.duration, "percent": lambda v: f"{'+' if v > 0 else ''}{present.percent(v)}",
            "ratio": present.ratio}
    cases = list(checks)
    rows = []
    for key, what, kind in _WHAT_IF_ROWS:
        row: dict[str, Any] = {"what": what}
        for case in cases:
            value = checks[case].get(key)
            row[case] = None if value is None else show[kind](float(value))
        rows.append(row)
    failed = "; ".join(f"{WHAT_IF_CASES.get(case, case)}: {c['error']}" for case, c in checks.items() if c.get("error"))
    missing = f"the check did not run ({failed})" if failed else "not recorded"
    columns = [Column("what", "", kind="text")]
    columns += [Column(case, WHAT_IF_CASES.get(case, case), kind="text", missing=missing) for case in cases]
    notes = ["error: predicted minus measured, over measured. mm1's real time factor: its time on half its inner "
             "dimension over its full time (halving the work did not halve the time exactly)."]
    title = "Does the what-if predict? One GEMM (mm1) on half its work, predicted and measured"
    return Table(rows, columns, index="what", notes=notes,
                 title=f"{title}; {where[0].lower()}{where[1:]}" if where else title)


def what_if_checks() -> Table:
    """The what-if check as recorded on a GPU (`graphlab record --models profile`), as a table (`what_if_table`)."""
    try:
        rec = load_recording(RECORDING, gpu=recorded_gpu())
    except RecordingError as exc:
        raise RecordingError(f"{exc}; make it on a GPU with `graphlab record --models profile`") from None
    if "what_if" not in rec.result_names:
        raise RecordingError(f"the profile recording has no what-if check; it has {', '.join(rec.result_names)}")
    return what_if_table(rec.results("what_if"), recorded_on(rec.provenance))


__all__ = ["RECORDING", "WHAT_IF_CASES", "profile_key", "recorded_keys", "recorded_on", "recorded_profile",
           "recorded_spans", "what_if_checks", "what_if_table"]
