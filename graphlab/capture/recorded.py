"""Recorded stand-ins: the same surface as live captured graphs, answered from recordings.

In recorded mode (`gl.set_mode("recorded")`, or "auto" on a machine without a GPU), `gl.capture(model, x)`
on a zoo model returns a `RecordedGraph`: its drawing, DOT, census, verification and capture cost are
what `graphlab record` measured on a real GPU, and calling it runs the model eagerly on this machine's
CPU (so the learner's next cells have real outputs to look at). It says so in its summary. A model, batch size
or input shape the recordings do not hold raises `GPUUnavailableError` naming what they do hold.

A recorded graph refuses what the live graph refuses: an input of another shape, dtype or structure raises the
same `BadInputError` with the same message, and says that the graph is a recorded one. Each call returns the
model's eager outputs (new tensors; a live graph returns its static outputs, the same tensors every call), and
`check_call` says so instead of claiming a replay.

`recorded_capture` and `recorded_cell` take the arguments of the live `capture_graph` and `capture_cell` (they
stand in for them through `graphlab.mode.stand_in`: one `CaptureOptions` each) and ignore the options a
recording cannot honour (a pool, a stream, warm-up runs). What a recorded graph cannot do here raises
`UnsupportedError` naming why.
"""
from __future__ import annotations

import ast
from typing import Any, Callable

from graphlab import present
from graphlab.capture.input_plan import InputPlan
from graphlab.capture.options import CaptureOptions
from graphlab.capture.tensors import describe_tree, flatten, grad_context, is_tensor, leading_size, map_tensors
from graphlab.capture.surface import capture_time_text, summary_facts, tensors_in_words
from graphlab.capture.verify import CallCheck, CensusCheck, VerifyResult
from graphlab.errors import BadInputError, GPUUnavailableError, RecordingError, UnsupportedError
from graphlab.graph.census import RecordedCensus, RecordedCensuses
from graphlab.graph.export import DEFAULT_DOT_FLAGS, parse_flags
from graphlab.loader import load, open_recording
from graphlab.mode import recorded_gpu
from graphlab.results_types import results_type
from graphlab.zoo import get_model

#: the recording of the notebooks' `%%cudagraph` cells (`graphlab record --models cells`: `graphlab.studies.cells`
#: writes it under this name, its `RECORDING`)
CELLS_RECORDING = "cells"


def zoo_name(fn: Any) -> str | None:
    """The zoo name a model built by `gl.get_model(name).build()` carries, else None."""
    return getattr(fn, "graphlab_zoo", None)


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
        #: the names a `%%cudagraph` cell's inputs go by (`step(ids=new_ids)`); empty for `gl.capture`
        self.input_names = tuple(self.info.get("inputs", ())) if fn is None else ()
        self.plan = InputPlan(static_inputs, name)
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

    def _refused(self, exc: BadInputError) -> BadInputError:
        return BadInputError(f"{exc} (this graph was {self.where}: it refuses what the live graph refuses)")

    def _checked(self, new_inputs: tuple[Any, ...], named: dict[str, Any]) -> tuple[Any, ...]:
        """The inputs, checked as the live graph checks them (same error, same message, plus that it is
        recorded), and copied into the static inputs as a live call does."""
        try:
            if named:
                new_inputs = self.plan.by_name(named, self.input_names)
            self.plan.feed(new_inputs)
        except BadInputError as exc:
            raise self._refused(exc) from None
        return new_inputs

    def __call__(self, *new_inputs: Any, **named: Any) -> Any:
        """Check the inputs as a live graph does, then run the model eagerly on this CPU (a recorded graph cannot
        replay without its GPU): the outputs are new tensors each call, not static ones."""
        self._checked(new_inputs, named)
        self.outputs = self._run(self.inputs)
        return self.outputs

    def unchecked(self, *new_inputs: Any) -> Any:
        """Copy the inputs in without a check (as the live fast path does) and run the model eagerly."""
        self.plan.feed_unchecked(new_inputs)
        self.outputs = self._run(self.inputs)
        return self.outputs

    def check_call(self, *new_inputs: Any) -> CallCheck:
        """What `cg.check_call` can say in recorded mode: the inputs are checked as live, then it says that nothing
        was replayed here, what a call does on a GPU, and what the GPU's own check found when it was recorded."""
        self._checked(new_inputs, {})
        if self._fn is not None:
            self.outputs = self._run(self.inputs)
        recorded = VerifyResult(**{**self.info["verify"], "where": self.where}) if "verify" in self.info else None
        return CallCheck(graph=self.name, where=self.where, recorded_check=recorded)

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
        """Where and when it was recorded: "recorded on NVIDIA H200 on 2026-12-01"."""
        return self.recording.made

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
        """The census `graphlab record` took through the CUDA graph API (`RecordedCensuses`, this graph's)."""
        census = None
        if results_type(RecordedCensuses).entry in self.recording.result_names:
            census = load(RecordedCensuses, self.recording).get(self.key)
        if census is None:
            raise GPUUnavailableError(f"{self.name}: the recording has no census for {self.key}")
        if census.census is None:
            raise GPUUnavailableError(f"{self.name}: no census was taken when {self.key} was recorded "
                                      f"({census.error})")
        return census

    def check_census(self) -> CensusCheck:
        """How the census `graphlab record` took on the GPU compared with the DOT, saying where and when."""
        return CensusCheck(len(self.graph), tuple(self.census().compare(self.graph)), where=self.where)

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

    def _tensors_in_words(self, tree: Any) -> str:
        return tensors_in_words((path, tuple(t.shape), str(t.dtype).replace("torch.", ""))
                                for path, t in flatten(tree) if is_tensor(t))

    def table(self) -> Any:
        """The summary as a table for people, titled with where and when it was recorded."""
        named = dict(zip(self.input_names, self.inputs)) if self.input_names else self.inputs
        running = ("checks the inputs as the live graph does, then runs the model eagerly on this CPU (nothing is "
                   "replayed)" if self._fn is not None else
                   "checks the inputs as the live graph does; its code is not in the recording, so it cannot run here")
        return summary_facts(
            self, title=f"CapturedGraph {self.name}, {self.where}", nodes=self.graph.kinds(), where=running,
            inputs=self._tensors_in_words(named), outputs=self._tensors_in_words(self.outputs))

    def __repr__(self) -> str:
        return (f"CapturedGraph {self.name!r}, {self.where}: {self.graph.kinds()}; capture "
                f"{capture_time_text(self.capture_ms, self.capture_state)}, pool {present.size(self.pool_bytes)}")

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


