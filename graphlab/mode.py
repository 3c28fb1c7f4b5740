"""Live or recorded: the one switch every notebook sets at its top.

    >>> import graphlab as gl
    >>> gl.set_mode("auto")      # live on a GPU, else recorded; prints which, and why
    recorded: no CUDA GPU here, so results come from the H200 recordings (data/recordings/h200)

In **live** mode the library runs on this machine's GPU. In **recorded** mode the same calls return
stand-ins built from recordings that `graphlab record` made on a real GPU: `gl.capture` gives a
recorded captured graph, `gl.sweep` a recorded sweep, and so on, each saying where and when it was
measured. So the code a learner reads is the code they would run on a GPU, and the choice between
the two happens once, visibly.

**This module is the one place that decides.** A live function with a recorded answer says so with
`@stand_in(recorded_fn)`; a value that differs between the two (a backend, a device) comes from
`pick(live=..., recorded=...)`. No other module asks `is_recorded()` (`tests/test_layers.py` holds the rule).

Ground floor (like `env.py`): imports no torch; the GPU check is `graphlab.env.has_cuda`.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

from graphlab.errors import BadInputError, GPUUnavailableError

MODES = ("auto", "live", "recorded")
DEFAULT_RECORDED_GPU = "h200"


@dataclass(frozen=True)
class Mode:
    """The mode in force. `live` is True on a GPU; `gpu` names the recordings folder in recorded mode."""

    live: bool
    gpu: str | None
    reason: str

    @property
    def recorded(self) -> bool:
        return not self.live

    def __str__(self) -> str:
        return self.reason

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))

    def _repr_html_(self) -> str:
        colour = "#1a7f37" if self.live else "#9a6700"
        word = "live" if self.live else "recorded"
        rest = self.reason.split(":", 1)[1].strip() if ":" in self.reason else self.reason
        return f"<b style='color:{colour}'>{word}</b>: {rest}"


_current: Mode | None = None


def _decide(mode: str, gpu: str | None) -> Mode:
    from graphlab.env import has_cuda

    if mode not in MODES:
        raise BadInputError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    cuda = has_cuda()
    if mode == "live" and not cuda:
        from graphlab.env import why_no_cuda

        raise GPUUnavailableError(
            f"live mode needs a CUDA GPU, and this machine has {why_no_cuda() or 'none'}. gl.set_mode('auto') "
            "runs live where there is a GPU and from the recordings here (every notebook starts with it); "
            "gl.set_mode('recorded') asks for the recordings. On a GPU machine, install torch's CUDA build "
            "(GRAPHLAB_TORCH in the README).")
    if cuda and mode != "recorded":
        from graphlab.env import gpu_names

        return Mode(True, None, f"live: capturing and timing on this machine's {gpu_names()[0]}")
    slug = gpu or DEFAULT_RECORDED_GPU
    why = "asked for recorded mode" if mode == "recorded" else "no CUDA GPU here"
    return Mode(False, slug, f"recorded: {why}, so results come from the {slug.upper()} recordings "
                             f"(data/recordings/{slug})")


def set_mode(mode: str = "auto", gpu: str | None = None) -> Mode:
    """Choose live or recorded for this process and say which was chosen.

    Args:
        mode: "auto" (live when a CUDA GPU is visible, else recorded), "live" (GPUUnavailableError
            without a GPU) or "recorded" (recordings even on a GPU machine).
        gpu: which recordings to use in recorded mode (a folder of data/recordings, default "h200").
    """
    global _current
    _current = _decide(mode, gpu)
    return _current


def current_mode() -> Mode | None:
    """The mode `set_mode` chose, or None when no mode was chosen (then GPU features need a GPU)."""
    return _current


def is_recorded() -> bool:
    """True when `set_mode` chose recorded mode: library calls then answer from recordings.

    Without a `set_mode` call this is False, so a GPU feature used without a GPU raises
    `GPUUnavailableError` (with a hint to `gl.set_mode("recorded")`) instead of quietly answering
    from a recording.
    """
    return _current is not None and _current.recorded


def _register() -> None:
    """GPU errors (graphlab.env) suggest what recorded mode offers once it is on, not `set_mode("recorded")`."""
    from graphlab.env import register_recorded_probe

    register_recorded_probe(is_recorded)


_register()


def recorded_gpu() -> str:
    """The recordings folder recorded mode reads (e.g. "h200")."""
    return (_current.gpu if _current is not None else None) or DEFAULT_RECORDED_GPU


# -- the one place that decides ------------------------------------------------------------------------
#: every live function that has a recorded stand-in: "module.qualname" of the live one -> the stand-in
STAND_INS: dict[str, Callable[..., Any]] = {}

_Live = TypeVar("_Live", bound=Callable[..., Any])
_T = TypeVar("_T")


def stand_in(recorded: Callable[..., Any]) -> Callable[[_Live], _Live]:
    """Give a live function a recorded stand-in: in recorded mode `recorded` answers, with the same arguments.

        >>> @stand_in(recorded_sweep)              # doctest: +SKIP
        ... def sweep(model, make_inputs, batch_sizes, ...): ...

    The stand-in takes the live function's arguments (it may ignore those a recording cannot honour) and
    answers from the recordings of `recorded_gpu()`. Without a `set_mode` call the live function runs, so
    a GPU feature used without a GPU raises `GPUUnavailableError` with its hint. The live function stays
    reachable as `.live`, the stand-in as `.recorded`.
    """

    def decorate(live: _Live) -> _Live:
        @functools.wraps(live)
        def call(*args: Any, **kwargs: Any) -> Any:
            if is_recorded():
                return recorded(*args, **kwargs)
            return live(*args, **kwargs)

        call.live = live  # type: ignore[attr-defined]
        call.recorded = recorded  # type: ignore[attr-defined]
        STAND_INS[f"{live.__module__}.{live.__qualname__}"] = recorded
        return call  # type: ignore[return-value]

    return decorate


def pick(*, live: _T, recorded: _T) -> _T:
    """`recorded` in recorded mode, else `live`: the same decision as `stand_in`, for a value (a backend class,
    a device) rather than a call."""
    return recorded if is_recorded() else live


__all__ = ["MODES", "STAND_INS", "Mode", "current_mode", "is_recorded", "pick", "recorded_gpu", "set_mode",
           "stand_in"]
