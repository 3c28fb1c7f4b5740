"""Probe: how this GPU host behaves while graphlab times it (issue 8, timing you can reproduce).

    PYTHONPATH=. python3 scripts/probes/timing_probe.py --out DIR            # about 60 s on an H200
    PYTHONPATH=. python3 scripts/probes/timing_probe.py --out DIR --skip bench_vs_blocks compile_check  # ~35 s

Each check runs in its own try/except and lands in DIR/timing_probe.json as {"ok": bool, ...} with the
exact error message when it failed. Raw block medians are kept, so the mode detector can be tuned on
them offline. The timing method (graphlab.timing.sweep, docs/latency-method.md) depends on these:

  environment        CPU model, cores, affinity, the CPU this process runs on, cpufreq in sysfs or not,
                     /proc/cpuinfo MHz of every core, pynvml (nvidia-ml-py) and its clock/throttle calls
  reader_costs_us    what each per-block reading costs: pynvml SM clock, sysfs/proc MHz, /proc/self/stat,
                     a CUDA event pair, perf_counter_ns, a fixed pure-Python host workload
  engine_fields      gl.capture on the zoo MLP: capture_ms, instantiate_ms, pool_bytes, peak_bytes,
                     exec_bytes, memory_bytes, unchecked, replay present, and their values
  mode_pattern       zoo GPT batch 1, eager and graph in interleaved ~10 ms blocks (order alternating)
                     for --pattern-s seconds; per block its median, p10, p90, start time; per pair the CPU
                     MHz, current CPU, GPU SM clock and a fixed host workload's time. Summary: modes of the
                     eager block medians (graphlab.timing.host_modes when present, and a 5% histogram)
  block_length       eager GPT batch 1 block medians at block lengths 3, 10, 30 ms: within-run spread
  events_cost        synchronised calls with and without a CUDA event pair around each (eager, graph)
  warmup_settle      per-call times of the first 150 eager calls of a new shape and of the first 150 graph
                     calls after its capture (how long warm-up takes to settle)
  bench_vs_blocks    run-to-run spread, same process: torch.utils.benchmark Timer.adaptive_autorange vs
                     interleaved paired blocks (5 repeats each, alternated): eager, graph, speedup
  make_graphed       torch.cuda.make_graphed_callables on a copy of the MLP under no_grad: works, matches
                     eager, host time per call
  profiling_contamination  eager GPT batch 1 blocks with the host speed for 3 s, 15 profiled calls, 3 s
                     again: the eager median per host speed mode before and after (is "profile last" needed?)
  smoke_new_method   graphlab's paired sweep (mlp, batch 1 and 8), the dense sweep (mlp 1-4, GPT seq 8/64)
                     and the overhead benchmark's tiny case with torch.compile, end to end
  compile_check      torch.compile(mode="reduce-overhead", dynamic=False) on the MLP: compile time,
                     counters (cudagraph_skips), whether a CUDAGraph.replay counter sees replays, the
                     recompile-limit config name
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable

RESULTS: dict[str, Any] = {}
STATE: dict[str, Any] = {}


SKIP: set[str] = set()


def check(name: str) -> Callable[[Callable[[], dict[str, Any]]], None]:
    def wrap(fn: Callable[[], dict[str, Any]]) -> None:
        if name in SKIP:
            RESULTS[name] = {"ok": True, "skipped": True}
            return
        t0 = time.perf_counter()
        try:
            out = fn()
            out.setdefault("ok", True)
        except BaseException as exc:  # noqa: BLE001 - a probe keeps going whatever failed
            out = {"ok": False, "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc(limit=5)}
        out["seconds"] = round(time.perf_counter() - t0, 3)
        RESULTS[name] = out
        flag = "ok " if out.get("ok") else "FAIL"
        brief = {k: v for k, v in out.items() if k not in ("traceback", "seconds", "raw") and not k.startswith("_")}
        print(f"[{flag}] {name} ({out['seconds']} s): {json.dumps(brief, default=str)[:700]}", flush=True)
    return wrap


# -- small readers ---------------------------------------------------------------------------------------------


def current_cpu() -> int | None:
    try:
        with open("/proc/self/stat", encoding="ascii") as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[36])
    except (OSError, ValueError, IndexError):
        return None


def sysfs_mhz(cpu: int | None) -> float | None:
    if cpu is None:
        return None
    try:
        with open(f"/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq", encoding="ascii") as fh:
            return int(fh.read()) / 1000.0
    except (OSError, ValueError):
        return None


def cpuinfo_mhz() -> dict[int, float]:
    out: dict[int, float] = {}
    cpu = None
    with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
        for line in fh:
            if line.startswith("processor"):
                cpu = int(line.split(":")[1])
            elif line.startswith("cpu MHz") and cpu is not None:
                out[cpu] = float(line.split(":")[1])
    return out


def host_work_us() -> float:
    """A fixed pure-Python workload (~100-300 µs): a direct reading of how fast the host runs Python now."""
    t0 = time.perf_counter_ns()
    total = 0
    for i in range(4000):
        total += i * i
    return (time.perf_counter_ns() - t0) / 1e3


NVML: dict[str, Any] = {}


def nvml_sm_mhz() -> int | None:
    if "handle" not in NVML:
        return None
    pynvml = NVML["module"]
    return int(pynvml.nvmlDeviceGetClockInfo(NVML["handle"], pynvml.NVML_CLOCK_SM))


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    pos = (len(s) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def spread_pct(values: list[float]) -> float:
    return 100.0 * (max(values) - min(values)) / statistics.median(values)


# -- the calls ---------------------------------------------------------------------------------------------------


def timed_block(torch: Any, call: Callable[[Any], Any], inputs: list[Any], n: int, events: Any = None) -> list[float]:
    out: list[float] = []
    sync = torch.cuda.synchronize
    for i in range(n):
        x = inputs[i % len(inputs)]
        t0 = time.perf_counter_ns()
        if events is not None:
            events[i][0].record()
            call(x)
            events[i][1].record()
        else:
            call(x)
        sync()
        out.append((time.perf_counter_ns() - t0) / 1e3)
    return out


def calls_for(torch: Any, call: Callable[[Any], Any], inputs: list[Any], block_ms: float) -> int:
    probe = timed_block(torch, call, inputs, 9)
    return max(3, min(3000, int(block_ms * 1e3 / max(statistics.median(probe), 1.0))))


def setup_gpt(torch: Any, batch_size: int = 1) -> dict[str, Any]:
    from graphlab.zoo import get_model

    zm = get_model("gpt")
    model = zm.build(device="cuda")
    inputs = [zm.make_inputs(batch_size, device="cuda", seed=s)[0] for s in range(3)]
    with torch.no_grad():
        for _ in range(20):
            model(inputs[0])
        torch.cuda.synchronize()
        try:
            from graphlab.capture.api import capture

            cg = capture(model, inputs[0])
            graph_call = lambda x: cg(x)  # noqa: E731
            source = "gl.capture"
        except Exception as exc:  # noqa: BLE001 - fall back to a raw graph so the pattern is still measured
            static = inputs[0].clone()
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    model(static)
            torch.cuda.current_stream().wait_stream(side)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                model(static)

            def graph_call(x: Any) -> None:
                static.copy_(x)
                g.replay()

            source = f"raw CUDAGraph (gl.capture failed: {type(exc).__name__}: {exc})"
            cg = g
        for x in inputs * 10:
            graph_call(x)
        torch.cuda.synchronize()
    return {"model": model, "inputs": inputs, "eager": lambda x: model(x), "graph": graph_call, "source": source,
            "keep": cg}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="out/probes", help="folder for timing_probe.json")
    parser.add_argument("--pattern-s", type=float, default=8.0, help="seconds of the interleaved mode pattern")
    parser.add_argument("--skip", nargs="*", default=[], help="checks to skip, e.g. bench_vs_blocks compile_check")
    args = parser.parse_args(argv)
    SKIP.update(args.skip)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()

    import torch

    if not torch.cuda.is_available():
        print("timing_probe: no CUDA GPU here", file=sys.stderr)
        return 2

    @check("environment")
    def _() -> dict[str, Any]:
        info: dict[str, Any] = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(),
                                "cpu_count": os.cpu_count(), "affinity": sorted(os.sched_getaffinity(0)),
                                "current_cpu": current_cpu(), "python": sys.version.split()[0]}
        cpu = current_cpu()
        info["sysfs_cpufreq"] = os.path.exists(f"/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq")
        for name in ("scaling_governor", "scaling_driver", "scaling_max_freq", "scaling_min_freq"):
            try:
                info[name] = Path(f"/sys/devices/system/cpu/cpu{cpu}/cpufreq/{name}").read_text().strip()
            except OSError as exc:
                info[name] = f"unreadable: {exc.strerror}"
        try:
            info["cpuinfo_mhz"] = cpuinfo_mhz()
            with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
                info["cpu_model"] = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), None)
        except OSError as exc:
            info["cpuinfo"] = f"unreadable: {exc}"
        try:
            import pynvml

            pynvml.nvmlInit()
            handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
            NVML.update(module=pynvml, handle=handle)
            info["pynvml_file"] = Path(pynvml.__file__).name
            info["nvml_sm_mhz"] = nvml_sm_mhz()
            info["nvml_mem_mhz"] = int(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM))
            info["nvml_max_sm_mhz"] = int(pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM))
            for fname in ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"):
                fn = getattr(pynvml, fname, None)
                if fn is not None:
                    try:
                        info[fname] = int(fn(handle))
                    except Exception as exc:  # noqa: BLE001
                        info[fname] = f"{type(exc).__name__}: {exc}"
            info["nvml_temperature_c"] = int(pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU))
            info["nvml_power_w"] = pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0
        except Exception as exc:  # noqa: BLE001
            info["pynvml"] = f"{type(exc).__name__}: {exc}"
        try:
            smi = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.max.sm,clocks.mem,pstate,"
                                  "clocks_event_reasons.active", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=20)
            info["nvidia_smi"] = (smi.stdout or smi.stderr).strip()
        except Exception as exc:  # noqa: BLE001
            info["nvidia_smi"] = f"{type(exc).__name__}: {exc}"
        return info

    @check("reader_costs_us")
    def _() -> dict[str, Any]:
        def cost(fn: Callable[[], Any], n: int = 200) -> float:
            samples = []
            for _ in range(n):
                t0 = time.perf_counter_ns()
                fn()
                samples.append((time.perf_counter_ns() - t0) / 1e3)
            return round(statistics.median(samples), 2)

        cpu = current_cpu()
        out: dict[str, Any] = {
            "perf_counter_ns": cost(time.perf_counter_ns, 2000),
            "proc_self_stat_cpu": cost(current_cpu),
            "sysfs_mhz": cost(lambda: sysfs_mhz(cpu)) if sysfs_mhz(cpu) is not None else None,
            "host_work_us_value": round(statistics.median(host_work_us() for _ in range(50)), 2),
        }
        try:
            out["proc_cpuinfo_parse"] = cost(cpuinfo_mhz, 20)
        except OSError as exc:
            out["proc_cpuinfo_parse"] = f"{exc}"
        if "handle" in NVML:
            out["nvml_sm_clock"] = cost(nvml_sm_mhz)
        pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(200)]
        it = iter(pairs)
        out["event_pair_record"] = cost(lambda: [e.record() for e in next(it)], 200)
        torch.cuda.synchronize()
        out["event_create_pair"] = cost(lambda: (torch.cuda.Event(enable_timing=True),
                                                 torch.cuda.Event(enable_timing=True)), 200)
        out["synchronize_idle"] = cost(torch.cuda.synchronize, 500)
        return out

    @check("engine_fields")
    def _() -> dict[str, Any]:
        from graphlab.capture.api import capture
        from graphlab.zoo import get_model

        zm = get_model("mlp")
        model = zm.build(device="cuda")
        (x,) = zm.make_inputs(1, device="cuda")
        with torch.no_grad():
            cg = capture(model, x)
        out: dict[str, Any] = {}
        for attr in ("capture_ms", "instantiate_ms", "pool_bytes", "peak_bytes", "exec_bytes", "memory_bytes"):
            out[attr] = getattr(cg, attr, "MISSING")
        for attr in ("unchecked", "replay", "cost", "device", "torch_graph"):
            out[f"has_{attr}"] = hasattr(cg, attr)
        try:
            out["kernels_in_dot"] = len(cg.graph.kernels())
        except Exception as exc:  # noqa: BLE001
            out["kernels_in_dot"] = f"{type(exc).__name__}: {exc}"
        cg.reset()
        return out

    @check("mode_pattern")
    def _() -> dict[str, Any]:
        g = setup_gpt(torch, 1)
        STATE["gpt"] = g
        inputs = g["inputs"]
        with torch.no_grad():
            n_e = calls_for(torch, g["eager"], inputs, 10.0)
            n_g = calls_for(torch, g["graph"], inputs, 10.0)
            blocks: list[dict[str, Any]] = []
            pairs: list[dict[str, Any]] = []
            t0 = time.perf_counter()
            i = 0
            while time.perf_counter() - t0 < args.pattern_s:
                order = ("eager", "graph") if i % 2 == 0 else ("graph", "eager")
                for mode in order:
                    start_ms = (time.perf_counter() - t0) * 1e3
                    vals = timed_block(torch, g[mode], inputs, n_e if mode == "eager" else n_g)
                    blocks.append({"pair": i, "mode": mode, "start_ms": round(start_ms, 2),
                                   "p50_us": round(statistics.median(vals), 2), "p10_us": round(pct(vals, 10), 2),
                                   "p90_us": round(pct(vals, 90), 2)})
                cpu = current_cpu()
                pairs.append({"pair": i, "cpu": cpu, "cpu_mhz": sysfs_mhz(cpu), "gpu_sm_mhz": nvml_sm_mhz(),
                              "host_work_us": round(host_work_us(), 2)})
                i += 1
        eager = [b["p50_us"] for b in blocks if b["mode"] == "eager"]
        graph = [b["p50_us"] for b in blocks if b["mode"] == "graph"]
        ratio = [e["p50_us"] / gr["p50_us"] for e, gr in zip([b for b in blocks if b["mode"] == "eager"],
                                                               [b for b in blocks if b["mode"] == "graph"])]
        hist: dict[str, int] = {}
        for v in eager:
            edge = round(min(eager) * 1.05 ** int((v / min(eager) - 1) / 0.05 + 1e-9), 0)
            hist[str(edge)] = hist.get(str(edge), 0) + 1
        summary: dict[str, Any] = {
            "graph_source": g["source"], "calls_per_block": {"eager": n_e, "graph": n_g}, "pairs": len(pairs),
            "eager_block_p50": {"min": min(eager), "p10": pct(eager, 10), "p50": pct(eager, 50),
                                "p90": pct(eager, 90), "max": max(eager)},
            "graph_block_p50": {"min": min(graph), "p10": pct(graph, 10), "p50": pct(graph, 50),
                                "p90": pct(graph, 90), "max": max(graph)},
            "pair_speedup": {"p10": pct(ratio, 10), "p50": pct(ratio, 50), "p90": pct(ratio, 90)},
            "eager_histogram_5pct": hist,
            "cpus_seen": sorted({p["cpu"] for p in pairs if p["cpu"] is not None}),
            "cpu_mhz_seen": sorted({p["cpu_mhz"] for p in pairs if p["cpu_mhz"] is not None})[:20],
            "gpu_sm_mhz_seen": sorted({p["gpu_sm_mhz"] for p in pairs if p["gpu_sm_mhz"] is not None}),
        }
        hw = [p["host_work_us"] for p in pairs]
        if len(hw) > 3:
            e_by_pair = {b["pair"]: b["p50_us"] for b in blocks if b["mode"] == "eager"}
            xs = [e_by_pair[p["pair"]] for p in pairs]
            summary["host_work_us"] = {"p10": pct(hw, 10), "p50": pct(hw, 50), "p90": pct(hw, 90)}
            try:
                summary["corr_host_work_vs_eager"] = round(statistics.correlation(hw, xs), 3)
            except statistics.StatisticsError as exc:
                summary["corr_host_work_vs_eager"] = str(exc)
        try:
            from graphlab.timing import host_modes as modes_module

            found = modes_module.detect_modes(eager)
            summary["modes"] = {"describe": found.describe(), "levels_us": found.levels_us, "shares": found.shares}
            host_found = modes_module.detect_modes([p["host_work_us"] for p in pairs])
            summary["host_modes"] = host_found.describe()
        except Exception as exc:  # noqa: BLE001 - the detector may not exist yet; the raw data is kept
            summary["modes"] = f"{type(exc).__name__}: {exc}"
        return {**summary, "raw": {"blocks": blocks, "pairs": pairs}}

    @check("block_length")
    def _() -> dict[str, Any]:
        g = STATE["gpt"]
        out: dict[str, Any] = {}
        with torch.no_grad():
            for block_ms in (3.0, 10.0, 30.0):
                n = calls_for(torch, g["eager"], g["inputs"], block_ms)
                meds = []
                t0 = time.perf_counter()
                while time.perf_counter() - t0 < 1.0:
                    meds.append(round(statistics.median(timed_block(torch, g["eager"], g["inputs"], n)), 2))
                out[f"{block_ms:g}ms"] = {"calls": n, "blocks": len(meds), "p10": pct(meds, 10), "p50": pct(meds, 50),
                                          "p90": pct(meds, 90), "raw": meds}
        return out

    @check("events_cost")
    def _() -> dict[str, Any]:
        g = STATE["gpt"]
        out: dict[str, Any] = {}
        with torch.no_grad():
            for mode in ("eager", "graph"):
                n = calls_for(torch, g[mode], g["inputs"], 10.0)
                events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                          for _ in range(n)]
                with_ev, without = [], []
                for i in range(30):  # alternate which goes first
                    first_events = i % 2 == 0
                    a = statistics.median(timed_block(torch, g[mode], g["inputs"], n, events if first_events else None))
                    b = statistics.median(timed_block(torch, g[mode], g["inputs"], n, None if first_events else events))
                    with_ev.append(a if first_events else b)
                    without.append(b if first_events else a)
                diffs = [a - b for a, b in zip(with_ev, without)]
                out[mode] = {"with_events_p50": pct(with_ev, 50), "without_p50": pct(without, 50),
                             "paired_diff_us_p50": pct(diffs, 50), "paired_diff_us_p10": pct(diffs, 10),
                             "paired_diff_us_p90": pct(diffs, 90)}
        return out

    @check("warmup_settle")
    def _() -> dict[str, Any]:
        from graphlab.zoo import get_model

        zm = get_model("gpt")
        model = zm.build(device="cuda")
        inputs = [zm.make_inputs(4, device="cuda", seed=s)[0] for s in range(3)]
        with torch.no_grad():
            eager = timed_block(torch, lambda x: model(x), inputs, 150)
            try:
                from graphlab.capture.api import capture

                cg = capture(model, inputs[0])
                graph = timed_block(torch, lambda x: cg(x), inputs, 150)
            except Exception as exc:  # noqa: BLE001
                graph = []
                RESULTS.setdefault("notes", []).append(f"warmup_settle graph: {exc}")

        def shape(v: list[float]) -> dict[str, Any]:
            if not v:
                return {}
            chunks = [round(statistics.median(v[i:i + 10]), 1) for i in range(0, len(v), 10)]
            return {"first_us": round(v[0], 1), "second_us": round(v[1], 1), "median_per_10_calls": chunks}

        return {"eager_b4": shape(eager), "graph_b4": shape(graph)}

    @check("bench_vs_blocks")
    def _() -> dict[str, Any]:
        import torch.utils.benchmark as tub

        g = STATE["gpt"]
        inputs = g["inputs"]
        x = inputs[1]
        sync = torch.cuda.synchronize
        fns = {"eager": lambda: (g["eager"](x), sync()), "graph": lambda: (g["graph"](x), sync())}
        bench: dict[str, list[dict[str, Any]]] = {"eager": [], "graph": []}
        blocks: list[dict[str, Any]] = []
        sig = None
        with torch.no_grad():
            n_e = calls_for(torch, g["eager"], inputs, 20.0)
            n_g = calls_for(torch, g["graph"], inputs, 20.0)
            for rep in range(5):
                for mode in ("eager", "graph"):
                    timer = tub.Timer(stmt="f()", globals={"f": fns[mode]})
                    if sig is None:
                        import inspect

                        sig = str(inspect.signature(timer.adaptive_autorange))
                    t0 = time.perf_counter()
                    m = timer.adaptive_autorange(threshold=0.1, min_run_time=0.2, max_run_time=1.0)
                    bench[mode].append({"median_us": m.median * 1e6, "iqr_us": m.iqr * 1e6,
                                        "number_per_run": m.number_per_run, "runs": len(m.times),
                                        "wall_s": round(time.perf_counter() - t0, 3)})
                e_meds, g_meds = [], []
                for i in range(15):
                    order = ("eager", "graph") if i % 2 == 0 else ("graph", "eager")
                    for mode in order:
                        v = statistics.median(timed_block(torch, g[mode], inputs, n_e if mode == "eager" else n_g))
                        (e_meds if mode == "eager" else g_meds).append(v)
                ratios = [a / b for a, b in zip(e_meds, g_meds)]
                blocks.append({"eager_us": statistics.median(e_meds), "graph_us": statistics.median(g_meds),
                               "speedup": statistics.median(ratios), "eager_blocks": [round(v, 1) for v in e_meds],
                               "graph_blocks": [round(v, 1) for v in g_meds]})
        b_speed = [e["median_us"] / gr["median_us"] for e, gr in zip(bench["eager"], bench["graph"])]
        return {
            "adaptive_autorange_signature": sig,
            "benchmark": {"eager_spread_pct": spread_pct([r["median_us"] for r in bench["eager"]]),
                          "graph_spread_pct": spread_pct([r["median_us"] for r in bench["graph"]]),
                          "speedup_spread_pct": spread_pct(b_speed), "speedups": [round(s, 3) for s in b_speed],
                          "runs": bench},
            "paired_blocks": {"eager_spread_pct": spread_pct([r["eager_us"] for r in blocks]),
                              "graph_spread_pct": spread_pct([r["graph_us"] for r in blocks]),
                              "speedup_spread_pct": spread_pct([r["speedup"] for r in blocks]),
                              "speedups": [round(r["speedup"], 3) for r in blocks], "runs": blocks},
        }

    @check("make_graphed")
    def _() -> dict[str, Any]:
        from graphlab.zoo import get_model

        zm = get_model("mlp")
        model = zm.build(device="cuda")
        (x,) = zm.make_inputs(1, device="cuda")
        x2 = zm.make_inputs(1, device="cuda", seed=1)[0]
        out: dict[str, Any] = {}
        with torch.no_grad():
            graphed = torch.cuda.make_graphed_callables(copy.deepcopy(model), (x.clone(),))
            out["type"] = type(graphed).__name__
            ref = model(x2)
            got = graphed(x2)
            out["max_abs_err"] = float((ref - got).abs().max())
            samples = []
            for _ in range(5):
                t0 = time.perf_counter_ns()
                for _ in range(500):
                    graphed(x2)
                samples.append((time.perf_counter_ns() - t0) / 500e3)
                torch.cuda.synchronize()
            out["host_us_per_call_back_to_back"] = round(min(samples), 2)
        try:  # the same with grad enabled (parameters require grad): does it still work for inference?
            g2 = torch.cuda.make_graphed_callables(copy.deepcopy(model), (x.clone(),))
            out["with_grad_enabled"] = f"ok, output requires_grad={g2(x2).requires_grad}"
        except Exception as exc:  # noqa: BLE001
            out["with_grad_enabled"] = f"{type(exc).__name__}: {exc}"
        return out

    @check("profiling_contamination")
    def _() -> dict[str, Any]:
        """Does a process that has profiled launch more slowly, within the same host speed state?"""
        from graphlab.timing.host_modes import assign_modes, detect_modes
        from graphlab.timing.timeline import profile_call

        g = STATE["gpt"]
        n = calls_for(torch, g["eager"], g["inputs"], 10.0)

        def phase(seconds: float) -> list[tuple[float, float]]:
            out = []
            t0 = time.perf_counter()
            with torch.no_grad():
                while time.perf_counter() - t0 < seconds:
                    med = statistics.median(timed_block(torch, g["eager"], g["inputs"], n))
                    out.append((round(med, 2), round(host_work_us(), 2)))
            return out

        before = phase(3.0)
        with torch.no_grad():
            for _ in range(15):
                profile_call(lambda: g["eager"](g["inputs"][0]), "eager")
        after = phase(3.0)
        host = detect_modes([h for _, h in before + after])
        summary: dict[str, Any] = {"host_modes": host.describe(),
                                   "blocks": {"before": len(before), "after": len(after)}}
        for label, data in (("before", before), ("after", after)):
            lab = assign_modes([h for _, h in data], host.levels_us).labels
            per_mode = {}
            for m in range(host.count):
                vals = [e for (e, _), lb in zip(data, lab) if lb == m]
                if vals:
                    per_mode[f"host_mode_{m}"] = (round(statistics.median(vals), 1), len(vals))
            summary[label] = per_mode
        summary["note"] = "eager GPT b1 block median (µs), blocks, per host speed mode: compare before vs after"
        return {**summary, "raw": {"before": before, "after": after}}

    @check("smoke_new_method")
    def _() -> dict[str, Any]:
        """The paired sweep, the dense sweep and the overhead benchmark's tiny case, end to end on this GPU."""
        out: dict[str, Any] = {}
        from graphlab.timing.sweep import sweep

        t0 = time.perf_counter()
        result = sweep("mlp", batch_sizes=[1, 8], pairs=4, block_ms=10.0, progress=False)
        out["sweep_s"] = round(time.perf_counter() - t0, 2)
        out["sweep_table"] = result.table().splitlines()
        out["sweep_modes"] = result.modes_report().splitlines()
        p = result.point(1, "graph")
        out["graph_b1"] = {k: getattr(p, k) for k in ("capture_ms", "instantiate_ms", "pool_bytes",
                                                      "graph_peak_bytes", "graph_exec_bytes", "kernel_count",
                                                      "gpu_busy_us", "warmup_calls", "repetitions")}
        out["graph_b1"]["block_gpu_mhz"] = list(p.block_gpu_mhz[:3])
        out["graph_b1"]["block_cpu_mhz"] = list(p.block_cpu_mhz[:3])
        out["graph_b1"]["block_host_us"] = list(p.block_host_us[:3])
        out["weight_update_keys"] = sorted((result.weight_update or {}).keys())
        from graphlab.studies.dense import dense_sweep, seq_sweep

        t0 = time.perf_counter()
        dense = dense_sweep("mlp", (1, 2, 3, 4))
        seq = seq_sweep((8, 64), (1, 4))
        out["dense_s"] = round(time.perf_counter() - t0, 2)
        out["dense_batch_sizes"] = dense.batch_sizes
        out["seq"] = {"seq_lens": seq.seq_lens, "p50_b4_s8": seq.point(4, "graph", seq_len=8).p50_us}
        from graphlab.studies.overhead import run_overhead

        t0 = time.perf_counter()
        data = run_overhead(models=(), tiny=True, compile_too=True, rounds=4, log=lambda line: None)
        out["overhead_s"] = round(time.perf_counter() - t0, 2)
        case = data["cases"][0]
        out["overhead_tiny"] = {w: (e.get("error") or {"host_best": round(e["host_us"]["best"], 2),
                                                       "latency_p50": round(e["latency_us"]["median"], 2),
                                                       "notes": e.get("notes")})
                                for w, e in case["ways"].items()}
        out["overhead_gaps"] = case["gaps"]
        return out

    @check("compile_check")
    def _() -> dict[str, Any]:
        from graphlab.zoo import get_model

        import torch._dynamo

        out: dict[str, Any] = {}
        cfg = torch._dynamo.config
        out["recompile_limit_names"] = [n for n in ("recompile_limit", "cache_size_limit") if hasattr(cfg, n)]
        zm = get_model("mlp")
        model = zm.build(device="cuda")
        (x,) = zm.make_inputs(1, device="cuda")
        x2 = zm.make_inputs(1, device="cuda", seed=1)[0]
        from torch._dynamo.utils import counters

        counters.clear()
        t0 = time.perf_counter()
        with torch.no_grad():
            compiled = torch.compile(model, mode="reduce-overhead", dynamic=False)
            for _ in range(3):
                compiled(x)
            torch.cuda.synchronize()
            out["compile_and_record_s"] = round(time.perf_counter() - t0, 2)
            out["inductor_counters"] = {k: int(v) for k, v in counters["inductor"].items()
                                        if "cudagraph" in k or "graph" in k}
            out["cudagraph_skips"] = int(counters["inductor"]["cudagraph_skips"])
            replays = {"n": 0}
            original = torch.cuda.CUDAGraph.replay

            def counting(self: Any, *a: Any, **k: Any) -> Any:
                replays["n"] += 1
                return original(self, *a, **k)

            torch.cuda.CUDAGraph.replay = counting  # type: ignore[method-assign]
            try:
                for _ in range(5):
                    compiled(x2)
                torch.cuda.synchronize()
            finally:
                torch.cuda.CUDAGraph.replay = original  # type: ignore[method-assign]
            out["python_replay_calls_in_5_calls"] = replays["n"]
            ref = model(x2)
            out["max_abs_err_vs_eager"] = float((compiled(x2) - ref).abs().max())
            samples = []
            for _ in range(5):
                t0 = time.perf_counter_ns()
                for _ in range(300):
                    compiled(x2)
                samples.append((time.perf_counter_ns() - t0) / 300e3)
                torch.cuda.synchronize()
            out["host_us_per_call_back_to_back"] = round(min(samples), 2)
            try:
                from torch.profiler import ProfilerActivity, profile

                with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                    compiled(x2)
                    torch.cuda.synchronize()
                names = [e.name for e in prof.events()]
                out["profiled_graph_launches"] = sum("GraphLaunch" in n for n in names)
            except Exception as exc:  # noqa: BLE001
                out["profiled_graph_launches"] = f"{type(exc).__name__}: {exc}"
        out["compile_threads_env"] = os.environ.get("TORCHINDUCTOR_COMPILE_THREADS")
        return out

    RESULTS["total_seconds"] = round(time.perf_counter() - t_start, 1)
    path = out_dir / "timing_probe.json"
    path.write_text(json.dumps(RESULTS, indent=1, default=str), encoding="utf-8")
    failed = [k for k, v in RESULTS.items() if isinstance(v, dict) and not v.get("ok", True)]
    print(f"timing_probe: wrote {path} in {RESULTS['total_seconds']} s; failed: {failed or 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
