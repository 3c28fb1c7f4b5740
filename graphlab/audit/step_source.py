"""Where a user step replaces a static input instead of copying into it: the line, read from the step's source.

Pure: standard library only (`ast`). A step that feeds a raw graph must write new values into the tensors the graph
reads (`static_x.copy_(x)`); one that rebinds the name (`static_x = x` under `global`, `self.static_x = x`,
`state["x"] = x`) leaves the graph reading the old buffer. This finds such assignments: a target that outlives the
call (a `global` or `nonlocal` name, an attribute, an item) given a value built from one of the step's parameters.

    >>> source = "def step(x):\\n    global static_x\\n    static_x = x\\n    g.replay()\\n"
    >>> replaced_inputs(source, first_line=10)
    [Replacement(line=12, target='static_x', value='x')]
"""
from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass


@dataclass(frozen=True)
class Replacement:
    """One assignment that replaces what a graph reads: its line (in the file), the target and the value as code."""

    line: int
    target: str
    value: str


def replaced_inputs(source: str, first_line: int = 1) -> list[Replacement]:
    """The assignments in the first function of `source` that rebind a name, attribute or item that outlives the
    call to a value built from the function's parameters (see the module docstring). `first_line`: the line of the
    source's first line in its file. Source that does not parse gives []."""
    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return []
    func = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))),
                None)
    if func is None or isinstance(func, ast.Lambda):
        return []
    args = func.args
    params = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    params |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    params.discard("self")
    outliving = {name for node in ast.walk(func) if isinstance(node, (ast.Global, ast.Nonlocal)) for name in node.names}
    found = []
    for node in ast.walk(func):
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        used = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
        if not used & params:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if (isinstance(target, ast.Name) and target.id in outliving) or isinstance(target, (ast.Attribute,
                                                                                                 ast.Subscript)):
                found.append(Replacement(first_line + node.lineno - 1, ast.unparse(target), ast.unparse(node.value)))
    return sorted(found, key=lambda r: r.line)


__all__ = ["Replacement", "replaced_inputs"]
