"""The Ray Serve deployment on a local Ray: two CPU replicas of the mlp service (graph cache, eager backend) behind
Ray's HTTP proxy. Requests reach both replicas, bad input gets the HTTP service's own answers, a replica killed
mid-load is replaced and every request is answered, shutdown is clean.

One Ray for the whole module (its start-up is most of the time: about 30 s on a 2-core machine); skipped when Ray
Serve is not installed (pip install 'graphlab[ray]'; scripts/setup.sh installs it).
"""
from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")
serve = pytest.importorskip("ray.serve")
httpx = pytest.importorskip("httpx")
pytest.importorskip("starlette")

import graphlab  # noqa: E402
from graphlab.serve.app import create_app  # noqa: E402
from graphlab.serve.ray_deployment import REPLICA_HEADER, deployment  # noqa: E402
from graphlab.serve.runners import make_cache_runner  # noqa: E402
from graphlab.serve.service import InferenceService  # noqa: E402

from test_serve_service import MLP, _config, _vectors  # noqa: E402

pytestmark = [pytest.mark.ray, pytest.mark.timeout(400)]
NAME = "graphlab-test"
DELAY_S = 0.02  # each batch takes at least this long, so a replica killed under load has requests on it


class SlowCacheRunner:
    """The mlp's graph cache (eager backend on the CPU), each batch slowed by DELAY_S."""

    def __init__(self):
        self.inner = make_cache_runner(MLP.build("cpu"), lambda n: MLP.example_inputs(n, "cpu"), max_rows=8,
                                       buckets="pow2", device="cpu", name="ray-test")

    def __call__(self, *inputs):
        time.sleep(DELAY_S)
        return self.inner(*inputs)

    def bucket_for(self, rows):
        return self.inner.bucket_for(rows)

    def warm_up(self):
        self.inner.warm_up()

    def describe(self):
        return self.inner.describe()


def slow_cache_runner():
    return SlowCacheRunner()


def _service_config():
    return _config(setting="graphs+batching", max_batch_size=8, max_wait_us=2000, max_body_bytes=120_000,
                   max_pending=64, preprocess_threads=1)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cluster():
    """A local Ray (logical CPUs only), Serve's proxy on a free port, the deployment with two replicas."""
    root = Path(graphlab.__file__).resolve().parent.parent  # the graphlab under test, in every Ray process
    saved = {k: os.environ.get(k) for k in ("PYTHONPATH", "RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH")}
    os.environ["PYTHONPATH"] = os.pathsep.join([str(root), str(root / "tests"), *filter(None, [saved["PYTHONPATH"]])])
    os.environ["RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH"] = "graphlab.serve.ray_deployment:proxy_middlewares"
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False, configure_logging=False)
    port = _free_port()
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        app = deployment(_service_config(), num_replicas=2, num_cpus=1, runner_factory=slow_cache_runner,
                         name=NAME, health_check_period_s=1.0, graceful_shutdown_timeout_s=20.0,
                         runtime_env={"env_vars": {"OMP_NUM_THREADS": "1"}})
        handle = serve.run(app, name=NAME, route_prefix="/")
        yield {"url": f"http://127.0.0.1:{port}", "handle": handle, "port": port}
    finally:
        try:
            serve.shutdown()
        finally:
            ray.shutdown()
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def _replicas(handle, want: int, timeout_s: float = 60.0, exclude: frozenset[str] = frozenset()) -> dict[str, dict]:
    """Ask the deployment `describe` until `want` distinct live replicas (not in `exclude`) have answered."""
    seen: dict[str, dict] = {}
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            info = handle.options(method_name="describe").remote().result(timeout_s=10)
        except Exception:  # noqa: BLE001 - a replica being replaced: ask again
            time.sleep(0.2)
            continue
        if info["replica"] not in exclude:
            seen[info["replica"]] = info
        if len(seen) >= want:
            return seen
    raise AssertionError(f"only {len(seen)} of {want} replicas answered within {timeout_s:g} s: {sorted(seen)}")


async def _burst(url: str, bodies: list[dict]) -> list[httpx.Response]:
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        return await asyncio.gather(*(client.post("/v1/infer", json=b) for b in bodies))


def test_requests_reach_both_replicas_and_get_the_models_answers(cluster):
    replicas = _replicas(cluster["handle"], 2)
    assert all(r["state"] == "ready" and r["runner"]["runner"] == "graph_cache" for r in replicas.values())
    assert len({r["pid"] for r in replicas.values()}) == 2  # two processes, each with its own cache
    bodies = [{"vectors": _vectors(1, seed=7), "top_k": 3}] * 40
    answers = asyncio.run(_burst(cluster["url"], bodies))
    assert [a.status_code for a in answers] == [200] * 40
    assert {a.headers[REPLICA_HEADER] for a in answers} == set(replicas)
    # the same body, either replica: the same answer (the zoo's seeded weights), as the service in this process
    service = InferenceService(_service_config()).start()
    try:
        expected = service.infer_sync({"vectors": _vectors(1, seed=7), "top_k": 3})["results"]
    finally:
        service.close()
    assert all(a.json()["results"] == expected for a in answers)
    assert max(a.json()["batch"]["rows"] for a in answers) > 1  # concurrent requests were batched in a replica


