"""Progress bars for long work, in notebooks and terminals, and warnings that point at the user's line:
one helper each for every module.

    >>> bar = progress_bar(7, "Capturing graphs", unit="graph")     # a tqdm.auto bar, or None
    >>> if bar is not None: bar.update(1)

Returns None when the caller asked for no bar or tqdm is not installed (work goes on without one).
`TQDM_DISABLE=1` silences every bar (the test suite sets it). Ground floor: imports tqdm lazily.
"""
from __future__ import annotations

from typing import Any


def progress_bar(total: int, desc: str, *, unit: str = "it", show: bool = True, leave: bool = True) -> Any:
    """A `tqdm.auto.tqdm` of `total` steps, or None (not wanted, or no tqdm)."""
    if not show:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, unit=unit, leave=leave)


def warn_user(message: str, category: type[Warning] = UserWarning) -> None:
    """`warnings.warn` pointing at the first caller outside graphlab (the user's line), however deep in graphlab
    the warning was raised: a fixed `stacklevel` points into graphlab's own code when a call goes through it."""
    import importlib.util
    import os
    import sys
    import warnings

    # graphlab's own files, and torch's (a GraphCache is called through nn.Module.__call__)
    inside = [os.path.dirname(os.path.abspath(__file__)) + os.sep]
    spec = importlib.util.find_spec("torch")  # where torch is installed, without importing it
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        inside.append(os.path.abspath(folder) + os.sep)
    level, frame = 2, sys._getframe(1)  # stacklevel 2: warn_user's caller
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(tuple(inside)):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)


__all__ = ["progress_bar", "warn_user"]
