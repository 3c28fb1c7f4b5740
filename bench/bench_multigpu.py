"""Multi-GPU measurements on any number of GPUs, printed as tables and written as JSON.

    PYTHONPATH=. python3 bench/bench_multigpu.py --out DIR [--world-sizes 1 2 4] [--duration-s 1.0]

1. Replica throughput (this process, every visible GPU): requests/s with replicas vs one GPU, by batch
   size, for the zoo's gpt and mlp, and the same with single-thread ("inline") dispatch
   (`graphlab.studies.replica_throughput`; the goal on 2 GPUs is >= 1.9x for gpt at the larger batch sizes).
2. Tensor-parallel GPT layer latency, eager vs graph (all-reduces inside), by batch size, for each
   world size (default: 1, 2, 4, ... up to the GPUs here): one torchrun job per world size, launched
   by this script on itself (`--worker`), rank 0 writing the merged rows (`graphlab.studies.multigpu_timing`).
3. Host launch time per device: one `replay()` per rank (TP graphs) and per device (replica graphs).

Writes DIR/bench_multigpu.json (everything) and DIR/bench_multigpu.txt (the tables). Runs in about
1 minute on one H200 (about 25 s more per extra world size). NCCL_NVLS_ENABLE=0 unless set.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[1]))

REPLICA_MODELS = ("gpt", "mlp")
REPLICA_BATCH_SIZES = (1, 8, 32)
TP_BATCH_SIZES = (1, 4, 16, 64)
TORCHRUN_TIMEOUT_S = 120


def worker(out: Path, batch_sizes: list[int], repetitions: int) -> int:
    """One rank of the tensor-parallel timing job; rank 0 writes tp_ws<N>.json."""
    from graphlab.distributed.comm import init_distributed, shutdown
    from graphlab.studies.multigpu_timing import gather_points, time_tensor_parallel

    ctx = init_distributed()
    rows = gather_points(time_tensor_parallel(ctx, batch_sizes, repetitions=repetitions), ctx)
    if ctx.rank == 0:
        payload = {"world_size": ctx.world_size, "nccl_version": ctx.nccl_version, "rows": rows}
        (out / f"tp_ws{ctx.world_size}.json").write_text(json.dumps(payload, indent=1))
    shutdown(ctx)
    return 0


def tp_table(runs: list[dict[str, Any]]) -> str:
    lines = ["tensor-parallel GPT layer (width 256, 8 heads, 32 tokens): eager vs graph, slowest rank's p50",
             f"{'world':>6}{'batch':>7}{'eager us':>11}{'graph us':>11}{'x':>7}{'NCCL k':>8}{'max err':>10}"
             f"  launch us per rank"]
    for run in runs:
        for row in run["rows"]:
            launch = ", ".join(f"{p['launch_p50_us']:.1f}" for p in row["per_rank"])
            lines.append(f"{row['world_size']:>6}{row['batch_size']:>7}{row['eager_p50_us']:>11.1f}"
                         f"{row['graph_p50_us']:>11.1f}{row['speedup'] or 0:>7.2f}{row['nccl_kernels']:>8}"
                         f"{row['max_abs_err']:>10.1e}  {launch}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--world-sizes", type=int, nargs="+", default=None)
    parser.add_argument("--duration-s", type=float, default=1.0, help="seconds per replica throughput point")
    parser.add_argument("--repetitions", type=int, default=200, help="timed calls per TP point and rank")
    parser.add_argument("--skip-replicas", action="store_true")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.worker:
        return worker(out, list(TP_BATCH_SIZES), args.repetitions)

    import torch

    from graphlab.env import require_cuda
    from graphlab.distributed.launch import run_torchrun
    from graphlab.distributed.results import ReplicaThroughput
    from graphlab.studies.replica_throughput import measure_replica_throughput

    require_cuda("bench_multigpu")
    gpus = torch.cuda.device_count()
    world_sizes = args.world_sizes or [w for w in (1, 2, 4, 8) if w <= gpus]
    report: dict[str, Any] = {"gpus": [torch.cuda.get_device_name(i) for i in range(gpus)], "replicas": [],
                              "tensor_parallel": [], "failed": []}
    texts = []
    if not args.skip_replicas:
        for model in REPLICA_MODELS:
            result = measure_replica_throughput(model, REPLICA_BATCH_SIZES, duration_s=args.duration_s)
            report["replicas"].append(result)
            texts.append(str(ReplicaThroughput(result, f"{gpus} GPU(s) here")))
            print(texts[-1], flush=True)
    for world_size in world_sizes:
        if world_size > gpus:
            report["failed"].append({"world_size": world_size, "why": f"only {gpus} GPU(s) here"})
            continue
        result = run_torchrun([str(HERE), "--worker", "--out", str(out), "--repetitions", str(args.repetitions)],
                              nproc=world_size, timeout_s=TORCHRUN_TIMEOUT_S, echo=False)
        path = out / f"tp_ws{world_size}.json"
        if path.is_file():
            report["tensor_parallel"].append(json.loads(path.read_text()))
        else:
            report["failed"].append({"world_size": world_size, "rc": result.returncode, "timed_out": result.timed_out,
                                     "output_tail": result.output[-3000:]})
            print(f"world size {world_size} failed (rc {result.returncode}, timed out {result.timed_out}):\n"
                  f"{result.output[-3000:]}", flush=True)
        if path.is_file() and not result.ok:
            report["failed"].append({"world_size": world_size, "why": "results written, but torchrun did not exit "
                                     f"cleanly (rc {result.returncode}, timed out {result.timed_out})"})
    if report["tensor_parallel"]:
        texts.append(tp_table(report["tensor_parallel"]))
        print(texts[-1], flush=True)
    (out / "bench_multigpu.json").write_text(json.dumps(report, indent=1))
    (out / "bench_multigpu.txt").write_text("\n\n".join(texts) + "\n")
    print(f"wrote {out / 'bench_multigpu.json'} and {out / 'bench_multigpu.txt'}")
    return 1 if report["failed"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
