"""Every error graphlab raises on purpose. Pure Python; imports nothing else from graphlab.

Each error carries one message that says what went wrong and, where there is one, how to fix it.
"""
from __future__ import annotations


class GraphlabError(Exception):
    """Base class: catch this to catch any error graphlab raises on purpose."""


class DotParseError(GraphlabError, ValueError):
    """The text is not a DOT dump that graphlab can read.

    Attributes:
        source: file name (or "<string>") the text came from.
        line: 1-based line where the problem was found, or None when it concerns the whole text.
    """

    def __init__(self, message: str, *, source: str = "<string>", line: int | None = None):
        self.source = source
        self.line = line
        self.reason = message
        where = source if line is None else f"{source}:{line}"
        super().__init__(f"{where}: {message}")


class RecordingError(GraphlabError, ValueError):
    """A recording on disk is missing, incomplete or malformed."""


class GPUUnavailableError(GraphlabError, RuntimeError):
    """A GPU feature was used on a machine (or torch build) without CUDA."""


class CaptureError(GraphlabError, RuntimeError):
    """Stream capture failed; the message names the cause, the line and the fix."""
