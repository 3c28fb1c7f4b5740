"""Recorded stand-ins: the same surface as live captured graphs, answered from recordings.

In recorded mode (`gl.set_mode("recorded")`, or "auto" on a machine without a GPU), `gl.capture(model, x)`
on a zoo model returns a `RecordedGraph`: its drawing, DOT, census, verification and capture cost are
what `graphlab record` measured on a real GPU, and calling it runs the model eagerly on this machine's
CPU (so the learner's next cells have real outputs to look at). It says so in its summary. A model or
batch size the recordings do not hold raises `GPUUnavailableError` naming what they do hold.

`recorded_capture` and `recorded_cell` take the arguments of the live `capture` and `capture_cell` (they
stand in for them through `graphlab.mode.stand_in`) and ignore those a recording cannot honour (a pool, a
stream, warm-up runs). What a recorded graph cannot do here raises `UnsupportedError` naming why.
"""
from __future__ import annotations

import ast
import html
from typing import Any, Callable

from graphlab.capture.tensors import describe_tree, grad_context, is_tensor, leading_size, map_tensors
from graphlab.capture.surface import capture_time_text
from graphlab.capture.verify import VerifyResult
from graphlab.errors import BadInputError, GPUUnavailableError, RecordingError, UnsupportedError
from graphlab.graph.export import DEFAULT_DOT_FLAGS, parse_flags
from graphlab.mode import recorded_gpu
from graphlab.recordings import load_recording


def zoo_name(fn: Any) -> str | None:
    """The zoo name a model built by `gl.get_model(name).build()` carries, else None."""
    return getattr(fn, "graphlab_zoo", None)


class RecordedCensus:
    """The node census `graphlab record` took through the CUDA graph API, and how it compared with the DOT."""

    def __init__(self, entry: dict[str, Any]):
        self.entry = entry

    def compare(self, graph: Any = None) -> list[str]:
        """The disagreements found on the GPU between this census and the parsed DOT (empty: they agree)."""
        return list(self.entry.get("disagreements", []))

    def to_dict(self) -> dict[str, Any]:
        return dict(self.entry)


