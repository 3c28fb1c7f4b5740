"""Progress bars for long work, in notebooks and terminals: one helper for every module.

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


__all__ = ["progress_bar"]
