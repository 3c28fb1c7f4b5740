"""Four ways to run one decode step, side by side in one harness (GPU).

    >>> report = compare_decode("llama", batch_sizes=[1, 4, 16, 64])          # doctest: +SKIP
    >>> print(report.table())

The ways (graphlab.decode.results.WAYS): Hugging Face eager with a StaticCache; the same step under
`torch.compile(mode="reduce-overhead")` (CUDAGraph Trees); graphlab's graph of the eager step; graphlab's
graph of the step compiled in default mode (Inductor's kernels, no CUDA graphs of compile's own). Every
way runs the same `DecodeStep` (token ids and cache position in, next token and logits out) on a cache of
its own, one step per call, so `generate`'s Python loop counts for none of them. Timing is
`graphlab.timing.blocks.BlockTimer`: each way warmed up until its median settles, then blocks of ~10 ms of
synchronised calls, the ways interleaved round by round (rotated), every call wall-timed on the host.

Start-up: graphlab's capture of each bucket (warm-up on scratch + capture), reduce-overhead's first
calls until it replays (compile, warm-up, record), the compiled capture (compile in the scratch warm-up,
then capture). `cold_inductor_cache()` points Inductor and Triton at fresh folders first.
What compile did is kept per compiled way (graphlab.watch.compile_log + gl.watch).
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from typing import Any, Callable, Iterator, Sequence

import torch

from graphlab.clock import Stopwatch
from graphlab.decode.graphs import DecodeGraphs
from graphlab.decode.options import ROUNDS, DecodeOptions
from graphlab.decode.models import (CONFIGS, DecodeStep, build_model, decode_step, hf_greedy, make_cache,
                                    make_prompts, prefill)
from graphlab.decode.results import WAYS, DecodeReport, StepTiming
from graphlab.env import require_cuda
from graphlab.errors import BadInputError
from graphlab.present import count, duration, yes_no
from graphlab.stats import percentile
from graphlab.timing.blocks import BlockTimer, calls_for, warm_up
from graphlab.timing.schedulers import round_order
from graphlab.watch.api import Watch
from graphlab.watch.compile_log import watch_compile

BLOCK_MS = 10.0


@contextlib.contextmanager
def stopwatch() -> Iterator[dict[str, float]]:
    """One duration, ms, after the GPU finished: `with stopwatch() as t: ...; t["ms"]` (a one-shot cost, not a
    latency: latencies go through graphlab.timing's BlockTimer)."""
    out: dict[str, float] = {}
    torch.cuda.synchronize()
    with Stopwatch(torch.cuda.synchronize) as clock:
        yield out
    out["ms"] = round(clock.ms, 3)


def cold_inductor_cache() -> str:
    """Point Inductor's and Triton's caches at a fresh folder (a cold start); return it."""
    folder = tempfile.mkdtemp(prefix="graphlab-inductor-")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = folder
    os.environ["TRITON_CACHE_DIR"] = os.path.join(folder, "triton")
    return folder


def time_ways(calls: dict[str, Callable[[], Any]], *, rounds: int = ROUNDS, block_ms: float = BLOCK_MS
              ) -> dict[str, list[float]]:
    """Per way, the wall µs of every timed call: warmed up, then `rounds` rounds of one block per way, rotated."""
    if not calls:
        raise BadInputError("time_ways needs at least one way")
    timers = {w: BlockTimer(lambda _inputs, f=f: f(), [()]) for w, f in calls.items()}
    sizes = {w: calls_for(warm_up(t)[1], block_ms, 4, 2000) for w, t in timers.items()}
    wall: dict[str, list[float]] = {w: [] for w in calls}
    for r in range(rounds):
        for w in round_order(list(calls), r, "rotate"):
            wall[w] += timers[w].block(sizes[w], gpu_time=False, lead_in=1).wall_us
    return wall


def _timing(way: str, batch: int, wall: Sequence[float]) -> StepTiming:
    return StepTiming(way, batch, percentile(wall, 50.0), percentile(wall, 99.0), len(wall))


def _ro_body(step: Any, ids: Any, position: Any) -> Any:
    return decode_step(step, ids, position)


def compare_decode(arch: str = "llama", *, batch_sizes: Sequence[int] = (1, 4, 16, 64), ways: Sequence[str] = WAYS,
                   token_batches: Sequence[int] = (1, 4, 16), options: DecodeOptions = DecodeOptions(),
                   budget_s: float | None = None, progress: bool = True,
                   keep_dots: dict[str, str] | None = None) -> DecodeReport:
    """Run and time the decode step four ways on this GPU (see the module doc); a `DecodeReport`.

    options: the model size, the prompt, cache and generation lengths, the timing rounds (`DecodeOptions`).
    budget_s: stop starting new work after this many seconds (what was skipped is listed in the report).
    keep_dots: a dict to fill with the DOT of each way's batch-1 graph ("<arch>-b1", "<arch>-compiled-b1").
    """
    require_cuda("graphlab.decode.compare_decode")
    unknown = [w for w in ways if w not in WAYS]
    if unknown:
        raise BadInputError(f"unknown way(s) {unknown}; choose from {', '.join(WAYS)}")
    size, prompt_len, new_tokens = options.size, options.prompt_len, options.new_tokens
    max_cache_len, rounds = options.max_cache_len, options.rounds
    started = Stopwatch().start()

    def over() -> bool:
        return budget_s is not None and started.s > budget_s

    def say(text: str) -> None:
        if progress:
            print(f"[decode] {arch}: {text}", flush=True)

    batch_sizes = sorted(set(batch_sizes))
    model = build_model(arch, size, device="cuda")
    report = DecodeReport(arch, source=f"measured here on {torch.cuda.get_device_name()}")
    report.conditions = {"size": size, "config": CONFIGS[arch][size], "dtype": "float32", "prompt_len": prompt_len,
                         "new_tokens": new_tokens, "max_cache_len": max_cache_len, "rounds": rounds,
                         "block_ms": BLOCK_MS, "timer": "graphlab.timing.blocks.BlockTimer, host wall per step",
                         "transformers": __import__("transformers").__version__,
                         "inductor_cache": os.environ.get("TORCHINDUCTOR_CACHE_DIR", "default")}

    # graphlab's graphs of the eager step: capture every bucket, then the tokens check
    graphs = DecodeGraphs(model, batch_sizes, max_cache_len)
    with stopwatch() as t:
        graphs.capture_all()
    report.startup_ms["graphlab"] = {"capture_all_buckets": t["ms"],
                                     **{f"b{s['bucket']}": s["warmup_ms"] + s["capture_ms"] + s["instantiate_ms"]
                                        for s in graphs.stats()}}
    report.kv_cache_bytes = {str(s["bucket"]): s["kv_cache_bytes"] for s in graphs.stats()}
    report.kv_total_bytes = graphs.kv_cache_bytes()
    report.graph_pool_bytes["graphlab"] = {str(s["bucket"]): s["pool_bytes"] for s in graphs.stats()}
    say(f"captured {count(len(batch_sizes))} buckets in {duration(t['ms'] * 1e3)}")
    if keep_dots is not None:
        keep_dots[f"{arch}-b{batch_sizes[0]}"] = graphs.slots[batch_sizes[0]].graph.dot()
    report.tokens_equal["graphlab"] = {}
    for b in token_batches:
        prompts = make_prompts(model, b, prompt_len, seed=b)
        want = hf_greedy(model, prompts, new_tokens, max_cache_len)
        report.tokens_equal["graphlab"][str(b)] = bool(torch.equal(graphs.greedy(prompts, new_tokens), want))
    say("the same tokens as HF eager: " + ", ".join(f"batch {b} {yes_no(ok)}"
                                                     for b, ok in report.tokens_equal["graphlab"].items()))
    small = [b for b in batch_sizes if b > 1]
    if small:
        report.padding.append(graphs.check_padding(make_prompts(model, small[0] - 1, prompt_len, seed=99)))

    # the compiled ways, watched
    log = watch_compile()
    watched: dict[str, Any] = {}
    ro = torch.compile(_ro_body, mode="reduce-overhead") if "reduce-overhead" in ways else None
    ro_steps: dict[int, Any] = {}
    compiled_graphs = DecodeGraphs(model, batch_sizes, max_cache_len, compiled=True) if "graphlab+compile" in ways \
        else None
    ids0 = {b: torch.zeros(b, 1, dtype=torch.long, device="cuda") for b in batch_sizes}
    pos0 = torch.tensor([prompt_len], device="cuda")
    with log:
        if ro is not None:
            with Watch(keep_dot=False) as got:
                report.startup_ms["reduce-overhead"] = {}
                for b in batch_sizes:
                    if over():
                        report.skipped.append(f"reduce-overhead b{b} (time budget)")
                        continue
                    cache = make_cache(model, b, max_cache_len)
                    prefill(model, cache, make_prompts(model, b, prompt_len, seed=b))
                    step = DecodeStep(model, cache)
                    try:
                        with stopwatch() as t:
                            for _ in range(3):  # compile + warm-up, record, first replay
                                ro(step, ids0[b], pos0)
                    except Exception as exc:  # recorded, not hidden: the report lists it
                        report.skipped.append(f"reduce-overhead b{b}: {type(exc).__name__}: {str(exc)[:300]}")
                        continue
                    ro_steps[b] = step
                    report.startup_ms["reduce-overhead"][f"b{b}"] = t["ms"]
                    say(f"reduce-overhead, batch {b}: first 3 calls {duration(t['ms'] * 1e3)}")
            watched["reduce-overhead"] = list(got)
            report.graph_pool_bytes["reduce-overhead"] = {"all": sum(g.pool_bytes or 0 for g in got
                                                                     if "compile" in g.library)}
        if compiled_graphs is not None:
            report.startup_ms["graphlab+compile"] = {}
            for b in reversed(batch_sizes):
                if over():
                    report.skipped.append(f"graphlab+compile b{b} (time budget)")
                    continue
                try:
                    with stopwatch() as t:
                        compiled_graphs.capture(b)
                except Exception as exc:  # recorded, not hidden
                    report.skipped.append(f"graphlab+compile b{b}: {type(exc).__name__}: {str(exc)[:300]}")
                    continue
                report.startup_ms["graphlab+compile"][f"b{b}"] = t["ms"]
                say(f"graphlab+compile, batch {b}: compile in the warm-up, then capture: {duration(t['ms'] * 1e3)}")
            report.graph_pool_bytes["graphlab+compile"] = {str(s["bucket"]): s["pool_bytes"]
                                                           for s in compiled_graphs.stats()}
            if keep_dots is not None and batch_sizes[0] in compiled_graphs.slots:
                keep_dots[f"{arch}-compiled-b{batch_sizes[0]}"] = compiled_graphs.slots[batch_sizes[0]].graph.dot()
            if 1 in compiled_graphs.slots:
                prompts = make_prompts(model, 1, prompt_len, seed=1)
                want = hf_greedy(model, prompts, new_tokens, max_cache_len)
                report.tokens_equal["graphlab+compile"] = {"1": bool(torch.equal(
                    compiled_graphs.greedy(prompts, new_tokens), want))}

        # timing, batch size by batch size, the ways interleaved
        for b in batch_sizes:  # always timed: the budget only stops new compiles
            eager_cache = make_cache(model, b, max_cache_len)
            prefill(model, eager_cache, make_prompts(model, b, prompt_len, seed=b))
            eager = DecodeStep(model, eager_cache)
            calls: dict[str, Callable[[], Any]] = {}
            if "eager" in ways:
                calls["eager"] = lambda e=eager, b=b: e(ids0[b], pos0)
            if "graphlab" in ways:
                calls["graphlab"] = lambda g=graphs.slots[b].graph, b=b: g(ids0[b], pos0)
            if b in ro_steps:
                calls["reduce-overhead"] = lambda s=ro_steps[b], b=b: ro(s, ids0[b], pos0)
            if compiled_graphs is not None and b in compiled_graphs.slots:
                calls["graphlab+compile"] = lambda g=compiled_graphs.slots[b].graph, b=b: g(ids0[b], pos0)
            wall = time_ways(calls, rounds=rounds)
            for way, values in wall.items():
                report.timings.append(_timing(way, b, values))
            say(f"batch {b}, p50: " + ", ".join(f"{w} {duration(percentile(v, 50.0))}" for w, v in wall.items()))
    summary_all = log.summary(watched=watched.get("reduce-overhead"))
    report.compile["all"] = summary_all
    report.conditions["compile_records"] = log.to_dict()["records"]
    report.conditions["seconds"] = round(started.s, 1)
    return report


__all__ = ["BLOCK_MS", "cold_inductor_cache", "compare_decode", "stopwatch", "time_ways"]
