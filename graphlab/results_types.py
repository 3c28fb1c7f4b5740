"""How a results type lives in recordings: its entry key, its default recording, its schema and fields.

Each results type (Sweep, Timeline, LoadTest, Profile, ...) declares it once, with a class decorator:

    @recorded_result(entry="sweep", recording="mlp", schema=3,
                     fields={"model": 1, "rows": 1, "conditions": 1, "weight_update": 1})
    @dataclass(frozen=True)
    class Sweep: ...
        @classmethod
        def from_recording(cls, data, recording) -> Sweep: ...   # optional: default cls.from_dict(data)

- `entry`: its key in a recording's `meta["results"]` ("sweep", "timeline"); a type that is read from several
  entries of one recording (a cache's figures: hot path, pools, eviction, ...) names them in `entries` instead;
- `recording`: the recording it is read from when the caller names none (None: the caller must);
- `schema`: the newest version of its file this graphlab reads and writes. A file says its version as
  `"schema": "graphlab.sweep/3"` or `"schema": 3`; a file that says none is version 1;
- `fields`: every top-level field its file may hold -> the version that added it (None: the entry is not a record
  of fields, but a list or a mapping of names, and is handed over whole). A file of version v must hold every
  field added at or before v, but those in `optional`; a field added later is not asked of an older file (the type
  fills it in); a field not listed is left out. `renamed` reads an older name of a field (old -> new).

`graphlab.loader.load(Type, recording)` (`gl.load`) reads any of them the same way; `RESULT_TYPES` lists every
registered type. `keep_known(cls, row)` is the one "keep the fields this dataclass knows" for nested rows.

Pure and on the ground floor (standard library only), so a type of any floor can declare itself.
"""
from __future__ import annotations

import dataclasses
import fnmatch
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping, TypeVar

from graphlab.errors import BadInputError, RecordingError

__all__ = ["RESULT_TYPES", "ResultsType", "check_entry", "keep_known", "known_fields", "recorded_result",
           "results_type", "schema_version", "type_for"]

_T = TypeVar("_T")

#: "graphlab.sweep/3" -> ("sweep", 3)
_SCHEMA = re.compile(r"^graphlab\.([A-Za-z0-9_]+)/(\d+)$")


@dataclass(frozen=True)
class ResultsType:
    """How one results type lives in recordings (see the module docstring)."""

    cls: type
    #: its entry in a recording's results ("sweep"); for a type read from several entries, the first of `entries`
    entry: str
    #: all the entries it is read from: (entry,) for most types, several for a view over one recording
    entries: tuple[str, ...]
    recording: str | None
    schema: int
    #: every top-level field -> the version that added it; None: the entry is handed over whole
    fields: Mapping[str, int] | None
    #: fields a file may lack at any version (for a type read from several entries: entries a recording may lack)
    optional: frozenset[str]
    #: older names of fields, kept when the field itself is absent: old name -> new name
    renamed: Mapping[str, str]
    #: other places it lives, as "recording/entry" patterns ("dense/*": every entry of the dense recording)
    found_in: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.cls.__name__

    @property
    def composite(self) -> bool:
        """True for a type read from several entries of one recording (handed {entry: data})."""
        return len(self.entries) > 1

    def marker(self, version: int | None = None) -> str:
        """The schema marker a file of this type carries: "graphlab.sweep/3"."""
        return f"graphlab.{self.entry}/{version or self.schema}"


#: every results type graphlab knows, by class name (filled as their modules are imported)
RESULT_TYPES: dict[str, ResultsType] = {}


def recorded_result(*, entry: str | None = None, entries: tuple[str, ...] = (), recording: str | None = None,
                    schema: int = 1, fields: Mapping[str, int] | None = None, optional: tuple[str, ...] = (),
                    renamed: Mapping[str, str] | None = None,
                    found_in: tuple[str, ...] = ()) -> Callable[[type[_T]], type[_T]]:
    """Class decorator: declare how a results type lives in recordings, and register it (`RESULT_TYPES`).

    Give `entry` (the one results file it is read from) or `entries` (several files of one recording, handed to
    its `from_recording` as {entry: data}); `found_in` names the other entries it is read from, as
    "recording/entry" patterns ("dense/*", "serving/*_asgi"); the other arguments as the module docstring says."""
    names = tuple(entries) or ((entry,) if entry else ())
    if not names or (entry and entries):
        raise BadInputError("declare a results type with entry='name' or entries=('a', 'b', ...), one of them")
    for name in names:
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_]+", name):
            raise BadInputError(f"a results entry is a plain name, got {name!r}")
    if isinstance(schema, bool) or not isinstance(schema, int) or schema < 1:
        raise BadInputError(f"a schema version is an int >= 1, got {schema!r}")
    if len(names) > 1 and fields is not None:
        raise BadInputError("a type read from several entries declares no fields: each entry is handed over whole")

    def register(cls: type[_T]) -> type[_T]:
        # optional: fields a file may lack; for a type read from several entries, entries a recording may lack
        among = names if len(names) > 1 else (fields or {})
        unknown = [f for f in optional if f not in among]
        if unknown:
            raise BadInputError(f"{cls.__name__}: optional {unknown} are not among its "
                                f"{'entries' if len(names) > 1 else 'fields'}")
        bad = [p for p in found_in if not re.fullmatch(r"[A-Za-z0-9_.*?-]+/[A-Za-z0-9_*?]+", p)]
        if bad:
            raise BadInputError(f"{cls.__name__}: found_in patterns are 'recording/entry', got {bad}")
        spec = ResultsType(cls, names[0], names, recording, schema, None if fields is None else dict(fields),
                           frozenset(optional), dict(renamed or {}), tuple(found_in))
        earlier = RESULT_TYPES.get(cls.__name__)
        if earlier is not None and (earlier.cls.__module__, earlier.cls.__qualname__) != \
                (cls.__module__, cls.__qualname__):
            raise BadInputError(f"two results types are called {cls.__name__}: "
                                f"{earlier.cls.__module__} and {cls.__module__}")
        RESULT_TYPES[cls.__name__] = spec
        cls.RESULTS = spec  # type: ignore[attr-defined]
        return cls

    return register


