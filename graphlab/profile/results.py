"""A graph's profile: every node's GPU time over several replays, its module, the span and the idle time inside it,
what could not be matched and why, and the critical path with a what-if.

Pure: standard library and the pure modules of graphlab.graph and graphlab.profile; pandas only inside
`to_pandas`. Every view is a `present.Table` (kernel names and module paths as labels, times in µs, ms or s, shares
in %). Built from the replays' events by `build_profile`, or read back from a recording by `gl.load(Profile,
entry="gpt_b64")` (`Profile.from_recording`: the graph is the recording's DOT of the same key).

The `profile` recording (`graphlab record --models profile`) holds, per graph "<model>_b<batch>", a `Profile` and
its raw events (`ProfileEvents`, "events_<model>_b<batch>"), one raw profiler trace (`ChromeTrace`,
"chrome_mlp_b1") and the checks that ride along (`ProfileChecks`: "attribution_check", "what_if", "errors").

    >>> prof = gl.profile(captured, replays=20)         # doctest: +SKIP
    >>> prof                                             # the span, its idle time, the slowest nodes
    >>> prof.table(top=10), prof.span_us, prof.idle_us   # doctest: +SKIP
    >>> prof.by_module(depth=2)                          # doctest: +SKIP
    >>> prof.critical_path(), prof.what_if_table(0.5)    # doctest: +SKIP
    >>> prof.compare(prof64), prof.compare(prof64, by="module", depth=2)   # doctest: +SKIP
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from graphlab import present
from graphlab.errors import BadInputError
from graphlab.graph.model import CudaGraph, NodeKind
from graphlab.present import Code, Column, Table
from graphlab.profile.critical import CriticalPath, critical_path, what_if
from graphlab.profile.events import replays_from_chrome
from graphlab.profile.match import (BY_COPY_KERNEL, BY_LOOSE_NAME, BY_NODE_ID, BY_SIGNATURE, OUT_OF_ORDER, TIMED_KINDS,
                                    Dag, ReplayMatch, match_replay)
from graphlab.profile.modules import OUTSIDE, ModuleSpan, assign_modules, module_prefix
from graphlab.recordings import made_on
from graphlab.results_types import keep_known, recorded_result
from graphlab.stats import median, percentile
from graphlab.timing.chrome_trace import GpuEvent

#: the version a profile file says it is ("schema": 1, an int, in every file written so far)
SCHEMA = 1

#: how a node's events were found, in words
MATCHED_WORDS = {
    BY_SIGNATURE: "its kernel name, grid and block, in the order the DAG allows",
    BY_NODE_ID: "the node id the trace carries",
    BY_LOOSE_NAME: "its kernel's function name (the template arguments differ)",
    OUT_OF_ORDER: "its kernel name, grid and block, out of the DAG's order",
    BY_COPY_KERNEL: "a copy the driver ran as a kernel",
}


def module_label(path: str) -> Any:
    """A module path as a table shows it: code (`blocks.0.mlp`), or words for the two that are not paths."""
    if path in ("(root)", ""):
        return "the model's own forward"
    if path == OUTSIDE:
        return "outside any module"
    return Code(path)


@dataclass(frozen=True)
class NodeTime:
    """One node's time over the replays (µs; None for a node no replay matched).

    Attributes:
        node_id, kind, label, family: the DOT node (label: the kernel's short name, else its kind).
        modules: the module(s) that launched it, innermost path first (empty when not recorded).
        median_us, p10_us, p90_us: its GPU time over the replays (a body run several times: summed per replay).
        start_us: its median start, from the replay's first node start.
        gap_us: median wait after its last predecessor ended (its start offset when it has none).
        matched_by: how its events were found ("signature", "node id", ...); None when unmatched.
        replays: how many replays it was matched in.
    """

    node_id: str
    kind: str
    label: str
    family: str | None = None
    modules: tuple[str, ...] = ()
    median_us: float | None = None
    p10_us: float | None = None
    p90_us: float | None = None
    start_us: float | None = None
    gap_us: float | None = None
    matched_by: str | None = None
    replays: int = 0

    def to_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out["modules"] = list(self.modules)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NodeTime:
        values = keep_known(cls, data)
        values["modules"] = tuple(values.get("modules", ()))
        return cls(**values)


@recorded_result(entry="events_gpt_b1", recording="profile", fields={"replays": 1, "module_spans": 1},
                 optional=("module_spans",), found_in=("profile/events_*",))
@dataclass(frozen=True)
class ProfileEvents:
    """The raw GPU events of a few replays of one profiled graph, as the profiler gave them, and the module spans
    recorded at its capture: what `build_profile` folds into a `Profile` (the CPU tests re-run the matcher on them).

        >>> ev = gl.load(ProfileEvents, entry="events_gpt_b1")       # doctest: +SKIP
        >>> ev.profile(gl.load_recording("profile").graph("gpt_b1"))  # doctest: +SKIP
    """

    replays: tuple[tuple[GpuEvent, ...], ...]
    module_spans: tuple[ModuleSpan, ...] = ()

    def profile(self, graph: CudaGraph, *, name: str = "graph") -> Profile:
        """These replays matched to `graph` and folded into a `Profile` (modules from the recorded spans)."""
        return build_profile(graph, self.replays, name=name, module_spans=self.module_spans or None)

    def to_dict(self) -> dict[str, Any]:
        return {"replays": [[e.to_dict() for e in r] for r in self.replays],
                "module_spans": [s.to_list() for s in self.module_spans]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProfileEvents:
        return cls(tuple(tuple(GpuEvent.from_dict(e) for e in r) for r in data["replays"]),
                   tuple(ModuleSpan.from_list(s) for s in data.get("module_spans", ())))


@recorded_result(entry="chrome_mlp_b1", recording="profile", fields={"traceEvents": 1, "note": 1},
                 optional=("note",), found_in=("profile/chrome_*",))
@dataclass(frozen=True)
class ChromeTrace:
    """A profiler's Chrome trace as torch.profiler wrote it (GPU and CUDA API events), for the trace parser:
    `replays()` cuts it into one list of `GpuEvent` per graph replay (`replays_from_chrome`)."""

    events: list[dict[str, Any]]
    note: str = ""

    def replays(self, uncorrelated: str = "drop") -> list[list[GpuEvent]]:
        return replays_from_chrome({"traceEvents": self.events}, uncorrelated=uncorrelated)

    def to_dict(self) -> dict[str, Any]:
        return {"traceEvents": self.events, "note": self.note}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ChromeTrace:
        return cls(list(data["traceEvents"]), str(data.get("note", "")))


@recorded_result(entry="gpt_b1", recording="profile", schema=SCHEMA,
                 fields={"name": 1, "replays": 1, "nodes": 1, "span_us": 1, "span_p10_us": 1, "span_p90_us": 1,
                         "busy_us": 1, "unmatched": 1, "extra_events": 1, "extra_names": 1, "conditions": 1,
                         "module_spans": 1, "summary": 1, "critical_path": 1},
                 optional=("unmatched", "extra_events", "extra_names", "conditions", "module_spans", "summary",
                           "critical_path"),
                 found_in=("profile/*_b*",))
@dataclass
class Profile:
    """Where one graph's replay time goes (see the module docstring).

    Attributes:
        name: what was profiled ("gpt b1").
        graph: the graph's DAG.
        replays: replays profiled (their events matched one by one).
        nodes: one `NodeTime` per node, in the DAG's topological order.
        span_us, span_p10_us, span_p90_us: the replay's GPU span (first node start to last node end).
        busy_us: time inside the span when at least one node ran (median); `idle_us` the rest.
        unmatched: reason -> node ids that no replay matched (untimed kinds included, with their reason).
        extra_events: events per replay that no node took (median), and `extra_names` their names.
        conditions: how it was measured (GPU, torch, replays, recorded or live, ...).
    """

    name: str
    graph: CudaGraph
    replays: int
    nodes: list[NodeTime]
    span_us: float
    span_p10_us: float
    span_p90_us: float
    busy_us: float
    unmatched: dict[str, list[str]] = field(default_factory=dict)
    extra_events: float = 0.0
    extra_names: dict[str, int] = field(default_factory=dict)
    conditions: dict[str, Any] = field(default_factory=dict)

    # -- headline numbers -----------------------------------------------------------------------------
    @property
    def idle_us(self) -> float:
        """GPU time inside the span when no node ran: dependency latency and launch gaps."""
        return max(0.0, self.span_us - self.busy_us)

    @property
    def node_sum_us(self) -> float:
        """The summed median time of every matched node (more than the span when branches overlap)."""
        return sum(n.median_us or 0.0 for n in self.nodes)

    def _timed(self) -> list[NodeTime]:
        return [n for n in self.nodes if n.kind in {k.value for k in TIMED_KINDS}]

    @property
    def matched_fraction(self) -> float:
        """Matched kernel, memcpy and memset nodes over all of them (1.0: every one)."""
        timed = self._timed()
        return sum(1 for n in timed if n.matched_by) / len(timed) if timed else 1.0

    @property
    def has_modules(self) -> bool:
        return any(n.modules for n in self.nodes)

    def node(self, node_id: str) -> NodeTime:
        for n in self.nodes:
            if n.node_id == node_id:
                return n
        raise BadInputError(f"{node_id!r} is not a node of {self.name}'s graph")

    def heat(self) -> dict[str, float]:
        """node id -> median GPU µs, for the matched nodes (what `gl.render(graph, heat=profile)` colours)."""
        return {n.node_id: n.median_us for n in self.nodes if n.median_us is not None}

    # -- the critical path --------------------------------------------------------------------------------
    def _model(self) -> tuple[list[str], dict[str, tuple[str, ...]], dict[str, float], dict[str, float]]:
        dag = Dag(self.graph)
        dur = {n.node_id: n.median_us or 0.0 for n in self.nodes}
        gap = {n.node_id: n.gap_us or 0.0 for n in self.nodes}
        in_body = dag.in_body
        order = [n for n in dag.order if n not in in_body]
        for nid in in_body:  # a body's time counts on its owner (the conditional node runs it)
            owner = self.graph.graph(self.graph.node(nid).graph_id).parent_node_id
            while owner in in_body:
                owner = self.graph.graph(self.graph.node(owner).graph_id).parent_node_id
            if owner is not None:
                dur[owner] = dur.get(owner, 0.0) + dur.get(nid, 0.0)
        return order, {n: dag.preds[n] for n in order}, dur, gap

    def critical_path(self) -> CriticalPath:
        """The longest path through the root graph weighted by node times and gaps (bodies count on their owner)."""
        return critical_path(*self._model())

    def what_if(self, changes: Mapping[str, float] | str, factor: float | None = None) -> float:
        """The span (µs) predicted when nodes take `factor` times their time: `what_if("graph_1_node_4", 0.5)`
        or `what_if({"graph_1_node_4": 0.5, ...})` (0.5: twice as fast)."""
        if isinstance(changes, str):
            changes = {changes: 0.5 if factor is None else factor}
        return what_if(*self._model(), changes)

    # -- tables ---------------------------------------------------------------------------------------------
    def rows(self) -> list[dict[str, Any]]:
        """One dict per node (raw numbers, for code): node id, kind, name, family, module, median/p10/p90 µs, start
        µs, share of the node sum, how it was matched."""
        total = self.node_sum_us or 1.0
        return [{"node": n.node_id, "kind": n.kind, "name": n.label, "family": n.family or "",
                 "module": ", ".join(n.modules), "median_us": n.median_us, "p10_us": n.p10_us, "p90_us": n.p90_us,
                 "start_us": n.start_us, "share_pct": None if n.median_us is None else 100.0 * n.median_us / total,
                 "matched_by": n.matched_by or ""} for n in self.nodes]

    def to_pandas(self, *, timed_only: bool = True) -> Any:
        """`rows()` as a pandas DataFrame, in DAG order (node ids in "node": what `node()` and `what_if` take)."""
        import pandas as pd

        return pd.DataFrame([r for r in self.rows() if not timed_only or r["median_us"] is not None])

    def where(self) -> str:
        """Where the profile was measured: the recording's banner, or the GPU and date of a live run."""
        recorded = self.conditions.get("recorded_on") or self.conditions.get("recorded")
        if recorded:
            return str(recorded)
        gpu, date = self.conditions.get("gpu"), str(self.conditions.get("date") or "")[:10]
        return f"measured on {gpu}" + (f" on {date}" if date else "") if gpu else ""

    def _titled(self, what: str) -> str:
        where = self.where()
        if not where:
            return what
        if what.endswith("."):
            return f"{what} {where[0].upper()}{where[1:]}."
        return f"{what}; {where[0].lower()}{where[1:]}"

    def _matched_words(self) -> str:
        timed = self._timed()
        matched = [n for n in timed if n.matched_by]
        ways = Counter(n.matched_by for n in matched)
        if len(matched) == len(timed):
            head = f"all {present.count(len(timed))} GPU nodes matched to their kernel events"
        else:
            head = f"{present.count(len(matched))} of {present.count(len(timed))} GPU nodes matched to their events"
        if len(ways) == 1:
            (how,) = ways
            head += f", each by {MATCHED_WORDS.get(how, how)}"
        elif ways:
            head += " (" + "; ".join(f"{present.count(n)} by {MATCHED_WORDS.get(h, h)}" for h, n in ways.most_common()) + ")"
        return head

    def headline(self) -> str:
        """The profile in one sentence: replays, the GPU span and its idle time, how many nodes were matched."""
        idle_share = 100.0 * self.idle_us / self.span_us if self.span_us else 0.0
        return (f"{self.name}, {present.count(self.replays)} replays: GPU span {present.duration(self.span_us)}, of it "
                f"{present.duration(self.idle_us)} idle ({present.percent(idle_share)}); {self._matched_words()}.")

    def _unmatched_notes(self) -> list[str]:
        return [f"{present.count(len(ids))} node{'s' if len(ids) != 1 else ''} without a time: {reason}."
                for reason, ids in self.unmatched.items()]

    def table(self, top: int | None = None, *, sort: str | None = "median_us", timed_only: bool = True) -> Table:
        """One row per node, slowest first (`sort=None`: the DAG's order): its kernel, the module that launched it,
        its median and p10 / p90 GPU time over the replays, when it starts in the replay and its share of the summed
        node time. `top` shows the first rows only (the note says how many more). Node ids, for `node()` and
        `what_if`, are in `rows()` and `to_pandas()`."""
        rows = [r for r in self.rows() if not timed_only or r["median_us"] is not None]
        if sort:
            rows.sort(key=lambda r: -(r.get(sort) or 0.0))
        shown = [{**r, "name": r["name"], "module": module_label(r["module"]) if r["module"] else None} for r in rows]
        columns = [Column("name", "kernel", kind="text"), Column("module", "module", kind="text",
                                                                  missing="not recorded at capture"),
                   Column("median_us", "median", kind="time", missing="not matched in any replay"),
                   Column("p10_us", "p10", kind="time", missing="not matched in any replay"),
                   Column("p90_us", "p90", kind="time", missing="not matched in any replay"),
                   Column("start_us", "starts at", kind="time", missing="not matched in any replay"),
                   Column("share_pct", "share of node time", kind="percent", missing="not matched in any replay")]
        notes = ["median, p10, p90: the node's GPU time over the replays; starts at: its median start after the "
                 "replay's first node; share of node time: its median over the sum of every node's median.",
                 self._matched_words()[0].upper() + self._matched_words()[1:] + "."]
        notes += self._unmatched_notes()
        order = "slowest first" if sort else "in DAG order"
        return Table(shown, columns, title=self._titled(f"{self.name}: GPU time per node, {order}"), notes=notes,
                     limit=top, more="`prof.table()` shows them all")

    def module_rows(self, depth: int | None = None) -> list[dict[str, Any]]:
        """GPU time by module (cut to `depth` dotted parts), slowest first; a node listing several modules
        (a fused kernel) splits its time evenly between them."""
        total = self.node_sum_us or 1.0
        time: Counter[str] = Counter()
        count: Counter[str] = Counter()
        for n in self.nodes:
            if n.median_us is None:
                continue
            mods = [module_prefix(m, depth) for m in n.modules] or [OUTSIDE]
            for m in mods:
                time[m] += n.median_us / len(mods)
                count[m] += 1
        return [{"module": m or "(root)", "nodes": count[m], "gpu_us": t, "share_pct": 100.0 * t / total}
                for m, t in time.most_common()]

    def by_module(self, depth: int | None = None, top: int | None = None) -> Table:
        """GPU time by module (cut to `depth` dotted parts: `depth=2` adds up everything under `blocks.0`),
        slowest first: the module, its nodes, their summed median GPU time and its share of the node time.
        `.column("module")` gives the module paths, `module_rows()` the raw rows."""
        rows = [{**r, "label": module_label(r["module"])} for r in self.module_rows(depth)]
        columns = [Column("label", "module", kind="text"), Column("nodes", "nodes", kind="count"),
                   Column("gpu_us", "GPU time", kind="time"),
                   Column("share_pct", "share of node time", kind="percent")]
        cut = f", modules cut to {depth} dotted part{'s' if depth != 1 else ''}" if depth else ""
        notes = ["GPU time: the summed median time of the module's nodes per replay (a fused kernel listing several "
                 "modules is split evenly between them)."]
        if any(r["module"] == "(root)" for r in rows):
            notes.append("the model's own forward: nodes launched by the model's forward itself, outside its "
                         "submodules.")
        return Table(rows, columns, title=self._titled(f"{self.name}: GPU time by module{cut}"), notes=notes,
                     limit=top, more="`by_module()` without `top` shows them all")

    def compare(self, *others: Profile, by: str | None = None, depth: int | None = 2) -> Table:
        """This profile beside others. `by=None`: one row per profile with its GPU nodes, span, busy and idle time
        and idle share; `by="module"`: one row per module (cut to `depth`), its GPU time in each profile and the
        last one's over this one's."""
        profiles = (self, *others)
        if by is None:
            rows = [{"name": p.name, "replays": p.replays, "gpu_nodes": len(p._timed()), "span_us": p.span_us,
                     "busy_us": p.busy_us, "idle_us": p.idle_us,
                     "idle_pct": 100.0 * p.idle_us / p.span_us if p.span_us else None} for p in profiles]
            columns = [Column("name", "profile", kind="text"), Column("replays", "replays", kind="count"),
                       Column("gpu_nodes", "GPU nodes", kind="count"), Column("span_us", "GPU span", kind="time"),
                       Column("busy_us", "busy", kind="time"), Column("idle_us", "idle", kind="time"),
                       Column("idle_pct", "idle share of the span", kind="percent")]
            notes = ["GPU span: from the first node's start to the last node's end (median over the replays); busy: "
                     "the time some node ran; idle: the rest, the GPU waiting between nodes."]
            return Table(rows, columns, title=self._titled("GPU span, busy and idle time"), notes=notes)
        if by != "module":
            raise BadInputError(f"compare(by=...) takes None or 'module', not {by!r}")
        times = [{r["module"]: r["gpu_us"] for r in p.module_rows(depth)} for p in profiles]
        modules = list(dict.fromkeys(m for t in times for m in t))
        rows = []
        for m in modules:
            row: dict[str, Any] = {"label": module_label(m)}
            for i, t in enumerate(times):
                row[f"t{i}"] = t.get(m)
            first, last = times[0].get(m), times[-1].get(m)
            row["ratio"] = last / first if first and last is not None else None
            rows.append(row)
        rows.sort(key=lambda r: -(r["t0"] or 0.0))
        columns = [Column("label", "module", kind="text")]
        columns += [Column(f"t{i}", p.name, kind="time", missing="no node of this module")
                    for i, p in enumerate(profiles)]
        columns.append(Column("ratio", f"{profiles[-1].name} / {self.name}", kind="ratio",
                              missing="not in both profiles"))
        cut = f", modules cut to {depth} dotted part{'s' if depth != 1 else ''}" if depth else ""
        return Table(rows, columns, title=self._titled(f"GPU time by module{cut}"),
                     notes=["each profile's summed median GPU time of the module's nodes, per replay."])

    def what_if_table(self, factor: float = 0.5, top: int = 5) -> Table:
        """What the critical-path model predicts for the replay's span if one node ran `factor` times as long (0.5:
        twice as fast), for each of the `top` slowest nodes: its kernel, module and time, the predicted span and
        what it saves."""
        if factor < 0:
            raise BadInputError("what_if_table: a node's time factor cannot be negative (0.5 means twice as fast)")
        path = self.critical_path()
        on_path = set(path.node_ids)
        model_span = path.span_us
        slow = sorted((n for n in self.nodes if n.median_us is not None), key=lambda n: -(n.median_us or 0.0))[:top]
        rows = []
        for n in slow:
            predicted = self.what_if({n.node_id: factor})
            rows.append({"name": n.label, "module": module_label(", ".join(n.modules)) if n.modules else None,
                         "median_us": n.median_us, "on_path": n.node_id in on_path, "predicted_us": predicted,
                         "saved_us": model_span - predicted})
        columns = [Column("name", "kernel", kind="text"),
                   Column("module", "module", kind="text", missing="not recorded at capture"),
                   Column("median_us", "its time", kind="time"),
                   Column("on_path", "on the critical path", kind="bool"),
                   Column("predicted_us", "predicted span", kind="time"), Column("saved_us", "saved", kind="time")]
        speed = "twice as fast" if factor == 0.5 else f"{present.number(factor)} times its time"
        notes = [f"{path.describe()} The model starts each node when its last predecessor ends, plus the gap "
                 f"measured before it; with the measured times it gives {present.duration(model_span)}, against "
                 f"{present.duration(self.span_us)} measured.",
                 "`prof.what_if(node_id, factor)` predicts for any node (node ids are in `prof.rows()`)."]
        return Table(rows, columns, title=self._titled(f"{self.name}: one node {speed}, the predicted span"),
                     notes=notes)

    def summary(self) -> dict[str, Any]:
        """The headline numbers as a dict, for code and recordings (`headline()` says them in words)."""
        timed = self._timed()
        return {"name": self.name, "replays": self.replays, "nodes": len(self.nodes), "gpu_nodes": len(timed),
                "matched": sum(1 for n in timed if n.matched_by), "matched_pct": round(100 * self.matched_fraction, 2),
                "span_us": round(self.span_us, 2), "busy_us": round(self.busy_us, 2), "idle_us": round(self.idle_us, 2),
                "node_sum_us": round(self.node_sum_us, 2),
                "unmatched": {reason: len(ids) for reason, ids in self.unmatched.items()}}

    # -- JSON ------------------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (the graph is not included: a recording keeps its DOT beside it)."""
        return {"schema": SCHEMA, "name": self.name, "replays": self.replays, "span_us": self.span_us,
                "span_p10_us": self.span_p10_us, "span_p90_us": self.span_p90_us, "busy_us": self.busy_us,
                "unmatched": self.unmatched, "extra_events": self.extra_events, "extra_names": self.extra_names,
                "conditions": self.conditions, "nodes": [n.to_dict() for n in self.nodes]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], graph: CudaGraph) -> Profile:
        try:
            nodes = [NodeTime.from_dict(n) for n in data["nodes"]]
            prof = cls(name=str(data["name"]), graph=graph, replays=int(data["replays"]), nodes=nodes,
                       span_us=float(data["span_us"]), span_p10_us=float(data["span_p10_us"]),
                       span_p90_us=float(data["span_p90_us"]), busy_us=float(data["busy_us"]),
                       unmatched={str(k): list(v) for k, v in data.get("unmatched", {}).items()},
                       extra_events=float(data.get("extra_events", 0.0)),
                       extra_names=dict(data.get("extra_names", {})), conditions=dict(data.get("conditions", {})))
        except (KeyError, TypeError, ValueError) as exc:
            raise BadInputError(f"not a profile ({type(exc).__name__}: {exc})") from None
        missing = [n.node_id for n in nodes if n.node_id not in {x.id for x in graph.nodes()}]
        if missing:
            raise BadInputError(f"the profile names nodes its graph does not have: {', '.join(missing[:3])}")
        return prof

    @classmethod
    def from_recording(cls, data: Mapping[str, Any], recording: Any) -> Profile:
        """A profile read by `gl.load(Profile, entry="gpt_b64")`: its graph is the recording's DOT of the same key
        (the profile's name, "gpt b64", with "_" for the space), its conditions say where and when it was
        recorded (`where()` and every title read them)."""
        prof = cls.from_dict(data, recording.graph(str(data["name"]).replace(" ", "_")))
        prof.conditions["recorded"] = recording.banner()
        prof.conditions["recorded_on"] = made_on(recording.provenance, "Recorded")
        return prof

    # -- display -------------------------------------------------------------------------------------------
    def __repr__(self) -> str:
        return f"<Profile {self.headline()}>"

    def overview(self, top: int = 8) -> Table:
        """The headline sentence and the `top` slowest nodes: kernel, module, median GPU time and share."""
        full = self.table(top=top)
        keep = [c for c in full.columns if c.key in ("name", "module", "median_us", "share_pct")]
        notes = ["median: the node's GPU time over the replays; share of node time: its median over the sum of every "
                 "node's median."] + self._unmatched_notes()
        return Table(full.rows, keep, title=self._titled(self.headline()), notes=notes, limit=top,
                     more="`prof.table()` lists them all, with p10 / p90 and start times")

    def __str__(self) -> str:
        return str(self.overview())

    def _repr_html_(self) -> str:
        return self.overview()._repr_html_()


