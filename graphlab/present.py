"""The presentation layer: every number, table and label a person reads goes through here.

One set of rules, so that no result type formats on its own:

- **About three significant digits** (`number`): `0.0312`, `3.12`, `31.2`, `312`, `3,120`; counts as integers;
  no trailing zeros (`48`, not `48.0`; `2.2`, not `2.20`).
- **Times with a unit that fits** (`duration`): "312 µs", "5.83 ms", "10.6 s". A table column picks one unit for
  all its cells from its largest value (µs below 10,000 µs, ms below 10,000 ms, then s) and says it in the header:
  "p50 (ms)".
- **Bytes in binary units** (`size`): "512 B", "384 KiB", "2.00 MiB", "1.50 GiB".
- **Errors by their size** (`error`): "1.3e-6", never "1.3113021850585938e-06".
- **Words, not keys**: `header("eager_p50_us")` is "eager p50" with the unit "µs"; `words("pool_keeper")` is
  "pool keeper". Kernel names, module paths and Python names are shown as code (`Code`): backticks in text,
  `<code>` in HTML.
- **Nothing silently missing or cut**: a value that is missing is a dash with a footnote that says why; a table
  that shows fewer rows than it has says how many more and how to see them; no cell is cut.

`Table` is the one table type: HTML in a notebook, aligned text in a terminal and in `print`, `.rows` for code.
`readable(rows, columns=...)` (`gl.readable`) builds one from a list of dicts (or a DataFrame), with columns declared (`Column`) or
inferred from the keys' unit suffixes (`_us`, `_ms`, `_s`, `_bytes`, `_pct`, `_rps`, `_x`, `err`).

Pure: no torch, no pandas (a DataFrame is read through its own methods when one is given).
"""
from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from graphlab.errors import BadInputError

__all__ = [
    "DASH", "Code", "Column", "ShownAsTable", "Table", "count", "duration", "duration_in", "error", "facts", "header", "listing",
    "number", "percent", "ratio", "readable", "shape", "size", "time_unit", "words", "yes_no",
]

#: what a missing value shows as (with a footnote saying why)
DASH = "\u2013"

_TIME_UNITS = (("µs", 1.0), ("ms", 1e3), ("s", 1e6))
_BYTE_UNITS = (("B", 1), ("KiB", 2**10), ("MiB", 2**20), ("GiB", 2**30), ("TiB", 2**40))


# -- single values ----------------------------------------------------------------------------------------------
def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def number(value: float | int | None, digits: int = 3) -> str:
    """A number for people: about `digits` significant digits, thousands separators, no scientific notation
    above 0.001 (below it, "1.2e-4").

        >>> [number(v) for v in (0, 3, 3.0, 0.031234, 3.1234, 31.234, 312.34, 3123.4, 1142547.3, 0.00012, 2.2)]
        ['0', '3', '3', '0.0312', '3.12', '31.2', '312', '3,123', '1,142,547', '1.2e-4', '2.2']
    """
    if _missing(value):
        return DASH
    if isinstance(value, bool):
        return yes_no(value)
    if isinstance(value, int):
        return f"{value:,}"
    value = float(value)
    if math.isinf(value):
        raise BadInputError("an infinite value has no place in a table: say what it means instead (a dash, "
                            "\"never\", \"over the limit\")")
    if value == int(value) and abs(value) < 1e15:
        return f"{int(value):,}"
    magnitude = abs(value)
    if magnitude < 1e-3:
        return error(value)
    if magnitude >= 10 ** (digits - 1):
        return f"{value:,.0f}"
    decimals = digits - 1 - math.floor(math.log10(magnitude))
    text = f"{value:,.{decimals}f}"
    # rounding up can add a digit (9.996 -> "10.00"): take one decimal off
    if len(text.replace(",", "").replace("-", "").replace(".", "").lstrip("0")) > digits and decimals > 0:
        text = f"{value:,.{decimals - 1}f}"
    # no trailing zeros: 0.1 ms measured in 0.1 ms steps reads "0.1", not "0.100" (digits it never had)
    return text.rstrip("0").rstrip(".") if "." in text else text


