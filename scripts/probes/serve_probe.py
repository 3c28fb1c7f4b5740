"""Probe: the GPU facts the serving pipeline (graphlab.serve, issue 14) relies on, checked on this GPU.

    PYTHONPATH=. python3 scripts/probes/serve_probe.py --out DIR      # about 20-40 s on an H200

Each check runs in its own try/except and lands in DIR/serve_probe.json as {"ok": bool, ...} with the
exact error message when it failed. The service's design depends on these:

  thread_local_stream     a worker thread's `torch.cuda.stream(s)` does not change the main thread's stream
  capture_in_thread       a graph captured and replayed inside a worker thread, on that thread's own stream,
                          matches eager (raw torch.cuda.graph, and gl.capture when it is importable)
  cross_thread_event      a D2H copy into pinned memory + an event recorded in the worker thread; another
                          thread waits on the event and reads the right values; timing events read there too
  event_sync_releases_gil a Python thread keeps running while another waits in Event.synchronize()
  replay_releases_gil     the same while another thread replays a long graph and then synchronizes
  pinned_alloc_cost_us    cost of torch.empty(pin_memory=True) and of cat(out=pinned) (32 KiB .. 5 MiB)
  concurrent_capture      (fresh subprocess each) capturing in a worker while the main thread launches work,
                          capture_error_mode "global" vs "thread_local": what fails, with which message
  gpt_latency_us          the zoo GPT (next-token logits at the last position) eager vs replay in a worker
                          thread at batch 1/8/32, to size the load test's arrival rates
  cpu_preprocess_us       resize+uint8 of a 3x96x128 image to 224x224 on this machine's CPU (image path)
  packages                which of starlette, uvicorn, click, fastapi, pydantic, httpx, uvloop... are here
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Callable

RESULTS: dict[str, Any] = {}


def check(name: str) -> Callable[[Callable[[], dict[str, Any]]], None]:
    def wrap(fn: Callable[[], dict[str, Any]]) -> None:
        t0 = time.perf_counter()
        try:
            out = fn()
            out.setdefault("ok", True)
        except BaseException as exc:  # noqa: BLE001 - a probe keeps going whatever failed
            out = {"ok": False, "error": f"{type(exc).__name__}: {exc}",
                   "traceback": traceback.format_exc(limit=4)}
        out["seconds"] = round(time.perf_counter() - t0, 3)
        RESULTS[name] = out
        flag = "ok " if out.get("ok") else "FAIL"
        brief = {k: v for k, v in out.items() if k not in ("traceback", "seconds")}
        print(f"[{flag}] {name}: {json.dumps(brief, default=str)[:400]}", flush=True)
    return wrap


def in_thread(fn: Callable[[], Any]) -> Any:
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001
            box["error"] = exc

    t = threading.Thread(target=run, name="probe-worker")
    t.start()
    t.join(60)
    if "error" in box:
        raise box["error"]
    return box.get("value")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return concurrent_capture_child(args.child)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    import torch

    RESULTS["env"] = {"torch": torch.__version__, "cuda": str(torch.version.cuda),
                      "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
                      "cpu_count": os.cpu_count(), "python": sys.version.split()[0]}
    print(f"[env] {RESULTS['env']}", flush=True)
    dev = torch.device("cuda")

    @check("thread_local_stream")
    def _() -> dict[str, Any]:
        main_before = torch.cuda.current_stream().cuda_stream

        def work() -> dict[str, Any]:
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                seen = torch.cuda.current_stream().cuda_stream
                time.sleep(0.05)  # the main thread looks meanwhile
                return {"worker_stream": seen, "worker_is_own": seen == s.cuda_stream}

        box: dict[str, Any] = {}
        t = threading.Thread(target=lambda: box.update(work()))
        t.start()
        time.sleep(0.02)
        main_during = torch.cuda.current_stream().cuda_stream
        t.join()
        return {**box, "main_before": main_before, "main_during": main_during,
                "ok": box.get("worker_is_own") and main_during == main_before}

    def tiny_model() -> Any:
        return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 10)).to(dev).eval()

    @check("capture_in_thread")
    def _() -> dict[str, Any]:
        model = tiny_model()
        x = torch.randn(8, 64, device=dev)

        def work() -> dict[str, Any]:
            s = torch.cuda.Stream()
            res: dict[str, Any] = {}
            with torch.cuda.stream(s), torch.no_grad():
                static_x = x.clone()
                for _ in range(3):
                    model(static_x)
                s.synchronize()
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g, stream=s):
                    static_y = model(static_x)
                fresh = torch.randn(8, 64, device=dev)
                static_x.copy_(fresh)
                g.replay()
                ref = model(fresh)
                s.synchronize()
                res["raw_max_abs_err"] = float((static_y - ref).abs().max())
                res["replay_stream_is_worker"] = torch.cuda.current_stream().cuda_stream == s.cuda_stream
            try:
                from graphlab.capture.api import capture

                with torch.cuda.stream(s):
                    cg = capture(model, x.clone())
                    fresh = torch.randn(8, 64, device=dev)
                    y = cg(fresh).clone()
                    with torch.no_grad():
                        ref = model(fresh)
                    s.synchronize()
                res["gl_capture_max_abs_err"] = float((y - ref).abs().max())
            except Exception as exc:  # noqa: BLE001
                res["gl_capture_error"] = f"{type(exc).__name__}: {exc}"
            return res

        res = in_thread(work)
        res["ok"] = res["raw_max_abs_err"] < 1e-4
        return res

    @check("cross_thread_event")
    def _() -> dict[str, Any]:
        import queue

        handoff: queue.Queue[Any] = queue.Queue()

        def worker() -> None:
            try:
                produce()
            except BaseException as exc:  # noqa: BLE001
                handoff.put(exc)

        def produce() -> None:
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                host_in = torch.arange(4096, dtype=torch.float32).pin_memory()
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record(s)
                dev_x = host_in.to(dev, non_blocking=True)
                if hasattr(torch.cuda, "_sleep"):
                    torch.cuda._sleep(20_000_000)  # ~10 ms of GPU time so the reader must really wait
                y = dev_x * 2 + 1
                host_out = torch.empty(y.shape, dtype=y.dtype, pin_memory=True)
                host_out.copy_(y, non_blocking=True)
                end.record(s)
                done = torch.cuda.Event()
                done.record(s)
                handoff.put((host_out, done, start, end, time.perf_counter()))

        t = threading.Thread(target=worker)
        t.start()
        got = handoff.get(timeout=30)
        if isinstance(got, BaseException):
            t.join()
            raise got
        host_out, done, start, end, t_launched = got
        was_done_before_wait = done.query()
        done.synchronize()
        waited_ms = (time.perf_counter() - t_launched) * 1000
        t.join()
        expect = torch.arange(4096, dtype=torch.float32) * 2 + 1
        return {"values_ok": bool(torch.equal(host_out, expect)), "query_before_wait": was_done_before_wait,
                "waited_ms": round(waited_ms, 3), "gpu_ms_from_other_thread": round(start.elapsed_time(end), 3),
                "has_cuda_sleep": hasattr(torch.cuda, "_sleep"), "ok": bool(torch.equal(host_out, expect))}

    def spinner_count_during(block: Callable[[], None]) -> dict[str, Any]:
        stop = threading.Event()
        counter = [0]

        def spin() -> None:
            while not stop.is_set():
                counter[0] += 1

        th = threading.Thread(target=spin)
        th.start()
        time.sleep(0.01)
        c0 = counter[0]
        t0 = time.perf_counter()
        block()
        dt = time.perf_counter() - t0
        c1 = counter[0]
        stop.set()
        th.join()
        # a free-running spinner, for comparison (same duration)
        counter[0] = 0
        stop.clear()
        th = threading.Thread(target=spin)
        th.start()
        time.sleep(dt)
        stop.set()
        th.join()
        return {"blocked_ms": round(dt * 1000, 3), "spins_while_blocked": c1 - c0, "spins_free": counter[0],
                "share_of_free_pct": round(100 * (c1 - c0) / max(counter[0], 1), 1)}

    @check("event_sync_releases_gil")
    def _() -> dict[str, Any]:
        if not hasattr(torch.cuda, "_sleep"):
            return {"ok": False, "error": "torch.cuda._sleep missing"}
        torch.cuda.synchronize()
        ev = torch.cuda.Event()

        def block() -> None:
            torch.cuda._sleep(100_000_000)  # ~50 ms
            ev.record()
            ev.synchronize()

        res = spinner_count_during(block)
        res["ok"] = res["share_of_free_pct"] > 30
        return res

    @check("replay_releases_gil")
    def _() -> dict[str, Any]:
        if not hasattr(torch.cuda, "_sleep"):
            return {"ok": False, "error": "torch.cuda._sleep missing"}
        s = torch.cuda.Stream()
        g = torch.cuda.CUDAGraph()
        x = torch.zeros(1, device=dev)
        with torch.cuda.stream(s):
            x.add_(1)
            s.synchronize()
            with torch.cuda.graph(g, stream=s):
                torch.cuda._sleep(100_000_000)
                x.add_(1)
        torch.cuda.synchronize()
        launch_us = []

        def block() -> None:
            for _ in range(3):
                t0 = time.perf_counter()
                g.replay()
                launch_us.append(round((time.perf_counter() - t0) * 1e6, 1))
            torch.cuda.synchronize()

        res = spinner_count_during(block)
        res["replay_call_us"] = launch_us
        res["ok"] = res["share_of_free_pct"] > 30
        return res

    @check("pinned_alloc_cost_us")
    def _() -> dict[str, Any]:
        res: dict[str, Any] = {}
        for label, shape, dtype in (("gpt_b32_ids_16KiB", (32, 64), torch.int64),
                                    ("img_b32_uint8_4.6MiB", (32, 3, 224, 224), torch.uint8)):
            parts = [torch.randint(0, 100, (1, *shape[1:]), dtype=dtype) for _ in range(shape[0])]
            for _ in range(3):
                torch.empty(shape, dtype=dtype, pin_memory=True)
            n = 50
            t0 = time.perf_counter()
            for _ in range(n):
                buf = torch.empty(shape, dtype=dtype, pin_memory=True)
            alloc = (time.perf_counter() - t0) / n * 1e6
            t0 = time.perf_counter()
            for _ in range(n):
                torch.cat(parts, out=buf)
            cat = (time.perf_counter() - t0) / n * 1e6
            t0 = time.perf_counter()
            for _ in range(n):
                torch.cat(parts).pin_memory()
            cat_pin = (time.perf_counter() - t0) / n * 1e6
            res[label] = {"empty_pinned_us": round(alloc, 1), "cat_out_pinned_us": round(cat, 1),
                          "cat_then_pin_memory_us": round(cat_pin, 1)}
        return res

    @check("concurrent_capture")
    def _() -> dict[str, Any]:
        res: dict[str, Any] = {}
        for mode in ("global", "thread_local"):
            proc = subprocess.run([sys.executable, __file__, "--out", str(out), "--child", mode],
                                  capture_output=True, text=True, timeout=60)
            line = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
            res[mode] = json.loads(line[-1]) if line else {"returncode": proc.returncode,
                                                            "stderr_tail": proc.stderr[-600:]}
        return res

    @check("gpt_latency_us")
    def _() -> dict[str, Any]:
        from graphlab.zoo import get_model

        zm = get_model("gpt")
        gpt = zm.build(device="cuda")

        class NextToken(torch.nn.Module):
            def __init__(self, inner: Any) -> None:
                super().__init__()
                self.inner = inner

            def forward(self, ids: Any, last: Any) -> Any:
                logits = self.inner(ids)
                index = last.view(-1, 1, 1).expand(-1, 1, logits.shape[-1])
                return logits.gather(1, index).squeeze(1)

        fn = NextToken(gpt).eval()

        def work() -> dict[str, Any]:
            s = torch.cuda.Stream()
            out: dict[str, Any] = {}
            with torch.cuda.stream(s), torch.no_grad():
                for b in (1, 8, 32):
                    (ids,) = zm.make_inputs(b, device="cuda")
                    last = torch.full((b,), ids.shape[1] - 1, device=dev, dtype=torch.int64)
                    for _ in range(5):
                        fn(ids, last)
                    s.synchronize()
                    n = 50
                    t0 = time.perf_counter()
                    for _ in range(n):
                        fn(ids, last)
                    s.synchronize()
                    eager = (time.perf_counter() - t0) / n * 1e6
                    g = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(g, stream=s):
                        y = fn(ids, last)
                    g.replay()
                    s.synchronize()
                    t0 = time.perf_counter()
                    for _ in range(n):
                        g.replay()
                    s.synchronize()
                    replay = (time.perf_counter() - t0) / n * 1e6
                    ref = fn(ids, last)
                    out[f"b{b}"] = {"eager_back_to_back_us": round(eager, 1),
                                    "replay_back_to_back_us": round(replay, 1),
                                    "max_abs_err": float((y - ref).abs().max())}
            return out

        return in_thread(work)

    @check("cpu_preprocess_us")
    def _() -> dict[str, Any]:
        import torch.nn.functional as F

        img = torch.randint(0, 256, (1, 3, 96, 128), dtype=torch.uint8)
        res: dict[str, Any] = {"torch_threads": torch.get_num_threads()}
        for label, x in (("uint8", img), ("float32", img.float())):
            try:
                F.interpolate(x, size=(224, 224), mode="bilinear", antialias=True, align_corners=False)
                n = 50
                t0 = time.perf_counter()
                for _ in range(n):
                    F.interpolate(x, size=(224, 224), mode="bilinear", antialias=True, align_corners=False)
                res[f"resize_{label}_us"] = round((time.perf_counter() - t0) / n * 1e6, 1)
            except Exception as exc:  # noqa: BLE001
                res[f"resize_{label}_error"] = f"{type(exc).__name__}: {exc}"
        return res

    @check("packages")
    def _() -> dict[str, Any]:
        import importlib.metadata as md

        found = {}
        for name in ("starlette", "uvicorn", "click", "fastapi", "pydantic", "httpx", "httpcore", "h11", "anyio",
                     "sniffio", "idna", "certifi", "typing_extensions", "uvloop", "httptools", "websockets",
                     "numpy", "pandas", "tqdm", "psutil"):
            try:
                found[name] = md.version(name.replace("_", "-"))
            except md.PackageNotFoundError:
                found[name] = None
        return found

    (out / "serve_probe.json").write_text(json.dumps(RESULTS, indent=1, default=str))
    failed = [k for k, v in RESULTS.items() if isinstance(v, dict) and v.get("ok") is False]
    print(f"[serve_probe] wrote {out / 'serve_probe.json'}; failed: {', '.join(failed) or 'none'}", flush=True)
    return 0


def concurrent_capture_child(mode: str) -> int:
    """Capture in a worker thread while this (main) thread keeps launching work on its own stream."""
    import torch

    dev = torch.device("cuda")
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 64)).to(dev).eval()
    x = torch.randn(8, 64, device=dev)
    stop = threading.Event()
    noise_calls = [0]
    noise_error: list[str] = []

    def noise() -> None:
        a = torch.randn(256, 256, device=dev)
        host = torch.randn(256, 256)
        while not stop.is_set():
            try:
                (a @ a).sum()
                a.copy_(host)
                noise_calls[0] += 1
            except Exception as exc:  # noqa: BLE001
                noise_error.append(f"{type(exc).__name__}: {exc}")
                return

    res: dict[str, Any] = {"mode": mode}
    with torch.no_grad():
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            for _ in range(3):
                model(x)
        s.synchronize()
        th = threading.Thread(target=noise)
        th.start()
        time.sleep(0.05)
        try:
            captured_ok = []
            for _ in range(20):
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g, stream=s, capture_error_mode=mode):
                    y = model(x)
                g.replay()
                captured_ok.append(True)
            s.synchronize()
            res["captures_ok"] = len(captured_ok)
            res["max_abs_err"] = float((y - model(x)).abs().max())
        except Exception as exc:  # noqa: BLE001
            res["capture_error"] = f"{type(exc).__name__}: {exc}"[:600]
        stop.set()
        th.join(10)
    res["noise_calls"] = noise_calls[0]
    res["noise_error"] = noise_error[0][:600] if noise_error else None
    try:
        torch.cuda.synchronize()
        res["process_usable_after"] = bool(float(model(x).sum()) == float(model(x).sum()))
    except Exception as exc:  # noqa: BLE001
        res["process_usable_after"] = f"{type(exc).__name__}: {exc}"[:300]
    print(json.dumps(res), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
