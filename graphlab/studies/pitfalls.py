"""Worked examples of failed captures: one small cell per cause, run live on a GPU, and their recording.

`graphlab record` (by default, with the zoo) runs every example on the GPU (those that would spoil this process in
a fresh one), keeps what each diagnosis said, then captures the zoo MLP in the same process: proof that the process
stayed usable. That is the "pitfalls" recording, so the pitfalls notebook shows the same explanations without a
GPU: in recorded mode (`gl.set_mode`) `run_example` and `capture_after_pitfalls` answer from it. What the examples
said is a `RecordedPitfalls` (`gl.load(RecordedPitfalls)`), written and read through that type.

    >>> from graphlab.studies import pitfalls            # doctest: +SKIP
    >>> pitfalls.run_example("item")                      # doctest: +SKIP
"""
from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from graphlab.capture.api import capture
from graphlab.capture.cell import capture_cell
from graphlab.capture.diagnose import Diagnosis, catalogue, first_line
from graphlab.capture.options import CaptureOptions
from graphlab import present
from graphlab.capture.recorded import RecordedGraph
from graphlab.env import require_cuda
from graphlab.errors import BadInputError, CaptureError, GPUUnavailableError, ResultsError, UnsupportedError
from graphlab.graph.dot_parser import parse_dot
from graphlab.loader import dump, load, open_recording
from graphlab.mode import recorded_gpu, stand_in
from graphlab.recordings import gpu_slug, write_recording
from graphlab.results_types import recorded_result, results_type
from graphlab.studies.record import RECORD_DOT_FLAGS
from graphlab.zoo import get_model

RECORDING = "pitfalls"
#: a bare `graphlab record` makes this recording, with every zoo model
BY_DEFAULT = True


@dataclass(frozen=True)
class Example:
    """A cell that fails to capture for one cause, and how to run it.

    Attributes:
        cause: the `CAUSES` key it demonstrates.
        code: the cell that is captured (shown in the pitfalls notebook).
        setup: code run eagerly first (tensors the cell reads).
        warmup_calls: warm-up runs before capture (0 for the missing-warm-up example).
        stream: None (graphlab's side stream) or "default".
        fresh_process: run in a new Python process (library handles exist after the first matmul).
    """

    cause: str
    code: str
    setup: str = "x = torch.randn(8, 256, device='cuda')"
    warmup_calls: int = 1
    stream: str | None = None
    fresh_process: bool = False


EXAMPLES: dict[str, Example] = {
    "item": Example("host_sync", "y = x * 2\nif y.sum().item() > 0:\n    y = y + 1\n"),
    "print": Example("host_sync", "y = x * 2\nprint(y)\n"),
    "synchronize": Example("host_sync", "y = x * 2\ntorch.cuda.synchronize()\n"),
    "nonzero": Example("host_sync", "idx = torch.nonzero(x > 0)\n"),
    "cpu": Example("host_sync", "y = (x * 2).cpu()\n"),
    "default_stream": Example("default_stream", "y = x * 2\n", stream="default"),
    "pageable_copy": Example("pageable_copy", "bias = torch.tensor([0.5] * 256, device='cuda')\ny = x + bias\n"),
    "library_handle": Example(
        "library_handle", "y = x @ w\n",
        setup="x = torch.randn(8, 256, device='cuda')\nw = torch.randn(256, 256, device='cuda')",
        warmup_calls=0, fresh_process=True,
    ),
    "forbidden_op": Example("forbidden_op", "y = x * 2\ndone = torch.cuda.current_stream().query()\n"),
    "unjoined_stream": Example(
        "unjoined_stream",
        "side.wait_stream(torch.cuda.current_stream())\nwith torch.cuda.stream(side):\n    y = x * 2\n",
        setup="x = torch.randn(8, 256, device='cuda')\nside = torch.cuda.Stream()",
    ),
    "empty": Example("empty", "y = torch.randn(8, 256)  # a CPU tensor: no GPU work to record\n"),
}


