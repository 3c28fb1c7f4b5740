"""Limits on a DOT dump read from outside: file size, node count and label length.

Pure (no torch): standard library only.

A dump attached to a bug report or sent by a colleague is untrusted input: a 2 GB file, a million nodes
or a 200 MB label would take minutes and gigabytes before anything is shown. Every path that reads DOT
(`gl.read_dot`, `gl.parse_dot`, `graphlab parse` / `render`, recordings, watched graphs) checks these
limits, cheapest first: the file's size before a byte is read, then a pre-scan that counts node labels
with `str.count` (no tokenising), then the exact count and each label's length while reading. Past a
limit it stops and raises one `DotLimitError` naming the limit, the value found and how to raise it.

The defaults are sized so that the graphs this tool is for read with them: the decode step of an 80-layer
decoder (Llama-3-70B's depth) dumped with the verbose flags (the largest dumps: in `tests/fixtures/h200` a dump
with every flag set is the verbose one, byte for byte), twice over:

    one layer, recorded (`data/recordings/h200/decode/llama-b1.dot`, 4 identical layers,
        the repeated block of `graph.structure`):           44 nodes, 25,123 bytes  ->  571 bytes a node
    one layer of a bf16 Llama-shaped decoder on the H200
        (issue 40: 3,256 nodes at 64 layers; not recorded): 51 nodes (casts the fp32 one has not)
    outside the layers, recorded (`llama-compiled-b1.dot`): 43 nodes at most (embedding, rotary, norm, head)
    80 layers:    80 x 51 + 43 = 4,123 nodes;  x 571 bytes = 2,354,233 bytes
    x 2 headroom (longer bf16 and CUTLASS kernel names, norms or biases a layer more):
                  8,246 nodes, 4,708,466 bytes
    rounded up:  10,000 nodes, 6,000,000 bytes (10,000 nodes of 600 bytes)

A label is at most 5,700 characters: the longest of the recorded decode steps (563, in `llama-b1.dot`) times ten,
rounded up; every recorded label stays under half of it (a test holds it). A dump
at the limits costs little: `graphlab parse` of a 10,000-node verbose decoder dump (5.8 MB) takes 0.6 s and 48 MiB
in all on the project's 2-core machine (bench/README.md, `bench_parse.py --cli --nodes 10000`). A 1M-node or 2 GB file is refused by its size before a
byte is read; with the size limit lifted, the node pre-scan refuses the 1M nodes reading the file a piece at a
time (`graphlab.graph.dot_file`), before a node is made.

Raise them for one call, or for a block (watched graphs, recordings, anything that parses on its own):

    >>> gl.read_dot("huge.dot", limits=gl.DotLimits(max_nodes=2_000_000, max_bytes=None))   # doctest: +SKIP
    >>> with gl.dot_limits(max_nodes=None):                 # None: no limit                  # doctest: +SKIP
    ...     seen[0].graph

Graphs graphlab captures itself (`gl.capture`, `gl.capturing`) come from this process's own driver and
are parsed with no limits (`NO_LIMITS`).
"""
from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator

from graphlab.errors import BadInputError, DotLimitError

#: what the defaults are sized from (the module docstring gives the arithmetic): a recorded decoder layer's nodes
#: and bytes, the nodes outside its layers, a bf16 layer's nodes (issue 40), the depth sized for, the headroom
RECORDED_LAYER_NODES, RECORDED_LAYER_BYTES, OUTSIDE_LAYERS_NODES = 44, 25_123, 43
LAYER_NODES, SIZED_FOR_LAYERS, HEADROOM = 51, 80, 2
#: the longest label of the recorded decode steps (`data/recordings/h200/decode/llama-b1.dot`): the label limit's base
LARGEST_REAL_LABEL_CHARS = 563

#: the pre-scan counts node labels by this text, less the cluster and edge labels (`PRESCAN_NOT_NODES`)
PRESCAN_LABEL = 'label="'
PRESCAN_NOT_NODES = ("subgraph", 'xlabel="', 'headlabel="', 'taillabel="')

#: what each limit is called by the CLI (`graphlab parse --max-dot-bytes ...`)
CLI_FLAGS = {"max_bytes": "--max-dot-bytes", "max_nodes": "--max-dot-nodes", "max_label_chars": "--max-label-chars"}


