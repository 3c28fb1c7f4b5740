"""Why did a capture fail? Classify the error into a plain cause, find the user's line, say the fix.

The classifier reads only the exception's message and traceback, so it runs (and is tested) on a
machine without a GPU. The messages it matches are the ones torch 2.11 prints on an H200
(`RECORDED_MESSAGES`), e.g. `CUDA error: operation not permitted when stream is capturing`.

Pure Python: imports neither torch nor cuda-bindings.

Example:
    >>> try:
    ...     gl.capture(lambda x: x.sum().item(), x)
    ... except gl.CaptureError as err:
    ...     err.diagnosis.cause.key, err.diagnosis.line
    ('host_sync', UserLine(...))
"""
from __future__ import annotations

import html
import linecache
import os
import re
import traceback
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from graphlab.errors import CaptureError


@dataclass(frozen=True)
class Cause:
    """One kind of capture failure, in plain words.

    Attributes:
        key: a short id ("host_sync", "default_stream", ...).
        title: what happened, as a noun phrase.
        explanation: why it breaks capture (two sentences at most).
        fix: what to change.
        patterns: regular expressions that recognise the error message (case-insensitive).
    """

    key: str
    title: str
    explanation: str
    fix: str
    patterns: tuple[str, ...] = ()

    def matches(self, message: str) -> bool:
        return any(re.search(p, message, re.IGNORECASE) for p in self.patterns)


_CAPTURE_UNSUPPORTED = (r"operation not permitted when stream is capturing", r"cudaErrorStreamCaptureUnsupported")