def count(value: int | float | None) -> str:
    """A count: an integer with thousands separators ("4,127")."""
    return DASH if _missing(value) else f"{int(round(value)):,}"


def error(value: float | None) -> str:
    """A difference or error, by its size: "0", "1.3e-6", "0.012", "1.1".

        >>> error(1.3113021850585938e-06), error(8.195638656616211e-08), error(0.0), error(1.1), error(0.0123)
        ('1.3e-6', '8.2e-8', '0', '1.1', '0.012')
    """
    if _missing(value):
        return DASH
    value = float(value)
    if value == 0:
        return "0"
    if abs(value) >= 0.01:
        return number(value, digits=2)
    mantissa, exponent = f"{value:.1e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


def time_unit(largest_us: float | None) -> tuple[str, float]:
    """The unit a time (or a column of times whose largest is `largest_us`) is shown in: (unit, µs per unit).

        >>> time_unit(9_999), time_unit(10_562_180), time_unit(1_142_547)
        (('µs', 1.0), ('s', 1000000.0), ('ms', 1000.0))
    """
    if _missing(largest_us) or abs(largest_us) < 10_000:
        return _TIME_UNITS[0]
    if abs(largest_us) < 10_000_000:
        return _TIME_UNITS[1]
    return _TIME_UNITS[2]


def duration(value_us: float | None) -> str:
    """One time with the unit that fits it: µs below 1 ms, ms below 1 s, then s (a column of times picks one unit
    for all its cells instead: `time_unit`).

        >>> duration(8.4), duration(312.4), duration(5825.9), duration(1142547), duration(10562180)
        ('8.40 µs', '312 µs', '5.83 ms', '1.14 s', '10.6 s')
    """
    if _missing(value_us):
        return DASH
    magnitude = abs(value_us)
    unit, scale = ("µs", 1.0) if magnitude < 1e3 else ("ms", 1e3) if magnitude < 1e6 else ("s", 1e6)
    return f"{_fixed3(value_us / scale)} {unit}"


def duration_in(value_us: float | None, unit: str) -> str:
    """A time in a given unit ("µs", "ms" or "s"), without the unit: a table cell under "(ms)"."""
    scale = dict(_TIME_UNITS)[unit]
    return DASH if _missing(value_us) else number(value_us / scale)


def _byte_unit(largest: float | None) -> tuple[str, int]:
    if _missing(largest):
        return _BYTE_UNITS[0]
    for unit, scale in reversed(_BYTE_UNITS):
        if abs(largest) >= scale:
            return unit, scale
    return _BYTE_UNITS[0]


def size(value_bytes: float | None) -> str:
    """Bytes in binary units: "512 B", "1.50 KiB", "36.0 MiB", "2.00 GiB".

        >>> size(512), size(1536), size(37748736), size(0)
        ('512 B', '1.50 KiB', '36.0 MiB', '0 B')
    """
    if _missing(value_bytes):
        return DASH
    unit, scale = _byte_unit(value_bytes)
    if unit == "B":
        return f"{int(value_bytes):,} B"
    return f"{_fixed3(value_bytes / scale)} {unit}"


def _fixed3(value: float) -> str:
    """Three significant digits, trailing zeros kept ("2.00", "36.0", "384")."""
    if value == 0:
        return "0"
    decimals = max(0, 2 - math.floor(math.log10(abs(value))))
    text = f"{value:,.{decimals}f}"
    if len(text.replace(",", "").replace(".", "").lstrip("-0")) > 3 and decimals > 0:
        text = f"{value:,.{decimals - 1}f}"
    return text


def ratio(value: float | None) -> str:
    """How many times: "3.46x", "10.4x", "1.00x"."""
    if _missing(value):
        return DASH
    return f"{_fixed3(float(value))}x"


def percent(value_pct: float | None) -> str:
    """A share already in %: "27%", "2.5%", "0.4%", "100%"."""
    if _missing(value_pct):
        return DASH
    value = float(value_pct)
    if value == 0 or abs(value) >= 10:
        return f"{value:,.0f}%"
    return f"{value:.1f}%" if abs(value) >= 0.1 else f"{number(value, 1)}%"


def yes_no(value: Any) -> str:
    """True -> "yes", False -> "no", None -> a dash."""
    return DASH if _missing(value) else ("yes" if value else "no")


