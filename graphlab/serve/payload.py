"""Request bodies: what the service accepts, checked before anything is queued.

Every check here is cheap (no decoding, no tensors), so a bad request costs the service almost
nothing and is answered at once: a wrong shape or type is a `BadRequestError` (HTTP 422) whose
message names the field; a request bigger than the service takes is a `RequestTooLargeError` (413).

Bodies, by the kind of model served (`top_k` is optional everywhere, default 5):

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
KINDS = ("text", "image", "vector")
_FIELDS = {"text": ("texts", "text"), "image": ("images",), "vector": ("vectors",)}


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

    @property
    def rows(self) -> int:
        return len(self.items)


def parse_body(body: Any, kind: str, limits: Limits) -> ParsedRequest:
    """Check a decoded JSON body for a model of `kind` ("text", "image", "vector").

    Raises:
        BadInputError: `kind` is not a request kind (the caller's mistake, not the client's).
        BadRequestError: not an object, an unknown or missing field, a wrong type (HTTP 422).
        RequestTooLargeError: too many rows, a prompt longer than `seq_len`, an image side over the limit (413).
    """
    if kind not in KINDS:
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
            got = f"{len(vector)} numbers" if isinstance(vector, list) else _json_type(vector)
            raise BadRequestError(f"vectors[{i}] must be a list of {limits.features} numbers, got {got}")
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vector):
            raise BadRequestError(f"vectors[{i}] must hold numbers only")
    return vectors


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
             float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


__all__ = ["DEFAULT_TOP_K", "KINDS", "Limits", "ParsedRequest", "parse_body"]
