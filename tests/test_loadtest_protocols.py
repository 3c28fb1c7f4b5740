"""The load generators speak the Open Inference Protocol too: one request on the wire in each protocol
(`graphlab.loadtest.protocols`), read back by the service's own parser; hey's command with the protocol's headers;
and the open loop over real sockets against a CPU server in each protocol, every request answered 200."""
from __future__ import annotations

import json
import struct

import pytest

import graphlab as gl
from graphlab.errors import BadInputError
from graphlab.loadtest.external import _hey_command
from graphlab.loadtest.plan import LoadPlan
from graphlab.loadtest.protocols import PROTOCOLS, http_request
from graphlab.serve import oip

GPT = {"name": "gpt", "inputs": [{"name": "texts", "datatype": "BYTES", "shape": [-1]}],
       "outputs": [{"name": "scores"}, {"name": "top_k_ids"}, {"name": "top_k_probs"}]}
OWN = {"name": "own", "inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 2, 2]}], "outputs": [{"name": "output"}]}
TWO = {"name": "two", "inputs": [{"name": "ids", "datatype": "INT64", "shape": [-1, 3]},
                                 {"name": "mask", "datatype": "BOOL", "shape": [-1, 3]}], "outputs": [{"name": "output"}]}


def _read(request) -> oip.InferRequest:
    """The request as the service reads it: its JSON head and binary tail split, the outline checked."""
    length = dict(request.headers).get(oip.HEADER_LENGTH)
    head, tail = oip.split_body(request.content, None if length is None else length.encode())
    return oip.parse_request(head, tail)


@pytest.mark.parametrize("protocol", ["oip_json", "oip_binary"])
def test_each_body_reads_back_as_the_same_tensors_and_asks_for_the_same_answer(protocol):
    binary = protocol == "oip_binary"
    texts = _read(http_request({"texts": ["CUDA graphs", "h\u00e9"], "top_k": 4}, protocol, GPT))
    (t,) = texts.inputs
    assert (t.name, t.datatype, t.shape) == ("texts", "BYTES", (2,))
    got = oip.split_bytes_elements(t.raw, 2, "t") if binary else t.data
    assert got == ([b"CUDA graphs", "h\u00e9".encode()] if binary else ["CUDA graphs", "h\u00e9"])
    assert texts.parameters == {"top_k": 4} and texts.outputs == (("top_k_ids", binary), ("top_k_probs", binary))

    rows = [[[0.5, -1.0], [2.0, 0.25]]]
    own = _read(http_request({"inputs": rows}, protocol, OWN))
    (x,) = own.inputs
    assert x.shape == (1, 2, 2) and own.outputs == (("output", binary),) and own.parameters == {}
    assert (list(struct.unpack("<4f", x.raw)) if binary else x.data) == [0.5, -1.0, 2.0, 0.25]

    two = _read(http_request({"inputs": {"mask": [[True, False, True]], "ids": [[1, 2, 3]]}}, protocol, TWO))
    assert [(i.name, i.datatype, i.shape) for i in two.inputs] == [("ids", "INT64", (1, 3)), ("mask", "BOOL", (1, 3))]
    if binary:
        assert struct.unpack("<3q", two.inputs[0].raw) == (1, 2, 3) and bytes(two.inputs[1].raw) == b"\x01\x00\x01"


def test_graphlabs_own_json_goes_to_v1_unchanged():
    request = http_request({"vectors": [[0.5]], "top_k": 2}, "graphlab")
    assert (request.path, request.content_type, request.headers) == ("/v1/infer", "application/json", ())
    assert json.loads(request.content) == {"vectors": [[0.5]], "top_k": 2}


@pytest.mark.parametrize("body, meta, protocol, says", [
    ({"images": []}, GPT, "oip_json", "UINT8 images already at the model's side"),
    ({"inputs": [[1.0, 2.0], [1.0]]}, OWN, "oip_binary", "ragged"),
    ({"texts": ["a"]}, None, "oip_json", "needs the model's metadata"),
    ({"inputs": {"ids": [[1, 2, 3]]}}, TWO, "oip_json", "no input 'mask'"),
    ({"texts": ["a"]}, GPT, "grpc", "protocol must be one of graphlab, oip_json, oip_binary"),
])
def test_what_cannot_be_sent_is_a_clear_error(body, meta, protocol, says):
    with pytest.raises(BadInputError, match=says):
        http_request(body, protocol, meta)


def test_bf16_is_refused_by_the_encoder_and_bytes_counts_are_checked():
    with pytest.raises(BadInputError, match="BF16 travels only as binary"):
        oip.encode_request([("x", "BF16", [1], [1.0])])
    with pytest.raises(BadInputError, match="encode BF16 yourself"):
        oip.encode_request([("x", "BF16", [1], [1.0])], binary=True)
    with pytest.raises(BadInputError, match="has 1 values; shape \\[2\\] holds 2"):
        oip.encode_request([("x", "FP32", [2], [1.0])])


def test_hey_sends_a_binary_body_with_the_protocols_headers(tmp_path):
    cmd = _hey_command("hey", "http://x/v2/models/m/infer", tmp_path / "b.bin", 4, 1.0, "application/octet-stream",
                       (("Inference-Header-Content-Length", "93"),))
    assert cmd[cmd.index("-T") + 1] == "application/octet-stream"
    assert cmd[cmd.index("-H") + 1] == "Inference-Header-Content-Length: 93"
    assert "-H" not in _hey_command("hey", "u", tmp_path / "b.json", 1, 1.0)


def test_a_plan_speaks_the_protocol_over_http_only():
    assert LoadPlan("mlp", transport="http", url="http://x:1", protocol="oip_binary").protocol == "oip_binary"
    with pytest.raises(BadInputError, match="over HTTP only"):
        LoadPlan("mlp", protocol="oip_json")
    with pytest.raises(BadInputError, match="protocol must be one of"):
        LoadPlan("mlp", transport="http", url="http://x:1", protocol="v2")


# -- over real sockets -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_open_loop_over_http_in_each_protocol_is_answered_200(eager_mlp_server, protocol):
    from graphlab.loadtest.api import run_plan

    plan = LoadPlan("mlp", rates=(40,), duration_s=0.5, transport="http", url=eager_mlp_server.base_url,
                    protocol=protocol)
    result = run_plan(plan, gl.ServeConfig(device="cpu"), progress=False)
    (point,) = result.points
    assert point.sent > 0 and point.ok == point.sent and point.failed == 0 and not point.refused, point
    assert result.conditions["protocol"] == protocol
    if protocol == "graphlab":  # graphlab's answers carry the service's own timings; the protocol's do not
        assert point.stages_us["gpu"]
    else:
        assert point.stages_us["gpu"] == {} and point.latency_us["p50"] > 0


@pytest.mark.parametrize("client", ["raw", "httpx"])
def test_a_protocol_refusal_is_counted_by_its_status(eager_mlp_server, client):
    if client == "raw":
        pytest.importorskip("httptools")
    from graphlab.loadtest.loadgen import HTTPTransport, run_in_fresh_loop

    meta = eager_mlp_server.get_json("/v2/models/mlp")

    async def go():
        send = HTTPTransport(eager_mlp_server.base_url, client=client, protocol="oip_binary", model=meta)
        try:
            return [await send(b) for b in ({"vectors": [[0.5] * 256]}, {"vectors": [[0.5] * 255]})]
        finally:
            await send.aclose()

    (ok, ok_data), (bad, bad_data) = run_in_fresh_loop(go)
    assert (ok, ok_data) == (200, {})
    assert bad == 400 and bad_data["error"] == "protocol_400" and "[1, 255]" in bad_data["detail"]
