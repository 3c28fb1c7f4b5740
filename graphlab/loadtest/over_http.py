"""What an HTTP client sees of the service, read from the `serving_http` recording (`graphlab record --models
serving_http`, made on a GPU with `hey` and real server processes: `graphlab.studies.serving_http`).

Pure: standard library, `graphlab.present` and the loader; pandas only inside `to_pandas`. Measuring this takes several
server processes and an outside load generator, so it is never re-run from a notebook cell: it is always the
recording, and says so.

    >>> http = gl.load(gl.HttpServing)         # doctest: +SKIP
    >>> http.table()                           # per server: one client, 50 and 200 req/s, capacity   # doctest: +SKIP
    >>> http.summary(), http.flood_table()     # what HTTP costs; a flood of clients                  # doctest: +SKIP
    >>> gl.plot_http_capacity(http)            # throughput vs p99 as clients grow                    # doctest: +SKIP
    >>> gl.plot_load_curves(http.beside_in_process())   # open loop over HTTP beside in process       # doctest: +SKIP
    >>> http.protocol_table(), http.protocol_goals()   # graphlab's JSON vs the Open Inference Protocol  # doctest: +SKIP

The protocols' comparison (the recording's "protocols" entry, when it holds one) puts graphlab's JSON, the Open
Inference Protocol with JSON tensors and with binary tensor data side by side on one server each, in alternating
rounds: the p50 at 50 req/s of the zoo GPT, and the capacity (hey, closed loop) of an image model of your own.
`protocol_goals_rows` judges them against issue 43's goals (binary >= 5x nested JSON's capacity; the protocol's
p50 within 1 ms of graphlab's JSON).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphlab import present
from graphlab.errors import RecordingError
from graphlab.loader import load, record_hint
from graphlab.loadtest.external import OK_LIMIT
from graphlab.loadtest.protocols import LABELS as PROTOCOL_LABELS
from graphlab.loadtest.protocols import PROTOCOLS
from graphlab.loadtest.report import LoadTest
from graphlab.stats import median
from graphlab.present import ShownAsTable
from graphlab.results_types import recorded_result

RECORDING = "serving_http"
#: the servers in the order a reader compares them: the floor first
ORDER = ("bare", "graphs", "graphs+batching", "eager", "own")
LABELS = {"bare": "bare Starlette app (the floor)", "graphs": "graphs", "graphs+batching": "graphs+batching",
          "eager": "eager", "own": "your own model (graphs+batching)"}
#: the goals of the protocols' comparison: the image model's capacity with binary tensors over its nested JSON's, at
#: least; the GPT's p50 at 50 req/s with the protocol over graphlab's JSON, at most (ms)
GOAL_CAPACITY_RATIO = 5.0
GOAL_P50_OVER_MS = 1.0
#: Ray Serve's capacity over the plain service's, for the image model, at least
GOAL_RAY_RATIO = 0.8


def protocol_summary(part: dict[str, Any], protocol: str) -> dict[str, Any]:
    """One protocol's rounds of one part ("latency" or "capacity") of the comparison: the medians over its rounds of
    req/s, p50 and p99 (ms), the rounds, and the requests not answered 200."""
    runs = part.get("runs", {}).get(protocol, [])
    p50 = [r["latency_ms"]["p50"] for r in runs if "p50" in r.get("latency_ms", {})]
    p99 = [r["latency_ms"]["p99"] for r in runs if "p99" in r.get("latency_ms", {})]
    return {"rounds": len(runs), "rps": median([r["rps"] for r in runs]) if runs else None,
            "p50_ms": median(p50) if p50 else None, "p99_ms": median(p99) if p99 else None,
            "requests": sum(r.get("requests", 0) for r in runs),
            "not_ok": sum(r.get("requests", 0) - r.get("status", {}).get("200", 0) for r in runs),
            "ok": bool(runs) and all(r.get("ok_fraction", 0.0) >= OK_LIMIT for r in runs)}


def protocol_goals_rows(protocols: dict[str, Any]) -> list[dict[str, Any]]:
    """The two goals against what the comparison measured: one row each ("goal", "measured", "bound", "verdict":
    "goal met", "goal missed", or "not measured"; "note": why, in words). A part whose runs were not all answered
    200 has missed its goal whatever its figures."""
    rows = []
    capacity = protocols.get("capacity", {})
    base, binary = (protocol_summary(capacity, p) for p in ("graphlab", "oip_binary"))
    clients = capacity.get("clients", 32)
    what = (f"{capacity.get('model', 'image model')}: capacity with binary tensors / with nested JSON (hey, "
            f"{clients} clients)")
    if base["rps"] and binary["rps"] is not None:
        ratio = binary["rps"] / base["rps"]
        met = ratio >= GOAL_CAPACITY_RATIO and base["ok"] and binary["ok"]
        rows.append({"goal": what, "measured": ratio, "bound": f">= {GOAL_CAPACITY_RATIO:g}x",
                     "verdict": "goal met" if met else "goal missed",
                     "note": _ok_note((base, binary)) or f"{present.number(binary['rps'])} vs "
                                                         f"{present.number(base['rps'])} req/s, "
                                                         f"{_of_rounds(binary['rounds'])}"})
    else:
        rows.append({"goal": what, "measured": None, "bound": f">= {GOAL_CAPACITY_RATIO:g}x",
                     "verdict": "not measured", "note": "the recording holds no capacity runs of both protocols"})
    latency = protocols.get("latency", {})
    own = protocol_summary(latency, "graphlab")
    for protocol in ("oip_json", "oip_binary"):
        other = protocol_summary(latency, protocol)
        what = (f"{latency.get('model', 'gpt')}: p50 at {latency.get('qps', 50):g} req/s, "
                f"{PROTOCOL_LABELS[protocol].replace('Open Inference Protocol', 'the protocol')} over graphlab's JSON")
        if own["p50_ms"] is None or other["p50_ms"] is None:
            rows.append({"goal": what, "measured": None, "bound": f"<= {GOAL_P50_OVER_MS:g} ms",
                         "verdict": "not measured", "note": "the recording holds no 50 req/s runs of both protocols"})
            continue
        over = other["p50_ms"] - own["p50_ms"]
        met = over <= GOAL_P50_OVER_MS and own["ok"] and other["ok"]
        rows.append({"goal": what, "measured": over, "bound": f"<= {GOAL_P50_OVER_MS:g} ms",
                     "verdict": "goal met" if met else "goal missed",
                     "note": _ok_note((own, other)) or f"p50 {present.duration(other['p50_ms'] * 1000)} vs "
                                                       f"{present.duration(own['p50_ms'] * 1000)}, "
                                                       f"{_of_rounds(other['rounds'])}"})
    return rows


def ray_summary(model: dict[str, Any], run: str) -> dict[str, Any]:
    """One server and protocol of a model in the "ray" entry ("plain_graphlab", "ray_oip_binary", ...): its medians
    over the rounds, as `protocol_summary`."""
    return protocol_summary({"runs": model.get("runs", {})}, run)


def ray_goals_rows(ray: dict[str, Any]) -> list[dict[str, Any]]:
    """Ray Serve against the plain service: per model and protocol, the capacity ratio (hey, closed loop), judged
    against `GOAL_RAY_RATIO` for the image model ("goal met" / "goal missed"), shown for the others ("no goal");
    then a replica killed under load: every request answered or not. Ray that could not run: one row, "blocked",
    saying what failed."""
    if ray.get("error"):
        return [{"goal": "Ray Serve on this machine", "measured": None, "bound": "it runs", "verdict": "blocked",
                 "note": f"Ray Serve could not run: {ray['error']}"}]
    rows = []
    for name, model in ray.get("models", {}).items():
        for protocol in PROTOCOLS:
            plain, on_ray = ray_summary(model, f"plain_{protocol}"), ray_summary(model, f"ray_{protocol}")
            if not plain["rps"] or on_ray["rps"] is None:
                continue
            ratio = on_ray["rps"] / plain["rps"]
            ok = plain["ok"] and on_ray["ok"]
            judged = name == "image"
            verdict = ("goal met" if ratio >= GOAL_RAY_RATIO and ok else "goal missed") if judged else "no goal"
            rows.append({"goal": f"{model.get('model', name)}, {PROTOCOL_LABELS[protocol]}: Ray Serve's capacity / the "
                                 f"plain service's (hey, {model.get('clients', 32)} clients)",
                         "measured": ratio, "bound": f">= {GOAL_RAY_RATIO:g}x" if judged else "none: the ratio",
                         "verdict": verdict,
                         "note": _ok_note((plain, on_ray)) or f"{present.number(on_ray['rps'])} vs "
                                                               f"{present.number(plain['rps'])} req/s, "
                                                               f"{_of_rounds(on_ray['rounds'])}"})
        kill = model.get("kill")
        if kill:
            lost = kill.get("lost", 0)
            statuses = ", ".join(f"{present.count(n)} answered {s}" for s, n in sorted(kill["by_status"].items())
                                 if s != "0")
            rows.append({"goal": f"{model.get('model', name)}: a replica killed under load "
                                 f"({present.number(kill['rate_rps'])} req/s)", "measured": None,
                         "bound": "every request answered", "verdict": "goal met" if lost == 0 else "goal missed",
                         "note": f"{statuses}; {present.count(lost)} without an answer; the first 200 after the kill "
                                 f"at {kill.get('first_ok_after_kill_s')} s"})
    return rows


def _of_rounds(rounds: int) -> str:
    return "one round" if rounds == 1 else f"medians of {present.count(rounds)} rounds"


def _ok_note(summaries: tuple[dict[str, Any], ...]) -> str:
    bad = sum(s["not_ok"] for s in summaries)
    return f"{present.count(bad)} requests were not answered 200" if any(not s["ok"] for s in summaries) else ""


@recorded_result(entries=("hey", "raw", "protocols", "ray"), recording=RECORDING, schema=1,
                 optional=("protocols", "ray"))
@dataclass
class HttpServing(ShownAsTable):
    """The recorded HTTP measurements (`gl.load(gl.HttpServing)`): `servers` (name -> hey runs, capacity, service
    counters), the flood, the open-loop sweep over HTTP and the in-process one of the same run; `source` is the
    recording's banner.

    Read from the `serving_http` recording: "hey" (the servers and the conditions), "raw" (hey's own output of each
    run, kept as it printed it), and the load tests "<model>_http" and "<model>_direct" (`LoadTest`s) when it holds
    them."""

    model: str
    servers: dict[str, Any]
    open_loop: LoadTest | None
    in_process: LoadTest | None
    source: str
    conditions: dict[str, Any] = field(default_factory=dict)
    #: hey's own output of each run ("bare_single", "graphs+batching_c32", ...), as it printed it
    raw: dict[str, str] = field(default_factory=dict, repr=False)
    #: graphlab's JSON vs the Open Inference Protocol, side by side ("latency": the GPT at 50 req/s; "capacity": an
    #: image model of your own, hey's clients at once); {} when the recording holds none
    protocols: dict[str, Any] = field(default_factory=dict, repr=False)
    #: Ray Serve beside the plain service on the GPU ("models": per model, the replica, the answers, hey's runs on
    #: each, the GPT's open loop, a replica killed under load); {} when the recording holds none
    ray: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_recording(cls, parts: dict[str, Any], recording: Any) -> HttpServing:
        """The measurements read by `gl.load`: hey's runs, and the load tests of the same run read as `LoadTest`s."""
        hey = parts["hey"]
        model = str(hey.get("model", "gpt"))

        def sweep(entry: str) -> LoadTest | None:
            if entry not in recording.result_names:
                return None
            folder = Path(recording.path)
            return load(LoadTest, recording.name, gpu=folder.parent.name, root=recording.root, entry=entry)

        return cls(model=model, servers=dict(hey.get("servers", {})), open_loop=sweep(f"{model}_http"),
                   in_process=sweep(f"{model}_direct"), source=recording.banner(),
                   conditions={k: v for k, v in hey.items() if k not in ("servers", "schema")},
                   raw=dict(parts.get("raw") or {}),
                   protocols={k: v for k, v in (parts.get("protocols") or {}).items() if k != "schema"},
                   ray={k: v for k, v in (parts.get("ray") or {}).items() if k != "schema"})

    def _named(self) -> list[str]:
        return [s for s in ORDER if s in self.servers] + [s for s in self.servers if s not in ORDER and s != "flood"]

    def rows(self) -> list[dict[str, Any]]:
        """One row per server: p50/p99 ms of one client back to back, at 50 and at 200 req/s; capacity req/s."""
        out = []
        for name in self._named():
            entry = self.servers[name]
            row: dict[str, Any] = {"server": LABELS.get(name, name)}
            for run, label in (("single", "1 client"), ("rate50", "50 req/s"), ("rate200", "200 req/s")):
                latency = entry.get(run, {}).get("latency_ms", {})
                row[f"{label} p50 ms"] = latency.get("p50")
                row[f"{label} p99 ms"] = latency.get("p99")
            row["1 client req/s"] = entry.get("single", {}).get("rps")
            row["capacity req/s"] = entry.get("capacity_rps")
            out.append(row)
        return out

    def table(self) -> present.Table:
        """Per server: p50 and p99 of one client back to back, at 50 and at 200 req/s; one client's req/s; the
        capacity (hey's clients grown until p99 passes the bound), as a table for people."""
        limit = self.conditions.get("p99_limit_ms", 50.0)
        columns = [present.Column("server", "server", kind="text")]
        for label in ("1 client", "50 req/s", "200 req/s"):
            for q in ("p50", "p99"):
                columns.append(present.Column(f"{label} {q} ms", f"{label}: {q}", kind="time", factor=1000.0,
                                              missing="not measured"))
        columns.append(present.Column("1 client req/s", "1 client: answered", kind="rate"))
        capacity_of = [LABELS.get(n, n) for n in self._named() if self.servers[n].get("capacity_curve")]
        columns.append(present.Column("capacity req/s", "capacity", kind="rate", missing=(
            f"capacity not measured: hey's client sweep ran on {present.listing(capacity_of) if capacity_of else 'none'}"
            " only")))
        notes = ["1 client: one hey client sending one request after the other; 50 req/s and 200 req/s: one and two "
                 "clients held to that rate; capacity: the most answered req/s with p99 at most "
                 f"{present.number(limit)} ms and every request answered 200, as hey's clients grow.", self.source]
        return present.Table(self.rows(), columns, index="server", title=f"{self.model} over HTTP, per server",
                             notes=notes)

    def to_pandas(self) -> Any:
        """`rows` as a pandas DataFrame indexed by server: the raw numbers, for your own analysis."""
        import pandas as pd

        return pd.DataFrame(self.rows()).set_index("server")

    def capacity_rows(self) -> list[dict[str, Any]]:
        """The concurrency sweeps: server, clients, req/s, p50 and p99 ms, share answered 200."""
        return [{"server": LABELS.get(name, name), "clients": p["concurrency"], "req/s": p["rps"],
                 "p50 ms": p["latency_ms"].get("p50"), "p99 ms": p["latency_ms"].get("p99"),
                 "answered 200 %": 100.0 * p["ok_fraction"]}
                for name in self._named() for p in self.servers[name].get("capacity_curve", [])]

    def flood_rows(self) -> list[dict[str, Any]]:
        """The flood: per HTTP status, how many and how fast they came back."""
        flood = self.servers.get("flood", {}).get("flood", {})
        rows = [{"status": status, "answers": s["count"], "p50 ms": s["p50_ms"], "p99 ms": s["p99_ms"],
                 "max ms": s["max_ms"]} for status, s in flood.get("by_status", {}).items()]
        if flood:
            rows.append({"status": "none (lost)", "answers": flood.get("lost", 0), "p50 ms": None, "p99 ms": None,
                         "max ms": None})
        return rows

    def flood_clients(self) -> int:
        return int(self.servers.get("flood", {}).get("flood", {}).get("concurrency", 0))

    def flood_table(self) -> present.Table:
        """The flood as a table for people: per answer (200, 503, none), how many and how fast they came back."""
        words = {"200": "200: answered", "503": "503: refused, the queue full (with Retry-After)",
                 "none (lost)": "no answer (lost)"}
        rows = [{**row, "status": words.get(row["status"], row["status"])} for row in self.flood_rows()]
        columns = [present.Column("status", "answer", kind="text"), present.Column("answers", "requests", kind="count")]
        columns += [present.Column(key, key.removesuffix(" ms"), kind="time", factor=1000.0,
                                   missing="no request went unanswered, so there is no time to show")
                    for key in ("p50 ms", "p99 ms", "max ms")]
        command = self.servers.get("flood", {}).get("command", "")
        pending = "64" if "--max-pending 64" in command else "max_pending"
        return present.Table(rows, columns, index="status", notes=[self.source], title=(
            f"a flood: {present.count(self.flood_clients())} clients at once against graphs+batching, at most "
            f"{pending} requests inside"))

    def in_process_capacity_rps(self) -> float | None:
        """The highest offered rate the in-process graphs+batching sustained in the same run."""
        if self.in_process is None:
            return None
        knees = [k for k in self.in_process.knees().values() if k]
        return max(knees) if knees else None

    def summary(self) -> present.Table:
        """What HTTP costs, in two comparisons: each graphs server's p50 at 50 req/s beside the floor (a bare app),
        and the capacity of graphs+batching over HTTP beside the in-process one of the same run."""
        pairs = []
        floor = self._p50_at_50("bare")
        if floor is not None:
            pairs.append((f"{LABELS['bare']}: p50 at 50 req/s", present.duration(floor * 1000)))
        for name in ("graphs", "graphs+batching"):
            p50 = self._p50_at_50(name)
            if p50 is not None and floor is not None:
                pairs.append((f"{name}: p50 at 50 req/s", f"{present.duration(p50 * 1000)}, "
                              f"{present.duration((p50 - floor) * 1000)} over the floor"))
        http = self.servers.get("graphs+batching", {}).get("capacity_rps")
        inproc = self.in_process_capacity_rps()
        if http:
            pairs.append(("graphs+batching capacity over HTTP (hey, closed loop)", f"{present.number(http)} req/s"))
        if inproc:
            pairs.append(("graphs+batching capacity in process (open loop, same run)", f"{present.number(inproc)} req/s"))
        if http and inproc:
            pairs.append(("over HTTP / in process", present.ratio(http / inproc)))
        return present.facts(pairs, title=f"{self.model}: what HTTP costs", notes=[self.source])

    def _p50_at_50(self, name: str) -> float | None:
        return self.servers.get(name, {}).get("rate50", {}).get("latency_ms", {}).get("p50")

    def goals(self) -> list[str]:
        """`summary` as lines of text: each graphs server's p50 at 50 req/s beside the floor, then the capacity over
        HTTP beside in process."""
        rows = {row["what"]: row["value"] for row in self.summary().rows}
        lines = [f"{what}: {value}" for what, value in rows.items() if what.startswith(("graphs:", "graphs+batching:"))]
        http, inproc = (rows.get(f"graphs+batching capacity {where}") for where in (
            "over HTTP (hey, closed loop)", "in process (open loop, same run)"))
        if http and inproc:
            lines.append(f"graphs+batching capacity over HTTP {http} (hey, closed loop) vs {inproc} in process (open "
                         f"loop, same run): {rows['over HTTP / in process']}")
        return lines

    # -- graphlab's JSON vs the Open Inference Protocol -------------------------------------------------------------
    def protocol_rows(self) -> list[dict[str, Any]]:
        """Per part of the comparison and protocol: the body's bytes, the medians over the rounds of req/s, p50 and
        p99 (ms), the rounds and the requests not answered 200."""
        out = []
        for part, what in (("latency", "at {qps:g} req/s, {clients} client"), ("capacity", "{clients} clients")):
            entry = self.protocols.get(part)
            if not entry:
                continue
            label = f"{entry.get('model', part)}, " + what.format(qps=entry.get("qps") or 0,
                                                                  clients=entry.get("clients", 1))
            for protocol in PROTOCOLS:
                if protocol not in entry.get("runs", {}):
                    continue
                summary = protocol_summary(entry, protocol)
                out.append({"part": part, "load": label, "protocol": PROTOCOL_LABELS[protocol],
                            "body bytes": entry.get("bodies", {}).get(protocol, {}).get("bytes"),
                            "req/s": summary["rps"], "p50 ms": summary["p50_ms"], "p99 ms": summary["p99_ms"],
                            "rounds": summary["rounds"], "not answered 200": summary["not_ok"]})
        return out

    def protocol_table(self) -> present.Table:
        """graphlab's JSON, the protocol's JSON tensors and its binary data side by side, per load, as a table for
        people (medians over alternating rounds on one server); a recording without the comparison says so."""
        columns = [present.Column("load", "load", kind="text"), present.Column("protocol", "protocol", kind="text"),
                   present.Column("body bytes", "one request's body", kind="bytes"),
                   present.Column("req/s", "answered", kind="rate"),
                   present.Column("p50 ms", "p50", kind="time", factor=1000.0, missing="hey printed none"),
                   present.Column("p99 ms", "p99", kind="time", factor=1000.0,
                                  missing="hey prints p99 from 100 answers up"),
                   present.Column("rounds", "rounds", kind="count"),
                   present.Column("not answered 200", "not answered 200", kind="count")]
        rounds = self.protocols.get("rounds")
        notes = [f"each protocol's figures: {_of_rounds(rounds)}; the protocols alternate within each "
                 "round, on the same server process" if rounds else "no comparison of the protocols is recorded: "
                 "`graphlab record --models serving_http` on a GPU makes one", self.source]
        return present.Table(self.protocol_rows(), columns, title="graphlab's JSON vs the Open Inference Protocol",
                             notes=notes)

    def protocol_goals(self) -> present.Table:
        """Issue 43's two goals against the recorded comparison, each "goal met", "goal missed" or "not measured"."""
        rows = protocol_goals_rows(self.protocols)
        shown = [{**row, "measured": (present.ratio(row["measured"]) if "capacity" in row["goal"]
                                      else f"{present.signed(row['measured'], 2)} ms")
                  if row["measured"] is not None else None} for row in rows]
        columns = [present.Column("goal", "goal", kind="text"), present.Column("measured", "measured", kind="text",
                                                                                missing="not measured"),
                   present.Column("bound", "goal's bound", kind="text"), present.Column("verdict", "verdict",
                                                                                       kind="text"),
                   present.Column("note", "how", kind="text")]
        return present.Table(shown, columns, title="the protocols against their goals", notes=[self.source])

    def ray_table(self) -> present.Table:
        """Ray Serve beside the plain service (the same model, setting and GPU, in alternating rounds), and a replica
        killed under load, each judged ("goal met", "goal missed", or "no goal" where only the ratio is asked)."""
        rows = ray_goals_rows(self.ray)
        shown = [{**row, "measured": present.ratio(row["measured"]) if row["measured"] is not None else None}
                 for row in rows]
        columns = [present.Column("goal", "what", kind="text"),
                   present.Column("measured", "measured", kind="text", missing="counted, not a ratio"),
                   present.Column("bound", "goal", kind="text"), present.Column("verdict", "verdict", kind="text"),
                   present.Column("note", "how", kind="text")]
        notes = [self.source] if self.ray else ["Ray Serve has not run on a GPU in this recording: `graphlab record "
                                                "--models serving_http` where Ray Serve is installed makes it",
                                                self.source]
        return present.Table(shown, columns, title="Ray Serve beside the plain service", notes=notes)

    def ray_where_the_time_goes(self) -> present.Table:
        """The GPT's open loop over HTTP against each server: p50, the time inside the service, and the rest (HTTP,
        and on Ray its proxy and the hop to the replica), per rate."""
        rows = []
        for name, model in self.ray.get("models", {}).items():
            for where, sweep in model.get("open_loop", {}).items():
                for point in sweep.get("points", []):
                    stages = point.get("stages_us", {})
                    rows.append({"server": f"{model.get('model', name)}, {'Ray Serve' if where == 'ray' else 'plain'}",
                                 "rate req/s": point.get("offered_rps"), "p50 us": point.get("latency_us", {}).get("p50"),
                                 "outside us": stages.get("outside", {}).get("p50")})
        columns = [present.Column("server", "server", kind="text"), present.Column("rate req/s", "offered", kind="rate"),
                   present.Column("p50 us", "p50", kind="time"),
                   present.Column("outside us", "outside the service, p50", kind="time",
                                  missing="the answers carried no timings")]
        return present.Table(rows, columns, title="where the time goes: HTTP and Ray's proxy beside the service",
                             notes=["outside the service: the client's latency minus the time the answer says it "
                                    "spent inside the service (the HTTP stack, and on Ray its proxy and hop)",
                                    self.source])

    def beside_in_process(self) -> LoadTest:
        """One LoadTest holding the open-loop sweep over HTTP and the in-process one, settings suffixed
        " over HTTP" / " in process", for `gl.plot_load_curves`."""
        parts = [(lt, suffix) for lt, suffix in ((self.open_loop, " over HTTP"), (self.in_process, " in process"))
                 if lt is not None]
        if not parts:
            raise RecordingError(f"the {RECORDING!r} recording holds no load test; {record_hint(RECORDING)}")
        first = parts[0][0]
        merged = LoadTest(model=first.model, config=dict(first.config), conditions=dict(first.conditions),
                          source=self.source)
        for lt, suffix in parts:
            for point in lt.points:
                merged.points.append(type(point).from_dict({**point.to_dict(), "setting": point.setting + suffix}))
        return merged

    def __repr__(self) -> str:
        return f"HttpServing({self.model}: {', '.join(self._named())}; {self.source})"


def load_http_serving(gpu: str | None = None, root: str | None = None) -> HttpServing:
    """Deprecated: `gl.load(gl.HttpServing)` reads the `serving_http` recording (`gpu=`, `root=` as here)."""
    warnings.warn("gl.load_http_serving() is gl.load(gl.HttpServing): call that", DeprecationWarning, stacklevel=2)
    return load(HttpServing, gpu=gpu, root=root)


__all__ = ["GOAL_CAPACITY_RATIO", "GOAL_P50_OVER_MS", "GOAL_RAY_RATIO", "HttpServing", "LABELS", "ORDER", "RECORDING", "load_http_serving",
           "protocol_goals_rows", "protocol_summary", "ray_goals_rows", "ray_summary"]