def _inputs_in_words(inputs: Any) -> str:
    """ "1 x 64 int64" or "8 x 256 float32 and 8 int64": the tensors of some inputs, for a message."""
    return present.listing(f"{present.shape(t.shape)} {str(t.dtype).replace('torch.', '')}"
                           for _, t in flatten(inputs) if is_tensor(t))


def recorded_capture(fn: Callable[..., Any], example_inputs: tuple[Any, ...],
                     options: CaptureOptions = CaptureOptions(), *, name: str | None = None) -> RecordedGraph:
    """Recorded mode's `gl.capture` (`capture_graph`): the graph the GPU recorded for zoo model `fn` at the batch
    size of `example_inputs`, with `fn` run eagerly here for its outputs. Of the options only `grad_mode` matters
    here; warm-up, pool, flags, stream, error mode and device are the recording's."""
    model_name = zoo_name(fn)
    if model_name is None:
        raise GPUUnavailableError(
            "recorded mode answers from recordings of the zoo models only (gl.get_model(name).build()); "
            f"capturing your own {type(fn).__name__} needs a CUDA GPU (gl.set_mode('live') on a GPU machine). Here, "
            "gl.estimate_launches(model, *inputs) estimates the launches it would make and what they cost")
    rec = open_recording(model_name, gpu=recorded_gpu())
    batch = leading_size(example_inputs)
    key = f"b{batch}"
    if key not in rec.graph_names:
        raise GPUUnavailableError(f"the {model_name} recording holds batch sizes "
                                  f"{', '.join(k[1:] for k in rec.graph_names)}, not {batch}: pick one of those, or "
                                  "capture on a GPU (gl.recorded_models() lists every recorded batch size, latency "
                                  "included)")
    # the recording was captured with the zoo's own inputs at this batch size: other shapes or dtypes are another graph
    recorded_inputs = get_model(model_name).make_inputs(batch, device="cpu")
    asked, held = _inputs_in_words(example_inputs), _inputs_in_words(recorded_inputs)
    if asked != held:
        raise GPUUnavailableError(f"asked for a {model_name} graph of inputs {asked}, the recording has {held}: "
                                  f"capture with the zoo's inputs (gl.get_model({model_name!r}).make_inputs({batch})), "
                                  "or capture other shapes on a GPU")
    static = map_tensors(lambda t: t.detach().clone(), example_inputs)
    with grad_context(options.grad_mode):
        outputs = fn(*static)
    return RecordedGraph(rec, key, fn, static, name or f"{model_name}-b{batch}", outputs, grad_mode=options.grad_mode)


def recorded_cell(code: str, namespace: dict[str, Any], options: CaptureOptions = CaptureOptions(), *,
                  name: str = "cell", filename: str | None = None) -> RecordedGraph:
    """Recorded mode's `%%cudagraph NAME`: run the cell eagerly here, return the graph the GPU recorded for it.
    Takes `capture_cell`'s arguments; the code, the namespace, the name and the grad mode matter to a recording."""
    try:
        rec = open_recording(CELLS_RECORDING, gpu=recorded_gpu())
    except RecordingError as exc:
        raise GPUUnavailableError(f"%%cudagraph {name}: no recording of notebook cells here ({exc})") from None
    entry = next((k for k in rec.graph_names if k == name and rec.graph_info(k).get("code", "").strip() ==
                  code.strip()), None)
    if entry is None:
        raise GPUUnavailableError(
            f"%%cudagraph {name}: recorded mode replays only the notebook cells the {CELLS_RECORDING!r} recording "
            f"holds, captured on a GPU ({', '.join(rec.graph_names)}), with their exact code; this cell needs a CUDA "
            "GPU. Without one, gl.estimate_launches estimates what its code would launch, e.g. "
            "gl.estimate_launches(lambda ids: model(ids).softmax(-1), ids)")
    with grad_context(options.grad_mode):
        exec(compile(ast.parse(code), filename or f"<recorded cell {name}>", "exec"), namespace)
    outputs = {k: v for k, v in namespace.items() if k in rec.graph_info(entry).get("outputs", []) and is_tensor(v)}
    inputs = tuple(namespace[k] for k in rec.graph_info(entry).get("inputs", []) if k in namespace)
    return RecordedGraph(rec, entry, None, inputs, name, outputs, grad_mode=options.grad_mode)


__all__ = ["CELLS_RECORDING", "RecordedCensus", "RecordedGraph", "recorded_capture", "recorded_cell", "zoo_name"]
