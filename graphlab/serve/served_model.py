"""The model a service runs, and its protocol: how a request body becomes tensors, how outputs become JSON.

**Your own model** is a `ServedModel`: any `nn.Module`, an example input (a tensor or a tuple of tensors
whose first dimension is the batch) and the graph buckets. The service pads each batch to a bucket along
dimension 0 and replays that bucket's graph (the `gl.GraphCache` of *that* module); each bucket's padding
is checked against eager at start-up, and a model whose rows see each other is refused then, with one line.

    >>> import torch, graphlab as gl
    >>> net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    >>> served = gl.ServedModel(net, torch.randn(1, 16), buckets=[1, 2, 4, 8], answer="top_k")
    >>> served.input_names, served.row_shapes
    (('x',), ((16,),))

Its protocol (kind "tensor"): a body `{"inputs": [row, ...]}` (one input) or `{"inputs": {"<name>": [row,
...], ...}}` (several, named by `input_names`); a row is nested lists of the example's row shape (here 16
numbers). Numbers are checked where they become tensors, on a pre-processing thread: a wrong shape, a
string, NaN, Infinity, or a number outside the input's dtype (1e300 for float32, 10**400 anywhere) is a
422 naming the element (`inputs[0][3]`). The answer is `{"outputs": [row, ...]}` (the model's output rows,
as nested lists) or, with `answer="top_k"`, `{"results": [[{"id", "label", "prob"}, ...] per row]}`; an
output that is not finite is a 500 naming the request, never a broken response.

**The zoo models** are examples of the same protocol with request kinds of their own
(`graphlab.serve.models.ServedZooModel`); their specs here wrap each zoo model so that its whole forward, input to
scores, is one graph.

The wrappers move work from the CPU stages onto the GPU and into the captured graph:

- gpt: `NextTokenLogits` takes the padded token ids and the index of each prompt's last token, and
  returns only the logits at that position (batch, vocab): the gather is captured with the model,
  and the host copies back 2 KiB per row instead of 128 KiB.
- cnn, resnet18: `ImageClassifier` takes uint8 RGB images already resized on the CPU and normalises
  them on the GPU (a quarter of the bytes over PCIe that float32 would be).
- mlp: the model as is.

    >>> from graphlab.serve.served_model import served_model
    >>> spec = served_model("gpt")
    >>> spec.kind, spec.seq_len, spec.classes
    ('text', 64, 512)
    >>> module = spec.build(device="cpu")                    # doctest: +SKIP
    >>> ids, last = spec.example_inputs(4, device="cpu")     # doctest: +SKIP

The zoo imports torchvision (for resnet18) when that model is built.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import torch
from torch import nn

from graphlab.errors import (BadInputError, BadRequestError, ConfigurationError, InferenceFailedError,
                             RequestTooLargeError, ServeError)
from graphlab.serve import oip
from graphlab.serve.payload import DEFAULT_TOP_K, ParsedRequest, parse_tensor_body
from graphlab.zoo import ZOO, ZooModel, get_model

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


class NextTokenLogits(nn.Module):
    """gpt(ids) -> logits at each row's last prompt token: (batch, vocab)."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, ids: torch.Tensor, last: torch.Tensor) -> torch.Tensor:
        logits = self.inner(ids)                                   # (batch, seq, vocab)
        index = last.view(-1, 1, 1).expand(-1, 1, logits.shape[-1])
        return logits.gather(1, index).squeeze(1)                  # (batch, vocab)