def shape(dims: Iterable[int]) -> str:
    """A tensor shape: (8, 64, 512) -> "8 x 64 x 512"; () -> "scalar"."""
    dims = [int(d) for d in dims]
    return " x ".join(str(d) for d in dims) if dims else "scalar"


def listing(items: Iterable[Any], last: str = "and") -> str:
    """[1, 2, 4, 8] -> "1, 2, 4 and 8"; a list said in words, never a Python list."""
    items = [number(i) if isinstance(i, float) else str(i) for i in items]
    if not items:
        return "none"
    if len(items) == 1:
        return items[0]
    return f"{', '.join(items[:-1])} {last} {items[-1]}"


# -- words for keys ----------------------------------------------------------------------------------------------
#: key parts that are written differently in words
_WORDS = {"gpu": "GPU", "cpu": "CPU", "nccl": "NCCL", "kv": "KV", "hf": "HF", "rps": "req/s", "pct": "%",
          "err": "error", "abs": "abs", "mib": "MiB", "gib": "GiB", "kib": "KiB", "dot": "DOT", "id": "id",
          "ids": "ids", "num": "number of", "bs": "batch size", "ms": "ms", "us": "µs", "ns": "ns", "http": "HTTP",
          "io": "I/O", "smem": "shared memory", "sm": "SM", "tp": "TP", "vs": "vs", "qps": "queries/s"}

#: unit suffixes of a key: suffix -> (kind, unit said in the header, factor to the kind's base unit)
_SUFFIXES = (
    ("_us", "time", 1.0), ("_ms", "time", 1e3), ("_ns", "time", 1e-3), ("_s", "time", 1e6),
    ("_seconds", "time", 1e6), ("_bytes", "bytes", 1), ("_mib", "bytes", 2**20), ("_MiB", "bytes", 2**20),
    ("_pct", "percent", 1), ("_rps", "rate", 1), ("_x", "ratio", 1),
)


def words(key: str) -> str:
    """A key in words: "pool_keeper" -> "pool keeper", "gpu_busy" -> "GPU busy"; text that is already words
    (it has a space, or no underscore) comes back as it is.

        >>> words("max_abs_err_vs_eager"), words("nccl_kernels"), words("latency drop (%)")
        ('max abs error vs eager', 'NCCL kernels', 'latency drop (%)')
    """
    if " " in key or "_" not in key:
        return _WORDS.get(key, key) if key.islower() and key in ("gpu", "cpu", "nccl", "kv") else key
    parts = [p for p in key.split("_") if p]
    return " ".join(_WORDS.get(p.lower(), p) for p in parts)


def _split_unit(key: str) -> tuple[str, str | None, float]:
    """("eager_p50_us") -> ("eager_p50", "time", 1.0): the key without its unit suffix, the kind, the factor."""
    for suffix, kind, factor in _SUFFIXES:
        if key.endswith(suffix) and len(key) > len(suffix):
            return key[: -len(suffix)], kind, factor
    return key, None, 1.0


def header(key: str) -> tuple[str, str | None]:
    """(title in words, kind) of a key: "eager_p50_us" -> ("eager p50", "time"), "share_pct" -> ("share", "percent").

    The unit itself is added by the column once it knows its values (a time column picks µs, ms or s)."""
    base, kind, _ = _split_unit(key)
    if kind is None:
        if "err" in key.split("_") or key.endswith("_err") or "_err_" in key:
            kind = "error"
        elif key in ("speedup",) or key.endswith(("_speedup", "_over_largest", "_ratio")):
            kind = "ratio"
    return words(base), kind


# -- code in text --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Code:
    """A kernel name, module path or Python name: `code` in text, <code> in HTML."""

    text: str

    def __str__(self) -> str:
        return f"`{self.text}`"

    def html(self) -> str:
        return f"<code>{html.escape(self.text)}</code>"


