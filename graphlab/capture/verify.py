"""Check a replay against eager execution on fresh random inputs (`CapturedGraph.verify`)."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Callable

from graphlab import present
from graphlab.errors import BadInputError
from graphlab.capture.tensors import flatten, grad_context, is_tensor, map_tensors, random_like, sync
from graphlab.present import ShownAsTable

#: (rtol, atol) per dtype name: an error passes when max_abs <= atol + rtol * max|eager|.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-9), "float32": (1e-3, 1e-5), "float16": (1e-2, 1e-3), "bfloat16": (2e-2, 1e-2),
}


@dataclass(frozen=True)
class VerifyResult:
    """Replay vs eager on fresh inputs. `passed` when every output is within the dtype's tolerance."""

    passed: bool
    max_abs_err: float
    max_rel_err: float
    trials: int
    outputs_checked: int
    worst_output: str
    rtol: float
    atol: float
    #: where the check ran: "" for here and now; in recorded mode, the recording's GPU and date
    where: str = ""

    def __bool__(self) -> bool:
        return self.passed

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if not data["where"]:
            del data["where"]  # a live check's dict stays as recordings store it
        return data

    def _check_words(self) -> str:
        """The comparison in words: "max abs error 0 (bit-identical outputs; relative 0; tolerance rtol 0.001,
        atol 1e-5) over 2 trials of fresh random inputs, 1 output"."""
        same = "bit-identical outputs; " if self.max_abs_err == 0 else ""
        trials = f"{self.trials} trial{'s' if self.trials != 1 else ''}"
        outputs = f"{self.outputs_checked} output{'s' if self.outputs_checked != 1 else ''}"
        return (f"max abs error {present.error(self.max_abs_err)} ({same}relative {present.error(self.max_rel_err)}; "
                f"tolerance rtol {present.error(self.rtol)}, atol {present.error(self.atol)}) over {trials} of "
                f"fresh random inputs, {outputs}")

    def __str__(self) -> str:
        if self.where:  # recorded: what the GPU found then, never a PASS measured here
            verdict = "it passed" if self.passed else "it FAILED"
            return (f"{self.where}, and nothing was replayed here: when the graph was recorded, replay matched eager "
                    f"to {self._check_words()}: {verdict}")
        verdict = "PASS" if self.passed else "FAIL"
        return f"{verdict}: replay matches eager to {self._check_words()}"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))


def verify_replay(cg: Any, make_inputs: Callable[[], Any] | None = None, trials: int = 3) -> VerifyResult:
    """Replay `cg` and run its function eagerly on the same fresh inputs; compare every tensor output.

    The static inputs are restored (and replayed) afterwards, so `cg.outputs` are as before.
    """
    if cg._fn is None:
        raise BadInputError(f"graph {cg.name!r} came from a `with` block, whose code cannot be re-run: "
                            "use gl.capture(fn, ...) or %%cudagraph to verify")
    saved = map_tensors(lambda t: t.clone(), cg.inputs)
    worst: tuple[float, float, float, str, float, float] | None = None  # margin, abs, rel, path, rtol, atol
    checked = 0
    for trial in range(trials):
        if make_inputs is not None:
            fresh = make_inputs()
            fresh = fresh if isinstance(fresh, tuple) else (fresh,)
        else:
            fresh = map_tensors(lambda t: random_like(t, seed=1000 + trial), cg.inputs)
        replayed = map_tensors(lambda t: t.clone(), cg(*fresh))
        with grad_context(cg.grad_mode):
            eager = cg._fn(*fresh)
        sync()
        eager_leaves = dict(flatten(eager))
        pairs = [(p, a, eager_leaves[p]) for p, a in flatten(replayed) if is_tensor(a) and p in eager_leaves]
        checked = len(pairs)
        for path, got, want in pairs:
            rtol, atol = TOLERANCES.get(str(want.dtype).replace("torch.", ""), (0.0, 0.0))
            got, want = got.detach(), want.detach()
            diff = (got.double() - want.double()).abs()
            max_abs = float(diff.max()) if diff.numel() else 0.0
            scale = float(want.double().abs().max()) if want.numel() else 0.0
            max_rel = max_abs / scale if scale > 0 else max_abs
            margin = max_abs - (atol + rtol * scale)
            if worst is None or margin > worst[0]:
                worst = (margin, max_abs, max_rel, path, rtol, atol)
    cg.plan.feed(saved)
    cg.replay()
    sync()
    if worst is None:
        raise BadInputError(f"graph {cg.name!r} has no tensor outputs to verify: verify compares tensors")
    margin, max_abs, max_rel, path, rtol, atol = worst
    return VerifyResult(margin <= 0, max_abs, max_rel, trials, checked, path, rtol, atol)