class ImageClassifier(nn.Module):
    """uint8 RGB (batch, 3, H, W) -> normalised float -> the network's class scores."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner
        self.register_buffer("mean", torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1) * 255.0, persistent=False)
        self.register_buffer("inv_std", 1.0 / (torch.tensor(IMAGENET_STD).view(1, 3, 1, 1) * 255.0),
                             persistent=False)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.inner((images.float() - self.mean) * self.inv_std)


@dataclass(frozen=True)
class ServedModelSpec:
    """How one zoo model is served.

    Attributes:
        name: zoo name.
        kind: request kind ("text", "image", "vector"), see `graphlab.serve.payload`.
        classes: width of the scores (vocabulary for gpt, classes for the others).
        seq_len: tokens per row (text).
        image_size: side the CPU resizes images to (image).
        features: numbers per row (vector).
    """

    name: str
    kind: str
    classes: int
    seq_len: int = 0
    image_size: int = 0
    features: int = 0

    def build(self, device: str = "cuda") -> nn.Module:
        """The wrapped model, in eval mode, on `device`, with the zoo's seeded weights."""
        inner = get_model(self.name).build(device=device)
        if self.kind == "text":
            wrapped: nn.Module = NextTokenLogits(inner)
        elif self.kind == "image":
            wrapped = ImageClassifier(inner)
        else:
            return inner
        return wrapped.to(device).eval()

    def example_inputs(self, rows: int, device: str = "cuda", seed: int = 0) -> tuple[torch.Tensor, ...]:
        """Random inputs for `rows` rows, shaped as pre-processing makes them (for warm-up and tests)."""
        if rows < 1:
            raise BadInputError(f"rows must be at least 1, got {rows}")
        gen = torch.Generator(device="cpu").manual_seed(seed)
        if self.kind == "text":
            ids = torch.randint(1, 257, (rows, self.seq_len), generator=gen)
            last = torch.full((rows,), self.seq_len - 1, dtype=torch.int64)
            out: tuple[torch.Tensor, ...] = (ids, last)
        elif self.kind == "image":
            side = self.image_size
            out = (torch.randint(0, 256, (rows, 3, side, side), generator=gen, dtype=torch.uint8),)
        else:
            out = (torch.randn(rows, self.features, generator=gen),)
        return tuple(t.to(device) for t in out)

    @classmethod
    def of_zoo(cls, entry: ZooModel) -> ServedModelSpec:
        """The spec a zoo entry's `served_as` (request kind, score width) and `input_shape` give."""
        kind, classes = entry.served_as or ("", 0)
        shape = entry.input_shape
        return cls(entry.name, kind, classes, seq_len=shape[0] if kind == "text" else 0,
                   image_size=shape[-1] if kind == "image" else 0, features=shape[0] if kind == "vector" else 0)


#: the zoo models a service can run, by name: every zoo entry with `served_as` (adding a zoo model that is served
#: is one entry in `graphlab/zoo.py`)
SERVED: dict[str, ServedModelSpec] = {name: ServedModelSpec.of_zoo(entry) for name, entry in ZOO.items()
                                      if entry.served_as is not None}


def served_model(name: str) -> ServedModelSpec:
    """The serving spec of zoo model `name`."""
    try:
        return SERVED[name]
    except KeyError:
        raise BadInputError(f"no served model {name!r}; choose one of {', '.join(SERVED)}") from None


