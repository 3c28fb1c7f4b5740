"""`gl.audit`: find what makes a graph replay without error and answer wrong.

    >>> report = gl.audit(model, lambda i: ((torch.randn(8, 64, device="cuda"), 0.5 + i), {}))   # doctest: +SKIP
    >>> report                   # a table: each finding's cause, what is wrong, where, why, the fix
    >>> report.clean             # True: no finding, and the report says what was tried and what was not varied
    >>> gl.audit(cache, make_inputs)                 # a GraphCache, called as you call it
    >>> gl.audit(step, make_inputs, eager=model)     # your own step over a raw torch graph
    >>> gl.set_mode("recorded"); gl.audit("baked_scalar")   # a worked example, from its recording

What it does, in order (docs/audit.md explains each cause and what the audit cannot see):

1. **random numbers**: draw 0 twice eagerly and twice through the graph (`audit/rng.py`);
2. **replay vs eager over draws**: `vary(i)` then `make_inputs(i)` for each draw; values, shapes (a cache's sizes
   within each bucket) and the Python scalars passed; the last draw run (the first that differs, or the one after) is explained (`audit/baked.py`):
   a scalar the replay did not take, a static input the step replaced, or, on a GPU, the kernel arguments that differ
   between the graph and one captured at that draw (`audit/kernel_args.py`, `audit/launch_diff.py`); otherwise the
   first differing output and the module that wrote it;
3. **outputs kept across replays** (`audit/kept.py`);
4. **padding** that reaches the real rows, for a GraphCache that pads (`audit/padding.py`).

A CUDA error anywhere stops the audit (the CUDA context is not trusted after one) and is reported as a finding.
A captured graph's static inputs are restored afterwards; its outputs hold that input's answer again.
"""
from __future__ import annotations

from typing import Any, Callable

from graphlab.audit.baked import explain
from graphlab.audit.compare import snapshot
from graphlab.audit.draws import Draws, run_draws
from graphlab.audit.findings import AuditReport, Finding, Location
from graphlab.audit.kept import check_kept
from graphlab.audit.padding import check_padding
from graphlab.audit.recorded import recorded_audit
from graphlab.audit.rng import check_random
from graphlab.audit.targets import CacheTarget, GraphTarget, ModelTarget, Target, check_draw, feed_tensors, make_target
from graphlab.clock import Stopwatch
from graphlab.env import has_cuda
from graphlab.errors import BadInputError, PaddingError
from graphlab.graph.export import has_cuda_bindings
from graphlab.mode import stand_in

DEFAULT_DRAWS = 6
#: what a CUDA error says (torch raises torch.AcceleratorError, a RuntimeError, with one of these in its message)
CUDA_ERROR_WORDS = ("CUDA error", "device-side assert", "illegal memory access", "CUBLAS_STATUS", "cuDNN error",
                    "an illegal instruction")


def is_cuda_error(exc: BaseException) -> bool:
    """True for an error the GPU raised (after which the CUDA context cannot be trusted)."""
    if type(exc).__name__ == "AcceleratorError":
        return True
    text = str(exc)
    return isinstance(exc, RuntimeError) and any(w in text for w in CUDA_ERROR_WORDS)


def _cuda_error_finding(exc: BaseException, label: str, stage: str) -> Finding:
    first = " ".join(str(exc).split())[:300]
    return Finding("cuda_error", f"{label}: {type(exc).__name__} during {stage}: {first}", Location())


def _restore(target: Target, saved: Any) -> None:
    if isinstance(target, GraphTarget) and saved is not None:
        feed_tensors(target.graph, saved)
        target.graph.replay()