# -- columns and tables ----------------------------------------------------------------------------------------------
@dataclass
class Column:
    """One column of a `Table`: which key of each row, its title in words, and what kind of value it holds.

    `kind`: "time" (µs; shown in µs, ms or s by the column's largest value), "bytes" (shown in B..GiB by the largest),
    "count", "number", "ratio" (x), "percent", "rate" (req/s), "error", "bool" (yes/no), "code" (a name shown as code),
    "text", or None to infer from the values. `factor` turns the row's value into the kind's base unit (1000 for a
    time given in ms). `missing` is the footnote for a missing value ("not measured at this size")."""

    key: str
    title: str | None = None
    kind: str | None = None
    factor: float = 1.0
    missing: str = "not measured"
    unit: str | None = None  #: a fixed unit for "number" columns ("tokens/s", "nodes")

    @classmethod
    def infer(cls, key: str, **overrides: Any) -> Column:
        """A column from a key's suffix: "p50_ms" is a time in ms, "pool_bytes" bytes, "share_pct" a percent."""
        base, kind, factor = _split_unit(key)
        title, inferred = header(key)
        column = cls(key=key, title=title, kind=kind or inferred, factor=factor)
        for name, value in overrides.items():
            setattr(column, name, value)
        return column


def _is_code_like(text: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z_][\w.]*(\(\))?", text)) and ("_" in text or "." in text)


