"""graphlab's service as a Ray Serve deployment: Ray places, scales, health-checks and routes; graphlab serves.

    ray start --head                      # or ray.init() on one machine; then on the other nodes: ray start --address
    python -m graphlab.serve.ray_deployment --model gpt --setting graphs+batching --port 8000

    >>> from graphlab.serve.config import ServeConfig
    >>> from graphlab.serve.ray_deployment import RayOptions, run
    >>> config = ServeConfig(model="gpt", setting="graphs+batching")
    >>> handle = run(config, ray=RayOptions(num_replicas=8))   # doctest: +SKIP

What each part does:
- **Ray** starts one replica per GPU (`ray_actor_options={"num_gpus": 1}`: Ray sets CUDA_VISIBLE_DEVICES, so
  a replica sees its GPU as cuda:0), on as many nodes as the cluster has, restarts a replica whose process
  dies or whose health check fails, and routes requests through its HTTP proxy (one per node) to the replicas.
  There is no scheduler or router of graphlab's own.
- **Each replica** is the whole HTTP service of `graphlab.serve.app` (the same Starlette app, so the same
  protocol, limits and JSON error answers): its own `InferenceService`, whose graph cache captures every
  bucket in the replica's constructor, so Ray sends a replica no request before its graphs exist; its own
  dynamic batcher and GPU worker thread. Every answer carries the header `x-graphlab-replica`.
- **Batching** is graphlab's `DynamicBatcher` inside each replica, not `@serve.batch`: it counts rows (a
  request of 8 rows fills a batch of 8; `@serve.batch` counts calls), never splits a request, keeps the GPU
  work on the worker thread (off the replica's event loop) with a batch forming while the last one runs,
  and refuses with 503 at a bound; bench/bench_ray_batching.py measures both on the CPU (bench/README.md).
- **Ray's proxy** queues at most `max_queued_requests` requests per proxy (then 503, with Retry-After);
  each replica takes at most `max_ongoing_requests` (= the service's `max_pending`) at once.
- **Errors Ray itself makes** (a replica that died under a request: 500; a full proxy queue: 503; a request
  past Ray's `request_timeout_s`: 408) are plain text from Ray; `graphlab.serve.ray_proxy.proxy_middlewares` rewrites them into
  graphlab's JSON `{"error", "detail"}` when the proxies are started with
  `RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH=graphlab.serve.ray_proxy:proxy_middlewares`.

Ray is imported inside the functions that need it (the `ray` extra: pip install 'graphlab[ray]'); this
module imports without it, and nothing else in graphlab imports this module.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from graphlab.env import error_line, speak_as
from graphlab.errors import BadInputError, GraphlabError, OverloadedError, UnsupportedError
from graphlab.serve.app import create_app
from graphlab.serve.config import ServeConfig
from graphlab.serve.models import resolve_model
from graphlab.serve.served_model import ServedModel
from graphlab.serve.ray_proxy import REPLICA_HEADER
from graphlab.serve.service import InferenceService

#: Ray Serve's deployment name (and the application name of `run`)
DEFAULT_NAME = "graphlab"
PROG = "python -m graphlab.serve.ray_deployment"
#: what Ray's proxies need in their environment to answer in graphlab's JSON (docs/ray-serve.md)
PROXY_ENV = {"RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH": "graphlab.serve.ray_proxy:proxy_middlewares"}


def _ray_serve() -> Any:
    try:
        from ray import serve
    except ImportError:
        raise UnsupportedError("the Ray deployment needs Ray Serve: pip install 'graphlab[ray]' "
                               "(or 'ray[serve]'); one machine without Ray: python -m graphlab.serve") from None
    return serve


class GraphlabReplica:
    """One Ray Serve replica: an `InferenceService` started (graphs captured) in the constructor, its HTTP app.

    Args:
        config: what to serve and how (`ServeConfig`); the device is the replica's own ("cuda" is the GPU
            Ray gave it).
        model: your own model: a `gl.ServedModel` (pickled to every replica, weights included), a function of
            no arguments returning one (called in each replica: the weights are built or loaded there), or
            "package.module:factory" / a zoo name; default: the one `config.model` names.
        runner_factory: optional `() -> runner` called in the replica (a runner as `InferenceService(runner=)`
            takes: tests inject a failing one); picklable, since Ray ships it to the replica.
    """

    def __init__(self, config: ServeConfig, model: Any = None, runner_factory: Callable[[], Any] | None = None):
        self.config = config
        self.replica_id = _replica_id()
        if model is not None and callable(model) and not isinstance(model, ServedModel):
            model = model()
        runner = runner_factory() if runner_factory is not None else None
        self.service = InferenceService(config, model=resolve_model(model if model is not None else config.model),
                                        runner=runner).start()

    def __serve_build_asgi_app__(self) -> Any:
        """Ray calls this once, after the constructor: the service's own app, each answer naming the replica."""
        return _NameReplica(create_app(self.service), self.replica_id)

    def check_health(self) -> None:
        """Ray calls this every `health_check_period_s`; raising makes Ray replace the replica."""
        state = self.service.state
        if state == "ready" and not self.service.worker_alive:
            raise OverloadedError(f"replica {self.replica_id}: its GPU worker stopped ({self.service.stats()['state']})")
        if state not in ("ready", "closing"):
            raise OverloadedError(f"replica {self.replica_id} is {state}")

    def describe(self) -> dict[str, Any]:
        """Which replica this is and where: id, process, node, device, service state and counters."""
        import ray

        context = ray.get_runtime_context()
        stats = self.service.stats()
        return {"replica": self.replica_id, "pid": os.getpid(), "node_id": context.get_node_id(),
                "actor_name": context.get_actor_name(), "state": stats["state"], "counters": stats["counters"],
                "device": self.config.device, "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
                "warmup_s": stats["warmup_s"], "runner": stats["runner"]}


