"""Typed views of the graph cache's measurements and of the traffic replay, for tables and notebooks.

`CacheFigures` wraps what `graphlab record --models cache` measured (hot path, pools, eviction, threads,
the padding check); `TrafficReplay` what `--models traffic` measured. Both are results types
(`graphlab.results_types.recorded_result`): `gl.load(CacheFigures)` and `gl.load(TrafficReplay)` read them from
their recordings (`graphlab.studies.cache.cache_figures()` and `graphlab.studies.traffic.traffic_replay()` measure
them on a GPU, or read the recording in recorded mode). Both show themselves as tables for people
(`figures.table("pools")`, `replay.table("steady")`: `graphlab.present.Table`s whose title says where and when
they were measured), give their raw rows to code (`.pools()`, `.settings()` ... as lists of dicts, or pandas with
`to_pandas`), and say where they came from (`.where`).

Pure (no torch); pandas only when asked for.
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import Any

from graphlab.cache.buckets import POLICIES
from graphlab.cache.stats import CacheStats
from graphlab.errors import BadInputError, RecordingError
from graphlab.present import Code, Column, Table, count, duration, error, facts, listing
from graphlab.results_types import recorded_result

MIB = 2**20


def _frame(rows: list[dict[str, Any]], index: str | None = None) -> Any:
    import pandas as pd

    frame = pd.DataFrame(rows)
    return frame.set_index(index) if index and index in frame else frame


def _where(provenance: dict[str, Any]) -> str:
    if not provenance:
        return "measured live in this process"
    return (f"recorded on {provenance.get('gpu')} (driver {provenance.get('driver')}, torch "
            f"{provenance.get('torch')}) on {str(provenance.get('date', ''))[:10]}: {provenance.get('command')}")


def _short_where(provenance: dict[str, Any]) -> str:
    """"recorded on NVIDIA H200 on 2026-12-03", or "measured live in this process": for a table's title."""
    if not provenance:
        return "measured live in this process"
    return f"recorded on {provenance.get('gpu')} on {str(provenance.get('date', ''))[:10]}"


def _source_note(provenance: dict[str, Any]) -> list[str]:
    if not provenance:
        return []
    return [f"Made by `{provenance.get('command')}` (driver {provenance.get('driver')}, torch {provenance.get('torch')})."]


#: the hot path's variants in words, in the order the table shows them
HOT_PATH_CALLS = {
    "raw_copy_replay": "by hand: `static.copy_(x); graph.replay()`",
    "captured_call": "a captured graph: `cg(x)`",
    "cache_hit_views": "a cache hit returning views (`copy_outputs=False`)",
    "cache_hit_copies": "a cache hit returning copies (the default)",
}

#: the padding check's models in words
PADDING_MODELS = {"encoder": "the zoo encoder (bidirectional)", "causal_gpt": "the zoo GPT (causal decoder)"}

#: the cache figures' tables (`CacheFigures.table`)
FIGURE_TABLES = ("pools", "eviction", "hot_path", "padding_check", "threads")
#: the results files of the cache recording a `CacheFigures` reads, each handed over whole (a part that failed when
#: it was recorded holds {"error": ...})
FIGURE_PARTS = ("hot_path", "hot_path_gpt", "pools", "eviction", "threads", "padding_check", "demo_stats")


