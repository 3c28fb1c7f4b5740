"""What torch.compile did, per compiled function: the CUDA graphs it recorded, each re-recording with the shape
that caused it, recompiles, and every skip with torch's own reason and the fix in one line.

    >>> summary = compile_summary(events, watched=seen)      # events: graphlab.watch.compile_log
    >>> summary.functions["decode_step"].recordings          # [CompileEvent, ...] in order
    >>> summary.skips, summary.table(), summary.to_dict()

Built from torch's own records, as plain dicts, so a recording replays them anywhere:
- the `cudagraphs` log channel (`TORCH_LOGS=cudagraphs`): "Recording function=F, mode=M, cuda_graph_id=N,
  inputs: ..." and "Re-recording function=F, mode=M, reason=R" (DEBUG), and "skipping cudagraphs due to R"
  (WARNING; torch also bumps `counters["inductor"]["cudagraph_skips"]`);
- the `recompiles` channel: "Recompiling function F in FILE:LINE / triggered by the following guard failure(s)";
- torch's counters (before/after deltas) and, when a `gl.watch` was open, its graphs (capture time, pool growth,
  the input shapes CUDAGraph Trees read), matched to the "Recording" records in order.
Which of these a torch emits is found out, not assumed: a torch whose log says less gives a shorter summary
(`sources` says what was there).

Pure: no torch.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Sequence

from graphlab.present import Code, Column, Table, count, listing, shape
from graphlab.watch.records import shapes_text

__all__ = ["FIXES", "CompileEvent", "CompileSummary", "FunctionSummary", "clean_message", "compile_summary",
           "event_sentence", "fix_for", "keeps_record", "parse_event", "reason_in_words", "shapes_in", "short_reason"]

# torch 2.13 writes "mode=M, " after the function; torch 2.11 does not
_RECORDING = re.compile(r"(?:\[(?P<cid>[^\]]*)\]\s*)?Recording function=(?P<fn>[^,]+), (?:mode=(?P<mode>[^,]+), )?"
                        r"cuda_graph_id=(?P<gid>\d+)(?:, inputs: (?P<inputs>.*))?", re.S)
_RERECORDING = re.compile(r"(?:\[(?P<cid>[^\]]*)\]\s*)?Re-recording function=(?P<fn>[^,]+), (?:mode=(?P<mode>[^,]+), )?"
                          r"reason=(?P<reason>.*)", re.S)
_SKIP = re.compile(r"skipping cudagraphs? (?:due to|because of) (?P<reason>.*)", re.S | re.I)
_RECOMPILE = re.compile(r"Recompiling function (?P<fn>\S+) in (?P<where>\S+)\s*(?:triggered by the following guard "
                        r"failure\(s\):(?P<reason>.*))?", re.S)
_SIZE = re.compile(r"size=\[([0-9, ]*)\]")

#: (words in torch's reason, the fix in one line), first match wins
FIXES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("0/1 specialization", "0/1 specialisation"), "torch compiles sizes 0 and 1 apart from the others: expect one "
                                                   "more compile for a size of 1, or mark that dimension unbacked "
                                                   "(torch._dynamo.decorators.mark_unbacked(tensor, dim), as torch's "
                                                   "message says)"),
    (("re-recording limit",), "the same function keeps re-recording: give it the same tensors every call (copy new "
                              "data in) or pad to a few sizes; the limit is "
                              "torch._inductor.config.triton.cudagraph_unexpected_rerecord_limit"),
    (("mutated inputs", "mutates", "mutation"), "a compiled function wrote an input in place: mark that tensor static "
                                                "(torch._dynamo.mark_static_address; StaticCache does) or do the write "
                                                "outside the compiled function"),
    (("cpu device", "cpu tensor", "non-cuda", "cpu "), "a CPU tensor reached the compiled function: move it to the "
                                                       "GPU first (or pass a Python int)"),
    (("dynamic shape", "unbacked", "symbolic", "symint"), "shapes vary at run time: pad to a few fixed sizes "
                                                          "(buckets), or torch._dynamo.mark_dynamic only the dim that "
                                                          "varies; every distinct size records its own graph"),
    (("multiple devices", "several devices", "multiple distinct devices"), "keep the compiled function on one GPU"),
    (("incompatible op", "cudagraph-unsafe", "unsafe", "custom op"), "an op that cannot be captured: move it out of "
                                                                     "the compiled function (a graph break)"),
    (("static input data pointer", "data pointer", "static input"), "a tensor torch treats as static came at a new "
                                                                    "address: pass the same tensor every call"),
    (("size mismatch", "rank mismatch", "tensor size", "shape", "size()"), "a new input size: pad to a bucket, or mark the dim dynamic "
                                                          "(torch._dynamo.mark_dynamic) before the first call"),
    (("___check_obj_id", "id_match", "obj_id", "id("), "a different object (a new cache, a new static tensor) reached "
                                                       "the function: reuse one, or expect one compile per object"),
)


_SITE = re.compile(r"(?<![\w.])/\S*?/(?:site|dist)-packages/")


def clean_message(message: str, root: str | None = None) -> str:
    """A record as a recording keeps it: files under `root` (the working directory) and installed packages named
    relative to them, so no path of the machine that made it is stored."""
    if root:
        message = message.replace(root.rstrip("/") + "/", "")
    return _SITE.sub("", message)


def keeps_record(logger: str, message: str) -> bool:
    """False for the source lines Inductor's scheduler prints under each partition's ops (long, said nowhere else)."""
    return not (logger.endswith("scheduler.__cudagraphs") and message.startswith(" " * 8))


def fix_for(reason: str | None) -> str:
    """The fix, in one line, for torch's reason (a skip, a re-recording or a recompile)."""
    text = (reason or "").lower()
    for words, fix in FIXES:
        if any(w in text for w in words):
            return fix
    return "see torch's reason; TORCH_LOGS=cudagraphs,recompiles prints more"