def type_for(recording: str, entry: str) -> ResultsType | None:
    """The registered type that reads `entry` of the recording called `recording`, or None: the one whose default
    recording it is (its entry or one of its entries), else the one whose `found_in` pattern matches most
    specifically."""
    for spec in RESULT_TYPES.values():
        if spec.recording == recording and entry in spec.entries:
            return spec
    # the most specific pattern wins, whatever order the types registered in: "profile/events_*" before
    # "profile/*_b*" for "events_gpt_b1" (fewer wildcards, then the longer pattern)
    matches = [(pattern.count("*") + pattern.count("?"), -len(pattern), i, spec)
               for i, spec in enumerate(RESULT_TYPES.values()) for pattern in spec.found_in
               if fnmatch.fnmatchcase(f"{recording}/{entry}", pattern)]
    return min(matches, key=lambda m: m[:3])[3] if matches else None


def results_type(cls: type) -> ResultsType:
    """The declaration of a results type (`recorded_result`), or a clear error for any other class."""
    spec = getattr(cls, "RESULTS", None)
    if not isinstance(spec, ResultsType) or spec.cls is not cls:
        known = ", ".join(sorted(RESULT_TYPES)) or "none imported yet"
        raise BadInputError(f"{getattr(cls, '__name__', cls)!r} is not a results type that recordings hold; "
                            f"those are: {known}")
    return spec


def schema_version(data: Any, spec: ResultsType | None = None) -> int:
    """The version a results file says it is: "graphlab.sweep/3" -> 3, 3 -> 3, none -> 1.

    Raises:
        RecordingError: the marker is not one of those, or names another type's schema.
    """
    marker = data.get("schema") if isinstance(data, Mapping) else None
    if marker is None:
        return 1
    if isinstance(marker, bool) or not isinstance(marker, (int, str)):
        raise RecordingError(f"a results file's schema must be 'graphlab.<entry>/<n>' or an int, got {marker!r}")
    if isinstance(marker, int):
        return marker
    match = _SCHEMA.match(marker)
    if not match:
        raise RecordingError(f"a results file's schema must be 'graphlab.<entry>/<n>' or an int, got {marker!r}")
    if spec is not None and match.group(1) != spec.entry:
        raise RecordingError(f"this file is a {match.group(1)!r} result ({marker}), not a {spec.name} "
                             f"({spec.marker()})")
    return int(match.group(2))


def known_fields(spec: ResultsType, data: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of `data` its type knows (unknown ones left out: a newer graphlab may add fields), an older name
    read as the new one when the new one is absent; the schema marker kept."""
    if spec.fields is None:
        return dict(data)
    kept = {k: v for k, v in data.items() if k in spec.fields or k == "schema"}
    for old, new in spec.renamed.items():
        if new not in kept and old in data:
            kept[new] = data[old]
    return kept


def check_entry(spec: ResultsType, data: Any, where: str) -> int:
    """The version of one results file of type `spec`, checked: not newer than this graphlab, and holding every field
    its version holds. `where` names the file in the errors ("gpt/sweep")."""
    version = schema_version(data, None if spec.composite else spec)
    if version > spec.schema:
        raise RecordingError(f"{where} is {spec.marker(version)}, newer than this graphlab reads "
                             f"({spec.marker()}): update graphlab to read it")
    if isinstance(data, Mapping) and spec.fields is not None:
        have = set(data) | {new for old, new in spec.renamed.items() if old in data}
        missing = [f for f, since in spec.fields.items() if since <= version and f not in spec.optional
                   and f not in have]
        if missing:
            raise RecordingError(f"{where} ({spec.marker(version)}) lacks {', '.join(missing)}, which that version "
                                 "holds: the file is incomplete")
    return version


def keep_known(cls: type, row: Mapping[str, Any], renamed: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The fields of `row` that dataclass `cls` has (others left out: a newer graphlab may add some), an older name
    read as the new one when the new one is absent (`renamed`: old -> new). For rows nested in a results file."""
    names = {f.name for f in dataclasses.fields(cls)}
    kept = {k: v for k, v in row.items() if k in names}
    for old, new in (renamed or {}).items():
        if new not in kept and old in row:
            kept[new] = row[old]
    return kept