CAUSES: dict[str, Cause] = {c.key: c for c in (
    Cause(
        "default_stream", "capture on the default stream",
        "CUDA cannot record work issued to the legacy default stream, because every other stream "
        "implicitly waits on it.",
        "Capture on a side stream: use gl.capture / %%cudagraph (they pick one), or "
        "`with torch.cuda.graph(g):` (its own stream), not g.capture_begin() on the default stream.",
        (r"must be captured on a non-default stream",),
    ),
    Cause(
        "pageable_copy", "a copy from pageable CPU memory inside capture",
        "A graph replays copies from fixed addresses; pageable CPU memory can move, so torch refuses "
        "to record a CPU-to-GPU copy from it (torch.tensor([...], device='cuda') and .cuda() on a CPU "
        "tensor both do one).",
        "Create the tensor on the GPU before capture (or with torch.full/arange on device='cuda'), or "
        "copy from a pinned CPU tensor (.pin_memory()) that you refill before each replay.",
        (r"Cannot copy between CPU and CUDA tensors during CUDA graph capture",),
    ),
    Cause(
        "library_handle", "a library handle created inside capture",
        "The first matmul in a process makes cuBLAS create its handle and workspace, which allocates "
        "and synchronises; that is not allowed while the stream is recording.",
        "Warm up before capture (gl.capture(..., warmup_calls=3) does this; run the code once eagerly "
        "on the capture stream) so cuBLAS/cuDNN handles exist before capture starts.",
        (r"CUBLAS_STATUS_NOT_INITIALIZED", r"cublas(Lt)?Create", r"CUDNN_STATUS_NOT_INITIALIZED",
         r"cudnnCreate", r"cusolverDnCreate", r"CUBLAS_STATUS_ALLOC_FAILED"),
    ),
    Cause(
        "unjoined_stream", "a side stream that was not joined back",
        "Work forked onto another stream during capture must join the capture stream again before "
        "capture ends, or the graph would have a loose end.",
        "After the side-stream work, call torch.cuda.current_stream().wait_stream(side) inside the "
        "captured code.",
        (r"capture sequence contains a fork that was not joined", r"capturing stream has unjoined work",
         r"cudaErrorStreamCaptureUnjoined"),
    ),
    Cause(
        "legacy_stream", "work on the legacy default stream during capture",
        "A launch on the legacy default stream would make it wait on the capturing stream, which "
        "CUDA forbids.",
        "Keep all captured work on the capture stream (or streams forked from it); do not switch to "
        "torch.cuda.default_stream() inside the captured code.",
        (r"legacy stream depend on a capturing blocking stream", r"cudaErrorStreamCaptureImplicit"),
    ),
    Cause(
        "host_sync", "a host sync inside capture",
        "During capture the GPU only records work, it runs nothing; code that makes the CPU wait "
        "for a GPU result (.item(), .cpu(), printing a tensor, torch.cuda.synchronize(), nonzero) "
        "can never get an answer, so CUDA stops the capture.",
        "Move the sync out of the captured code (before it, or after replay), or keep the value on "
        "the GPU: torch.where instead of `if t.item()`, fixed-size masks instead of nonzero.",
        _CAPTURE_UNSUPPORTED,
    ),
    Cause(
        "forbidden_op", "an operation the capture mode forbids",
        "In the default 'global' capture mode, CUDA calls that could synchronise (querying a stream "
        "or event, pinned-memory or cudaMalloc allocations) are refused while any capture runs.",
        "Do it before capture or after replay; if the call comes from another thread that you cannot "
        "change, capture with capture_error_mode='thread_local' (or 'relaxed').",
        _CAPTURE_UNSUPPORTED,
    ),
    Cause(
        "invalidated", "a capture broken by an earlier error",
        "Something earlier inside the capture failed (often an error that was caught and ignored), "
        "which invalidated the whole capture; ending it then reports only this follow-up error.",
        "Look for the first error inside the captured code (a try/except may hide it), fix that, "
        "and capture again.",
        (r"operation failed due to a previous error during capture", r"cudaErrorStreamCaptureInvalidated"),
    ),
    Cause(
        "empty", "an empty capture",
        "The capture recorded no GPU work: the code ran only on the CPU, or its GPU work went to "
        "another stream or device.",
        "Make sure the tensors are on the GPU (device='cuda') and that the work runs on the current "
        "stream of the current device.",
        (r"The CUDA Graph is empty", r"recorded no GPU work"),
    ),
    Cause(
        "graph_context", "CUDAGraph used as a context manager",
        "torch.cuda.CUDAGraph has no `with` form; the context manager is torch.cuda.graph.",
        "Write `g = torch.cuda.CUDAGraph(); with torch.cuda.graph(g): ...`, or use gl.capture.",
        (r"'CUDAGraph' object does not support the context manager protocol",),
    ),
    Cause(
        "keep_graph", "the raw graph was not kept",
        "torch frees the cudaGraph_t at the end of capture unless the graph was created with "
        "keep_graph=True, so it cannot be inspected or dumped afterwards.",
        "Create it as torch.cuda.CUDAGraph(keep_graph=True) (gl.capture does this).",
        (r"unless CUDAGraph was initialized with keep_graph=true",),
    ),
    # multi-GPU: collectives inside a graph (graphlab.distributed.capture checks these rules up front)
    Cause(
        "nccl_lazy_init", "an NCCL communicator created inside capture",
        "torch.distributed creates the NCCL communicator lazily, at the first collective; creating it "
        "allocates and synchronises, which CUDA refuses while the stream is recording.",
        "Create it eagerly: init_process_group('nccl', device_id=torch.device('cuda', local_rank)) "
        "(graphlab.distributed.comm.init_distributed does), then warm the collective up on the capture stream.",
        (r"NCCLUtils", r"ncclCommInit", r"NCCL communicator (was )?(created|not created) (lazily|eagerly)",
         r"unhandled cuda error.*stream is capturing"),
    ),
    Cause(
        "collective_not_warmed", "a collective not warmed up on the capture stream",
        "Every rank must have run the collective eagerly on the capture stream before capture, so NCCL's "
        "per-stream set-up and torch's bookkeeping happen outside the recording.",
        "Warm up before capture: gl.capture(..., warmup_calls=3) runs the code on the capture stream first "
        "(capture_collective insists on warmup_calls >= 1).",
        (r"collective\S* (was )?not warmed up",),
    ),
    Cause(
        "rank_mismatch", "ranks that disagree on what to capture",
        "Capturing a collective is itself collective: every rank must capture the same sequence at the "
        "same shapes, or a replay waits for partners that never arrive (a hang).",
        "Put every rank on one global bucket: all-reduce MAX of the local batch size and pad to its "
        "bucket (graphlab.distributed.comm.agree_bucket), then capture and replay that bucket on every rank.",
        (r"ranks disagree",),
    ),
    Cause(
        "rank_capture_failed", "a capture that failed on another rank",
        "A graph holding a collective is only usable if every rank captured its twin; when one rank "
        "fails, the others' graphs would hang at replay, so all of them were released.",
        "Fix the error reported for the failing rank (its cause is in the message) and capture again on every rank.",
        (r"capture failed on rank",),
    ),
    Cause(
        "unknown", "an unrecognised capture error",
        "The error is not one graphlab knows; the original message is kept below.",
        "Read the original message; run the code eagerly first to rule out an ordinary bug.",
    ),
)}

