"""The Open Inference Protocol (KServe v2) without tensors: routes, datatypes, request checks, binary framing.

The protocol Triton, KServe, Seldon MLServer and TorchServe speak, beside graphlab's own JSON (`/v1/infer`):

    GET  /v2/health/live, /v2/health/ready       200 when live / ready, else 503
    GET  /v2                                     server metadata: name, version, extensions
    GET  /v2/models/{name}[/versions/{v}]        model metadata: inputs and outputs (name, datatype, shape; -1: any)
    GET  /v2/models/{name}[/versions/{v}]/ready  200 when it takes traffic, else 503
    POST /v2/models/{name}[/versions/{v}]/infer  {"id", "inputs": [{name, shape, datatype, data}], "outputs",
                                                 "parameters"} -> {"model_name", "id", "outputs": [...]}

The binary tensor data extension: the request's JSON head is the first `Inference-Header-Content-Length` bytes
of the body, and each input with `parameters.binary_data_size` takes that many raw little-endian bytes after it,
in order (BYTES: each element a 4-byte little-endian length, then its bytes). An output asked for with
`parameters.binary_data: true` (or every output, with the request's `parameters.binary_data_output: true`)
comes back the same way, its size in its `parameters.binary_data_size`.

Every check here is on the outline (fields, types, byte counts), cheap enough for the event loop; the numbers
are checked where they become tensors (`graphlab.serve.served_model.oip_tensor`). A refusal is a
`BadRequestError` whose message names the input; the app answers it 400 `{"error": "<message>"}`.

    >>> head = b'{"inputs":[{"name":"x","shape":[1,2],"datatype":"FP32","parameters":{"binary_data_size":8}}]}'
    >>> request = parse_request(*split_body(head + bytes(8), str(len(head)).encode()))
    >>> request.inputs[0].shape, len(request.inputs[0].raw)
    ((1, 2), 8)

Pure Python: no torch here.
"""
from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass, field
from typing import Any

from graphlab.errors import BadInputError, BadRequestError

PREFIX = "/v2"
#: the request and response header that says how many bytes of the body are the JSON head
HEADER_LENGTH = "Inference-Header-Content-Length"
#: bytes per element of each datatype (BYTES: variable, 0 here)
DATATYPES: dict[str, int] = {"BOOL": 1, "UINT8": 1, "UINT16": 2, "UINT32": 4, "UINT64": 8, "INT8": 1, "INT16": 2,
                             "INT32": 4, "INT64": 8, "FP16": 2, "FP32": 4, "FP64": 8, "BF16": 2, "BYTES": 0}
#: datatypes JSON cannot carry (as Triton: BF16 only as binary data)
BINARY_ONLY = frozenset({"BF16"})
#: a torch dtype's name (str(dtype) without "torch.") -> the protocol's datatype
FROM_TORCH = {"bool": "BOOL", "uint8": "UINT8", "int8": "INT8", "int16": "INT16", "int32": "INT32", "int64": "INT64",
              "float16": "FP16", "float32": "FP32", "float64": "FP64", "bfloat16": "BF16"}
#: what `/v2` says the server supports
EXTENSIONS = ("binary_tensor_data",)
#: the /metrics label of each route (the model's name and version as placeholders: bounded label values)
ROUTES = ("/v2", "/v2/health/live", "/v2/health/ready", "/v2/models/{name}", "/v2/models/{name}/ready",
          "/v2/models/{name}/infer")
#: a request's fields: the protocol's, and the model's name and version that KServe's SDK sends in the body too
_REQUEST_FIELDS = ("id", "model_name", "model_version", "inputs", "outputs", "parameters")
_INPUT_FIELDS = ("name", "shape", "datatype", "data", "parameters")


@dataclass(frozen=True)
class Route:
    """A /v2 path, read: `what` is "live", "ready", "server", "model", "model_ready" or "infer"; `model` and
    `version` from the path ("" when not in it); `label` the /metrics name."""

    what: str
    model: str = ""
    version: str = ""

    @property
    def label(self) -> str:
        return {"live": ROUTES[1], "ready": ROUTES[2], "server": ROUTES[0], "model": ROUTES[3],
                "model_ready": ROUTES[4], "infer": ROUTES[5]}[self.what]


