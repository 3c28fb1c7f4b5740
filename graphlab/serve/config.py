"""What a service runs and how: the model, the setting (eager, graphs, batching), the limits; declared once, here,
for every front door.

The settings are the point of comparison, so they are one option of one service: the same
pre-processing, queue, worker thread and post-processing run in every setting; only what the worker
calls (the model eagerly, or the graph cache) and whether the batcher merges requests change.

    >>> from graphlab.serve.config import ServeConfig
    >>> cfg = ServeConfig(model="gpt", setting="graphs+batching", max_batch_size=32, max_wait_us=500)
    >>> cfg.uses_graphs, cfg.batches_requests
    (True, True)

Each field is declared once, with its default and its help: `ServeConfig.add_flags` makes them the `--flags` of a
command line (`python -m graphlab.serve`, the Ray deployment, `graphlab loadtest`), `ServeConfig.from_env` reads
them from `GRAPHLAB_SERVE_<FIELD>` variables (`uvicorn --factory graphlab.serve.app:app_from_env`), and
`parse_buckets` reads a bucket string ("1,2,4,8" or a policy name) the one way all of them do.

Pure Python: no torch here.
"""
from __future__ import annotations

import argparse
import os
import textwrap
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Callable, Mapping

from graphlab.cache.buckets import bucket_list
from graphlab.errors import BadInputError, ConfigurationError
from graphlab.results_types import keep_known

#: setting -> (the worker calls the graph cache, the batcher merges requests)
SETTINGS: dict[str, tuple[bool, bool]] = {
    "eager": (False, False),
    "graphs": (True, False),
    "graphs+batching": (True, True),
    "eager+batching": (False, True),
}
#: the three settings the issue compares, in the order figures draw them
DEFAULT_SETTINGS = ("eager", "graphs", "graphs+batching")
OVERSIZE_POLICIES = ("reject", "eager")
#: the path a request is POSTed to (the app answers it; the load generator and the bare server send to it)
INFER_PATH = "/v1/infer"
#: the request header a client lowers its deadline with (milliseconds; `ServeConfig.request_timeout_ms` is the most)
REQUEST_TIMEOUT_HEADER = "X-Request-Timeout-Ms"
#: `ServeConfig.from_env` reads GRAPHLAB_SERVE_<FIELD> (GRAPHLAB_SERVE_MAX_WAIT_US=500)
ENV_PREFIX = "GRAPHLAB_SERVE_"


def parse_buckets(text: str) -> list[int] | str:
    """A bucket string as every front door reads it: "1,2,4,8" (or "8") -> [1, 2, 4, 8]; a name ("pow2") -> itself.

        >>> parse_buckets("1, 2,4"), parse_buckets("16"), parse_buckets("pow2")
        ([1, 2, 4], [16], 'pow2')
    """
    parts = [p.strip() for p in str(text).split(",")]
    if all(p.isdigit() for p in parts):
        return [int(p) for p in parts]
    if len(parts) == 1 and parts[0]:
        return parts[0]  # a policy name: ServeConfig checks it against graphlab.cache.buckets.POLICIES
    raise BadInputError(f"buckets must be comma-separated batch sizes (1,2,4,8) or one policy name (pow2), "
                        f"got {text!r}")


def _setting(default: Any, what: str, *, parse: Callable[[str], Any] = str, choices: Any = None) -> Any:
    """A ServeConfig field: its default, what it is (the docstring's words and the flag's help) and how a string
    (a flag, an environment variable) becomes it."""
    return field(default=default, metadata={"help": what, "parse": parse, "choices": choices})


