"""Where a batch's time goes inside the GPU worker, at 50 req/s and back to back (issue 25's probe).

    python3 scripts/probes/worker_stages_probe.py OUT.json [cuda|cpu]

Serves the zoo GPT in process (`graphs`, one request per batch) and sends 200 requests one at a time, first
spaced 20 ms apart (50 req/s: the host idles between them), then back to back. From the service's own
timestamps (`BatchRecord`, `RequestRecord`), per request: pre-processing, batch cut -> launch start, the
worker's host launch (stack into pinned memory, copy in, runner, copy out, events), launch end -> scores on the
host, post-processing; and from CUDA events the GPU span (copy in .. copy out) and the runner's replay alone.
Medians and p90 per phase, written as JSON; nothing here is a recording. Run now, it alternates the worker as it
is (pinned buffers and events per in-flight slot, made once) with the launch as it was (made per batch), in
rounds in one process, and prints the host launch and accepted -> answered p50 of each.
"""
import json
import sys
import time

import torch

from graphlab.serve.config import ServeConfig
from graphlab.serve.worker import GPUWorker
from graphlab.serve.service import InferenceService
from graphlab.stats import percentile

BODY = {"texts": ["CUDA graphs replay kernels"], "top_k": 5}


def phases(service, since_ns):
    batches = {b["batch_id"]: b for b in service.traces.batches(since_ns)}
    rows = []
    for r in service.traces.requests(since_ns):
        b = batches.get(r["batch_id"])
        if b is None or not b["launch_start_ns"]:
            continue
        rows.append({"pre_us": (r["pre_end_ns"] - r["pre_start_ns"]) / 1e3,
                     "to_batch_us": (b["formed_ns"] - r["pre_end_ns"]) / 1e3,
                     "cut_to_launch_us": (b["launch_start_ns"] - b["formed_ns"]) / 1e3,
                     "host_launch_us": (b["launch_end_ns"] - b["launch_start_ns"]) / 1e3,
                     "launch_end_to_done_us": (b["done_ns"] - b["launch_end_ns"]) / 1e3,
                     "post_us": (b["post_end_ns"] - b["done_ns"]) / 1e3,
                     "gpu_span_us": b["gpu_us"], "replay_us": b["compute_us"],
                     "accepted_to_answered_us": (r["post_end_ns"] - r["accepted_ns"]) / 1e3})
    out = {}
    for key in rows[0] if rows else ():
        values = sorted(row[key] for row in rows)
        out[key] = {"p50": round(percentile(values, 50), 1), "p90": round(percentile(values, 90), 1)}
    return {"requests": len(rows), "phases": out}


def _launch_allocating(self, device, stream, batch, record, slot):
    """The worker's launch as it was before slots (2026-12-03 07:52): new pinned buffers and events per batch."""
    record.launch_start_ns = time.monotonic_ns()
    per_request = [p.item.inputs for p in batch.items]
    events = tuple(torch.cuda.Event(enable_timing=True) for _ in range(4))
    events[0].record(stream)
    device_inputs, keep = [], []
    for position in range(len(per_request[0])):
        parts = [inputs[position] for inputs in per_request]
        staged = torch.empty((batch.rows, *parts[0].shape[1:]), dtype=parts[0].dtype, pin_memory=True)
        torch.cat(parts, out=staged)
        keep.append(staged)
        device_inputs.append(staged.to(device, non_blocking=True))
    record.bucket = int(getattr(self.runner, "bucket_for", lambda n: n)(batch.rows))
    events[1].record(stream)
    scores = self.runner(*device_inputs)
    events[2].record(stream)
    host = torch.empty(scores.shape, dtype=scores.dtype, pin_memory=True)
    host.copy_(scores, non_blocking=True)
    events[3].record(stream)
    record.launch_end_ns = time.monotonic_ns()
    record.kept_staging = keep  # alive until the batch's record goes, as the old launch kept them
    return host, events


def main(path, device="cuda", rounds=3):
    """Each round: the worker as it is ("slots"), then as it was ("allocating"), 100 requests each way."""
    config = ServeConfig(model="gpt", setting="graphs", device=device)
    reuse = GPUWorker._launch
    runs = {}
    with InferenceService(config).start() as service:
        for _ in range(50):
            service.infer_sync(BODY)
        for _ in range(int(rounds)):
            for variant, launch in (("slots", reuse), ("allocating", _launch_allocating)):
                GPUWorker._launch = launch
                for name, gap_s in (("50 req/s", 0.02), ("back to back", 0.0)):
                    service.infer_sync(BODY)
                    since = time.monotonic_ns()
                    for _ in range(100):
                        service.infer_sync(BODY)
                        if gap_s:
                            time.sleep(gap_s)
                    got = phases(service, since)["phases"]
                    runs.setdefault(f"{variant}, {name}", []).append(
                        {k: got[k]["p50"] for k in ("host_launch_us", "accepted_to_answered_us")})
        GPUWorker._launch = reuse
    for key, values in runs.items():
        print(key, json.dumps(values), flush=True)
    open(path, "w").write(json.dumps(runs, indent=1))


if __name__ == "__main__":
    main(*sys.argv[1:3])
