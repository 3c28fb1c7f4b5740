"""What a learner should not meet in an executed notebook, found in every output.

`output_problems(notebook, recorded)` reads an executed notebook (nbformat JSON as a dict) and returns one line per
problem, naming the cell. It reads every output a person sees: printed text, the text a result shows when it has
nothing richer, HTML (its tables cell by cell, header by header), Markdown, the visible text of drawings, and plotly
figures (titles, axis titles, legend names, annotations, and the data against the axes). It looks for:

- raw Python reprs: dicts, lists and tuples as printed by Python, `torch.Size(...)`, `<... object at 0x...>`;
- numbers not for people: a decimal number with more than 4 significant digits (`28.031738`, `1,221.1`,
  `8.195638656616211e-08`), a time in µs of 100,000 or more, a big number in scientific notation;
- NaN, None or inf shown as a value, True/False in a table cell;
- keys instead of words: snake_case (or graphlab's internal node and block ids) as a table header, an axis title
  or a legend name; node ids (`graph_13_node_8`) or `block_0` anywhere a person reads;
- cut text: "…" without saying how many more, a table cell ending in "...";
- words from the project's history: "seed material", "the lent", "lent H200";
- figures that cannot be read: an axis range that is not finite or leaves data out, two legend entries with the
  same name or the same colour;
- (recorded mode) a figure or drawing without the recorded banner;
- and the older ones: "(output output)", a path of the machine that ran it, a warning that points into graphlab.

`graphlab tour` runs it over every notebook it executes; the notebook tests hold it at zero findings. Pure: it
reads JSON and text only.
"""
from __future__ import annotations

import html
import math
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Iterable

__all__ = ["figure_problems", "output_problems", "text_problems"]

#: phrases from the project's own history a learner cannot know
HISTORY_PHRASES = ("seed material", "the lent", "lent h200")

_DECIMAL = re.compile(r"(?<![\w.,\-])-?(\d{1,3}(?:,\d{3})+|\d+)\.(\d+)(?:e([-+]?\d+))?(?![\w.]|\.\d)")
_TIME_US = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?\s?(?:µs|us)\b")
_DICT = re.compile(r"\{\s*(?:'[^']*'|\"[^\"]*\"|-?\d+)\s*:")
_ITEM = r"(?:'[^']*'|\"[^\"]*\"|-?\d+(?:\.\d+)?(?:e[-+]?\d+)?|True|False|None)"
_LIST = re.compile(r"\[\s*" + _ITEM + r"(?:\s*,\s*" + _ITEM + r")*\s*,?\s*\]|\[\s*[\[({]")
_TUPLE = re.compile(r"\(\s*" + _ITEM + r"\s*,(?:\s*" + _ITEM + r"\s*,?)*\s*\)")
_SIZE = re.compile(r"torch\.Size\(|<[\w.]+ (?:object )?at 0x[0-9a-fA-F]+>")
_MISSING_WORD = re.compile(r"(?<![\w.'\"`])(NaN|nan|None(?! of\b)|-?inf|Infinity)(?![\w'\"`])")
_NODE_ID = re.compile(r"\bgraph_\d+_node_\d+\b|\bblock_\d+\b")
_DOT_DUMP = re.compile(r"^\s*digraph\b[^{\n]*\{", re.M)
_SNAKE = re.compile(r"\b[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]*[A-Za-z0-9]\b")
_BIG_SCIENTIFIC = re.compile(r"\d\.\d+e\+\d+")
_WARNING_INTO_GRAPHLAB = re.compile(r"graphlab/[\w/]+\.py:\d+: \w*Warning")
_KERNEL_PATH = re.compile(r"/ipykernel_\d+/")


def _significant(integer: str, fraction: str) -> int:
    digits = (integer.replace(",", "") + fraction).lstrip("0")
    return len(digits)


def _strip_code(text: str) -> str:
    """Text without `code` spans: Python names and kernel names may be shown as code."""
    return re.sub(r"`[^`\n]*`", "`code`", text)


