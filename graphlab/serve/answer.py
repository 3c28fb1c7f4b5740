"""One answer of the service as a person reads it: `ServiceAnswer`, the JSON dict of `InferenceService.infer`, shown
in a notebook as tables; and the words for what the worker ran on (a GPU, or the model eagerly on a CPU).

Pure Python (graphlab.present): no torch here.
"""
from __future__ import annotations

from typing import Any

from graphlab import present


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


__all__ = ["ServiceAnswer", "on_cpu", "worker_words"]
