"""Probe (issue 25): what would cut `graphs` at 50 req/s, where an idle host makes every step slow.

Not a recording; its runs and what they showed are in docs/serving.md ("What moved the 50 req/s figure") and
docs/gpu-validation.md (2026-12-03 18:33, 18:47, 18:56 at 44cd6ab with a `queued` variant for launch_inline, since
reverted, and 19:04). Two parts, each alternating its variants in rounds inside one run so that they see the same host:

  inproc OUT_JSON [rounds]   the zoo GPT in process (`graphs`), 100 requests at 50 req/s and 100 back to back per
                             variant and round; per-stage p50 from the service's own timestamps (as
                             worker_stages_probe.py), and for "steps" the host time of each call inside the launch
  http OUT_JSON HEY [rounds] servers of their own (the bare Starlette app and `python -m graphlab.serve --setting
                             graphs` with variants, started through `server`), hey at 50 req/s (1 client) and back to
                             back; p50 and a trimmed mean from hey's CSV (it prints 0.1 ms steps)
  server VARIANTS -- ARGS    run `python -m graphlab.serve ARGS` (or the bare app: VARIANTS "bare...") with
                             VARIANTS applied (joined by "+")

Variants: torch_pre (text pre-processing as at b243163: torch ops and indexing), numpy_post (softmax and top-k in
NumPy), moved (the worker's launch before GraphCache.from_host: the pinned rows moved to the device, then copied
into the graph's static inputs), pin1 / pin2 (every thread of the process on one core / on two, SMT siblings where
the machine has them), steps (the launch timed call by call; in process only). PROBE_INPROC and PROBE_HTTP
(comma-separated) pick what runs; a server's name is "bare" or "graphs", then its variants.
"""
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

BODY = {"texts": ["CUDA graphs replay kernels"], "top_k": 5}
STEP_LOG = {}


# -- variants ---------------------------------------------------------------------------------------------------
def _tokenize_torch(texts, spec):
    import torch
    from graphlab.serve.preprocess import ByteTokenizer
    tokenizer = ByteTokenizer(spec.classes)
    ids = torch.zeros((len(texts), spec.seq_len), dtype=torch.int64)
    last = torch.empty(len(texts), dtype=torch.int64)
    for row, text in enumerate(texts):
        tokens = tokenizer.encode(text)[: spec.seq_len]
        ids[row, : len(tokens)] = torch.tensor(tokens, dtype=torch.int64)
        last[row] = len(tokens) - 1
    return ids, last


def _top_k_numpy(scores, k, kind, vocab=512):
    import numpy as np
    from graphlab.serve.preprocess import ByteTokenizer
    s = scores.float().numpy()
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    k = min(k, p.shape[-1])
    part = np.argpartition(-p, k - 1, axis=-1)[:, :k]
    vals = np.take_along_axis(p, part, axis=-1)
    order = np.argsort(-vals, axis=-1, kind="stable")
    ids, vals = np.take_along_axis(part, order, axis=-1), np.take_along_axis(vals, order, axis=-1)
    tokenizer = ByteTokenizer(vocab) if kind == "text" else None
    return [[{"id": i, "label": tokenizer.decode_token(i) if tokenizer else f"class {i}", "prob": round(v, 6)}
             for i, v in zip(ri, rv)] for ri, rv in zip(ids.tolist(), vals.tolist())]


def _launch_moved(self, device, stream, batch, record, slot):
    """The worker's launch before GraphCache.from_host (b243163): the pinned rows moved to the device first
    (a device staging tensor), then the cache copied them into the graph's static inputs (a device-to-device copy).
    Run 1 (18:33) measured the other way round: a prototype of from_host on the cache's internals ("direct")."""
    import torch
    if stream is None:
        return ORIGINAL["launch"](self, device, stream, batch, record, slot)
    record.launch_start_ns = time.monotonic_ns()
    per_request = [p.item.inputs for p in batch.items]
    events = slot.timing_events()
    events[0].record(stream)
    device_inputs = []
    for position in range(len(per_request[0])):
        parts = [own[position] for own in per_request]
        staged = slot.pinned(("in", position), batch.rows, parts[0])
        staged.copy_(parts[0]) if len(parts) == 1 else torch.cat(parts, out=staged)
        device_inputs.append(staged.to(device, non_blocking=True))
    record.bucket = int(self.runner.bucket_for(batch.rows))
    events[1].record(stream)
    scores = self.runner(*device_inputs)
    events[2].record(stream)
    host = slot.pinned("out", scores.shape[0], scores)
    host.copy_(scores, non_blocking=True)
    events[3].record(stream)
    record.launch_end_ns = time.monotonic_ns()
    return host, events