#: the what-if check's cases, in words (the table's column titles)
WHAT_IF_CASES = {"chain": "one stream: three GEMMs in a row",
                 "two_streams": "two streams: two GEMMs in a row, a smaller one beside them"}

#: the what-if check's measures, in the order the table reads them: (key, what, how to show it)
_WHAT_IF_ROWS = (
    ("span_us", "span, measured", "time"),
    ("predicted_span_us", "predicted with mm1 twice as fast", "time"),
    ("measured_span_us", "measured with mm1 on half its work", "time"),
    ("error_pct", "error of the prediction", "percent"),
    ("factor", "mm1's real time factor (half the work)", "ratio"),
    ("predicted_with_factor_us", "predicted with that factor", "time"),
    ("error_with_factor_pct", "error then", "percent"),
)


def what_if_table(checks: Mapping[str, Any], where: str = "") -> Table:
    """The what-if check (`graphlab record --models profile`) as a table, one column per graph: the span measured,
    the span predicted with the GEMM "mm1" twice as fast, the span measured with mm1 really on half its work and
    the prediction's error; then the factor halving the work really gave mm1 and the prediction with that factor."""
    show = {"time": present.duration, "percent": lambda v: f"{'+' if v > 0 else ''}{present.percent(v)}",
            "ratio": present.ratio}
    cases = list(checks)
    rows = []
    for key, what, kind in _WHAT_IF_ROWS:
        row: dict[str, Any] = {"what": what}
        for case in cases:
            value = checks[case].get(key)
            row[case] = None if value is None else show[kind](float(value))
        rows.append(row)
    failed = "; ".join(f"{WHAT_IF_CASES.get(case, case)}: {c['error']}" for case, c in checks.items() if c.get("error"))
    missing = f"the check did not run ({failed})" if failed else "not recorded"
    columns = [Column("what", "", kind="text")]
    columns += [Column(case, WHAT_IF_CASES.get(case, case), kind="text", missing=missing) for case in cases]
    notes = ["error: predicted minus measured, over measured. mm1's real time factor: its time on half its inner "
             "dimension over its full time (halving the work did not halve the time exactly)."]
    title = "Does the what-if predict? One GEMM (mm1) on half its work, predicted and measured"
    return Table(rows, columns, index="what", notes=notes,
                 title=f"{title}; {where[0].lower()}{where[1:]}" if where else title)


