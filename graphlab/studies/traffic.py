"""`graphlab record --models traffic` and `traffic_replay()`: a request trace replayed through eager, graph
caches and torch.compile, one fresh process per setting.

    >>> replay = traffic_replay()       # run here on a GPU (about 2 minutes on an H200), or the recording

Settings: "eager"; "cache_advisor" (GraphCache with the advisor's buckets for this trace, from a latency
table measured first in its own process); "cache_pow2"; "compile" (`torch.compile(mode="reduce-overhead")`);
"compile_dynamic" (`... dynamic=True`). Each replays the trace twice, back to back (closed loop: each
request is timed alone, from the call to `torch.cuda.synchronize()` returning): the first pass pays
captures, compiles and re-recordings as they happen (lazy), the second shows the steady state. The graph
caches capture their buckets ahead (`warm_up`), as a server would at start-up, and that time is reported.
Graph recordings by torch.compile are counted by wrapping `torch.cuda.CUDAGraph.capture_begin/end` for
the duration of the run.
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, Callable

import torch

from graphlab.cache.advisor import advise_buckets
from graphlab.cache.buckets import bucket_list
from graphlab.cache.graph_cache import GraphCache
from graphlab.cache.results import TrafficReplay
from graphlab.cache.traces import RequestTrace, make_trace
from graphlab.env import require_cuda
from graphlab.errors import BadInputError
from graphlab.fresh_process import run_in_fresh_process
from graphlab.loader import dump, load
from graphlab.mode import stand_in
from graphlab.recordings import gpu_slug, write_recording
from graphlab.stats import median, percentile
from graphlab.clock import Stopwatch, each_synced_us
from graphlab.timing.sync import cuda_sync
from graphlab.zoo import get_model

#: the recording's name, as `TrafficReplay` declares it (a literal: `graphlab record --help` reads it here)
RECORDING = "traffic"
SETTINGS = ("eager", "cache_advisor", "cache_pow2", "compile", "compile_dynamic")


def _timed_pass(call: Callable[[Any], Any], inputs: list[Any]) -> list[float]:
    """Wall µs of each request of a trace, one at a time (graphlab.clock.each_synced_us)."""
    return each_synced_us(call, inputs, cuda_sync())


class GraphRecordCounter:
    """Counts CUDA graph captures (and their host time) made through torch.cuda.CUDAGraph while active."""

    def __init__(self) -> None:
        self.cls = torch.cuda.CUDAGraph
        self.count, self.capture_ms, self._clock = 0, 0.0, Stopwatch()

    def __enter__(self) -> GraphRecordCounter:
        begin, end, counter = self.cls.capture_begin, self.cls.capture_end, self
        self._saved = (begin, end)

        def capture_begin(graph: Any, *args: Any, **kwargs: Any) -> Any:
            counter._clock.start()
            return begin(graph, *args, **kwargs)

        def capture_end(graph: Any) -> Any:
            result = end(graph)
            counter.count += 1
            counter.capture_ms += counter._clock.stop() * 1e3
            return result

        self.cls.capture_begin, self.cls.capture_end = capture_begin, capture_end
        return self

    def __exit__(self, *exc: Any) -> None:
        self.cls.capture_begin, self.cls.capture_end = self._saved


def latency_table(model_name: str = "gpt", max_size: int = 64, calls: int = 60) -> dict[str, Any]:
    """Graph and eager latency at every batch size 1..max_size (median of `calls` synchronised calls)."""
    zoo = get_model(model_name)
    model = zoo.build()
    cache = GraphCache(model, buckets="every", max_size=max_size, copy_outputs=False)
    graph, eager, pool, exec_bytes, capture = {}, {}, {}, {}, {}
    with torch.no_grad():
        for n in range(1, max_size + 1):
            (x,) = zoo.make_inputs(n, seed=n)
            for _ in range(5):
                model(x)
                cache(x)
            pair_e, pair_g = [], []
            for _ in range(calls):  # interleaved per call: both see the same host state
                pair_e += _timed_pass(model, [x])
                pair_g += _timed_pass(cache, [x])
            eager[n], graph[n] = median(pair_e), median(pair_g)
            g = cache.graph_for(n)
            pool[n], exec_bytes[n], capture[n] = g.pool_bytes, g.exec_bytes or 0, g.capture_ms
    return {"model": model_name, "graph_us": graph, "eager_us": eager, "pool_bytes": pool, "exec_bytes": exec_bytes,
            "capture_ms": capture, "method": f"median of {calls} synchronised calls per size, eager and graph "
                                             "interleaved call by call; graphs from one GraphCache (buckets=every)"}


def replay_one(setting: str, trace: dict[str, Any], buckets: list[int] | None, model_name: str = "gpt") -> dict[str, Any]:
    """Replay `trace` through one setting in this process (see the module docstring)."""
    requests = RequestTrace.from_dict(trace)
    zoo = get_model(model_name)
    model = zoo.build()
    inputs = [zoo.make_inputs(n, seed=i)[0] for i, n in enumerate(requests.sizes)]
    torch.cuda.synchronize()
    base_reserved = torch.cuda.memory_reserved()
    torch.cuda.reset_peak_memory_stats()
    setup_s = 0.0
    graphs: int | None = None
    cache_buckets: list[int] | None = None  # "cache_<policy>" replays that bucket policy of graphlab.cache.buckets
    with torch.no_grad(), GraphRecordCounter() as counter:
        if setting == "eager":
            call: Callable[[Any], Any] = model
        elif setting.startswith("cache"):
            cache_buckets = buckets if setting == "cache_advisor" else bucket_list(setting.removeprefix("cache_"), 64)
            cache = GraphCache(model, buckets=cache_buckets, max_size=64, copy_outputs=False)
            with Stopwatch(cuda_sync()) as warming:
                cache.warm_up(inputs[0], progress=False)
            setup_s = warming.s
            call = cache
        elif setting in ("compile", "compile_dynamic"):
            torch._dynamo.reset()
            compiled = torch.compile(model, mode="reduce-overhead", dynamic=True if setting == "compile_dynamic" else None)

            def call(x: Any) -> Any:
                torch.compiler.cudagraph_mark_step_begin()
                return compiled(x)
        else:
            raise BadInputError(f"unknown setting {setting!r}; choose from {', '.join(SETTINGS)}")
        cold = _timed_pass(call, inputs)
        captured_cold = counter.count
        warm = _timed_pass(call, inputs)
        if setting.startswith("cache"):
            graphs = len(cache)
        out = {"setting": setting, "buckets": cache_buckets,
               "setup_s": setup_s, "graphs_held": graphs, "graph_recordings": counter.count,
               "graph_recordings_first_pass": captured_cold, "graph_recording_ms": counter.capture_ms,
               "first_pass_total_s": sum(cold) / 1e6, "cold_p50_us": percentile(cold, 50),
               "cold_p99_us": percentile(cold, 99), "cold_max_us": max(cold),
               "p50_us": percentile(warm, 50), "p90_us": percentile(warm, 90), "p99_us": percentile(warm, 99),
               "mean_us": sum(warm) / len(warm), "requests": len(inputs)}
    if setting.startswith("compile"):
        try:
            counters = torch._dynamo.utils.counters  # torch loads _dynamo on first use (torch.compile did)
            out["inductor_counters"] = {k: int(v) for k, v in counters["inductor"].items()}
            out["cudagraph_skips"] = int(counters["inductor"].get("cudagraph_skips", 0))
        except Exception as exc:  # noqa: BLE001 - the figures stand without the counters
            out["inductor_counters"] = {"error": str(exc)}
    torch.cuda.synchronize()
    out["reserved_growth_bytes"] = torch.cuda.memory_reserved() - base_reserved
    out["peak_reserved_bytes"] = torch.cuda.max_memory_reserved()
    return out


def replay_all(n_requests: int = 400, max_graphs: int = 6, seed: int = 0,
               settings: tuple[str, ...] = SETTINGS) -> dict[str, Any]:
    """The whole comparison: latency table, advisor, then every setting in a fresh process."""
    trace = make_trace(n_requests=n_requests, seed=seed)
    table = run_in_fresh_process("from graphlab.studies.traffic import latency_table; from graphlab.fresh_process "
                                 "import result_line; print(result_line(latency_table()))", timeout_s=400)
    if "error" in table:
        return {"trace": trace.to_dict(), "latency_table": table}
    for key in ("graph_us", "eager_us", "pool_bytes", "exec_bytes", "capture_ms"):
        table[key] = {int(k): v for k, v in table[key].items()}
    advice = advise_buckets(trace.histogram(), table["graph_us"], max_graphs=max_graphs)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.json"
        path.write_text(json.dumps(trace.to_dict()))
        for setting in settings:
            code = (f"import json; from graphlab.studies.traffic import replay_one; trace = json.load(open({str(path)!r})); "
                    "from graphlab.fresh_process import result_line; "
                    f"print(result_line(replay_one({setting!r}, trace, {list(advice.buckets)!r})))")
            results[setting] = run_in_fresh_process(code, timeout_s=400)
    return {"trace": trace.to_dict(), "latency_table": {k: ({str(s): v for s, v in val.items()} if isinstance(val, dict)
                                                          else val) for k, val in table.items()},
            "advice": advice.to_dict(), "settings": results,
            "method": "closed loop: each request timed alone from the call to torch.cuda.synchronize() returning; "
                      "two passes over the trace (cold: captures/compiles as they happen; warm: steady state); "
                      "each setting in a fresh process"}


def record(out_root: Path, prov: dict[str, Any]) -> Path:
    """A request trace through eager, GraphCache (advisor, powers of two) and torch.compile."""
    print("[record] traffic: latency table, advisor, then each setting in a fresh process", flush=True)
    result = replay_all()
    folder = out_root / gpu_slug(prov["gpu"]) / RECORDING
    write_recording(folder, name=RECORDING, description="A request trace (log-normal sizes, Poisson arrivals, "
                    "seed 0) replayed through eager, GraphCache (advisor buckets, powers of two) and torch.compile "
                    "reduce-overhead (static and dynamic=True) on the zoo GPT.", provenance=prov, graphs={},
                    results={"traffic": dump(TrafficReplay(result))})
    return folder


def _recorded_replay() -> TrafficReplay:
    """The traffic recording's replay (recorded mode): `gl.load(TrafficReplay)`."""
    return load(TrafficReplay)


@stand_in(_recorded_replay)
def traffic_replay() -> TrafficReplay:
    """The traffic replay: run here on a GPU (about two minutes), or the recording in recorded mode."""
    require_cuda("traffic_replay")
    return TrafficReplay(replay_all())


__all__ = ["GraphRecordCounter", "RECORDING", "SETTINGS", "latency_table", "record", "replay_all", "replay_one",
           "traffic_replay"]