def _launch_steps(self, device, stream, batch, record, slot):
    """The worker's launch as it is (from_host), with a timestamp after each call (us between them)."""
    import torch
    if stream is None:
        return ORIGINAL["launch"](self, device, stream, batch, record, slot)
    t = [time.monotonic_ns()]
    record.launch_start_ns = t[0]
    per_request = [p.item.inputs for p in batch.items]
    events = slot.timing_events()
    events[0].record(stream)
    t.append(time.monotonic_ns())
    staged_inputs = []
    for position in range(len(per_request[0])):
        parts = [own[position] for own in per_request]
        staged = slot.pinned(("in", position), batch.rows, parts[0])
        t.append(time.monotonic_ns())
        staged.copy_(parts[0]) if len(parts) == 1 else torch.cat(parts, out=staged)
        t.append(time.monotonic_ns())
        staged_inputs.append(staged)
    record.bucket = int(self.runner.bucket_for(batch.rows))
    t.append(time.monotonic_ns())
    events[1].record(stream)
    t.append(time.monotonic_ns())
    scores = self.runner.from_host(*staged_inputs)
    t.append(time.monotonic_ns())
    events[2].record(stream)
    t.append(time.monotonic_ns())
    host = slot.pinned("out", scores.shape[0], scores)
    host.copy_(scores, non_blocking=True)
    t.append(time.monotonic_ns())
    events[3].record(stream)
    t.append(time.monotonic_ns())
    record.launch_end_ns = t[-1]
    STEP_LOG[record.batch_id] = [(b - a) / 1e3 for a, b in zip(t, t[1:])]
    return host, events


STEP_NAMES = ["event0", "pinned(in0)", "copy_ in0", "pinned(in1)", "copy_ in1", "bucket_for", "event1",
              "from_host: copy in + replay", "event2", "pinned(out)+copy_ out", "event3"]
ORIGINAL = {}


ALLOWED = sorted(os.sched_getaffinity(0))  # at start, before any variant pins a thread


def cpu_sets():
    """(one core, two cores): the last allowed CPU, and it with its SMT sibling (else its neighbour)."""
    allowed = ALLOWED
    last = allowed[-1]
    try:
        siblings = Path(f"/sys/devices/system/cpu/cpu{last}/topology/thread_siblings_list").read_text().strip()
        sib = _cpu_list(siblings)
    except OSError:
        sib = []
    two = sorted(set(sib) & set(allowed)) if len(set(sib) & set(allowed)) >= 2 else allowed[-2:]
    return {last}, set(two[:2])


def _cpu_list(text):
    out = []
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-")
            out += list(range(int(a), int(b) + 1))
        elif part:
            out.append(int(part))
    return out


def pin_all_threads(cpus):
    """Every thread of this process (and those it starts later) on `cpus`."""
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except OSError:
            pass


def apply(variants):
    from graphlab.serve import models, preprocess
    from graphlab.serve.worker import GPUWorker
    ORIGINAL.setdefault("tokenize", preprocess._tokenize)
    ORIGINAL.setdefault("top_k", models.top_k_rows)
    ORIGINAL.setdefault("launch", GPUWorker._launch)
    ORIGINAL.setdefault("cpus", set(ALLOWED))
    preprocess._tokenize = _tokenize_torch if "torch_pre" in variants else ORIGINAL["tokenize"]
    models.top_k_rows = _top_k_numpy if "numpy_post" in variants else ORIGINAL["top_k"]
    GPUWorker._launch = (_launch_moved if "moved" in variants else _launch_steps if "steps" in variants
                         else ORIGINAL["launch"])
    one, two = cpu_sets()
    pin_all_threads(one if "pin1" in variants else two if "pin2" in variants else ORIGINAL["cpus"])


