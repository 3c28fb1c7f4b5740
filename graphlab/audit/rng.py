"""Random numbers that repeat on every replay, or the reverse: the same inputs run twice eagerly and twice through
the graph path.

Torch, no CUDA. An output that changes between two eager runs on the same inputs is random (or stateful); one that
changes between two replays is random in the graph. Random in eager but not in the replay: the graph repeats numbers
eager draws fresh (`rng_repeats`); the reverse: the graph draws where eager repeats (`rng_fresh`). Random outputs are
left out of the exact replay-vs-eager comparison (no two runs can agree on them).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from graphlab.audit.compare import differing_paths, snapshot
from graphlab.audit.findings import Finding, Location
from graphlab.audit.targets import Draw, Target


@dataclass
class RandomCheck:
    """What the check found, and the outputs that are random on either path."""

    findings: list[Finding] = field(default_factory=list)
    random_paths: set[str] = field(default_factory=set)


def check_random(target: Target, draw: Draw) -> RandomCheck:
    """Run `draw` twice eagerly and twice through the graph path; compare each pair."""
    args, kwargs = draw
    eager_1 = snapshot(target.eager(args, kwargs))
    eager_2 = snapshot(target.eager(args, kwargs))
    replay_1 = snapshot(target.replay(args, kwargs))
    replay_2 = snapshot(target.replay(args, kwargs))
    eager_random = differing_paths(eager_1, eager_2)
    replay_random = differing_paths(replay_1, replay_2)
    check = RandomCheck(random_paths=eager_random | replay_random)
    repeats, fresh = sorted(eager_random - replay_random), sorted(replay_random - eager_random)
    if repeats:
        check.findings.append(Finding(
            "rng_repeats", f"{target.label}: the replay gives the same values at every call where eager draws new "
                           f"ones (output{'s' if len(repeats) > 1 else ''} {', '.join(repeats)})",
            Location(output=repeats[0]), evidence={"outputs": repeats}))
    if fresh:
        check.findings.append(Finding(
            "rng_fresh", f"{target.label}: the replay gives new values at every call where eager repeats them "
                         f"(output{'s' if len(fresh) > 1 else ''} {', '.join(fresh)})",
            Location(output=fresh[0]), evidence={"outputs": fresh}))
    return check


__all__ = ["RandomCheck", "check_random"]
