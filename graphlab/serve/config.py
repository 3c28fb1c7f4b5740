"""What a service runs and how: the model, the setting (eager, graphs, batching), the limits.

The settings are the point of comparison, so they are one option of one service: the same
pre-processing, queue, worker thread and post-processing run in every setting; only what the worker
calls (the model eagerly, or the graph cache) and whether the batcher merges requests change.

    >>> from graphlab.serve.config import ServeConfig
    >>> cfg = ServeConfig(model="gpt", setting="graphs+batching", max_batch_size=32, max_wait_us=500)
    >>> cfg.uses_graphs, cfg.batches_requests
    (True, True)

Pure Python: no torch here.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from graphlab.cache.buckets import bucket_list
from graphlab.errors import BadInputError, ConfigurationError

#: setting -> (the worker calls the graph cache, the batcher merges requests)
SETTINGS: dict[str, tuple[bool, bool]] = {
    "eager": (False, False),
    "graphs": (True, False),
    "graphs+batching": (True, True),
    "eager+batching": (False, True),
}
#: the three settings the issue compares, in the order figures draw them
DEFAULT_SETTINGS = ("eager", "graphs", "graphs+batching")
MODELS = ("gpt", "cnn", "resnet18", "mlp")
OVERSIZE_POLICIES = ("reject", "eager")


@dataclass(frozen=True)
class ServeConfig:
    """One service's configuration.

    Attributes:
        model: what is served: a zoo model ("gpt": text in, next-token top-k out; "cnn"/"resnet18": an RGB
            image in, class top-k out; "mlp": 256 floats in, class top-k out), or your own as
            "package.module:factory" (a function returning a `gl.ServedModel`); `InferenceService(config,
            model=served)` and `gl.serve(module, example)` take a `ServedModel` directly (then this is its name).
        setting: one of `SETTINGS` ("eager", "graphs", "graphs+batching", "eager+batching").
        max_batch_size: most rows the worker runs at once; also the largest graph bucket, and the most rows
            one request may carry (more is a 413, unless `oversize="eager"`).
        max_wait_us: with batching, how long the oldest queued request may wait for others to join its batch.
        buckets: graph-cache buckets: a bucket policy name (one of `graphlab.cache.buckets.POLICIES`), a list of
            batch sizes, or the advice of `gl.advise_buckets` (anything with `.buckets`). Ignored by eager settings.
        oversize: a request with more rows than `max_batch_size`: "reject" (HTTP 413) or "eager" (accepted up
            to `max_oversize_rows`, run alone by the cache's eager fallback).
        max_oversize_rows: hard cap on rows with `oversize="eager"` (bounded memory).
        max_pending: most requests inside the service at once (pre-processing, queued, on the GPU,
            post-processing); one more gets HTTP 503 at once. This bounds memory under a flood.
        max_in_flight: batches launched on the GPU but not yet post-processed (2: the worker prepares the next
            batch while the GPU runs this one).
        preprocess_threads, postprocess_threads: thread pool sizes of the CPU stages; preprocess_threads=0
            runs pre-processing on the event loop itself (one thread hop fewer: for cheap pre-processing).
        inline_preprocess_max: a request whose tensors hold at most this many numbers (a short prompt, a
            few small vectors) is pre-processed on the caller's thread, the event loop, not handed to the pool:
            the hop costs more than the work. 0 sends every request to the pool (images always go there).
        max_body_bytes: largest request body the HTTP app reads (413 beyond).
        max_top_k: largest `top_k` a request may ask for.
        device: "cuda", "cuda:1" or "cpu" (the CPU runs the same pipeline without streams: tests);
            `gl.serve` and the CLI also take "auto" (a GPU where there is one) and resolve it.
        trace_capacity: per-request and per-batch timestamps kept (a ring: oldest dropped first).
        header_timeout_ms: a connection must send a request's whole head within this (from when it connects,
            or from its first byte after an answer), else it gets 408 and is closed (slow or idle clients).
        body_timeout_ms: the whole body must arrive within this after the head: else 408, connection closed.
        idle_timeout_ms: a keep-alive connection with nothing to say is closed after this.
        shutdown_timeout_ms: SIGTERM's bound: accepted requests are answered within it; no client holds the
            process longer.
        drain_linger_ms: after SIGTERM, how long open connections stay so that a request already on its way
            gets a 503 (with `Connection: close`) rather than a closed socket.
    """

    model: str = "gpt"
    setting: str = "graphs+batching"
    max_batch_size: int = 32
    max_wait_us: int = 500
    buckets: Any = "pow2"
    oversize: str = "reject"
    max_oversize_rows: int = 256
    max_pending: int = 512
    max_in_flight: int = 2
    preprocess_threads: int = 4
    inline_preprocess_max: int = 4096
    postprocess_threads: int = 1
    max_body_bytes: int = 8 * 2**20
    max_top_k: int = 20
    device: str = "cuda"
    trace_capacity: int = 200_000
    header_timeout_ms: int = 10_000
    body_timeout_ms: int = 10_000
    idle_timeout_ms: int = 5_000
    shutdown_timeout_ms: int = 10_000
    drain_linger_ms: int = 300

    def __post_init__(self) -> None:
        if self.setting not in SETTINGS:
            raise BadInputError(f"setting must be one of {', '.join(SETTINGS)}, got {self.setting!r}")
        if not isinstance(self.model, str) or not self.model:
            raise BadInputError(f"model must be a zoo name ({', '.join(MODELS)}) or 'package.module:factory' (a "
                                f"function returning a gl.ServedModel), got {self.model!r}")
        if self.oversize not in OVERSIZE_POLICIES:
            raise BadInputError(f"oversize must be 'reject' (HTTP 413) or 'eager' (run it eagerly), "
                                f"got {self.oversize!r}")
        if not isinstance(self.inline_preprocess_max, int) or self.inline_preprocess_max < 0:
            raise BadInputError(f"inline_preprocess_max must be a non-negative integer (numbers per request), got "
                                f"{self.inline_preprocess_max!r}")
        if not isinstance(self.preprocess_threads, int) or self.preprocess_threads < 0:
            raise BadInputError(f"preprocess_threads must be 0 (on the event loop) or more, got "
                                f"{self.preprocess_threads!r}")
        for name in ("max_batch_size", "max_pending", "max_in_flight", "postprocess_threads",
                     "max_body_bytes", "max_top_k", "trace_capacity", "header_timeout_ms", "body_timeout_ms",
                     "idle_timeout_ms", "shutdown_timeout_ms"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise BadInputError(f"{name} must be a positive integer, got {value!r}")
        if not isinstance(self.drain_linger_ms, int) or not 0 <= self.drain_linger_ms < self.shutdown_timeout_ms:
            raise BadInputError(f"drain_linger_ms must be an integer from 0 to below shutdown_timeout_ms "
                                f"({self.shutdown_timeout_ms}), got {self.drain_linger_ms!r}")
        if not isinstance(self.max_wait_us, int) or self.max_wait_us < 0:
            raise BadInputError(f"max_wait_us must be a non-negative integer (microseconds), got {self.max_wait_us!r}")
        if self.max_oversize_rows < self.max_batch_size:
            raise ConfigurationError(f"max_oversize_rows ({self.max_oversize_rows}) must be at least max_batch_size "
                                     f"({self.max_batch_size}): raise it, or lower max_batch_size")
        sizes = self.bucket_list()
        if sizes[-1] != self.max_batch_size:
            raise ConfigurationError(f"the largest bucket ({sizes[-1]}) must equal max_batch_size "
                                     f"({self.max_batch_size}): it is the most rows one batch holds")

    @property
    def uses_graphs(self) -> bool:
        """True when the worker calls the graph cache (settings "graphs", "graphs+batching")."""
        return SETTINGS[self.setting][0]

    @property
    def batches_requests(self) -> bool:
        """True when the batcher merges queued requests into one batch (settings "...+batching")."""
        return SETTINGS[self.setting][1]

    @property
    def max_request_rows(self) -> int:
        """Most rows one request may carry before it is refused with 413."""
        return self.max_oversize_rows if self.oversize == "eager" else self.max_batch_size

    def with_setting(self, setting: str) -> ServeConfig:
        """The same service in another setting (everything else equal: a fair comparison)."""
        return replace(self, setting=setting)

    def bucket_list(self) -> list[int]:
        """The graph buckets, smallest first (a policy name is expanded up to max_batch_size)."""
        return bucket_list(self.buckets, self.max_batch_size)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["buckets"] = self.bucket_list()
        out["bucket_policy"] = self.buckets if isinstance(self.buckets, str) else "list"
        return out


__all__ = ["DEFAULT_SETTINGS", "MODELS", "OVERSIZE_POLICIES", "SETTINGS", "ServeConfig"]
