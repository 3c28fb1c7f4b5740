"""Probe: does a graph call's host part move between fresh processes, and is it the process layout? (issue 8)

One fresh process per run: the zoo MLP at batch 1 captured with `gl.capture`, then 40 interleaved blocks
of 400 calls each of (a) `CapturedGraph.__call__` and (b) raw `static.copy_(x); graph.replay()` on the
same graph (`cg.replay` path without graphlab's Python), each call split into submit (until the call
returns) and wall (until `torch.cuda.synchronize()` returns), and the dispatcher reading after each
block. One JSON line per process: medians over blocks, PYTHONHASHSEED, whether ASLR was off.

    PYTHONPATH=. python3 scripts/probes/process_layout_probe.py            # one process, one JSON line
    # the driver (below, --runs N) starts N children per setting, interleaved: random hash seed,
    # PYTHONHASHSEED=0, PYTHONHASHSEED=0 under `setarch -R` (ASLR off, where permitted)
    PYTHONPATH=. python3 scripts/probes/process_layout_probe.py --runs 8 --out DIR
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def one() -> dict:
    import torch

    import graphlab as gl
    from graphlab.timing.machine import ClockReader
    from graphlab.zoo import ZOO

    zoo = ZOO["mlp"]
    model = zoo.build(device="cuda")
    sets = [zoo.make_inputs(1, device="cuda", seed=s) for s in range(3)]
    sets = [s if isinstance(s, tuple) else (s,) for s in sets]
    with torch.no_grad():
        cg = gl.capture(model, *sets[0])
    static = cg.inputs[0]
    raw = cg.torch_graph
    clocks = ClockReader(0, dispatch=True)
    sync, clock = torch.cuda.synchronize, time.perf_counter_ns

    def block(fn, n=400):
        wall, sub = [], []
        fn(sets[0])
        sync()
        for i in range(n):
            x = sets[i % 3]
            t0 = clock()
            fn(x)
            t1 = clock()
            sync()
            t2 = clock()
            wall.append((t2 - t0) / 1e3)
            sub.append((t1 - t0) / 1e3)
        return statistics.median(wall), statistics.median(sub)

    def call(x):
        cg(*x)

    def raw_call(x):
        static.copy_(x[0])
        raw.replay()

    modes = {"captured": call}
    if static is not None and raw is not None:
        modes["raw"] = raw_call
    with torch.no_grad():
        for fn in modes.values():
            for _ in range(2000):
                fn(sets[0])
        sync()
        out = {m: {"wall": [], "submit": []} for m in modes}
        disp = []
        import gc
        gc.disable()
        for b in range(40):
            for m in (list(modes) if b % 2 == 0 else list(reversed(modes))):
                w, s = block(modes[m])
                out[m]["wall"].append(w)
                out[m]["submit"].append(s)
            disp.append(clocks.dispatch_speed_us())
        gc.enable()
    res = {"pid": os.getpid(), "hashseed": os.environ.get("PYTHONHASHSEED", "random"),
           "aslr_off": os.environ.get("PROBE_ASLR_OFF") == "1", "cpu": os.sched_getaffinity(0).__len__(),
           "dispatch_p50_us": round(statistics.median(disp), 1), "dispatch_min_us": round(min(disp), 1),
           "static_ptr_mod_4096": None if static is None else static.data_ptr() % 4096,
           "id_cg_mod_4096": id(cg) % 4096}
    for m, v in out.items():
        res[m] = {"wall_p50_us": round(statistics.median(v["wall"]), 3),
                  "submit_p50_us": round(statistics.median(v["submit"]), 3),
                  "wait_p50_us": round(statistics.median([w - s for w, s in zip(v["wall"], v["submit"])]), 3),
                  "wall_blocks": [round(x, 3) for x in v["wall"]], "submit_blocks": [round(x, 3) for x in v["submit"]]}
    res["dispatch_blocks"] = [round(x, 1) for x in disp]
    return res


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=0)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if not args.runs:
        print(json.dumps(one()))
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    aslr_ok = subprocess.run(["setarch", os.uname().machine, "-R", "true"], capture_output=True).returncode == 0
    settings = [("random", {}, []), ("seed0", {"PYTHONHASHSEED": "0"}, [])]
    if aslr_ok:
        settings.append(("seed0_noaslr", {"PYTHONHASHSEED": "0", "PROBE_ASLR_OFF": "1"},
                         ["setarch", os.uname().machine, "-R"]))
    lines = []
    for i in range(args.runs):
        for name, env, prefix in settings:
            env_all = {k: v for k, v in os.environ.items() if k != "PYTHONHASHSEED"}
            env_all.update(env)
            r = subprocess.run([*prefix, sys.executable, __file__], env=env_all, capture_output=True, text=True,
                               timeout=120)
            try:
                rec = json.loads(r.stdout.strip().splitlines()[-1])
            except Exception:
                rec = {"error": (r.stderr or r.stdout)[-2000:]}
            rec["setting"], rec["run"], rec["time"] = name, i, time.strftime("%H:%M:%S")
            lines.append(rec)
            short = {k: rec.get(k) for k in ("setting", "run", "dispatch_p50_us")}
            for m in ("captured", "raw"):
                if m in rec:
                    short[m] = {k: rec[m][k] for k in ("wall_p50_us", "submit_p50_us", "wait_p50_us")}
            print(json.dumps(short), flush=True)
    (out / "process_layout.json").write_text(json.dumps({"aslr_off_available": aslr_ok, "runs": lines}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
