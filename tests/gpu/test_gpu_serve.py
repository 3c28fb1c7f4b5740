"""The service on a real GPU with graphs: correct answers under batching, the worker's own stream, the bad and
hostile inputs of the CPU tests (malformed, oversized, flood, failure, clients that leave), and a short load test.

About 60 s on an H200 (most of it warm-up captures: GPT buckets 1..32, a few times). The HTTP cases need
starlette and uvicorn (the `serve` extra, carried as wheels there); without them they skip and the same
cases run through the service's own API.
"""
from __future__ import annotations

import asyncio
import json
import socket
import threading
import time

import pytest

torch = pytest.importorskip("torch")

from graphlab.errors import BadRequestError, OverloadedError, RequestTooLargeError, ServeError  # noqa: E402
from graphlab.serve.config import ServeConfig  # noqa: E402
from graphlab.loadtest.api import run_loadtest  # noqa: E402
from graphlab.serve.runners import make_cache_runner  # noqa: E402
from graphlab.serve.served_model import served_model  # noqa: E402
from graphlab.serve.service import InferenceService  # noqa: E402

pytestmark = pytest.mark.gpu

PROMPTS = ["CUDA graphs ", "replay the same kernels ", "a service batches requests", "x", "padding is exact " * 3]


def _close_answers(a, b, atol=2e-5):
    """Same top-k up to float noise: sorted probabilities agree; ids agree wherever the next one is not a tie."""
    for row_a, row_b in zip(a, b):
        pa, pb = [r["prob"] for r in row_a], [r["prob"] for r in row_b]
        assert all(abs(x - y) <= atol for x, y in zip(pa, pb)), (pa, pb)
        for i, (x, y) in enumerate(zip(row_a, row_b)):
            clear = i + 1 >= len(pa) or pa[i] - pa[i + 1] > 2 * atol
            if clear and (i == 0 or pa[i - 1] - pa[i] > 2 * atol):
                assert x["id"] == y["id"], (row_a, row_b)


@pytest.fixture(scope="module")
def gpt_graphs():
    service = InferenceService(ServeConfig(model="gpt", setting="graphs+batching", max_wait_us=2000,
                                           device="cuda")).start()
    yield service
    service.close()


def test_warm_up_captures_every_bucket_before_traffic(gpt_graphs):
    runner = gpt_graphs.stats()["runner"]
    assert runner["runner"] == "graph_cache" and runner["buckets"] == [1, 2, 4, 8, 16, 32]
    assert runner["captures"] == 6 and runner["fallbacks"] == 0 and runner["pool_bytes"] > 0


def test_graph_answers_match_eager_answers():
    answers = {}
    for setting in ("eager", "graphs+batching"):
        with InferenceService(ServeConfig(model="gpt", setting=setting, device="cuda")) as service:
            answers[setting] = [service.infer_sync({"texts": PROMPTS[: n], "top_k": 5}) for n in (1, 3, 5)]
    for eager, graph in zip(answers["eager"], answers["graphs+batching"]):
        _close_answers(eager["results"], graph["results"])
    assert answers["graphs+batching"][1]["batch"]["bucket"] == 4  # 3 rows ran padded to 4


def test_concurrent_batched_requests_each_get_their_own_answer():
    """64 requests, merged and padded into shared graph buffers: every row's answer is its own (planted) class."""
    model = torch.nn.Linear(256, 10, bias=False).cuda().eval()
    with torch.no_grad():
        model.weight.copy_(torch.eye(10, 256, device="cuda") * 3.0)  # class scores = 3 x the first 10 features
    runner = make_cache_runner(model, lambda n: (torch.randn(n, 256, device="cuda"),), max_batch_size=32,
                               buckets="pow2", device=torch.device("cuda"), name="planted")
    config = ServeConfig(model="mlp", setting="graphs+batching", max_wait_us=3000, device="cuda")
    bodies, planted = [], []
    for i in range(64):
        rows = 1 + i % 5
        vectors = [[0.0] * 256 for _ in range(rows)]
        for j in range(rows):
            vectors[j][(i + j) % 10] = 5.0
        bodies.append({"vectors": vectors, "top_k": 1})
        planted.append([(i + j) % 10 for j in range(rows)])
    with InferenceService(config, runner=runner) as service:
        async def burst():
            return await asyncio.gather(*(service.infer(b) for b in bodies))

        answers = asyncio.run(burst())
        stats = service.stats()
    assert [[row[0]["id"] for row in a["results"]] for a in answers] == planted
    assert stats["counters"]["batches"] < 64 and max(stats["batch_rows"]) > 5


