"""One answer of the service as a person reads it: `ServiceAnswer`, the JSON dict of `InferenceService.infer`, shown
in a notebook as tables; `ProtocolAnswer`, an answer of the Open Inference Protocol (from its HTTP body, or from
Triton's client), the same way; and the words for what the worker ran on (a GPU, or the model eagerly on a CPU).

Pure Python (graphlab.present): no torch here.
"""
from __future__ import annotations

import json
import math
from typing import Any

from graphlab import present
from graphlab.serve import oip


def on_cpu(conditions: dict[str, Any]) -> bool:
    """Whether a load test's conditions say it ran on a CPU."""
    return str(conditions.get("device") or "cuda").startswith("cpu")


def worker_words(conditions: dict[str, Any]) -> tuple[str, str]:
    """(name, meaning) of the worker's stage: "GPU worker" on a GPU, "worker" (the model, eager on the CPU) on a
    CPU."""
    if on_cpu(conditions):
        return "worker", "from a batch being cut to its scores: the model, run eagerly on the CPU"
    return "GPU worker", "from a batch being cut to its scores on the host: copies, launch or replay, kernels"


class ServiceAnswer(dict):
    """One answer of the service (`InferenceService.infer_sync` and `infer`): the JSON it sends, a plain dict to
    code (`answer["results"]`, `json.dumps(answer)`), shown in a notebook as what it says: the top tokens of each
    prompt (or the outputs' size), the batch it ran in, and how long each stage took.

    `device` and `setting` (not part of the JSON) say what ran, so a CPU answer does not call its worker a GPU."""

    def __init__(self, data: Any = (), *, device: str = "cuda", setting: str = ""):
        super().__init__(data)
        self.device = str(device)
        self.setting = setting

    @property
    def _conditions(self) -> dict[str, Any]:
        return {"device": self.device}

    def tokens(self) -> present.Table:
        """The top tokens of each prompt: prompt, rank, token (as the tokenizer writes it), id, probability."""
        rows = [{"prompt": i + 1, "rank": rank + 1, "token": present.Code(str(t.get("label", ""))),
                 "id": t.get("id"), "probability": t.get("prob")}
                for i, tops in enumerate(self.get("results") or []) for rank, t in enumerate(tops)]
        columns = [present.Column("prompt", "prompt", kind="count"), present.Column("rank", "rank", kind="count"),
                   present.Column("token", "token", kind="code"), present.Column("id", "token id", kind="count"),
                   present.Column("probability", "probability", kind="number")]
        return present.Table(rows, columns, title=f"request {self.get('id', '?')}: the top "
                             f"{len((self.get('results') or [[]])[0])} next tokens of each prompt")

    def batch_words(self) -> str:
        """The batch it ran in, in words."""
        batch = self.get("batch") or {}
        if not batch:
            return "no batch recorded"
        others = int(batch.get("requests", 1)) - 1
        rows, bucket = int(batch.get("rows", 0)), int(batch.get("bucket", 0))
        company = "alone" if others <= 0 else f"with {present.count(others)} other request{'s' if others != 1 else ''}"
        padded = f"padded to {bucket}" if bucket > rows else "no padding"
        return f"batch {batch.get('id', '?')}: {company}, {present.count(rows)} rows ({padded})"

    def stages(self) -> present.Table:
        """How long each stage of this request took, in words."""
        timing = self.get("timing_us") or {}
        worker, means = worker_words(self._conditions)
        what = {"pre_us": "pre-processing (tokenize, pad)", "queue_us": "queue (waiting for its batch to be cut)",
                "gpu_us": f"{worker} ({means})", "post_us": "post-processing (softmax, top-k)",
                "in_service_us": "in the service, accepted to answered"}
        pairs = [(label, present.duration(timing[key])) for key, label in what.items() if key in timing]
        where = "on the CPU" if on_cpu(self._conditions) else "on the GPU"
        setting = f"{self.setting} " if self.setting else ""
        return present.facts(pairs, title=f"its time per stage ({setting}{where}); it ran in {self.batch_words()}")

    def _outputs_table(self) -> present.Table:
        outputs = self.get("outputs") or []
        pairs = [("outputs", f"{len(outputs)} row{'s' if len(outputs) != 1 else ''}")]
        return present.facts(pairs, title=f"request {self.get('id', '?')}")

    def _parts(self) -> list[present.Table]:
        first = self.tokens() if "results" in self else self._outputs_table()
        return [first, self.stages()]

    def _repr_html_(self) -> str:
        return "".join(part._repr_html_() for part in self._parts())

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text("\n\n".join(str(part) for part in self._parts()))


