"""Where a request is pre-processed: a body over `inline_body_bytes` (64 KiB) goes to the pre-processing pool even
when its tensors are small (a short prompt written with long numbers), so that a few large bodies never turn the
event loop into their parser; a small body with small tensors stays on the loop (the thread hop costs more)."""
from __future__ import annotations

import asyncio
import threading

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("starlette")

from graphlab.serve.app import create_app  # noqa: E402
from graphlab.serve.service import InferenceService  # noqa: E402

from test_serve_service import _config  # noqa: E402


def _threads_of(monkeypatch) -> list[str]:
    """Patch the service's pre-processing step to note the thread it runs on."""
    seen: list[str] = []
    original = InferenceService._preprocess

    def noting(self, *args, **kwargs):
        seen.append("loop" if threading.current_thread() is threading.main_thread() else "pool")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(InferenceService, "_preprocess", noting)
    return seen


async def _post(app, content: bytes):
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        return await client.post("/v1/infer", content=content, headers={"content-type": "application/json"})


def _body(rows: int, digits: int) -> bytes:
    number = "0." + "1" * digits
    return ('{"vectors": [' + ",".join("[" + ",".join([number] * 256) + "]" for _ in range(rows)) + "]}").encode()


def test_a_large_body_with_small_tensors_is_preprocessed_off_the_loop(monkeypatch):
    seen = _threads_of(monkeypatch)
    service = InferenceService(_config(setting="eager", max_batch_size=4, max_body_bytes=400_000)).start()
    try:
        app = create_app(service)
        small, large = _body(1, 4), _body(4, 62)  # 4 x 256 numbers: under inline_preprocess_max either way
        assert len(small) < service.config.inline_body_bytes < len(large)
        assert 4 * 256 <= service.config.inline_preprocess_max
        for content in (small, large):
            response = asyncio.run(_post(app, content))
            assert response.status_code == 200, response.text
    finally:
        service.close()
    assert seen == ["loop", "pool"]


# -- the Open Inference Protocol's binary bodies ---------------------------------------------------------------------
def _image_service(**config):
    """Your own model of image-sized rows (3 x 64 x 64 float32: 48 KiB a row as binary data), eager on the CPU."""
    import torch

    import graphlab as gl

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 64 * 64, 4))
    served = gl.ServedModel(net, torch.randn(2, 3, 64, 64), buckets=[1, 2, 4], name="img")
    return gl.serve(served, device="cpu", config=gl.ServeConfig(setting="eager", max_wait_us=0, **config))


def _binary(rows: int, seed: int = 0) -> tuple[bytes, dict[str, str]]:
    import json

    import numpy as np

    x = np.random.default_rng(seed).standard_normal((rows, 3, 64, 64)).astype(np.float32)
    head = json.dumps({"inputs": [{"name": "x", "shape": list(x.shape), "datatype": "FP32",
                                   "parameters": {"binary_data_size": x.nbytes}}]}).encode()
    return head + x.tobytes(), {"inference-header-content-length": str(len(head)),
                                "content-type": "application/octet-stream"}


async def _post_v2(app, content, headers):
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        return await client.post("/v2/models/img/infer", content=content, headers=headers)


def test_a_large_binary_body_is_preprocessed_off_the_loop(monkeypatch):
    seen = _threads_of(monkeypatch)
    # every tensor counts as small, so only the body's size decides where its bytes become a tensor
    service = _image_service(inline_preprocess_max=10**6)
    try:
        app = create_app(service)
        (small, small_headers), (large, large_headers) = _binary(1), _binary(2)
        assert len(small) < service.config.inline_body_bytes < len(large)
        for content, headers in ((small, small_headers), (large, large_headers)):
            response = asyncio.run(_post_v2(app, content, headers))
            assert response.status_code == 200, response.text
            assert response.json()["outputs"][0]["shape"] == [len(content) // (3 * 64 * 64 * 4), 4]
    finally:
        service.close()
    assert seen == ["loop", "pool"]


async def _chunks(content: bytes, size: int = 16384):
    for at in range(0, len(content), size):
        yield content[at: at + size]


def test_the_body_limit_covers_binary_bodies_with_the_protocols_error_and_the_service_goes_on():
    service = _image_service(max_body_bytes=150_000)
    try:
        app = create_app(service)
        limit = app.max_body
        assert limit == 150_000  # the ceiling: below this model's largest valid request as JSON
        over, headers = _binary(4)  # 192 KiB of floats: over the limit, else a valid request
        assert len(over) > limit
        said = asyncio.run(_post_v2(app, over, headers))                                   # Content-Length says so
        streamed = asyncio.run(_post_v2(app, _chunks(over), headers))                       # no length: cut as it comes
        for response in (said, streamed):
            assert response.status_code == 413, response.text
            assert set(response.json()) == {"error"} and f"at most {limit}" in response.json()["error"]
            assert response.headers["connection"] == "close"  # its body was not all read
        assert service.stats()["counters"]["refused_too_large"] == 2
        ok, headers = _binary(2)
        response = asyncio.run(_post_v2(app, ok, headers))
        assert response.status_code == 200, response.text                                  # and it serves on
        counters = service.stats()["counters"]
        assert counters["accepted"] == counters["answered_ok"] == 1
    finally:
        service.close()