def _replica_id() -> str:
    try:
        return _ray_serve().get_replica_context().replica_id.unique_id
    except Exception:  # noqa: BLE001 - outside a Ray replica (a unit test): the process
        return f"pid-{os.getpid()}"


class _NameReplica:
    """ASGI middleware: add `x-graphlab-replica: <id>` to every response of the wrapped app."""

    def __init__(self, app: Any, replica_id: str):
        self.app = app
        self.header = (REPLICA_HEADER.encode(), replica_id.encode())

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def tagged(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), self.header]}
            await send(message)

        await self.app(scope, receive, tagged)


@dataclass(frozen=True)
class RayOptions:
    """How Ray places and runs the replicas (the service itself is the `ServeConfig`).

    Attributes:
        num_replicas: replicas to start; default: one per GPU in the cluster for a CUDA config (`ray.init` or
            an address first), 1 for a CPU config; "auto" lets Ray's autoscaler choose (see docs/ray-serve.md).
        num_gpus: GPUs per replica (default 1 on CUDA, 0 on the CPU).
        num_cpus: CPUs Ray reserves per replica (the pre- and post-processing threads need some).
        max_queued_requests: requests each Ray proxy holds while every replica is full; one more gets 503
            (default: the service's `max_pending`, so the proxy's queue is bounded too).
        name: the deployment's name (and the application name of `run`).
        health_check_period_s: how often Ray asks a replica `check_health`.
        graceful_shutdown_timeout_s: how long Ray lets a stopping replica finish what it accepted.
        runtime_env: Ray's runtime environment for the replicas (env_vars, pip, working_dir, ...).
        autoscaling_config: with num_replicas="auto", Ray's autoscaling settings (min_replicas, max_replicas,
            target_ongoing_requests, upscale_delay_s, ...).
        route_prefix: where `run` mounts the application on Ray's proxy.
        http_options: more of Ray's proxy settings for `run` (keep_alive_timeout_s, request_timeout_s, ...).
    """

    num_replicas: int | str | None = None
    num_gpus: float | None = None
    num_cpus: float = 1.0
    max_queued_requests: int | None = None
    name: str = DEFAULT_NAME
    health_check_period_s: float = 10.0
    graceful_shutdown_timeout_s: float = 30.0
    runtime_env: dict[str, Any] | None = None
    autoscaling_config: dict[str, Any] | None = None
    route_prefix: str = "/"
    http_options: dict[str, Any] | None = None