BAD = [
    (b"{not json", {"content-type": "application/json"}),
    (b"\xff\xfe", {"content-type": "application/json"}),
    (b'{"vectors": 3}', {"content-type": "application/json"}),
    (b'{"texts": ["a"]}', {"content-type": "application/json"}),
    (b'{"vectors": [[1, 2]], "top_k": 0}', {"content-type": "application/json"}),
    (json.dumps({"vectors": _vectors(9)}).encode(), {"content-type": "application/json"}),
    (b"x" * 130_000, {"content-type": "application/json"}),
]


def test_bad_input_gets_the_same_answers_as_the_http_service(cluster):
    service = InferenceService(_service_config()).start()
    app = create_app(service)

    async def both(content: bytes, headers: dict) -> tuple[httpx.Response, httpx.Response]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://local") as local, \
                httpx.AsyncClient(base_url=cluster["url"], timeout=30) as remote:
            return (await local.post("/v1/infer", content=content, headers=headers),
                    await remote.post("/v1/infer", content=content, headers=headers))

    try:
        for content, headers in BAD:
            local, remote = asyncio.run(both(content, headers))
            assert remote.status_code == local.status_code and remote.status_code in (413, 422), content[:40]
            assert remote.json() == local.json(), content[:40]
            assert remote.headers["content-type"] == "application/json"
    finally:
        service.close()
    with httpx.Client(base_url=cluster["url"], timeout=30) as client:
        assert client.get("/v1/infer").status_code == 405
        health = client.get("/healthz")
        assert health.status_code == 200 and health.json()["state"] == "ready"
        assert client.get("/v1/stats").json()["counters"]["refused_malformed"] >= 1


def test_a_replica_killed_mid_load_is_replaced_and_every_request_is_answered(cluster):
    handle, url = cluster["handle"], cluster["url"]
    before = _replicas(handle, 2)
    victim = next(iter(before.values()))

    async def load() -> list[tuple[int, str, dict]]:
        async with httpx.AsyncClient(base_url=url, timeout=60,
                                     limits=httpx.Limits(max_connections=200)) as client:
            async def one(i: int) -> tuple[int, str, dict]:
                try:
                    r = await client.post("/v1/infer", json={"vectors": _vectors(1, seed=i % 4)})
                except httpx.HTTPError as exc:  # no answer at all: a loss
                    return 0, "", {"error": f"no answer: {type(exc).__name__}"}
                try:
                    body = r.json()
                except ValueError:
                    body = {"not_json": r.text[:300], "headers": dict(r.headers)}
                return r.status_code, r.headers.get(REPLICA_HEADER, ""), body

            tasks = []
            for i in range(160):  # 40 req/s for 4 s, the kill after 1.5 s
                tasks.append(asyncio.create_task(one(i)))
                if i == 60:
                    os.kill(victim["pid"], signal.SIGKILL)
                await asyncio.sleep(0.025)
            return await asyncio.gather(*tasks)

    results = asyncio.run(load())
    codes = [code for code, _, _ in results]
    assert 0 not in codes, [body for code, _, body in results if code == 0][:3]  # every request got an answer
    assert set(codes) <= {200, 500, 503}, sorted(set(codes))
    errors = [body for code, _, body in results if code != 200]
    assert all(set(body) == {"error", "detail"} for body in errors), errors[:3]  # JSON, as graphlab's own
    assert codes.count(200) >= 100, f"{codes.count(200)} of 160 answered 200"  # the other replica went on serving
    # Ray replaces the dead replica: two live replicas again, one of them new, and both take requests
    after = _replicas(handle, 2, timeout_s=90, exclude=frozenset({victim["replica"]}))
    assert victim["replica"] not in after and victim["pid"] not in {r["pid"] for r in after.values()}
    answers = asyncio.run(_burst(url, [{"vectors": _vectors(1)}] * 40))
    assert [a.status_code for a in answers] == [200] * 40
    assert {a.headers[REPLICA_HEADER] for a in answers} == set(after)


def test_shutdown_answers_what_it_accepted_and_stops_every_replica(cluster):
    """Last in the module: deleting the application lets each replica finish its requests, then stops it."""
    handle, url = cluster["handle"], cluster["url"]
    pids = {r["pid"] for r in _replicas(handle, 2).values()}

    async def during_shutdown() -> list[int]:
        async with httpx.AsyncClient(base_url=url, timeout=60) as client:
            tasks = [asyncio.create_task(client.post("/v1/infer", json={"vectors": _vectors(1, seed=i)}))
                     for i in range(30)]
            await asyncio.sleep(0.05)
            await asyncio.to_thread(serve.delete, NAME)
            answered = await asyncio.gather(*tasks, return_exceptions=True)
        return [r.status_code if isinstance(r, httpx.Response) else 0 for r in answered]

    codes = asyncio.run(during_shutdown())
    assert 0 not in codes and set(codes) <= {200, 503}, codes
    deadline = time.monotonic() + 30
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_alive(pid) for pid in pids), "a replica process outlived serve.delete"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