class RecordedGraph:
    """A captured graph from a recording, with the live `CapturedGraph`'s surface (see the module docstring).

    Args:
        recording, key: the recording and its graph entry ("b8", a cell's name).
        fn: the model, run eagerly here on each call; None for a graph whose code the recording does not hold
            (a notebook cell, the capture after the pitfalls): calling that one raises `UnsupportedError`.
        static_inputs, outputs: what the graph was captured with and what that gave (run now if None).
    """

    origin = "recorded"

    def __init__(self, recording: Any, key: str, fn: Callable[..., Any] | None, static_inputs: tuple[Any, ...],
                 name: str, outputs: Any = None, grad_mode: str = "no_grad"):
        self.recording, self.key, self._fn, self.name = recording, key, fn, name
        self.grad_mode = grad_mode
        self.inputs = static_inputs
        self.info = recording.graph_info(key)
        self._was_reset = False
        if outputs is None and fn is not None:
            outputs = self._run(static_inputs)
        self.outputs = {} if outputs is None else outputs
        self.dot_flags = self.info.get("dot_flags", DEFAULT_DOT_FLAGS)

    # -- running: eagerly, on this machine ---------------------------------------------------------------
    def _run(self, inputs: tuple[Any, ...]) -> Any:
        if self._was_reset:
            raise BadInputError(f"graph {self.name!r} was reset: capture it again")
        if self._fn is None:
            raise UnsupportedError(f"graph {self.name!r} comes from a recording that holds its DAG but not its code, "
                                   "so it cannot run here: its outputs are those it gave when it was recorded")
        with grad_context(self.grad_mode):
            return self._fn(*inputs)

    def __call__(self, *new_inputs: Any, **named: Any) -> Any:
        """Run the model eagerly on this CPU (a recorded graph cannot replay without its GPU)."""
        if named:
            raise BadInputError(f"graph {self.name!r} takes its inputs by position, got {', '.join(named)} by name")
        self.outputs = self._run(new_inputs)
        return self.outputs

    def unchecked(self, *new_inputs: Any) -> Any:
        """The same as calling it: there are no checks to skip in an eager run."""
        return self(*new_inputs)

    def replay(self) -> Any:
        """Run the model eagerly on the static inputs."""
        self.outputs = self._run(self.inputs)
        return self.outputs

    # -- what was recorded ----------------------------------------------------------------------------------
    capture_ms = property(lambda self: float(self.info.get("capture_ms", 0.0)))
    instantiate_ms = property(lambda self: float(self.info.get("instantiate_ms", 0.0)))

    @property
    def capture_state(self) -> str | None:
        """"cold" or "warm" as recorded; for a zoo recording made before the field, its first graph is the
        cold one (`graphlab record --models NAME` captures the batch sizes in order in a fresh process)."""
        state = self.info.get("capture_state")
        if state is None and self._fn is not None and self.recording.graph_names:
            state = "cold" if self.key == self.recording.graph_names[0] else "warm"
        return state
    # recordings made before pool_bytes was the one name call it memory_bytes
    pool_bytes = property(lambda self: int(self.info.get("pool_bytes", self.info.get("memory_bytes", 0))))
    peak_bytes = property(lambda self: self.info.get("peak_bytes"))
    exec_bytes = property(lambda self: self.info.get("exec_bytes"))

    @property
    def where(self) -> str:
        prov = self.recording.provenance
        return f"recorded on {prov.get('gpu')} ({prov.get('date', '')[:10]})"

    @property
    def graph(self) -> Any:
        """The parsed graph of the recorded DOT."""
        return self.recording.graph(self.key)

    def dot(self, flags: Any = None) -> str:
        """The DOT the GPU wrote (with the flags it was recorded with)."""
        if flags is not None:
            if parse_flags(flags) != self.dot_flags:
                raise GPUUnavailableError(f"{self.name}: the recording holds the DOT with flags {self.dot_flags} "
                                          f"only; other flags need the GPU (gl.set_mode('live') on a GPU machine)")
        return self.recording.dot(self.key)

    def census(self) -> RecordedCensus:
        """The census `graphlab record` took through the CUDA graph API."""
        entry = (self.recording.results("census") if "census" in self.recording.result_names else {}).get(self.key)
        if entry is None:
            raise GPUUnavailableError(f"{self.name}: the recording has no census for {self.key}")
        return RecordedCensus(entry)

    def verify(self, make_inputs: Any = None, trials: int = 3) -> Any:
        """What verify() found on the GPU when this graph was recorded."""
        if "verify" not in self.info:
            raise GPUUnavailableError(f"{self.name}: the recording kept no verification for {self.key}")
        return VerifyResult(**{**self.info["verify"], "where": self.where})

    def pool(self) -> Any:
        raise GPUUnavailableError("a recorded graph has no memory pool to share: that needs the GPU")

    def reset(self) -> None:
        """Drop the outputs; the graph cannot run afterwards (as a live graph cannot replay after reset)."""
        self.outputs = {}
        self._was_reset = True

    # -- display -------------------------------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        counts = self.graph.count_by_kind()
        return {"name": self.name, "device": self.where, "nodes": sum(counts.values()), "count_by_kind": counts,
                "capture_ms": round(self.capture_ms, 3), "capture_state": self.capture_state,
                "instantiate_ms": round(self.instantiate_ms, 3),
                "pool_bytes": self.pool_bytes, "peak_bytes": self.peak_bytes, "exec_bytes": self.exec_bytes,
                "inputs": describe_tree(self.inputs), "outputs": describe_tree(self.outputs)}

    def __repr__(self) -> str:
        s = self.summary()
        kinds = ", ".join(f"{v} {k}" for k, v in s["count_by_kind"].items())
        return (f"CapturedGraph({s['name']!r}, {s['device']}: {s['nodes']} nodes ({kinds}); capture "
                f"{capture_time_text(s['capture_ms'], s['capture_state'])}, pool +{s['pool_bytes'] / 2**20:.1f} MiB)")

    def _repr_html_(self) -> str:
        s = self.summary()
        rows = [("nodes", f"{s['nodes']} (" + ", ".join(f"{v} {k}" for k, v in s["count_by_kind"].items()) + ")"),
                ("where", s["device"] + ": replay here runs the model eagerly on the CPU"),
                ("capture", f"{capture_time_text(s['capture_ms'], s['capture_state'])} (+ instantiate {s['instantiate_ms']:.1f} ms)"),
                ("memory", f"pool +{s['pool_bytes'] / 2**20:.2f} MiB"),
                ("inputs", ", ".join(f"{k}: {v}" for k, v in s["inputs"].items()) or "none"),
                ("outputs", ", ".join(f"{k}: {v}" for k, v in s["outputs"].items()) or "none")]
        body = "".join(f"<tr><th style='text-align:left'>{k}</th><td style='text-align:left'>{html.escape(v)}</td>"
                       "</tr>" for k, v in rows)
        return f"<b>CapturedGraph {html.escape(s['name'])}</b> (recorded)<table>{body}</table>"


