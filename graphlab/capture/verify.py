"""Check a replay against eager execution on fresh random inputs (`CapturedGraph.verify`)."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Callable

from graphlab.errors import BadInputError
from graphlab.capture.tensors import flatten, grad_context, is_tensor, map_tensors, random_like, sync

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

    def __str__(self) -> str:
        verdict = "PASS" if self.passed else "FAIL"
        verb = "matched" if self.where else "matches"
        same = " (bit-identical outputs)" if self.max_abs_err == 0 else ""
        text = (f"{verdict}: replay {verb} eager to max abs error {self.max_abs_err:.3g}{same} (relative "
                f"{self.max_rel_err:.3g}; tolerance rtol={self.rtol:g}, atol={self.atol:g}) over {self.trials} "
                f"trial(s) of fresh random inputs, {self.outputs_checked} output(s)")
        if self.where:
            text = (f"{self.where}: {text}. Recorded mode: nothing was replayed here, this is the check the GPU "
                    "ran when the graph was recorded")
        return text

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


__all__ = ["TOLERANCES", "VerifyResult", "verify_replay"]
