"""Every error graphlab raises on purpose, in one place. Pure Python; imports nothing else from graphlab.

Errors come in five kinds, so a caller can catch what it means:

| kind | raised when | also a |
|---|---|---|
| `BadInputError` | a value, shape, name or call graphlab cannot take as given (a wrong shape, an unknown option, a graph used after `reset()`) | `ValueError` |
| `ConfigurationError` | settings that cannot work together, or that this model does not allow (buckets vs `max_size`, padding that changes the answer, a world size the model does not split over) | `ValueError` |
| `CaptureError` | stream capture failed: the message names the cause, your line and the fix | `RuntimeError` |
| `UnsupportedError` | this machine, driver or torch cannot do it here (no GPU, no `keep_graph`, no conditional nodes, no Graphviz) | `RuntimeError` |
| `RecordingError` | a recording is missing, incomplete or malformed, or holds no answer for what recorded mode was asked | `ValueError` |

The service's errors also carry the HTTP status they answer with: each is one of the five kinds and a
`ServeError` (what they share: `status`, `reason`; `except ServeError` catches every one). Every message says
what was expected, what was got and the fix. Catch `GraphlabError` to catch any of them. graphlab raises no bare
`ValueError` or `RuntimeError` on purpose: `tests/test_errors.py` holds the rule.
"""
from __future__ import annotations

from typing import Any


class GraphlabError(Exception):
    """Base class: catch this to catch any error graphlab raises on purpose."""


# -- the five kinds ------------------------------------------------------------------------------------
class BadInputError(GraphlabError, ValueError):
    """A value, shape, name or call that graphlab cannot take as given; the message names the fix."""


class ConfigurationError(GraphlabError, ValueError):
    """Settings that cannot work together, or that the model or machine does not allow."""


class CaptureError(GraphlabError, RuntimeError):
    """Stream capture failed; the message names the cause, the line and the fix.

    Attributes:
        diagnosis: the `graphlab.capture.diagnose.Diagnosis` (cause, user line, detail, fix), or None.
        cause: the cause's key, e.g. "host_sync" ("unknown" when nothing matched).
        original: PyTorch's own exception, or None.
        original_traceback: that exception's formatted traceback ("" when there is none).
    """

    def __init__(self, message: str, *, diagnosis: Any = None, cause: str = "unknown",
                 original: BaseException | None = None, original_traceback: str = ""):
        super().__init__(message)
        self.diagnosis = diagnosis
        self.cause = cause
        self.original = original
        self.original_traceback = original_traceback


class UnsupportedError(GraphlabError, RuntimeError):
    """This machine, driver or torch build cannot do what was asked; the message names what is missing."""


class RecordingError(GraphlabError, ValueError):
    """A recording on disk is missing, incomplete or malformed, or holds no answer for what was asked."""


# -- reading graphs and results ------------------------------------------------------------------------
class DotParseError(BadInputError):
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


class DotLimitError(DotParseError):
    """A DOT dump is larger than a limit allows (file size, node count, label length); the message names the
    limit and how to raise it (`graphlab.graph.dot_limits`).

    Attributes:
        limit: which limit: "max_bytes", "max_nodes" or "max_label_chars".
    """

    def __init__(self, message: str, *, source: str = "<string>", line: int | None = None, limit: str = ""):
        super().__init__(message, source=source, line=line)
        self.limit = limit


class DotFileError(BadInputError, OSError):
    """A DOT file that cannot be opened (missing, a folder, no permission). Also the `FileNotFoundError`,
    `IsADirectoryError` or `PermissionError` Python would raise (its `errno` set), so code that caught those keeps
    working; the message names the path and where a dump comes from."""

    def __str__(self) -> str:  # OSError would print "[Errno 2] ..." once errno is set: the message says more
        return str(self.args[0]) if self.args else super().__str__()


class GraphCycleError(BadInputError):
    """The edges of a graph form a cycle, so it has no topological order (a CUDA graph never does)."""


class ResultsError(RecordingError):
    """A results file or object is not a sweep/timeline graphlab can read."""


class StatsError(BadInputError):
    """Statistics asked of data that cannot give them (no samples, NaN, a quantile outside 0..100)."""


# -- drawing and widgets -------------------------------------------------------------------------------
class GraphvizMissingError(UnsupportedError):
    """Graphviz's `dot` program is not installed, so a drawing cannot become SVG or PNG."""

    HINT = ("Graphviz's `dot` program is not installed: run `sudo apt-get install graphviz` "
            "(or `conda install graphviz`); Drawing.source works without it")

    def __init__(self, message: str | None = None):
        super().__init__(message or self.HINT)


class InspectorError(BadInputError):
    """The inspector was given something it cannot show, or an option it does not know."""


