"""Does `gl.watch` change what a watched library computes, or how fast it replays? Measured, not assumed.

Two copies of the same zoo model (same seeded weights) are compiled with
`torch.compile(mode="reduce-overhead")`; one records its CUDA graphs with no watch, the other under
`gl.watch`. Then, in one process:

- outputs: both are called on fresh inputs; `torch.equal` says whether they are bit-identical, and
  each is compared with eager;
- replay latency: short blocks of synchronised calls alternate between the two (unwatched first in
  even pairs, watched first in odd ones; the watched copy's blocks run with a watch open), so each
  pair saw the same host state: the H200 host flips between CPU speed modes every few hundred
  milliseconds. The ratio watched / unwatched of every pair is summarised by
  `graphlab.timing.host_modes.paired_speedup` (median, p10-p90, per host mode).

    >>> r = watch_overhead()               # live: ~30-60 s (two compiles); recorded: the H200 run
    >>> r.describe()                       # "replay watched / unwatched: 1.00x (p10-p90 ...)"

`WatchOverhead`, what it measured, is a results type of `graphlab.watch.records` (pure): `gl.load(WatchOverhead)`
reads the recorded one anywhere.
"""
from __future__ import annotations

import torch

from graphlab.clock import Stopwatch, synced_us
from graphlab.timing.schedulers import interleave
from graphlab.timing.sync import cuda_sync
from graphlab.env import require_cuda
from graphlab.errors import BadInputError, RecordingError
from graphlab.loader import load
from graphlab.mode import recorded_gpu, stand_in
from graphlab.progress import progress_bar
from graphlab.stats import median
from graphlab.timing.host_modes import paired_speedup
from graphlab.watch.api import watch
from graphlab.watch.records import RECORDING, WatchOverhead
from graphlab.zoo import get_model

DEFAULT_MODEL = "gpt"
DEFAULT_BATCH_SIZE = 8
DEFAULT_PAIRS = 200
DEFAULT_CALLS_PER_BLOCK = 25
WARMUP_CALLS = 50


def measure_watch_overhead(*, model: str = DEFAULT_MODEL, batch_size: int = DEFAULT_BATCH_SIZE,
                           pairs: int = DEFAULT_PAIRS, calls_per_block: int = DEFAULT_CALLS_PER_BLOCK,
                           progress: bool = True) -> WatchOverhead:
    """Compile two copies, record one under gl.watch, compare outputs and paired replay latency (GPU)."""
    if pairs < 2 or calls_per_block < 1 or batch_size < 1:
        raise BadInputError(f"need pairs >= 2, calls_per_block >= 1, batch_size >= 1; got {pairs}, "
                            f"{calls_per_block}, {batch_size}")
    zm = get_model(model)
    plain, watched_model = zm.build(device="cuda"), zm.build(device="cuda")
    unwatched = torch.compile(plain, mode="reduce-overhead")
    watched = torch.compile(watched_model, mode="reduce-overhead")
    (x,) = zm.make_inputs(batch_size, device="cuda")
    compile_s: dict[str, float] = {}
    with torch.no_grad():
        sync = cuda_sync()
        with Stopwatch(sync) as compiling:
            for _ in range(3):
                unwatched(x)
        compile_s["unwatched"] = round(compiling.s, 2)
        with Stopwatch(sync) as compiling, watch() as seen:
            for _ in range(3):
                watched(x)
            sync()
        compile_s["watched"] = round(compiling.s, 2)
        identical, max_err = True, 0.0
        for seed in (1, 2, 3):
            (xi,) = zm.make_inputs(batch_size, device="cuda", seed=seed)
            a = unwatched(xi).clone()  # clone: the next reduce-overhead call may reuse the output memory
            b = watched(xi).clone()
            identical = identical and bool(torch.equal(a, b))
            max_err = max(max_err, float((b.float() - plain(xi).float()).abs().max()))
        for _ in range(WARMUP_CALLS):
            unwatched(x)
            watched(x)
        torch.cuda.synchronize()
        during = [0]

        def watched_block() -> float:
            with watch() as timing_seen:
                block = median(synced_us(lambda: watched(x), calls_per_block, sync))
            during[0] += len(timing_seen)
            return block

        bar = progress_bar(pairs, "watched vs unwatched pairs", show=progress, leave=False)
        blocks = interleave({"unwatched": lambda: median(synced_us(lambda: unwatched(x), calls_per_block, sync)),
                             "watched": watched_block}, pairs, order="alternate", pause_gc=False,
                            after_round=None if bar is None else lambda r: bar.update(1))
        if bar is not None:
            bar.close()
    paired = paired_speedup(blocks["watched"], blocks["unwatched"])
    return WatchOverhead(
        model=model, batch_size=batch_size, pairs=pairs, calls_per_block=calls_per_block,
        unwatched_p50_us=round(median(blocks["unwatched"]), 3), watched_p50_us=round(median(blocks["watched"]), 3),
        ratio_p50=paired.p50, ratio_p10=paired.p10, ratio_p90=paired.p90, spread_pct=paired.spread_pct,
        ratio_by_mode=list(paired.by_mode), host_modes=paired.modes.describe(), outputs_identical=identical,
        max_abs_err_vs_eager=max_err, graphs_watched=len(seen), graphs_during_timing=during[0], compile_s=compile_s,
        ratios=[round(r, 5) for r in paired.ratios],
        source=f"live on {torch.cuda.get_device_name()}, torch {torch.__version__}")


def _recorded_overhead(batch_size: int = DEFAULT_BATCH_SIZE, pairs: int = DEFAULT_PAIRS) -> WatchOverhead:
    """The overhead check of the watch recording (recorded mode); it measured one batch size."""
    result = load(WatchOverhead, RECORDING, gpu=recorded_gpu())
    if result.batch_size != batch_size:
        raise RecordingError(f"the recording measured batch size {result.batch_size}, not {batch_size}; call "
                             f"watch_overhead(batch_size={result.batch_size}) or measure it live on a GPU")
    return result


@stand_in(_recorded_overhead)
def watch_overhead(batch_size: int = DEFAULT_BATCH_SIZE, pairs: int = DEFAULT_PAIRS) -> WatchOverhead:
    """Replay latency and outputs of a reduce-overhead zoo GPT, watched vs not (live), or the H200 run.

    Live it takes ~30-60 s on an H200 (two torch.compile runs, then `pairs` pairs of blocks).
    """
    require_cuda("watch_overhead")
    return measure_watch_overhead(batch_size=batch_size, pairs=pairs)


__all__ = ["WatchOverhead", "measure_watch_overhead", "watch_overhead"]
