"""The Open Inference Protocol (KServe v2) over real sockets, with the ecosystem's own client (`tritonclient[http]`).

Servers: `python -m graphlab.serve` subprocesses on the CPU: the zoo's `mlp` (FP32 vectors, top-k), the zoo's `gpt`
(BYTES prompts), and tests/serve_test_models.py's `mixed` (FP16, INT64, INT32, UINT8, BOOL in, FP16 out) and `bf16`
(BF16, binary only). Every answer is checked against graphlab's own JSON (`/v1/infer`) on the same server; the
malformed binary framings go over a raw socket, where a client would refuse to send them.
"""
from __future__ import annotations

import http.client
import json
import os
import socket
import struct
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("uvicorn")
httpclient = pytest.importorskip("tritonclient.http")
from tritonclient.utils import InferenceServerException  # noqa: E402

from graphlab.loadtest.external import ServerProcess  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


class Server:
    """`python -m graphlab.serve --model <model> --device cpu` on a free port (the load test's `ServerProcess`: it
    starts the server, waits until it is ready and stops it), with a raw HTTP helper and Triton's client."""

    def __init__(self, model: str, *flags: str):
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")]), "PYTHONUNBUFFERED": "1"}
        log = Path(tempfile.mkdtemp(prefix="graphlab-oip-")) / "server.log"
        self.process = ServerProcess([sys.executable, "-m", "graphlab.serve", "--model", model, "--device", "cpu",
                                      "--max-wait-us", "2000", *flags], log, env=env, cwd=REPO, ready_timeout_s=180)
        self.process.__enter__()
        self.port = self.process.port
        self.client = httpclient.InferenceServerClient(url=f"127.0.0.1:{self.port}", network_timeout=60)

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            r = conn.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            conn.close()

    def v1(self, body: dict) -> dict:
        status, _, raw = self.request("POST", "/v1/infer", json.dumps(body).encode(),
                                      {"Content-Type": "application/json"})
        assert status == 200, raw
        return json.loads(raw)

    def stop(self) -> None:
        self.process.stop()


@pytest.fixture(scope="module")
def mlp():
    srv = Server("mlp")
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def mixed():
    srv = Server("serve_test_models:mixed")
    yield srv
    srv.stop()