@recorded_result(entries=("attribution_check", "what_if", "errors"), recording="profile", optional=("errors",))
@dataclass(frozen=True)
class ProfileChecks(present.ShownAsTable):
    """The checks that ride along the profile recording: module attribution on a model whose modules launch known
    numbers of kernels (`attribution`: expected, found, exact, or the error), the what-if on two graphs of GEMMs
    (`what_if`: per case, the spans predicted and measured; `table()` shows it) and what failed to record (`errors`:
    key -> why; empty when nothing did).

        >>> gl.load(ProfileChecks)                  # the what-if check as a table   # doctest: +SKIP
    """

    attribution: dict[str, Any]
    what_if: dict[str, dict[str, Any]]
    errors: dict[str, str] = field(default_factory=dict)
    #: where and when they were recorded ("Recorded on NVIDIA H200 on 2026-12-02"); "" when not read from one
    where: str = ""

    @property
    def attribution_exact(self) -> bool:
        """True when every node of the check model was attributed to the module that launched it."""
        return bool(self.attribution.get("exact"))

    def table(self) -> Table:
        """The what-if check, one column per graph (`what_if_table`)."""
        return what_if_table(self.what_if, self.where)

    def to_dict(self) -> dict[str, Any]:
        """The recording's entries: {"attribution_check": ..., "what_if": ..., "errors": ...}."""
        return {"attribution_check": self.attribution, "what_if": self.what_if, "errors": self.errors}

    @classmethod
    def from_dict(cls, parts: Mapping[str, Any], where: str = "") -> ProfileChecks:
        return cls(dict(parts["attribution_check"]), {k: dict(v) for k, v in parts["what_if"].items()},
                   {str(k): str(v) for k, v in parts.get("errors", {}).items()}, where)

    @classmethod
    def from_recording(cls, parts: Mapping[str, Any], recording: Any) -> ProfileChecks:
        return cls.from_dict(parts, made_on(recording.provenance, "Recorded"))


