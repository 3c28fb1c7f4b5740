"""The notebooks' exercises: an answer starts as `None`, and its check says where it stands without failing.

The convention every notebook follows (tests/test_notebook_exercises.py holds it):

- the exercise cell is tagged `exercise` and assigns one name to `None`, with a hint in a comment:
  `my_padding = None  # each request pays its bucket minus its size`;
- the next cell checks it with `check_answer(...)`, which prints one of three lines and never raises,
  so Run All goes through a notebook whose exercises nobody has answered yet:
  "Not answered yet: ..." (what to look at), "Not yet: ..." (what was written and a hint), or "Right: ...";
- the tests fill the answers in (tests/notebook_answers.py) and require "Right" from every check.

Pure: no torch, no widgets.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["AnswerCheck", "check_answer", "NOT_ANSWERED", "WRONG", "RIGHT"]

#: the three states of an answer, as the check cell prints them
NOT_ANSWERED, WRONG, RIGHT = "not answered", "wrong", "right"


@dataclass(frozen=True)
class AnswerCheck:
    """What a check cell found: its state and the line it printed."""

    state: str
    line: str

    @property
    def right(self) -> bool:
        return self.state == RIGHT

    def __str__(self) -> str:
        return self.line

    def __bool__(self) -> bool:
        return self.right

    def _ipython_display_(self) -> None:
        """A check cell ends with the check: its line was printed already, so the returned value shows nothing."""


def _same(answer: Any, expected: Any, rel_tol: float) -> bool:
    if isinstance(expected, float) or isinstance(answer, float):
        try:
            return math.isclose(float(answer), float(expected), rel_tol=rel_tol, abs_tol=1e-12)
        except (TypeError, ValueError):
            return False
    if isinstance(expected, (set, frozenset)):
        try:
            return set(answer) == set(expected)
        except TypeError:
            return False
    return bool(answer == expected)


def _kind_note(answer: Any, expected: Any) -> str:
    """A word on an answer of the wrong kind: text where a number is asked for ('3' for 3), or a number for text."""
    number = (int, float)
    if isinstance(answer, str) and isinstance(expected, number) and not isinstance(expected, bool):
        try:
            float(answer)
        except ValueError:
            return " That is text; the answer is a number."
        return f" That is text (in quotes); the answer is a number: write {answer.strip()} without the quotes."
    if isinstance(expected, str) and isinstance(answer, number) and not isinstance(answer, bool):
        return " That is a number; the answer is text: put it in quotes."
    return ""


def check_answer(answer: Any, expected: Any, *, hint: str, right: str = "",
                 rel_tol: float = 0.01, judge: Callable[[Any], bool] | None = None,
                 echo: bool = True) -> AnswerCheck:
    """Compare a learner's `answer` with `expected` and print where it stands; never raises.

    `hint` says what to look at (printed while the answer is `None` or wrong); `right` is printed
    with a correct answer (the explanation). Floats compare within `rel_tol`; sets ignore order;
    `judge(answer) -> bool` replaces the comparison for answers with more than one right form.
    """
    if answer is None:
        result = AnswerCheck(NOT_ANSWERED, f"Not answered yet: {hint}")
    else:
        try:
            ok = judge(answer) if judge is not None else _same(answer, expected, rel_tol)
        except Exception:  # a learner's answer of the wrong type is a wrong answer, not a crash
            ok = False
        if ok:
            result = AnswerCheck(RIGHT, f"Right: {right}" if right else "Right.")
        else:
            result = AnswerCheck(WRONG, f"Not yet: you wrote {answer!r}.{_kind_note(answer, expected)} {hint}")
    if echo:
        print(result.line)
    return result