@recorded_result(entries=FIGURE_PARTS, recording="cache", schema=1)
@dataclass(frozen=True)
class CacheFigures:
    """The graph cache measured on a GPU (see graphlab/studies/cache_bench.py for how); `gl.load(CacheFigures)`
    reads the cache recording's."""

    data: dict[str, Any]
    provenance: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_recording(cls, parts: dict[str, Any], recording: Any) -> CacheFigures:
        """The figures read by `gl.load`: every part of the cache recording, with its provenance."""
        return cls(dict(parts), recording.provenance)

    def _part(self, key: str) -> Any:
        part = self.data.get(key)
        if part is None or "error" in part:
            raise RecordingError(f"the cache figures have no {key!r} part"
                                 + (f" (it failed: {part['error']})" if part else ""))
        return part

    @property
    def where(self) -> str:
        return _where(self.provenance)

    # -- raw rows, for code ------------------------------------------------------------------------------------
    def hot_path(self, model: str = "mlp") -> list[dict[str, Any]]:
        """Host µs per call of a cache hit vs raw copy_ + replay and CapturedGraph(x), one row per variant."""
        part = self._part("hot_path" if model == "mlp" else f"hot_path_{model}")
        base = part["variants"]["raw_copy_replay"]["median_us"]
        return [{"call": name, "median_us": v["median_us"], "best_us": v["best_us"],
                 "slowest_us": max(v.get("blocks_us") or [v["median_us"]]),
                 "over_raw_copy_replay_us": v["median_us"] - base} for name, v in part["variants"].items()]

    def pools(self) -> list[dict[str, Any]]:
        """Memory of every bucket's graph in a shared pool, in one pool each, and the largest graph alone."""
        part = self._part("pools")
        rows = []
        for model, row in part["models"].items():
            out: dict[str, Any] = {"model": model}
            for mode in ("shared", "private", "largest_alone"):
                growth = row.get(mode, {}).get("reserved_growth_bytes")
                out[f"{mode}_MiB"] = None if growth is None else growth / MIB
            out["shared_over_largest"] = row.get("shared_over_largest")
            out["private_over_largest"] = row.get("private_over_largest")
            out["graphs"] = row.get("shared", {}).get("graphs")
            rows.append(out)
        return rows

    def eviction(self) -> list[dict[str, Any]]:
        part = self._part("eviction")
        return [{"pool": mode, **{k.replace("_bytes", "_MiB"): v / MIB if k.endswith("_bytes") else v
                                  for k, v in r.items()}} for mode, r in part["results"].items()]

    def threads(self) -> dict[str, Any]:
        return dict(self._part("threads"))

    def padding_check(self) -> dict[str, Any]:
        return dict(self._part("padding_check"))

    def demo_stats(self) -> CacheStats:
        """The stats of the GPT cache the recording ran the short request stream through (its captures, capture
        time and pool), titled with where it was measured."""
        part = self._part("demo_stats")
        return CacheStats.from_dict(part["stats"], where=_short_where(self.provenance))

    def to_pandas(self, table: str = "pools") -> Any:
        """One of the tables ("pools", "hot_path", "eviction") as a DataFrame, unformatted."""
        rows = {"pools": self.pools, "hot_path": self.hot_path, "eviction": self.eviction}[table]()
        return _frame(rows)

    # -- tables, for people ----------------------------------------------------------------------------------------
    def table(self, which: str = "pools", model: str = "mlp") -> Table:
        """One of the figures as a table for people: "pools", "eviction", "hot_path" (of `model`),
        "padding_check" or "threads"; its title says what and where it was measured."""
        if which not in FIGURE_TABLES:
            raise BadInputError(f"no cache figure {which!r}: choose one of {', '.join(FIGURE_TABLES)}")
        return getattr(self, f"_{which}_table")(model) if which == "hot_path" else getattr(self, f"_{which}_table")()

    def _pools_table(self) -> Table:
        part = self._part("pools")
        rows = []
        for model, row in part["models"].items():
            out: dict[str, Any] = {"model": Code(model)}
            for mode in ("shared", "private", "largest_alone"):
                out[mode] = row.get(mode, {}).get("reserved_growth_bytes")
            out["shared_x"], out["private_x"] = row.get("shared_over_largest"), row.get("private_over_largest")
            rows.append(out)
        buckets = listing(part.get("buckets") or [])
        columns = [Column("model", "model", kind="code"),
                   Column("shared", "one shared pool", kind="bytes"),
                   Column("private", "one pool per graph", kind="bytes"),
                   Column("largest_alone", "the largest graph alone", kind="bytes"),
                   Column("shared_x", "shared pool ÷ largest alone", kind="ratio"),
                   Column("private_x", "one pool each ÷ largest alone", kind="ratio")]
        return Table(rows, columns, index="model", notes=_source_note(self.provenance),
                     title=f"Memory the graphs of buckets {buckets} took, captured ahead largest first, "
                           f"{_short_where(self.provenance)}")

    def _eviction_table(self) -> Table:
        part = self._part("eviction")
        label = {"shared": "one shared pool", "private": "one pool per graph"}
        order = sorted(part["results"], key=lambda mode: (mode != "shared", mode))
        rows = [{"pool": label.get(mode, mode), **part["results"][mode]} for mode in order]
        columns = [Column("pool", "pool", kind="text"),
                   Column("holding_64_and_32_bytes", "holding graphs 64 and 32", kind="bytes"),
                   Column("after_evicting_them_for_16_and_8_bytes", "after 16 and 8 evicted them", kind="bytes"),
                   Column("after_clear_bytes", "after clear()", kind="bytes"),
                   Column("evictions", "graphs evicted", kind="count")]
        return Table(rows, columns, index="pool", notes=_source_note(self.provenance),
                     title=f"GPU memory a cache of the zoo's `{part.get('model', '')}` with max_graphs={part.get('max_graphs')} held "
                           f"(growth of reserved memory), {_short_where(self.provenance)}")

    def _hot_path_table(self, model: str = "mlp") -> Table:
        part = self._part("hot_path" if model == "mlp" else f"hot_path_{model}")
        variants = part["variants"]
        base = variants["raw_copy_replay"]["median_us"]
        order = [k for k in HOT_PATH_CALLS if k in variants] + [k for k in variants if k not in HOT_PATH_CALLS]
        rows = [{"call": HOT_PATH_CALLS.get(k, k), "median": variants[k]["median_us"], "best": variants[k]["best_us"],
                 "slowest": max(variants[k].get("blocks_us") or [variants[k]["median_us"]]),
                 "over": variants[k]["median_us"] - base} for k in order]
        blocks = len(variants["raw_copy_replay"].get("blocks_us") or [])
        calls = re.search(r"blocks of (\d+) calls", part.get("method", ""))
        how = (f"{count(blocks)} interleaved blocks of {count(int(calls.group(1)))} calls each" if calls and blocks
               else "interleaved blocks")
        columns = [Column("call", "call", kind="text"), Column("median", "median block", kind="time"),
                   Column("best", "best block", kind="time"), Column("slowest", "slowest block", kind="time"),
                   Column("over", "median minus by hand", kind="time")]
        return Table(rows, columns, index="call", notes=_source_note(self.provenance),
                     title=f"Host time per call of the zoo's `{part.get('model', model)}` at batch {part.get('batch_size', 1)} "
                           f"({how}), {_short_where(self.provenance)}")

    def _padding_check_table(self) -> Table:
        part = self._part("padding_check")
        rows = []
        for model, row in part.items():
            rows.append({"model": PADDING_MODELS.get(model, model),
                         "did": ("raised PaddingError: nothing returned" if row.get("raised")
                                 else "padded and answered"),
                         "err": row.get("max_abs_err", row.get("max_abs_err_vs_eager"))})
        asked = re.search(r"bucket (\d+) for size (\d+)", str(part.get("encoder", {}).get("message", "")))
        request = (f"a request of {asked.group(2)} tokens padded to the {asked.group(1)}-token bucket"
                   if asked else "a padded sequence")
        columns = [Column("model", "model", kind="text"), Column("did", "what the cache did", kind="text"),
                   Column("err", "largest difference from eager", kind="error")]
        return Table(rows, columns, index="model", notes=_source_note(self.provenance),
                     title=f"The padding check with real graphs, {request}, {_short_where(self.provenance)}")

    def _threads_table(self) -> Table:
        part = self._part("threads")
        errors = part.get("errors") or []
        calls = part.get("calls", part.get("threads", 0) * part.get("calls_per_thread", 0))
        return facts([
            ("threads", count(part.get("threads"))),
            ("calls per thread", count(part.get("calls_per_thread"))),
            ("calls in all", count(calls)),
            ("calls that raised", count(len(errors))),
            ("graphs captured", f"{count(part.get('captures'))} for {count(part.get('graphs'))} buckets"),
            ("largest difference from eager", error(part.get("max_abs_err_vs_eager"))),
            ("time for all the calls", duration(part.get("seconds", 0.0) * 1e6)),
            ("threads still running after join", count(part.get("alive_after_join", 0))),
        ], title=f"{count(part.get('threads'))} threads calling one GraphCache of the zoo's `{part.get('model', '')}` with "
                 f"mixed sizes, {_short_where(self.provenance)}", notes=_source_note(self.provenance))

    def _repr_html_(self) -> str:
        return (f"<b>Graph cache figures</b>: {html.escape(self.where)}; tables: "
                + ", ".join(f"<code>table({w!r})</code>" for w in FIGURE_TABLES))