# -- in process ---------------------------------------------------------------------------------------------------
#: run 1 (18:33, a prototype "direct" in place of today's launch): now, torch_pre, numpy_post, direct,
#: direct+numpy_post, pin1, pin2, direct+numpy_post+pin1, steps
INPROC_VARIANTS = os.environ.get("PROBE_INPROC", "now,torch_pre,moved,torch_pre+moved,steps").split(",")
KEYS = ("pre_us", "to_batch_us", "host_launch_us", "launch_end_to_done_us", "post_us", "replay_us",
        "accepted_to_answered_us")


def inproc(path, rounds=3):
    from graphlab.serve.config import ServeConfig
    from graphlab.serve.service import InferenceService
    from graphlab.stats import percentile
    from worker_stages_probe import phases
    apply(set())
    runs, steps = {}, {}
    config = ServeConfig(model="gpt", setting="graphs", device=os.environ.get("PROBE_DEVICE", "cuda"))
    with InferenceService(config).start() as service:
        for _ in range(50):
            service.infer_sync(BODY)
        for r in range(int(rounds)):
            for variant in INPROC_VARIANTS:
                apply(set(variant.split("+")))
                for name, gap_s in (("50 req/s", 0.02), ("back to back", 0.0)):
                    for _ in range(3):
                        service.infer_sync(BODY)
                    since = time.monotonic_ns()
                    STEP_LOG.clear()
                    for _ in range(100):
                        service.infer_sync(BODY)
                        if gap_s:
                            time.sleep(gap_s)
                    got = phases(service, since)["phases"]
                    runs.setdefault(f"{variant} | {name}", []).append({k: got[k]["p50"] for k in KEYS if k in got})
                    if variant == "steps" and STEP_LOG:
                        cols = list(zip(*STEP_LOG.values()))
                        steps.setdefault(name, []).append(
                            {n: round(percentile(sorted(c), 50), 1) for n, c in zip(STEP_NAMES, cols)})
            print(f"round {r} done", flush=True)
        apply(set())
    for key, values in runs.items():
        print(f"{key:40s}", " ".join(f"{v['accepted_to_answered_us']:7.0f}" for v in values),
              "| pre", " ".join(f"{v['pre_us']:5.0f}" for v in values),
              "| launch", " ".join(f"{v['host_launch_us']:5.0f}" for v in values),
              "| post", " ".join(f"{v['post_us']:5.0f}" for v in values), flush=True)
    for name, values in steps.items():
        print("steps", name, json.dumps(values), flush=True)
    Path(path).write_text(json.dumps({"runs": runs, "steps": steps, "cpus": [sorted(s) for s in cpu_sets()]},
                                     indent=1))


# -- over HTTP ------------------------------------------------------------------------------------------------
#: run 1 (18:33): bare, bare pin1, graphs, graphs torch_pre, graphs direct+numpy_post, graphs pin1, graphs pin2,
#: graphs direct+numpy_post+pin1
HTTP_SERVERS = {name: "+".join(filter(None, ("bare" if name.startswith("bare") else "now", name.partition(" ")[2])))
                for name in os.environ.get("PROBE_HTTP", "bare,graphs,graphs torch_pre+moved").split(",")}


