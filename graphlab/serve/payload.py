"""Request bodies: what the service accepts, checked before anything is queued.

Every check here is cheap (no decoding, no tensors), so a bad request costs the service almost
nothing and is answered at once: a wrong shape or type is a `BadRequestError` (HTTP 422) whose
message names the field; a request bigger than the service takes is a `RequestTooLargeError` (413).

Bodies, by the kind of model served (`top_k` is optional everywhere, default 5):

    tensor (your own model) {"inputs": [row, ...]}  or {"inputs": {"ids": [row, ...], "mask": [row, ...]}}
                            (see `parse_tensor_body`; a row is nested lists of the example's row shape)

    text   (gpt)            {"texts": ["hello", "graphs"], "top_k": 5}      or {"text": "hello"}
    image  (cnn, resnet18)  {"images": [{"height": 96, "width": 128, "pixels_b64": "<H*W*3 RGB bytes>"}]}
    vector (mlp)            {"vectors": [[0.1, ...256 numbers...]]}

    >>> from graphlab.serve.payload import Limits, parse_body
    >>> req = parse_body({"texts": ["hi"], "top_k": 3}, "text", Limits(max_rows=8, seq_len=64))
    >>> req.rows, req.top_k
    (1, 3)

Pure Python: no torch here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graphlab.errors import BadInputError, BadRequestError, RequestTooLargeError

DEFAULT_TOP_K = 5
KINDS = ("text", "image", "vector", "tensor")
_FIELDS = {"text": ("texts", "text"), "image": ("images",), "vector": ("vectors",)}
#: float32's largest finite value: a JSON number beyond it cannot reach a float32 model
FLOAT32_MAX = 3.4028234663852886e38
#: JSON characters one number (or one prompt byte) of a valid body may take, its separator and brackets included:
#: "-3.4028234663852886e+38, " is 25, a prompt's byte escaped as "\u00e9" 6
CHARS_PER_NUMBER = 32


@dataclass(frozen=True)
class Limits:
    """What one request may carry.

    Attributes:
        max_rows: most rows (texts, images, vectors) in one request.
        seq_len: longest prompt in tokens (text: one token per UTF-8 byte).
        max_image_side: longest image side in pixels (image).
        features: numbers per vector (vector).
        max_top_k: largest top_k.
    """

    max_rows: int
    seq_len: int = 64
    max_image_side: int = 2048
    features: int = 256
    max_top_k: int = 20


@dataclass(frozen=True)
class ParsedRequest:
    """A request that passed the checks: `items` are texts, image dicts or vectors, one per row."""

    kind: str
    items: tuple[Any, ...]
    top_k: int
    count: int = -1  # rows, when `items` is not one item per row (the "tensor" kind: one entry per input)
    oip: Any = None  # the Open Inference Protocol request (graphlab.serve.oip.InferRequest) when it came that way

    @property
    def rows(self) -> int:
        return self.count if self.count >= 0 else len(self.items)


def parse_body(body: Any, kind: str, limits: Limits) -> ParsedRequest:
    """Check a decoded JSON body for a model of `kind` ("text", "image", "vector").

    Raises:
        BadInputError: `kind` is not a request kind (the caller's mistake, not the client's).
        BadRequestError: not an object, an unknown or missing field, a wrong type (HTTP 422).
        RequestTooLargeError: too many rows, a prompt longer than `seq_len`, an image side over the limit (413).
    """
    if kind not in KINDS or kind == "tensor":
        raise BadInputError(f"kind must be one of {', '.join(KINDS)} (the served model's request kind), got {kind!r}")
    if not isinstance(body, dict):
        raise BadRequestError(f"the body must be a JSON object, got {_json_type(body)}")
    allowed = (*_FIELDS[kind], "top_k")
    unknown = sorted(k for k in body if k not in allowed)
    if unknown:
        raise BadRequestError(f"unknown field {unknown[0]!r}; this model takes {', '.join(allowed)}")
    top_k = body.get("top_k", DEFAULT_TOP_K)
    if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= limits.max_top_k:
        raise BadRequestError(f"top_k must be an integer from 1 to {limits.max_top_k}, got {top_k!r}")
    if kind == "text":
        items = _text_items(body, limits)
    elif kind == "image":
        items = _image_items(body, limits)
    else:
        items = _vector_items(body, limits)
    return ParsedRequest(kind, tuple(items), top_k)


def _rows(body: dict[str, Any], name: str, limits: Limits) -> list[Any]:
    if name not in body:
        raise BadRequestError(f"missing field {name!r}")
    rows = body[name]
    if not isinstance(rows, list):
        raise BadRequestError(f"{name} must be a list, got {_json_type(rows)}")
    if not rows:
        raise BadRequestError(f"{name} is empty: send at least one")
    if len(rows) > limits.max_rows:
        raise RequestTooLargeError(f"{name} has {len(rows)} rows; this service takes at most {limits.max_rows} "
                                   "per request: split it")
    return rows


def _text_items(body: dict[str, Any], limits: Limits) -> list[str]:
    if "text" in body and "texts" in body:
        raise BadRequestError("send either 'text' or 'texts', not both")
    if "text" in body:
        texts, name = [body["text"]], "text"
    else:
        texts, name = _rows(body, "texts", limits), "texts"
    for i, text in enumerate(texts):
        where = name if name == "text" else f"texts[{i}]"
        if not isinstance(text, str):
            raise BadRequestError(f"{where} must be a string, got {_json_type(text)}")
        if not text:
            raise BadRequestError(f"{where} is empty: send at least one character")
        n_tokens = len(text.encode("utf-8", errors="surrogatepass"))
        if n_tokens > limits.seq_len:
            raise RequestTooLargeError(f"{where} is {n_tokens} tokens; the model reads at most {limits.seq_len}")
    return texts


def _image_items(body: dict[str, Any], limits: Limits) -> list[dict[str, Any]]:
    images = _rows(body, "images", limits)
    for i, image in enumerate(images):
        where = f"images[{i}]"
        if not isinstance(image, dict):
            raise BadRequestError(f"{where} must be an object with height, width, pixels_b64")
        unknown = sorted(k for k in image if k not in ("height", "width", "pixels_b64"))
        if unknown:
            raise BadRequestError(f"{where} has unknown field {unknown[0]!r}; expected height, width, pixels_b64")
        for side in ("height", "width"):
            value = image.get(side)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise BadRequestError(f"{where}.{side} must be a positive integer, got {value!r}")
            if value > limits.max_image_side:
                raise RequestTooLargeError(f"{where}.{side} is {value} pixels; the service takes at most "
                                           f"{limits.max_image_side}")
        pixels = image.get("pixels_b64")
        if not isinstance(pixels, str):
            raise BadRequestError(f"{where}.pixels_b64 must be a base64 string of height*width*3 RGB bytes")
        expected = 4 * -(-image["height"] * image["width"] * 3 // 3)
        if len(pixels) != expected:
            raise BadRequestError(f"{where}.pixels_b64 has {len(pixels)} characters; a {image['height']}x"
                                  f"{image['width']} RGB image is {expected} in base64")
    return images


def _vector_items(body: dict[str, Any], limits: Limits) -> list[list[float]]:
    vectors = _rows(body, "vectors", limits)
    for i, vector in enumerate(vectors):
        if not isinstance(vector, list) or len(vector) != limits.features:
            got = _count(len(vector), "number") if isinstance(vector, list) else _json_type(vector)
            raise BadRequestError(f"vectors[{i}] must be a list of {limits.features} numbers, got {got}")
        for j, v in enumerate(vector):
            if not isinstance(v, (int, float)) or isinstance(v, bool):
                raise BadRequestError(f"vectors[{i}][{j}] must be a number, got {_json_type(v)}")
            if not -FLOAT32_MAX <= v <= FLOAT32_MAX:  # NaN fails both comparisons
                raise BadRequestError(f"vectors[{i}][{j}] is {_number(v)}: send finite numbers within float32's "
                                      f"range (|x| <= {FLOAT32_MAX:.4g})")
    return vectors


def parse_tensor_body(body: Any, names: tuple[str, ...], max_rows: int, *, max_top_k: int = 0) -> ParsedRequest:
    """Check a body for a model of your own (kind "tensor"): `{"inputs": rows}` for a model of one input, or
    `{"inputs": {"<name>": rows, ...}}` (every input, by name); `top_k` only when `max_top_k` > 0.

    Only the outline is checked here (cheap, on the event loop): the fields, one list of rows per input, the
    same number of rows for each. The numbers themselves (shape, type, finite, in range) are checked when they
    become tensors, on a pre-processing thread (`graphlab.serve.served_model.rows_to_tensor`).
    """
    if not isinstance(body, dict):
        raise BadRequestError(f"the body must be a JSON object, got {_json_type(body)}")
    allowed = ("inputs", "top_k") if max_top_k > 0 else ("inputs",)
    unknown = sorted(k for k in body if k not in allowed)
    if unknown:
        raise BadRequestError(f"unknown field {unknown[0]!r}; this model takes {', '.join(allowed)}")
    top_k = 0
    if max_top_k > 0:
        top_k = body.get("top_k", min(DEFAULT_TOP_K, max_top_k))
        if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= max_top_k:
            raise BadRequestError(f"top_k must be an integer from 1 to {max_top_k}, got {top_k!r}")
    if "inputs" not in body:
        raise BadRequestError("missing field 'inputs'")
    given = body["inputs"]
    if isinstance(given, list) and len(names) == 1:
        given = {names[0]: given}
    if not isinstance(given, dict):
        want = "a list of rows" if len(names) == 1 else "an object with " + ", ".join(names)
        raise BadRequestError(f"inputs must be {want}, got {_json_type(given)}")
    unknown = sorted(k for k in given if k not in names)
    if unknown:
        raise BadRequestError(f"unknown input {unknown[0]!r}; this model takes {', '.join(names)}")
    rows = -1
    per_input = []
    for name in names:
        where = "inputs" if len(names) == 1 else f"inputs.{name}"
        if name not in given:
            raise BadRequestError(f"missing input {name!r}: this model takes {', '.join(names)}")
        value = given[name]
        if not isinstance(value, list):
            raise BadRequestError(f"{where} must be a list of rows, got {_json_type(value)}")
        if not value:
            raise BadRequestError(f"{where} is empty: send at least one row")
        if len(value) > max_rows:
            raise RequestTooLargeError(f"{where} has {len(value)} rows; this service takes at most {max_rows} "
                                       "per request: split it")
        if rows >= 0 and len(value) != rows:
            raise BadRequestError(f"{where} has {len(value)} rows but {names[0]} has {rows}: one row of each "
                                  "input per example")
        rows = len(value)
        per_input.append(value)
    return ParsedRequest("tensor", tuple(per_input), top_k, count=rows)


def largest_body_bytes(numbers: int) -> int:
    """The most bytes a valid body carrying `numbers` numbers (or prompt bytes) takes as JSON, with margin: twice
    `CHARS_PER_NUMBER` each (whitespace, longer spellings of a number) and 4 KiB for the field names and top_k.

        >>> largest_body_bytes(32 * 64)     # 32 prompts of 64 bytes
        135168
    """
    return 2 * CHARS_PER_NUMBER * numbers + 4096


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _number(value: Any) -> str:
    if isinstance(value, int):
        text = str(value) if abs(value) < 10**30 else f"an integer of {len(str(abs(value)))} digits"
        return text
    return repr(value).replace("inf", "Infinity").replace("nan", "NaN")


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
             float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


__all__ = ["CHARS_PER_NUMBER", "DEFAULT_TOP_K", "FLOAT32_MAX", "KINDS", "Limits", "ParsedRequest", "largest_body_bytes",
           "parse_body", "parse_tensor_body"]