def setting_words(name: str) -> str:
    """A traffic replay setting in words: "cache_pow2" -> "graph cache, powers of two"."""
    if name == "cache_advisor":
        return "graph cache, the advisor's buckets"
    if name.startswith("cache_"):
        policy = POLICIES.get(name.removeprefix("cache_"))
        return f"graph cache, {policy.label if policy else name.removeprefix('cache_')}"
    return {"eager": "eager", "compile": "`torch.compile`, reduce-overhead",
            "compile_dynamic": "`torch.compile`, reduce-overhead, `dynamic=True`"}.get(name, name)


#: the traffic replay's tables (`TrafficReplay.table`)
REPLAY_TABLES = ("steady", "first_pass")


@recorded_result(entry="traffic", recording="traffic", schema=1,
                 fields={"trace": 1, "latency_table": 1, "advice": 1, "settings": 1, "method": 1},
                 optional=("advice", "settings", "method"))
@dataclass(frozen=True)
class TrafficReplay:
    """A request trace replayed through eager, graph caches and torch.compile (graphlab/studies/traffic.py);
    `gl.load(TrafficReplay)` reads the traffic recording's. A replay whose latency table failed holds only the
    trace and the table's error (no advice, no settings)."""

    data: dict[str, Any]
    provenance: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_recording(cls, data: dict[str, Any], recording: Any) -> TrafficReplay:
        """The replay read by `gl.load`, with the recording's provenance."""
        return cls(dict(data), recording.provenance)

    def to_dict(self) -> dict[str, Any]:
        """What the traffic recording holds (`graphlab.loader.dump` stamps it with its schema)."""
        return dict(self.data)

    @property
    def where(self) -> str:
        return _where(self.provenance)

    @property
    def sizes(self) -> list[int]:
        """The request sizes of the trace, in order."""
        return list(self.data["trace"]["sizes"])

    @property
    def latency_table(self) -> dict[str, Any]:
        """Graph and eager latency (µs), pool and executable bytes and capture ms per batch size, measured
        before the replay: pass it to `gl.advise_buckets` as the latency (its "source" says where it was measured)."""
        table = self.data["latency_table"]
        out: dict[str, Any] = {k: {int(s): v for s, v in table[k].items()} for k in
                               ("graph_us", "eager_us", "pool_bytes", "exec_bytes", "capture_ms") if k in table}
        out["source"] = f"the traffic replay's latency table, {_short_where(self.provenance)}"
        return out

    @property
    def advice(self) -> Any:
        from graphlab.cache.advisor import BucketAdvice

        return BucketAdvice.from_dict(self.data["advice"])

    def settings(self) -> list[dict[str, Any]]:
        """One row per setting: steady-state p50/p99, first-pass p99 and max, graphs, recordings, memory."""
        rows = []
        for name, r in self.data["settings"].items():
            if "error" in r:
                rows.append({"setting": name, "error": r["error"].splitlines()[-1][:200]})
                continue
            rows.append({"setting": name, "p50_us": r["p50_us"], "p99_us": r["p99_us"], "mean_us": r["mean_us"],
                         "first_pass_p99_us": r["cold_p99_us"], "first_pass_max_us": r["cold_max_us"],
                         "setup_s": r["setup_s"], "graphs_held": r["graphs_held"],
                         "graph_recordings": r["graph_recordings"], "memory_MiB": r["reserved_growth_bytes"] / MIB,
                         "buckets": r.get("buckets")})
        return rows

    def setting(self, name: str) -> dict[str, Any]:
        """The raw measurements of one setting ("eager", "cache_advisor", "compile", ...), as recorded."""
        found = self.data["settings"].get(name)
        if found is None:
            raise RecordingError(f"no setting {name!r} in the traffic replay; it has "
                                 f"{', '.join(self.data['settings'])}")
        return {"setting": name, **found}

    def until_warm_s(self, name: str) -> float:
        """Seconds one setting took from its start to the end of the first pass: its setup (a cache's warm-up)
        plus the first pass over every request (torch.compile compiles during it)."""
        row = self.setting(name)
        if "error" in row:
            raise RecordingError(f"setting {name!r} failed in this replay: {row['error'].splitlines()[-1][:200]}")
        return float(row.get("setup_s") or 0.0) + float(row["first_pass_total_s"])

    def to_pandas(self) -> Any:
        return _frame(self.settings(), "setting")

    # -- tables, for people ----------------------------------------------------------------------------------------
    def table(self, view: str = "steady") -> Table:
        """The replay as a table for people, one row per setting: "steady" (the second pass: latency once every
        graph exists) or "first_pass" (what getting there cost: setup, the first pass, graphs recorded, memory)."""
        if view not in REPLAY_TABLES:
            raise BadInputError(f"no traffic replay view {view!r}: choose one of {', '.join(REPLAY_TABLES)}")
        ok = {k: r for k, r in self.data["settings"].items() if "error" not in r}
        failed = [f"{setting_words(k)} failed: {r['error'].splitlines()[-1][:120]}"
                  for k, r in self.data["settings"].items() if "error" in r]
        n = len(self.sizes)
        if view == "steady":
            rows = [{"setting": setting_words(k), "p50": r["p50_us"], "p90": r.get("p90_us"), "p99": r["p99_us"],
                     "mean": r["mean_us"],
                     "buckets": listing(r["buckets"]) if r.get("buckets") else None} for k, r in ok.items()]
            columns = [Column("setting", "setting", kind="text"), Column("p50", "p50", kind="time"),
                       Column("p90", "p90", kind="time"), Column("p99", "p99", kind="time"),
                       Column("mean", "mean", kind="time"),
                       Column("buckets", "buckets", kind="text",
                              missing="no buckets: eager runs every size as it is; torch.compile records graphs per "
                                      "size as they arrive")]
            return Table(rows, columns, index="setting", notes=failed + _source_note(self.provenance),
                         title=f"The second pass over the {count(n)} requests (every graph already made), each "
                               f"request timed alone, {_short_where(self.provenance)}")
        rows = []
        for k, r in ok.items():
            lazy = k.startswith("compile")
            rows.append({"setting": setting_words(k), "setup": None if lazy else r["setup_s"] * 1e6,
                         "first_total": r["first_pass_total_s"] * 1e6 if "first_pass_total_s" in r else None,
                         "first_p99": r["cold_p99_us"], "first_max": r["cold_max_us"],
                         "recorded_first": r.get("graph_recordings_first_pass"), "recorded": r["graph_recordings"],
                         "memory": r["reserved_growth_bytes"]})
        columns = [Column("setting", "setting", kind="text"),
                   Column("setup", "setup", kind="time",
                          missing="torch.compile sets up nothing ahead: it compiles and records graphs during the "
                                  "first pass, as sizes arrive"),
                   Column("first_total", "first pass", kind="time"),
                   Column("first_p99", "first pass p99", kind="time"),
                   Column("first_max", "slowest request", kind="time"),
                   Column("recorded_first", "graphs by its end", kind="count"),
                   Column("recorded", "graphs in all", kind="count"),
                   Column("memory", "memory", kind="bytes")]
        notes = ["setup: the cache's warm-up, every bucket captured before the first request. First pass: the time "
                 "for all the requests of the first pass, its p99 and its slowest request. Graphs by its end and in "
                 "all: CUDA graphs recorded up to the end of the first pass, and after both passes. Memory: growth "
                 "of the GPU memory reserved."]
        return Table(rows, columns, index="setting", notes=notes + failed + _source_note(self.provenance),
                     title=f"What the first pass over the {count(n)} requests cost (graphs made as they were "
                           f"needed, or ahead), {_short_where(self.provenance)}")

    def __str__(self) -> str:
        return (f"Traffic replay of {count(len(self.sizes))} requests: {self.data['trace']['description']}\n"
                f"{self.where}")

    def _repr_html_(self) -> str:
        return (f"<b>Traffic replay</b> of {count(len(self.sizes))} requests: "
                f"{html.escape(self.data['trace']['description'])}<br>{html.escape(self.where)}")


__all__ = ["CacheFigures", "FIGURE_PARTS", "FIGURE_TABLES", "HOT_PATH_CALLS", "REPLAY_TABLES", "TrafficReplay",
           "setting_words"]