def _vectors(rows: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((rows, 256)).astype(np.float32)


# -- health and metadata -------------------------------------------------------------------------------------------
def test_health_server_and_model_metadata_as_the_client_reads_them(mlp):
    client = mlp.client
    assert client.is_server_live() and client.is_server_ready()
    assert client.is_model_ready("mlp") and client.is_model_ready("mlp", "1")
    assert not client.is_model_ready("nope")
    server = client.get_server_metadata()
    assert server["name"] == "graphlab" and "binary_tensor_data" in server["extensions"]
    meta = client.get_model_metadata("mlp")
    assert meta["name"] == "mlp" and meta["versions"] == ["1"]
    assert meta["inputs"] == [{"name": "vectors", "datatype": "FP32", "shape": [-1, 256]}]
    assert [o["name"] for o in meta["outputs"]] == ["scores", "top_k_ids", "top_k_probs"]
    assert meta["outputs"][0] == {"name": "scores", "datatype": "FP32", "shape": [-1, 10]}
    with pytest.raises(InferenceServerException) as err:
        client.get_model_metadata("nope")
    assert err.value.status() == "404" and "mlp" in err.value.message()


def test_an_own_models_metadata_says_each_datatype_and_its_output(mixed):
    meta = mixed.client.get_model_metadata("mixed")
    assert [(i["name"], i["datatype"], i["shape"]) for i in meta["inputs"]] == [
        ("half", "FP16", [-1, 4]), ("ids", "INT64", [-1, 3]), ("small", "INT32", [-1, 2]),
        ("pixels", "UINT8", [-1, 2]), ("mask", "BOOL", [-1, 3])]
    assert meta["outputs"] == [{"name": "output", "datatype": "FP16", "shape": [-1, 4]}]


# -- inference: answers equal graphlab's own JSON ---------------------------------------------------------------------
@pytest.mark.parametrize("binary", [False, True])
def test_mlp_json_and_binary_answers_equal_the_v1_json_path(mlp, binary):
    x = _vectors(3)
    inp = httpclient.InferInput("vectors", list(x.shape), "FP32")
    inp.set_data_from_numpy(x, binary_data=binary)
    outputs = [httpclient.InferRequestedOutput(name, binary_data=binary)
               for name in ("scores", "top_k_ids", "top_k_probs")]
    result = mlp.client.infer("mlp", [inp], outputs=outputs, request_id="r-7", parameters={"top_k": 3})
    assert result.get_response()["id"] == "r-7" and result.get_response()["model_name"] == "mlp"
    ids, probs = result.as_numpy("top_k_ids"), result.as_numpy("top_k_probs")
    assert ids.shape == (3, 3) and ids.dtype == np.int64 and probs.dtype == np.float32
    assert result.as_numpy("scores").shape == (3, 10)
    own = mlp.v1({"vectors": x.tolist(), "top_k": 3})["results"]
    assert ids.tolist() == [[r["id"] for r in row] for row in own]
    assert np.allclose(probs, [[r["prob"] for r in row] for row in own], atol=1e-5)


def test_the_docs_snippet_runs(mlp):
    # docs/serving.md, "Open Inference Protocol (KServe v2)": keep the two in step
    import numpy as np
    import tritonclient.http as httpclient

    client = httpclient.InferenceServerClient(url=f"127.0.0.1:{mlp.port}")
    x = np.random.rand(2, 256).astype(np.float32)
    inp = httpclient.InferInput("vectors", [2, 256], "FP32")
    inp.set_data_from_numpy(x, binary_data=True)               # raw bytes after the JSON head
    out = httpclient.InferRequestedOutput("top_k_ids", binary_data=True)
    result = client.infer("mlp", [inp], outputs=[out], parameters={"top_k": 3})
    assert result.as_numpy("top_k_ids").shape == (2, 3)


def test_the_docs_plain_http_binary_snippet_runs(mlp):
    # docs/serving.md, "Open Inference Protocol (KServe v2)": binary data with no client library
    import json
    import httpx
    import numpy as np

    x = np.random.rand(2, 256).astype(np.float32)
    head = json.dumps({"inputs": [{"name": "vectors", "shape": [2, 256], "datatype": "FP32",
                                   "parameters": {"binary_data_size": x.nbytes}}],
                       "outputs": [{"name": "top_k_ids", "parameters": {"binary_data": True}}],
                       "parameters": {"top_k": 3}}).encode()
    answer = httpx.post(f"http://127.0.0.1:{mlp.port}/v2/models/mlp/infer", content=head + x.tobytes(),
                        headers={"Inference-Header-Content-Length": str(len(head))})
    cut = int(answer.headers["Inference-Header-Content-Length"])          # the answer's JSON head, then its bytes
    ids = np.frombuffer(answer.content[cut:], dtype=np.int64).reshape(json.loads(answer.content[:cut])["outputs"][0]["shape"])
    assert ids.tolist() == [[r["id"] for r in row] for row in mlp.v1({"vectors": x.tolist(), "top_k": 3})["results"]]


@pytest.mark.parametrize("named, version, status", [("mlp", None, 200), ("mlp", "1", 200), ("gpt", None, 400),
                                                    ("mlp", "2", 400)])
def test_a_body_that_names_its_model_as_kserves_sdk_does_is_held_to_the_path(mlp, named, version, status):
    body = {"id": "k-1", "model_name": named, "inputs": [
        {"name": "vectors", "shape": [1, 256], "datatype": "FP32", "data": _vectors(1).reshape(-1).tolist()}]}
    if version is not None:
        body["model_version"] = version
    got, _, raw = mlp.request("POST", "/v2/models/mlp/infer", json.dumps(body).encode())
    assert got == status, raw
    if status == 400:
        assert "this path and server serve 'mlp' version 1" in json.loads(raw)["error"]


def test_kserves_sdk_json_and_binary():
    """KServe's own REST client (`pip install kserve`; not in the test extra, its dependencies are many: tried with
    kserve 0.21.0), JSON and binary tensors, answers equal /v1's."""
    kserve = pytest.importorskip("kserve")
    import asyncio

    srv = Server("mlp")
    try:
        x = _vectors(2)
        own = [[r["id"] for r in row] for row in srv.v1({"vectors": x.tolist(), "top_k": 3})["results"]]

        async def go(binary: bool):
            client = kserve.InferenceRESTClient(kserve.RESTConfig(protocol="v2"))
            try:
                inp = kserve.InferInput("vectors", [2, 256], "FP32")
                inp.set_data_from_numpy(x, binary_data=binary)
                request = kserve.InferRequest(model_name="mlp", infer_inputs=[inp], parameters={"top_k": 3})
                return await client.infer(srv.process.base_url, request, model_name="mlp")
            finally:
                await client.close()

        for binary in (False, True):
            answer = asyncio.run(go(binary))
            ids = next(o for o in answer.outputs if o.name == "top_k_ids")
            assert ids.as_numpy().tolist() == own
    finally:
        srv.stop()


def _mixed_inputs(rows: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    return {"half": rng.standard_normal((rows, 4)).astype(np.float16),
            "ids": rng.integers(-5, 5, (rows, 3)).astype(np.int64),
            "small": rng.integers(-100, 100, (rows, 2)).astype(np.int32),
            "pixels": rng.integers(0, 256, (rows, 2)).astype(np.uint8),
            "mask": rng.integers(0, 2, (rows, 3)).astype(bool)}


_DATATYPES = {"half": "FP16", "ids": "INT64", "small": "INT32", "pixels": "UINT8", "mask": "BOOL"}


@pytest.mark.parametrize("binary", [False, True])
def test_every_datatype_json_and_binary_equals_the_v1_json_path(mixed, binary):
    arrays = _mixed_inputs(3)
    inputs = []
    for name, array in arrays.items():
        inp = httpclient.InferInput(name, list(array.shape), _DATATYPES[name])
        inp.set_data_from_numpy(array, binary_data=binary)
        inputs.append(inp)
    result = mixed.client.infer("mixed", inputs, outputs=[httpclient.InferRequestedOutput("output",
                                                                                         binary_data=binary)])
    got = result.as_numpy("output")
    assert got.dtype == np.float16 and got.shape == (3, 4)
    own = mixed.v1({"inputs": {name: array.tolist() for name, array in arrays.items()}})["outputs"]
    assert got.tolist() == own


def test_bf16_travels_as_binary_data_only():
    srv = Server("serve_test_models:bf16")
    try:
        x = np.array([[1.5, -2.0, 0.25]], dtype=np.float32)
        bits = (x.view(np.uint32) >> 16).astype(np.uint16)          # float32 -> bfloat16, exact for these
        head = json.dumps({"inputs": [{"name": "x", "shape": [1, 3], "datatype": "BF16",
                                       "parameters": {"binary_data_size": 6}}],
                           "outputs": [{"name": "output", "parameters": {"binary_data": True}}]}).encode()
        status, headers, raw = srv.request("POST", "/v2/models/bf16/infer", head + bits.tobytes(),
                                           {"Inference-Header-Content-Length": str(len(head))})
        assert status == 200, raw
        cut = int(headers["inference-header-content-length"])
        answer = json.loads(raw[:cut])
        assert answer["outputs"][0]["datatype"] == "BF16" and answer["outputs"][0]["shape"] == [1, 3]
        back = (np.frombuffer(raw[cut:], dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
        assert back.tolist() == [3.0, -4.0, 0.5]
        as_json = json.dumps({"inputs": [{"name": "x", "shape": [1, 3], "datatype": "BF16", "data": [1, 2, 3]}]})
        status, _, raw = srv.request("POST", "/v2/models/bf16/infer", as_json.encode())
        assert status == 400 and "binary" in json.loads(raw)["error"]
    finally:
        srv.stop()


def test_gpt_bytes_prompts_json_and_binary_equal_the_v1_json_path():
    srv = Server("gpt")
    try:
        prompts = np.array([b"CUDA graphs ", "h\u00e9llo".encode()], dtype=np.object_)
        own = srv.v1({"texts": [p.decode() for p in prompts], "top_k": 4})["results"]
        for binary in (False, True):
            inp = httpclient.InferInput("texts", [2], "BYTES")
            inp.set_data_from_numpy(prompts, binary_data=binary)
            result = srv.client.infer("gpt", [inp], parameters={"top_k": 4},
                                      outputs=[httpclient.InferRequestedOutput("top_k_ids", binary_data=binary)])
            assert result.as_numpy("top_k_ids").tolist() == [[r["id"] for r in row] for row in own]
        too_long = httpclient.InferInput("texts", [1], "BYTES")
        too_long.set_data_from_numpy(np.array([b"x" * 65], dtype=np.object_))
        with pytest.raises(InferenceServerException) as err:
            srv.client.infer("gpt", [too_long])
        assert err.value.status() == "400" and "64" in err.value.message()
    finally:
        srv.stop()


# -- the zoo's image models: UINT8 images at the model's side ------------------------------------------------------
def _images(rows: int, side: int, seed: int = 3) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (rows, 3, side, side)).astype(np.uint8)


def _v1_images(images: np.ndarray) -> list[dict]:
    """The same pixels in graphlab's own JSON: height x width x RGB bytes, base64 (at the model's side: no resize)."""
    import base64

    return [{"height": int(im.shape[1]), "width": int(im.shape[2]),
             "pixels_b64": base64.b64encode(im.transpose(1, 2, 0).tobytes()).decode()} for im in images]


@pytest.mark.parametrize("model, side, classes", [("cnn", 32, 10), ("resnet18", 224, 1000)])
def test_image_zoo_models_take_uint8_images_as_json_and_binary_and_refuse_what_is_wrong(model, side, classes):
    if model == "resnet18":
        pytest.importorskip("torchvision")
    srv = Server(model, "--max-batch-size", "4")
    try:
        meta = srv.client.get_model_metadata(model)
        assert meta["inputs"] == [{"name": "images", "datatype": "UINT8", "shape": [-1, 3, side, side]}]
        images = _images(2, side)
        own = srv.v1({"images": _v1_images(images), "top_k": 3})["results"]
        for binary in (False, True):
            result = srv.client.infer(model, [_one("images", images, "UINT8", binary=binary)],
                                      parameters={"top_k": 3})
            assert result.as_numpy("top_k_ids").tolist() == [[r["id"] for r in row] for row in own]
            assert np.allclose(result.as_numpy("top_k_probs"), [[r["prob"] for r in row] for row in own], atol=1e-5)
            assert result.as_numpy("scores").shape == (2, classes)
        # a nested JSON body of the right shape, as a client without Triton's library writes it
        body = {"inputs": [{"name": "images", "shape": [2, 3, side, side], "datatype": "UINT8",
                            "data": images.tolist()}], "parameters": {"top_k": 3}}
        status, _, raw = srv.request("POST", f"/v2/models/{model}/infer", json.dumps(body).encode())
        assert status == 200, raw
        ids = next(o for o in json.loads(raw)["outputs"] if o["name"] == "top_k_ids")
        assert ids["shape"] == [2, 3] and ids["data"] == [r["id"] for row in own for r in row]

        def refused(entry: dict, says: str, *, binary_tail: bytes | None = None) -> None:
            head = json.dumps({"inputs": [{"name": "images", **entry}]}).encode()
            if binary_tail is None:
                status, headers, raw = srv.request("POST", f"/v2/models/{model}/infer", head)
            else:
                status, headers, raw = srv.request("POST", f"/v2/models/{model}/infer", head + binary_tail,
                                                   {"Inference-Header-Content-Length": str(len(head))})
            assert status == 400, raw
            assert headers["content-type"] == "application/json" and set(json.loads(raw)) == {"error"}
            assert says in json.loads(raw)["error"], raw

        one = images[:1]
        flat = one.reshape(-1).tolist()
        refused({"shape": [1, 3, side, side], "datatype": "FP32", "data": (one / 255.0).reshape(-1).tolist()},
                "takes UINT8")                                                            # the datatype
        refused({"shape": [1, 3, side - 1, side], "datatype": "UINT8", "data": flat[: 3 * (side - 1) * side]},
                f"takes [-1, 3, {side}, {side}]")                                          # the shape
        refused({"shape": [1, 3, side, side], "datatype": "UINT8", "data": flat[:-1]},
                "values in data")                                                          # the count
        refused({"shape": [1, 3, side, side], "datatype": "UINT8",
                 "parameters": {"binary_data_size": one.nbytes - 3}}, f"is {one.nbytes}",
                binary_tail=one.tobytes()[:-3])                                            # the byte count
        refused({"shape": [1, 3, side, side], "datatype": "UINT8", "data": [256] + flat[1:]},
                "is 256; this input takes integers from 0 to 255")                          # out of range
        refused({"shape": [1, 3, side, side], "datatype": "UINT8", "data": [float("nan")] + flat[1:]},
                "must be integers")                                                        # not finite (NaN)
        refused({"shape": [1, 3, side, side], "datatype": "UINT8", "data": [float("inf")] + flat[1:]},
                "must be integers")                                                        # not finite (Infinity)
        # nothing lost: the service serves on
        result = srv.client.infer(model, [_one("images", images, "UINT8", binary=True)], parameters={"top_k": 3})
        assert result.as_numpy("top_k_ids").tolist() == [[r["id"] for r in row] for row in own]
    finally:
        srv.stop()


# -- refusals, as the client reports them ---------------------------------------------------------------------------
def _one(name: str, array: np.ndarray, datatype: str, binary: bool = False):
    inp = httpclient.InferInput(name, list(array.shape), datatype)
    inp.set_data_from_numpy(array, binary_data=binary)
    return inp


@pytest.mark.parametrize("case, says", [
    ("wrong_shape", "shape [1, 255]"), ("wrong_datatype", "takes fp32"), ("unknown_input", "unknown input"),
    ("nan", "is nan"), ("inf_binary", "is inf"), ("too_many_rows", "at most"), ("unknown_output", "unknown output"),
    ("bad_top_k", "top_k"),
])
def test_a_bad_request_is_a_400_the_client_reports_and_the_service_serves_on(mlp, case, says):
    x = _vectors(1)
    outputs = None
    parameters = None
    if case == "wrong_shape":
        inputs = [_one("vectors", x[:, :255], "FP32")]
    elif case == "wrong_datatype":
        inputs = [_one("vectors", x.astype(np.float64), "FP64")]
    elif case == "unknown_input":
        inputs = [_one("vectors", x, "FP32"), _one("other", x, "FP32")]
    elif case == "nan":
        x[0, 7] = np.nan
        inputs = [_one("vectors", x, "FP32")]
    elif case == "inf_binary":
        x[0, 3] = np.inf
        inputs = [_one("vectors", x, "FP32", binary=True)]
    elif case == "too_many_rows":
        inputs = [_one("vectors", _vectors(33), "FP32", binary=True)]
    elif case == "unknown_output":
        inputs, outputs = [_one("vectors", x, "FP32")], [httpclient.InferRequestedOutput("logits")]
    else:
        inputs, parameters = [_one("vectors", x, "FP32")], {"top_k": 99}
    with pytest.raises(InferenceServerException) as err:
        mlp.client.infer("mlp", inputs, outputs=outputs, parameters=parameters)
    assert err.value.status() == "400", err.value
    assert says in err.value.message().lower(), err.value.message()
    ok = mlp.client.infer("mlp", [_one("vectors", _vectors(1), "FP32", binary=True)])
    assert ok.as_numpy("top_k_ids").shape == (1, 5)


def test_an_out_of_range_integer_and_a_fraction_for_an_integer_input_are_400(mixed):
    arrays = _mixed_inputs(1)
    for name, bad, says in (("pixels", [[300, 1]], "300"), ("ids", [[1.5, 0, 0]], "integers")):
        body = {"inputs": [{"name": n, "shape": list(a.shape), "datatype": _DATATYPES[n],
                            "data": bad if n == name else a.tolist()} for n, a in arrays.items()]}
        status, headers, raw = mixed.request("POST", "/v2/models/mixed/infer", json.dumps(body).encode())
        assert status == 400 and says in json.loads(raw)["error"], raw
        assert headers["content-type"] == "application/json"


# -- malformed binary framing, over a raw socket ---------------------------------------------------------------------
def _raw_post(port: int, path: str, body: bytes, header_length: str | None) -> tuple[int, bytes]:
    head = [f"POST {path} HTTP/1.1", "Host: x", f"Content-Length: {len(body)}"]
    if header_length is not None:
        head.append(f"Inference-Header-Content-Length: {header_length}")
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        data = b""
        while b"\r\n\r\n" not in data:
            data += sock.recv(65536)
        top, rest = data.split(b"\r\n\r\n", 1)
        length = int(next(line.split(b":")[1] for line in top.split(b"\r\n") if line.lower().startswith(b"content-length")))
        while len(rest) < length:
            rest += sock.recv(65536)
    return int(top.split()[1]), rest


def _framed(size: int, tail: bytes) -> tuple[bytes, int]:
    head = json.dumps({"inputs": [{"name": "vectors", "shape": [1, 256], "datatype": "FP32",
                                   "parameters": {"binary_data_size": size}}]}).encode()
    return head + tail, len(head)


@pytest.mark.parametrize("case, says", [
    ("length_past_body", "past the body"), ("negative_length", "whole number"), ("size_mismatch", "1024"),
    ("negative_size", "binary_data_size"), ("tail_too_long", "add up to"), ("tail_too_short", "left"),
    ("head_not_json", "not json"),
])
def test_malformed_binary_framing_is_a_400_and_nothing_is_lost(mlp, case, says):
    good = _vectors(1).tobytes()
    if case == "length_past_body":
        body, n = _framed(1024, good)
        n = len(body) + 10
    elif case == "negative_length":
        (body, _), n = _framed(1024, good), -5
    elif case == "size_mismatch":
        body, n = _framed(1000, good[:1000])
    elif case == "negative_size":
        body, n = _framed(-4, good)
    elif case == "tail_too_long":
        body, n = _framed(1024, good + b"xx")
    elif case == "tail_too_short":
        body, n = _framed(1024, good[:512])
    else:
        body, n = b"{not json" + good, 9
    status, raw = _raw_post(mlp.port, "/v2/models/mlp/infer", body, str(n))
    assert status == 400, raw
    assert says in json.loads(raw)["error"].lower(), raw
    body, n = _framed(1024, good)
    status, raw = _raw_post(mlp.port, "/v2/models/mlp/infer", body, str(n))
    assert status == 200, raw


def test_bytes_elements_framing_is_checked():
    from graphlab.errors import BadRequestError
    from graphlab.serve import oip

    joined = oip.join_bytes_elements([b"ab", b""])
    assert oip.split_bytes_elements(joined, 2, "t") == [b"ab", b""]
    for raw, count in ((joined, 3), (joined + b"z", 2), (struct.pack("<I", 99) + b"ab", 1)):
        with pytest.raises(BadRequestError):
            oip.split_bytes_elements(raw, count, "t")


def test_metrics_count_the_protocol_routes_by_pattern(mlp):
    mlp.client.infer("mlp", [_one("vectors", _vectors(1), "FP32")])
    status, _, raw = mlp.request("GET", "/metrics")
    text = raw.decode()
    assert 'path="/v2/models/{name}/infer",status="200"' in text
    assert 'path="/v2/health/ready",status="200"' in text
    status, _, raw = mlp.request("GET", "/v2/models/mlp/infer")
    assert status == 405 and "POST" in json.loads(raw)["error"]


# -- the answer as a person reads it, and the server on a thread (notebook 09) ---------------------------------------
def test_a_protocol_answer_decodes_json_and_binary_outputs_of_each_datatype():
    import graphlab as gl
    from graphlab.serve import oip

    outputs = [oip.OutputTensor("ids", "INT64", (2, 2), raw=struct.pack("<4q", 3, 1, 0, 2)),
               oip.OutputTensor("probs", "FP32", (2, 2), data=[0.5, 0.25, 0.75, 0.125]),
               oip.OutputTensor("words", "BYTES", (2,), raw=oip.join_bytes_elements([b"a", b"bc"])),
               oip.OutputTensor("half", "BF16", (1,), raw=struct.pack("<f", 1.5)[2:])]
    body, cut = oip.response_body("m", "r-1", outputs)
    answer = gl.ProtocolAnswer.from_http(body, str(cut))
    assert answer["model_name"] == "m" and answer["id"] == "r-1"
    assert answer.values == {"ids": [3, 1, 0, 2], "probs": [0.5, 0.25, 0.75, 0.125], "words": [b"a", b"bc"],
                             "half": [1.5]}
    assert answer.rows("ids") == [[3, 1], [0, 2]]
    shown = str(answer._parts()[0])
    assert "INT64 2 x 2, binary data" in shown and "FP32 2 x 2, JSON data" in shown
    only_json, _ = oip.response_body("m", None, [outputs[1]])
    assert gl.ProtocolAnswer.from_http(only_json).rows("probs") == [[0.5, 0.25], [0.75, 0.125]]
    with pytest.raises(gl.BadInputError):
        oip.decode_tensor(b"\x00" * 7, "INT64", 1)


def test_a_server_on_a_thread_answers_the_protocol_and_closes_with_a_drain():
    import httpx

    import graphlab as gl

    with pytest.raises(gl.BadInputError, match="give port="):
        gl.serve("mlp", device="cpu", background=True)
    server = gl.serve("mlp", device="cpu", port=0, background=True)
    try:
        assert server.port > 0 and server.url == f"http://127.0.0.1:{server.port}"
        client = httpclient.InferenceServerClient(url=server.address)
        reply = client.infer("mlp", [_one("vectors", _vectors(2), "FP32", binary=True)], parameters={"top_k": 2})
        answer = gl.ProtocolAnswer.from_triton(reply)
        assert answer.rows("top_k_ids") == reply.as_numpy("top_k_ids").tolist()
        assert "the k best of each row" in str(answer._parts()[1])
        assert httpx.get(f"{server.url}/v2/health/ready").status_code == 200
    finally:
        server.close()
    assert server.service.state == "closed"
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{server.url}/v2/health/live")
