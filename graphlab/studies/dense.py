"""Dense sweeps for the bucket advisor: every batch size 1..64 of every zoo model, and the GPT's
sequence lengths, measured with the paired method (`graphlab record --models dense`).

The advisor (`gl.advise_buckets`, issue 9) chooses buckets from latency at *every* size, so these
sweeps measure each batch size 1..64 (graph p50, eager p50 in pairs of blocks, capture_ms,
instantiate_ms, pool, peak and exec bytes of each graph) with fewer, shorter blocks than the main
sweep: `PAIRS` pairs of ~`BLOCK_MS` ms. For the GPT (ids of shape (batch, seq <= 64)), it also
measures sequence lengths `SEQ_LENS` at batch sizes `SEQ_BATCH_SIZES`. No profiling, no weight probe.

Results, one recording folder `data/recordings/<gpu>/dense/`: one `Sweep` per zoo model under the
model's name ("mlp", "cnn", "gpt", "encoder", "resnet18", ...: every zoo model), and "gpt_seq" (points carry `seq_len`;
`Sweep.at_seq(16)` is an ordinary sweep over batch size), each read through the loader; and "dense_timings", how long
each part took (`DenseTimings`).

    >>> gpt = gl.load(gl.Sweep, "dense", entry="gpt")                      # doctest: +SKIP
    >>> gpt.point(37, "graph").p50_us                                      # doctest: +SKIP

Time on the H200 (estimated from the paired method's parts; the recorder prints each part's time):
each model ~64 x (capture + warm-up, ~0.1 s) + 5 rounds x 64 pairs x ~25 ms = ~15 s (ResNet-18 ~20 s),
the GPT sequence sweep ~5 s; with the process start, about 1.5-2 minutes for the five zoo models.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping

import torch

from graphlab.clock import Stopwatch
from graphlab.errors import BadInputError, ResultsError
from graphlab.loader import dump
from graphlab.recordings import gpu_slug, write_recording
from graphlab.results_types import recorded_result, results_type
from graphlab.timing.recorded import DENSE_RECORDING
from graphlab.timing.results import Sweep
from graphlab.timing.options import SweepOptions
from graphlab.timing.sweep import Case, sweep_cases
from graphlab.zoo import GPT_SEQ_LEN, GPT_VOCAB, ZOO, get_model

#: the recording's name: the one `gl.recorded_models` reads the dense sweeps from (`graphlab.timing.recorded`)
RECORDING = DENSE_RECORDING
BATCH_SIZES = tuple(range(1, 65))
SEQ_LENS = (8, 16, 24, 32, 40, 48, 56, 64)
SEQ_BATCH_SIZES = (1, 8, 32)
PAIRS = 5
BLOCK_MS = 10.0
WARMUP_CALLS = 5
WARMUP_MAX_MS = 30.0

_FAST = SweepOptions(pairs=PAIRS, block_ms=BLOCK_MS, warmup_calls=WARMUP_CALLS, warmup_max_ms=WARMUP_MAX_MS,
                     profile=False, count_kernels=False)


@recorded_result(entry="dense_timings", recording=RECORDING, schema=1,
                 fields={"seconds_per_part": 1, "settings": 1, "batch_sizes": 1, "seq_lens": 1, "seq_batch_sizes": 1})
@dataclass(frozen=True)
class DenseTimings:
    """How the dense recording was measured and how long each part took: its "dense_timings" entry.

    Attributes:
        seconds_per_part: seconds each sweep took, by its entry ("mlp", ..., "gpt_seq").
        settings: the sweep options every part used (pairs, block_ms, warm-up, ...).
        batch_sizes: the first and last batch size of the sweeps over batch size.
        seq_lens, seq_batch_sizes: the sequence lengths and batch sizes of the GPT's "gpt_seq" sweep.
    """

    seconds_per_part: dict[str, float]
    settings: dict[str, Any] = field(default_factory=dict)
    batch_sizes: tuple[int, ...] = ()
    seq_lens: tuple[int, ...] = ()
    seq_batch_sizes: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"seconds_per_part": dict(self.seconds_per_part), "settings": dict(self.settings),
                "batch_sizes": list(self.batch_sizes), "seq_lens": list(self.seq_lens),
                "seq_batch_sizes": list(self.seq_batch_sizes)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DenseTimings:
        try:
            return cls({str(k): float(v) for k, v in dict(data["seconds_per_part"]).items()},
                       dict(data.get("settings") or {}), tuple(int(b) for b in data.get("batch_sizes") or ()),
                       tuple(int(s) for s in data.get("seq_lens") or ()),
                       tuple(int(b) for b in data.get("seq_batch_sizes") or ()))
        except (KeyError, TypeError, ValueError) as exc:
            raise ResultsError(f"not the dense recording's timings ({exc})") from None


def gpt_ids(batch_size: int, seq_len: int, seed: int = 0, device: str = "cuda") -> tuple[Any, ...]:
    """Random token ids of shape (batch_size, seq_len) for the zoo GPT (never 0, so never all zeros)."""
    if not 1 <= seq_len <= GPT_SEQ_LEN:
        raise BadInputError(f"the zoo GPT takes 1 to {GPT_SEQ_LEN} tokens, got seq_len={seq_len}; pick a seq_len "
                            f"in 1..{GPT_SEQ_LEN}")
    generator = torch.Generator(device="cpu").manual_seed(seed)
    return (torch.randint(1, GPT_VOCAB, (batch_size, seq_len), generator=generator).to(device),)


def dense_sweep(name: str, batch_sizes: tuple[int, ...] = BATCH_SIZES) -> Sweep:
    """One zoo model at every batch size, paired method with short blocks (the recorder's settings)."""
    zoo_model = get_model(name)
    model = zoo_model.build(device="cuda")
    cases = [Case(b, lambda seed, b=b: zoo_model.make_inputs(b, device="cuda", seed=seed)) for b in batch_sizes]
    return sweep_cases(model, cases, name=name, options=_FAST, progress=False)


def seq_sweep(seq_lens: tuple[int, ...] = SEQ_LENS, batch_sizes: tuple[int, ...] = SEQ_BATCH_SIZES) -> Sweep:
    """The zoo GPT at every (batch size, sequence length): one sweep whose points carry `seq_len`."""
    model = get_model("gpt").build(device="cuda")
    cases = [Case(b, lambda seed, b=b, s=s: gpt_ids(b, s, seed), seq_len=s) for b in batch_sizes for s in seq_lens]
    return sweep_cases(model, cases, name="gpt_seq", options=_FAST, progress=False)


def record(out_root: Path, prov: dict[str, Any]) -> Path:
    """Paired sweeps of every zoo model at batch sizes 1-64, the GPT at sequence lengths 8-64."""
    results: dict[str, Any] = {}
    timings: dict[str, float] = {}
    for name in ZOO:
        if not ZOO[name].available():
            print(f"[record] dense {name}: skipped, needs {', '.join(ZOO[name].needs)}", flush=True)
            continue
        with Stopwatch() as part:
            result = dense_sweep(name, BATCH_SIZES)
        timings[name] = round(part.s, 1)
        results[name] = dump(result)
        print(f"[record] dense {name}: {len(result.batch_sizes)} batch sizes in {timings[name]} s "
              f"(rounds {result.conditions['rounds_s']} s)", flush=True)
    with Stopwatch() as part:
        seq = seq_sweep(SEQ_LENS, SEQ_BATCH_SIZES)
    timings["gpt_seq"] = round(part.s, 1)
    results["gpt_seq"] = dump(seq)
    print(f"[record] dense gpt_seq: {len(seq.points) // 2} (batch, seq) points in {timings['gpt_seq']} s", flush=True)
    spent = DenseTimings(timings, asdict(_FAST), (BATCH_SIZES[0], BATCH_SIZES[-1]), tuple(SEQ_LENS), tuple(SEQ_BATCH_SIZES))
    results[results_type(DenseTimings).entry] = dump(spent)
    folder = out_root / gpu_slug(prov["gpu"]) / RECORDING
    write_recording(folder, name=RECORDING, description="Dense paired latency sweeps (every batch size 1-64 of each zoo "
                    "model; the GPT at sequence lengths 8-64) for the bucket advisor.", provenance=prov,
                    graphs={}, results=results)
    return folder


__all__ = ["BATCH_SIZES", "RECORDING", "SEQ_BATCH_SIZES", "SEQ_LENS", "DenseTimings", "dense_sweep", "gpt_ids",
           "record", "seq_sweep"]