def recorded_capture(fn: Callable[..., Any], *example_inputs: Any, warmup: int = 3, pool: Any = None,
                     dot_flags: int | str = DEFAULT_DOT_FLAGS, name: str | None = None, grad_mode: str = "no_grad",
                     stream: Any = None, capture_error_mode: str = "global", device: Any = None) -> RecordedGraph:
    """Recorded mode's `gl.capture`: the graph the GPU recorded for zoo model `fn` at the batch size of
    `example_inputs`, with `fn` run eagerly here for its outputs. Takes `capture`'s arguments; warm-up, pool,
    flags, stream, error mode and device are the recording's."""
    model_name = zoo_name(fn)
    if model_name is None:
        raise GPUUnavailableError(
            "recorded mode answers from recordings of the zoo models only (gl.get_model(name).build()); "
            f"capturing your own {type(fn).__name__} needs a CUDA GPU (gl.set_mode('live') on a GPU machine). Here, "
            "gl.estimate_launches(model, *inputs) estimates the launches it would make and what they cost")
    rec = load_recording(model_name, gpu=recorded_gpu())
    batch = leading_size(example_inputs)
    key = f"b{batch}"
    if key not in rec.graph_names:
        raise GPUUnavailableError(f"the {model_name} recording holds batch sizes "
                                  f"{', '.join(k[1:] for k in rec.graph_names)}, not {batch}: pick one of those, or "
                                  "capture on a GPU (gl.recorded_models() lists every recorded batch size, latency "
                                  "included)")
    static = map_tensors(lambda t: t.detach().clone(), example_inputs)
    with grad_context(grad_mode):
        outputs = fn(*static)
    return RecordedGraph(rec, key, fn, static, name or f"{model_name}-b{batch}", outputs, grad_mode=grad_mode)


def recorded_cell(code: str, namespace: dict[str, Any], *, warmup: int = 3, name: str = "cell",
                  dot_flags: int | str = DEFAULT_DOT_FLAGS, grad_mode: str = "no_grad", stream: Any = None,
                  pool: Any = None, capture_error_mode: str = "global", filename: str | None = None) -> RecordedGraph:
    """Recorded mode's `%%cudagraph NAME`: run the cell eagerly here, return the graph the GPU recorded for it.
    Takes `capture_cell`'s arguments; only the code, the namespace and the name matter to a recording."""
    try:
        rec = load_recording("cells", gpu=recorded_gpu())
    except RecordingError as exc:
        raise GPUUnavailableError(f"%%cudagraph {name}: no recording of notebook cells here ({exc})") from None
    entry = next((k for k in rec.graph_names if k == name and rec.graph_info(k).get("code", "").strip() ==
                  code.strip()), None)
    if entry is None:
        raise GPUUnavailableError(
            f"%%cudagraph {name}: recorded mode replays only the notebook cells `graphlab record --models cells` "
            f"captured on a GPU ({', '.join(rec.graph_names)}), with their exact code; this cell needs a CUDA GPU. "
            "Without one, gl.estimate_launches estimates what its code would launch, e.g. "
            "gl.estimate_launches(lambda ids: model(ids).softmax(-1), ids)")
    with grad_context(grad_mode):
        exec(compile(ast.parse(code), filename or f"<recorded cell {name}>", "exec"), namespace)
    outputs = {k: v for k, v in namespace.items() if k in rec.graph_info(entry).get("outputs", []) and is_tensor(v)}
    inputs = tuple(namespace[k] for k in rec.graph_info(entry).get("inputs", []) if k in namespace)
    return RecordedGraph(rec, entry, None, inputs, name, outputs, grad_mode=grad_mode)


__all__ = ["RecordedCensus", "RecordedGraph", "recorded_capture", "recorded_cell", "zoo_name"]
