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
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import torch

from graphlab import present

from graphlab.clock import Stopwatch, synced_us
from graphlab.timing.schedulers import interleave
from graphlab.timing.sync import cuda_sync
from graphlab.env import require_cuda
from graphlab.errors import BadInputError, RecordingError
from graphlab.mode import stand_in
from graphlab.profile.recorded import recorded_on
from graphlab.progress import progress_bar
from graphlab.stats import median
from graphlab.studies.catalog import open_recording
from graphlab.studies.watch_examples import RECORDING
from graphlab.timing.host_modes import paired_speedup
from graphlab.watch.api import watch
from graphlab.zoo import get_model

DEFAULT_MODEL = "gpt"
DEFAULT_BATCH_SIZE = 8
DEFAULT_PAIRS = 200
DEFAULT_CALLS_PER_BLOCK = 25
WARMUP_CALLS = 50


@dataclass(frozen=True)
class WatchOverhead:
    """Watched vs unwatched reduce-overhead replays of one model at one batch size.

    Attributes:
        unwatched_p50_us, watched_p50_us: median of the block medians (one synchronised call each).
        ratio_p50, ratio_p10, ratio_p90: watched / unwatched per pair of neighbouring blocks.
        spread_pct: (p90 - p10) / p50 of the ratios, in %. ratio_by_mode: median ratio per host mode.
        host_modes: the speed modes seen in the watched blocks (`HostModes.describe()`).
        outputs_identical: `torch.equal` of the two copies' outputs on every fresh input.
        max_abs_err_vs_eager: largest difference of the watched copy from eager.
        graphs_watched: graphs the watch saw while the watched copy compiled and recorded.
        graphs_during_timing: graphs captured while timing (0: nothing re-recorded).
        compile_s: seconds of the first three calls of each copy (compile, warm-up, record).
    """

    model: str
    batch_size: int
    pairs: int
    calls_per_block: int
    unwatched_p50_us: float
    watched_p50_us: float
    ratio_p50: float
    ratio_p10: float
    ratio_p90: float
    spread_pct: float
    ratio_by_mode: list[float]
    host_modes: str
    outputs_identical: bool
    max_abs_err_vs_eager: float
    graphs_watched: int
    graphs_during_timing: int
    compile_s: dict[str, float]
    ratios: list[float] = field(default_factory=list, repr=False)
    source: str = ""

    def describe(self) -> str:
        same = "bit-identical" if self.outputs_identical else "NOT identical"
        return (f"{self.model} batch {self.batch_size}: replay watched / unwatched {present.ratio(self.ratio_p50)} "
                f"(p10-p90 {present.ratio(self.ratio_p10)} to {present.ratio(self.ratio_p90)} over "
                f"{present.count(self.pairs)} pairs of {present.count(self.calls_per_block)} calls; "
                f"{present.duration(self.unwatched_p50_us)} vs {present.duration(self.watched_p50_us)} per call); "
                f"outputs {same}; host: {self.host_modes}")

    def facts(self) -> Any:
        """The check in words (a `present` facts table), titled with where it was measured."""
        rows = [
            ("replay, unwatched vs watched", f"{present.duration(self.unwatched_p50_us)} vs "
             f"{present.duration(self.watched_p50_us)} per call (median of the blocks' medians)"),
            ("watched / unwatched, pair by pair", f"{present.ratio(self.ratio_p50)} (p10 to p90: "
             f"{present.ratio(self.ratio_p10)} to {present.ratio(self.ratio_p90)}, over {present.count(self.pairs)} "
             f"pairs of blocks of {present.count(self.calls_per_block)} calls)"),
            ("outputs of the two copies", "bit-identical" if self.outputs_identical else "not identical"),
            ("largest difference from eager", present.error(self.max_abs_err_vs_eager)),
            ("graphs captured while timing", "none: nothing was re-recorded" if not self.graphs_during_timing
             else present.count(self.graphs_during_timing)),
            ("host speed modes", self.host_modes),
        ]
        title = f"gl.watch's replay overhead, {self.model} at batch {self.batch_size}"
        return present.facts(rows, title=f"{title}: {self.source}" if self.source else title)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WatchOverhead:
        names = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in names})

    def __repr__(self) -> str:
        return f"<WatchOverhead {self.describe()}>"

    def __str__(self) -> str:
        return str(self.facts())

    def _repr_html_(self) -> str:
        return self.facts()._repr_html_()


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
    rec = open_recording(RECORDING)
    result = WatchOverhead.from_dict(rec.results("overhead"))
    if result.batch_size != batch_size:
        raise RecordingError(f"the recording measured batch size {result.batch_size}, not {batch_size}; call "
                             f"watch_overhead(batch_size={result.batch_size}) or measure it live on a GPU")
    return WatchOverhead.from_dict({**result.to_dict(), "source": recorded_on(rec.provenance)})


@stand_in(_recorded_overhead)
def watch_overhead(batch_size: int = DEFAULT_BATCH_SIZE, pairs: int = DEFAULT_PAIRS) -> WatchOverhead:
    """Replay latency and outputs of a reduce-overhead zoo GPT, watched vs not (live), or the H200 run.

    Live it takes ~30-60 s on an H200 (two torch.compile runs, then `pairs` pairs of blocks).
    """
    require_cuda("watch_overhead")
    return measure_watch_overhead(batch_size=batch_size, pairs=pairs)


__all__ = ["WatchOverhead", "measure_watch_overhead", "watch_overhead"]
