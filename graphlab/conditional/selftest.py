"""A quick end-to-end check of every conditional kind by every route, on small tensors (GPU, ~seconds).

    >>> from graphlab.conditional.selftest import self_test
    >>> self_test()                     # doctest: +SKIP
    {'child': {'if': 'ok', 'if_else': 'ok', 'while': 'ok', 'switch': 'ok'}, 'capture': {...}}

Each entry is "ok", "wrong: ..." (the graph ran but gave another answer) or the error's type and
message (it could not be built). The GPU tests call it.
"""
from __future__ import annotations

from typing import Callable

import torch

from graphlab.conditional.api import cond, switch, while_loop
from graphlab.env import require_cuda


def _if(route: str) -> str:
    x = torch.arange(8, dtype=torch.float32, device="cuda")
    acc = torch.zeros(8, device="cuda")
    flag = torch.zeros((), dtype=torch.bool, device="cuda")
    g = cond(flag, lambda: acc.add_(x * 2), before=lambda: flag.copy_(x.sum() > 100), route=route, warmup_calls=1)
    seen = []
    for scale in (1.0, 100.0):
        x.copy_(torch.arange(8, dtype=torch.float32, device="cuda") * scale)
        acc.fill_(1.0)
        g.launch()
        torch.cuda.synchronize()
        seen.append(float(acc[1].item()))
    g.close()
    return "ok" if seen == [1.0, 201.0] else f"wrong: acc[1] {seen}, expected [1.0, 201.0]"


def _if_else(route: str) -> str:
    x = torch.arange(8, dtype=torch.float32, device="cuda")
    out = torch.zeros(8, device="cuda")
    flag = torch.zeros((), dtype=torch.int32, device="cuda")
    g = cond(flag, lambda: out.copy_(x * 2), lambda: out.copy_(x - 1), after=lambda: out.mul_(10), route=route,
             warmup_calls=1)
    seen = []
    for value in (1, 0):
        flag.fill_(value)
        g.launch()
        torch.cuda.synchronize()
        seen.append(float(out[3].item()))
    g.close()
    return "ok" if seen == [60.0, 20.0] else f"wrong: out[3] {seen}, expected [60.0, 20.0]"


def _while(route: str) -> str:
    i = torch.zeros((), dtype=torch.int32, device="cuda")
    n = torch.zeros((), dtype=torch.int32, device="cuda")
    go = torch.zeros((), dtype=torch.bool, device="cuda")
    acc = torch.zeros(4, device="cuda")

    def body() -> None:
        acc.add_(1.0)
        i.add_(1)
        go.copy_(i < n)

    g = while_loop(go, body, before=lambda: go.copy_(i < n), max_iterations=5, route=route, warmup_calls=1)
    seen = []
    for count in (0, 3, 9):  # 9 hits max_iterations=5
        i.zero_()
        n.fill_(count)
        acc.zero_()
        g.launch()
        torch.cuda.synchronize()
        seen.append((float(acc[0].item()), int(g.iterations.item())))
    g.close()
    want = [(0.0, 0), (3.0, 3), (5.0, 5)]
    return "ok" if seen == want else f"wrong: (acc, iterations) {seen}, expected {want}"


def _switch(route: str) -> str:
    index = torch.zeros((), dtype=torch.int64, device="cuda")
    acc = torch.zeros(4, device="cuda")
    g = switch(index, [lambda k=k: acc.add_(10.0 ** k) for k in range(3)], route=route, warmup_calls=1)
    seen = []
    for k in (0, 1, 2, 3, -1):
        index.fill_(k)
        acc.zero_()
        g.launch()
        torch.cuda.synchronize()
        seen.append(float(acc[0].item()))
    g.close()
    want = [1.0, 10.0, 100.0, 0.0, 0.0]
    return "ok" if seen == want else f"wrong: {seen}, expected {want}"


CHECKS: dict[str, Callable[[str], str]] = {"if": _if, "if_else": _if_else, "while": _while, "switch": _switch}


def self_test(routes: tuple[str, ...] = ("child", "capture")) -> dict[str, dict[str, str]]:
    """Build and run a tiny graph of every kind by every route; {route: {kind: "ok" | what went wrong}}."""
    require_cuda("the conditional-node self test")
    report: dict[str, dict[str, str]] = {}
    for route in routes:
        report[route] = {}
        for kind, check in CHECKS.items():
            try:
                report[route][kind] = check(route)
            except Exception as exc:  # noqa: BLE001 - the report is the point
                report[route][kind] = f"{type(exc).__name__}: {str(exc)[:400]}"
            torch.cuda.synchronize()
    return report


__all__ = ["CHECKS", "self_test"]
