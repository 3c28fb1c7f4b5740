"""Which modules each torch.compile kernel came from, read from Inductor's own record of what it fused.

    >>> launches = launches_from_provenance(mapping, {"linear": "fc1", "gelu": "act"})   # one compile
    >>> kernel_modules([launches])          # {"cpp_fused_gelu_0": ("act",), ...}: every launch of a name, together
    >>> node_modules(watched.graph, [launches])   # ({"graph_1_node_3": ["fc1", "act"], ...}, how it was matched)

Inductor's provenance tracking (`torch._inductor.config.trace.provenance_tracking_level`) writes, per compile, the
artifact `inductor_provenance_tracking_node_mappings`: `cppCodeToPost` (each kernel launch, "name:handle" in
launch order, to the post-grad FX nodes it fuses, for Triton and C++ kernels alike) and `postToPre` (each post-grad
node to the Dynamo graph's nodes it came from). The Dynamo graph's nodes carry `nn_module_stack`; the innermost
module of each is the module a kernel is credited to (graphlab/watch/inductor_modules.py reads both while a
compile runs). So one fused kernel may list several modules (`blocks.0.fc2`, `blocks.0` for a residual add, `norm`).

Paths are dotted and relative to the compiled module: Dynamo's `L['self'].blocks[0].fc1` is `blocks.0.fc1`; ops
outside every submodule are `(root)`.

Pure: no torch.
"""
from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Sequence

from graphlab.errors import BadInputError

__all__ = ["ROOT", "Launch", "innermost_module", "kernel_modules", "launches_from_provenance", "module_path",
           "node_modules"]

#: the path of ops that no submodule holds
ROOT = "(root)"

#: one kernel launch of a compile: (kernel name, module paths of the FX nodes it fuses)
Launch = tuple[str, tuple[str, ...]]

_BASE = re.compile(r"^(?P<scope>[LG])\[(?P<q>['\"])(?P<name>.*?)(?P=q)\]")
_SUBSCRIPT = re.compile(r"\[(?:(?P<q>['\"])(?P<key>.*?)(?P=q)|(?P<index>-?\d+))\]")
_HANDLE = re.compile(r":\d+$")


def module_path(path: str) -> str:
    """Dynamo's name for a module as a dotted path relative to the compiled module.

    `L['self'].blocks.0.fc1` and `L['self'].blocks[0].fc1` -> `blocks.0.fc1`; `L['self']._modules['head']` ->
    `head`; a module a compiled function reads as a global keeps its name (`G['model'].fc1` -> `model.fc1`); the
    compiled module itself -> `(root)`.
    """
    text = str(path).strip()
    m = _BASE.match(text)
    if m:
        rest = text[m.end():]
        text = (m["name"] + rest) if m["scope"] == "G" else rest
    elif text == "self" or text.startswith("self."):
        text = text[4:]
    text = _SUBSCRIPT.sub(lambda s: "." + (s["key"] if s["key"] is not None else s["index"]), text)
    parts = [p for p in text.split(".") if p and p not in ("_modules",)]
    return ".".join(parts) or ROOT


def innermost_module(stack: Any) -> str:
    """The innermost module of an FX node's `nn_module_stack` ({key: (path, type)}, outermost first), as
    `module_path` writes it; `(root)` for an empty or missing stack."""
    if not stack:
        return ROOT
    values = list(stack.values()) if isinstance(stack, Mapping) else list(stack)
    last = values[-1]
    path = last[0] if isinstance(last, (tuple, list)) and last else last
    return module_path(str(path))


