"""`ModuleSpan`: the nodes one module's forward created while a graph was captured (`start <= index < end`).

Recorded at capture by `graphlab.capture.module_recorder.record_modules`; read by `gl.profile`
(`graphlab.profile.modules.assign_modules`: a node belongs to the innermost module whose span holds it).

Pure: standard library only.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graphlab.errors import BadInputError


@dataclass(frozen=True)
class ModuleSpan:
    """The nodes one module's forward created: `start <= index < end`. `path` is its dotted name ("" the root)."""

    path: str
    start: int
    end: int

    def to_list(self) -> list[Any]:
        return [self.path, self.start, self.end]

    @classmethod
    def from_list(cls, data: Any) -> ModuleSpan:
        try:
            path, start, end = data
            span = cls(str(path), int(start), int(end))
        except (TypeError, ValueError) as exc:
            raise BadInputError(f"a module span is [path, start, end], not {data!r} ({exc})") from None
        if span.end < span.start:
            raise BadInputError(f"module span {span.path!r} ends ({span.end}) before it starts ({span.start})")
        return span


__all__ = ["ModuleSpan"]