# -- the protocol: any model ------------------------------------------------------------------------------
class ServedModel:
    """A model as a service runs it: the module, example inputs, buckets, and its request/answer protocol.

    Args:
        module: any `nn.Module` whose forward takes the inputs (batch first) and returns one tensor whose
            first dimension is the batch (or something `output` picks one from).
        example: a tensor or a tuple of tensors, batch first (any batch size): each input's row shape and
            dtype, and the rows warm-up runs on (repeated to fill a bucket; pass real-looking data: token
            ids within the vocabulary, say).
        name: for messages, `/healthz` and `/metrics` (default: the module's class name).
        buckets: the batch sizes captured, a list or a bucket policy name ("pow2", with `max_batch_size`);
            what `gl.serve` and `python -m graphlab.serve --model pkg.mod:factory` put in the config.
        max_batch_size: the largest bucket (default: the largest of `buckets`, or 32 for a policy name).
        input_names: the request's names of the inputs (default "x" for one, "x0", "x1", ... for several).
        output: picks the tensor from what the module returns: a key ("logits" of a Hugging Face
            `ModelOutput` or a dict) or an index (a tuple); captured in the graph with the model.
        answer: "outputs" (the output rows as nested lists) or "top_k" (softmax over the last dimension,
            the k best with `labels`; the request may send `top_k`).
        labels: class names for `answer="top_k"` (default "class N").
        int_range: (low, high) accepted for integer inputs (default: the first `nn.Embedding`'s ids when the
            module has one, else the dtype's range): an id past an embedding would stop the GPU.
    """

    kind = "tensor"

    def __init__(self, module: nn.Module, example: Any, *, name: str | None = None, buckets: Any = "pow2",
                 max_batch_size: int | None = None, input_names: Sequence[str] | None = None,
                 output: str | int | None = None, answer: str = "outputs", labels: Sequence[str] | None = None,
                 int_range: tuple[int, int] | None = None, max_top_k: int = 20):
        if not isinstance(module, nn.Module):
            raise BadInputError(f"ServedModel takes an nn.Module, got {type(module).__name__}: wrap a function in "
                                "an nn.Module whose forward calls it")
        examples = (example,) if isinstance(example, torch.Tensor) else tuple(example)
        if not examples or not all(isinstance(t, torch.Tensor) and t.dim() >= 1 for t in examples):
            raise BadInputError("example must be a tensor or a tuple of tensors, each with a batch dimension first")
        if len({int(t.shape[0]) for t in examples}) != 1:
            raise BadInputError("every example input must have the same batch size (dimension 0), got "
                                + ", ".join(str(int(t.shape[0])) for t in examples))
        if answer not in ("outputs", "top_k"):
            raise BadInputError(f"answer must be 'outputs' or 'top_k', got {answer!r}")
        names = tuple(input_names) if input_names is not None else (
            ("x",) if len(examples) == 1 else tuple(f"x{i}" for i in range(len(examples))))
        if len(names) != len(examples) or len(set(names)) != len(names):
            raise BadInputError(f"input_names must name each of the {len(examples)} inputs once, got {names}")
        if isinstance(buckets, (list, tuple)):
            if not buckets or not all(isinstance(b, int) and b > 0 for b in buckets):
                raise BadInputError(f"buckets must be positive batch sizes, got {list(buckets)}")
            top = max(buckets)
            if max_batch_size is not None and max_batch_size != top:
                raise ConfigurationError(f"max_batch_size ({max_batch_size}) must be the largest bucket ({top})")
            max_batch_size = top
        self.module = module
        self.examples = tuple(t.detach().cpu() for t in examples)
        self.name = name or type(module).__name__
        self.buckets = list(buckets) if isinstance(buckets, (list, tuple)) else buckets
        self.max_batch_size = int(max_batch_size or 32)
        self.input_names = names
        self.output = output
        self.answer_kind = answer
        self.labels = tuple(labels) if labels is not None else None
        self.max_top_k = max_top_k if answer == "top_k" else 0
        self.int_range = int_range if int_range is not None else _embedding_range(module)

    @property
    def row_shapes(self) -> tuple[tuple[int, ...], ...]:
        """Each input's shape without the batch dimension: the shape of one row in a request."""
        return tuple(tuple(int(d) for d in t.shape[1:]) for t in self.examples)

    # -- what the service calls ------------------------------------------------------------------------------
    def build(self, device: str = "cuda") -> nn.Module:
        """The module on `device`, in eval mode (with `output` picked inside it, so it is in the graph).

        The output's dtype and row shape (the protocol's model metadata) are read off the first call the service
        makes, its warm-up (a forward hook that removes itself after that call): no forward runs only for them."""
        module = self.module.to(device).eval()
        built = (_Pick(module, self.output) if self.output is not None else module).eval()
        handle = None

        def note_output(_module: nn.Module, _inputs: Any, out: Any) -> None:
            if isinstance(out, torch.Tensor) and out.dim() >= 1:
                self._output_spec = (_dtype_name(out.dtype), tuple(int(d) for d in out.shape[1:]))
            if handle is not None:
                handle.remove()

        handle = built.register_forward_hook(note_output)
        return built

    def example_inputs(self, rows: int, device: str = "cuda", seed: int = 0) -> tuple[torch.Tensor, ...]:
        """`rows` rows of the example (repeated in order): for warm-up and the padding check."""
        if rows < 1:
            raise BadInputError(f"rows must be at least 1, got {rows}")
        index = torch.arange(rows) % int(self.examples[0].shape[0])
        return tuple(t.index_select(0, index).to(device) for t in self.examples)

    def parse(self, body: Any, max_rows: int) -> ParsedRequest:
        """The cheap checks, on the event loop (see `graphlab.serve.payload.parse_tensor_body`; a protocol request,
        `graphlab.serve.oip.InferRequest`: `match_inputs`)."""
        if isinstance(body, oip.InferRequest):
            inputs = match_inputs(body, self.oip_inputs(), max_rows)
            check_outputs(body, self.oip_outputs())
            return ParsedRequest(self.kind, inputs, oip_top_k(body, self.max_top_k), count=inputs[0].shape[0],
                                 oip=body)
        return parse_tensor_body(body, self.input_names, max_rows, max_top_k=self.max_top_k)

    def oip_inputs(self) -> list[dict[str, Any]]:
        """The inputs as the protocol's model metadata: name, datatype, shape (-1 for the batch)."""
        return [oip.tensor_metadata(n, oip.FROM_TORCH.get(_dtype_name(t.dtype), "FP32"), [-1, *shape])
                for n, shape, t in zip(self.input_names, self.row_shapes, self.examples)]

    def oip_outputs(self) -> list[dict[str, Any]]:
        """The outputs as the protocol's model metadata: the output tensor ("output"), or for `answer="top_k"`
        the scores and the k best ("top_k_ids", "top_k_probs"; k is the request's `parameters.top_k`)."""
        dtype, shape = getattr(self, "_output_spec", None) or ("float32", None)  # not warmed up yet: rank unknown
        tensor = oip.tensor_metadata("scores" if self.answer_kind == "top_k" else OUTPUT_NAME,
                                     oip.FROM_TORCH.get(dtype, "FP32"), [-1, *shape] if shape is not None else [-1])
        return [tensor, *TOP_K_METADATA] if self.answer_kind == "top_k" else [tensor]

    def prepare(self, request: ParsedRequest) -> tuple[torch.Tensor, ...]:
        """The request's rows as CPU tensors, numbers checked (a pre-processing thread)."""
        if request.oip is not None:
            return tuple(oip_tensor(t, example.dtype, int_range=self.int_range)
                         for t, example in zip(request.items, self.examples))
        out = []
        for name, rows, example, shape in zip(self.input_names, request.items, self.examples, self.row_shapes):
            where = "inputs" if len(self.input_names) == 1 else f"inputs.{name}"
            out.append(rows_to_tensor(rows, example.dtype, shape, where, int_range=self.int_range))
        return tuple(out)

    def prepare_size(self, request: ParsedRequest) -> int:
        """How many numbers `prepare` makes for `request` (the service pre-processes small ones inline)."""
        return request.rows * sum(math.prod(shape) for shape in self.row_shapes)

    def answer(self, outputs: torch.Tensor, requests: Sequence[ParsedRequest]) -> list[Any]:
        """One answer per request (a dict to merge into the JSON), or a `ServeError` for that request alone."""
        if not isinstance(outputs, torch.Tensor):
            raise InferenceFailedError(f"{self.name} returned {type(outputs).__name__}, not a tensor: pass output= to "
                                       "ServedModel (a key or an index) to pick the tensor to answer with")
        answers: list[Any] = []
        if self.answer_kind == "top_k":
            k = max(r.top_k for r in requests)
            rows = top_k_answer(outputs, k, self.labels)
            offset = 0
            for r in requests:
                if r.oip is not None:
                    answers.append(oip_answer(outputs[offset: offset + r.rows], r, top_k=True))
                else:
                    answers.append({"results": [row[: r.top_k] for row in rows[offset: offset + r.rows]]})
                offset += r.rows
            return answers
        finite = torch.isfinite(outputs.reshape(outputs.shape[0], -1)).all(dim=1) if outputs.is_floating_point() \
            else None
        offset = 0
        for r in requests:
            part = outputs[offset: offset + r.rows]
            if r.oip is not None:
                answers.append(oip_answer(part, r, top_k=False))
            elif finite is not None and not bool(finite[offset: offset + r.rows].all()):
                answers.append(InferenceFailedError(f"{self.name} returned NaN or Infinity for this request (finite "
                                                    "inputs whose result overflows?); nothing else is affected"))
            else:
                answers.append({"outputs": part.tolist()})
            offset += r.rows
        return answers

    def describe(self) -> dict[str, Any]:
        """What `/healthz` and `stats()` say about the model."""
        inputs = {n: {"row_shape": list(shape), "dtype": _dtype_name(t.dtype)}
                  for n, shape, t in zip(self.input_names, self.row_shapes, self.examples)}
        return {"name": self.name, "kind": self.kind, "inputs": inputs, "answer": self.answer_kind}

    def __repr__(self) -> str:
        return f"ServedModel({self.name!r}, inputs={self.describe()['inputs']}, buckets={self.buckets})"