def text_problems(text: str, where: str) -> list[str]:
    """Problems in text a person reads (a printed line, a table cell, a title)."""
    found = []
    plain = _strip_code(text)
    for match in _DECIMAL.finditer(plain):
        integer, fraction = match.group(1), match.group(2)
        if _significant(integer, fraction) > 4:
            found.append(f"{where}: a number with more than 4 significant digits: {match.group(0)}")
    for match in _TIME_US.finditer(plain):
        if float(match.group(1).replace(",", "")) >= 100_000:
            found.append(f"{where}: a time of 100,000 µs or more shown in µs: {match.group(0)}")
    if _BIG_SCIENTIFIC.search(plain):
        found.append(f"{where}: a number in scientific notation: {_BIG_SCIENTIFIC.search(plain)[0]}")
    for pattern, what in ((_DICT, "a raw dict"), (_LIST, "a raw list"), (_TUPLE, "a raw tuple"),
                          (_SIZE, "a Python object repr")):
        match = pattern.search(plain)
        if match:
            found.append(f"{where}: {what}: {match.group(0)[:60]!r}")
    match = _MISSING_WORD.search(plain)
    if match:
        found.append(f"{where}: {match.group(1)} shown as a value: {_around(plain, match)!r}")
    match = _NODE_ID.search(text)
    if match and not _DOT_DUMP.search(text):  # a raw DOT dump, shown as the artifact it is, names nodes by id
        found.append(f"{where}: an internal id instead of a name: {match.group(0)}")
    for line in text.splitlines():
        if "\u2026" in line and not re.search(r"\d[\d,]* more\b", line):
            found.append(f"{where}: text cut with '…' without saying how many more: {line.strip()[:60]!r}")
    lowered = text.lower()
    for phrase in HISTORY_PHRASES:
        if phrase in lowered:
            found.append(f"{where}: words from the project's history: {phrase!r}")
    if "(output output)" in text:
        found.append(f"{where}: '(output output)'")
    if _KERNEL_PATH.search(text) or re.search(r"(?<![\w.])/(?:work|home|root|tmp)/[\w.-]+/", text):
        found.append(f"{where}: a path of the machine that ran it")
    if _WARNING_INTO_GRAPHLAB.search(text):
        found.append(f"{where}: a warning that points into graphlab, not the cell")
    return found


def _around(text: str, match: re.Match[str]) -> str:
    return text[max(0, match.start() - 25): match.end() + 10].strip()


def label_problems(label: str, where: str) -> list[str]:
    """Problems in a header, an axis title or a legend name: it must be words (with units), not a key."""
    found = []
    plain = re.sub(r"<[^>]+>", " ", _strip_code(label))
    match = _SNAKE.search(plain)
    if match:
        found.append(f"{where}: a key instead of words: {match.group(0)!r}")
    return found + text_problems(label, where)