@dataclass(frozen=True)
class ServeConfig:
    """One service's configuration: each field's help is below, and is its `--flag`'s help on every command line."""

    model: str = _setting("gpt", "what is served: a zoo model by name (\"gpt\": text in, next-token top-k out; "
                          "every zoo entry with served_as, graphlab.serve.served_model.SERVED lists them), "
                          "or your own as \"package.module:factory\" (a function returning a gl.ServedModel); "
                          "InferenceService(config, model=served) and gl.serve(module, example) take a ServedModel "
                          "directly (then this is its name)")
    setting: str = _setting("graphs+batching", "what the worker calls and whether the batcher merges requests",
                            choices=tuple(SETTINGS))
    max_batch_size: int = _setting(32, "most rows the worker runs at once; also the largest graph bucket, and the "
                                   "most rows one request may carry (more is a 413, unless oversize is eager)",
                                   parse=int)
    max_wait_us: int = _setting(500, "with batching, how long the oldest queued request may wait for others to join "
                                "its batch", parse=int)
    buckets: Any = _setting("pow2", "graph-cache buckets: a bucket policy name (graphlab.cache.buckets.POLICIES), "
                            "batch sizes (1,2,4,8; in Python a list, or the advice of gl.advise_buckets); ignored by "
                            "eager settings", parse=parse_buckets)
    oversize: str = _setting("reject", "a request with more rows than max_batch_size: reject (HTTP 413) or eager "
                             "(accepted up to max_oversize_rows, run alone by the cache's eager fallback)",
                             choices=OVERSIZE_POLICIES)
    max_oversize_rows: int = _setting(256, "hard cap on rows with oversize eager (bounded memory)", parse=int)
    max_pending: int = _setting(512, "most requests inside the service at once (pre-processing, queued, on the GPU, "
                                "post-processing); one more gets HTTP 503 at once: this bounds memory under a flood",
                                parse=int)
    request_timeout_ms: int = _setting(10_000, "each request's deadline, from when the service accepts it: past it "
                                       "the client gets HTTP 504, and a request whose expected wait (the requests "
                                       "ahead / the recent batch times) is longer is refused at once with 503; a "
                                       f"client may lower it with the {REQUEST_TIMEOUT_HEADER} header, never raise "
                                       "it", parse=int)
    max_in_flight: int = _setting(2, "batches launched on the GPU but not yet post-processed (2: the worker prepares "
                                  "the next batch while the GPU runs this one)", parse=int)
    preprocess_threads: int = _setting(4, "threads of the pre-processing pool; 0 runs pre-processing on the event "
                                       "loop itself (one thread hop fewer: for cheap pre-processing)", parse=int)
    inline_preprocess_max: int = _setting(4096, "a request whose tensors hold at most this many numbers (a short "
                                          "prompt, a few small vectors) is pre-processed on the event loop, not "
                                          "handed to the pool: the hop costs more than the work; 0 sends every "
                                          "request to the pool (images always go there)", parse=int)
    postprocess_threads: int = _setting(1, "threads of the post-processing pool", parse=int)
    max_body_bytes: int = _setting(8 * 2**20, "largest request body the HTTP app reads (413 beyond): the ceiling; "
                                   "each model's own limit is its largest valid request as JSON, with margin "
                                   "(graphlab.serve.payload.largest_body_bytes), when that is lower", parse=int)
    inline_body_bytes: int = _setting(64 * 2**10, "a body of at most this many bytes is decoded (JSON) on the event "
                                      "loop; a larger one on a thread, so that a few large bodies do not stall "
                                      "every other request", parse=int)
    max_top_k: int = _setting(20, "largest top_k a request may ask for", parse=int)
    device: str = _setting("cuda", "cuda, cuda:1 or cpu (the CPU runs the same pipeline without streams: tests); "
                           "gl.serve and python -m graphlab.serve also take auto (a GPU where there is one)")
    trace_capacity: int = _setting(200_000, "per-request and per-batch timestamps kept (a ring: oldest dropped "
                                   "first)", parse=int)
    max_head_bytes: int = _setting(32 * 2**10, "largest request head (request line and headers) the HTTP server "
                                   "reads: counted as it arrives, so a head that streams past it is cut at once "
                                   "with 431 (a URL over max_url_bytes: 414)", parse=int)
    max_headers: int = _setting(100, "most header lines in one request head (431 beyond)", parse=int)
    max_url_bytes: int = _setting(8 * 2**10, "longest request target (path and query) the HTTP server reads (414 "
                                  "beyond)", parse=int)
    header_timeout_ms: int = _setting(10_000, "a connection must send a request's whole head within this (from when "
                                      "it connects, or from its first byte after an answer), else it gets 408 and "
                                      "is closed (slow or idle clients)", parse=int)
    body_timeout_ms: int = _setting(10_000, "the whole body must arrive within this after the head: else 408, "
                                    "connection closed", parse=int)
    idle_timeout_ms: int = _setting(5_000, "a keep-alive connection with nothing to say is closed after this",
                                    parse=int)
    shutdown_timeout_ms: int = _setting(10_000, "SIGTERM's bound: accepted requests are answered within it; no "
                                        "client holds the process longer", parse=int)
    drain_linger_ms: int = _setting(300, "after SIGTERM, how long open connections stay so that a request already "
                                    "on its way gets a 503 (with Connection: close) rather than a closed socket",
                                    parse=int)
    host: str = _setting("127.0.0.1", "the address the HTTP server listens on")
    port: int = _setting(8000, "the port the HTTP server listens on (0: a free one the OS picks)", parse=int)
    backlog: int = _setting(2048, "the kernel's accept queue of the listening socket", parse=int)

    def __post_init__(self) -> None:
        if self.setting not in SETTINGS:
            raise BadInputError(f"setting must be one of {', '.join(SETTINGS)}, got {self.setting!r}")
        if not isinstance(self.model, str) or not self.model:
            raise BadInputError(f"model must be a zoo model's name (e.g. 'gpt') or 'package.module:factory' (a "
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
        for name in ("max_batch_size", "max_pending", "request_timeout_ms", "max_in_flight", "postprocess_threads",
                     "max_body_bytes", "inline_body_bytes", "max_head_bytes", "max_headers", "max_url_bytes",
                     "max_top_k", "trace_capacity", "header_timeout_ms", "body_timeout_ms", "idle_timeout_ms",
                     "shutdown_timeout_ms", "backlog"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise BadInputError(f"{name} must be a positive integer, got {value!r}")
        if not isinstance(self.port, int) or isinstance(self.port, bool) or not 0 <= self.port <= 65535:
            raise BadInputError(f"port must be an integer from 0 (a free one) to 65535, got {self.port!r}")
        if self.max_url_bytes >= self.max_head_bytes:
            raise ConfigurationError(f"max_url_bytes ({self.max_url_bytes}) must be below max_head_bytes "
                                     f"({self.max_head_bytes}): the URL is part of the head")
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

    # -- the front doors: flags, the environment, a served model's own buckets ----------------------------------
    @classmethod
    def add_flags(cls, parser: argparse.ArgumentParser, *, skip: tuple[str, ...] = ()) -> None:
        """A `--flag` for every field but `skip` (`max_wait_us` -> `--max-wait-us`), its help and default the
        field's. A flag left out stays out of the parsed namespace (`given`), so the field's default holds."""
        group = parser.add_argument_group("the service (graphlab.serve.config.ServeConfig)")
        for spec in fields(cls):
            if spec.name in skip:
                continue
            meta = spec.metadata
            group.add_argument(f"--{spec.name.replace('_', '-')}", dest=spec.name, type=meta["parse"],
                               choices=meta["choices"], default=argparse.SUPPRESS,
                               help=f"{meta['help']} (default: {_shown(spec.default)})".replace("%", "%%"))

    @classmethod
    def given(cls, args: argparse.Namespace | Mapping[str, Any]) -> dict[str, Any]:
        """The fields a parsed command line set (those `add_flags` added and the user gave)."""
        return keep_known(cls, vars(args) if isinstance(args, argparse.Namespace) else dict(args))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> ServeConfig:
        """A ServeConfig from GRAPHLAB_SERVE_<FIELD> variables (GRAPHLAB_SERVE_MAX_WAIT_US=500), each read as its
        flag is; `overrides` win."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for spec in fields(cls):
            text = env.get(ENV_PREFIX + spec.name.upper())
            if text is None:
                continue
            try:
                values[spec.name] = spec.metadata["parse"](text)
            except ValueError:
                raise BadInputError(f"{ENV_PREFIX}{spec.name.upper()} must be {_kind(spec.metadata['parse'])}, got "
                                    f"{text!r}") from None
        return cls(**{**values, **overrides})

    @classmethod
    def for_model(cls, served: Any, **settings: Any) -> ServeConfig:
        """The config that serves `served` (a `ServedModel`: its name; its buckets and max batch size unless
        `settings` give them): the one rule of `gl.serve`, `python -m graphlab.serve` and the Ray deployment.

        Buckets given as sizes set max_batch_size to the largest (unless given); a max_batch_size given alone
        keeps the model's bucket policy, or "pow2" up to it when the model lists sizes."""
        settings = {**settings, "model": served.name}
        buckets = settings.get("buckets")
        if buckets is None:
            own = served.buckets
            if "max_batch_size" not in settings:
                settings["max_batch_size"] = served.max_batch_size
            elif not isinstance(own, str) and settings["max_batch_size"] != served.max_batch_size:
                own = "pow2"
            settings["buckets"] = own
        elif isinstance(buckets, (list, tuple)):
            settings.setdefault("max_batch_size", max(buckets))
        else:
            settings.setdefault("max_batch_size", served.max_batch_size)
        return cls(**settings)


def _shown(value: Any) -> str:
    return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def _kind(parse: Callable[[str], Any]) -> str:
    return "an integer" if parse is int else "batch sizes (1,2,4,8) or a policy name" if parse is parse_buckets \
        else "text"


# the docstring's Attributes, from the same declarations as the flags
ServeConfig.__doc__ = (ServeConfig.__doc__ or "") + "\n\n    Attributes:\n" + "\n".join(
    textwrap.fill(f"{spec.name}: {spec.metadata['help']} (default {_shown(spec.default)}).", width=112,
                  initial_indent=" " * 8, subsequent_indent=" " * 12) for spec in fields(ServeConfig))

__all__ = ["DEFAULT_SETTINGS", "ENV_PREFIX", "INFER_PATH", "OVERSIZE_POLICIES", "REQUEST_TIMEOUT_HEADER", "SETTINGS",
           "ServeConfig", "parse_buckets"]