class _Pick(nn.Module):
    """module(*inputs)[key]: the one tensor a service answers with, picked inside the graph."""

    def __init__(self, inner: nn.Module, key: str | int):
        super().__init__()
        self.inner = inner
        self.key = key

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        out = self.inner(*inputs)
        return getattr(out, self.key) if isinstance(self.key, str) and hasattr(out, self.key) else out[self.key]


def _embedding_range(module: nn.Module) -> tuple[int, int] | None:
    for sub in module.modules():
        if isinstance(sub, nn.Embedding):
            return 0, int(sub.num_embeddings) - 1
    return None


def rows_to_tensor(rows: list[Any], dtype: torch.dtype, row_shape: tuple[int, ...], where: str, *,
                   int_range: tuple[int, int] | None = None) -> torch.Tensor:
    """JSON rows -> a CPU tensor of `dtype` and shape (len(rows), *row_shape), or a 422 naming the element.

    Refused: a ragged or wrongly shaped row, anything that is not a number, NaN and Infinity (Python's json
    reads them), a number the dtype cannot hold (1e300 for float32, 10**400 anywhere, 3.5 for an integer
    input), an integer outside `int_range`; for a numeric input, rows of true/false only. The checks are
    vectorised (one tensor built, then torch.isfinite and a range test): a Python walk over the numbers runs
    only on the error path, to name the element. (JSON true/false mixed with numbers read as 1/0.)
    """
    try:
        tensor = torch.tensor(rows)  # the dtype the JSON numbers have: int64, float32 (default) or bool
    except (TypeError, ValueError, RuntimeError, OverflowError):
        bad = _first_bad(rows, dtype, where)
        raise BadRequestError(bad or f"{where} could not be read as {_dtype_name(dtype)} rows of shape "
                              f"{list(row_shape)}") from None
    if tuple(tensor.shape[1:]) != tuple(row_shape):
        raise BadRequestError(f"{where} has rows of shape {list(tensor.shape[1:])}; this model takes rows of shape "
                              f"{list(row_shape)}")
    if tensor.dtype == torch.bool and dtype != torch.bool:
        raise BadRequestError(f"{where} holds true/false; this input takes numbers ({_dtype_name(dtype)})")
    if dtype.is_floating_point:
        if tensor.dtype != dtype or not tensor.is_floating_point():
            if not tensor.is_floating_point() and tensor.numel() and \
                    float(tensor.abs().max()) > torch.finfo(dtype).max:
                raise BadRequestError(_first_bad(rows, dtype, where) or f"{where} is out of range")
            tensor = tensor.to(dtype)
        ok = torch.isfinite(tensor)
        if not bool(ok.all()):
            index = tuple(int(i) for i in (~ok).nonzero()[0])
            value = _at(rows, index)
            what = "NaN" if isinstance(value, float) and math.isnan(value) else repr(value)
            raise BadRequestError(f"{where}{''.join(f'[{i}]' for i in index)} is {_pretty(what)}: send finite "
                                  f"numbers within {_dtype_name(dtype)}'s range (|x| <= {torch.finfo(dtype).max:.4g})")
    elif dtype != torch.bool:
        if tensor.is_floating_point():
            raise BadRequestError(_first_bad(rows, dtype, where) or f"{where} must hold integers")
        low, high = int_range if int_range is not None else (torch.iinfo(dtype).min, torch.iinfo(dtype).max)
        if tensor.numel():
            bad = (tensor < low) | (tensor > high)
            if bool(bad.any()):
                index = tuple(int(i) for i in bad.nonzero()[0])
                raise BadRequestError(f"{where}{''.join(f'[{i}]' for i in index)} is {int(tensor[index])}; this "
                                      f"input takes integers from {low} to {high}")
        tensor = tensor.to(dtype)
    else:
        tensor = tensor.to(torch.bool)
    return tensor


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _pretty(text: str) -> str:
    return {"inf": "Infinity", "-inf": "-Infinity", "nan": "NaN"}.get(text, text)


