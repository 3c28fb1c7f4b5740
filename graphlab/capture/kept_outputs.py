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
        # per graph (id of its owner): the views handed out by its last call, and the suspects, with their lines
        # (never the frame itself: it holds the caller's locals, and with them the views)
        self._last: dict[int, tuple[list[weakref.ref[Any]], tuple[str, int]]] = {}
        self._suspects: dict[int, tuple[list[weakref.ref[Any]], tuple[str, int]]] = {}

    def hand_out(self, owner: Any, outputs: Any, frame: FrameType | None) -> Any:
        """Fresh views of `outputs` for the caller at `frame` (checked against the views of the last call)."""
        key = id(owner)
        here = (frame.f_code.co_filename, frame.f_lineno) if frame is not None else ("<unknown>", 0)
        if self._suspects:
            suspect = self._suspects.pop(key, None)
            if suspect is not None and any(r() is not None for r in suspect[0]):
                self._report(owner, suspect[1], here)
        last = self._last.get(key)
        if last is not None and any(r() is not None for r in last[0]):
            if self.immediate:
                self._report(owner, last[1], here)
            else:
                self._suspects[key] = last
        if isinstance(outputs, torch.Tensor):
            view = outputs.detach()
            self._last[key] = ([weakref.ref(view)], here)
            return view
        views = map_tensors(_detach, outputs)
        self._last[key] = ([weakref.ref(t) for _, t in flatten(views) if isinstance(t, torch.Tensor)], here)
        return views

    def _report(self, owner: Any, held: tuple[str, int], here: tuple[str, int]) -> None:
        kept = KeptOutput(str(getattr(owner, "name", type(owner).__name__)), held[0], held[1], here[0], here[1])
        self.seen.append(kept)
        if self.warn:
            warnings.warn_explicit(kept.message(), KeptOutputWarning, here[0], here[1])

    def forget(self, owner: Any) -> None:
        """Drop what is kept about `owner` (its graph was reset)."""
        self._last.pop(id(owner), None)
        self._suspects.pop(id(owner), None)


def caller_frame(depth: int = 2) -> FrameType | None:
    """The frame `depth` levels up (the user's line that called the graph)."""
    try:
        return sys._getframe(depth)
    except ValueError:
        return None


__all__ = ["KeptOutput", "KeptOutputGuard", "KeptOutputWarning", "caller_frame"]
