"""Use 1, early exit: skip a model's last blocks when a device-side confidence says so.

The zoo GPT runs its first `exit_after` blocks, then an early head (final norm + LM head on that
hidden state) gives a confidence: the largest next-token probability at the last position. When
every sequence in the batch is at least `threshold` confident, the answer is the early logits;
otherwise the remaining blocks run. Four ways to serve it:

- "conditional graph": one graph, an IF/ELSE node picks the branch on the GPU (`gl.cond`);
- "sync + one of two graphs": a graph for the first blocks, `.item()` on the decision, then the
  graph of the chosen branch (what you would do without conditional nodes);
- "one full graph": always all blocks (no early exit at all);
- "eager": the same code without graphs, with a Python `if` on `.item()`.

    >>> from graphlab.studies.conditional import early_exit_study
    >>> study = early_exit_study()             # live on a GPU, recorded otherwise  # doctest: +SKIP

The threshold is a device tensor too: 0 makes every input exit, 2 (above any probability) makes
none exit, so both branches are measured on the same inputs.
"""
from __future__ import annotations

from typing import Any

import torch

from graphlab.capture.api import capture
from graphlab.conditional.api import cond
from graphlab.conditional.results import CONDITIONAL, EAGER, FULL_GRAPH, HOST_SYNC, ConditionalStudy
from graphlab.errors import BadInputError
from graphlab.mode import stand_in
from graphlab.studies.conditional.common import graph_facts, max_abs_err, recorded, study_conditions, zoo_on_gpu
from graphlab.studies.conditional.timing import time_call

#: this study's name in the "conditional" recording (and in graphlab.conditional.results.VERDICTS)
STUDY = "early_exit"
CASES = {"confident: exits early": 0.0, "not confident: all blocks": 2.0}
TOLERANCE = 1e-4


class EarlyExitGPT:
    """The zoo GPT split at `exit_after`, over static buffers the graphs read and write.

    Attributes:
        ids: (batch, 64) token ids (the input); out: (batch, 64, vocab) logits (the output).
        threshold: CUDA float scalar; exit_now: CUDA bool scalar the head computes.
    """

    def __init__(self, model: torch.nn.Module, ids: torch.Tensor, exit_after: int = 1):
        blocks = list(model.blocks)
        if not 1 <= exit_after < len(blocks):
            raise BadInputError(f"exit_after must be between 1 and {len(blocks) - 1} (the GPT has {len(blocks)} "
                                f"blocks), got {exit_after}")
        self.model, self.exit_after = model, exit_after
        self.first, self.rest = blocks[:exit_after], blocks[exit_after:]
        self.ids = ids.clone()
        with torch.no_grad():
            self.hidden = torch.zeros(*ids.shape, model.tok.embedding_dim, device=ids.device)
            self.early = self._logits(self.hidden)
        self.out = torch.empty_like(self.early)
        self.threshold = torch.zeros((), device=ids.device)
        self.exit_now = torch.zeros((), dtype=torch.bool, device=ids.device)

    def _logits(self, x: Any) -> Any:
        return self.model.head(self.model.ln_f(x))

    def _embed(self) -> Any:
        m = self.model
        return m.tok(self.ids) + m.pos(m.positions[: self.ids.shape[1]])

    # the stages (functions of no arguments over the static buffers)
    def head(self) -> None:
        """First blocks, early logits, and the decision (all on the GPU)."""
        x = self._embed()
        for block in self.first:
            x = block(x)
        self.hidden.copy_(x)
        self.early.copy_(self._logits(x))
        confidence = self.early[:, -1].softmax(-1).amax(-1)
        self.exit_now.copy_((confidence >= self.threshold).all())

    def take_early(self) -> None:
        self.out.copy_(self.early)

    def run_rest(self) -> None:
        x = self.hidden
        for block in self.rest:
            x = block(x)
        self.out.copy_(self._logits(x))

    def full(self) -> None:
        """All blocks, no early exit (what a plain graph of the model computes)."""
        x = self._embed()
        for block in (*self.first, *self.rest):
            x = block(x)
        self.out.copy_(self._logits(x))

    def eager(self) -> None:
        """The early-exit model in plain PyTorch: a Python `if` on the decision (a host sync)."""
        self.head()
        (self.take_early if bool(self.exit_now.item()) else self.run_rest)()