def _at(rows: Any, index: tuple[int, ...]) -> Any:
    for i in index:
        rows = rows[i]
    return rows


def _walk(value: Any, path: str):
    if isinstance(value, list):
        for i, v in enumerate(value):
            yield from _walk(v, f"{path}[{i}]")
    else:
        yield path, value


def _first_bad(rows: Any, dtype: torch.dtype, where: str) -> str | None:
    """The first element `dtype` cannot hold, in one line (only on the error path: a Python walk)."""
    if dtype.is_floating_point:
        top = torch.finfo(dtype).max
    elif dtype == torch.bool:
        top = 1
    else:
        info = torch.iinfo(dtype)
    for path, v in _walk(rows, where):
        if isinstance(v, bool):
            if dtype != torch.bool:
                return f"{path} is {str(v).lower()}; this input takes numbers, not true/false"
            continue
        if not isinstance(v, (int, float)):
            return f"{path} must be a number, got {type(v).__name__ if v is not None else 'null'}"
        if dtype.is_floating_point:
            if not -top <= v <= top:
                shown = f"an integer of {len(str(abs(v)))} digits" if isinstance(v, int) else _pretty(repr(v))
                return f"{path} is {shown}: send finite numbers within {_dtype_name(dtype)}'s range (|x| <= {top:.4g})"
        elif isinstance(v, float):
            return f"{path} is {_pretty(repr(v))}; this input takes integers ({_dtype_name(dtype)})"
        elif dtype != torch.bool and not info.min <= v <= info.max:
            shown = f"an integer of {len(str(abs(v)))} digits" if abs(v) >= 10**30 else str(v)
            return f"{path} is {shown}, outside {_dtype_name(dtype)} ({info.min} to {info.max})"
    return None


