"""Data-parallel serving in one process: one model copy and one graph cache per GPU, calls spread over them.

    >>> reps = gl.replicate(model, devices=[0, 1], buckets=[1, 2, 4, 8, 16, 32])   # GraphCache kwargs
    >>> reps.warm_up(x)                     # capture every bucket on every GPU, one GPU at a time
    >>> y = reps(x)                         # served by the least busy GPU; y is on x's device
    >>> futures = [reps.submit(b) for b in batches]     # many requests in flight at once
    >>> print(reps.stats())                 # requests, rows and busy time per GPU

How it works: each replica owns a model copy on its GPU, a `gl.GraphCache`, one CUDA stream and one
worker thread (a graph replay releases the GIL, so the threads overlap their host work; the measured
comparison with single-thread dispatch is in `bench/bench_multigpu.py` and docs/multi-gpu.md). A call
goes to the replica with the fewest requests in flight; its worker waits for the caller's stream,
copies the inputs over, replays, copies the outputs back to the caller's device and only then
resolves the future, so a result is ready to use when you get it. Inputs must not change until
their future resolves, and the tensors of one call live on one device (the first one's is the caller's).

Devices may also be "cpu" (with `backend="eager"` or a stand-in cache): the same dispatch runs on a
machine without a GPU, which is how it is tested.
"""
from __future__ import annotations

import copy
import itertools
import queue
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import torch

from graphlab.clock import Stopwatch
from graphlab.cache.graph_cache import GraphCache
from graphlab.capture.tensors import flatten, is_tensor, leading_size, map_tensors
from graphlab.errors import DistributedError

CacheFactory = Callable[..., Any]  # (model_copy, *, device, **cache_kwargs) -> callable like the model; GraphCache is one


def normalize_devices(devices: Any) -> list[torch.device]:
    """`torch.device`s from None ("all GPUs"), "all", an int, "cuda:1", "cpu" or a list of them.

    Raises:
        DistributedError: no device, or a CUDA device this machine does not have.
    """
    if devices is None or devices == "all":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise DistributedError("no CUDA GPU here: pass devices=['cpu'] with backend='eager' to try the dispatch")
        devices = list(range(count))
    if isinstance(devices, (int, str)) or hasattr(devices, "type"):
        devices = [devices]
    found = [torch.device("cuda", d) if isinstance(d, int) else torch.device(d) for d in devices]
    if not found:
        raise DistributedError("replicate needs at least one device")
    for d in found:
        if d.type == "cuda":
            count = torch.cuda.device_count() if torch.cuda.is_available() else 0
            index = 0 if d.index is None else d.index
            if index >= count:
                raise DistributedError(f"device {d} does not exist: this machine shows {count} CUDA GPU(s)")
    return [torch.device("cuda", 0 if d.index is None else d.index) if d.type == "cuda" else d for d in found]


def result_device(inputs: tuple[Any, ...], default: torch.device) -> torch.device:
    """Where results go: the device of the first tensor input (the caller's), else `default`."""
    for _, leaf in flatten(inputs):
        if is_tensor(leaf):
            return leaf.device
    return default


@dataclass
class ReplicaCounts:
    """What one replica did: requests, rows (dim 0 of the first tensor input), busy seconds, errors."""

    device: str
    requests: int = 0
    rows: int = 0
    busy_s: float = 0.0
    errors: int = 0


@dataclass
class ReplicaStats:
    """Per-replica counters; `str()` is a table."""

    replicas: list[ReplicaCounts] = field(default_factory=list)

    @property
    def requests(self) -> int:
        return sum(r.requests for r in self.replicas)

    def to_dict(self) -> dict[str, Any]:
        return {"replicas": [vars(r) for r in self.replicas]}

    def __str__(self) -> str:
        lines = [f"{'replica':<8}{'device':<10}{'requests':>10}{'rows':>10}{'busy s':>10}{'errors':>8}"]
        for i, r in enumerate(self.replicas):
            lines.append(f"{i:<8}{r.device:<10}{r.requests:>10}{r.rows:>10}{r.busy_s:>10.3f}{r.errors:>8}")
        return "\n".join(lines)


