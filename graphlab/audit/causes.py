"""The causes `gl.audit` looks for: each one's title, why a replay goes wrong, the fix, and what the audit cannot see.

Pure: the words only (docs/audit.md says the same at length). A `Finding` names its cause by key; the table shows
the title, and the finding carries the why and the fix of its cause unless it has more specific ones.

    >>> CAUSES["baked_value"].title
    'A value baked into the graph at capture'
"""
from __future__ import annotations

from dataclasses import dataclass

from graphlab.errors import BadInputError


@dataclass(frozen=True)
class Cause:
    """One way a graph replays without error and answers wrong."""

    key: str
    title: str
    why: str
    fix: str
    cannot_see: str


CAUSES: dict[str, Cause] = {c.key: c for c in (
    Cause("baked_value", "A value baked into the graph at capture",
          "a graph replays the kernel launches recorded at capture with the arguments they had then: a Python "
          "scalar, a shape-derived length or a value read on the host became a launch constant, so a replay uses "
          "the captured value whatever the new inputs hold",
          "pass the value as a tensor input the graph reads (a 0-dim tensor copied into before each replay), or "
          "capture one graph per value (a cache keyed on it)",
          "a value that only matters for inputs the draws never reached (vary them with make_inputs and vary)"),
    Cause("baked_address", "An address baked into the graph at capture",
          "a kernel reads a tensor that lives outside the graph's memory pool and static inputs; the graph keeps its "
          "address, so a tensor made anew for a later call (an attribute replaced, a buffer reallocated) is never "
          "read (the vllm #6052 pattern)",
          "allocate the tensor once, before capture, and write new values into it with copy_() instead of "
          "replacing it",
          "a replaced tensor that happens to get the same address again (the allocator reuses a freed block)"),
    Cause("kept_output", "An output kept across replays",
          "a graph's outputs are the same memory on every call: a result still held when the next replay runs is "
          "overwritten with the next call's answer",
          "clone what you keep (`y = cg(x).clone()`), or use copy_outputs=True in a GraphCache",
          "a caller the audit does not run (it sees the target's results, and warns at lines inside graphlab's own "
          "captured graphs; `cg.warn_kept_outputs()` warns in your code)"),
    Cause("rng_repeats", "Random numbers that repeat on every replay",
          "the numbers were drawn on the host (Python's random, numpy) or by a generator the graph does not "
          "advance, once, at capture: every replay reuses them, where eager draws fresh ones",
          "draw them on the device with torch's default CUDA generator (torch.rand, dropout), or register your "
          "generator with the graph (CUDAGraph.register_generator_state)",
          "randomness in outputs that differ anyway between draws (the check replays the same inputs twice)"),
    Cause("rng_fresh", "Random numbers drawn fresh where eager repeats them",
          "eager resets its generator on every call (a seed set on the host), which a graph does not replay: the "
          "graph's generator advances at each replay, so its numbers change where eager's repeat",
          "seed on the device inside the graph (a generator state registered with it), or reset it before each "
          "replay with graphsafe_set_state",
          "a reset that only happens on some calls"),
    Cause("input_replaced", "A static input replaced instead of copied into",
          "the step assigns a new tensor to the name that held the graph's static input; the graph keeps reading "
          "the old buffer, so every replay computes the captured input's answer",
          "copy the new values into the static input: `static_x.copy_(x)`, never `static_x = x`",
          "a step that copies into only some of its inputs when the draws vary only the others"),
    Cause("padding_reaches_rows", "Padding or uninitialized memory reaches the real rows",
          "the answer on the real rows depends on what the padding rows (or memory never written) hold: an op "
          "across the batch, or a read of memory the graph does not initialise, so the answer changes with the "
          "garbage left there",
          "make the op row-wise (or mask the padding), and write every element the model reads; "
          "Pad(exact=False) never pads a dimension that is not exact",
          "uninitialized memory that happens to hold the same values at every replay"),
    Cause("replay_differs", "Replay differs from eager",
          "the replay's answer differs from eager on the same inputs beyond the dtype's tolerance, and the audit "
          "could not tell which of the causes it is",
          "look at the first differing output and the module that wrote it; capture at the draw that differed and "
          "compare the graphs (gl.diff)",
          "a cause that shows only for inputs the draws never reached"),
    Cause("cuda_error", "A CUDA error stopped the audit",
          "a kernel failed (an illegal address, a device-side assert): the CUDA context cannot be trusted after "
          "one, so the audit stopped and ran nothing more",
          "fix the error (CUDA_LAUNCH_BLOCKING=1 names the kernel), then audit again in a fresh process",
          "everything after the error: the checks that had not run"),
)}


def cause(key: str) -> Cause:
    """The cause called `key`, or BadInputError listing the causes."""
    found = CAUSES.get(key)
    if found is None:
        raise BadInputError(f"no audit cause {key!r}; the causes are {', '.join(CAUSES)}")
    return found


__all__ = ["CAUSES", "Cause", "cause"]
