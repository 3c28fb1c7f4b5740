"""Typed views of the graph cache's measurements and of the traffic replay, for tables and notebooks.

`CacheFigures` wraps what `graphlab record --models cache` measured (hot path, pools, eviction, threads,
the padding check); `TrafficReplay` what `--models traffic` measured. Both read as tables
(`.pools()`, `.settings()` ... as lists of rows, or pandas with `to_pandas`) and say where they came from.

Layer 0 (pure); pandas only when asked for.
"""
from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

from graphlab.errors import RecordingError

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


@dataclass(frozen=True)
class CacheFigures:
    """The graph cache measured on a GPU (see graphlab/studies/cache_bench.py for how)."""

    data: dict[str, Any]
    provenance: dict[str, Any] = field(default_factory=dict)

    def _part(self, key: str) -> Any:
        part = self.data.get(key)
        if part is None or "error" in part:
            raise RecordingError(f"the cache figures have no {key!r} part"
                                 + (f" (it failed: {part['error']})" if part else ""))
        return part

    @property
    def where(self) -> str:
        return _where(self.provenance)

    def hot_path(self, model: str = "mlp") -> list[dict[str, Any]]:
        """Host µs per call of a cache hit vs raw copy_ + replay and CapturedGraph(x), one row per variant."""
        part = self._part("hot_path" if model == "mlp" else f"hot_path_{model}")
        base = part["variants"]["raw_copy_replay"]["median_us"]
        return [{"call": name, "median_us": v["median_us"], "best_us": v["best_us"],
                 "over_raw_copy_replay_us": v["median_us"] - base} for name, v in part["variants"].items()]

    def pools(self) -> list[dict[str, Any]]:
        """Memory of every bucket's graph in a shared pool, in one pool each, and the largest graph alone."""
        part = self._part("pools")
        rows = []
        for model, row in part["models"].items():
            out = {"model": model}
            for mode in ("shared", "private", "largest_alone"):
                out[f"{mode}_MiB"] = row.get(mode, {}).get("reserved_growth_bytes", float("nan")) / MIB
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

    def demo_stats(self) -> dict[str, Any]:
        return dict(self._part("demo_stats"))

    def to_pandas(self, table: str = "pools") -> Any:
        """One of the tables ("pools", "hot_path", "eviction") as a DataFrame."""
        rows = {"pools": self.pools, "hot_path": self.hot_path, "eviction": self.eviction}[table]()
        return _frame(rows)

    def _repr_html_(self) -> str:
        return f"<b>Graph cache figures</b>: {html.escape(self.where)}; tables: pools(), hot_path(), eviction()"


@dataclass(frozen=True)
class TrafficReplay:
    """A request trace replayed through eager, graph caches and torch.compile (graphlab/studies/traffic.py)."""

    data: dict[str, Any]
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return _where(self.provenance)

    @property
    def sizes(self) -> list[int]:
        """The request sizes of the trace, in order."""
        return list(self.data["trace"]["sizes"])

    @property
    def latency_table(self) -> dict[str, dict[int, float]]:
        """Graph and eager latency (µs), pool and executable bytes and capture ms per batch size, measured
        before the replay: pass it to `gl.advise_buckets` as the latency."""
        table = self.data["latency_table"]
        return {k: {int(s): v for s, v in table[k].items()} for k in
                ("graph_us", "eager_us", "pool_bytes", "exec_bytes", "capture_ms") if k in table}

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
        for row in self.settings():
            if row["setting"] == name:
                return row
        raise RecordingError(f"no setting {name!r} in the traffic replay; it has "
                             f"{[r['setting'] for r in self.settings()]}")

    def to_pandas(self) -> Any:
        return _frame(self.settings(), "setting")

    def _repr_html_(self) -> str:
        return (f"<b>Traffic replay</b> of {len(self.sizes)} requests: {html.escape(self.data['trace']['description'])}"
                f"<br>{html.escape(self.where)}")


__all__ = ["CacheFigures", "TrafficReplay"]
