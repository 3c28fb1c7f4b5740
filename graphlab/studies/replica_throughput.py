"""How much serving throughput replicas add: requests per second on one GPU vs all of them, by batch size.

A closed loop keeps `window` requests in flight (two per replica) for `duration_s`, with inputs in
pinned CPU memory and results copied back to the CPU (what a server sees). Three ways are measured
at each batch size, all over the same graph caches:
- `one_gpu`: `Replicas` on GPU 0 only (the baseline);
- `replicas`: `Replicas` over every device given (one worker thread and stream per GPU);
- `inline`: no threads: the caller issues each request on the next GPU's stream and waits only
  when the window is full (the alternative dispatch, to see which measures better);
with one GPU, `replicas` is two replicas on GPU 0 (does a second stream and thread help on one GPU?).
`launch_us` is the host time of one `replay()` on each device.

    >>> rows = measure_replica_throughput("gpt", batch_sizes=[1, 8, 32])     # doctest: +SKIP
    >>> replica_throughput()            # the same as a `ReplicaThroughput`; the recording in recorded mode

About 1.5 s per batch size and way (duration_s=1).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import torch

from graphlab.capture.tensors import map_tensors
from graphlab.distributed.replicas import Replicas, normalize_devices
from graphlab.distributed.results import ReplicaThroughput, multigpu_recordings
from graphlab.env import require_cuda
from graphlab.mode import stand_in
from graphlab.present import listing
from graphlab.progress import progress_bar
from graphlab.stats import median
from graphlab.clock import submit_us
from graphlab.timing.schedulers import throughput_window
from graphlab.timing.sync import cuda_sync
from graphlab.zoo import get_model

DEFAULT_MODEL = "gpt"
DEFAULT_REPLICA_BATCH_SIZES = (1, 8, 32)
INPUT_SETS = 4


def _inline(caches: list[Any], devices: list[Any]) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    """Single-thread dispatch: request k goes to device k mod n, on that device's stream, without waiting."""
    streams = [torch.cuda.Stream(device=d) for d in devices]
    counter = [0]

    def submit(inputs: tuple[Any, ...]) -> Any:
        k = counter[0] % len(devices)
        counter[0] += 1
        with torch.cuda.device(devices[k]), torch.cuda.stream(streams[k]):
            local = map_tensors(lambda t: t.to(devices[k], non_blocking=True), inputs)
            out = caches[k](*local)
            back = map_tensors(lambda t: t.to("cpu", non_blocking=True), out)
            done = torch.cuda.Event()
            done.record(streams[k])
        return done, back

    def wait(item: Any) -> Any:
        item[0].synchronize()
        return item[1]

    return submit, wait


def _launch_us(cache: Any, batch_size: int, device: Any, repetitions: int = 200) -> float | None:
    graph = cache.graph_for(batch_size) if hasattr(cache, "graph_for") else None
    replay = getattr(graph, "replay", None)
    if replay is None:
        return None
    with torch.cuda.device(device):
        samples = submit_us(replay, repetitions, cuda_sync(device))
    return round(median(samples), 2)