def route(path: str) -> Route | None:
    """The /v2 route `path` names, or None (not a protocol path).

        >>> route("/v2/models/mlp/versions/1/infer")
        Route(what='infer', model='mlp', version='1')
    """
    if path == PREFIX:
        return Route("server")
    if not path.startswith(PREFIX + "/"):
        return None
    parts = path[len(PREFIX) + 1:].split("/")
    if parts == ["health", "live"]:
        return Route("live")
    if parts == ["health", "ready"]:
        return Route("ready")
    if len(parts) < 2 or parts[0] != "models" or not parts[1]:
        return None
    model, rest = parts[1], parts[2:]
    version = ""
    if len(rest) >= 2 and rest[0] == "versions" and rest[1]:
        version, rest = rest[1], rest[2:]
    what = {(): "model", ("ready",): "model_ready", ("infer",): "infer"}.get(tuple(rest))
    return Route(what, model, version) if what else None


@dataclass(frozen=True)
class InputTensor:
    """One input of a request: `data` (JSON: nested or flat lists, or strings for BYTES) or `raw` (binary bytes)."""

    name: str
    datatype: str
    shape: tuple[int, ...]
    data: Any = None
    raw: bytes | memoryview | None = None

    @property
    def elements(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True)
class InferRequest:
    """A protocol request whose outline passed the checks.

    Attributes:
        outputs: the outputs asked for by name, in order, each with whether it comes back as binary data;
            empty: every output of the model.
        binary_outputs: the request's `parameters.binary_data_output`: outputs not named come back binary.
        model_name, model_version: what the body says, when it says (KServe's SDK does): the app holds them to
            the path's.
    """

    inputs: tuple[InputTensor, ...]
    id: str | None = None
    outputs: tuple[tuple[str, bool], ...] = ()
    parameters: dict[str, Any] = field(default_factory=dict)
    binary_outputs: bool = False
    model_name: str | None = None
    model_version: str | None = None

    def wants(self, names: tuple[str, ...]) -> tuple[tuple[str, bool], ...]:
        """The outputs to answer with, of the model's `names`: (name, binary) each."""
        if self.outputs:
            return self.outputs
        return tuple((name, self.binary_outputs) for name in names)


def split_body(raw: bytes, header_length: bytes | None) -> tuple[bytes, bytes | memoryview]:
    """(JSON head, binary tail) of a request body, by its `Inference-Header-Content-Length` header (None: all JSON).

    The tail is a view of `raw`, not a copy (nor are the inputs' bytes `parse_request` cuts from it): the event loop
    reads the head only, and the tensors are made from the body's own bytes on a pre-processing thread.

    Raises:
        BadRequestError: the header is not a whole number of bytes, or past the body's end.
    """
    if header_length is None:
        return raw, b""
    text = header_length.strip()
    if not text.isdigit():
        raise BadRequestError(f"{HEADER_LENGTH} must be a whole number of bytes, got "
                              f"{header_length.decode('latin-1')[:40]!r}")
    size = int(text)
    if size > len(raw):
        raise BadRequestError(f"{HEADER_LENGTH} is {size} bytes but the body is {len(raw)}: the JSON head cannot "
                              "end past the body")
    return raw[:size], memoryview(raw)[size:]


