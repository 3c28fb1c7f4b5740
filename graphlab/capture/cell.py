"""Capture a notebook cell: the engine behind `%%cudagraph`.

CUDA tensors the cell reads are its static inputs; CUDA tensors it binds to names are its static
outputs. In recorded mode (`gl.set_mode`) the cell runs eagerly here and the graph is the one a GPU
recorded for a cell of that name and code (`capture/recorded.py`).
"""
from __future__ import annotations

import ast
import linecache
from typing import Any

import torch

from graphlab.capture.api import CapturedGraph, check_grad_mode, finish, inputs_device
from graphlab.capture.engine import CaptureEngine
from graphlab.capture.options import CaptureOptions
from graphlab.capture.recorded import recorded_cell
from graphlab.capture.tensors import grad_context
from graphlab.env import require_cuda
from graphlab.mode import stand_in


def _names(tree: ast.AST, context: type) -> list[str]:
    """Names the code uses in `context` (ast.Store: assigns; ast.Load: reads), first use first."""
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, context) and node.id not in names:
            names.append(node.id)
    return names


def _assigned_names(tree: ast.AST) -> list[str]:
    return _names(tree, ast.Store)


def _loaded_names(tree: ast.AST) -> list[str]:
    return _names(tree, ast.Load)


@stand_in(recorded_cell)
def capture_cell(code: str, namespace: dict[str, Any], options: CaptureOptions = CaptureOptions(), *,
                 name: str = "cell", filename: str | None = None) -> CapturedGraph:
    """Capture a cell of code run in `namespace` (what `%%cudagraph` does), as `options` say.

    CUDA tensors the code reads from `namespace` are the static inputs (`cg.inputs`, by name); names it
    binds to CUDA tensors are the static outputs (`cg.outputs`), written back to `namespace`.
    Warm-ups run in a copy of the namespace, so the cell's side effects happen once, under capture.
    """
    require_cuda("%%cudagraph")
    check_grad_mode(options.grad_mode)
    filename = filename or f"<cudagraph cell {name}>"
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    tree = ast.parse(code, filename)
    compiled = compile(tree, filename, "exec")
    assigned = _assigned_names(tree)
    input_names = [n for n in _loaded_names(tree)
                   if isinstance(namespace.get(n), torch.Tensor) and namespace[n].is_cuda]
    snapshot = dict(namespace)

    def cuda_outputs(scope: dict[str, Any]) -> dict[str, Any]:
        return {k: scope[k] for k in assigned if k in scope and isinstance(scope[k], torch.Tensor) and scope[k].is_cuda}

    def run_cell(*inputs: Any) -> dict[str, Any]:
        scope = dict(snapshot)
        scope.update(zip(input_names, inputs))
        exec(compiled, scope)
        return cuda_outputs(scope)

    static_inputs = tuple(namespace[n] for n in input_names)
    engine = CaptureEngine(device=inputs_device(static_inputs, options.device), stream=options.stream,
                           pool=options.pool, capture_error_mode=options.capture_error_mode, prefer_filename=filename)
    scope = dict(namespace)
    with grad_context(options.grad_mode):
        engine.warm_up(lambda: exec(compiled, dict(namespace)), options.warmup_calls)
        with engine.capturing():
            exec(compiled, scope)
    for key in assigned:
        if key in scope:
            namespace[key] = scope[key]
    return finish(engine, static_inputs=static_inputs, static_outputs=cuda_outputs(scope), fn=run_cell,
                  options=options, name=name, input_names=tuple(input_names))


__all__ = ["capture_cell"]
