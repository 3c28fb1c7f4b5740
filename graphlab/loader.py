"""One loader for recorded results: `gl.load(Sweep, "gpt")`.

A recording folder (`data/recordings/<gpu>/<name>/`, `graphlab.recordings`) holds several results files, and one
kind of result lives in several recordings (a `Sweep` in mlp, cnn, gpt, encoder and resnet18). Each results type
declares how it lives in recordings (`graphlab.results_types.recorded_result`); `load(Type, recording)` then does
the same steps for every type: find the recording (and its GPU folder), raise the one "record it" error when there
is none, read the type's entry, check its schema (a newer file than this graphlab is a clear error, a file that
lacks what its version holds too), keep the fields the type knows, and build the object through the type, which is
handed the `Recording` to attach its provenance (and, when its `from_recording` takes an `entry` argument, the
entry it was read from). `dump(obj)` is what a study writes: the object's dict stamped with
its type's schema.

Pure: standard library only.
"""
from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, Mapping, TypeVar

from graphlab.errors import BadInputError, RecordingError
from graphlab.mode import pick, recorded_gpu
from graphlab.recordings import Recording, check_name, load_recording
from graphlab.results_types import check_entry, known_fields, results_type

__all__ = ["dump", "load", "open_recording", "record_hint"]

_T = TypeVar("_T")


def record_hint(name: str) -> str:
    """How a missing recording is made: the one wording every loader uses."""
    return f"record it on a GPU with `graphlab record --models {name}`"


def open_recording(name: str, gpu: str | None = None, root: str | Path | None = None) -> Recording:
    """The recording `name` (on `gpu`; when None, recorded mode's GPU folder in recorded mode, else the first
    folder that holds one), or the one error that says what exists and how to make it."""
    check_name(name)
    if gpu is None:
        gpu = pick(live=None, recorded=recorded_gpu())
    try:
        return load_recording(name, gpu=gpu, root=root)
    except RecordingError as exc:
        if not str(exc).startswith("no recording"):
            raise  # a broken recording: its own message names the file and what is wrong
        raise RecordingError(f"{exc}; {record_hint(name)}") from None


def load(cls: type[_T], recording: str | Recording | None = None, *, gpu: str | None = None,
         entry: str | None = None, root: str | Path | None = None) -> _T:
    """A recorded result of type `cls` (`gl.load(Sweep, "gpt")`): from `recording` (a name, default the type's own;
    or a `Recording` already open), on
    `gpu` (a folder such as "h200"; default: recorded mode's GPU, else any), its `entry` (default: the type's; a recording
    may hold several of one type, such as the serving sweeps "gpt" and "gpt_asgi").

    Raises:
        BadInputError: `cls` is not a results type, or it has no default recording and none was named.
        RecordingError: no such recording (the message says how to record it), no such entry in it, a file newer
            than this graphlab, or a file that lacks what its version holds.
    """
    spec = results_type(cls)
    if isinstance(recording, Recording):  # a recording already open (a type that reads others from its own)
        rec = recording
    else:
        name = recording if recording is not None else spec.recording
        if name is None:
            raise BadInputError(f"say which recording holds the {spec.name}: gl.load({spec.name}, 'NAME') "
                                "(gl.list_recordings() lists them)")
        rec = open_recording(name, gpu, root)
    if spec.composite:
        lacking = [k for k in spec.entries if k not in rec.result_names and k not in spec.optional]
        if lacking:
            raise RecordingError(f"the {rec.name!r} recording lacks {', '.join(lacking)} of a {spec.name}; it has "
                                 f"{', '.join(rec.result_names) or 'no results'}; {record_hint(rec.name)}")
        parts = {k: rec.results(k) for k in spec.entries if k in rec.result_names}
        for k, part in parts.items():
            check_entry(spec, part, f"{rec.name}/{k}")
        return cls.from_recording(parts, rec)  # type: ignore[attr-defined, no-any-return]
    key = entry if entry is not None else spec.entry
    if key not in rec.result_names:
        raise RecordingError(f"the {rec.name!r} recording holds no {key!r} ({spec.name}); it has "
                             f"{', '.join(rec.result_names) or 'no results'}; {record_hint(rec.name)}")
    data = rec.results(key)
    check_entry(spec, data, f"{rec.name}/{key}")
    if isinstance(data, Mapping):
        data = known_fields(spec, data)
    elif spec.fields is not None:
        raise RecordingError(f"{rec.name}/{key}: a {spec.name} is a record of fields, got a {type(data).__name__}")
    build = getattr(cls, "from_recording", None)
    if build is not None:
        if "entry" in inspect.signature(build).parameters:  # a type that keeps several entries of one kind
            return build(data, rec, entry=key)  # type: ignore[no-any-return]
        return build(data, rec)  # type: ignore[no-any-return]
    return cls.from_dict(data)  # type: ignore[attr-defined, no-any-return]


def dump(obj: Any) -> Any:
    """What a study writes for a results object: its `to_dict()`, stamped with its type's schema marker unless the
    dict carries one already (a type that writes an int version keeps it)."""
    spec = results_type(type(obj))
    data = obj.to_dict()
    if isinstance(data, dict) and "schema" not in data:
        data = {**data, "schema": spec.marker()}
    return data