# -- HTML ----------------------------------------------------------------------------------------------------------
class _Reader(HTMLParser):
    """Collects the visible text of an HTML output: table headers, table cells, and the rest."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.headers: list[str] = []
        self.cells: list[str] = []
        self.row_labels: list[str] = []
        self.text: list[str] = []
        self._skip = 0
        self._cell: list[str] | None = None
        self._cell_tag = ""
        self._in_head = False
        self._code = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        elif tag == "thead":
            self._in_head = True
        elif tag in ("td", "th"):
            self._cell, self._cell_tag = [], tag
        elif tag == "code":  # code is shown as code in cells and in the rest of the text alike
            (self._cell if self._cell is not None else self.text).append("`")
        elif tag in ("br", "p", "div", "li", "tr"):
            self.text.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._skip = max(0, self._skip - 1)
        elif tag == "thead":
            self._in_head = False
        elif tag == "code":
            (self._cell if self._cell is not None else self.text).append("`")
        elif tag in ("td", "th") and self._cell is not None:
            text = re.sub(r"\s+", " ", "".join(self._cell)).strip()
            if self._cell_tag == "th" and self._in_head:
                self.headers.append(text)
            elif self._cell_tag == "th":
                self.row_labels.append(text)
            else:
                self.cells.append(text)
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        if self._cell is not None:
            self._cell.append(data)
        else:
            self.text.append(data)


def html_problems(markup: str, where: str) -> list[str]:
    reader = _Reader()
    reader.feed(markup)
    found = []
    for head in reader.headers:
        if head:
            found += label_problems(head, f"{where}, table header {head[:40]!r}")
    for label in reader.row_labels:
        found += label_problems(label, f"{where}, row label")
        if label in ("True", "False"):
            found.append(f"{where}: a row labelled {label} (say what it means)")
    for cell in reader.cells:
        found += text_problems(cell, f"{where}, table cell")
        if cell in ("True", "False"):
            found.append(f"{where}: {cell} in a table cell (yes or no, or what it means)")
        if cell.endswith("...") or cell.endswith("\u2026"):
            found.append(f"{where}: a table cell cut short: {cell[-40:]!r}")
    found += _header_time_problems(markup, where)
    found += text_problems("".join(reader.text), where)
    return found


def _header_time_problems(markup: str, where: str) -> list[str]:
    """A table whose header says µs and whose column holds 100,000 or more."""
    found = []
    for table in re.findall(r"<table.*?</table>", markup, re.S):
        reader = _Reader()
        reader.feed(table)
        width = len(reader.headers)
        if not width:
            continue
        rows = re.findall(r"<tr.*?</tr>", table.split("</thead>", 1)[-1], re.S)
        for col, head in enumerate(reader.headers):
            if not re.search(r"\(µs\)|\bµs\b|_us\b", head):
                continue
            for row in rows:
                cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)]
                if col < len(cells):
                    value = cells[col].replace(",", "").strip()
                    if re.fullmatch(r"-?\d+(\.\d+)?", value) and float(value) >= 100_000:
                        found.append(f"{where}: {cells[col].strip()} under {head!r}: a time of 100,000 µs or more")
    return found


def svg_problems(svg: str, where: str) -> list[str]:
    texts = [html.unescape(t) for t in re.findall(r"<text[^>]*>(.*?)</text>", svg, re.S)]
    found = []
    for text in texts:
        text = re.sub(r"<[^>]+>", "", text)
        match = _MISSING_WORD.search(text) or _NODE_ID.search(text)
        if match:
            found.append(f"{where}: {match.group(0)!r} in a drawing")
    return found


# -- plotly figures -------------------------------------------------------------------------------------------------
def _title(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("text") or "")
    return str(value or "")


def _axis_names(layout: dict[str, Any]) -> list[str]:
    return sorted(k for k in layout if re.fullmatch(r"[xy]axis\d*", k))


#: trace types drawn without x/y axes
_NO_AXES = ("pie", "table", "sankey", "treemap", "sunburst", "parcoords", "indicator")


def _trace_axis(trace: dict[str, Any], letter: str) -> str:
    ref = trace.get(f"{letter}axis") or letter
    return f"{letter}axis{ref[1:]}"


def _numbers(values: Any) -> list[float]:
    out = []
    if isinstance(values, dict):  # plotly's typed arrays: {"dtype": ..., "bdata": ...}
        return out
    for v in values or []:
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out.append(float(v))
        elif isinstance(v, (list, tuple)):
            out.extend(_numbers(v))
    return out


def figure_problems(figure: dict[str, Any], where: str, recorded: bool = False) -> list[str]:
    """Problems in one plotly figure (its JSON): titles and labels in words, finite ranges that hold the data, one
    name and one colour per legend entry, and (recorded) the recorded banner."""
    layout = figure.get("layout", {}) or {}
    traces = figure.get("data", []) or []
    found = []
    title = _title(layout.get("title"))
    found += text_problems(re.sub(r"<[^>]+>", " ", title), f"{where}, figure title")
    if recorded and "recorded" not in title.lower():
        found.append(f"{where}: a figure in recorded mode without the recorded banner: {title[:60]!r}")
    used = {_trace_axis(t, letter) for t in traces for letter in "xy" if t.get("type", "scatter") not in _NO_AXES}
    for name in sorted(set(_axis_names(layout)) | used):
        axis = layout.get(name) or {}
        label = _title(axis.get("title"))
        if label:
            found += label_problems(label, f"{where}, {name} title {label[:40]!r}")
        found += _range_problems(name, axis, traces, where)
    for annotation in layout.get("annotations", []) or []:
        text = re.sub(r"<[^>]+>", " ", str(annotation.get("text") or ""))
        found += text_problems(text, f"{where}, annotation")
        found += _placement_problems(annotation, layout, traces, f"{where}, annotation {text.strip()[:30]!r}")
    found += _legend_problems(traces, layout, where)
    return found


def _range_problems(name: str, axis: dict[str, Any], traces: list[dict[str, Any]], where: str) -> list[str]:
    letter = name[0]
    values: list[float] = []
    for trace in traces:
        if _trace_axis(trace, letter) != name:
            continue
        if trace.get("type") == "bar" and trace.get("orientation") == "h" and letter == "y":
            continue
        if trace.get("type") == "bar" and trace.get("orientation") != "h" and letter == "x":
            continue
        data = _numbers(trace.get(letter))
        if trace.get("type") == "bar" and trace.get("base") is not None and letter == ("x" if trace.get("orientation") == "h" else "y"):
            base = _numbers(trace.get("base")) or [0.0] * len(data)
            if len(base) == 1:
                base = base * len(data)
            data = [b + d for b, d in zip(base, data)] + base
        values += data
    found = []
    bad = [v for v in values if not math.isfinite(v)]
    if bad:
        found.append(f"{where}: {name} has data that is not finite ({bad[0]})")
    values = [v for v in values if math.isfinite(v)]
    log = axis.get("type") == "log"
    if log and any(v <= 0 for v in values):
        found.append(f"{where}: {name} is a log axis with data at or below 0 (drawn nowhere)")
    rng = axis.get("range")
    if rng and values and axis.get("autorange") not in (True, "reversed"):
        try:
            low, high = sorted(float(r) for r in rng)
        except (TypeError, ValueError):
            return found + [f"{where}: {name} range is not two numbers: {rng!r}"]
        if not (math.isfinite(low) and math.isfinite(high)):
            return found + [f"{where}: {name} range is not finite: {rng!r}"]
        shown = [math.log10(v) for v in values if v > 0] if log else values
        if shown:
            lo, hi = min(shown), max(shown)
            span = (high - low) or 1.0
            if lo < low - 1e-6 * span or hi > high + 1e-6 * span:
                found.append(f"{where}: {name} range {rng!r} leaves data out ({lo:.3g} to {hi:.3g})")
            elif (hi - lo) < 1e-3 * span and span > 3 * max(abs(hi - lo), 1e-12) and len(set(shown)) > 1:
                found.append(f"{where}: {name} range {rng!r} squashes the data into a sliver ({lo:.3g} to {hi:.3g})")
    return found


def _data_extent(name: str, traces: list[dict[str, Any]]) -> list[float]:
    letter = name[0]
    values: list[float] = []
    for trace in traces:
        if _trace_axis(trace, letter) == name:
            values += [v for v in _numbers(trace.get(letter)) if math.isfinite(v)]
    return values


def _placement_problems(item: dict[str, Any], layout: dict[str, Any], traces: list[dict[str, Any]],
                        where: str) -> list[str]:
    """An annotation placed on a data axis far outside the data stretches the axis's automatic range (on a log axis
    plotly reads an annotation's position as a power of ten: y=50 puts it at 10^50)."""
    found = []
    for letter in ("x", "y"):
        ref = str(item.get(f"{letter}ref") or letter)
        if "paper" in ref or "domain" in ref or not isinstance(item.get(letter), (int, float)):
            continue
        name = f"{letter}axis{ref[1:]}"
        axis = layout.get(name) or {}
        data = [v for v in _data_extent(name, traces) if axis.get("type") != "log" or v > 0]
        if not data or axis.get("range"):
            continue
        position = float(item[letter])
        if axis.get("type") == "log":
            low, high = math.log10(min(data)), math.log10(max(data))
            if position < low - 3 or position > high + 3:
                found.append(f"{where}: placed at 10^{position:g} on the log axis {name} (data {min(data):.3g} to "
                             f"{max(data):.3g}): give a log axis the position's log10")
        else:
            low, high = min(data), max(data)
            span = (high - low) or abs(high) or 1.0
            if position < low - 2 * span or position > high + 2 * span:
                found.append(f"{where}: placed at {position:g} on {name}, far outside the data ({low:.3g} to "
                             f"{high:.3g})")
    return found