# -- the Open Inference Protocol (graphlab.serve.oip): tensors in, tensors out -------------------------------
#: the output of a model that answers with its output rows
OUTPUT_NAME = "output"
#: the k best of a model that answers top_k (beside its "scores"): ids and softmax probabilities, best first
TOP_K_METADATA = (oip.tensor_metadata("top_k_ids", "INT64", [-1, -1]),
                  oip.tensor_metadata("top_k_probs", "FP32", [-1, -1]))


def match_inputs(request: oip.InferRequest, signature: list[dict[str, Any]],
                 max_rows: int) -> tuple[oip.InputTensor, ...]:
    """The request's inputs in the model's order, each checked against its metadata (`signature`): every input
    once by name, its datatype, its shape (-1: any), the same rows in each, at most `max_rows` of them."""
    names = [s["name"] for s in signature]
    given = {t.name: t for t in request.inputs}
    unknown = sorted(n for n in given if n not in names)
    if unknown:
        raise BadRequestError(f"unknown input {unknown[0]!r}; this model takes {', '.join(names)}")
    out, rows = [], -1
    for spec in signature:
        name = spec["name"]
        if name not in given:
            raise BadRequestError(f"missing input {name!r}: this model takes {', '.join(names)}")
        tensor = given[name]
        if tensor.datatype != spec["datatype"]:
            raise BadRequestError(f"input {name!r} is {tensor.datatype}; this model's input {name} takes "
                                  f"{spec['datatype']}")
        want = spec["shape"]
        if len(tensor.shape) != len(want) or any(w != -1 and w != d for w, d in zip(want, tensor.shape)):
            raise BadRequestError(f"input {name!r} has shape {list(tensor.shape)}; this model takes {want} (-1: any)")
        if tensor.shape[0] < 1:
            raise BadRequestError(f"input {name!r} has no rows: send at least one")
        if tensor.shape[0] > max_rows:
            raise RequestTooLargeError(f"input {name!r} has {tensor.shape[0]} rows; this service takes at most "
                                       f"{max_rows} per request: split it")
        if rows >= 0 and tensor.shape[0] != rows:
            raise BadRequestError(f"input {name!r} has {tensor.shape[0]} rows but {names[0]} has {rows}: one row of "
                                  "each input per example")
        rows = tensor.shape[0]
        out.append(tensor)
    return tuple(out)


