"""Use 2, a loop in one launch: greedy decoding with the zoo GPT inside a WHILE node.

The zoo GPT reads a fixed 64-token window. The prompt fills its start; the rest is padding on the
right, which causal attention never lets an earlier position see, so the logits at the last real
token are exact. Each step runs the model on the window, takes the argmax at the position held by
a *device* counter, writes it one place further and advances the counter; the loop goes on while
some sequence has not produced EOS and the window has room (`max_new_tokens`). Three ways to run it:

- "one WHILE launch": the whole loop is one graph launch (`gl.while_loop`), one sync at the end;
- "one replay per token": the step is a captured graph, replayed from a Python loop that reads
  the continue flag (`.item()`, a host sync) after every token;
- "eager": the same step in plain PyTorch, with the same host check.

    >>> from graphlab.studies.conditional import decode_loop_study
    >>> study = decode_loop_study()           # live on a GPU, recorded otherwise  # doctest: +SKIP
    >>> study.checks["tokens_identical"]      # doctest: +SKIP
    True

EOS is a device tensor, so the same graphs serve both cases measured: no EOS (the loop runs to the
maximum) and an EOS the model really emits mid-way (the token it produced at step
`max_new_tokens // 3`, chosen from the eager run; the weights are random, so no token means "end").
"""
from __future__ import annotations

import torch

from graphlab.capture.api import CapturedGraph, capture
from graphlab.conditional.api import while_loop
from graphlab.conditional.results import EAGER, PER_TOKEN, WHILE_LOOP, ConditionalStudy
from graphlab.errors import BadInputError
from graphlab.mode import stand_in
from graphlab.studies.conditional.common import graph_facts, recorded, study_conditions, zoo_on_gpu
from graphlab.studies.conditional.timing import time_call

#: this study's name in the "conditional" recording (and in graphlab.conditional.results.VERDICTS)
STUDY = "decode_loop"
PAD_TOKEN = 0
NO_EOS = -1


class GreedyDecoder:
    """Greedy decoding state on the GPU: ids window, position counter, finished mask, continue flag.

    Args:
        model: the zoo GPT (64-token window). prompt: (batch, prompt_len) token ids on the GPU.
        max_new_tokens: most tokens to generate (capped by the window).
    """

    def __init__(self, model: torch.nn.Module, prompt: torch.Tensor, max_new_tokens: int):
        window = int(model.positions.numel())
        batch, prompt_len = prompt.shape
        if not 1 <= prompt_len < window:
            raise BadInputError(f"the prompt must hold 1 to {window - 1} tokens (the window is {window}), "
                                f"got {prompt_len}")
        if max_new_tokens < 1:
            raise BadInputError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
        self.model = model
        self.prompt = prompt.clone()
        self.prompt_len = prompt_len
        self.max_new_tokens = min(max_new_tokens, window - prompt_len)
        self.last_pos = prompt_len - 1 + self.max_new_tokens
        device = prompt.device
        self.ids = torch.zeros(batch, window, dtype=torch.long, device=device)
        self.pos = torch.zeros((), dtype=torch.long, device=device)        # index of the last real token
        self.finished = torch.zeros(batch, dtype=torch.bool, device=device)
        self.go = torch.zeros((), dtype=torch.bool, device=device)
        self.eos = torch.full((), NO_EOS, dtype=torch.long, device=device)

    def reset(self) -> None:
        """Put the prompt back (asynchronous, no sync): every generation starts here."""
        self.ids.zero_()
        self.ids[:, : self.prompt_len].copy_(self.prompt)
        self.pos.fill_(self.prompt_len - 1)
        self.finished.zero_()

    def check(self) -> None:
        """go = some sequence unfinished and room left (computed on the GPU)."""
        self.go.copy_(self.finished.logical_not().any() & (self.pos < self.last_pos))

    def step(self) -> None:
        """One token for every sequence (finished ones get padding), then the continue check."""
        logits = self.model(self.ids)
        last = logits.index_select(1, self.pos.view(1)).squeeze(1)
        token = last.argmax(-1).masked_fill(self.finished, PAD_TOKEN)
        self.pos.add_(1)
        self.ids.index_copy_(1, self.pos.view(1), token.view(-1, 1))
        self.finished.logical_or_(token == self.eos)
        self.check()

    # the three ways to run the loop
    def eager(self) -> None:
        self.reset()
        self.check()
        while bool(self.go.item()):
            self.step()

    def replay_each(self, step_graph: CapturedGraph) -> None:
        self.reset()
        self.check()
        while bool(self.go.item()):
            step_graph.replay()

    def generated(self) -> torch.Tensor:
        """The generated tokens (batch, n) on the host (a sync)."""
        end = int(self.pos.item()) + 1
        return self.ids[:, self.prompt_len:end].cpu()