def test_the_worker_runs_on_its_own_stream_not_the_default_one():
    seen = {}

    class Spy:
        def __init__(self, inner):
            self.inner = inner

        def __call__(self, *inputs):
            seen["stream"] = torch.cuda.current_stream().cuda_stream
            seen["default"] = torch.cuda.default_stream().cuda_stream
            return self.inner(*inputs)

    module = torch.nn.Linear(256, 10).cuda().eval()
    with InferenceService(ServeConfig(model="mlp", setting="eager", device="cuda"), runner=Spy(module)) as service:
        service.infer_sync({"vectors": [[0.1] * 256]})
    assert seen["stream"] != seen["default"]
    assert torch.cuda.current_stream().cuda_stream == torch.cuda.default_stream().cuda_stream  # this thread's


def test_bad_and_oversized_requests_with_graphs(gpt_graphs):
    with pytest.raises(BadRequestError, match=r"texts\[0\] must be a string"):
        gpt_graphs.infer_sync({"texts": [7]})
    with pytest.raises(RequestTooLargeError, match="texts has 33 rows; this service takes at most 32"):
        gpt_graphs.infer_sync({"texts": ["a"] * 33})
    with pytest.raises(RequestTooLargeError, match="the model reads at most 64"):
        gpt_graphs.infer_sync({"texts": ["a" * 65]})
    config = ServeConfig(model="gpt", setting="graphs", max_batch_size=8, oversize="eager", device="cuda")
    with InferenceService(config) as service:
        with pytest.warns(UserWarning, match="above the largest bucket"):
            answer = service.infer_sync({"texts": ["oversized"] * 12})
        assert len(answer["results"]) == 12 and service.stats()["runner"]["fallbacks"] == 1


def test_a_flood_beyond_capacity_is_503_and_every_accepted_request_is_answered():
    gate = threading.Event()

    class Held:
        def __init__(self, inner):
            self.inner = inner
            self.bucket_for = inner.bucket_for
            self.warm_up = inner.warm_up

        def __call__(self, *inputs):
            gate.wait(10)
            return self.inner(*inputs)

    spec = served_model("gpt")
    spec_runner = make_cache_runner(spec.build("cuda"), lambda n: spec.example_inputs(n, "cuda"), max_batch_size=32,
                                    buckets="pow2", device=torch.device("cuda"), name="held")
    config = ServeConfig(model="gpt", setting="graphs+batching", max_pending=8, device="cuda")
    with InferenceService(config, runner=Held(spec_runner)) as service:
        async def flood():
            tasks = [asyncio.create_task(service.infer({"text": f"request {i}"})) for i in range(40)]
            await asyncio.sleep(0.3)
            gate.set()
            return await asyncio.gather(*tasks, return_exceptions=True)

        results = asyncio.run(flood())
        counters = service.stats()["counters"]
    assert sum(isinstance(r, dict) for r in results) == 8
    assert all(isinstance(r, OverloadedError) for r in results if not isinstance(r, dict))
    assert counters["accepted"] == counters["answered_ok"] == 8 and service.pending == 0


def test_a_failing_batch_is_500_and_the_service_keeps_serving():
    calls = {"n": 0}
    module = torch.nn.Linear(256, 10).cuda().eval()

    def flaky(x):
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("simulated kernel failure")
        return module(x)

    with InferenceService(ServeConfig(model="mlp", setting="eager", device="cuda"), runner=flaky) as service:
        with pytest.raises(ServeError, match="simulated kernel failure"):
            service.infer_sync({"vectors": [[0.0] * 256]})
        assert service.infer_sync({"vectors": [[0.0] * 256]})["results"]


def test_resnet18_image_requests_with_graphs():
    pytest.importorskip("torchvision")
    import base64

    image = {"height": 96, "width": 128, "pixels_b64": base64.b64encode(bytes(range(256)) * 144).decode()}
    answers = {}
    for setting in ("eager", "graphs+batching"):
        config = ServeConfig(model="resnet18", setting=setting, max_batch_size=8, device="cuda")
        with InferenceService(config) as service:
            answers[setting] = service.infer_sync({"images": [image, image], "top_k": 3})
    got, want = answers["graphs+batching"]["results"], answers["eager"]["results"]
    for row_got, row_want in zip(got, want):  # cuDNN may use TF32: near-ties may swap, the scores agree
        assert row_got[0]["id"] in [r["id"] for r in row_want]
        assert abs(row_got[0]["prob"] - row_want[0]["prob"]) < 1e-3


def test_a_short_load_test_with_graphs_keeps_up_and_fills_the_timeline():
    # 800 req/s: well under what graphs+batching sustains on the H200 (1,500 recorded), so a host in its slow
    # state still keeps up; the capacity itself is a benchmark (graphlab loadtest), not this test's business.
    # At 2,000 req/s the test failed once (1,590 of 2,004 answered) on a host in its slow state.
    result = run_loadtest("gpt", settings=["graphs+batching"], rates=[800], duration_s=1.0, progress=False,
                          timeline_rates=[800])
    (point,) = result.points
    assert point.sustained, point
    assert point.gpu_busy_pct > 0 and point.gpu_us_per_batch["p50"] > 0 and point.mean_batch_rows > 1
    assert point.worker_starved_pct < 25.0  # the worker rarely waits on pre-processing at this rate
    window = result.timeline("graphs+batching")
    assert window["requests"] and window["batches"]