@dataclass(frozen=True)
class DotLimits:
    """The most a DOT dump may hold before graphlab refuses to read it further. None: no limit.

    Attributes:
        max_bytes: the file's size (for text already in memory: its length in characters).
        max_nodes: nodes, bodies included.
        max_label_chars: characters in one node's label (and in any other quoted string of the dump).
    """

    max_bytes: int | None = 6_000_000
    max_nodes: int | None = 10_000
    max_label_chars: int | None = 5_700

    def __post_init__(self) -> None:
        for name in ("max_bytes", "max_nodes", "max_label_chars"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise BadInputError(f"DotLimits({name}=...) must be a positive int or None (no limit), got {value!r}")

    def raised(self, **changes: int | None) -> DotLimits:
        """These limits with some changed (None: no limit)."""
        return replace(self, **changes)

    # -- the checks: each raises DotLimitError naming the limit and how to raise it ------------------------
    def check_bytes(self, size: int, source: str, what: str = "bytes") -> None:
        if self.max_bytes is not None and size > self.max_bytes:
            raise limit_error("max_bytes", f"{size:,} {what}", self.max_bytes, source)

    def check_nodes(self, count: int, source: str, *, estimate: bool = False, line: int | None = None) -> None:
        if self.max_nodes is not None and count > self.max_nodes:
            found = f"about {count:,} nodes (a pre-scan of the text)" if estimate else f"more than {self.max_nodes:,} nodes"
            raise limit_error("max_nodes", found, self.max_nodes, source, line=line)

    def check_label(self, length: int, source: str, *, line: int | None = None, at_least: bool = False) -> None:
        if self.max_label_chars is not None and length > self.max_label_chars:
            found = f"a label of {'at least ' if at_least else ''}{length:,} characters"
            raise limit_error("max_label_chars", found, self.max_label_chars, source, line=line)

    def prescan_nodes(self, text: str | bytes, source: str) -> None:
        """Refuse a text (or the file's bytes, before decoding) with more node labels than `max_nodes` before
        tokenising it (a few `count`s, about 0.1 s for 150 MB). An estimate: the exact count is checked while
        reading."""
        if self.max_nodes is None:
            return
        raw = isinstance(text, bytes)
        labels = text.count(PRESCAN_LABEL.encode() if raw else PRESCAN_LABEL)  # type: ignore[arg-type]
        self.check_prescan(labels, lambda: sum(text.count(s.encode() if raw else s)  # type: ignore[arg-type]
                                               for s in PRESCAN_NOT_NODES), source)

    def check_prescan(self, labels: int, not_nodes: Callable[[], int], source: str) -> None:
        """The pre-scan's verdict from its count of `PRESCAN_LABEL`; `not_nodes()` counts the labels that are
        no node's (`PRESCAN_NOT_NODES`), asked only when there are more labels than `max_nodes` (the common
        case is one count)."""
        if self.max_nodes is None or labels <= self.max_nodes:
            return
        self.check_nodes(labels - not_nodes(), source, estimate=True)


#: no limit at all (graphs this process captured itself)
NO_LIMITS = DotLimits(max_bytes=None, max_nodes=None, max_label_chars=None)
DEFAULT_LIMITS = DotLimits()

_state = threading.local()


def limit_error(name: str, found: str, limit: int, source: str, *, line: int | None = None) -> DotLimitError:
    flag = CLI_FLAGS[name]
    message = (f"{found}, more than the limit of {limit:,} ({name}): if you trust this dump, raise the limit: "
               f"graphlab parse/render {flag} N (0: none), gl.read_dot(path, limits=gl.DotLimits({name}=N)) "
               f"or `with gl.dot_limits({name}=N):`")
    return DotLimitError(message, source=source, line=line, limit=name)


def current_limits() -> DotLimits:
    """The limits a read uses when none are passed: the defaults, or those of the innermost `dot_limits` block."""
    return getattr(_state, "limits", DEFAULT_LIMITS)


def resolve_limits(limits: DotLimits | None) -> DotLimits:
    """`limits` if given, else `current_limits()`."""
    if limits is None:
        return current_limits()
    if not isinstance(limits, DotLimits):
        raise BadInputError(f"limits must be a gl.DotLimits (or None: the current ones), got {type(limits).__name__}")
    return limits


@contextlib.contextmanager
def dot_limits(limits: DotLimits | None = None, **changes: int | None) -> Iterator[DotLimits]:
    """Within the block (this thread), every DOT read without its own `limits=` uses these.

    `dot_limits(max_nodes=N)` raises one limit from the current ones; `dot_limits(NO_LIMITS)` lifts all.
    """
    before = current_limits()
    chosen = (limits if limits is not None else before).raised(**changes) if changes else (limits or before)
    if not isinstance(chosen, DotLimits):
        raise BadInputError(f"dot_limits takes a gl.DotLimits, got {type(chosen).__name__}")
    _state.limits = chosen
    try:
        yield chosen
    finally:
        _state.limits = before


def limits_from_flags(max_bytes: Any = None, max_nodes: Any = None, max_label_chars: Any = None) -> DotLimits:
    """The CLI's flags (None: the default; 0: no limit) as DotLimits."""
    values = {}
    for name, value in (("max_bytes", max_bytes), ("max_nodes", max_nodes), ("max_label_chars", max_label_chars)):
        if value is None:
            continue
        if value < 0:
            raise BadInputError(f"{CLI_FLAGS[name]} must be 0 (no limit) or more, got {value}")
        values[name] = value or None
    return DEFAULT_LIMITS.raised(**values)


__all__ = ["CLI_FLAGS", "DEFAULT_LIMITS", "DotLimits", "NO_LIMITS", "PRESCAN_LABEL", "PRESCAN_NOT_NODES", "current_limits",
           "dot_limits", "limit_error", "limits_from_flags", "resolve_limits"]