def _names(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    return []


def launches_from_provenance(mapping: Mapping[str, Any], pre_modules: Mapping[str, str],
                             post_modules: Mapping[str, str] | None = None) -> list[Launch]:
    """Every kernel launch of one compile, in launch order, with the modules of the FX nodes it fuses.

    Args:
        mapping: the provenance artifact (its `cppCodeToPost` and `postToPre`).
        pre_modules: Dynamo graph node name -> module path (`innermost_module` of its `nn_module_stack`), in the
            graph's order; modules of a launch are listed in that order.
        post_modules: the post-grad graph's node name -> module path (its nodes keep `nn_module_stack` through
            AOTAutograd): used for a post-grad node that `postToPre` leads to no known Dynamo node.

    A kernel name keeps no ":handle" suffix. A launch whose nodes have no module known lists none.

    Raises:
        BadInputError: `mapping` is not a provenance mapping (no `cppCodeToPost` dict).
    """
    if not isinstance(mapping, Mapping) or not isinstance(mapping.get("cppCodeToPost"), Mapping):
        got = sorted(mapping) if isinstance(mapping, Mapping) else type(mapping).__name__
        raise BadInputError(f"not an Inductor provenance mapping (needs a 'cppCodeToPost' dict), got {got}")
    post_to_pre = mapping.get("postToPre")
    post_to_pre = post_to_pre if isinstance(post_to_pre, Mapping) else {}
    order = {name: i for i, name in enumerate(pre_modules)}
    keyed = []
    for position, (key, posts) in enumerate(mapping["cppCodeToPost"].items()):
        key = str(key)
        handle = key.rsplit(":", 1)[-1] if _HANDLE.search(key) else ""
        keyed.append((int(handle) if handle else position, position, _HANDLE.sub("", key), _names(posts)))
    post_modules = post_modules or {}
    launches: list[Launch] = []
    for _, _, name, posts in sorted(keyed):
        pres: list[str] = []
        direct: list[str] = []
        for post in posts:
            found = [pre for pre in _names(post_to_pre.get(post, [])) if pre in pre_modules]
            for pre in found:
                if pre not in pres:
                    pres.append(pre)
            if not found and post_modules.get(post):
                direct.append(post_modules[post])
        pres.sort(key=lambda p: order.get(p, len(order)))
        modules = tuple(dict.fromkeys([pre_modules[p] for p in pres] + direct))
        launches.append((name, modules))
    return launches


def _check_compiles(compiles: Any) -> list[list[Launch]]:
    if isinstance(compiles, (str, bytes)) or not isinstance(compiles, Iterable):
        raise BadInputError(f"compiles must be a list of launch lists [(kernel name, modules), ...], "
                            f"got {type(compiles).__name__}")
    out = []
    for launches in compiles:
        if isinstance(launches, (str, bytes)) or not isinstance(launches, Iterable):
            raise BadInputError(f"each compile must be a list of (kernel name, modules), got {type(launches).__name__}")
        checked = []
        for launch in launches:
            if (not isinstance(launch, (tuple, list)) or len(launch) != 2 or not isinstance(launch[0], str)
                    or isinstance(launch[1], (str, bytes)) or not isinstance(launch[1], Iterable)):
                raise BadInputError(f"a launch is (kernel name, [module paths]), got {launch!r}")
            checked.append((launch[0], tuple(str(m) for m in launch[1])))
        out.append(checked)
    return out


def kernel_modules(compiles: Iterable[Sequence[Launch]]) -> dict[str, tuple[str, ...]]:
    """Kernel name -> the modules of every launch of that name, in every compile (first seen first)."""
    out: dict[str, dict[str, None]] = {}
    for launches in _check_compiles(compiles):
        for name, modules in launches:
            out.setdefault(name, {}).update(dict.fromkeys(modules))
    return {name: tuple(modules) for name, modules in out.items()}


def node_modules(graph: Any, compiles: Iterable[Sequence[Launch]]) -> tuple[dict[str, list[str]], str]:
    """Node id -> module paths for the kernel nodes of a parsed DOT graph whose kernel Inductor recorded.

    A kernel node is matched by its name (the DOT's function name, `Node.name`). When the graph's kernels of
    recorded names run in exactly the order one compile launched them, each node gets its own launch's modules
    ("by launch"); otherwise (a graph that holds part of a compile, a name several compiles used) each node gets
    every module any launch of its name had ("by name").

    Kernels Inductor did not write (cuBLAS for `extern_kernels.mm`, ATen's attention for
    `aten._scaled_dot_product_efficient_attention`) carry a library's name, not the launch's. In a "by launch"
    match they are placed by where they run: the kernel nodes between two of Inductor's own kernels (or before the
    first, after the last) belong to the compile's other launches between the same two. One node per launch there:
    each its own; otherwise (a library that runs two kernels for one call, e.g. a split-K GEMM and its reduction)
    each node gets the modules of every launch in that stretch. A stretch with no other launch leaves its nodes
    without modules.

    Returns:
        (node id -> module paths, how they were matched: "by launch", "by name" or "no kernel matched").

    Raises:
        BadInputError: `graph` is not a parsed graph (no `kernels()`), or `compiles` is not launch lists.
    """
    kernels_of = getattr(graph, "kernels", None)
    if not callable(kernels_of):
        raise BadInputError(f"node_modules needs a parsed graph (gl.parse_dot, WatchedGraph.graph), "
                            f"got {type(graph).__name__}")
    checked = _check_compiles(compiles)
    by_name = kernel_modules(checked)
    nodes = [n for n in kernels_of() if getattr(n, "name", None) in by_name]
    if not nodes:
        return {}, "no kernel matched"
    names = [n.name for n in nodes]
    wanted = set(names)
    for launches in checked:
        mine = [launch for launch in launches if launch[0] in wanted]
        if [name for name, _ in mine] == names:
            found = {n.id: list(modules) for n, (_, modules) in zip(nodes, mine) if modules}
            found.update(_between_anchors(kernels_of(), wanted, launches))
            return found, "by launch"
    return {n.id: list(by_name[n.name]) for n in nodes if by_name[n.name]}, "by name"


def _stretches(items: Sequence[Any], is_anchor: Any) -> list[list[Any]]:
    """The runs of items between anchors: before the first, between each two, after the last."""
    runs: list[list[Any]] = [[]]
    for item in items:
        if is_anchor(item):
            runs.append([])
        else:
            runs[-1].append(item)
    return runs


def _between_anchors(kernels: Sequence[Any], wanted: set[str], launches: Sequence[Launch]) -> dict[str, list[str]]:
    """Modules for the kernel nodes Inductor did not name, from the launches between the same two named ones."""
    node_runs = _stretches(kernels, lambda n: getattr(n, "name", None) in wanted)
    launch_runs = _stretches(launches, lambda launch: launch[0] in wanted)
    found: dict[str, list[str]] = {}
    for nodes, others in zip(node_runs, launch_runs):
        if not nodes or not others:
            continue
        if len(nodes) == len(others):
            found.update({n.id: list(modules) for n, (_, modules) in zip(nodes, others) if modules})
            continue
        union = list(dict.fromkeys(m for _, modules in others for m in modules))
        if union:
            found.update({n.id: list(union) for n in nodes})
    return found