def _hey_csv(hey, url, body, qps, seconds):
    cmd = [hey, "-z", f"{seconds}s", "-c", "1", "-m", "POST", "-T", "application/json", "-D", str(body), "-o", "csv"]
    if qps:
        cmd += ["-q", str(qps)]
    text = subprocess.run(cmd + [url], capture_output=True, text=True, timeout=seconds + 60).stdout
    ms = sorted(float(line.split(",")[0]) * 1000.0 for line in text.splitlines()[1:]
                if line.count(",") >= 7 and line.split(",")[6].strip() == "200")
    if not ms:
        return {"n": 0}
    n = len(ms)
    mid = ms[n // 10: n - n // 10] or ms
    return {"n": n, "p50_ms": ms[n // 2], "p90_ms": ms[min(n - 1, int(n * 0.9))],
            "trimmed_mean_ms": round(sum(mid) / len(mid), 4)}


def http(path, hey, rounds=3):
    from graphlab.serve.external import ServerProcess, bare_app_command
    from graphlab.serve.http import describe_stack
    folder = Path(path).parent / "http_probe"
    folder.mkdir(parents=True, exist_ok=True)
    body = folder / "body.json"
    body.write_text(json.dumps(BODY))
    bare_app_command(folder, describe_stack(), sys.executable)  # writes bare_app.py
    me = str(Path(__file__).resolve())
    servers = {}

    def start(name):
        variants = HTTP_SERVERS[name]
        args = (["--app-dir", str(folder)] if variants.startswith("bare") else
                ["--model", "gpt", "--setting", "graphs", "--device", os.environ.get("PROBE_DEVICE", "cuda")])
        proc = ServerProcess([sys.executable, me, "server", variants, "--", *args],
                             folder / f"{name.replace(' ', '_').replace('+', '_')}.log", ready_timeout_s=300)
        return name, proc.__enter__()

    with ThreadPoolExecutor(len(HTTP_SERVERS)) as pool:
        for name, proc in pool.map(start, HTTP_SERVERS):
            servers[name] = proc
    results = {}
    try:
        for name, proc in servers.items():  # warm each connection path once
            _hey_csv(hey, proc.url, body, None, 1)
        for r in range(int(rounds)):
            order = list(servers)
            order = order[r % len(order):] + order[: r % len(order)]
            for name in order:
                for run, qps, seconds in (("rate50", 50, 2), ("single", None, 1)):
                    results.setdefault(f"{name} | {run}", []).append(_hey_csv(hey, servers[name].url, body, qps, seconds))
            print(f"round {r} done", flush=True)
        try:  # a diagnostic (PROBE_DMA=1): the kernel's PM QoS request keeps every CPU out of deep idle states
            if os.environ.get("PROBE_DMA") != "1":
                raise OSError("PROBE_DMA is not 1")
            qos = open("/dev/cpu_dma_latency", "wb", buffering=0)
            qos.write((0).to_bytes(4, "little"))
        except OSError as exc:
            results["cpu_dma_latency"] = f"not held: {exc}"
        else:
            for r in range(int(rounds)):
                for name in ("bare", "graphs"):
                    results.setdefault(f"{name} | rate50 dma0", []).append(
                        _hey_csv(hey, servers[name].url, body, 50, 2))
            qos.close()
            results["cpu_dma_latency"] = "held at 0 for the dma0 runs"
    finally:
        for proc in servers.values():
            proc.stop()
    for key, values in results.items():
        if isinstance(values, str):
            print(key, values)
            continue
        print(f"{key:45s}", " ".join(f"p50 {v.get('p50_ms', 0):.1f} tm {v.get('trimmed_mean_ms', 0):.3f}"
                                      for v in values), flush=True)
    Path(path).write_text(json.dumps({"results": results, "cpus": [sorted(s) for s in cpu_sets()],
                                      "servers": HTTP_SERVERS}, indent=1))


def server(variants, args):
    variants = set(variants.split("+"))
    one, two = cpu_sets()
    if "pin1" in variants or "pin2" in variants:
        os.sched_setaffinity(0, one if "pin1" in variants else two)  # before any thread: all inherit it
    if "bare" in variants:
        import uvicorn
        from graphlab.serve.http import describe_stack
        stack = describe_stack()
        folder = args[args.index("--app-dir") + 1]
        port = int(args[args.index("--port") + 1])
        sys.path.insert(0, folder)
        uvicorn.run("bare_app:app", host="127.0.0.1", port=port, loop=stack["loop"], http=stack["http"],
                    log_level="warning", access_log=False)
        return 0
    apply(variants)
    from graphlab.serve.__main__ import main
    return main(args)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "inproc":
        inproc(*sys.argv[2:4])
    elif mode == "http":
        http(*sys.argv[2:5])
    elif mode == "server":
        sep = sys.argv.index("--")
        raise SystemExit(server(sys.argv[2], sys.argv[sep + 1:]))
