"""Outputs kept across replays: warn, naming the line, when a caller still holds a graph's output that the next
replay overwrites (opt-in: `cg.warn_kept_outputs()`).

A captured graph's outputs are the same memory on every call: `y1 = cg(x1); y2 = cg(x2)` leaves `y1` holding
`x2`'s answer (PyTorch #170604, #148439). With the guard on, each call hands out a fresh view of the static outputs
(`detach()`: a new tensor object on the same memory) and keeps a weak reference to it with the caller's line. A
view still alive when the graph replays again was held across that replay.

Two modes:

- **delayed** (the default, for code that runs on): a view alive at a replay is a suspect; it is reported at the
  next call if it is *still* alive. A loop `for x in xs: y = cg(x)` holds the last `y` while the next call runs
  (it is reassigned only when the call returns), so it is a suspect once and never reported.
- **immediate** (the audit's): any view alive at the next replay is reported at once.

    >>> cg.warn_kept_outputs()                   # doctest: +SKIP
    >>> kept = [cg(x) for x in batches]          # doctest: +SKIP  (KeptOutputWarning at this line, 3rd call on)

What it costs (measured with `bench/bench_kept_outputs.py`, docs/audit.md): one `detach()`, one weak reference and
one frame look-up per call; nothing at all when it is off (the call path checks one attribute).
"""
from __future__ import annotations

import sys
import warnings
import weakref
from dataclasses import dataclass
from types import FrameType
from typing import Any

import torch

from graphlab.capture.tensors import flatten, map_tensors


class KeptOutputWarning(UserWarning):
    """A caller held a graph's output while a later replay overwrote it (the message names both lines)."""


@dataclass(frozen=True)
class KeptOutput:
    """One output held across a replay: where it was handed out, where the replay that overwrote it was called."""

    graph: str
    held_file: str
    held_line: int
    replay_file: str
    replay_line: int

    def message(self) -> str:
        return (f"graph {self.graph!r}: the output returned at {self.held_file}:{self.held_line} was still held when "
                f"the replay called at {self.replay_file}:{self.replay_line} overwrote it (a graph's outputs are the "
                "same memory on every call): clone what you keep, `y = cg(x).clone()`, or copy_outputs=True")


def _detach(t: torch.Tensor) -> torch.Tensor:
    return t.detach()


class KeptOutputGuard:
    """Hands out a fresh view of the outputs on each call and reports views held across a replay.

    Args:
        immediate: report a view alive at the next replay at once (the audit); default: delayed (see the module).
        warn: issue a `KeptOutputWarning` at the user's line (else only record in `.seen`).
    """

    def __init__(self, *, immediate: bool = False, warn: bool = True):
        self.immediate = immediate
        self.warn = warn
        self.seen: list[KeptOutput] = []
        # per graph (id of its owner): [views of its last call, code, instruction offset of the line that made that
        # call, the suspects' views, code, offset]. Views are weak references (a list of them for nested outputs);
        # never the frame itself: it holds the caller's locals, and with them the views. The line is worked out
        # from (code, offset) only when a warning is due: f_lineno on every call would cost more than the rest.
        self._state: dict[int, list[Any]] = {}

    def hand_out(self, owner: Any, outputs: Any, frame: FrameType | None) -> Any:
        """Fresh views of `outputs` for the caller at `frame` (checked against the views of the last call)."""
        state = self._state.get(id(owner))
        if state is None:
            state = self._state[id(owner)] = [None, None, 0, None, None, 0]
        if state[3] is not None:
            if _alive(state[3]):
                self._report(owner, state[4], state[5], frame)
            state[3] = None
        last = state[0]
        if last is not None and (last() is not None if type(last) is weakref.ref else _alive(last)):
            if self.immediate:
                self._report(owner, state[1], state[2], frame)
            else:
                state[3], state[4], state[5] = last, state[1], state[2]
        if type(outputs) is torch.Tensor:
            views: Any = outputs.detach()
            state[0] = weakref.ref(views)
        elif type(outputs) is tuple and all(type(t) is torch.Tensor for t in outputs):
            views = tuple(t.detach() for t in outputs)
            state[0] = [weakref.ref(t) for t in views]
        else:
            views = map_tensors(_detach, outputs)
            state[0] = [weakref.ref(t) for _, t in flatten(views) if isinstance(t, torch.Tensor)]
        if frame is not None:
            state[1], state[2] = frame.f_code, frame.f_lasti
        return views

    def _report(self, owner: Any, code: Any, offset: int, frame: FrameType | None) -> None:
        held_file, held_line = _line(code, offset)
        here_file, here_line = _line(frame.f_code, frame.f_lasti) if frame is not None else ("<unknown>", 0)
        kept = KeptOutput(str(getattr(owner, "name", type(owner).__name__)), held_file, held_line, here_file,
                          here_line)
        self.seen.append(kept)
        if self.warn:
            warnings.warn_explicit(kept.message(), KeptOutputWarning, here_file, here_line)

    def forget(self, owner: Any) -> None:
        """Drop what is kept about `owner` (its graph was reset)."""
        self._state.pop(id(owner), None)


def _alive(refs: Any) -> bool:
    """True when the view (a weak reference) or any of the views (a list of them) is still held."""
    if type(refs) is list:
        return any(r() is not None for r in refs)
    return refs() is not None


def _line(code: Any, offset: int) -> tuple[str, int]:
    """(file, line) of the instruction at `offset` of `code`."""
    if code is None:
        return "<unknown>", 0
    for start, end, line in code.co_lines():
        if start <= offset < end and line is not None:
            return code.co_filename, line
    return code.co_filename, code.co_firstlineno


def caller_frame(depth: int = 2) -> FrameType | None:
    """The frame `depth` levels up (the user's line that called the graph)."""
    try:
        return sys._getframe(depth)
    except ValueError:
        return None


__all__ = ["KeptOutput", "KeptOutputGuard", "KeptOutputWarning", "caller_frame"]