def shapes_in(text: str | None) -> list[list[int]]:
    """The tensor sizes a torch log line lists ("Tensor(size=[1, 1], ...)") in order."""
    return [[int(d) for d in m.split(",") if d.strip()] for m in _SIZE.findall(text or "")]


@dataclass
class CompileEvent:
    """One thing torch.compile did, read from one of its log records.

    kind: "recording", "re-recording", "skip" or "recompile". function: the compiled function's name (None for a
    skip torch did not attribute). reason: torch's own words (re-recording, skip, recompile). input_shapes: the
    tensor sizes the record lists, or those gl.watch saw for the matching graph. capture_ms, pool_bytes: from
    gl.watch's matching graph. fix: one line for a skip, re-recording or recompile.
    """

    kind: str
    function: str | None = None
    compile_id: str | None = None
    mode: str | None = None
    graph_id: int | None = None
    reason: str | None = None
    input_shapes: list[list[int]] | None = None
    capture_ms: float | None = None
    pool_bytes: int | None = None
    message: str = ""

    @property
    def fix(self) -> str | None:
        return None if self.kind == "recording" else fix_for(self.reason)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "fix": self.fix}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CompileEvent:
        return cls(**{k: data.get(k) for k in ("kind", "function", "compile_id", "mode", "graph_id", "reason",
                                               "input_shapes", "capture_ms", "pool_bytes")},
                   message=data.get("message") or "")


def _first_line(text: str) -> str:
    lines = [ln.strip(" -\t") for ln in text.strip().splitlines() if ln.strip(" -\t")]
    return lines[0] if lines else ""


