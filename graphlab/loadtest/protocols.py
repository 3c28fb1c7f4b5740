"""One request as a load generator puts it on the wire, in each protocol the service speaks: graphlab's own JSON
(`POST /v1/infer`), and the Open Inference Protocol (KServe v2, `POST /v2/models/{name}/infer`) with JSON tensors or
with binary tensor data (`Inference-Header-Content-Length`).

A load test writes its bodies once in graphlab's own JSON (`{"texts": [...]}`, `{"vectors": [...]}`,
`{"inputs": [...]}`, with `top_k`); `http_request` turns one into any protocol, given the model's protocol metadata
(what `GET /v2/models/{name}` answers: its name, inputs and outputs), so every protocol carries the same numbers and
asks for the same answer (a top-k model: `top_k_ids` and `top_k_probs`, as /v1's results).

    >>> meta = {"name": "mlp", "inputs": [{"name": "vectors", "datatype": "FP32", "shape": [-1, 2]}],
    ...         "outputs": [{"name": "scores"}, {"name": "top_k_ids"}, {"name": "top_k_probs"}]}
    >>> request = http_request({"vectors": [[0.5, 1.0]], "top_k": 3}, "oip_binary", meta)
    >>> request.path, request.headers, len(request.content) - int(request.headers[0][1])
    ('/v2/models/mlp/infer', (('Inference-Header-Content-Length', '248'),), 8)

Pure Python: no torch here (the numbers are packed by `graphlab.serve.oip.encode_request`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from graphlab.errors import BadInputError
from graphlab.serve import oip
from graphlab.serve.config import INFER_PATH

#: the protocols a load test can speak, graphlab's own first
PROTOCOLS = ("graphlab", "oip_json", "oip_binary")
#: each protocol in words
LABELS = {"graphlab": "graphlab's JSON (/v1/infer)", "oip_json": "Open Inference Protocol, JSON tensors",
          "oip_binary": "Open Inference Protocol, binary tensors"}
#: the outputs a top-k model is asked for: the answer /v1/infer gives (ids and probabilities, best first)
TOP_K_OUTPUTS = ("top_k_ids", "top_k_probs")


@dataclass(frozen=True)
class HttpRequest:
    """A POST as it goes on the wire: its path, its body, its Content-Type and any other headers."""

    path: str
    content: bytes
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()


def check_protocol(protocol: str) -> str:
    """`protocol` if it is one of `PROTOCOLS`, else BadInputError naming them."""
    if protocol not in PROTOCOLS:
        raise BadInputError(f"protocol must be one of {', '.join(PROTOCOLS)}, got {protocol!r}")
    return protocol


def http_request(body: dict[str, Any], protocol: str, model: dict[str, Any] | None = None) -> HttpRequest:
    """`body` (graphlab's own JSON) as `protocol` sends it; `model`: the model's protocol metadata (needed for the
    protocol's two forms: its name, its inputs' names and datatypes, its outputs)."""
    check_protocol(protocol)
    if protocol == "graphlab":
        return HttpRequest(INFER_PATH, json.dumps(body, separators=(",", ":")).encode("utf-8"))
    if not model or "name" not in model or not model.get("inputs"):
        raise BadInputError(f"protocol {protocol!r} needs the model's metadata (GET /v2/models/{{name}}: name, inputs)")
    inputs = _inputs(body, model["inputs"])
    names = [o.get("name") for o in model.get("outputs", [])]
    top_k = all(n in names for n in TOP_K_OUTPUTS)
    outputs = TOP_K_OUTPUTS if top_k else tuple(names[:1])
    parameters = {"top_k": body["top_k"]} if top_k and "top_k" in body else None
    binary = protocol == "oip_binary"
    content, head_length = oip.encode_request(inputs, binary=binary, outputs=outputs, parameters=parameters)
    path = f"{oip.PREFIX}/models/{model['name']}/infer"
    if head_length is None:
        return HttpRequest(path, content)
    return HttpRequest(path, content, "application/octet-stream", ((oip.HEADER_LENGTH, str(head_length)),))


def _inputs(body: dict[str, Any], signature: list[dict[str, Any]]) -> list[tuple[str, str, list[int], list[Any]]]:
    """(name, datatype, shape, flat values) per input of the model, from graphlab's own body."""
    if "images" in body:
        raise BadInputError("graphlab's image bodies (base64 pixels at any size, resized by the service) have no "
                            "protocol form here: the protocol takes UINT8 images already at the model's side")
    if "texts" in body:
        given: dict[str, Any] = {signature[0]["name"]: list(body["texts"])}
    elif "vectors" in body:
        given = {signature[0]["name"]: body["vectors"]}
    elif isinstance(body.get("inputs"), list):
        given = {signature[0]["name"]: body["inputs"]}
    elif isinstance(body.get("inputs"), dict):
        given = dict(body["inputs"])
    else:
        raise BadInputError(f"no tensors in the body (texts, vectors or inputs), got fields {sorted(body)}")
    out = []
    for spec in signature:
        name, datatype = spec["name"], spec["datatype"]
        if name not in given:
            raise BadInputError(f"the body has no input {name!r}; the model takes "
                                f"{', '.join(s['name'] for s in signature)}")
        values: list[Any] = []
        shape = _flatten(given[name], values)
        out.append((name, datatype, shape, values))
    return out


def _flatten(rows: Any, into: list[Any]) -> list[int]:
    """Nested lists -> their shape; the leaves appended to `into` in row-major order."""
    if not isinstance(rows, list):
        into.append(rows)
        return []
    shapes = [_flatten(row, into) for row in rows]
    if any(s != shapes[0] for s in shapes[1:]):
        raise BadInputError("the body's rows are ragged: every row of an input needs one shape")
    return [len(rows), *(shapes[0] if shapes else [])]


__all__ = ["HttpRequest", "LABELS", "PROTOCOLS", "TOP_K_OUTPUTS", "check_protocol", "http_request"]