def check_outputs(request: oip.InferRequest, signature: list[dict[str, Any]]) -> None:
    """The outputs the request asks for exist (BadRequestError naming the first that does not)."""
    names = [s["name"] for s in signature]
    for name, _ in request.outputs:
        if name not in names:
            raise BadRequestError(f"unknown output {name!r}; this model answers with {', '.join(names)}")


def oip_top_k(request: oip.InferRequest, max_top_k: int) -> int:
    """The request's `parameters.top_k` (default 5, at most `max_top_k`); 0 for a model that answers no top-k."""
    if max_top_k <= 0:
        return 0
    top_k = request.parameters.get("top_k", min(DEFAULT_TOP_K, max_top_k))
    if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= max_top_k:
        raise BadRequestError(f"parameters.top_k must be an integer from 1 to {max_top_k}, got {top_k!r}")
    return top_k


def oip_tensor(tensor: oip.InputTensor, dtype: torch.dtype, *,
               int_range: tuple[int, int] | None = None) -> torch.Tensor:
    """One protocol input as a CPU tensor of `dtype` and its shape, or a BadRequestError (400) naming it: JSON data
    that is not `shape`'s count of numbers, a number of the wrong kind (3.5 or true for an integer input), NaN or
    Infinity (JSON or binary), a number `dtype` cannot hold, an integer outside `int_range`, BOOL bytes not 0/1."""
    where = f"input {tensor.name!r}"
    if tensor.raw is not None:
        out = torch.frombuffer(bytearray(tensor.raw), dtype=dtype) if tensor.raw else torch.empty(0, dtype=dtype)
        out = out.reshape(tensor.shape)
        if dtype == torch.bool and tensor.raw and max(tensor.raw) > 1:
            raise BadRequestError(f"{where}: BOOL bytes must be 0 or 1")
    else:
        try:
            out = torch.tensor(tensor.data)
        except (TypeError, ValueError, RuntimeError, OverflowError):
            raise BadRequestError(f"{where}: data must be {tensor.datatype} numbers (nested or flat lists), "
                                  "within the datatype's range") from None
        if out.numel() != tensor.elements:
            raise BadRequestError(f"{where} has {out.numel()} values in data; shape {list(tensor.shape)} holds "
                                  f"{tensor.elements}")
        if (out.dtype == torch.bool) != (dtype == torch.bool):
            want = "true/false" if dtype == torch.bool else "numbers"
            raise BadRequestError(f"{where}: {tensor.datatype} data must be {want}")
        if out.is_floating_point() and not dtype.is_floating_point:
            raise BadRequestError(f"{where}: {tensor.datatype} data must be integers, got a number with a fraction")
        if dtype.is_floating_point:
            wide = out.to(torch.float64).reshape(tensor.shape)
            _check_finite(wide, where, dtype)
            return wide.to(dtype)
        out = out.reshape(tensor.shape)
    if dtype.is_floating_point:
        _check_finite(out, where, dtype)
    elif dtype != torch.bool and out.numel():
        info = torch.iinfo(dtype)
        low, high = int_range if int_range is not None else (info.min, info.max)
        bad = (out < low) | (out > high)
        if bool(bad.any()):
            at = int(bad.reshape(-1).nonzero()[0])
            raise BadRequestError(f"{where} element {at} (row-major) is {int(out.reshape(-1)[at])}; this input takes "
                                  f"integers from {low} to {high}")
        out = out.to(dtype)
    return out