class _Replica:
    """One device: model copy, cache, stream, worker thread and its queue."""

    def __init__(self, index: int, device: torch.device, cache: Any, max_pending: int, lock: Any):
        self.index, self.device, self.cache, self.lock = index, device, cache, lock
        self.is_cuda = device.type == "cuda"
        self.stream = torch.cuda.Stream(device=device) if self.is_cuda else None
        self.queue: queue.Queue[Any] = queue.Queue(maxsize=max_pending)
        self.in_flight = 0
        self.counts = ReplicaCounts(str(device))
        self.thread = threading.Thread(target=self._serve, name=f"graphlab-replica-{index}-{device}", daemon=True)

    def run(self, inputs: tuple[Any, ...], out_device: Any, ready: Any, grad: tuple[bool, bool]) -> Any:
        """Copy in, run the cache under the caller's grad mode, copy back; return once the result is complete."""
        grad_enabled, inference = grad  # autograd modes are thread-local: the worker takes the caller's
        with torch.inference_mode(inference), torch.set_grad_enabled(grad_enabled):
            return self._run(inputs, out_device, ready)

    def _run(self, inputs: tuple[Any, ...], out_device: Any, ready: Any) -> Any:
        if not self.is_cuda:
            local = map_tensors(lambda t: t.to(self.device), inputs)
            return map_tensors(lambda t: t.to(out_device), self.cache(*local))
        with torch.cuda.stream(self.stream):
            if ready is not None:  # the caller's work that produced the inputs (on out_device)
                self.stream.wait_event(ready)
                if out_device != self.device:  # torch runs a cross-device copy on the source device's stream
                    torch.cuda.current_stream(out_device).wait_event(ready)
            local = map_tensors(lambda t: t.to(self.device, non_blocking=True), inputs)
            out = self.cache(*local)
            back = map_tensors(lambda t: t.to(out_device, non_blocking=True), out)
            done = torch.cuda.Event()
            done.record(self.stream)
        done.synchronize()
        return back

    def _serve(self) -> None:
        if self.is_cuda:
            torch.cuda.set_device(self.device)  # a graph replays only while its device is current
        while True:
            task = self.queue.get()
            if task is None:
                return
            future, inputs, out_device, ready, rows, grad = task
            if not future.set_running_or_notify_cancel():
                self._done(0.0, rows, error=False, counted=False)
                continue
            busy = Stopwatch().start()
            try:
                result = self.run(inputs, out_device, ready, grad)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller through the future
                self._done(busy.stop(), rows, error=True)
                future.set_exception(exc)
            else:
                self._done(busy.stop(), rows, error=False)
                future.set_result(result)

    def _done(self, busy_s: float, rows: int, *, error: bool, counted: bool = True) -> None:
        with self.lock:
            self.in_flight -= 1
            if counted:
                self.counts.requests += 1
                self.counts.rows += rows
                self.counts.busy_s += busy_s
                self.counts.errors += int(error)


