"""The conditional-node studies: early exit, a decode loop in one launch, one graph for many batch sizes.
Each is measured live on a GPU and recorded with provenance (`graphlab record --models conditional`).

    >>> from graphlab.studies.conditional import early_exit_study, ConditionalStudy   # doctest: +SKIP
    >>> early_exit_study()               # live on a GPU, from the recording in recorded mode  # doctest: +SKIP

A study is a module of this package that names itself (`STUDY = "early_exit"`, as in
`graphlab.conditional.results.VERDICTS`) and says how the recorder runs it (`run_for_recording`).
Its public names are found here by walking the package on first use, so a new study needs no line
in this file, and `import graphlab.studies.conditional` stays light (no torch until a study loads).
"""
from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType
from typing import Any

from graphlab.conditional.results import ConditionalStudy

#: what every study module defines for the recorder: not a name to look up here
PROTOCOL = ("STUDY", "run_for_recording")


def study_modules() -> dict[str, ModuleType]:
    """Every study module of this package, by its `STUDY` name (importing them imports torch)."""
    found: dict[str, ModuleType] = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "STUDY"):
            found[module.STUDY] = module
    return found


def __getattr__(name: str) -> Any:
    """A study's public name (early_exit_study, EarlyExitGPT, ...) from the study module that exports it."""
    if not name.startswith("__") and name not in PROTOCOL:
        for module in study_modules().values():
            if name in module.__all__:
                return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: the names defined here; each study's own (early_exit_study, ...) come through __getattr__
__all__ = ["PROTOCOL", "ConditionalStudy", "study_modules"]