@dataclass(frozen=True)
class CallCheck(ShownAsTable):
    """One call of a captured graph, checked (`cg.check_call(new_x)`): did the replay match the model run
    eagerly on the same inputs, and did the call return the graph's static outputs (the same tensors on every
    call, overwritten by the next one)?

    Live, every field was measured here. Recorded (`where` says where and when the graph was recorded),
    nothing was replayed: the fields that would need a replay are None, and `recorded_check` is what the GPU's
    own check found when the graph was recorded.
    """

    graph: str
    matched: bool | None = None
    max_abs_err: float | None = None
    rtol: float | None = None
    atol: float | None = None
    returned_static: bool | None = None
    same_next_call: bool | None = None
    overwritten: bool | None = None
    where: str = ""
    recorded_check: VerifyResult | None = None

    def table(self) -> Any:
        """The check as a two-column table for people."""
        if self.where:
            rows = [("here", "the call ran the model eagerly on this CPU: there was no replay to compare with eager, "
                              "and no static output to return"),
                    ("on a GPU", "a call copies the new inputs into the static inputs, replays, and returns the "
                                 "static outputs (`.outputs`): the same tensors on every call, overwritten by the "
                                 "next call (clone what you keep)")]
            if self.recorded_check is not None:
                verdict = "passed" if self.recorded_check.passed else "FAILED"
                rows.append(("the GPU's check", f"when the graph was recorded, replay matched eager to "
                                                 f"{self.recorded_check._check_words()}: {verdict} (`cg.verify()`)"))
            return present.facts(rows, title=f"Graph {self.graph!r}, {self.where}: nothing was replayed here")
        verdict = "the same result" if self.matched else "a DIFFERENT result"
        rows = [("replay vs eager", f"{verdict}: max abs error {present.error(self.max_abs_err)} (tolerance rtol "
                                    f"{present.error(self.rtol)}, atol {present.error(self.atol)})"),
                ("what came back", "the graph's static outputs (`.outputs`)" if self.returned_static else
                 "tensors other than the static outputs (`.outputs`)"),
                ("a second call, other inputs",
                 ("returned the same tensors" if self.same_next_call else "returned other tensors")
                 + (" and overwrote their values: clone a result you want to keep" if self.overwritten else
                    ", the first result unchanged"))]
        return present.facts(rows, title=f"One call of graph {self.graph!r} with new inputs, checked on this GPU")


def _leaves(tree: Any) -> list[Any]:
    return [t for _, t in flatten(tree) if is_tensor(t)]


def check_call(cg: Any, *new_inputs: Any) -> CallCheck:
    """Call `cg(*new_inputs)` as a learner would and check it: replay vs the model run eagerly on the same inputs
    (the dtype's tolerance), whether it returned the static outputs, and whether a second call with other inputs
    returns the same tensors and overwrites them. Afterwards the static inputs and outputs hold `new_inputs`' result.
    """
    if cg._fn is None:
        raise BadInputError(f"graph {cg.name!r} came from a `with` block, whose code cannot be re-run: "
                            "use gl.capture(fn, ...) or %%cudagraph to check a call")
    first = cg(*new_inputs)
    returned_static = first is cg.outputs
    kept = [t.clone() for t in _leaves(first)]
    with grad_context(cg.grad_mode):
        eager = cg._fn(*new_inputs)
    sync()
    worst: tuple[float, float, float, float] | None = None  # margin, max abs, rtol, atol
    for got, want in zip(kept, _leaves(eager)):
        rtol, atol = TOLERANCES.get(str(want.dtype).replace("torch.", ""), (0.0, 0.0))
        diff = (got.detach().double() - want.detach().double()).abs()
        max_abs = float(diff.max()) if diff.numel() else 0.0
        scale = float(want.detach().double().abs().max()) if want.numel() else 0.0
        margin = max_abs - (atol + rtol * scale)
        if worst is None or margin > worst[0]:
            worst = (margin, max_abs, rtol, atol)
    other = map_tensors(lambda t: random_like(t, seed=2024), tuple(new_inputs))
    second = cg(*other)
    same_next = second is first
    overwritten = any(not bool((a == b).all()) for a, b in zip(_leaves(first), kept))
    cg(*new_inputs)  # the call the learner made: its result stays in the static outputs
    sync()
    if worst is None:
        raise BadInputError(f"graph {cg.name!r} has no tensor outputs to check: a check compares tensors")
    margin, max_abs, rtol, atol = worst
    return CallCheck(graph=cg.name, matched=margin <= 0, max_abs_err=max_abs, rtol=rtol, atol=atol,
                     returned_static=returned_static, same_next_call=same_next, overwritten=overwritten)


@dataclass(frozen=True)
class CensusCheck:
    """The two witnesses of one graph compared (`cg.check_census()`): the DOT the driver printed and the census
    read node by node through the CUDA graph API. `disagreements` is empty when both tell the same story (node
    kinds, kernel names, launch dimensions, edges). `where`: "" when the census was taken here, else where and
    when it was recorded (then nothing was read here)."""

    nodes: int
    disagreements: tuple[str, ...] = ()
    where: str = ""

    @property
    def agree(self) -> bool:
        return not self.disagreements

    def __bool__(self) -> bool:
        return self.agree

    def __str__(self) -> str:
        what = "node kinds, kernel names, launch dimensions and edges"
        head = (f"{self.where[:1].upper()}{self.where[1:]} (nothing was read here): the census taken then through the "
                "CUDA graph API and the DOT" if self.where else "The census (the CUDA graph API) and the DOT")
        if self.agree:
            return f"{head} {'agreed' if self.where else 'agree'} on all {self.nodes:,} nodes: {what}."
        return (f"{head} {'disagreed' if self.where else 'disagree'} on {len(self.disagreements)} point"
                f"{'s' if len(self.disagreements) != 1 else ''}: " + "; ".join(self.disagreements))

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))


__all__ = ["TOLERANCES", "CallCheck", "CensusCheck", "VerifyResult", "check_call", "verify_replay"]
