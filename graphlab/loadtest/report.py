"""Load-test results: one `LoadPoint` per (setting, arrival rate), a `LoadTest` per sweep.

What a point says, and where each number comes from:
- throughput: answered-OK requests per second over the run's span (first arrival to last answer);
- latency p50/p90/p99: from each request's *scheduled* arrival to its answer (open loop: the generator's
  own lag counts against the service, never for it), OK answers only;
- refused: answers 503 (the bounded queue was full) and 413/422 (400 by the Open Inference Protocol) by reason;
  failed: 5xx and timeouts;
- stages: per request, pre-processing, queueing (queued -> its batch cut, batching window included),
  GPU (batch cut -> scores on the host: launch, copies, kernels, event), post-processing, and
  "outside" (the rest: event-loop hops, the HTTP app or transport, generator lag);
- batches: the batch sizes the batcher formed, the buckets they ran at, padding waste;
- worker: GPU busy share (CUDA-event time per batch over the span), how long the worker waited for a
  batch, and how much of that it waited on an empty queue while requests sat in pre-processing
  ("starved": the CPU stage holding the GPU back).

A setting *sustains* a rate when its throughput is at least 95% of the requests' arrival rate, with
under 1% refused or failed; its knee is the highest offered rate it sustains.

    >>> from graphlab.loadtest.report import LoadTest
    >>> LoadTest.from_dict({"model": "gpt", "points": []}).knees()
    {}

Pure Python (graphlab.stats): no torch here.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Iterable

from graphlab import present
from graphlab.stats import percentile
from graphlab.errors import ResultsError
from graphlab.present import ShownAsTable
from graphlab.results_types import keep_known, recorded_result
from graphlab.serve.answer import on_cpu, worker_words

SUSTAINED_SHARE = 0.95
SUSTAINED_REFUSED = 0.01
STAGES = ("pre", "queue", "gpu", "post", "outside")
#: the answers that refuse a request (the client asked too much, or the service was full): 413/422 for graphlab's JSON,
#: 400 (and 413) for the Open Inference Protocol, 429/503 for back-pressure
REFUSED_STATUSES = (400, 413, 422, 429, 503)
REQUEST_COLUMNS = ("request_id", "rows", "accepted", "pre_start", "pre_end", "dispatched", "done", "post_end",
                   "batch_id")
BATCH_COLUMNS = ("batch_id", "requests", "rows", "bucket", "wait_start", "first_ready", "formed", "launch_start",
                 "launch_end", "done", "post_end", "gpu_us", "compute_us", "pre_in_flight")


#: the views `LoadTest.table` shows
TABLE_VIEWS = ("latency", "batches", "stages", "generator")
#: each stage of a request in words (the worker's stage is named by `worker_words`: on a CPU it is no GPU)
STAGE_WORDS = {"pre": "pre-processing", "queue": "queue", "gpu": "GPU worker", "post": "post-processing",
               "outside": "outside the service"}
#: what each setting ran on a CPU: nothing is captured there (the graph cache runs its buckets eagerly)
CPU_LABELS = {"eager": "eager (CPU)", "graphs": "padded to buckets, eager (CPU)",
              "graphs+batching": "buckets + batching, eager (CPU)", "eager+batching": "eager + batching (CPU)"}


def setting_label(setting: str, conditions: dict[str, Any]) -> str:
    """A setting as a person reads it: its name on a GPU; on a CPU what ran ("padded to buckets, eager (CPU)")."""
    return CPU_LABELS.get(setting, f"{setting} (CPU)") if on_cpu(conditions) else setting


def _pcts(values: list[float], qs: Iterable[int] = (50, 90, 99)) -> dict[str, float]:
    if not values:
        return {}
    out = {f"p{q}": round(percentile(values, q), 1) for q in qs}
    out["mean"] = round(sum(values) / len(values), 1)
    out["max"] = round(max(values), 1)
    return out


@dataclass
class LoadPoint:
    """One setting at one offered rate (see the module docstring for each field's meaning)."""

    setting: str
    offered_rps: float
    duration_s: float
    transport: str
    sent: int
    ok: int
    refused: dict[str, int]
    failed: int
    arrived_rps: float
    achieved_rps: float
    rows_per_s: float
    latency_us: dict[str, float]
    lag_us: dict[str, float]
    stages_us: dict[str, dict[str, float]]
    batches: int
    batch_rows: dict[int, int]
    batch_buckets: dict[int, int]
    mean_batch_rows: float
    pad_waste_pct: float
    gpu_busy_pct: float
    gpu_us_per_batch: dict[str, float]
    launch_us_per_batch: dict[str, float]
    worker_wait_pct: float
    worker_starved_pct: float
    slot_wait_pct: float

    @property
    def refused_total(self) -> int:
        return sum(self.refused.values())

    @property
    def sustained(self) -> bool:
        """Answered >= 95% of the requests' arrival rate, with < 1% refused or failed."""
        if not self.sent:
            return False
        return (self.achieved_rps >= SUSTAINED_SHARE * self.arrived_rps
                and self.refused_total + self.failed < SUSTAINED_REFUSED * self.sent)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["batch_rows"] = {str(k): v for k, v in self.batch_rows.items()}
        out["batch_buckets"] = {str(k): v for k, v in self.batch_buckets.items()}
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LoadPoint:
        kwargs = keep_known(cls, data)
        missing = {f.name for f in fields(cls)} - set(kwargs)
        if missing:
            raise ResultsError(f"a load point lacks {', '.join(sorted(missing))}")
        kwargs["batch_rows"] = {int(k): int(v) for k, v in data["batch_rows"].items()}
        kwargs["batch_buckets"] = {int(k): int(v) for k, v in data["batch_buckets"].items()}
        return cls(**kwargs)


def summarize_point(*, setting: str, offered_rps: float, duration_s: float, transport: str, start_ns: int,
                    clients: list[Any], batches: list[dict[str, Any]]) -> LoadPoint:
    """Summarise one run that started at `start_ns`: `clients` are `ClientRecord`s, `batches` the service's
    batch records ([] when the service is in another process).

    Throughput is OK answers over the time from the start to the last answer; the arrival rate is the
    requests sent over `duration_s` (a Poisson count, so it differs a little from `offered_rps`).
    """
    ok = [c for c in clients if c.status == 200]
    refused = Counter(c.reason or str(c.status) for c in clients if c.status in REFUSED_STATUSES)
    failed = sum(1 for c in clients if c.status != 200 and c.status not in REFUSED_STATUSES)
    end = max((c.done_ns for c in clients if c.done_ns), default=start_ns)
    span_s = max((end - start_ns) / 1e9, duration_s)
    latency = [(c.done_ns - c.scheduled_ns) / 1000.0 for c in ok]
    lag = [max(0, c.sent_ns - c.scheduled_ns) / 1000.0 for c in clients if c.sent_ns]
    stages: dict[str, list[float]] = {s: [] for s in STAGES}
    for c, total in zip(ok, latency):
        t = c.answer.get("timing_us", {})
        if not t:  # an Open Inference Protocol answer carries none of the service's own timings: no stages
            continue
        for s in ("pre", "queue", "gpu", "post"):
            stages[s].append(float(t.get(f"{s}_us", 0.0)))
        stages["outside"].append(max(0.0, total - float(t.get("in_service_us", 0.0))))
    if batches:
        rows = Counter(int(b["rows"]) for b in batches)
        buckets = Counter(int(b["bucket"]) for b in batches)
        sum_rows, sum_bucket = sum(b["rows"] for b in batches), sum(b["bucket"] for b in batches)
    else:  # only the answers (HTTP transport): each batch is seen once per request in it
        seen = {int(c.answer["batch"]["id"]): c.answer["batch"] for c in ok if "id" in c.answer.get("batch", {})}
        rows = Counter(int(b["rows"]) for b in seen.values())
        buckets = Counter(int(b["bucket"]) for b in seen.values())
        sum_rows, sum_bucket = sum(b["rows"] for b in seen.values()), sum(b["bucket"] for b in seen.values())
    n_batches = sum(rows.values())
    gpu = [float(b["gpu_us"]) for b in batches if b.get("gpu_us")]
    launch = [(b["launch_end_ns"] - b["launch_start_ns"]) / 1000.0 for b in batches if b.get("launch_end_ns")]
    wait_ns = sum(b["formed_ns"] - b["wait_start_ns"] for b in batches)
    starved_ns = sum(b["first_ready_ns"] - b["wait_start_ns"] for b in batches if b["pre_in_flight"] > 0)
    slot_ns = sum(b["wait_start_ns"] - b["slot_wait_start_ns"] for b in batches)
    worker_span_ns = max((b["post_end_ns"] for b in batches), default=0) - min(
        (b["slot_wait_start_ns"] for b in batches), default=0)
    worker_span_ns = max(worker_span_ns, 1)
    return LoadPoint(
        setting=setting, offered_rps=float(offered_rps), duration_s=float(duration_s), transport=transport,
        sent=len(clients), ok=len(ok), refused=dict(refused), failed=failed,
        arrived_rps=round(len(clients) / duration_s, 1), achieved_rps=round(len(ok) / span_s, 1),
        rows_per_s=round(sum(c.rows for c in ok) / span_s, 1),
        latency_us=_pcts(latency), lag_us=_pcts(lag, (50, 99)),
        stages_us={s: _pcts(v, (50, 99)) for s, v in stages.items()},
        batches=n_batches, batch_rows=dict(sorted(rows.items())), batch_buckets=dict(sorted(buckets.items())),
        mean_batch_rows=round(sum_rows / n_batches, 2) if n_batches else 0.0,
        pad_waste_pct=round(100.0 * (sum_bucket - sum_rows) / sum_bucket, 1) if sum_bucket else 0.0,
        gpu_busy_pct=round(100.0 * sum(gpu) * 1000.0 / worker_span_ns, 1) if gpu else 0.0,
        gpu_us_per_batch=_pcts(gpu, (50, 99)), launch_us_per_batch=_pcts(launch, (50, 99)),
        worker_wait_pct=round(100.0 * wait_ns / worker_span_ns, 1) if batches else 0.0,
        worker_starved_pct=round(100.0 * starved_ns / worker_span_ns, 1) if batches else 0.0,
        slot_wait_pct=round(100.0 * slot_ns / worker_span_ns, 1) if batches else 0.0,
    )


def timeline_key(setting: str, rate_rps: float) -> str:
    """How `LoadTest.timelines` names a window: "graphs+batching@1000"."""
    return f"{setting}@{rate_rps:g}"


def timeline_window(requests: list[dict[str, Any]], batches: list[dict[str, Any]], start_ns: int,
                    window_us: float) -> dict[str, Any]:
    """The requests and batches that touch [start_ns, start_ns + window), times in µs from start_ns."""
    end_ns = start_ns + int(window_us * 1000)

    def rel(ns: int) -> float | None:
        return round((ns - start_ns) / 1000.0, 1) if ns else None

    req_rows = [[r["request_id"], r["rows"], *(rel(r[f"{k}_ns"]) for k in REQUEST_COLUMNS[2:8]), r["batch_id"]]
                for r in requests if r["accepted_ns"] < end_ns and (r["post_end_ns"] or end_ns) >= start_ns]
    batch_rows = [[b["batch_id"], b["requests"], b["rows"], b["bucket"],
                   *(rel(b[f"{k}_ns"]) for k in BATCH_COLUMNS[4:11]), round(b["gpu_us"], 1),
                   round(b["compute_us"], 1), b["pre_in_flight"]]
                  for b in batches if b["wait_start_ns"] < end_ns and (b["post_end_ns"] or end_ns) >= start_ns]
    return {"window_us": window_us, "request_columns": list(REQUEST_COLUMNS), "requests": req_rows,
            "batch_columns": list(BATCH_COLUMNS), "batches": batch_rows}


#: the schema of a load test's file (an int, as the shipped files say: `"schema": 1`)
LOADTEST_SCHEMA = 1


@recorded_result(entry="gpt", recording="serving", schema=LOADTEST_SCHEMA,
                 fields={"model": 1, "points": 1, "config": 1, "conditions": 1, "timelines": 1},
                 optional=("config", "conditions", "timelines"),
                 found_in=("serving/*", "serving_http/*_http", "serving_http/*_direct"))
@dataclass
class LoadTest(ShownAsTable):
    """A sweep: settings x arrival rates for one model, with the conditions it ran under.

    `gl.load(LoadTest)` reads the gpt sweep of the serving recording; `gl.load(LoadTest, "serving", entry="resnet18")`
    another (an entry is the model, "_asgi" through the app in process; the `serving_http` recording holds
    "gpt_http" and "gpt_direct").

    Attributes:
        points: one per (setting, rate), in run order.
        timelines: "setting@rate" -> a `timeline_window` dict (with "setting" and "rate_rps") from that run.
        conditions: GPU, torch, transport, event loop, CPU count, seed, request sizes, durations.
        source: "live" or the recording's banner.
        notes: in recorded mode, how the recording differs from what was asked (settings, rates, durations).
    """

    model: str
    points: list[LoadPoint] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    conditions: dict[str, Any] = field(default_factory=dict)
    timelines: dict[str, Any] = field(default_factory=dict)
    source: str = "live"
    #: what a recorded load test shows instead of what was asked (empty live, or when they agree)
    notes: list[str] = field(default_factory=list)

    def settings(self) -> list[str]:
        return list(dict.fromkeys(p.setting for p in self.points))

    def for_setting(self, setting: str) -> list[LoadPoint]:
        points = [p for p in self.points if p.setting == setting]
        if not points:
            raise ResultsError(f"no points for setting {setting!r}; this load test has {', '.join(self.settings())}")
        return sorted(points, key=lambda p: p.offered_rps)

    def knees(self) -> dict[str, float | None]:
        """setting -> the highest offered rate it sustains (None: not even the lowest)."""
        out: dict[str, float | None] = {}
        for setting in self.settings():
            held = [p.offered_rps for p in self.for_setting(setting) if p.sustained]
            out[setting] = max(held) if held else None
        return out

    def batch_sizes(self, setting: str, rate_rps: float | None = None) -> dict[int, int]:
        """Batch rows formed -> count, at one offered rate (default: the highest the setting sustains)."""
        points = self.for_setting(setting)
        if rate_rps is None:
            knee = self.knees()[setting]
            rate_rps = knee if knee is not None else points[0].offered_rps
        for p in points:
            if p.offered_rps == rate_rps:
                return dict(p.batch_rows)
        raise ResultsError(f"setting {setting!r} ran no point at {rate_rps:g} req/s; it has "
                           f"{', '.join(f'{p.offered_rps:g}' for p in points)}")

    def timeline(self, setting: str, rate_rps: float | None = None) -> dict[str, Any]:
        """The timeline window kept for `setting` (at `rate_rps`; default: the lowest rate that has one)."""
        found = sorted((t["rate_rps"], k) for k, t in self.timelines.items() if t.get("setting") == setting)
        if rate_rps is not None:
            found = [(r, k) for r, k in found if r == rate_rps]
        if not found:
            have = ", ".join(sorted(self.timelines)) or "none"
            raise ResultsError(f"no timeline for {setting!r}{f' at {rate_rps:g} req/s' if rate_rps else ''}; "
                               f"this load test kept {have}")
        return self.timelines[found[0][1]]

    def rows(self) -> list[dict[str, Any]]:
        """One flat row per point (what `to_pandas` and `table` show)."""
        out = []
        for p in self.points:
            out.append({
                "setting": p.setting, "offered_rps": p.offered_rps, "achieved_rps": p.achieved_rps,
                "p50_us": p.latency_us.get("p50"), "p90_us": p.latency_us.get("p90"),
                "p99_us": p.latency_us.get("p99"), "refused": p.refused_total, "failed": p.failed,
                "mean_batch_rows": p.mean_batch_rows, "pad_waste_pct": p.pad_waste_pct,
                "queue_p50_us": p.stages_us.get("queue", {}).get("p50"),
                "gpu_p50_us": p.stages_us.get("gpu", {}).get("p50"),
                "pre_p50_us": p.stages_us.get("pre", {}).get("p50"),
                "post_p50_us": p.stages_us.get("post", {}).get("p50"),
                "gpu_busy_pct": p.gpu_busy_pct, "worker_starved_pct": p.worker_starved_pct,
                "lag_p50_us": p.lag_us.get("p50"), "sustained": p.sustained,
            })
        return out

    def to_pandas(self) -> Any:
        """The raw rows (`rows`) as a DataFrame, unformatted, for your own analysis."""
        import pandas as pd

        return pd.DataFrame(self.rows())

    def point(self, setting: str, rate_rps: float) -> LoadPoint:
        """The point of `setting` at the offered rate `rate_rps`; ResultsError saying which rates it has."""
        points = self.for_setting(setting)
        for p in points:
            if p.offered_rps == float(rate_rps):
                return p
        raise ResultsError(f"asked for {setting} at {present.number(float(rate_rps))} req/s; this load test has "
                           f"{setting} at {present.listing([present.number(p.offered_rps) for p in points])} req/s")

    # -- views -------------------------------------------------------------------------------------------------
    @property
    def on_cpu(self) -> bool:
        """Whether it ran on a CPU (nothing captured: the graphs settings pad to a bucket and run eagerly)."""
        return on_cpu(self.conditions)

    def label(self, setting: str) -> str:
        """The setting as a table or legend shows it: its name on a GPU, what ran on a CPU."""
        return setting_label(setting, self.conditions)

    def where(self) -> str:
        """Where the numbers come from, in words: the recording's banner, or "measured here on <GPU>"."""
        if self.source != "live":
            return self.source
        date = str(self.conditions.get("date") or "")[:10]
        if self.on_cpu:
            place = "on this machine's CPU"
        else:
            place = f"on {self.conditions.get('gpu') or 'this GPU'}"
        return f"measured here {place}" + (f" on {date}" if date else "")

    def table(self, view: str = "latency", setting: str | None = None) -> present.Table:
        """The sweep as a table for people, one row per (setting, offered rate), settings in run order.

        Args:
            view: "latency" (what a client sees: answered rate, p50, p99, refused, kept up), "batches" (the
                batches formed, padding, queue and worker times, how busy the worker was), "stages" (the median
                time of each stage of a request) or "generator" (how far the load generator lagged its schedule).
            setting: only this setting's rows.
        """
        if view not in TABLE_VIEWS:
            raise ResultsError(f"asked for the view {view!r}; a load test shows {present.listing(TABLE_VIEWS, 'or')}")
        settings = [setting] if setting is not None else self.settings()
        rows = []
        for name in settings:
            for p in self.for_setting(name):
                rows.append(self._view_row(p))
        worker, worker_means = worker_words(self.conditions)
        common = [present.Column("setting", "setting", kind="text"),
                  present.Column("offered", "offered", kind="rate"),
                  present.Column("answered", "answered", kind="rate")]
        notes: list[str] = []
        if view == "latency":
            columns = common + [
                present.Column("p50", "p50", kind="time", missing="no request answered"),
                present.Column("p99", "p99", kind="time", missing="no request answered"),
                present.Column("refused", "refused", kind="count"),
                present.Column("kept_up", "kept up", kind="bool")]
            notes.append("offered: the arrival rate asked for; answered: requests answered per second; p50 and p99: "
                         "latency from each request's scheduled arrival to its answer; refused: answered 503 because "
                         f"the queue was full; kept up: answered at least {SUSTAINED_SHARE:.0%} of the arrivals with "
                         f"under {SUSTAINED_REFUSED:.0%} refused.")
            notes.append(self.knee_line())
        elif view == "batches":
            columns = common + [
                present.Column("batch_rows", "rows per batch", kind="number"),
                present.Column("padding", "padding", kind="percent"),
                present.Column("queue_p50", "queue p50", kind="time", missing="no request answered"),
                present.Column("worker_p50", f"{worker} p50", kind="time", missing="no request answered"),
                present.Column("busy", "GPU busy" if not self.on_cpu else "model busy", kind="percent"),
                present.Column("starved", "worker starved", kind="percent")]
            notes.append("rows per batch: the mean rows of the batches formed; padding: the share of the rows run "
                         "that were padding (bucket minus batch); queue p50: a request's median wait from the end of "
                         f"its pre-processing to its batch being cut; {worker} p50: {worker_means}; "
                         f"{'model' if self.on_cpu else 'GPU'} busy: the share of the run the model was computing; "
                         "worker starved: the share the worker waited "
                         "on an empty queue while requests were still in pre-processing.")
        elif view == "stages":
            columns = [present.Column("setting", "setting", kind="text"),
                       present.Column("offered", "offered", kind="rate")] + [
                present.Column(f"{stage}_p50", STAGE_WORDS[stage] if stage != "gpu" else worker, kind="time",
                               missing="no request answered") for stage in STAGES]
            notes.append("The median time of each stage of a request, in order: pre-processing, the queue (batching "
                         f"window included), the {worker} ({worker_means}), post-processing, and what lies outside "
                         "the service (event-loop hops, the transport, the generator's lag).")
        else:
            columns = common + [present.Column("lag_p50", "lag p50", kind="time", missing="nothing sent"),
                                present.Column("lag_p99", "lag p99", kind="time", missing="nothing sent")]
            notes.append("lag: how late the load generator sent each request after its scheduled arrival (the "
                         "latencies count from the schedule, so a late send counts against the service).")
        notes = [*(f"recorded mode: {note}" for note in self.notes), *notes, self.where()]
        title = f"{self.model} load test" + (", on a CPU: nothing captured, the graphs settings pad to a bucket and "
                                              "run eagerly" if self.on_cpu else "")
        return present.Table(rows, columns, index="setting", title=title, notes=notes)

    def _view_row(self, p: LoadPoint) -> dict[str, Any]:
        stages = {f"{s}_p50": p.stages_us.get(s, {}).get("p50") for s in STAGES}
        return {"setting": self.label(p.setting), "offered": p.offered_rps, "answered": p.achieved_rps,
                "p50": p.latency_us.get("p50"), "p99": p.latency_us.get("p99"), "refused": p.refused_total,
                "kept_up": p.sustained, "batch_rows": p.mean_batch_rows, "padding": p.pad_waste_pct,
                "queue_p50": stages["queue_p50"], "worker_p50": stages["gpu_p50"], "busy": p.gpu_busy_pct,
                "starved": p.worker_starved_pct, "lag_p50": p.lag_us.get("p50"), "lag_p99": p.lag_us.get("p99"),
                **stages}

    def knee_line(self) -> str:
        knees = [f"{self.label(s)} {present.number(k)} req/s" if k is not None else f"{self.label(s)} none of its rates"
                 for s, k in self.knees().items()]
        return f"knee (the highest rate a setting kept up with): {present.listing(knees)}."

    def knee_table(self) -> present.Table:
        """Each setting's knee (the highest offered rate it kept up with), its latency there, and what happened at
        the next rate it was offered: why the knee is where it is."""
        rows = []
        for setting in self.settings():
            points = self.for_setting(setting)
            knee = self.knees()[setting]
            at = next((p for p in points if p.offered_rps == knee), None)
            above = [p for p in points if knee is None or p.offered_rps > knee]
            nxt = above[0] if above else None
            rows.append({"setting": self.label(setting), "knee": knee,
                         "p99": at.latency_us.get("p99") if at else None,
                         "next": nxt.offered_rps if nxt else None, "next_answered": nxt.achieved_rps if nxt else None,
                         "next_p99": nxt.latency_us.get("p99") if nxt else None,
                         "next_refused": nxt.refused_total if nxt else None})
        columns = [present.Column("setting", "setting", kind="text"),
                   present.Column("knee", "keeps up to", kind="rate", missing="kept up with none of its rates"),
                   present.Column("p99", "p99 at the knee", kind="time", missing="kept up with none of its rates"),
                   present.Column("next", "next rate", kind="rate", missing="no higher rate was offered"),
                   present.Column("next_answered", "answered at the next rate", kind="rate",
                                  missing="no higher rate was offered"),
                   present.Column("next_p99", "p99 at the next rate", kind="time",
                                  missing="no higher rate was offered"),
                   present.Column("next_refused", "refused at the next rate", kind="count",
                                  missing="no higher rate was offered")]
        notes = [f"keeps up: answers at least {SUSTAINED_SHARE:.0%} of the arrivals with under "
                 f"{SUSTAINED_REFUSED:.0%} refused. The columns after it are the next rate in the sweep, where it "
                 "no longer keeps up.", self.where()]
        return present.Table(rows, columns, index="setting", title=f"{self.model}: the knee of each setting",
                             notes=notes)

    def to_dict(self) -> dict[str, Any]:
        return {"schema": LOADTEST_SCHEMA, "model": self.model, "points": [p.to_dict() for p in self.points],
                "config": self.config, "conditions": self.conditions, "timelines": self.timelines}

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "live") -> LoadTest:
        if not isinstance(data, dict) or "model" not in data or "points" not in data:
            raise ResultsError("a load test needs 'model' and 'points'")
        return cls(model=str(data["model"]), points=[LoadPoint.from_dict(p) for p in data["points"]],
                   config=dict(data.get("config", {})), conditions=dict(data.get("conditions", {})),
                   timelines=dict(data.get("timelines", {})), source=source)

    @classmethod
    def from_recording(cls, data: dict[str, Any], recording: Any) -> LoadTest:
        """A load test read by `gl.load`: its source is the recording's banner (where and when it was measured)."""
        return cls.from_dict(data, source=recording.banner())


__all__ = ["BATCH_COLUMNS", "CPU_LABELS", "LoadPoint", "LoadTest", "REQUEST_COLUMNS", "STAGES", "TABLE_VIEWS",
           "setting_label", "summarize_point", "timeline_key", "timeline_window"]
