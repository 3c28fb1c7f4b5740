"""Replay against eager over draws: what differed, at which draw, and what the draws varied.

Torch, no CUDA: it runs any `Target` (a test double on CPU as well as a captured graph on the GPU). For draw i,
`vary(i)` (when given) changes state outside the arguments, `make_inputs(i)` gives (args, kwargs); the graph path
and eager run on them and the first output that differs beyond its dtype's tolerance is kept. Along the way it notes
what the draws varied: tensor values, shapes, and each Python scalar's values.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from graphlab.audit.compare import OutputDifference, first_difference, snapshot, tensor_leaves
from graphlab.audit.targets import Draw, Target, check_draw
from graphlab.capture.tensors import flatten


@dataclass
class DrawRun:
    """One draw: its inputs, the graph path's result (copied), eager's, and how they differ (None: they match)."""

    index: int
    draw: Draw
    replayed: Any
    eager: Any
    difference: OutputDifference | None
    #: non-tensor arguments the graph did not take (it replayed the value it captured)
    scalars_ignored: tuple[str, ...] = ()


@dataclass
class Draws:
    """Every draw, and what the draws varied."""

    runs: list[DrawRun] = field(default_factory=list)
    shapes: dict[str, set[tuple[int, ...]]] = field(default_factory=dict)
    scalars: dict[str, list[Any]] = field(default_factory=dict)
    varied_state: bool = False

    @property
    def differing(self) -> list[DrawRun]:
        return [r for r in self.runs if r.difference is not None]

    def varied(self) -> list[str]:
        """What the draws varied, in words."""
        out = [f"tensor values over {len(self.runs)} draw{'s' if len(self.runs) != 1 else ''}"]
        shaped = [p for p, s in self.shapes.items() if len(s) > 1]
        if shaped:
            out.append(f"shapes of {', '.join(shaped)}")
        scalars = [p for p, v in self.scalars.items() if len(set(map(repr, v))) > 1]
        if scalars:
            out.append(f"Python scalars {', '.join(scalars)}")
        if self.varied_state:
            out.append("state outside the arguments (vary)")
        return out

    def not_varied(self) -> list[str]:
        """What the draws held fixed, in words: the audit could not see a value that depends on it."""
        out = []
        if self.shapes and all(len(s) == 1 for s in self.shapes.values()):
            out.append("input shapes (every draw had the same)")
        fixed = [p for p, v in self.scalars.items() if len(set(map(repr, v))) == 1]
        if fixed:
            out.append(f"Python scalars {', '.join(fixed)} (the same at every draw)")
        if not self.varied_state:
            out.append("state outside the arguments (no vary given)")
        return out


def run_draws(target: Target, make_inputs: Callable[[int], Any], draws: int,
              vary: Callable[[int], Any] | None = None, skip: set[str] | None = None,
              first: int = 0, stop_at_first: bool = False) -> Draws:
    """Draws `first` to `first + draws - 1`: the graph path and eager on each, compared (outputs in `skip` are not:
    random ones). `stop_at_first`: stop once a draw differs and two draws ran (two to tell a replay that never moves
    from one that does), so the state `vary` set for the last draw is still in place when it is explained."""
    result = Draws(varied_state=vary is not None)
    for i in range(first, first + draws):
        if vary is not None:
            vary(i)
        args, kwargs = check_draw(make_inputs(i), i)
        for path, leaf in flatten((args, kwargs)):
            if isinstance(leaf, torch.Tensor):
                result.shapes.setdefault(path, set()).add(tuple(leaf.shape))
            elif isinstance(leaf, (int, float, bool, complex)):
                result.scalars.setdefault(path, []).append(leaf)
        replayed = snapshot(target.replay(args, kwargs))
        ignored = tuple(target.scalars_ignored())
        eager = snapshot(target.eager(args, kwargs))
        run = DrawRun(i, (args, kwargs), replayed, eager, first_difference(replayed, eager, skip or ()), ignored)
        result.runs.append(run)
        if stop_at_first and result.differing and len(result.runs) >= 2:
            break
    return result


def replay_is_constant(draws: Draws) -> bool:
    """True when every draw's replay gave the same answer while eager's changed: the graph never saw the inputs."""
    if len(draws.runs) < 2:
        return False
    first = tensor_leaves(draws.runs[0].replayed)
    eager_first = tensor_leaves(draws.runs[0].eager)
    same_replay = all(_same(first, tensor_leaves(r.replayed)) for r in draws.runs[1:])
    eager_moved = any(not _same(eager_first, tensor_leaves(r.eager)) for r in draws.runs[1:])
    return same_replay and eager_moved


def _same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(a[k].shape == b[k].shape and bool(torch.equal(a[k], b[k])) for k in a)


__all__ = ["DrawRun", "Draws", "replay_is_constant", "run_draws"]