def _union_us(events: Sequence[GpuEvent]) -> float:
    busy, end = 0.0, float("-inf")
    for e in sorted(events, key=lambda e: e.start_us):
        if e.end_us <= end:
            continue
        busy += e.end_us - max(e.start_us, end)
        end = e.end_us
    return busy


def build_profile(graph: CudaGraph, replays: Iterable[Sequence[GpuEvent]], *, name: str = "graph",
                  module_spans: Iterable[ModuleSpan] | None = None,
                  node_modules: Mapping[str, Sequence[str]] | None = None,
                  conditions: Mapping[str, Any] | None = None) -> Profile:
    """Match every replay's events to `graph` and fold them into a `Profile`.

    Args:
        replays: one list of events per replay (`graphlab.profile.events.replays_from_chrome`).
        module_spans: the module spans recorded at capture (`graphlab.profile.modules`), root graph nodes only.
        node_modules: node id -> module names, given directly (torch.compile's fused kernels: several each).

    Raises:
        BadInputError: no replay holds any event.
    """
    lists = [list(r) for r in replays]
    if not lists or not any(lists):
        raise BadInputError("no GPU events in the replays: was the graph replayed inside the profiler?")
    dag = Dag(graph)
    matches: list[ReplayMatch] = [match_replay(graph, events, dag) for events in lists if events]
    durations: dict[str, list[float]] = {}
    starts: dict[str, list[float]] = {}
    gaps: dict[str, list[float]] = {}
    how: dict[str, Counter[str]] = {}
    spans, busy, extras = [], [], []
    extra_names: Counter[str] = Counter()
    for m in matches:
        t0 = min(e.start_us for e in m.events)
        spans.append(max(e.end_us for e in m.events) - t0)
        busy.append(_union_us(m.events))
        extras.append(len(m.extra))
        extra_names.update(m.events[i].name[:80] for i in m.extra)
        end_of: dict[str, float] = {}
        for nid, idx in m.by_node.items():
            durations.setdefault(nid, []).append(sum(m.events[i].dur_us for i in idx))
            starts.setdefault(nid, []).append(m.events[idx[0]].start_us - t0)
            end_of[nid] = max(m.events[i].end_us for i in idx)
            how.setdefault(nid, Counter())[m.matched_by[nid]] += 1
        done_at = _done_times(dag, m, end_of, t0)
        for nid, idx in m.by_node.items():
            before = [done_at[p] for p in dag.preds[nid] if done_at.get(p) is not None]
            start = m.events[idx[0]].start_us
            gaps.setdefault(nid, []).append(max(0.0, start - max(before)) if before else start - t0)
    unmatched: dict[str, list[str]] = {}
    for nid in dag.order:
        if nid not in durations:
            reason = Counter(m.unmatched[nid] for m in matches if nid in m.unmatched).most_common(1)[0][0]
            unmatched.setdefault(reason, []).append(nid)
    modules = _modules_of(graph, module_spans, node_modules)
    nodes = []
    for nid in dag.order:
        node = graph.node(nid)
        d = durations.get(nid)
        nodes.append(NodeTime(
            node_id=nid, kind=node.kind.value, label=node.label,
            family=node.family if node.kind is NodeKind.KERNEL else None, modules=tuple(modules.get(nid, ())),
            median_us=median(d) if d else None, p10_us=percentile(d, 10) if d else None,
            p90_us=percentile(d, 90) if d else None, start_us=median(starts[nid]) if d else None,
            gap_us=median(gaps[nid]) if d else None, matched_by=how[nid].most_common(1)[0][0] if d else None,
            replays=len(d) if d else 0))
    return Profile(name=name, graph=graph, replays=len(matches), nodes=nodes, span_us=median(spans),
                   span_p10_us=percentile(spans, 10), span_p90_us=percentile(spans, 90), busy_us=median(busy),
                   unmatched=unmatched, extra_events=median(extras), extra_names=dict(extra_names.most_common(10)),
                   conditions=dict(conditions or {}))