class Replicas:
    """One graph cache per device behind one callable; see the module docstring.

    Args:
        model: an nn.Module (deep-copied to each device; the original is left where it is) or a
            function (shared, not copied).
        devices: GPUs as ints / "cuda:N" / torch.device, "all" or None (every visible GPU), or "cpu".
        cache_factory: `(model_copy, *, device, **cache_kwargs) -> callable`; default `gl.GraphCache`.
        max_pending: requests queued per replica before `submit` blocks (bounded memory).
        **cache_kwargs: passed to each cache (buckets, max_size, dims, copy_outputs, backend, ...).
    """

    def __init__(self, model: Any, devices: Any = None, *, cache_factory: CacheFactory | None = None,
                 max_pending: int = 64, **cache_kwargs: Any):
        if max_pending < 1:
            raise DistributedError(f"max_pending must be at least 1, got {max_pending}")
        if cache_kwargs.get("copy_outputs") is False:
            raise DistributedError("replicas cannot use copy_outputs=False: a worker serves its next request while "
                                   "you read the last result, so it would overwrite the buffers you were given")
        self.devices = normalize_devices(devices)
        factory = cache_factory or GraphCache
        self._lock = threading.Lock()
        self._round_robin = itertools.count()
        self._closed = False
        self._replicas: list[_Replica] = []
        for index, device in enumerate(self.devices):
            local_model = self._copy_model(model, device)
            cache = factory(local_model, device=device, **cache_kwargs)
            self._replicas.append(_Replica(index, device, cache, max_pending, self._lock))
        for replica in self._replicas:
            replica.thread.start()

    @staticmethod
    def _copy_model(model: Any, device: Any) -> Any:
        if not hasattr(model, "parameters") or not hasattr(model, "to"):
            return model  # a plain function: shared by every replica
        return copy.deepcopy(model).to(device)

    @property
    def caches(self) -> list[Any]:
        """Each device's cache, in device order (for stats, drawing a graph, ...)."""
        return [r.cache for r in self._replicas]

    def warm_up(self, *example_inputs: Any, sizes: Iterable[Any] | None = None, progress: bool = True) -> None:
        """Capture ahead on every device, one device after another, before serving (`GraphCache.warm_up`)."""
        for replica in self._replicas:
            warm = getattr(replica.cache, "warm_up", None)
            if warm is None:
                continue
            local = map_tensors(lambda t, d=replica.device: t.to(d), example_inputs)
            if replica.is_cuda:
                with torch.cuda.device(replica.device):
                    warm(*local, sizes=sizes, progress=progress)
                torch.cuda.synchronize(replica.device)
            else:
                warm(*local, sizes=sizes, progress=progress)

    # -- serving -------------------------------------------------------------------------------------------
    def _pick(self) -> _Replica:
        with self._lock:
            fewest = min(r.in_flight for r in self._replicas)
            idle = [r for r in self._replicas if r.in_flight == fewest]
            chosen = idle[next(self._round_robin) % len(idle)]
            chosen.in_flight += 1
            return chosen

    def submit(self, *inputs: Any, device: int | None = None) -> Future:
        """Queue one call; a `Future` of the outputs, on the inputs' device (blocks while the queue is full).

        Args:
            device: the replica index to use (default: the one with the fewest requests in flight).
        """
        if self._closed:
            raise DistributedError("these replicas were closed: make new ones with gl.replicate(...)")
        if device is None:
            replica = self._pick()
        else:
            if not 0 <= device < len(self._replicas):
                raise DistributedError(f"replica {device} does not exist; there are {len(self._replicas)}")
            replica = self._replicas[device]
            with self._lock:
                replica.in_flight += 1
        out_device = result_device(inputs, replica.device)
        ready = None
        if out_device.type == "cuda":
            ready = torch.cuda.Event()
            ready.record(torch.cuda.current_stream(out_device))
        future: Future = Future()
        grad = (torch.is_grad_enabled(), torch.is_inference_mode_enabled())
        replica.queue.put((future, inputs, out_device, ready, leading_size(inputs) or 0, grad))
        return future

    def __call__(self, *inputs: Any) -> Any:
        """Run one call on the least busy replica and wait for it (outputs on the inputs' device)."""
        return self.submit(*inputs).result()

    def map(self, calls: Iterable[Sequence[Any]]) -> list[Any]:
        """Run many calls (each a tuple of inputs), spread over the replicas; results in order."""
        futures = [self.submit(*(c if isinstance(c, (tuple, list)) else (c,))) for c in calls]
        return [f.result() for f in futures]

    def split(self, *inputs: Any) -> Any:
        """One large batch cut along dim 0 into one piece per replica, run at once, joined again."""
        n = len(self._replicas)
        rows = leading_size(inputs)
        if rows is None:
            raise DistributedError("split needs a tensor input with a batch dimension")
        sizes = [rows // n + (1 if i < rows % n else 0) for i in range(n)]
        bounds = [sum(sizes[:i]) for i in range(n + 1)]
        futures = []
        for i in range(n):
            if sizes[i] == 0:
                continue
            part = map_tensors(lambda t, a=bounds[i], b=bounds[i + 1]: t[a:b] if t.dim() > 0 else t, inputs)
            futures.append(self.submit(*part, device=i))
        outs = [f.result() for f in futures]
        return _concat(outs)

    def stats(self) -> ReplicaStats:
        with self._lock:
            return ReplicaStats([ReplicaCounts(**vars(r.counts)) for r in self._replicas])

    def close(self) -> None:
        """Finish queued calls, stop the workers, release every cache's graphs."""
        if self._closed:
            return
        self._closed = True
        for replica in self._replicas:
            replica.queue.put(None)
        for replica in self._replicas:
            replica.thread.join()
            release = getattr(replica.cache, "clear", None)
            if release is None:
                continue
            if replica.is_cuda:
                with torch.cuda.device(replica.device):
                    release()
            else:
                release()

    def __enter__(self) -> Replicas:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __len__(self) -> int:
        return len(self._replicas)

    def __repr__(self) -> str:
        return f"Replicas({len(self._replicas)} on {', '.join(str(d) for d in self.devices)})"


def _concat(outs: list[Any]) -> Any:
    first = outs[0]
    if is_tensor(first):
        return torch.cat(outs, dim=0)
    if isinstance(first, (tuple, list)):
        return type(first)(_concat([o[i] for o in outs]) for i in range(len(first)))
    if isinstance(first, dict):
        return {k: _concat([o[k] for o in outs]) for k in first}
    return first


def replicate(model: Any, devices: Any = None, *, example_inputs: Sequence[Any] | None = None,
              progress: bool = True, **kwargs: Any) -> Replicas:
    """One graph cache per GPU behind one callable (see `Replicas`); captures ahead when given example inputs.

    Example:
        >>> reps = gl.replicate(model, devices="all", buckets=[1, 2, 4, 8], example_inputs=(x,))
        >>> y = reps(x)
    """
    replicas = Replicas(model, devices, **kwargs)
    if example_inputs is not None:
        replicas.warm_up(*example_inputs, progress=progress)
    return replicas


__all__ = ["ReplicaCounts", "ReplicaStats", "Replicas", "normalize_devices", "replicate"]