def parse_request(head: Any, tail: bytes | memoryview = b"") -> InferRequest:
    """Check a request's decoded JSON head and cut the binary `tail` into its inputs' bytes.

    `head` may be bytes (decoded here) or the decoded object. Raises BadRequestError naming what is wrong: not an
    object, an unknown field, an input without name/shape/datatype, a shape that is not whole numbers >= 0, an
    unknown datatype, BF16 as JSON, data and binary_data_size both or neither, binary sizes that do not add up to
    the bytes after the head, a fixed-size input whose byte count is not its shape times its datatype's size.
    """
    if isinstance(head, (bytes, bytearray, memoryview)):
        try:
            head = json.loads(bytes(head))
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise BadRequestError(f"the request's JSON head is not JSON: {str(exc)[:120]}") from None
    if not isinstance(head, dict):
        raise BadRequestError(f"the request must be a JSON object, got {_json_type(head)}")
    _known_fields(head, _REQUEST_FIELDS, "", "a request")
    request_id = head.get("id")
    if request_id is not None and not isinstance(request_id, str):
        raise BadRequestError(f"id must be a string, got {_json_type(request_id)}")
    for key in ("model_name", "model_version"):
        if head.get(key) is not None and not isinstance(head[key], str):
            raise BadRequestError(f"{key} must be a string, got {_json_type(head[key])}")
    parameters = _parameters(head.get("parameters"), "parameters")
    binary_outputs = parameters.get("binary_data_output", False)
    if not isinstance(binary_outputs, bool):
        raise BadRequestError(f"parameters.binary_data_output must be true or false, got {binary_outputs!r}")
    given = head.get("inputs")
    if not isinstance(given, list) or not given:
        raise BadRequestError("inputs must be a non-empty list of tensors ({name, shape, datatype, data})")
    inputs, offset = [], 0
    for i, entry in enumerate(given):
        tensor, size = _input(entry, i, tail, offset)
        inputs.append(tensor)
        offset += size
    if offset != len(tail):
        raise BadRequestError(f"the body has {len(tail)} bytes after its JSON head but the inputs' binary_data_size "
                              f"add up to {offset}")
    names = [t.name for t in inputs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise BadRequestError(f"input {twice[0]!r} is given twice")
    return InferRequest(tuple(inputs), request_id, _outputs(head.get("outputs")), parameters, binary_outputs,
                        head.get("model_name"), head.get("model_version"))


def _known_fields(entry: dict[str, Any], known: tuple[str, ...], where: str, what: str) -> None:
    """BadRequestError naming the first field of `entry` (in order) that `what` (e.g. "an input") does not have."""
    unknown = sorted(k for k in entry if k not in known)
    if unknown:
        raise BadRequestError(f"{where}unknown field {unknown[0]!r}; {what} has {', '.join(known)}")


def _input(entry: Any, i: int, tail: bytes | memoryview, offset: int) -> tuple[InputTensor, int]:
    where = f"inputs[{i}]"
    if not isinstance(entry, dict):
        raise BadRequestError(f"{where} must be an object with name, shape, datatype, data")
    _known_fields(entry, _INPUT_FIELDS, f"{where} has ", "an input")
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise BadRequestError(f"{where}.name must be a non-empty string, got {_json_type(name)}")
    where = f"input {name!r}"
    shape = entry.get("shape")
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                              for d in shape):
        raise BadRequestError(f"{where}: shape must be a list of whole numbers >= 0, got {shape!r}"[:200])
    datatype = entry.get("datatype")
    if datatype not in DATATYPES:
        raise BadRequestError(f"{where}: datatype {str(datatype)[:40]!r} is not one of {', '.join(DATATYPES)}")
    parameters = _parameters(entry.get("parameters"), f"{where}.parameters")
    size = parameters.get("binary_data_size")
    has_data = "data" in entry
    if size is None:
        if not has_data:
            raise BadRequestError(f"{where} has neither data nor parameters.binary_data_size")
        if datatype in BINARY_ONLY:
            raise BadRequestError(f"{where}: {datatype} travels only as binary data (parameters.binary_data_size)")
        return InputTensor(name, datatype, tuple(shape), data=entry["data"]), 0
    if has_data:
        raise BadRequestError(f"{where} has both data and parameters.binary_data_size: send one")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise BadRequestError(f"{where}: binary_data_size must be a whole number of bytes >= 0, got {size!r}")
    if offset + size > len(tail):
        raise BadRequestError(f"{where}: binary_data_size is {size} but only {len(tail) - offset} bytes are left "
                              "after the JSON head and the inputs before it")
    elements = math.prod(shape)
    width = DATATYPES[datatype]
    if width and size != elements * width:
        raise BadRequestError(f"{where}: binary_data_size is {size} bytes; shape {shape} of {datatype} is "
                              f"{elements * width}")
    return InputTensor(name, datatype, tuple(shape), raw=tail[offset: offset + size]), size