@stand_in(recorded(STUDY))
def early_exit_study(*, batch_size: int = 1, exit_after: int = 1, repeats: int = 200,
                     route: str = "auto") -> ConditionalStudy:
    """Measure early exit with an IF/ELSE node against syncing to the host (see the module docs).

    Args:
        batch_size: sequences per request (the GPT's window is 64 tokens).
        exit_after: blocks before the early head (the zoo GPT has 3).
        repeats: timed calls per variant and case.
        route: how `gl.cond` builds the graph ("auto", "child", "capture").

    The graphs are freed when the study ends; the conditional graph's DOT is kept (`study.graph`).

    In recorded mode this returns the study recorded on the GPU (`graphlab record --models conditional`).
    """
    zoo = zoo_on_gpu("gpt", "early_exit_study")
    model = zoo.build(device="cuda")
    (ids,) = zoo.make_inputs(batch_size, device="cuda")
    s = EarlyExitGPT(model, ids, exit_after)
    graph = cond(s.exit_now, s.take_early, s.run_rest, before=s.head, route=route, name="early_exit")
    head_g = capture(s.head, name="head")
    exit_g = capture(s.take_early, name="take_early", pool=head_g)
    rest_g = capture(s.run_rest, name="run_rest", pool=head_g)
    full_g = capture(s.full, name="full", pool=head_g)

    def host_sync() -> None:
        head_g.replay()
        (exit_g if bool(s.exit_now.item()) else rest_g).replay()

    variants = [(CONDITIONAL, graph.launch, 1, 0), (HOST_SYNC, host_sync, 2, 1), (FULL_GRAPH, full_g.replay, 1, 0),
                (EAGER, s.eager, 0, 1)]
    rows, checks = [], {}
    with torch.no_grad():
        for case, threshold in CASES.items():
            s.threshold.fill_(threshold)
            s.eager()
            want = s.out.clone()
            exited = bool(s.exit_now.item())
            s.full()
            want_full = s.out.clone()
            for variant, call, launches, syncs in variants:
                s.out.zero_()
                call()
                torch.cuda.synchronize()
                err = max_abs_err(s.out, want_full if variant == FULL_GRAPH else want)
                checks[f"{variant} / {case}: max_abs_err"] = err
                rows.append({"variant": variant, "case": case, **time_call(call, repeats=repeats),
                             "launches": launches, "syncs": syncs, "exited": exited if variant != FULL_GRAPH else False,
                             "max_abs_err": err})
    errs = [v for k, v in checks.items() if k.endswith("max_abs_err")]
    checks = {"matches_eager": all(e <= TOLERANCE for e in errs), "max_abs_err": max(errs),
              "both_branches_taken": [r["exited"] for r in rows if r["variant"] == CONDITIONAL] == [True, False]}
    facts = {"model": "gpt", "batch_size": batch_size, "exit_after": exit_after, "blocks": len(list(model.blocks)),
             "tolerance": TOLERANCE, **graph_facts(graph),
             "host_graphs_build_ms": round(sum(g.capture_ms + g.instantiate_ms for g in (head_g, exit_g, rest_g)), 3)}
    dot = graph.dot(1)
    graph.close()
    for g in (head_g, exit_g, rest_g, full_g):
        g.reset()
    return ConditionalStudy(
        name=STUDY, title=f"Early exit: skip the GPT's last {len(s.rest)} blocks when confident",
        question="Does deciding on the GPU (one IF/ELSE graph) beat syncing to the host to pick the next graph?",
        rows=rows, checks=checks, facts=facts, conditions=study_conditions(repeats=repeats), dot=dot)


def run_for_recording(quick: bool = False) -> ConditionalStudy:
    """The study as `graphlab record --models conditional` runs it (a quarter of the repeats when `quick`)."""
    return early_exit_study(repeats=50 if quick else 200)


__all__ = ["CASES", "EarlyExitGPT", "STUDY", "early_exit_study", "run_for_recording"]
