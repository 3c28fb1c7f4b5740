"""The two ways graphlab puts PyTorch code into conditional bodies, built side by side and measured.

- route "child": every function captured by `gl.capture` as its own torch graph (one shared torch
  pool), placed into the body as a child-graph node;
- route "capture": every function captured straight into its body graph with
  `cudaStreamBeginCaptureToGraph`, torch's allocator kept on a private graph pool.

Both build the early-exit IF/ELSE graph and the greedy-decode WHILE graph of the other studies; the
rows compare build cost (capture, instantiate, pool and executable memory) and launch cost (host,
GPU, wall), and the checks compare each route's result with eager. A route that fails here is kept
with its exact error in `facts` ("child_error" / "capture_error").

    >>> from graphlab.studies.conditional import conditional_route_study
    >>> study = conditional_route_study()         # live on a GPU, recorded otherwise  # doctest: +SKIP
"""
from __future__ import annotations

from typing import Any

import torch

from graphlab.conditional.api import cond, while_loop
from graphlab.conditional.results import ConditionalStudy
from graphlab.mode import stand_in
from graphlab.studies.conditional.common import graph_facts, max_abs_err, recorded, study_conditions, zoo_on_gpu
from graphlab.studies.conditional.decode_loop import GreedyDecoder
from graphlab.studies.conditional.early_exit import EarlyExitGPT
from graphlab.studies.conditional.timing import time_call
from graphlab.zoo import ZooModel

#: this study's name in the "conditional" recording (and in graphlab.conditional.results.VERDICTS)
STUDY = "routes"
ROUTES = ("child", "capture")
EARLY_EXIT = "early exit (IF/ELSE)"
DECODE = "greedy decode (WHILE)"


def _early_exit(zoo: ZooModel, route: str, repeats: int) -> dict[str, Any]:
    s = EarlyExitGPT(zoo.build(device="cuda"), zoo.make_inputs(1, device="cuda")[0])
    graph = cond(s.exit_now, s.take_early, s.run_rest, before=s.head, route=route, name=f"early_exit_{route}")
    errs = []
    for threshold in (0.0, 2.0):
        s.threshold.fill_(threshold)
        s.eager()
        want = s.out.clone()
        s.out.zero_()
        graph.launch()
        torch.cuda.synchronize()
        errs.append(max_abs_err(s.out, want))
    row = {**time_call(graph.launch, repeats=repeats), **graph_facts(graph), "max_abs_err": max(errs),
           "nodes_in_dot": len(graph.graph)}
    graph.close()
    return row


def _decode(zoo: ZooModel, route: str, repeats: int) -> dict[str, Any]:
    d = GreedyDecoder(zoo.build(device="cuda"), zoo.make_inputs(1, device="cuda")[0][:, :8], 48)
    graph = while_loop(d.go, d.step, before=d.check, max_iterations=d.max_new_tokens, route=route,
                       name=f"decode_{route}")
    d.eager()
    want = d.generated()
    d.reset()
    graph.launch()
    torch.cuda.synchronize()
    same = bool(torch.equal(want, d.generated()))
    row = {**time_call(graph.launch, repeats=repeats, warmup_calls=2, setup=d.reset), **graph_facts(graph),
           "tokens_identical": same, "tokens": int(want.shape[1]), "nodes_in_dot": len(graph.graph)}
    graph.close()
    return row


@stand_in(recorded(STUDY))
def conditional_route_study(*, repeats: int = 100) -> ConditionalStudy:
    """Build the early-exit and decode graphs by both routes; compare build and launch costs (module docs).

    In recorded mode this returns the study recorded on the GPU (`graphlab record --models conditional`).
    """
    zoo = zoo_on_gpu("gpt", "conditional_route_study")
    rows: list[dict[str, Any]] = []
    facts: dict[str, Any] = {}
    with torch.no_grad():
        for case, build in ((EARLY_EXIT, _early_exit), (DECODE, _decode)):
            for route in ROUTES:
                try:
                    row = build(zoo, route, repeats)
                except Exception as exc:  # noqa: BLE001 - a route that fails is a result: keep the exact error
                    facts[f"{route}_error"] = f"{case}: {type(exc).__name__}: {exc}"[:600]
                    continue
                rows.append({"variant": f"route {route}", "case": case, "launches": 1, "syncs": 0, **row})
    errs = [r["max_abs_err"] for r in rows if "max_abs_err" in r]
    checks = {"routes_built": sorted({r["route"] for r in rows}),
              "matches_eager": bool(errs) and max(errs) <= 1e-4,
              "tokens_identical": all(r.get("tokens_identical", True) for r in rows)}
    return ConditionalStudy(
        name=STUDY, title="Route 'child' (torch graphs as child nodes) vs route 'capture' (capture into the body)",
        question="Which way of putting PyTorch code into conditional bodies costs less to build and to launch?",
        rows=rows, checks=checks, facts=facts, conditions=study_conditions(repeats=repeats))


def run_for_recording(quick: bool = False) -> ConditionalStudy:
    """The study as `graphlab record --models conditional` runs it (a quarter of the repeats when `quick`)."""
    return conditional_route_study(repeats=25 if quick else 100)


__all__ = ["STUDY", "conditional_route_study", "run_for_recording"]