def _done_times(dag: Dag, m: ReplayMatch, end_of: Mapping[str, float], t0: float) -> dict[str, float | None]:
    """When each node was done in this replay: a matched node at its end, an untimed one when its last
    predecessor was (the replay's start when it has none); None past an unmatched GPU node."""
    done: dict[str, float | None] = {}
    for nid in dag.order:
        if nid in end_of:
            done[nid] = end_of[nid]
            continue
        node = dag.cg.node(nid)
        if node.kind in TIMED_KINDS:
            done[nid] = None
            continue
        before = [done.get(p) for p in dag.preds[nid]]
        done[nid] = None if any(b is None for b in before) else max(before, default=t0)  # type: ignore[type-var]
    return done


def _modules_of(graph: CudaGraph, spans: Iterable[ModuleSpan] | None,
                direct: Mapping[str, Sequence[str]] | None) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {k: list(v) for k, v in (direct or {}).items()}
    if spans is not None:
        root = graph.root
        assigned = assign_modules(list(spans), [n.index for n in root.nodes])
        for n in root.nodes:
            if n.id not in out:
                path = assigned.get(n.index)
                out[n.id] = [OUTSIDE if path is None else (path or "(root)")]
    return out


__all__ = ["ChromeTrace", "MATCHED_WORDS", "NodeTime", "Profile", "ProfileChecks", "ProfileEvents", "SCHEMA",
           "WHAT_IF_CASES", "build_profile", "module_label", "what_if_table"]