def parse_event(record: dict[str, Any]) -> CompileEvent | None:
    """The event one log record (a dict with at least "message") says, or None for records that say none."""
    message = str(record.get("message") or "")
    cid = record.get("compile_id")
    m = _RERECORDING.search(message)
    if m:
        return CompileEvent("re-recording", m["fn"].strip(), m["cid"] or cid, (m["mode"] or "").strip() or None, None,
                            m["reason"].strip(), None, message=message)
    m = _RECORDING.search(message)
    if m:
        return CompileEvent("recording", m["fn"].strip(), m["cid"] or cid, (m["mode"] or "").strip() or None,
                            int(m["gid"]), None,
                            shapes_in(m["inputs"]) or None, message=message)
    m = _SKIP.search(message)
    if m:
        fn = re.search(r"function (\S+)", m["reason"])
        return CompileEvent("skip", fn.group(1) if fn else record.get("function"), cid, None, None,
                            m["reason"].strip().rstrip("."), None, message=message)
    m = _RECOMPILE.search(message)
    if m:
        return CompileEvent("recompile", m["fn"], cid, None, None, _first_line(m["reason"] or "") or None, None,
                            message=message)
    return None


@dataclass
class FunctionSummary:
    """Everything torch.compile did for one compiled function."""

    function: str
    recordings: list[CompileEvent] = field(default_factory=list)
    rerecordings: list[CompileEvent] = field(default_factory=list)
    recompiles: list[CompileEvent] = field(default_factory=list)
    skips: list[CompileEvent] = field(default_factory=list)

    @property
    def capture_ms(self) -> float | None:
        values = [e.capture_ms for e in self.recordings if e.capture_ms is not None]
        return round(sum(values), 3) if values else None

    @property
    def pool_bytes(self) -> int | None:
        values = [e.pool_bytes for e in self.recordings if e.pool_bytes is not None]
        return int(sum(values)) if values else None

    def varying_shape_lists(self) -> list[list[list[int]]]:
        """Per recording, the input shapes that differ between this function's recordings (weights and other
        fixed inputs left out); all of them when there is one recording."""
        shapes = [e.input_shapes or [] for e in self.recordings]
        if len(shapes) < 2:
            return [s for s in shapes if s]
        width = min(len(s) for s in shapes)
        keep = [i for i in range(width) if len({tuple(s[i]) for s in shapes}) > 1] or list(range(min(width, 1)))
        return [[s[i] for i in keep] for s in shapes]

    def varying_shapes(self) -> list[str]:
        """`varying_shape_lists` as text, one string per recording ("4x1")."""
        return [shapes_text(s) for s in self.varying_shape_lists()]

    def row(self) -> dict[str, Any]:
        return {"function": self.function, "recordings": len(self.recordings),
                "shapes": "; ".join(self.varying_shapes()),
                "re_recordings": len(self.rerecordings), "recompiles": len(self.recompiles), "skips": len(self.skips),
                "capture_ms": self.capture_ms, "pool_bytes": self.pool_bytes}


_COMPILE_ID = re.compile(r"^\s*\[?\d+/\d+\]?:\s*")
_MISMATCH = re.compile(r"tensor '(?P<name>[^']+)' (?P<what>size|stride) mismatch at index (?P<dim>\d+)\.? "
                       r"expected (?P<expected>\d+), actual (?P<actual>\d+)")
_RANGE = re.compile(r"(?P<low>\d+) <= (?P<name>[\w.]+)\.size\(\)\[(?P<dim>\d+)\](?: <= (?P<high>\d+))?")
#: the longest shortened reason shown; `CompileEvent.reason` keeps all of it
SHORT_REASON = 120


def short_reason(reason: str | None) -> str:
    """torch's reason as a person reads it: its first line, without the compile id in front ("0/1: ") and without the
    source comments torch adds after "#"; cut at `SHORT_REASON` characters, saying how many more `event.reason` has.

        >>> short_reason("1/1: 2 <= ids.size()[0] <= 2147483647  # self.values.index_copy_(...)  # cache_utils.py:483")
        '2 <= ids.size()[0] <= 2147483647'
    """
    text = _first_line(reason or "")
    text = _COMPILE_ID.sub("", text).split("  #")[0].split(" # ")[0].strip().rstrip(".")
    if len(text) > SHORT_REASON:
        cut = text[:SHORT_REASON].rsplit(" ", 1)[0]
        return f"{cut} (and {len(text) - len(cut)} more characters: the event's reason has all of it)"
    return text