# -- over HTTP (needs the serve extra: starlette, uvicorn) ---------------------------------------------------
def test_http_cases_with_graphs_on_a_real_server():
    pytest.importorskip("starlette")
    uvicorn = pytest.importorskip("uvicorn")
    httpx = pytest.importorskip("httpx")
    from graphlab.serve.app import create_app

    service = InferenceService(ServeConfig(model="gpt", setting="graphs+batching", max_body_bytes=100_000,
                                           device="cuda"))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(service), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        url = f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=url, timeout=30) as client:
            assert client.post("/v1/infer", json={"texts": ["hello"]}).status_code == 200
            bad = client.post("/v1/infer", content=b"{oops", headers={"content-type": "application/json"})
            assert bad.status_code == 422 and "not JSON" in bad.json()["detail"]
            assert client.post("/v1/infer", json={"texts": ["a"] * 40}).status_code == 413
            too_big = client.post("/v1/infer", content=b"x" * 200_000, headers={"content-type": "application/json"})
            assert too_big.status_code == 413  # a JSON body over max_body_bytes (a non-JSON one is 415 first)
            body = json.dumps({"texts": ["leaving"]}).encode()
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(b"POST /v1/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
            sock.close()
            time.sleep(0.5)
            codes = [client.post("/v1/infer", json={"texts": [f"after {i}"]}).status_code for i in range(5)]
            assert codes == [200] * 5
            counters = client.get("/v1/stats").json()["counters"]
        assert counters["accepted"] == counters["answered_ok"] + counters.get("answered_error", 0)
    finally:
        server.should_exit = True
        thread.join(60)


def test_your_own_model_is_served_with_its_graphs_and_answers_as_eager():
    """A ServedModel (any nn.Module + example + buckets) on the GPU: graphs captured for its buckets, the answers
    equal to eager, a bad number refused without touching the GPU."""
    import graphlab as gl

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    served = gl.ServedModel(net, torch.randn(4, 64), buckets=[1, 2, 4, 8])
    with gl.serve(served, device="cuda", config=gl.ServeConfig(max_wait_us=0)) as service:
        rows = torch.randn(3, 64)
        answer = service.infer_sync({"inputs": rows.tolist()})
        with torch.no_grad():
            want = net.cuda()(rows.cuda()).cpu()
        assert torch.allclose(torch.tensor(answer["outputs"]), want, atol=1e-4)
        assert answer["batch"]["bucket"] == 4
        assert service.stats()["runner"]["graphs"] == 4
        with pytest.raises(BadRequestError, match=r"inputs\[0\]\[0\] is NaN"):
            service.infer_sync({"inputs": [[float("nan")] + [0.0] * 63]})
        assert len(service.infer_sync({"inputs": [[0.0] * 64]})["outputs"]) == 1


def test_a_slot_reuses_its_pinned_buffer_and_events_and_grows_when_it_must():
    from graphlab.serve.worker import _Slot

    slot = _Slot()
    like = torch.zeros(3, 64, dtype=torch.long)
    a = slot.pinned("in", 3, like)
    b = slot.pinned("in", 2, like)
    assert a.is_pinned() and b.shape == (2, 64) and b.data_ptr() == a.data_ptr()  # the same memory, reused
    c = slot.pinned("in", 8, like)  # larger: made again
    assert c.shape == (8, 64) and c.is_pinned()
    d = slot.pinned("in", 8, torch.zeros(8, 3, dtype=torch.float32))  # another shape or dtype: made again
    assert d.dtype == torch.float32 and d.shape == (8, 3)
    assert slot.timing_events() is slot.timing_events()


def test_the_worker_hands_its_pinned_rows_to_the_graph_cache(gpt_graphs):
    """The worker's launch: the pinned staging buffers go to GraphCache.from_host (copied straight into the
    graph's static inputs), and a known size is a hit."""
    cache = gpt_graphs.runner.cache
    calls = []
    original = cache.from_host

    def spy(*inputs):
        calls.append([(x.device.type, x.is_pinned(), tuple(x.shape)) for x in inputs])
        return original(*inputs)

    cache.from_host = spy
    try:
        gpt_graphs.infer_sync({"texts": PROMPTS[:4], "top_k": 5})  # bucket 4: a route warm-up already made
        hits = cache.stats().hits
        answer = gpt_graphs.infer_sync({"texts": PROMPTS[:4], "top_k": 5})
    finally:
        del cache.from_host
    assert calls[-1] == [("cpu", True, (4, 64)), ("cpu", True, (4,))]
    assert cache.stats().hits == hits + 1 and answer["batch"]["bucket"] == 4
