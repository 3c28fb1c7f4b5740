"""Why a replay differed from eager at a draw: a Python scalar the graph replays, a static input the step replaced,
or (on a GPU) the kernel arguments that differ between a graph captured at another draw; else the first differing
output and the module that wrote it.

Torch. The explanations that need no second capture run anywhere (CPU tests use a stand-in target); the second
capture and the argument bytes need a GPU with cuda-bindings (`audit/kernel_args.py`).
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any

from graphlab import present
from graphlab.audit.draws import DrawRun, Draws, replay_is_constant
from graphlab.audit.findings import Finding, Location
from graphlab.audit.kernel_args import address_space, graph_launches
from graphlab.audit.launch_diff import LaunchComparison, compare_launches
from graphlab.audit.locate import function_line, module_line, node_module, output_module
from graphlab.audit.step_source import replaced_inputs
from graphlab.audit.targets import StepTarget, Target, argument_name
from graphlab.capture.tensors import flatten
from graphlab.errors import UnsupportedError
from graphlab.graph.kernel_names import describe_kernel


@dataclass
class Explanation:
    """The findings for one differing draw, the launch comparison when one was made, and notes."""

    findings: list[Finding] = field(default_factory=list)
    comparison: LaunchComparison | None = None
    notes: list[str] = field(default_factory=list)


def _leaf(tree: Any, path: str) -> Any:
    return dict(flatten(tree)).get(path)


def scalar_findings(target: Target, run: DrawRun) -> list[Finding]:
    """A finding per Python scalar the replay did not take: its path, the captured value and the draw's."""
    out = []
    fed, captured = target.fed(*run.draw), target.captured_inputs()
    for path in run.scalars_ignored:
        new, old = _leaf(fed, path), _leaf(captured, path) if captured is not None else None
        was = f" (captured as {old!r})" if old is not None else ""
        name = argument_name(path)
        out.append(Finding("baked_value", f"{target.label}: Python scalar {name} is {new!r} at draw "
                                          f"{run.index}, but the replay used the value it was captured with{was}",
                           Location(argument=name, output=run.difference.path if run.difference else ""),
                           evidence={"draw": run.index, "argument": path, "value": repr(new),
                                     "captured": repr(old)}))
    return out


def replaced_finding(target: StepTarget, draws: Draws) -> Finding:
    """The step's replay never changed while eager did: where the step replaces a static input (its source)."""
    line, argument = function_line(target.step), ""
    try:
        source, first = inspect.getsourcelines(target.step)
        found = replaced_inputs("".join(source), first)
    except (OSError, TypeError):
        found = []
    if found:
        file = line.rsplit(":", 1)[0]
        line, argument = f"{file}:{found[0].line}", f"`{found[0].target} = {found[0].value}`"
    return Finding("input_replaced", f"{target.label}: its replay gave the same answer at all {len(draws.runs)} "
                                     "draws while eager's changed: the graph never read the new inputs",
                   Location(argument=argument, line=line), evidence={"draws": len(draws.runs)})


def launch_findings(target: Target, run: DrawRun, comparison: LaunchComparison, spans: list[Any]) -> list[Finding]:
    """A finding per kernel whose launch differs between the two captures (baked words, dimensions), and one for a
    change of structure."""
    out = []
    for change in comparison.changes:
        kernel = describe_kernel(change.a.name).short_name
        module = node_module(spans, change.b.index, target.model) if spans else ""
        line = module_line(target.model, module) if module else ""
        if change.baked:
            word = change.baked[0]
            cause = "baked_address" if change.baked_kind == "address" else "baked_value"
            what = (f"{target.label}: kernel {kernel} was launched with {word.where()} = {word.a:#x} in the graph "
                    f"captured at the first draw and {word.b:#x} at draw {run.index}: {word.reason}")
            argument = word.where()
        else:
            cause, argument = "baked_value", ""
            what = (f"{target.label}: kernel {kernel} is launched differently at draw {run.index} "
                    f"({', '.join(change.changes)}): launch dimensions fixed at capture")
        out.append(Finding(cause, what, Location(output=run.difference.path if run.difference else "",
                                                 argument=argument, node=f"node {change.a.index}", kernel=kernel,
                                                 module=module, line=line),
                           evidence={"draw": run.index, "changes": list(change.changes),
                                     "words": [w.index for w in change.baked]}))
    if comparison.structure:
        out.append(Finding("baked_value", f"{target.label}: {comparison.structure}",
                           Location(output=run.difference.path if run.difference else ""),
                           evidence={"draw": run.index}))
    return out


def second_capture(target: Target, run: DrawRun, noise_draw: Any) -> Explanation:
    """Capture the target at the differing draw and compare its launches with the graph the replay used."""
    explanation = Explanation()
    target.replay(*run.draw)  # the graph that served this draw (a cache's bucket) is the one compared
    graph_a = target.graph_used()
    if graph_a is None:
        return explanation
    made = target.capture_at(*run.draw)
    if made is None:
        return explanation
    graph_b, spans = made
    try:
        launches_a, probe = graph_launches(graph_a)
        launches_b, _ = graph_launches(graph_b)
        again = graph_launches(target.capture_at(*noise_draw)[0])[0] if noise_draw is not None else None
    except UnsupportedError as exc:
        explanation.notes.append(f"argument bytes not read: {exc}")
        return explanation
    explanation.notes.append(probe.note())
    comparison = compare_launches(launches_a, launches_b, address_space(graph_a, graph_b), again)
    explanation.comparison = comparison
    explanation.findings = launch_findings(target, run, comparison, spans)
    return explanation


def explain(target: Target, draws: Draws, run: DrawRun, *, gpu: bool, noise_draw: Any = None) -> Explanation:
    """Why the replay differed at `run` (see the module docstring)."""
    if run.scalars_ignored:
        return Explanation(scalar_findings(target, run))
    if isinstance(target, StepTarget) and replay_is_constant(draws):
        return Explanation([replaced_finding(target, draws)])
    explanation = second_capture(target, run, noise_draw) if gpu else Explanation()
    if not explanation.findings:
        path = run.difference.path if run.difference else ""
        module = output_module(target.model, *run.draw, path) if path else ""
        line = module_line(target.model, module) if module else (
            function_line(target.step) if isinstance(target, StepTarget) else "")
        size = present.error(run.difference.max_abs_err) if run.difference else ""
        explanation.findings.append(Finding(
            "replay_differs", f"{target.label}: at draw {run.index} output {path} differs from eager by up to {size} "
                              f"(its dtype allows {present.error(run.difference.allowed) if run.difference else ''})",
            Location(output=path, module=module, line=line),
            evidence={"draw": run.index, "max_abs_err": run.difference.max_abs_err if run.difference else None}))
    return explanation


__all__ = ["Explanation", "explain", "launch_findings", "replaced_finding", "scalar_findings", "second_capture"]