# What torch 2.11 printed on the H200 for each cause (first line; see the reference notes, section 6).
RECORDED_MESSAGES: dict[str, str] = {
    "host_sync": "CUDA error: operation not permitted when stream is capturing",
    "forbidden_op": "CUDA error: operation not permitted when stream is capturing",
    "default_stream": "CUDA graphs must be captured on a non-default stream. (However, after capture, "
    "it's ok to replay them on the default stream.)",
    "pageable_copy": "Cannot copy between CPU and CUDA tensors during CUDA graph capture unless the CPU "
    "tensor is pinned. Please use tensor.pin_memory() or allocate the tensor with pin_memory=True.",
    "library_handle": "CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`",
    "invalidated": "CUDA error: operation failed due to a previous error during capture",
    "empty": "The CUDA Graph is empty. This usually means that the graph was attempted to be captured "
    "on wrong device or stream.",
    "nccl_lazy_init": "NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:93, unhandled cuda error "
    "(run with NCCL_DEBUG=INFO for details), NCCL version 2.28.9",  # torchrun, init without device_id
}

_CPU_COPY_PHRASE = "copying to the CPU waits for the GPU"
_DISTRIBUTED_CAUSES = ("nccl_lazy_init", "collective_not_warmed", "rank_mismatch", "rank_capture_failed")

# What the user's line does, when it is recognisable: (pattern on the source line, cause, phrase)
_LINE_HINTS: tuple[tuple[str, str, str], ...] = (
    (r"\.query\(", "forbidden_op", "`.query()` asks whether the GPU has finished"),
    (r"pin_memory", "forbidden_op", "allocating pinned memory may wait on the GPU"),
    (r"empty_cache\(|cudaMalloc|mem_get_info", "forbidden_op", "this allocator call may synchronise"),
    (r"\.item\(\)", "host_sync", "`.item()` copies a value to the CPU"),
    (r"\.cpu\(\)|\.to\(\s*['\"]cpu|\.numpy\(\)|\.tolist\(\)", "host_sync", "copying to the CPU waits for the GPU"),
    (r"\bprint\(", "host_sync", "printing a tensor reads its values on the CPU"),
    (r"synchronize\(", "host_sync", "`synchronize()` makes the CPU wait for the GPU"),
    (r"nonzero|masked_select|unique\(|\.any\(\)|\.all\(\)",
     "host_sync", "`nonzero` must tell the CPU how many results there are"),
    (r"\b(float|int|bool)\(|^\s*(if|while)\b", "host_sync", "using a tensor as a Python value reads it on the CPU"),
)


@dataclass(frozen=True)
class UserLine:
    """The line of user code (a function, a notebook cell) where the failure happened."""

    filename: str
    lineno: int
    text: str
    function: str = ""

    @property
    def is_cell(self) -> bool:
        name = os.path.basename(self.filename)
        return self.filename.startswith("<") or name.isdigit() or bool(re.match(r"\d+\.py$", name))

    def where(self) -> str:
        if self.is_cell:
            return f"cell line {self.lineno}"
        return f"{os.path.basename(self.filename)}:{self.lineno}" + (f" in {self.function}()" if self.function else "")

    def __str__(self) -> str:
        return f"{self.where()}: {self.text}" if self.text else self.where()