def reason_in_words(event: CompileEvent) -> str:
    """Why torch did what `event` records, in words (torch's own words are `short_reason`)."""
    reason = event.reason or ""
    m = _MISMATCH.search(reason)
    if m:
        return (f"`{m['name']}` came with {m['what']} {m['actual']} in dimension {m['dim']}, where the code compiled "
                f"before expects {m['expected']}")
    m = _RANGE.search(reason)
    if m:
        return (f"the code compiled before treats dimension {m['dim']} of `{m['name']}` as dynamic for sizes "
                f"{m['low']} and up (torch compiles sizes 0 and 1 apart), and a smaller size came")
    if event.kind == "recompile":
        return "a check (guard) of the code compiled before failed"
    if "data pointer" in reason.lower():
        return "a tensor torch treats as static came at a new address"
    return "torch said why (below)" if reason else "torch gave no reason"


def _unexplained(missing: int) -> str:
    return (f"torch counted {count(missing)} more skip{'s' if missing != 1 else ''} without a log record here: run "
            "with TORCH_LOGS=cudagraphs to see why")


_DID = {"recompile": "compiled again", "re-recording": "recorded its CUDA graph again",
        "skip": "ran without a CUDA graph"}


def event_sentence(event: CompileEvent, names: dict[str, str] | None = None) -> str:
    """One event in a sentence: what torch did, why in words, torch's words (shortened), the fix."""
    who = f"`{event.function}`" if event.function else "a function torch did not name"
    if names and event.function in names:
        who += f" ({names[event.function]})"
    said = short_reason(event.reason)
    words = f" torch's words: `{said}`." if said else ""
    return f"{who} {_DID.get(event.kind, event.kind)}: {reason_in_words(event)}.{words} Fix: {event.fix}."


def _shapes_words(function: FunctionSummary) -> str | None:
    """The input sizes that differ between a function's graphs, said as a list ("1 x 1, 4 x 1 and 16 x 1")."""
    shapes = function.varying_shape_lists()
    if not shapes:
        return None
    if len(shapes) == 1:  # one graph: nothing differs; its first input says which size it was recorded for
        shapes = [shapes[0][:1]]
    return listing("; ".join(shape(s) for s in one) if one else "none" for one in shapes)