class ProtocolAnswer(dict):
    """An answer of the Open Inference Protocol (`POST /v2/models/{name}/infer`): its JSON head (`model_name`, `id`,
    `outputs`), a plain dict to code, and each output's values decoded (`values[name]`: flat, row-major; `rows(name)`:
    nested by its shape), whether they came as JSON data or as binary data after the head. Shown in a notebook as the
    k best of each row (a top-k model: `top_k_ids`, `top_k_probs`) or as each output's datatype, shape and size.

        >>> head = b'{"model_name":"m","outputs":[{"name":"y","datatype":"INT32","shape":[2],"parameters":{"binary_data_size":8}}]}'
        >>> ProtocolAnswer.from_http(head + bytes([1, 0, 0, 0, 2, 0, 0, 0]), len(head)).values["y"]
        [1, 2]
    """

    def __init__(self, head: Any = (), values: dict[str, list[Any]] | None = None):
        super().__init__(head)
        self.values = dict(values or {})

    @classmethod
    def from_http(cls, content: bytes, header_length: str | bytes | int | None = None) -> ProtocolAnswer:
        """From an answer's body and its `Inference-Header-Content-Length` header (None: all JSON)."""
        cut = len(content) if header_length is None else int(header_length)
        head = json.loads(content[:cut])
        tail, at, values = memoryview(content)[cut:], 0, {}
        for out in head.get("outputs", []):
            count = math.prod(out.get("shape", []))
            size = (out.get("parameters") or {}).get("binary_data_size")
            if size is None:
                values[out["name"]] = _flat(out.get("data", []))
            else:
                values[out["name"]] = oip.decode_tensor(tail[at: at + size], out["datatype"], count)
                at += size
        return cls(head, values)

    @classmethod
    def from_triton(cls, result: Any) -> ProtocolAnswer:
        """From tritonclient's `InferResult` (its `get_response()` and `as_numpy(name)`)."""
        head = result.get_response()
        return cls(head, {o["name"]: result.as_numpy(o["name"]).reshape(-1).tolist() for o in head.get("outputs", [])})

    def rows(self, name: str) -> list[Any]:
        """Output `name`'s values nested by its shape."""
        shape = next(o.get("shape", []) for o in self.get("outputs", []) if o["name"] == name)
        values = self.values[name]
        for width in reversed(shape[1:]):
            values = [values[i: i + width] for i in range(0, len(values), width)]
        return values

    def _parts(self) -> list[present.Table]:
        names = [o["name"] for o in self.get("outputs", [])]
        request = f"request {self['id']}" if "id" in self else "the request gave no id"
        title = f"{self.get('model_name', '?')}'s answer ({request})"
        parts = [present.facts([(o["name"], f"{o['datatype']} {present.shape(o.get('shape', []))}, "
                                 f"{'binary data' if 'parameters' in o else 'JSON data'}")
                                for o in self.get("outputs", [])], title=title)]
        if "top_k_ids" in names and "top_k_probs" in names:
            rows = [{"row": r + 1, "rank": k + 1, "id": i, "probability": p}
                    for r, (ids, probs) in enumerate(zip(self.rows("top_k_ids"), self.rows("top_k_probs")))
                    for k, (i, p) in enumerate(zip(ids, probs))]
            parts.append(present.Table(rows, [present.Column("row", "row", kind="count"),
                                              present.Column("rank", "rank", kind="count"),
                                              present.Column("id", "class id", kind="count"),
                                              present.Column("probability", "probability", kind="number")],
                                       title="the k best of each row"))
        return parts

    def _repr_html_(self) -> str:
        return "".join(part._repr_html_() for part in self._parts())

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text("\n\n".join(str(part) for part in self._parts()))


def _flat(data: Any) -> list[Any]:
    if not isinstance(data, list):
        return [data]
    return [v for item in data for v in _flat(item)]


__all__ = ["ProtocolAnswer", "ServiceAnswer", "on_cpu", "worker_words"]
