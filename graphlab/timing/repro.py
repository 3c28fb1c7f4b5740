"""`graphlab repro NAME`: re-run a shipped recording's sweep here, now, and compare point by point.

Needs torch (imported at the top) and a GPU. The comparison itself is pure (`graphlab.timing.repro_report`).

The re-run uses the recording's conditions: the same zoo model (seeded weights), batch sizes, pairs,
block length, warm-up and TF32 setting; profiling and the weight probe are skipped (they do not
change the timings, which come first in a sweep). Run it as its own command, so the process is
fresh: a process that has profiled or failed captures launches kernels more slowly.

    $ graphlab repro gpt                      # table: now vs recorded, ratio, modes seen
    $ graphlab repro gpt --json out/gpt.json --check   # exit 1 if a goal is missed

    >>> report, now = repro("gpt")            # doctest: +SKIP
    >>> print(report.table())                 # doctest: +SKIP
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from graphlab.env import require_cuda
from graphlab.errors import RecordingError, UnsupportedError
from graphlab.loader import load, open_recording
from graphlab.timing.repro_report import REPRO_MAX_EXTRA_S, ReproReport, compare_sweeps, recorded_target
from graphlab.timing.results import Sweep
from graphlab.timing.options import BLOCK_MS, PAIRS, SweepOptions
from graphlab.timing.sweep import sweep
from graphlab.zoo import ZOO

#: `SweepOptions` fields taken from a recording's conditions, when it has them (paired recordings do): field -> the
#: conditions' key
_CARRIED = {"pairs": "pairs", "block_ms": "block_ms", "warmup_calls": "warmup", "warmup_max_ms": "warmup_max_ms"}


def sweep_arguments(conditions: dict[str, Any]) -> dict[str, Any]:
    """The `SweepOptions` fields that reproduce a recording's conditions (defaults where it has none).

    >>> sweep_arguments({"method": "paired blocks", "pairs": 9, "block_ms": 10.0, "repetitions": "auto"})
    {'pairs': 9, 'block_ms': 10.0}
    >>> sweep_arguments({"runs": 5, "repetitions": "auto (~0.05 s per run, 50..2000)"})   # older method
    {}
    """
    if conditions.get("method") != "paired blocks":
        return {}
    out = {field: conditions[key] for field, key in _CARRIED.items() if isinstance(conditions.get(key), (int, float))}
    if isinstance(conditions.get("repetitions"), int):
        out["repetitions"] = conditions["repetitions"]
    return out


def repro(name: str, *, gpu: str | None = None, key: str = "sweep", pairs: int | None = None,
          max_extra_s: float = REPRO_MAX_EXTRA_S, progress: bool = True) -> tuple[ReproReport, Sweep]:
    """Re-run recording `name`'s sweep (results `key`) on this GPU; return (the comparison, the new sweep).

    After the recording's number of pairs, the re-run goes on in whole rounds until every batch size has
    `MIN_MATCHED_PAIRS` pairs at the recording's host speed (`recorded_target`), for at most `max_extra_s`
    seconds: the comparison that judges is made at that one speed (docs/latency-method.md).

    Args:
        gpu: the recording's GPU folder ("h200"); default: the first recording of that name.
        pairs: override the recording's pairs per batch size (default: the recording's).
        max_extra_s: how long to wait for the recording's host speed (0: not at all).

    Raises:
        GPUUnavailableError: no CUDA GPU here.
        RecordingError: no such recording or sweep; or it is not of a zoo model.
        UnsupportedError: the zoo model needs a package that is not installed here.
    """
    require_cuda("graphlab repro")
    fresh = not torch.cuda.is_initialized()
    recording = open_recording(name, gpu=gpu)
    recorded = load(Sweep, recording, entry=key)
    if recorded.seq_lens:
        raise RecordingError(f"{name}/{key} is a sweep over sequence length: graphlab repro re-runs batch-size sweeps; "
                             "pick a batch-size sweep of the recording")
    zoo_model = ZOO.get(recorded.model)
    if zoo_model is None:
        raise RecordingError(f"{name}/{key} is a sweep of {recorded.model!r}, not a zoo model "
                             f"({', '.join(ZOO)}): graphlab repro re-runs zoo models only")
    if not zoo_model.available():
        raise UnsupportedError(f"zoo model {zoo_model.name!r} needs {', '.join(zoo_model.needs)}, which is not "
                               f"installed here: pip install {' '.join(zoo_model.needs)}")
    kwargs = sweep_arguments(recorded.conditions)
    if pairs is not None:
        kwargs["pairs"] = pairs
    tf32 = recorded.conditions.get("tf32_matmul")
    if isinstance(tf32, bool):
        torch.backends.cuda.matmul.allow_tf32 = tf32
    target = recorded_target(recorded)
    options = SweepOptions(**kwargs, profile=False, check_weights=False, count_kernels=False, host_target=target,
                           max_extra_s=max_extra_s if target is not None else 0.0)
    now = sweep(zoo_model.build(device="cuda"),
                lambda batch_size, seed=0: zoo_model.make_inputs(batch_size, device="cuda", seed=seed),
                recorded.batch_sizes, name=recorded.model, options=options, progress=progress)
    conditions = {**now.conditions, "repro_of": f"{recording.path.parent.name}/{recording.path.name}/{key}",
                  "recorded_date": recorded.conditions.get("date"), "fresh_process": fresh,
                  "carried_from_recording": sorted(_CARRIED.get(k, k) for k in kwargs) or f"none (recorded with the older method; defaults: "
                                                              f"pairs {PAIRS}, block_ms {BLOCK_MS:g})"}
    now = Sweep(now.model, now.points, conditions, now.weight_update)
    return compare_sweeps(now, recorded, target), now


def repro_main(args: Any) -> int:
    """Entry point of `graphlab repro` (arguments defined in graphlab.cli)."""
    report, now = repro(args.name, gpu=args.gpu, key=args.key, pairs=args.pairs,
                        max_extra_s=args.max_extra_s, progress=not args.quiet)
    print(report.table())
    print(report.matched_table())
    print(report.split_table())
    print(report.prediction_table())
    print(now.modes_report())
    if args.json:
        out = Path(args.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({**report.to_dict(), "sweep_now": now.to_dict()}, indent=1), encoding="utf-8")
        print(f"wrote {out}")
    if args.check:
        verdict = report.verdict()
        print(verdict)
        if not verdict.passed:
            return 1
    return 0


__all__ = ["repro", "repro_main", "sweep_arguments"]
