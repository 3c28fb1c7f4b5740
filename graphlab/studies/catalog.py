"""What `graphlab record` can make, read from the studies' source, and the recordings they leave.

A study that `graphlab record` can run is a module under graphlab/studies/ (sub-folders too) that defines
`RECORDING = "<name>"` (a string: the experiment and its recording folder) and `def record(out_root, prov)`.
The driver (`graphlab.studies.record.recorders`) imports the studies to run them; this module reads the same
facts with `ast`, without importing anything, so that `graphlab record --help` lists every experiment in a few
milliseconds and without torch. tests/test_recorders.py holds the two lists equal, one to one.

    >>> [(s.name, s.module) for s in listings()][:2]           # doctest: +SKIP
    [('pitfalls', 'graphlab.studies.pitfalls'), ('cache', 'graphlab.studies.cache')]

Pure: standard library and the ground floor only.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from graphlab.errors import RecordingError
from graphlab.mode import recorded_gpu
from graphlab.recordings import Recording, load_recording

STUDIES = Path(__file__).resolve().parent
#: the model zoo's source: its model names are read from the `ZOO` table without importing torch
ZOO_SOURCE = STUDIES.parent / "zoo.py"


@dataclass(frozen=True)
class Listing:
    """One experiment as its source declares it.

    Attributes:
        name: its `RECORDING` (`graphlab record --models NAME`, and the recording's folder name).
        module: the module that records it, e.g. "graphlab.studies.cache".
        summary: the first line of its `record()` docstring.
        by_default: `BY_DEFAULT = True` in the module: `graphlab record` without --models makes it.
    """

    name: str
    module: str
    summary: str
    by_default: bool = False


def _module_name(path: Path) -> str:
    parts = ["graphlab", *path.relative_to(STUDIES.parent).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def read_listing(path: Path) -> Listing | None:
    """The experiment one study module declares, or None when it declares none.

    A module is an experiment when its top level assigns `RECORDING` a string and defines `record`; a module that
    only names a recording it reads (`RECORDING` without `record`) is not one.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    values: dict[str, object] = {}
    record: ast.FunctionDef | None = None
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            values.update({t.id: node.value.value for t in node.targets if isinstance(t, ast.Name)})
        elif isinstance(node, ast.FunctionDef) and node.name == "record":
            record = node
    name = values.get("RECORDING")
    if record is None or not isinstance(name, str):
        return None
    doc = ast.get_docstring(record) or ast.get_docstring(tree) or ""
    return Listing(name, _module_name(path), doc.strip().splitlines()[0] if doc.strip() else "",
                   values.get("BY_DEFAULT") is True)


def listings() -> list[Listing]:
    """Every experiment under graphlab/studies/, those made by default first, then by name."""
    found = [listing for path in sorted(STUDIES.rglob("*.py")) if (listing := read_listing(path)) is not None]
    return sorted(found, key=lambda s: (not s.by_default, s.name))


def zoo_model_names() -> list[str]:
    """The keys of `graphlab.zoo.ZOO`, in order, read from its source (importing the zoo would import torch)."""
    for node in ast.parse(ZOO_SOURCE.read_text(encoding="utf-8")).body:
        target = node.target if isinstance(node, ast.AnnAssign) else (node.targets[0] if isinstance(node, ast.Assign)
                                                                      else None)
        if isinstance(target, ast.Name) and target.id == "ZOO" and isinstance(node.value, ast.Dict):
            return [k.value for k in node.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    return []


def record_help() -> str:
    """The list `graphlab record --help` prints after its options: every recording, one line each."""
    studies = listings()
    width = max(len("<zoo model>"), *(len(s.name) for s in studies)) + 2
    zoo = (f"  {'<zoo model>':<{width}}{', '.join(zoo_model_names())}: the graph at each batch size (DOT, census, "
           f"verified),\n  {'':<{width}}the latency sweep (unless --no-sweep) and a kernel timeline")
    lines = ["made by a bare `graphlab record`, each in a fresh process:", zoo]
    lines += [f"  {s.name:<{width}}{s.summary}" for s in studies if s.by_default]
    lines.append("made only when named (--models NAME ...):")
    lines += [f"  {s.name:<{width}}{s.summary}" for s in studies if not s.by_default]
    return "\n".join(lines)


def open_recording(name: str) -> Recording:
    """The recording `name` of the GPU recorded mode reads; RecordingError naming the command that makes it."""
    try:
        return load_recording(name, gpu=recorded_gpu())
    except RecordingError as exc:
        raise RecordingError(f"no {name!r} recording for {recorded_gpu()} ({exc}); make it on a GPU with "
                             f"`graphlab record --models {name}`") from None


__all__ = ["STUDIES", "ZOO_SOURCE", "Listing", "listings", "open_recording", "read_listing", "record_help",
           "zoo_model_names"]