@recorded_result(entry="pitfalls", recording=RECORDING, schema=1)
@dataclass(frozen=True)
class RecordedPitfalls:
    """What each failure example said when `graphlab record` ran it on a GPU: the `pitfalls` entry of the
    "pitfalls" recording, a list with one outcome per example (`gl.load(RecordedPitfalls)`).

    Attributes:
        outcomes: per example, as recorded: its name (`example`), the cause it demonstrates (`expected_cause`), its
            cell (`code`, `setup`, `warmup`), and what the capture said (a `Diagnosis`'s fields; `cause` "none"
            and the error's `message` when it did not fail as expected).
        where: where, when and with which torch it was recorded ("recorded on NVIDIA H200 on 2026-12-01 with
            torch 2.11.0"), when read from a recording.
    """

    outcomes: tuple[dict[str, Any], ...]
    where: str = ""

    @property
    def examples(self) -> list[str]:
        return [str(o["example"]) for o in self.outcomes]

    @property
    def diagnoses(self) -> dict[str, Diagnosis]:
        """The diagnosis each example got, by example name."""
        return {str(o["example"]): Diagnosis.from_dict(o) for o in self.outcomes}

    def to_dict(self) -> list[dict[str, Any]]:
        """As the recording keeps it: the list of outcomes."""
        return [dict(o) for o in self.outcomes]

    @classmethod
    def from_dict(cls, data: Any) -> RecordedPitfalls:
        if not isinstance(data, list) or not all(isinstance(o, dict) and "example" in o and "cause" in o
                                                 for o in data):
            raise ResultsError("not the pitfalls' outcomes: expected a list of objects, each with 'example' and "
                               "'cause'")
        return cls(tuple(dict(o) for o in data))

    @classmethod
    def from_recording(cls, data: Any, recording: Any) -> RecordedPitfalls:
        """The outcomes read by `gl.load`, with where and when they were recorded."""
        return cls(cls.from_dict(data).outcomes, f"{recording.made} with torch {recording.provenance.get('torch')}")


def recorded_diagnoses(recording: Any) -> dict[str, Diagnosis]:
    """The diagnoses a "pitfalls" recording kept (`graphlab record`), by example name (its `RecordedPitfalls`)."""
    return load(RecordedPitfalls, recording).diagnoses


def _check_key(key: str) -> None:
    if key not in EXAMPLES:
        raise BadInputError(f"no example {key!r}; choose one of {', '.join(EXAMPLES)}")


def _with_cell(diagnosis: Diagnosis, key: str, where: str = "") -> Diagnosis:
    """The diagnosis with the example's cell and set-up (shown with it), and where it happened when not here."""
    example = EXAMPLES[key]
    return dataclasses.replace(diagnosis, code=example.code, setup=example.setup, where=where)


def recorded_run_example(key: str) -> Diagnosis:
    """Recorded mode's `run_example`: what this example said when `graphlab record` ran it on a GPU, with the
    cell, its set-up, and where and when (the panel says "recorded on <GPU> on <date>" above it)."""
    _check_key(key)
    recorded = load(RecordedPitfalls, gpu=recorded_gpu())
    if key not in recorded.examples:
        raise GPUUnavailableError(f"the {RECORDING!r} recording has no outcome of example {key!r} (it has "
                                  f"{', '.join(recorded.examples)}): run it on a GPU")
    return _with_cell(recorded.diagnoses[key], key, recorded.where)


@stand_in(recorded_run_example)
def run_example(key: str) -> Diagnosis:
    """Run one `EXAMPLES` cell through `%%cudagraph`'s capture path on the GPU; return its diagnosis.

    In recorded mode (`gl.set_mode`), the diagnosis the same cell got when it was recorded on a GPU.

    Raises:
        BadInputError: no example called `key`.
        UnsupportedError: the example captured without error (the failure does not happen on this machine).
    """
    _check_key(key)
    example = EXAMPLES[key]
    if example.fresh_process:
        return _with_cell(_run_in_fresh_process(key), key)
    diagnosis = _diagnose_here(key)
    if diagnosis is None:
        raise UnsupportedError(f"example {key!r} captured without error on this machine: the failure it shows "
                               "does not happen here")
    return _with_cell(diagnosis, key)


def _diagnose_here(key: str) -> Diagnosis | None:
    """Capture example `key` in this process: the diagnosis of its failure, or None if it captured."""
    require_cuda("run_example")
    example = EXAMPLES[key]
    namespace: dict[str, Any] = {"torch": torch}
    exec(example.setup, namespace)
    # the example's own output during its eager warm-up (the `print(y)` example prints its tensor there, before
    # the capture fails) is not the lesson: the diagnosis is
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            capture_cell(example.code, namespace,
                         CaptureOptions(warmup_calls=example.warmup_calls, stream=example.stream), name=key,
                         filename=f"<pitfall {key}>")
    except CaptureError as err:
        return err.diagnosis  # type: ignore[no-any-return]
    return None


