"""Request checks, pre-processing, post-processing and the served-model wrappers, on the CPU."""
from __future__ import annotations

import base64
import json

import pytest
import torch

from graphlab.errors import BadRequestError, RequestTooLargeError
from graphlab.serve.payload import Limits, largest_body_bytes, parse_body
from graphlab.serve.postprocess import top_k_rows
from graphlab.serve.preprocess import ByteTokenizer, preprocess
from graphlab.serve.served_model import served_model

TEXT = Limits(max_rows=4, seq_len=64)


def _image(h, w, value=7):
    return {"height": h, "width": w, "pixels_b64": base64.b64encode(bytes([value]) * (h * w * 3)).decode()}


@pytest.mark.parametrize("body, message", [
    ([1, 2], "must be a JSON object, got a list"),
    ({"txt": ["a"]}, "unknown field 'txt'; this model takes texts, text, top_k"),
    ({}, "missing field 'texts'"),
    ({"texts": "hello"}, "texts must be a list, got a string"),
    ({"texts": []}, "texts is empty"),
    ({"texts": ["ok", 3]}, r"texts\[1\] must be a string, got a number"),
    ({"texts": [""]}, r"texts\[0\] is empty"),
    ({"texts": ["a"], "top_k": 0}, "top_k must be an integer from 1 to 20"),
    ({"texts": ["a"], "top_k": True}, "top_k must be an integer"),
    ({"text": "a", "texts": ["b"]}, "either 'text' or 'texts'"),
])
def test_malformed_text_bodies_name_the_field(body, message):
    with pytest.raises(BadRequestError, match=message) as info:
        parse_body(body, "text", TEXT)
    assert info.value.status == 422 and "\n" not in str(info.value)


def test_too_many_rows_and_too_long_prompts_are_413():
    with pytest.raises(RequestTooLargeError, match="texts has 5 rows; this service takes at most 4") as info:
        parse_body({"texts": ["a"] * 5}, "text", TEXT)
    assert info.value.status == 413
    with pytest.raises(RequestTooLargeError, match=r"texts\[0\] is 65 tokens; the model reads at most 64"):
        parse_body({"texts": ["x" * 65]}, "text", TEXT)
    # tokens are UTF-8 bytes: 22 characters of 3 bytes each is 66 tokens
    with pytest.raises(RequestTooLargeError, match="66 tokens"):
        parse_body({"text": "€" * 22}, "text", TEXT)


def test_a_good_text_body():
    req = parse_body({"texts": ["hi", "there"], "top_k": 3}, "text", TEXT)
    assert (req.rows, req.top_k, req.items) == (2, 3, ("hi", "there"))
    assert parse_body({"text": "one"}, "text", TEXT).rows == 1


def test_tokenizer_is_bytes_plus_one_and_pads_right():
    tok = ByteTokenizer(512)
    assert tok.encode("AB") == [66, 67]
    assert tok.decode_token(66) == "A" and tok.decode_token(0) == "<pad>" and tok.decode_token(11) == "\\x0a"
    spec = served_model("gpt")
    prepared = preprocess(parse_body({"texts": ["AB", "xyz"]}, "text", TEXT), spec)
    ids, last = prepared.inputs
    assert ids.shape == (2, 64) and ids.dtype == torch.int64
    assert ids[0, :3].tolist() == [66, 67, 0] and int(ids[0, 2:].abs().sum()) == 0
    assert last.tolist() == [1, 2]


@pytest.mark.parametrize("vocab", [512, 257, 256, 100, 2])
def test_encode_into_writes_the_ids_encode_gives(vocab):
    # pre-processing writes ids with NumPy (encode_into); encode is the rule they must follow, byte by byte
    import numpy as np
    tok = ByteTokenizer(vocab)
    for text in ["AB", "", "h\u00e9llo w\u00f6rld \u2211", "x" * 100, "\udcff", bytes(range(256)).decode("latin-1")]:
        row = np.full(64, -7, dtype=np.int64)
        n = tok.encode_into(text, row)
        want = tok.encode(text)[:64]
        assert n == len(want) and row[:n].tolist() == want and (row[n:] == -7).all()  # past the text: untouched