@dataclass(frozen=True)
class Diagnosis:
    """A classified capture failure.

    Attributes:
        cause, message, line, detail: what failed (`Cause`), the first line of the error, the user's line, and
            what that line does.
        code, setup: the cell that was captured and the code run eagerly before it, when known (the pitfalls
            examples); shown with the diagnosis.
        where: where and when the failure happened, when not here and now: "recorded on NVIDIA H200 on
            2026-12-01 with torch 2.11.0+cu130" for a recorded one (recorded mode says so above the panel).
    """

    cause: Cause
    message: str
    line: UserLine | None = None
    detail: str | None = None
    code: str = ""
    setup: str = ""
    where: str = ""

    def summary(self) -> str:
        """One line: what, where, why, fix."""
        where = f" at {self.line.where()} (`{self.line.text}`)" if self.line and self.line.text else (
            f" at {self.line.where()}" if self.line else "")
        detail = f": {self.detail}" if self.detail else ""
        if self.cause.key == "unknown":
            detail = f": {self.message}"
        return f"Capture failed, {self.cause.title}{where}{detail}. {self.cause.explanation} Fix: {self.cause.fix}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "cause": self.cause.key, "title": self.cause.title, "explanation": self.cause.explanation,
            "fix": self.cause.fix, "message": self.message, "detail": self.detail,
        }
        if self.line is not None:
            out["line"] = {"where": self.line.where(), "lineno": self.line.lineno, "text": self.line.text,
                           "function": self.line.function}
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Diagnosis:
        """Rebuild a recorded diagnosis (explanations come from this version's catalogue)."""
        line = data.get("line")
        user_line = None
        if line:
            filename = "<cell>" if str(line.get("where", "")).startswith("cell") else line.get("where", "?")
            user_line = UserLine(filename, int(line["lineno"]), line.get("text", ""), line.get("function", ""))
        return cls(CAUSES.get(data["cause"], CAUSES["unknown"]), data.get("message", ""), user_line, data.get("detail"))

    @property
    def heading(self) -> str:
        """The line above the panel: where the failure happened when it was not here ("" when it was)."""
        if not self.where:
            return ""
        return (f"{self.where[:1].upper()}{self.where[1:]}: what graphlab said when this cell was captured there. "
                "Nothing was captured here.")

    def __str__(self) -> str:
        rows = [self.heading] if self.heading else []
        if self.code:
            lines = [ln for ln in self.code.splitlines() if ln.strip()]
            rows += [f"{'cell:' if i == 0 else '':<9}`{ln}`" for i, ln in enumerate(lines)]
        if self.setup:
            rows += [f"{'run first:' if i == 0 else '':<11}`{ln}`" for i, ln in enumerate(self.setup.splitlines())]
        rows.append(f"cause:   {self.cause.title} [{self.cause.key}]")
        if self.line is not None:
            rows.append(f"where:   {self.line}")
        if self.detail:
            rows.append(f"what:    {self.detail}")
        rows += [f"why:     {self.cause.explanation}", f"fix:     {self.cause.fix}", f"message: {self.message}"]
        return "\n".join(rows)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))

    def _repr_html_(self) -> str:
        def esc(text: str) -> str:  # escape, then `code` spans
            return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))

        def block(code: str) -> str:
            return (f"<pre style='margin:0'><code>{html.escape(code.rstrip())}</code></pre>")

        rows = []
        if self.code:
            rows.append(("the cell", block(self.code)))
        if self.setup:
            rows.append(("run first", block(self.setup) + "<span>(eagerly, before the capture)</span>"))
        rows.append(("cause", esc(self.cause.title)))
        if self.line is not None:
            rows.append(("where", f"{html.escape(self.line.where())}: <code>{html.escape(self.line.text)}</code>"))
        if self.detail:
            rows.append(("what", esc(self.detail)))
        rows += [("why", esc(self.cause.explanation)), ("fix", esc(self.cause.fix)),
                 ("message", f"<code>{html.escape(self.message)}</code>")]
        body = "".join(f"<tr><th style='text-align:left;vertical-align:top'>{k}</th><td style='text-align:left'>{v}"
                       "</td></tr>" for k, v in rows)
        heading = (f"<p style='margin:0 0 4px 0'><b>{esc(self.heading)}</b></p>" if self.heading else "")
        return f"<div>{heading}<table style='border-left:4px solid #c0392b'>{body}</table></div>"


def first_line(message: str) -> str:
    """The first non-empty line of an error message."""
    for line in str(message).splitlines():
        if line.strip():
            return line.strip()
    return str(message).strip()


def _is_library_file(filename: str) -> bool:
    if filename.startswith("<frozen") or filename.startswith("<string>"):
        return True
    norm = filename.replace("\\", "/")
    markers = ("/site-packages/", "/dist-packages/", "/torch/", "/IPython/", "/graphlab/gpu/", "/graphlab/ui/",
               "/lib/python3")
    return any(m in norm for m in markers)


def find_user_line(tb: TracebackType | None, prefer: str | None = None) -> UserLine | None:
    """The innermost traceback frame in user code (not torch, IPython, graphlab or the standard library).

    Args:
        prefer: a filename (e.g. the magic's cell name); its innermost frame wins if present.
    """
    frames = traceback.extract_tb(tb) if tb is not None else []
    chosen = None
    for frame in frames:
        if prefer is not None and frame.filename == prefer:
            chosen = frame
    if chosen is None:
        for frame in frames:
            if not _is_library_file(frame.filename):
                chosen = frame
    if chosen is None:
        return None
    text = (chosen.line or linecache.getline(chosen.filename, chosen.lineno or 0)).strip()
    return UserLine(chosen.filename, int(chosen.lineno or 0), text, "" if chosen.name == "<module>" else chosen.name)


