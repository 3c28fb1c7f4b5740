"""Do the host's slow states come per core, or for the whole machine at once?

    python3 scripts/probes/core_speed_probe.py --out $OUT/core_speed --seconds 12

One process pinned to each usable CPU reads the fixed workload graphlab uses for host speed
(1,500 iterations of `total += i * i`, best of 3) every 20 ms, sleeping in between (about 1% busy,
so the probe does not load the machine). Written: every reading with its time, per core. Printed:
per core the share of readings above 1.3x that core's fastest decile, and how often the cores are
slow *together* (if every core flips at once, moving to another core cannot help; if they flip
independently, a sweep could run on a core that is fast at the time).
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import time


def workload_us() -> float:
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter_ns()
        total = 0
        for i in range(1500):
            total += i * i
        best = min(best, (time.perf_counter_ns() - t0) / 1e3)
    return best


def reader(cpu: int, start_at: float, seconds: float, queue: mp.Queue) -> None:
    os.sched_setaffinity(0, {cpu})
    while time.time() < start_at:
        time.sleep(0.001)
    readings = []
    end = start_at + seconds
    while time.time() < end:
        readings.append((round(time.time() - start_at, 4), round(workload_us(), 2)))
        time.sleep(0.02)
    queue.put((cpu, readings))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--seconds", type=float, default=12.0)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    cpus = sorted(os.sched_getaffinity(0))
    queue: mp.Queue = mp.Queue()
    start_at = time.time() + 1.0
    procs = [mp.Process(target=reader, args=(c, start_at, args.seconds, queue)) for c in cpus]
    for p in procs:
        p.start()
    per_cpu = dict(queue.get() for _ in procs)
    for p in procs:
        p.join()
    summary = {}
    slow_at: dict[int, set[int]] = {}
    for cpu, rows in sorted(per_cpu.items()):
        values = sorted(v for _, v in rows)
        fast = values[max(0, len(values) // 10 - 1)]
        slow = [t for t, v in rows if v > 1.3 * fast]
        slow_at[cpu] = {int(t / 0.25) for t in slow}  # 250 ms bins
        summary[cpu] = {"readings": len(rows), "fast_decile_us": fast, "median_us": values[len(values) // 2],
                        "slow_share": round(len(slow) / max(1, len(rows)), 3)}
        print(f"cpu {cpu:>2}: fast {fast:7.1f} us  median {values[len(values) // 2]:7.1f} us  "
              f"slow share {summary[cpu]['slow_share']:.2f}")
    bins = range(int(args.seconds / 0.25))
    together = [sum(b in s for s in slow_at.values()) for b in bins]
    print("cores slow in each 250 ms bin:", together)
    with open(os.path.join(args.out, "core_speed.json"), "w") as fh:
        json.dump({"cpus": cpus, "summary": summary, "slow_cores_per_250ms": together,
                   "readings": {str(c): r for c, r in per_cpu.items()}}, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