def measure_replica_throughput(model: str = DEFAULT_MODEL, batch_sizes: Sequence[int] = DEFAULT_REPLICA_BATCH_SIZES,
                               devices: Any = None, *, duration_s: float = 1.0, progress: bool = True) -> dict[str, Any]:
    """Requests/s for one GPU, replicas over `devices` (default: all) and inline dispatch, by batch size.

    Returns a JSON-ready dict: {"model", "devices", "device_names", "duration_s", "points": [...]} with one
    point per batch size: `one_gpu`, `replicas`, `inline` ({requests, seconds, requests_per_s}),
    `speedup` (replicas vs one GPU), `inline_speedup`, `launch_us` per device, and `max_abs_err`.
    """
    require_cuda("measure_replica_throughput")
    zoo_model = get_model(model)
    devices = normalize_devices(devices)
    base = zoo_model.build(device="cuda:0" if devices[0].type == "cuda" else "cpu")
    spread = devices if len(devices) > 1 else [devices[0], devices[0]]
    buckets = sorted(set(batch_sizes))
    points = []
    bar = progress_bar(len(batch_sizes) * 3, f"replica throughput ({model})", show=progress)
    with torch.no_grad():
        one = Replicas(base, [devices[0]], buckets=buckets)
        many = Replicas(base, spread, buckets=buckets)
        try:
            for batch_size in batch_sizes:
                requests = [tuple(t.pin_memory() for t in zoo_model.make_inputs(batch_size, device="cpu", seed=s))
                            for s in range(INPUT_SETS)]
                one.warm_up(*requests[0], sizes=[batch_size], progress=False)
                many.warm_up(*requests[0], sizes=[batch_size], progress=False)
                want = base(*(t.to(devices[0]) for t in requests[0])).cpu()
                err = max(float((one(*requests[0]) - want).abs().max()), float((many(*requests[0]) - want).abs().max()))
                point: dict[str, Any] = {"batch_size": batch_size, "max_abs_err": err}
                for key, reps in (("one_gpu", one), ("replicas", many)):
                    window = 2 * len(reps)
                    point[key] = throughput_window(lambda r, reps=reps: reps.submit(*r), lambda f: f.result(), requests,
                                              duration_s, window)
                    if bar is not None:
                        bar.update(1)
                submit, wait = _inline(many.caches, spread)
                point["inline"] = throughput_window(submit, wait, requests, duration_s, 2 * len(spread))
                if bar is not None:
                    bar.update(1)
                base_rate = point["one_gpu"]["requests_per_s"]
                point["speedup"] = round(point["replicas"]["requests_per_s"] / base_rate, 3) if base_rate else None
                point["inline_speedup"] = round(point["inline"]["requests_per_s"] / base_rate, 3) if base_rate else None
                point["launch_us"] = {str(d): _launch_us(c, batch_size, d)
                                      for d, c in zip(devices, many.caches[:len(devices)])}
                points.append(point)
        finally:
            one.close()
            many.close()
            if bar is not None:
                bar.close()
    return {"model": model, "description": zoo_model.description, "devices": [str(d) for d in devices],
            "replica_devices": [str(d) for d in spread],
            "device_names": [torch.cuda.get_device_name(d) for d in devices if d.type == "cuda"],
            "duration_s": duration_s, "input": "pinned CPU tensors in, CPU tensors out", "points": points}


def _recorded_throughput(model: str = DEFAULT_MODEL, batch_sizes: Sequence[int] = DEFAULT_REPLICA_BATCH_SIZES,
                         devices: Any = None, *, duration_s: float = 1.0) -> ReplicaThroughput:
    """The replica throughput of the recording with the most GPUs (`multigpu_recordings().largest()`). A recording
    holds the one measurement it made: asked for another model, other batch sizes or devices, it says what was
    asked and what the recording has, and shows what it has."""
    rec = multigpu_recordings().largest()
    result = rec.replicas()
    return ReplicaThroughput(result, rec.where(), asked=asked_beyond_recording(result, model, batch_sizes, devices))


def asked_beyond_recording(result: dict[str, Any], model: str, batch_sizes: Sequence[int], devices: Any) -> str:
    """"asked for ..., the recording has ..." for every argument the recorded measurement does not match; ""
    when it matches (pure)."""
    said = []
    if model != result.get("model"):
        said.append(f"asked for model {model}, the recording has {result.get('model')}")
    recorded_sizes = [int(p["batch_size"]) for p in result.get("points", [])]
    if sorted(set(int(b) for b in batch_sizes)) != sorted(recorded_sizes):
        said.append(f"asked for batch sizes {listing(sorted(set(int(b) for b in batch_sizes)))}, the recording "
                    f"has {listing(recorded_sizes)}")
    if devices is not None:
        asked = [str(d) if not isinstance(d, int) else f"cuda:{d}" for d in
                 (devices if isinstance(devices, (list, tuple)) else [devices])]
        if asked != list(result.get("devices", [])):
            said.append(f"asked for devices {listing(asked)}, the recording has "
                        f"{listing(result.get('devices', []))}")
    return ("; ".join(said) + ": shown is what the recording has") if said else ""


@stand_in(_recorded_throughput)
def replica_throughput(model: str = DEFAULT_MODEL, batch_sizes: Sequence[int] = DEFAULT_REPLICA_BATCH_SIZES,
                       devices: Any = None, *, duration_s: float = 1.0) -> ReplicaThroughput:
    """Replica throughput as a `ReplicaThroughput`: measured here (live), or the recorded one (recorded mode).

    In recorded mode the recording with the most GPUs answers (`multigpu_recordings().largest()`); asked for something it does
    not hold, it says so ("asked for batch sizes 1 and 2, the recording has 1, 8 and 32") and shows what it has.
    """
    result = measure_replica_throughput(model, batch_sizes, devices, duration_s=duration_s)
    return ReplicaThroughput(result, f"measured now on {listing(sorted(set(result['device_names'])))}")


__all__ = ["DEFAULT_MODEL", "DEFAULT_REPLICA_BATCH_SIZES", "asked_beyond_recording", "measure_replica_throughput",
           "replica_throughput"]
