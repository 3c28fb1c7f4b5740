"""Recorded mode's `gl.profile`: the profile `graphlab record --models profile` made on a GPU.

Pure: reads the `profile` recording. A recorded graph from `gl.capture(zoo_model, inputs)` (a `RecordedGraph`:
recording "gpt", key "b1") answers with that model's recorded profile; so does a name ("gpt b1", "resnet50 b64").
The answer's conditions say it is recorded, where and when.
"""
from __future__ import annotations

from typing import Any

from graphlab.errors import GPUUnavailableError, RecordingError
from graphlab.mode import recorded_gpu
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
    return prof


def recorded_spans(key: str) -> list[ModuleSpan]:
    """The module spans recorded at capture for a profile (for re-running the matcher on its recorded trace)."""
    data = load_recording(RECORDING, gpu=recorded_gpu()).results(key)
    return [ModuleSpan.from_list(s) for s in data.get("module_spans", [])]


__all__ = ["RECORDING", "profile_key", "recorded_keys", "recorded_profile", "recorded_spans"]