def _run_in_fresh_process(key: str) -> Diagnosis:
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p))
    proc = subprocess.run([sys.executable, "-m", "graphlab.studies.pitfalls", key], capture_output=True, text=True,
                          env=env, timeout=300)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise UnsupportedError(f"example {key!r} could not run in a fresh process here: "
                               f"{first_line(proc.stderr) or proc.returncode}")
    return Diagnosis.from_dict(json.loads(lines[-1]))


def _main(argv: list[str]) -> int:
    """`python -m graphlab.studies.pitfalls KEY`: run one example here (the fresh process), print its diagnosis
    as JSON; exit status 3 when it captured without error."""
    diagnosis = _diagnose_here(argv[0])
    if diagnosis is None:
        print(json.dumps({"cause": "none", "message": "captured without error"}))
        return 3
    print(json.dumps(diagnosis.to_dict()))
    return 0


def pitfall_examples() -> dict[str, Example]:
    """The failure examples by name: each has the `code` of its cell, the `setup` run before it, its `cause`."""
    return dict(EXAMPLES)


def recorded_capture_after_pitfalls() -> Any:
    """Recorded mode's `capture_after_pitfalls`: the graph `graphlab record` captured in the same process right
    after all the examples had failed."""
    return RecordedGraph(open_recording(RECORDING, gpu=recorded_gpu()), "recovered", None, (), "recovered")


@stand_in(recorded_capture_after_pitfalls)
def capture_after_pitfalls() -> Any:
    """A capture made right after the failure examples, proof that the process stays usable.

    Live: captures the zoo MLP at batch 8 here (after whatever failed in this process). Recorded mode: the
    graph `graphlab record` captured in the same process right after all the examples had failed.
    """
    mlp = get_model("mlp")
    return capture(mlp.build(), *mlp.make_inputs(8), name="recovered")


def causes_table() -> present.Table:
    """Every cause graphlab recognises, as a table: its key (`err.cause.key`), what happened, and the fix."""
    rows = [{"key": present.Code(c.key), "what": c.title, "fix": c.fix} for c in catalogue()]
    columns = [present.Column("key", "cause (`err.cause.key`)", kind="code"),
               present.Column("what", "what happened", kind="text"), present.Column("fix", "the fix", kind="text")]
    return present.Table(rows, columns, title="Every capture failure graphlab recognises")


def record(out_root: Path, prov: dict[str, Any]) -> Path:
    """What each capture failure example said on this GPU, and a capture made right after them."""
    outcomes = []
    for key, example in EXAMPLES.items():
        try:
            diagnosis = run_example(key)
            entry = {"example": key, "expected_cause": example.cause, "code": example.code,
                     "setup": example.setup, "warmup": example.warmup_calls, **diagnosis.to_dict()}
        except Exception as exc:  # the failure did not happen (or something else broke): record that too
            entry = {"example": key, "expected_cause": example.cause, "code": example.code, "setup": example.setup,
                     "warmup": example.warmup_calls, "cause": "none", "message": f"{type(exc).__name__}: {exc}"}
        outcomes.append(entry)
        print(f"[record] pitfall {key}: {entry['cause']} (expected {example.cause})", flush=True)
    zoo_model = get_model("mlp")
    inputs = zoo_model.make_inputs(8, device="cuda")
    cg = capture(zoo_model.build(device="cuda"), *inputs, dot_flags=RECORD_DOT_FLAGS, name="recovered")
    check = cg.verify(trials=2)
    dot = cg.dot()
    print(f"[record] pitfalls: capture after all failures: verify {'ok' if check.passed else 'FAILED'}", flush=True)
    graphs = {"recovered": {"dot": dot, "model": parse_dot(dot, source="recovered.dot"), "batch_size": 8,
                            "dot_flags": RECORD_DOT_FLAGS, "verify": check.to_dict(),
                            "note": "mlp captured in the same process right after every failure example"}}
    folder = out_root / gpu_slug(prov["gpu"]) / RECORDING
    write_recording(folder, name=RECORDING, description="What each capture failure example said on this GPU, "
                    "and a capture made right after them in the same process.", provenance=prov, graphs=graphs,
                    results={results_type(RecordedPitfalls).entry: dump(RecordedPitfalls(tuple(outcomes)))})
    return folder


__all__ = ["BY_DEFAULT", "EXAMPLES", "RECORDING", "Example", "RecordedPitfalls", "capture_after_pitfalls",
           "causes_table", "pitfall_examples", "record", "recorded_capture_after_pitfalls", "recorded_diagnoses",
           "recorded_run_example", "run_example"]


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