def _outputs(given: Any) -> tuple[tuple[str, bool], ...]:
    if given is None:
        return ()
    if not isinstance(given, list):
        raise BadRequestError(f"outputs must be a list of {{name, parameters}}, got {_json_type(given)}")
    out = []
    for i, entry in enumerate(given):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise BadRequestError(f"outputs[{i}] must be an object with a name")
        _known_fields(entry, ("name", "parameters"), f"outputs[{i}] has ", "an output")
        parameters = _parameters(entry.get("parameters"), f"outputs[{i}].parameters")
        binary = parameters.get("binary_data", False)
        if not isinstance(binary, bool):
            raise BadRequestError(f"outputs[{i}].parameters.binary_data must be true or false, got {binary!r}")
        out.append((entry["name"], binary))
    return tuple(out)


def _parameters(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadRequestError(f"{where} must be an object, got {_json_type(value)}")
    return value


def split_bytes_elements(raw: bytes | memoryview, count: int, where: str) -> list[bytes]:
    """BYTES binary data: `count` elements, each a 4-byte little-endian length then its bytes, filling `raw`."""
    out, at = [], 0
    for i in range(count):
        if at + 4 > len(raw):
            raise BadRequestError(f"{where}: binary data ends inside element {i}'s 4-byte length ({count} elements "
                                  "expected)")
        (size,) = struct.unpack_from("<I", raw, at)
        at += 4
        if at + size > len(raw):
            raise BadRequestError(f"{where}: element {i} says {size} bytes but {len(raw) - at} are left")
        out.append(bytes(raw[at: at + size]))
        at += size
    if at != len(raw):
        raise BadRequestError(f"{where}: {len(raw) - at} bytes left after its {count} elements")
    return out


def join_bytes_elements(items: list[bytes]) -> bytes:
    """BYTES elements as binary data: each a 4-byte little-endian length then its bytes."""
    return b"".join(struct.pack("<I", len(item)) + item for item in items)


#: struct's little-endian format letter of each fixed-size datatype (BF16 has none: encode it yourself)
STRUCT_FORMATS = {"BOOL": "?", "UINT8": "B", "UINT16": "H", "UINT32": "I", "UINT64": "Q", "INT8": "b", "INT16": "h",
                  "INT32": "i", "INT64": "q", "FP16": "e", "FP32": "f", "FP64": "d"}


def encode_request(inputs: list[tuple[str, str, list[int], list[Any]]], *, binary: bool = False,
                   outputs: tuple[str, ...] = (), parameters: dict[str, Any] | None = None,
                   request_id: str | None = None) -> tuple[bytes, int | None]:
    """A request body as a client sends it, and the length of its JSON head (the request's
    `Inference-Header-Content-Length`; None: all JSON).

    `inputs`: (name, datatype, shape, values) each, values flat in row-major order (BYTES: str or bytes).
    `binary`: every input as binary data after the head, and every output named in `outputs` asked back as binary
    (else as JSON). For load generators and tests; a client of its own uses its library (tritonclient).

        >>> body, head = encode_request([("x", "FP32", [1, 2], [0.5, 1.0])], binary=True)
        >>> head, body[head:] == struct.pack("<2f", 0.5, 1.0)
        (93, True)
    """
    entries: list[dict[str, Any]] = []
    tails: list[bytes] = []
    for name, datatype, shape, values in inputs:
        entry: dict[str, Any] = {"name": name, "shape": list(shape), "datatype": datatype}
        if datatype not in DATATYPES:
            raise BadInputError(f"input {name!r}: datatype {datatype!r} is not one of {', '.join(DATATYPES)}")
        if len(values) != math.prod(shape):
            raise BadInputError(f"input {name!r} has {len(values)} values; shape {list(shape)} holds "
                                  f"{math.prod(shape)}")
        if not binary:
            if datatype in BINARY_ONLY:
                raise BadInputError(f"input {name!r}: {datatype} travels only as binary data")
            entry["data"] = [v.decode("utf-8") if isinstance(v, bytes) else v for v in values] \
                if datatype == "BYTES" else list(values)
        else:
            if datatype == "BYTES":
                raw = join_bytes_elements([v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in values])
            elif datatype in STRUCT_FORMATS:
                raw = struct.pack(f"<{len(values)}{STRUCT_FORMATS[datatype]}", *values)
            else:
                raise BadInputError(f"input {name!r}: encode {datatype} yourself (no struct format for it)")
            entry["parameters"] = {"binary_data_size": len(raw)}
            tails.append(raw)
        entries.append(entry)
    head: dict[str, Any] = {}
    if request_id is not None:
        head["id"] = request_id
    head["inputs"] = entries
    if outputs:
        head["outputs"] = [{"name": o, "parameters": {"binary_data": binary}} for o in outputs]
    if parameters:
        head["parameters"] = dict(parameters)
    text = json.dumps(head, allow_nan=False, separators=(",", ":")).encode()
    return (b"".join([text, *tails]), len(text)) if binary else (text, None)


def decode_tensor(raw: bytes | memoryview, datatype: str, count: int) -> list[Any]:
    """Binary data as a flat list of `count` values (BYTES: bytes each; BF16: floats), for a client reading an
    answer. BadRequestError when the byte count is not `count` values of `datatype`.

        >>> decode_tensor(struct.pack("<2q", 7, -1), "INT64", 2)
        [7, -1]
    """
    if datatype == "BYTES":
        return split_bytes_elements(raw, count, "the output")
    width = DATATYPES.get(datatype)
    if not width or len(raw) != width * count:
        raise BadRequestError(f"{len(raw)} bytes are not {count} values of {datatype}")
    if datatype == "BF16":  # the top half of a float32
        return [v[0] for v in struct.iter_unpack("<f", b"".join(b"\0\0" + bytes(raw[i: i + 2])
                                                                    for i in range(0, len(raw), 2)))]
    return list(struct.unpack(f"<{count}{STRUCT_FORMATS[datatype]}", raw))


@dataclass(frozen=True)
class OutputTensor:
    """One output of an answer: `data` (a flat list, JSON) or `raw` (binary bytes)."""

    name: str
    datatype: str
    shape: tuple[int, ...]
    data: list[Any] | None = None
    raw: bytes | None = None

    def head(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "datatype": self.datatype, "shape": list(self.shape)}
        if self.raw is not None:
            out["parameters"] = {"binary_data_size": len(self.raw)}
        else:
            out["data"] = self.data
        return out


def response_body(model_name: str, request_id: str | None, outputs: list[OutputTensor]) -> tuple[bytes, int | None]:
    """An answer's body and, when some output is binary, the length of its JSON head (the response's
    `Inference-Header-Content-Length`; None: all JSON). Raises ValueError when a JSON output is not finite."""
    head: dict[str, Any] = {"model_name": model_name, "model_version": "1"}
    if request_id is not None:
        head["id"] = request_id
    head["outputs"] = [o.head() for o in outputs]
    text = json.dumps(head, allow_nan=False, separators=(",", ":")).encode()
    binary = [o.raw for o in outputs if o.raw is not None]
    if not binary:
        return text, None
    return b"".join([text, *binary]), len(text)


def error_body(message: str) -> bytes:
    """The protocol's error: `{"error": "<message>"}`."""
    return json.dumps({"error": " ".join(message.split())}, separators=(",", ":")).encode()


def tensor_metadata(name: str, datatype: str, shape: list[int]) -> dict[str, Any]:
    """One input's or output's entry in model metadata (-1: any size, the batch first)."""
    return {"name": name, "datatype": datatype, "shape": list(shape)}


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
             float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


__all__ = ["BINARY_ONLY", "DATATYPES", "EXTENSIONS", "FROM_TORCH", "HEADER_LENGTH", "InferRequest", "InputTensor",
           "OutputTensor", "PREFIX", "ROUTES", "Route", "STRUCT_FORMATS", "decode_tensor", "encode_request", "error_body",
           "join_bytes_elements", "parse_request",
           "response_body", "route", "split_body", "split_bytes_elements", "tensor_metadata"]
