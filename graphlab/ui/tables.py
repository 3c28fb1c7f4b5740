"""Tables for people: `gl.readable(rows)` turns results into a DataFrame a learner can read at a glance.

Columns ending in `_bytes` become MiB (renamed `_MiB`), columns in `_us` / `_ms` / `_s` and other floats get a
fixed number of decimals (never scientific notation: `119497.4`, not `1.19e+05`), dicts and tuples become text,
and nothing is cut with "…": every column and the whole of every cell are shown. Errors (`max_abs_err`) keep
their scientific notation: it is how small they are that matters.

Pure: pandas is imported on first use.
"""
from __future__ import annotations

from typing import Any

__all__ = ["ReadableTable", "readable"]

#: float columns whose size, not digits, is the point (tiny errors): left in scientific notation
_KEEP_SCIENTIFIC = ("err",)


def _text(value: Any) -> Any:
    if isinstance(value, dict):
        return ", ".join(f"{k}: {v}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    return value


class ReadableTable:
    """A table shown in full: HTML in a notebook, aligned text in a terminal or a text export (never a repr
    like `<Styler at 0x...>`). `.data` is the DataFrame (bytes already in MiB), `.style` its Styler."""

    def __init__(self, data: Any, formats: dict[Any, str]):
        self.data, self.formats = data, formats
        self.style = data.style.format(formats, na_rep="-")

    def _repr_html_(self) -> str:
        return self.style.to_html()

    def to_html(self) -> str:
        return self._repr_html_()

    def __str__(self) -> str:
        text = self.data.copy()
        for col, fmt in self.formats.items():
            text[col] = [("-" if v != v else fmt.format(v)) for v in self.data[col]]
        return text.to_string(max_colwidth=None)

    __repr__ = __str__


def readable(rows: Any, index: str | None = None) -> ReadableTable:
    """`rows` (a DataFrame, or a list of dicts) as a table for people: MiB for bytes, fixed decimals, text for
    containers, no truncation; `index` names the column to show as the row labels."""
    import pandas as pd

    df = rows.copy() if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    for col in list(df.columns):
        name = str(col)
        if name.endswith("_bytes") and pd.api.types.is_numeric_dtype(df[col]):
            df[col] = df[col] / 2**20
            df = df.rename(columns={col: name[: -len("_bytes")] + "_MiB"})
        elif df[col].dtype == object:
            df[col] = df[col].map(_text)
    if index is not None:
        df = df.set_index(index)
    formats = {}
    for col in df.columns:
        if pd.api.types.is_float_dtype(df[col]):
            if any(k in str(col) for k in _KEEP_SCIENTIFIC):
                formats[col] = "{:.2g}"
            else:
                big = df[col].abs().max()
                formats[col] = "{:,.0f}" if big == big and big >= 1000 else "{:,.1f}" if big >= 10 else "{:.2f}"
    return ReadableTable(df, formats)
