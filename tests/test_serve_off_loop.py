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
