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
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphlab import present
from graphlab.errors import RecordingError
from graphlab.loader import load, record_hint
from graphlab.loadtest.report import LoadTest
from graphlab.present import ShownAsTable
from graphlab.results_types import recorded_result

RECORDING = "serving_http"
#: the servers in the order a reader compares them: the floor first
ORDER = ("bare", "graphs", "graphs+batching", "eager", "own")
LABELS = {"bare": "bare Starlette app (the floor)", "graphs": "graphs", "graphs+batching": "graphs+batching",
          "eager": "eager", "own": "your own model (graphs+batching)"}


@recorded_result(entries=("hey", "raw"), recording=RECORDING, schema=1)
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
                   raw=dict(parts.get("raw") or {}))

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


__all__ = ["HttpServing", "LABELS", "ORDER", "RECORDING", "load_http_serving"]