# -- the GPU -------------------------------------------------------------------------------------------
class GPUUnavailableError(UnsupportedError):
    """A GPU feature was used on a machine (or torch build) without CUDA."""


class WatchUnsupportedError(UnsupportedError):
    """The installed torch cannot keep a captured CUDA graph for dumping, so `gl.watch` cannot show it."""


class ConditionalUnsupportedError(UnsupportedError):
    """This machine cannot build a CUDA conditional node the way asked: the message names what is missing
    (a CUDA 12.3/12.8 driver, cuda-bindings, NVRTC, or a torch feature)."""


class TimelineError(UnsupportedError):
    """The profiler trace lacks what a timeline needs (no marked call, no kernels)."""


class TimingError(BadInputError):
    """A measurement was asked for something it cannot measure (zero inputs, no batch sizes, ...)."""


class DistributedError(ConfigurationError, RuntimeError):
    """A multi-GPU set-up problem: not launched by torchrun, a model that does not split over the world
    size, ranks that disagree, devices that do not exist."""


class PaddingError(ConfigurationError):
    """Padding a dimension changed a model's answer (padded replay differs from eager on the real rows).

    Attributes:
        dim_name: the padded dimension's name ("batch", "seq"); max_abs_err: the difference seen.
    """

    def __init__(self, message: str, *, dim_name: str = "", max_abs_err: float = 0.0):
        super().__init__(message)
        self.dim_name = dim_name
        self.max_abs_err = max_abs_err


class CacheMissError(BadInputError):
    """A strict graph cache was called with a shape it holds no graph for and may not capture."""


# -- serving (graphlab.serve) --------------------------------------------------------------------------
class ServeError(GraphlabError):
    """What every error of the service has: the HTTP status it answers with. Not a sixth kind: each error below is
    also one of the five (a request refused for what it is: `BadInputError`; a service that cannot answer it now:
    `UnsupportedError`), and none is raised as a bare `ServeError`. `except ServeError` catches them all.

    Attributes:
        status: HTTP status code (500 unless a subclass says otherwise).
        reason: a short machine-readable word for the JSON body ("inference_failed", ...).
        stage: for a 500, where it failed ("the model", "pre-processing", ...), set where known: a client is told
            this and the request, never the message (which may hold the model's text, paths).
        request_id: the service's id of the request it answers, set where known (None: not accepted yet).
    """

    status = 500
    reason = "inference_failed"
    stage = ""
    request_id: int | None = None


class InferenceFailedError(ServeError, UnsupportedError):
    """The model, a stage or the GPU worker failed on this request, or its answer cannot be sent (HTTP 500)."""

    status = 500
    reason = "inference_failed"


class BadRequestError(ServeError, BadInputError):
    """A request body the service cannot read: not JSON, a missing field, a wrong type (HTTP 422)."""

    status = 422
    reason = "malformed_request"


class RequestTooLargeError(ServeError, BadInputError):
    """A request bigger than the service takes: too many rows, a prompt or image too long (HTTP 413)."""

    status = 413
    reason = "request_too_large"


class OverloadedError(ServeError, UnsupportedError):
    """The service is full (bounded queue), warming up or shutting down: retry later (HTTP 503)."""

    status = 503
    reason = "overloaded"


class UnsupportedMediaTypeError(ServeError, BadInputError):
    """A request body whose Content-Type is not JSON (HTTP 415): a web page's form or text/plain post."""

    status = 415
    reason = "unsupported_media_type"


class BodyTimeoutError(ServeError, BadInputError):
    """A request body that did not arrive within the service's deadline (HTTP 408; the connection is closed)."""

    status = 408
    reason = "request_timeout"


class RequestTimeoutError(ServeError, UnsupportedError):
    """No answer came within the caller's time limit; the request still runs, its answer is dropped (HTTP 504)."""

    status = 504
    reason = "request_timeout"


#: the five kinds, in the order the module docstring's table gives them
KINDS = (BadInputError, ConfigurationError, CaptureError, UnsupportedError, RecordingError)

__all__ = [
    "BadInputError", "BadRequestError", "BodyTimeoutError", "CacheMissError", "CaptureError",
    "ConditionalUnsupportedError",
    "ConfigurationError", "DistributedError", "DotFileError", "DotLimitError", "DotParseError", "GPUUnavailableError", "GraphCycleError",
    "GraphlabError", "GraphvizMissingError", "InferenceFailedError", "InspectorError", "OverloadedError",
    "PaddingError",
    "RecordingError", "RequestTimeoutError", "RequestTooLargeError", "ResultsError", "ServeError", "StatsError",
    "TimelineError", "TimingError", "UnsupportedError", "UnsupportedMediaTypeError", "WatchUnsupportedError",
]
