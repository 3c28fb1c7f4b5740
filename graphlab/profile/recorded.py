"""Recorded mode's `gl.profile`: the profile `graphlab record --models profile` made on a GPU.

Pure: reads the `profile` recording through `gl.load` (`Profile`, `ProfileEvents`, `ProfileChecks`). A recorded
graph from `gl.capture(zoo_model, inputs)` (a `RecordedGraph`: recording "gpt", key "b1") answers with that model's
recorded profile; so does a name ("gpt b1", "resnet50 b64"). The answer's conditions say it is recorded, where and
when. What is specific here: which profile was asked for, and "the recording has no ...; it has ..." when it lacks it.
"""
from __future__ import annotations

from typing import Any

from graphlab.errors import GPUUnavailableError, RecordingError
from graphlab.loader import load, open_recording
from graphlab.mode import recorded_gpu
from graphlab.present import Table
from graphlab.profile.results import WHAT_IF_CASES, Profile, ProfileChecks, what_if_table
from graphlab.recordings import made_on

#: the recording the profiles are read from (the type's own: `Profile.RESULTS.recording`)
RECORDING: str = Profile.RESULTS.recording  # type: ignore[attr-defined]


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


def recorded_profile(target: Any, *inputs: Any, replays: int = 20, name: str | None = None, bucket: Any = None,
                     call: Any = None, modules: Any = None, show_progress: bool = True) -> Profile:
    """The recorded profile of `target` (a recorded graph or a name); takes `gl.profile`'s arguments (the others
    than `target` and `inputs` are the recording's own)."""
    key = profile_key(target, *inputs)
    rec = open_recording(RECORDING, recorded_gpu())
    if key not in rec.graph_names:
        raise RecordingError(f"the profile recording has no {key!r}; it has {', '.join(rec.graph_names)}")
    return load(Profile, rec, entry=key)


def recorded_on(provenance: dict[str, Any]) -> str:
    """ "Recorded on NVIDIA H200 on 2026-12-02": where and when, in the words a result's title says it."""
    return made_on(provenance, "Recorded")


def what_if_checks() -> Table:
    """The what-if check as recorded on a GPU (`graphlab record --models profile`), as a table (`what_if_table`)."""
    return load(ProfileChecks, RECORDING, gpu=recorded_gpu()).table()


__all__ = ["RECORDING", "WHAT_IF_CASES", "profile_key", "recorded_on", "recorded_profile", "what_if_checks",
           "what_if_table"]