@stand_in(recorded_audit)
def audit(target: Any, make_inputs: Callable[[int], Any] | None = None, *, eager: Callable[..., Any] | None = None,
          vary: Callable[[int], Any] | None = None, draws: int = DEFAULT_DRAWS, grad_mode: str = "no_grad",
          name: str | None = None) -> AuditReport:
    """Audit `target` for the quiet failures of CUDA graphs (see the module docstring); an `AuditReport`.

    Args:
        target: a model or function (captured by the audit), a captured graph, a `GraphCache`, or a step callable
            that writes a raw graph's static inputs and replays it (give `eager=` with it). In recorded mode: the
            name of a worked example ("baked_scalar", `graphlab.audit.recorded.WORKED_EXAMPLES`).
        make_inputs: `make_inputs(i)` returns `(args, kwargs)` for draw i: tensors and Python scalars. Vary what a
            real call varies (values, sizes within each bucket, scalars): what it holds fixed, the audit cannot see.
        eager: the function a step callable replaces, called with the same inputs.
        vary: `vary(i)` changes state outside the arguments before draw i (an attribute, a buffer); the report says
            "not varied" without it.
        draws: how many draws (2 or more).
        grad_mode: how a model target is captured and run ("no_grad", "inference_mode", "enabled").
        name: what to call the target in the report (default: from the target).

    Raises:
        BadInputError: make_inputs missing or answering something other than (args, kwargs); fewer than 2 draws.
        GPUUnavailableError: a model target without a GPU (a step, a cache's eager backend and a graph stand-in run
            anywhere).
    """
    if make_inputs is None or not callable(make_inputs):
        raise BadInputError("gl.audit needs make_inputs: a function of the draw index returning (args, kwargs), "
                            "e.g. lambda i: ((torch.randn(8, 64, device='cuda'),), {})")
    if not isinstance(draws, int) or draws < 2:
        raise BadInputError(f"draws must be an int of 2 or more (an audit compares draws), got {draws!r}")
    subject = make_target(target, eager, grad_mode)
    label = f"`{name}`" if name else subject.label
    subject.label = label
    gpu = has_cuda() and has_cuda_bindings()
    clock = Stopwatch().start()
    findings: list[Finding] = []
    tried: list[str] = []
    notes: list[str] = []
    not_varied: list[str] = []
    stopped = ""
    kernels = compared = None
    per_draw = None
    ran = 0
    saved = snapshot(subject.graph.inputs) if isinstance(subject, GraphTarget) else None
    stage = "the first draw"
    try:
        if vary is not None:
            vary(0)
        base = check_draw(make_inputs(0), 0)
        stage = "the random-number check"
        randomness = check_random(subject, base)
        findings += randomness.findings
        tried.append("draw 0 twice eagerly and twice through the graph (random numbers)")
        if randomness.random_paths:
            notes.append(f"outputs {', '.join(sorted(randomness.random_paths))} are random: left out of the exact "
                         "replay-vs-eager comparison")
        stage = "the draws (replay vs eager)"
        timing = Stopwatch().start()
        result: Draws = run_draws(subject, make_inputs, draws, vary, randomness.random_paths, stop_at_first=True)
        per_draw = timing.stop() / max(len(result.runs), 1)
        ran = len(result.runs)
        tried.append(f"{ran} draw{'s' if ran != 1 else ''} of make_inputs, replay vs eager on each"
                     + (" (stopped at the first difference)" if ran < draws else "")
                     + f": varied {', '.join(result.varied())}")
        not_varied += result.not_varied()
        stage = "the kept-output check"
        second = result.runs[1].draw if len(result.runs) > 1 else None
        kept = check_kept(subject, result.runs[0].draw, second)
        findings += kept.findings
        notes += kept.notes
        tried.append("one result checked for outputs that share memory, and a result held across the next call")
        padding_found = False
        if isinstance(subject, CacheTarget):
            stage = "the padding check"
            padded = False
            for run in result.runs:
                found, what = check_padding(subject, run.draw)
                if what:
                    padded = True
                    tried.append(what)
                    if found is not None:
                        findings.append(found)
                        padding_found = True
                    break
            if not padded:
                not_varied.append("padding (no draw was padded: vary the sizes within each bucket)")
        else:
            not_varied.append("padding rows (checked for a GraphCache target, which pads)")
        if result.differing and not kept.findings and not padding_found:
            stage = "explaining the first difference"
            noise = subject.captured_draw() if isinstance(subject, ModelTarget) and vary is None else None
            explanation = explain(subject, result, result.differing[-1], gpu=gpu, noise_draw=noise)
            findings += explanation.findings
            notes += explanation.notes
            if explanation.comparison is not None:
                kernels, compared = explanation.comparison.kernels, explanation.comparison.compared
                tried.append(f"a second graph captured at draw {result.differing[-1].index}, compared kernel by kernel "
                             f"with the first ({kernels:,} kernels)")
        if not gpu and not isinstance(subject, ModelTarget):
            not_varied.append("kernel arguments (a second capture needs a CUDA GPU and cuda-bindings)")
    except PaddingError as exc:  # the cache's own check refused a padded bucket: loud, but the audit's answer too
        findings.append(Finding("padding_reaches_rows", f"{label}: the cache refused to pad ({exc})",
                                Location(), evidence={"dim": exc.dim_name, "max_abs_err": exc.max_abs_err}))
    except Exception as exc:
        if not is_cuda_error(exc):
            raise
        stopped = (f"a CUDA error during {stage} ({type(exc).__name__}); the CUDA context cannot be trusted after "
                   "one, so nothing more ran: fix it and audit again in a fresh process")
        findings.append(_cuda_error_finding(exc, label, stage))
        saved = None  # touching the device again is not safe
    _restore(subject, saved)
    return AuditReport(target=label, findings=tuple(findings), tried=tuple(tried), not_varied=tuple(not_varied),
                       draws=ran, stopped=stopped, kernels_compared=compared, kernels=kernels,
                       seconds=clock.stop(), seconds_per_draw=per_draw, notes=tuple(notes))


__all__ = ["CUDA_ERROR_WORDS", "DEFAULT_DRAWS", "audit", "is_cuda_error"]
