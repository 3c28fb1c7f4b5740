"""`graphlab record --models watch`: the gl.watch worked cases and the overhead check, as a recording.

Runs on the GPU in a fresh process (about 1 minute on an H200, estimated from the probe: torch.compile
of the zoo GPT in the compile case, then of two more copies in the overhead check) and writes
`<out>/<gpu>/watch/`:

    compile-NN.dot/.json    every graph the watch saw in the compile case (CUDAGraph Trees), with its
                            metadata under meta.json graphs[key]["watched"]
    capture-bN.dot/.json    graphlab's own capture (gl.capture) of the same GPT at batch N
    mgc-NN, block-NN        the make_graphed_callables and torch.cuda.graph cases
    examples.json           per case: calls, facts, graph keys, the gl.capture references' pool memory
    comparison.json         per batch size: gl.diff(torch.compile's graph, gl.capture's graph) counts
    overhead.json           watched vs unwatched replay latency and outputs (watch_overhead.py)

Graphs without a DOT, or whose DOT graphlab cannot read (torch.compile's empty pool-keeper graph may
be one), are kept in examples.json as metadata only. No absolute paths: user files are stored
relative to the working directory.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from graphlab.errors import GraphlabError
from graphlab.graph.diff import diff
from graphlab.recordings import gpu_slug, write_recording
from graphlab.studies import watch_examples, watch_overhead
from graphlab.studies.watch_examples import EXAMPLES
from graphlab.watch.records import RECORDING, WatchCases, WatchComparison

# RECORDING: the recording's name (`graphlab.watch.records.RECORDING`); its entries are written through the types
# `gl.load` reads them back with: WatchCases ("examples"), WatchComparison ("comparison"), WatchOverhead ("overhead")
PREFIXES = {"compile": "compile", "make_graphed_callables": "mgc", "torch.cuda.graph": "block"}
OVERHEAD_PAIRS = 100


def _graph_entries(example: Any, prefix: str) -> tuple[dict[str, dict[str, Any]], list[str], list[dict[str, Any]]]:
    """Recording entries for the graphs that have a readable DOT; metadata of the others."""
    entries: dict[str, dict[str, Any]] = {}
    keys: list[str] = []
    without: list[dict[str, Any]] = []
    for g in example.seen:
        meta = g.to_dict(include_dot=False)
        try:
            parsed = g.graph
        except GraphlabError as exc:
            without.append({**meta, "why": str(exc)})
            continue
        key = f"{prefix}-{g.index:02d}"
        entries[key] = {"dot": g.dot, "model": parsed, "example": example.name, "watched": meta}
        keys.append(key)
    return entries, keys, without


def record(out_root: Path, prov: dict[str, Any]) -> Path:
    """gl.watch on torch.compile, make_graphed_callables, torch.cuda.graph; its replay overhead."""
    graphs: dict[str, dict[str, Any]] = {}
    examples: dict[str, Any] = {}
    comparison: dict[int, dict[str, Any]] = {}
    for name in EXAMPLES:
        print(f"[record] watch: {name} ...", flush=True)
        example = watch_examples.run_example(name, progress=False)
        entries, keys, without = _graph_entries(example, PREFIXES[name])
        graphs.update(entries)
        info = {**example.to_dict(), "graph_keys": keys, "graphs_without_dot": without}
        references = {}
        for b, dot in example.reference_dots.items():
            key = f"capture-b{b}"
            graphs[key] = {"dot": dot, "model": example.reference[b], "example": name, "batch_size": b,
                           "pool_bytes": example.reference_pool_bytes.get(b), "captured_by": "gl.capture"}
            references[str(b)] = key
            d = diff(example.recording_for(b), example.reference[b],
                     names=(f"torch.compile b{b}", f"gl.capture b{b}"))
            comparison[b] = {"summary": d.summary(), "count_by_status": d.count_by_status(),
                             "count_by_kind": {k: list(v) for k, v in d.count_by_kind().items()}}
        info["reference_keys"] = references
        examples[name] = info
        print(f"[record] watch: {name}: {len(example.seen)} graphs ({len(without)} without DOT); {example.facts}",
              flush=True)
    print(f"[record] watch: overhead check ({OVERHEAD_PAIRS} pairs) ...", flush=True)
    overhead = watch_overhead.measure_watch_overhead(pairs=OVERHEAD_PAIRS, progress=False)
    print(f"[record] watch: {overhead.describe()}", flush=True)
    overhead_data = overhead.to_dict()
    overhead_data.pop("source", None)  # the recording's provenance says where it ran
    folder = out_root / gpu_slug(prov["gpu"]) / RECORDING
    write_recording(folder, name=RECORDING,
                    description="What gl.watch saw: torch.compile(mode='reduce-overhead') on the zoo GPT at "
                                "batch sizes 1, 4, 8 (with graphlab's own capture of the same model), "
                                "make_graphed_callables and a torch.cuda.graph block; and the watch's "
                                "replay overhead, measured.",
                    provenance=prov, graphs=graphs,
                    results={"examples": WatchCases(examples).to_dict(),
                             "comparison": WatchComparison(comparison).to_dict(), "overhead": overhead_data})
    return folder


__all__ = ["OVERHEAD_PAIRS", "PREFIXES", "RECORDING", "record"]