def _legend_problems(traces: list[dict[str, Any]], layout: dict[str, Any], where: str) -> list[str]:
    if layout.get("showlegend") is False:
        return []
    entries: dict[str, list[Any]] = {}
    colours: dict[str, str] = {}
    found = []
    default = 0
    for trace in traces:
        if trace.get("showlegend") is False or not trace.get("name"):
            if trace.get("showlegend") is not False and not trace.get("name") and len(traces) > 1 and \
                    trace.get("type") not in ("heatmap", "table", "sankey", "treemap", "sunburst", "pie"):
                if trace.get("showlegend") is True:
                    found.append(f"{where}: a legend entry without a name")
            continue
        name = str(trace["name"])
        colour = _colour(trace)
        if colour is None:
            colour, default = f"default #{default}", default + 1
        group = trace.get("legendgroup")
        key = f"{group}\x00{name}" if group else name
        if key in entries:
            found.append(f"{where}: two legend entries named {name!r}")
        entries[key] = [colour]
        found += label_problems(re.sub(r"<[^>]+>", " ", name), f"{where}, legend entry {name[:40]!r}")
        if colour in colours and colours[colour] != name and not _same_family(trace, colours[colour], traces):
            found.append(f"{where}: legend entries {colours[colour]!r} and {name!r} share the colour {colour}")
        colours.setdefault(colour, name)
    return found