def test_image_checks_and_resize():
    limits = Limits(max_rows=2, max_image_side=512)
    with pytest.raises(BadRequestError, match=r"images\[0\].pixels_b64 has 4 characters; a 2x2 RGB image is 16"):
        parse_body({"images": [{"height": 2, "width": 2, "pixels_b64": "AAAA"}]}, "image", limits)
    with pytest.raises(RequestTooLargeError, match=r"images\[0\].width is 600 pixels"):
        parse_body({"images": [{"height": 2, "width": 600, "pixels_b64": ""}]}, "image", limits)
    with pytest.raises(BadRequestError, match="height must be a positive integer"):
        parse_body({"images": [{"height": -1, "width": 2, "pixels_b64": ""}]}, "image", limits)
    bad = {"images": [{"height": 2, "width": 2, "pixels_b64": "!" * 16}]}
    with pytest.raises(BadRequestError, match="not valid base64"):
        preprocess(parse_body(bad, "image", limits), served_model("cnn"))
    prepared = preprocess(parse_body({"images": [_image(40, 50), _image(32, 32, 9)]}, "image", limits),
                          served_model("cnn"))
    (images,) = prepared.inputs
    assert images.shape == (2, 3, 32, 32) and images.dtype == torch.uint8
    assert int(images[0].min()) == int(images[0].max()) == 7  # a flat image stays flat through the resize
    assert int(images[1].max()) == 9


def test_vector_checks():
    limits = Limits(max_rows=2, features=256)
    with pytest.raises(BadRequestError, match=r"vectors\[0\] must be a list of 256 numbers, got 3 numbers"):
        parse_body({"vectors": [[1, 2, 3]]}, "vector", limits)
    with pytest.raises(BadRequestError, match=r"must be a list of 256 numbers, got 1 number$"):
        parse_body({"vectors": [[1]]}, "vector", limits)
    with pytest.raises(BadRequestError, match=r"vectors\[0\]\[0\] must be a number, got a string"):
        parse_body({"vectors": [["a"] * 256]}, "vector", limits)
    prepared = preprocess(parse_body({"vectors": [[0.5] * 256]}, "vector", limits), served_model("mlp"))
    assert prepared.inputs[0].shape == (1, 256)


def test_a_request_for_another_kind_of_model_is_422():
    req = parse_body({"vectors": [[0.0] * 256]}, "vector", Limits(max_rows=1))
    with pytest.raises(BadRequestError, match="serves gpt"):
        preprocess(req, served_model("gpt"))


def test_top_k_rows_best_first_with_labels():
    scores = torch.tensor([[0.0, 3.0, 1.0, 2.0], [5.0, 0.0, 0.0, 0.0]])
    out = top_k_rows(scores, k=2, kind="vector")
    assert [r["id"] for r in out[0]] == [1, 3] and out[1][0]["id"] == 0 and out[0][0]["label"] == "class 1"
    assert abs(sum(torch.softmax(scores[0], 0).tolist()) - 1) < 1e-6
    assert 0 < out[0][0]["prob"] < 1
    text = top_k_rows(torch.zeros(1, 512).index_fill_(1, torch.tensor([105]), 9.0), k=1, kind="text")
    assert text[0][0] == {"id": 105, "label": "h", "prob": text[0][0]["prob"]}


def test_served_gpt_reads_the_logits_at_each_prompts_last_token():
    spec = served_model("gpt")
    model = spec.build(device="cpu")
    ids, last = spec.example_inputs(3, device="cpu")
    last = torch.tensor([0, 10, 63])
    with torch.no_grad():
        full = model.inner(ids)
        picked = model(ids, last)
    assert picked.shape == (3, 512)
    for row, position in enumerate(last.tolist()):
        assert torch.allclose(picked[row], full[row, position])


def test_served_image_model_normalises_uint8_on_the_device():
    spec = served_model("cnn")
    model = spec.build(device="cpu")
    (images,) = spec.example_inputs(2, device="cpu")
    with torch.no_grad():
        out = model(images)
        mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
        std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
        ref = model.inner((images.float() / 255 - mean) / std)
    assert out.shape == (2, 10) and torch.allclose(out, ref, atol=1e-5)


def test_the_largest_valid_body_fits_its_limit_in_any_json_spelling():
    rows = [[-3.4028234663852886e38] * 256] * 4  # the longest plain spelling of a float32
    for indent in (None, 2, 8):
        assert len(json.dumps({"vectors": rows, "top_k": 20}, indent=indent)) < largest_body_bytes(4 * 256)
    prompts = ["\u00e9" * 32] * 32  # 64 UTF-8 bytes each, every byte escaped
    assert len(json.dumps({"texts": prompts}, indent=4)) < largest_body_bytes(32 * 64)