@dataclass
class CompileSummary:
    """What torch.compile did while a `watch_compile` block ran (see the module doc)."""

    events: list[CompileEvent]
    counters: dict[str, int] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)

    @property
    def functions(self) -> dict[str, FunctionSummary]:
        out: dict[str, FunctionSummary] = {}
        lists = {"recording": "recordings", "re-recording": "rerecordings", "recompile": "recompiles", "skip": "skips"}
        for e in self.events:
            name = e.function or "(not named by torch)"
            getattr(out.setdefault(name, FunctionSummary(name)), lists[e.kind]).append(e)
        return out

    def of_kind(self, kind: str) -> list[CompileEvent]:
        return [e for e in self.events if e.kind == kind]

    @property
    def skips(self) -> list[CompileEvent]:
        return self.of_kind("skip")

    @property
    def rerecordings(self) -> list[CompileEvent]:
        return self.of_kind("re-recording")

    @property
    def recordings(self) -> list[CompileEvent]:
        return self.of_kind("recording")

    def unexplained_skips(self) -> int:
        """Skips torch counted (`counters["inductor"]["cudagraph_skips"]`) that no log record explained."""
        return max(0, int(self.counters.get("inductor.cudagraph_skips", 0)) - len(self.skips))

    def rows(self) -> list[dict[str, Any]]:
        return [f.row() for f in self.functions.values()]

    def notes(self, names: dict[str, str] | None = None) -> list[str]:
        """One sentence per re-recording, recompile and skip: what torch did, why in words, torch's own words
        (shortened: `event.reason` keeps them whole), the fix. `names`: words for a function's name."""
        lines = [event_sentence(e, names) for e in self.events if e.kind != "recording"]
        missing = self.unexplained_skips()
        if missing:
            lines.append(_unexplained(missing))
        return lines

    def events_table(self, names: dict[str, str] | None = None, *,
                     title: str = "Why torch.compile compiled or recorded again") -> Table:
        """One row per recompile, re-recording and skip, in torch's order: the function, what torch did, why in
        words, torch's own words (shortened: `event.reason` keeps them whole) and the fix in one line."""
        rows = []
        for e in self.events:
            if e.kind == "recording":
                continue
            row = {"function": Code(e.function) if e.function else "not named by torch",
                   "did": _DID.get(e.kind, e.kind), "why": reason_in_words(e),
                   "said": Code(short_reason(e.reason)) if e.reason else None, "fix": e.fix}
            if names is not None:
                row["runs"] = names.get(e.function or "")
            rows.append(row)
        columns = [Column("function", "function", kind="code")]
        if names is not None:
            columns.append(Column("runs", "what it runs", kind="text", missing="not one of the named functions"))
        columns += [Column("did", "what torch did", kind="text"), Column("why", "why, in words", kind="text"),
                    Column("said", "torch's words, shortened", kind="code", missing="torch gave no reason"),
                    Column("fix", "the fix", kind="text")]
        notes = [] if rows else ["torch did not compile again, record again or skip a graph"]
        missing = self.unexplained_skips()
        if missing:
            notes.append(_unexplained(missing))
        if rows:
            notes.append("Each event's `reason` keeps torch's words whole (`summary.rerecordings`, `.skips`, "
                         "`.of_kind(\"recompile\")`).")
        return Table(rows, columns, title=title, notes=notes)

    def table(self, names: dict[str, str] | None = None, *, title: str = "What torch.compile did") -> Table:
        """Per compiled function: the CUDA graphs torch recorded (and the input sizes that differ between them),
        how often it compiled again, recorded again or ran without a graph, capture time and pool growth (from
        gl.watch); under it, one sentence per event. `names`: words for a function's name (a column "runs")."""
        rows, no_graph, not_watched = [], False, False
        for f in self.functions.values():
            row = {"function": Code(f.function), "graphs": len(f.recordings), "inputs": _shapes_words(f),
                   "recompiles": len(f.recompiles), "re_recordings": len(f.rerecordings), "skips": len(f.skips),
                   "capture_ms": f.capture_ms, "pool_bytes": f.pool_bytes}
            if names is not None:
                row["runs"] = names.get(f.function)
            if f.capture_ms is None or f.pool_bytes is None:
                no_graph, not_watched = no_graph or not f.recordings, not_watched or bool(f.recordings)
            rows.append(row)
        why = "; ".join(w for w, on in (("torch recorded no CUDA graph of this function", no_graph),
                                        ("no gl.watch was open while torch recorded (it measures capture time and "
                                         "pool growth)", not_watched)) if on) or "not measured"
        columns = [Column("function", "function", kind="code")]
        if names is not None:
            columns.append(Column("runs", "what it runs", kind="text", missing="not one of the named functions"))
        columns += [Column("graphs", "CUDA graphs torch recorded", kind="count"),
                    Column("inputs", "input sizes (one per graph)", kind="text",
                           missing="torch recorded no CUDA graph of this function"),
                    Column("recompiles", "compiled again", kind="count"),
                    Column("re_recordings", "graphs recorded again", kind="count"),
                    Column("skips", "calls without a graph", kind="count"),
                    Column("capture_ms", "capture time", kind="number", unit="ms", missing=why),
                    Column("pool_bytes", "pool growth", kind="number", factor=1 / 2**20, unit="MiB", missing=why)]
        events = sum(1 for e in self.events if e.kind != "recording")
        notes = [f"Why, event by event: `events_table()` ({count(events)} event{'s' if events != 1 else ''})."
                 if events else "torch did not compile again, record again or skip a graph."]
        missing = self.unexplained_skips()
        if missing:
            notes.append(_unexplained(missing))
        notes.append(f"Read from {listing(self.sources) if self.sources else 'nothing: this torch said nothing'}.")
        return Table(rows, columns, index="function", title=title, notes=notes)

    def __str__(self) -> str:
        parts = [str(self.table())]
        if any(e.kind != "recording" for e in self.events):
            parts.append(str(self.events_table()))
        return "\n\n".join(parts)

    def _repr_html_(self) -> str:
        parts = [self.table()._repr_html_()]
        if any(e.kind != "recording" for e in self.events):
            parts.append(self.events_table()._repr_html_())
        return "".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {"events": [e.to_dict() for e in self.events], "counters": dict(self.counters),
                "sources": list(self.sources)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CompileSummary:
        return cls([CompileEvent.from_dict(e) for e in data.get("events", [])], dict(data.get("counters", {})),
                   list(data.get("sources", [])))


def _watched_recordings(watched: Iterable[Any]) -> list[dict[str, Any]]:
    found = []
    for g in watched or []:
        d = g.to_dict(include_dot=False) if hasattr(g, "to_dict") else dict(g)
        if "compile" in str(d.get("library", "")) and d.get("role") == "recording":
            found.append(d)
    return found


def _frame(compile_id: str | None) -> str | None:
    """"0/1" -> "0" (dynamo's frame id: one per compiled Python function), "[0/1]" too."""
    return compile_id.strip("[]").split("/")[0] if compile_id and "/" in compile_id else None


def _name_by_frame(events: list[CompileEvent]) -> None:
    """CUDAGraph Trees names what it records after Inductor's pieces ("partition_0", "inner"); dynamo's recompile
    records name the Python function. Events of one frame (compile id "F/n") get the function's name."""
    names = {_frame(e.compile_id): e.function for e in events if e.kind == "recompile" and _frame(e.compile_id)}
    for e in events:
        if e.kind in ("recording", "re-recording") and names.get(_frame(e.compile_id)):
            e.mode = e.mode or f"piece {e.function}"
            e.function = names[_frame(e.compile_id)]


def compile_summary(records: Sequence[dict[str, Any]], *, counters: dict[str, int] | None = None,
                    watched: Iterable[Any] | None = None, sources: Sequence[str] = ()) -> CompileSummary:
    """Read torch's log records (dicts with "message", as `compile_log` keeps them) into a `CompileSummary`.

    `watched`: the graphs a `gl.watch` saw meanwhile (WatchedGraph objects or their dicts); torch.compile's
    recordings among them give each "Recording" event its capture time, pool growth and input shapes, in order.
    Where the log has no "Recording" records (a torch that does not log them), each watched recording becomes one.
    """
    events = [e for e in (parse_event(r) for r in records) if e is not None]
    _name_by_frame(events)
    seen = _watched_recordings(watched or [])
    recordings = [e for e in events if e.kind == "recording"]
    kept_sources = list(sources)
    if seen and not recordings:
        for d in seen:
            details = d.get("details") or {}
            events.append(CompileEvent("recording", details.get("function") or "compiled function",
                                       str(details.get("compile_id")) if details.get("compile_id") else None,
                                       None, details.get("tree_graph_id"), None, d.get("input_shapes"),
                                       d.get("capture_ms"), d.get("pool_bytes"), message="seen by gl.watch"))
        kept_sources.append("gl.watch (recordings)")
    else:
        for e, d in zip(recordings, seen):
            e.capture_ms, e.pool_bytes = d.get("capture_ms"), d.get("pool_bytes")
            if d.get("input_shapes"):
                e.input_shapes = d["input_shapes"]
        if seen:
            kept_sources.append("gl.watch (capture time, pool growth, input shapes)")
    # a re-recording is followed by its recording: give it that recording's shapes
    for i, e in enumerate(events):
        if e.kind == "re-recording" and e.input_shapes is None:
            nxt = next((f for f in events[i + 1:] if f.kind == "recording" and f.function == e.function), None)
            if nxt is not None:
                e.input_shapes = nxt.input_shapes
    return CompileSummary(events, dict(counters or {}), kept_sources)
