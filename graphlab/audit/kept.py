"""Outputs kept across replays: a result that holds several calls' outputs in the same memory, and outputs that the
next call overwrites.

Torch, no CUDA. Two checks on the graph path:

- within one result: tensors that should be separate answers (eager's are) share memory, because the target
  collected a graph's output from several replays (`[cg(x) for x in xs]`): a finding (`kept_output`), located to the
  line by running the target once more with every `CapturedGraph` handing out views through an immediate
  `KeptOutputGuard` (`capture/kept_outputs.py`);
- across calls: a result held while the next call runs is overwritten. That is how a graph's static outputs work
  (by design, not a bug of the target), so it is a note for the caller, not a finding.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from graphlab.audit.compare import differing_paths, snapshot, tensor_leaves
from graphlab.audit.findings import Finding, Location
from graphlab.audit.targets import Draw, Target
from graphlab.capture.captured import guard_every_graph
from graphlab.capture.kept_outputs import KeptOutputGuard


@dataclass
class KeptCheck:
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def shared_memory(result: object) -> list[tuple[str, ...]]:
    """Groups of output paths (two or more) whose tensors share memory (one storage, overlapping bytes)."""
    groups: dict[tuple[int, int], list[str]] = {}
    for path, t in tensor_leaves(result).items():
        if t.numel() == 0:
            continue
        start = t.data_ptr()
        groups.setdefault((t.untyped_storage().data_ptr(), start), []).append(path)
    return [tuple(paths) for paths in groups.values() if len(paths) > 1]


def check_kept(target: Target, draw: Draw, other: Draw | None) -> KeptCheck:
    """Both checks of the module docstring, on `draw` (and `other`, a second draw, for the across-calls note)."""
    check = KeptCheck()
    args, kwargs = draw
    shared = shared_memory(target.replay(args, kwargs))
    eager_shared = {frozenset(g) for g in shared_memory(target.eager(args, kwargs))}
    wrong = [g for g in shared if frozenset(g) not in eager_shared]
    if wrong:
        guard = KeptOutputGuard(immediate=True, warn=False)
        with guard_every_graph(guard):
            target.replay(args, kwargs)
        line = f"{guard.seen[0].held_file}:{guard.seen[0].held_line}" if guard.seen else ""
        group = wrong[0]
        check.findings.append(Finding(
            "kept_output", f"{target.label} returns {len(group)} outputs ({', '.join(group)}) that are the same "
                           "memory: each replay overwrote the one before, so all hold the last call's answer",
            Location(output=group[0], line=line), evidence={"shared": list(group)}))
    if other is not None and not target.fresh_outputs:
        first = target.replay(args, kwargs)
        kept = snapshot(first)
        target.replay(*other)
        if isinstance(first, torch.Tensor) or tensor_leaves(first):
            if differing_paths(first, kept):
                check.notes.append(f"{target.label}'s outputs are overwritten by the next call (the graph's static "
                                   "outputs, by design): clone what you keep; cg.warn_kept_outputs() warns at the "
                                   "line that keeps one")
    return check


__all__ = ["KeptCheck", "check_kept", "shared_memory"]