def deployment(config: ServeConfig, *, model: Any = None, ray: RayOptions | None = None,
               runner_factory: Callable[[], Any] | None = None) -> Any:
    """The bound Ray Serve application (`serve.run` it, or use `run`): one replica per GPU by default.

    Args:
        config: the service every replica runs.
        model: your own model (see `GraphlabReplica`); default: the one `config.model` names.
        ray: how Ray places and runs the replicas (`RayOptions`).
        runner_factory: see `GraphlabReplica`.
    """
    serve = _ray_serve()
    opts = ray or RayOptions()
    cuda = config.device.startswith("cuda")
    gpus = (1.0 if cuda else 0.0) if opts.num_gpus is None else float(opts.num_gpus)
    if cuda and gpus <= 0:
        raise BadInputError(f"a CUDA config needs num_gpus > 0 per replica, got {opts.num_gpus!r}; or set "
                            "device='cpu'")
    num_replicas = opts.num_replicas
    if num_replicas is None:
        num_replicas = _gpus_in_cluster(gpus) if cuda else 1
    if num_replicas != "auto" and (not isinstance(num_replicas, int) or num_replicas < 1):
        raise BadInputError(f"num_replicas must be a positive integer or 'auto', got {num_replicas!r}")
    options: dict[str, Any] = {"num_gpus": gpus, "num_cpus": float(opts.num_cpus)}
    if opts.runtime_env:
        options["runtime_env"] = opts.runtime_env
    ingress = serve.ingress()(GraphlabReplica)
    app = serve.deployment(
        ingress, name=opts.name, num_replicas=num_replicas, ray_actor_options=options,
        max_ongoing_requests=config.max_pending,
        max_queued_requests=config.max_pending if opts.max_queued_requests is None else opts.max_queued_requests,
        health_check_period_s=opts.health_check_period_s,
        graceful_shutdown_timeout_s=opts.graceful_shutdown_timeout_s,
        **({"autoscaling_config": opts.autoscaling_config} if opts.autoscaling_config else {}),
    )
    return app.bind(config, model, runner_factory)


def _gpus_in_cluster(per_replica: float) -> int:
    import ray

    if not ray.is_initialized():
        ray.init()
    gpus = ray.cluster_resources().get("GPU", 0.0)
    if gpus < per_replica:
        raise UnsupportedError(f"the Ray cluster has {gpus:g} GPUs, a replica needs {per_replica:g}: start Ray on the "
                               "GPU nodes (ray start), or serve on the CPU with device='cpu'")
    return int(gpus // per_replica)


def run(config: ServeConfig, *, model: Any = None, ray: RayOptions | None = None, blocking: bool = False) -> Any:
    """Start Serve's HTTP proxy on `config.host:config.port` and the deployment behind it; returns its handle once
    every replica has captured its graphs. Stop it with `shutdown()`."""
    serve = _ray_serve()
    import ray as ray_core

    opts = ray or RayOptions()
    if not ray_core.is_initialized():
        ray_core.init()
    serve.start(http_options={**(opts.http_options or {}), "host": config.host, "port": config.port})
    return serve.run(deployment(config, model=model, ray=opts), name=opts.name, route_prefix=opts.route_prefix,
                     blocking=blocking)


def shutdown() -> None:
    """Stop every Serve application (each replica finishes what it accepted) and Serve's proxies and controller."""
    _ray_serve().shutdown()


@contextlib.contextmanager
def local_ray(env: dict[str, str]) -> Iterator[None]:
    """Run the block with `env` in this process's environment, which the Ray processes started in it inherit
    (PYTHONPATH, `PROXY_ENV`); on the way out, however the block ends: Serve shut down (`shutdown`), then Ray, then
    the environment put back as it was."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        try:
            shutdown()
        finally:
            import ray

            ray.shutdown()
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


# -- command line ----------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    """`python -m graphlab.serve.ray_deployment`: the deployment on the Ray cluster at RAY_ADDRESS (or a new
    local one), until Ctrl-C."""
    parser = argparse.ArgumentParser(prog=PROG, description=main.__doc__)
    parser.add_argument("--replicas", default=None, help="default: one per GPU in the cluster; or 'auto'")
    ServeConfig.add_flags(parser)
    parser.set_defaults(host="0.0.0.0")  # Ray's proxy takes the cluster's traffic: every interface unless told
    args = parser.parse_args(argv)
    given = ServeConfig.given(args)
    replicas: int | str | None = args.replicas
    speak_as(cli=True)
    try:
        if replicas not in (None, "auto"):
            if not str(replicas).isdigit():
                raise BadInputError(f"--replicas must be a positive integer or 'auto', got {replicas!r}")
            replicas = int(str(replicas))
        model = given.pop("model", ServeConfig.model)  # each replica resolves it: importable on every node
        served = resolve_model(model)  # here too: a bad --model is one line now, not a replica's traceback
        run(ServeConfig.for_model(served, **given), model=model, ray=RayOptions(num_replicas=replicas),
            blocking=True)
    except GraphlabError as exc:
        print(error_line(PROG, exc), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        shutdown()
    finally:
        speak_as(cli=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["DEFAULT_NAME", "PROXY_ENV", "GraphlabReplica", "RayOptions", "deployment", "local_ray", "main", "run",
           "shutdown"]