def classify(message: str, line_text: str | None = None) -> tuple[Cause, str | None]:
    """The cause of a capture failure from its message (and the user's line, when known).

    Returns:
        (cause, detail): detail names what the line does, e.g. "`.item()` copies a value to the CPU".
    """
    for key in _DISTRIBUTED_CAUSES:  # first: an NCCL failure also says "operation not permitted when capturing"
        if CAUSES[key].matches(message):
            return CAUSES[key], None
    detail = None
    line_cause = None
    for pattern, key, phrase in _LINE_HINTS:
        if line_text and re.search(pattern, line_text):
            line_cause, detail = key, phrase
            break
    if CAUSES["pageable_copy"].matches(message) and detail == _CPU_COPY_PHRASE:
        return CAUSES["host_sync"], detail  # .cpu() in capture: torch refuses the GPU-to-CPU copy
    for key in ("default_stream", "pageable_copy", "library_handle", "unjoined_stream", "legacy_stream",
                "graph_context", "keep_graph"):
        if CAUSES[key].matches(message):
            return CAUSES[key], None
    if CAUSES["host_sync"].matches(message):
        return CAUSES[line_cause or "host_sync"], detail
    for key in ("invalidated", "empty"):
        if CAUSES[key].matches(message):
            return CAUSES[key], None
    return CAUSES["unknown"], None


def diagnose(exc: BaseException, prefer_filename: str | None = None) -> Diagnosis:
    """Classify `exc`, raised while capturing, into a `Diagnosis` (cause, user line, detail)."""
    if isinstance(exc, CaptureError) and getattr(exc, "diagnosis", None) is not None:
        return exc.diagnosis  # type: ignore[no-any-return]
    message = str(exc)
    line = find_user_line(exc.__traceback__, prefer_filename)
    cause, detail = classify(message, line.text if line else None)
    text = first_line(message) or type(exc).__name__
    if cause.key == "unknown":  # an ordinary bug in the captured code, most likely: keep its type in view
        text = f"{type(exc).__name__}: {text}"
    return Diagnosis(cause, text, line, detail)


def explain(exc: BaseException) -> Diagnosis:
    """Explain any capture-related error, including ones raised by raw torch code (same as `diagnose`)."""
    return diagnose(exc)


def capture_error(diagnosis: Diagnosis, original: BaseException | None = None) -> CaptureError:
    """A `CaptureError` whose one-line message is the diagnosis summary, with the diagnosis and the original."""
    tb = "" if original is None else "".join(
        traceback.format_exception(type(original), original, original.__traceback__))
    err = CaptureError(diagnosis.summary(), diagnosis=diagnosis, cause=diagnosis.cause.key, original=original,
                       original_traceback=tb)
    # IPython shows this instead of a traceback through torch and graphlab internals
    err._render_traceback_ = lambda: render_traceback(diagnosis)  # type: ignore[attr-defined]
    return err


def render_traceback(diagnosis: Diagnosis) -> list[str]:
    """The lines a notebook shows for a CaptureError: the cause, then where, why and how to fix it."""
    red, bold, reset = "\x1b[31m", "\x1b[1m", "\x1b[0m"
    lines = [f"{red}{bold}CaptureError{reset}: capture failed, {diagnosis.cause.title}"]
    lines += [f"  {row}" for row in str(diagnosis).splitlines() if not row.startswith("cause:")]
    lines.append("  (the process is fine: fix the cell and run it again; err.original holds PyTorch's exception)")
    return lines


def empty_capture_error() -> CaptureError:
    """The error for a capture that recorded nothing."""
    return capture_error(Diagnosis(CAUSES["empty"], RECORDED_MESSAGES["empty"]))


def catalogue() -> list[Cause]:
    """Every cause graphlab recognises, for tables and the pitfalls notebook."""
    return [c for k, c in CAUSES.items() if k != "unknown"]


__all__ = ["CAUSES", "Cause", "Diagnosis", "UserLine", "RECORDED_MESSAGES", "catalogue", "capture_error",
           "classify", "diagnose", "explain", "find_user_line", "first_line"]