def _same_family(trace: dict[str, Any], other_name: str, traces: list[dict[str, Any]]) -> bool:
    """Two entries may share a colour when their line dash or marker symbol tells them apart."""
    other = next((t for t in traces if t.get("name") == other_name), {})
    mine = ((trace.get("line") or {}).get("dash"), (trace.get("marker") or {}).get("symbol"), trace.get("mode"))
    theirs = ((other.get("line") or {}).get("dash"), (other.get("marker") or {}).get("symbol"), other.get("mode"))
    return mine != theirs


def _colour(trace: dict[str, Any]) -> str | None:
    for part in ("marker", "line"):
        colour = (trace.get(part) or {}).get("color")
        if isinstance(colour, str):
            return colour.lower().replace(" ", "")
    if isinstance(trace.get("fillcolor"), str):
        return trace["fillcolor"].lower().replace(" ", "")
    return None


# -- the notebook ------------------------------------------------------------------------------------------------
def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _rich(data: dict[str, Any]) -> bool:
    return any(k in data for k in ("text/html", "image/svg+xml", "text/markdown", "image/png",
                                   "application/vnd.plotly.v1+json", "application/vnd.jupyter.widget-view+json"))


def output_problems(notebook: dict[str, Any], recorded: bool) -> list[str]:
    """Every problem in every output of an executed notebook, one line each, naming the cell."""
    found = []
    for i, cell in enumerate(notebook.get("cells", [])):
        if cell.get("cell_type") == "markdown":
            lowered = _text(cell.get("source", "")).lower()
            found += [f"markdown cell {i}: words from the project's history: {p!r}" for p in HISTORY_PHRASES
                      if p in lowered]
            continue
        for out in cell.get("outputs", []):
            found += _one_output(out, f"cell {i}", recorded)
    return found


def _one_output(out: dict[str, Any], where: str, recorded: bool) -> list[str]:
    kind = out.get("output_type")
    if kind == "stream":
        return text_problems(_text(out.get("text", "")), f"{where} ({out.get('name', 'stream')})")
    if kind == "error":
        return [f"{where}: the cell failed: {out.get('ename')}: {out.get('evalue', '')[:80]}"]
    data = out.get("data", {})
    found = []
    plain = _text(data.get("text/plain", ""))
    if plain and not _rich(data):
        found += text_problems(plain, where)
        if re.match(r"\s*(\{|\(|\[)", plain):
            found.append(f"{where}: a raw dict, tuple or list: {plain[:60]!r}")
    if "text/html" in data:
        found += html_problems(_text(data["text/html"]), where)
    if "text/markdown" in data:
        found += text_problems(_text(data["text/markdown"]), where)
        if "text/html" not in data and plain.startswith("<IPython.core.display"):
            pass
    svg = _text(data.get("image/svg+xml", ""))
    if svg:
        found += svg_problems(svg, where)
        schematic = plain.startswith("PipelineDiagram(")  # a drawing of the service's parts, no measured data
        if recorded and not schematic and "recorded" not in svg.lower():
            found.append(f"{where}: a drawing in recorded mode without the recorded banner: {plain[:60]!r}")
    figure = data.get("application/vnd.plotly.v1+json")
    if figure is not None:
        found += figure_problems(figure, where, recorded)
    return found


def notebook_problems(path: str | Path, recorded: bool) -> list[str]:
    """`output_problems` of an executed notebook file."""
    import json

    return output_problems(json.loads(Path(path).read_text()), recorded)


def summary(problems: Iterable[str]) -> str:
    problems = list(problems)
    return "no findings" if not problems else f"{len(problems)} finding(s):\n" + "\n".join(f"  {p}" for p in problems)