def _pick_eos(tokens: torch.Tensor, step: int) -> int | None:
    """A token first produced at `step` or later in row 0 (so EOS really stops the loop mid-way)."""
    row = tokens[0].tolist()
    for i in range(step, len(row)):
        if row[i] not in row[:i]:
            return int(row[i])
    return None


@stand_in(recorded(STUDY))
def decode_loop_study(*, batch_size: int = 1, prompt_len: int = 8, max_new_tokens: int = 48, repeats: int = 20,
                      route: str = "auto") -> ConditionalStudy:
    """Measure greedy decoding in one WHILE launch against a replay per token and eager (module docs).

    In recorded mode this returns the study recorded on the GPU (`graphlab record --models conditional`).
    """
    zoo = zoo_on_gpu("gpt", "decode_loop_study")
    model = zoo.build(device="cuda")
    (ids,) = zoo.make_inputs(batch_size, device="cuda")
    d = GreedyDecoder(model, ids[:, :prompt_len], max_new_tokens)
    with torch.no_grad():
        graph = while_loop(d.go, d.step, before=d.check, max_iterations=d.max_new_tokens, route=route,
                           name="greedy_decode")
        step_graph = capture(d.step, name="decode_step")
        d.eager()
        eos = _pick_eos(d.generated(), d.max_new_tokens // 3)

        def one_launch() -> None:
            d.reset()
            graph.launch()

        variants = [(WHILE_LOOP, one_launch), (PER_TOKEN, lambda: d.replay_each(step_graph)), (EAGER, d.eager)]
        cases = [("to the maximum (no EOS)", NO_EOS)]
        if eos is not None:
            cases.append((f"stops at EOS (token {eos})", eos))
        rows, identical, iterations_ok = [], True, True
        for case, eos_token in cases:
            d.eos.fill_(eos_token)
            results = {}
            for variant, call in variants:
                call()
                torch.cuda.synchronize()
                results[variant] = d.generated()
                if variant == WHILE_LOOP:
                    iterations_ok &= int(graph.iterations.item()) == results[variant].shape[1]
            first = results[EAGER]
            identical &= all(torch.equal(first, r) for r in results.values())
            tokens = int(first.shape[1])
            for variant, call in variants:
                timing = time_call(call, repeats=repeats, warmup_calls=2)
                launches = {WHILE_LOOP: 1, PER_TOKEN: tokens, EAGER: 0}[variant]
                rows.append({"variant": variant, "case": case, **timing, "tokens": tokens,
                             "per_token_us": round(timing["wall_p50_us"] / max(tokens, 1), 2), "launches": launches,
                             "syncs": 0 if variant == WHILE_LOOP else tokens + 1})
    checks = {"tokens_identical": bool(identical), "iterations_counted": bool(iterations_ok),
              "stopped_early_at_eos": eos is not None and rows[-1]["tokens"] < d.max_new_tokens}
    facts = {"model": "gpt", "batch_size": batch_size, "prompt_len": prompt_len, "max_new_tokens": d.max_new_tokens,
             "eos_token": eos, **graph_facts(graph),
             "step_graph_build_ms": round(step_graph.capture_ms + step_graph.instantiate_ms, 3),
             "step_graph_pool_bytes": step_graph.pool_bytes}
    dot = graph.dot(1)
    graph.close()
    step_graph.reset()
    return ConditionalStudy(
        name=STUDY, title=f"Greedy decoding of up to {d.max_new_tokens} tokens in one WHILE launch",
        question="What does keeping the decode loop on the GPU save over one graph replay (and one sync) per token?",
        rows=rows, checks=checks, facts=facts, conditions=study_conditions(repeats=repeats), dot=dot)


def run_for_recording(quick: bool = False) -> ConditionalStudy:
    """The study as `graphlab record --models conditional` runs it (a quarter of the repeats when `quick`)."""
    return decode_loop_study(repeats=5 if quick else 20)


__all__ = ["GreedyDecoder", "NO_EOS", "PAD_TOKEN", "STUDY", "decode_loop_study", "run_for_recording"]