def _check_finite(values: torch.Tensor, where: str, dtype: torch.dtype) -> None:
    """Every value finite and within `dtype`'s range, or a BadRequestError naming the first that is not."""
    top = torch.finfo(dtype).max
    ok = torch.isfinite(values) & (values.abs() <= top)
    if not bool(ok.all()):
        at = int((~ok).reshape(-1).nonzero()[0])
        value = float(values.reshape(-1)[at])
        raise BadRequestError(f"{where} element {at} (row-major) is {_pretty(repr(value))}: send finite numbers "
                              f"within {_dtype_name(dtype)}'s range (|x| <= {top:.4g})")


def oip_answer(part: torch.Tensor, request: ParsedRequest, *, top_k: bool) -> dict[str, Any] | ServeError:
    """One protocol request's outputs from its rows of the model's output (`part`): the output tensor, or for a
    top-k model its scores and the k best; each as JSON data or binary bytes, as the request asked."""
    if top_k:
        scores = part.reshape(part.shape[0], -1)
        probs = torch.softmax(scores.float(), dim=-1)
        values, ids = torch.topk(probs, min(request.top_k, probs.shape[-1]), dim=-1)
        tensors = {"scores": part, "top_k_ids": ids, "top_k_probs": values}
    else:
        tensors = {OUTPUT_NAME: part}
    out = []
    for name, binary in request.oip.wants(tuple(tensors)):
        tensor = tensors[name].contiguous()
        datatype = oip.FROM_TORCH.get(_dtype_name(tensor.dtype))
        if datatype is None:
            return InferenceFailedError(f"the model's output is {_dtype_name(tensor.dtype)}, which the protocol has "
                                        "no datatype for")
        if binary:
            raw = tensor.view(torch.uint8).numpy().tobytes() if tensor.dim() else tensor.numpy().tobytes()
            out.append(oip.OutputTensor(name, datatype, tuple(tensor.shape), raw=raw))
            continue
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            return InferenceFailedError(f"output {name!r} holds NaN or Infinity, which JSON cannot carry: ask for it "
                                        "as binary data (parameters.binary_data)")
        data = (tensor.float() if tensor.dtype == torch.bfloat16 else tensor).reshape(-1).tolist()
        out.append(oip.OutputTensor(name, datatype, tuple(tensor.shape), data=data))
    return {"oip_outputs": out}


def top_k_answer(scores: torch.Tensor, k: int, labels: Sequence[str] | None = None) -> list[list[dict[str, Any]]]:
    """Softmax over the last dimension of (rows, classes), the k best as [{"id", "label", "prob"}] per row."""
    probs = torch.softmax(scores.float().reshape(scores.shape[0], -1), dim=-1)
    values, indices = torch.topk(probs, min(k, probs.shape[-1]), dim=-1)
    out = []
    for row_values, row_ids in zip(values.tolist(), indices.tolist()):
        out.append([{"id": i, "label": labels[i] if labels is not None and i < len(labels) else f"class {i}",
                     "prob": round(p, 6) if math.isfinite(p) else None} for i, p in zip(row_ids, row_values)])
    return out


__all__ = ["IMAGENET_MEAN", "IMAGENET_STD", "ImageClassifier", "NextTokenLogits", "OUTPUT_NAME", "SERVED",
           "ServedModel", "ServedModelSpec", "TOP_K_METADATA", "check_outputs", "match_inputs", "oip_answer",
           "oip_tensor", "oip_top_k", "rows_to_tensor", "served_model", "top_k_answer"]