def _cell_text(value: Any) -> str:
    """Any value as text without Python reprs: lists said as lists, shapes with x, dicts as "key value"."""
    if _missing(value):
        return DASH
    if isinstance(value, Code):
        return str(value)
    if isinstance(value, bool):
        return yes_no(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return number(value)
    if isinstance(value, tuple) and value and all(isinstance(v, int) for v in value):
        return shape(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        return ", ".join(_cell_text(v) for v in value) if value else DASH
    if isinstance(value, Mapping):
        return ", ".join(f"{words(str(k))} {_cell_text(v)}" for k, v in value.items()) if value else DASH
    return str(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class Table:
    """A table for people. `_repr_html_` in a notebook; `str()` (and `print`) aligned text.

    Args:
        rows: a list of dicts (one per row), or a DataFrame.
        columns: the columns to show, in order: `Column`s, keys (inferred by suffix), or None for every key.
        index: the key whose values label the rows (shown first, as row headers).
        title: a line above the table (what it shows, where it was measured).
        notes: lines under the table (what a column means, why a value is missing).
        limit: show at most this many rows, then "and N more rows" with `more` (how to see them).
    """

    def __init__(self, rows: Any, columns: Sequence[Column | str] | None = None, *, index: str | None = None,
                 title: str = "", notes: Sequence[str] = (), limit: int | None = None, more: str = ""):
        self.rows = _as_rows(rows)
        keys = list(dict.fromkeys(k for row in self.rows for k in row))
        if columns is None:
            columns = keys
        self.columns = [c if isinstance(c, Column) else Column.infer(c) for c in columns]
        unknown = [c.key for c in self.columns if c.key not in keys and self.rows]
        if unknown:
            raise BadInputError(f"no column {unknown[0]!r} in these rows; they have {', '.join(keys)}")
        if index is not None:
            self.columns.sort(key=lambda c: c.key != index)
        self.index = index
        self.title, self.notes = title, list(notes)
        self.limit, self.more = limit, more
        self._units = {c.key: self._unit_of(c) for c in self.columns}

    # what each column shows
    def _values(self, column: Column) -> list[Any]:
        return [row.get(column.key) for row in self.rows]

    def _kind(self, column: Column) -> str:
        if column.kind:
            return column.kind
        values = [v for v in self._values(column) if not _missing(v)]
        if values and all(isinstance(v, bool) for v in values):
            return "bool"
        if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            return "count"
        if values and all(_is_number(v) for v in values):
            return "number"
        return "text"

    def _unit_of(self, column: Column) -> str | None:
        kind = self._kind(column)
        numbers = [abs(v) * column.factor for v in self._values(column) if _is_number(v) and not _missing(v)]
        largest = max(numbers) if numbers else None
        if kind == "time":
            unit = time_unit(largest)[0]
            # times measured in ms or s (hey prints 0.1 ms steps) stay in ms once they reach 1 ms: shown in µs,
            # 1.7 ms would read "1,700 µs", three digits its measurement never had
            if unit == "µs" and column.factor >= 1e3 and largest is not None and largest >= 1e3:
                unit = "ms"
            return unit
        if kind == "bytes":
            return _byte_unit(largest)[0]
        return {"percent": "%", "ratio": "x", "rate": "req/s"}.get(kind, column.unit)

    def header_of(self, column: Column) -> str:
        """The column's header: its title and unit, "p50 (ms)"."""
        title = column.title if column.title is not None else words(column.key)
        unit = self._units[column.key]
        return f"{title} ({unit})" if unit and f"({unit})" not in title else title

    def cell(self, column: Column, value: Any) -> str:
        """One value as its column shows it (without the unit: the header has it)."""
        if _missing(value):
            return DASH
        kind = self._kind(column)
        if not _is_number(value) or kind in ("text", "code"):
            return _cell_text(value) if kind != "code" or isinstance(value, Code) else str(Code(str(value)))
        value = value * column.factor
        unit = self._units[column.key]
        if kind == "time":
            return duration_in(value, unit)
        if kind == "bytes":
            return _fixed3(value / dict(_BYTE_UNITS)[unit]) if unit != "B" else f"{int(value):,}"
        if kind == "count":
            return count(value)
        if kind == "ratio":
            return _fixed3(float(value))
        if kind == "percent":
            return percent(value)[:-1]
        if kind == "error":
            return error(value)
        if kind == "bool":
            return yes_no(value)
        return number(value)

    def _shown(self) -> list[dict[str, Any]]:
        return self.rows if self.limit is None else self.rows[: self.limit]

    def _footnotes(self) -> list[str]:
        notes = list(self.notes)
        missing = {}
        for column in self.columns:
            if any(_missing(v) for v in (row.get(column.key) for row in self._shown())):
                missing.setdefault(column.missing, []).append(self.header_of(column))
        for why, headers in missing.items():
            notes.append(f"{DASH} in {listing(headers)}: {why}.")
        hidden = len(self.rows) - len(self._shown())
        if hidden > 0:
            notes.append(f"and {hidden} more row{'s' if hidden != 1 else ''}" + (f" ({self.more})" if self.more else ""))
        return notes

    # views
    def _grid(self) -> tuple[list[str], list[list[str]]]:
        headers = [self.header_of(c) for c in self.columns]
        body = [[self.cell(c, row.get(c.key)) for c in self.columns] for row in self._shown()]
        return headers, body

    def _repr_html_(self) -> str:
        headers, body = self._grid()
        esc = html.escape
        numeric = [self._kind(c) not in ("text", "code", "bool") for c in self.columns]
        parts = ['<div class="graphlab-table">']
        if self.title:
            parts.append(f'<p style="margin:0 0 4px 0"><b>{_inline_html(self.title)}</b></p>')
        parts.append('<table style="border-collapse:collapse">')
        parts.append("<thead><tr>" + "".join(
            f'<th style="text-align:{"right" if num else "left"};padding:2px 10px;border-bottom:1px solid #999">'
            f"{esc(h)}</th>" for h, num in zip(headers, numeric)) + "</tr></thead><tbody>")
        for cells in body:
            row = []
            for i, (text, num) in enumerate(zip(cells, numeric)):
                tag = "th" if self.columns[i].key == self.index else "td"
                row.append(f'<{tag} style="text-align:{"right" if num else "left"};padding:2px 10px">'
                           f"{_inline_html(text)}</{tag}>")
            parts.append("<tr>" + "".join(row) + "</tr>")
        parts.append("</tbody></table>")
        for note in self._footnotes():
            parts.append(f'<p style="margin:2px 0;font-size:90%;color:#444">{_inline_html(note)}</p>')
        parts.append("</div>")
        return "".join(parts)

    def to_html(self) -> str:
        return self._repr_html_()

    def __str__(self) -> str:
        headers, body = self._grid()
        numeric = [self._kind(c) not in ("text", "code", "bool") for c in self.columns]
        widths = [max([len(h)] + [len(r[i]) for r in body]) for i, h in enumerate(headers)]

        def line(cells: list[str]) -> str:
            return "  ".join(c.rjust(w) if num else c.ljust(w) for c, w, num in zip(cells, widths, numeric)).rstrip()

        out = [self.title] if self.title else []
        out.append(line(headers))
        out.extend(line(r) for r in body)
        out.extend(self._footnotes())
        return "\n".join(out)

    __repr__ = __str__

    def __len__(self) -> int:
        return len(self.rows)

    def column(self, key: str) -> list[Any]:
        """The raw values of one column, for code: `table.column("p50_us")`."""
        return [row.get(key) for row in self.rows]

    def to_pandas(self) -> Any:
        """The raw rows as a DataFrame (pandas needed), unformatted, for your own analysis."""
        import pandas as pd

        frame = pd.DataFrame(self.rows, columns=[c.key for c in self.columns])
        return frame.set_index(self.index) if self.index else frame


def _inline_html(text: str) -> str:
    """Escape `text` for HTML, showing `code` spans as <code>."""
    pieces = re.split(r"(`[^`]+`)", text)
    return "".join(f"<code>{html.escape(p[1:-1])}</code>" if p.startswith("`") and p.endswith("`") and len(p) > 1
                   else html.escape(p) for p in pieces)


def _as_rows(rows: Any) -> list[dict[str, Any]]:
    """A list of dicts from a list of dicts, a DataFrame (its index kept as a column when named) or a mapping of
    mappings."""
    if hasattr(rows, "to_dict") and hasattr(rows, "columns"):
        frame = rows
        if getattr(frame.index, "name", None) is not None or any(n is not None for n in getattr(frame.index, "names", [])):
            frame = frame.reset_index()
        records = frame.to_dict("records")
        return [{str(k): _plain(v) for k, v in r.items()} for r in records]
    if isinstance(rows, Mapping):
        return [{"": str(k), **dict(v)} for k, v in rows.items()]
    return [{str(k): _plain(v) for k, v in dict(r).items()} for r in rows]


def _plain(value: Any) -> Any:
    """NumPy scalars as Python numbers (a DataFrame hands them over)."""
    item = getattr(value, "item", None)
    if callable(item) and type(value).__module__ == "numpy":
        try:
            return item()
        except (TypeError, ValueError):
            return value
    return value


def readable(rows: Any, columns: Sequence[Column | str] | None = None, *, index: str | None = None,
             **options: Any) -> Table:
    """Any rows as a table for people (`gl.readable`): a list of dicts or a DataFrame, columns declared (`Column`)
    or inferred from the keys' unit suffixes; `index` names the key that labels the rows. See `Table` for the
    other options (title, notes, limit, more)."""
    return Table(rows, columns, index=index, **options)


def facts(pairs: Iterable[tuple[str, Any]] | Mapping[str, Any], *, title: str = "", notes: Sequence[str] = ()) -> Table:
    """A two-column table of labelled facts (what, value), each value already in words or a plain value.

        >>> print(facts([("nodes", 47), ("capture", duration(8100))]))
        what     value
        nodes    47
        capture  8.10 ms
    """
    items = pairs.items() if isinstance(pairs, Mapping) else pairs
    rows = [{"what": words(str(k)), "value": v if isinstance(v, str) else _cell_text(v)} for k, v in items]
    return Table(rows, [Column("what", "what", kind="text"), Column("value", "value", kind="text")], index="what",
                 title=title, notes=notes)


def signed(value: float | None, decimals: int = 1) -> str:
    """A difference with its sign, to a fixed resolution (for small gaps around zero, where three significant
    digits would print noise): "+1.2", "-0.3", "0" (anything that rounds to zero).

        >>> signed(1.24), signed(-0.298), signed(-0.00135), signed(12.96), signed(None)
        ('+1.2', '-0.3', '0', '+13.0', '–')
    """
    if _missing(value):
        return DASH
    rounded = round(float(value), decimals)
    if rounded == 0:
        return "0"
    return f"{rounded:+,.{decimals}f}"


class ShownAsTable:
    """A result that shows itself as its `table()`: a table in a notebook (HTML), aligned text in `print()`,
    `str()` and IPython's text display. A results type inherits it and defines `table()`; nothing else formats."""

    def table(self) -> Table:  # pragma: no cover (each results type defines its own)
        raise NotImplementedError

    def __str__(self) -> str:
        return str(self.table())

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))
