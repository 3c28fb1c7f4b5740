"""The graph surface: what every captured graph offers, whichever way it was made.

Three kinds of object stand for a captured graph, and each says which it is in `origin`:

| origin | class | replay | its DAG |
|---|---|---|---|
| "live" | `CapturedGraph` (`gl.capture`, `gl.capturing`, `%%cudagraph`, a CUDA `GraphCache`) | `cudaGraphLaunch` | dumped from the driver |
| "recorded" | `RecordedGraph` (recorded mode) | runs the model eagerly on this machine | the DOT a GPU recorded |
| "eager" | `EagerGraph` (a `GraphCache(backend="eager")` stand-in) | runs the model eagerly | none: it says so |

`gl.render`, `gl.inspect`, `gl.diff`, the widgets and `GraphCache` take any of them. What one of them cannot do
(an eager stand-in has no DOT, a recorded graph has no pool to share) raises `UnsupportedError` naming why,
never a bare `AttributeError`. `tests/test_surface.py` holds each class to this Protocol.

Pure: importing it needs no torch.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Callable, Iterable, Literal, Protocol, Sequence, runtime_checkable

from graphlab import present

if TYPE_CHECKING:
    from graphlab.graph.model import CudaGraph

Origin = Literal["live", "recorded", "eager"]


@runtime_checkable
class Replayable(Protocol):
    """A captured graph: call it with new inputs, replay it, look at its DAG, check it against eager.

    Attributes:
        origin: "live", "recorded" or "eager" (the table above).
        name: the graph's name, for messages and drawings.
        inputs: the static inputs (nested as captured); `outputs`: the static outputs, refreshed by each replay.
        capture_ms, instantiate_ms: host time of the capture and of instantiating it (0.0 for an eager stand-in).
        pool_bytes: device memory the graph's pool took; peak_bytes: peak memory the captured work held;
            exec_bytes: memory of the executable graph, or None where it was not measured.
    """

    origin: Origin
    name: str
    inputs: Any
    outputs: Any

    @property
    def capture_ms(self) -> float: ...

    @property
    def instantiate_ms(self) -> float: ...

    @property
    def pool_bytes(self) -> int: ...

    @property
    def peak_bytes(self) -> int | None: ...

    @property
    def exec_bytes(self) -> int | None: ...

    def __call__(self, *new_inputs: Any, **named: Any) -> Any:
        """Copy the new inputs into the static ones (checked), replay, return the outputs."""

    def unchecked(self, *new_inputs: Any) -> Any:
        """The same without checks: the caller promises shapes, dtypes and device."""

    def replay(self) -> Any:
        """Replay as is, on the static inputs; return the outputs."""

    @property
    def graph(self) -> CudaGraph:
        """The parsed DAG (`gl.CudaGraph`)."""

    def dot(self, flags: int | str | None = None) -> str:
        """The DOT text of the DAG."""

    def census(self) -> Any:
        """A node census from the CUDA graph API."""

    def verify(self, make_inputs: Callable[[], Any] | None = None, trials: int = 3) -> Any:
        """Replay against eager on fresh inputs (a `VerifyResult`)."""

    def pool(self) -> Any:
        """The memory pool, to share with another capture."""

    def reset(self) -> None:
        """Free the graph; it cannot replay afterwards."""

    def summary(self) -> dict[str, Any]:
        """Name, where it lives, node counts, capture cost, inputs and outputs, as a dict."""


#: how a capture time is named, by `capture_state` (the first capture of a process pays one-time set-up)
CAPTURE_STATES = {"cold": "cold: the first capture in its process, with CUDA's and the libraries' one-time set-up",
                  "warm": "warm"}


def capture_time_text(capture_ms: float, state: str | None) -> str:
    """A capture time with the quantity it is: "8.1 ms (cold: the first capture in its process, ...)".

    >>> capture_time_text(1.94, "warm")
    '1.9 ms (warm)'
    >>> capture_time_text(2.0, None)
    '2.0 ms'
    """
    label = CAPTURE_STATES.get(state or "")
    return f"{capture_ms:.1f} ms" + (f" ({label})" if label else "")


def tensors_in_words(leaves: Iterable[tuple[str, Sequence[int], str]]) -> str:
    """Tensors by (path, shape, dtype), in words: one positional tensor is "8 x 256 float32"; several, or named
    ones, carry their name or path as code: "`ids` 1 x 64 int64", "`logits` 1 x 64 x 512 float32, `probs` ...".

    >>> tensors_in_words([("[0]", (8, 256), "float32")]), tensors_in_words([("['ids']", (1, 64), "int64")])
    ('8 x 256 float32', '`ids` 1 x 64 int64')
    """
    items = list(leaves)
    if not items:
        return "none"
    if len(items) == 1 and items[0][0] in ("[0]", "output", ""):
        return f"{present.shape(items[0][1])} {items[0][2]}"

    def name(path: str) -> str:
        match = re.fullmatch(r"\[(['\"])(.+)\1\]", path)
        return match.group(2) if match else path

    return ", ".join(f"`{name(path)}` {present.shape(dims)} {dtype}" for path, dims, dtype in items)


def capture_cost_words(capture_ms: float, state: str | None, instantiate_ms: float | None = None) -> str:
    """A capture time for people, with the quantity it is: "8.10 ms (cold: the first capture in its process,
    ...), instantiating 0.449 ms"."""
    label = CAPTURE_STATES.get(state or "")
    text = present.duration(capture_ms * 1e3) + (f" ({label})" if label else "")
    if instantiate_ms:
        text += f", then instantiating it {present.duration(instantiate_ms * 1e3)}"
    return text


def summary_facts(cost: Any, *, title: str, nodes: str, where: str, inputs: str, outputs: str,
                  notes: Sequence[str] = ()) -> present.Table:
    """A captured graph's summary as a two-column table for people (live and recorded graphs show the same
    rows): its nodes, where it lives, what capturing it cost, its memory, its static inputs and outputs.
    `cost` holds capture_ms, capture_state, instantiate_ms, pool_bytes, peak_bytes and exec_bytes (a live
    graph's `CaptureCost`, or a recorded graph itself)."""
    pool_bytes, peak_bytes, exec_bytes = cost.pool_bytes, cost.peak_bytes, cost.exec_bytes
    memory = f"pool {present.size(pool_bytes)}" if pool_bytes is not None else present.DASH
    extra = []
    if peak_bytes is not None:
        extra.append(f"peak in use while capturing {present.size(peak_bytes)}")
    if exec_bytes is not None:
        extra.append(f"executable graph {present.size(exec_bytes)}")
    if extra:
        memory += f" ({', '.join(extra)})"
    rows = [("nodes", nodes), ("calling it", where),
            ("capture", capture_cost_words(cost.capture_ms, cost.capture_state, cost.instantiate_ms)),
            ("memory", memory), ("static inputs", inputs), ("static outputs", outputs)]
    return present.facts(rows, title=title, notes=notes)


__all__ = ["CAPTURE_STATES", "capture_cost_words", "capture_time_text", "Origin", "Replayable", "summary_facts",
           "tensors_in_words"]
