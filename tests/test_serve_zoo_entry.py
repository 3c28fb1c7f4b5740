"""A zoo model that is served is one entry in graphlab/zoo.py: its `served_as` (request kind, score width) and
its input shape are all `graphlab.serve` reads. The test adds an entry to ZOO (and its row to the serving table
built from ZOO at import) and serves it on the CPU."""
from __future__ import annotations

import asyncio
import dataclasses

import torch

from graphlab.serve.config import ServeConfig
from graphlab.serve.served_model import SERVED, ServedModelSpec
from graphlab.serve.service import InferenceService
from graphlab.zoo import ZOO


def test_the_served_models_are_the_zoo_entries_with_served_as():
    assert set(SERVED) == {name for name, entry in ZOO.items() if entry.served_as is not None}
    assert "encoder" in ZOO and "encoder" not in SERVED  # a zoo model may stay unserved
    gpt, mlp, cnn = SERVED["gpt"], SERVED["mlp"], SERVED["cnn"]
    assert (gpt.kind, gpt.classes, gpt.seq_len) == ("text", 512, ZOO["gpt"].input_shape[0])
    assert (mlp.kind, mlp.classes, mlp.features) == ("vector", 10, 256)
    assert (cnn.kind, cnn.classes, cnn.image_size) == ("image", 10, 32)


def test_a_new_zoo_entry_is_served_with_nothing_else_changed(monkeypatch):
    wide = dataclasses.replace(ZOO["mlp"], name="mlp-copy", description="the MLP again, under another name")
    monkeypatch.setitem(ZOO, "mlp-copy", wide)
    # what importing graphlab.serve with the new zoo.py does (SERVED is built from ZOO, as the test above holds)
    monkeypatch.setitem(SERVED, "mlp-copy", ServedModelSpec.of_zoo(wide))
    assert SERVED["mlp-copy"] == dataclasses.replace(SERVED["mlp"], name="mlp-copy")
    config = ServeConfig(model="mlp-copy", setting="eager", device="cpu", max_batch_size=4, max_wait_us=0,
                         preprocess_threads=1)
    vector = [round(v, 4) for v in torch.randn(256, generator=torch.Generator().manual_seed(0)).tolist()]
    with InferenceService(config) as service:
        answer = asyncio.run(service.infer({"vectors": [vector], "top_k": 3}))
    assert len(answer["results"]) == 1 and len(answer["results"][0]) == 3, answer
