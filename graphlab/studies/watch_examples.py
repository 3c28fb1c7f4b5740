"""Worked cases for `gl.watch`: what torch.compile, make_graphed_callables and a torch.cuda.graph block
capture, seen from outside; live on a GPU, else from the H200 recording (`graphlab record --models watch`).

    >>> ex = watch_example("compile")              # torch.compile(mode="reduce-overhead") on the zoo GPT
    >>> ex.seen.summary()                          # graphs CUDAGraph Trees recorded, by input shape
    >>> ex.calls_table()                           # seconds per call: compile, record, replay
    >>> gl.diff(ex.recording_for(8), ex.reference_graph(8))   # vs graphlab's own capture (gl.capture)
    >>> ex.memory_table()                          # pool memory: torch.compile vs gl.capture

This file plays the user's part: the watch attributes its captures to lines here.
The compile case takes about 15-30 s on an H200 (torch.compile compiles twice, static then with a
dynamic batch dimension: in the probe run the first calls at batch 1 and 4 took 6.7 s and 5.5 s);
the other two take about a second.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import torch

from graphlab import present
from graphlab.clock import Stopwatch
from graphlab.timing.sync import cuda_sync
from graphlab.capture.api import capture
from graphlab.env import require_cuda
from graphlab.errors import BadInputError, RecordingError
from graphlab.graph.diff import diff
from graphlab.graph.dot_parser import parse_dot
from graphlab.loader import load
from graphlab.mode import recorded_gpu, stand_in
from graphlab.present import Column, Table
from graphlab.progress import progress_bar
from graphlab.watch.api import watch
from graphlab.watch.records import RECORDING, WatchCases, WatchedGraph, WatchedGraphs
from graphlab.zoo import get_model

EXAMPLES = ("compile", "make_graphed_callables", "torch.cuda.graph")
DEFAULT_BATCH_SIZES = (1, 4, 8)
CALLS_PER_SIZE = 3
DESCRIPTIONS = {
    "compile": "torch.compile(mode='reduce-overhead') on the zoo GPT, called 3 times at each batch size under "
               "gl.watch: CUDAGraph Trees warms up, records, then replays; a new batch size re-records.",
    "make_graphed_callables": "torch.cuda.make_graphed_callables on the zoo MLP (batch 16, weights that "
                              "need gradients): one forward and one backward graph in one shared pool.",
    "torch.cuda.graph": "A plain `with torch.cuda.graph(g):` block over the zoo MLP at batch 8, in user code.",
}


@dataclass
class WatchExample:
    """One worked case: the graphs the watch saw, the calls that made them, and what was checked.

    Attributes:
        name: "compile", "make_graphed_callables" or "torch.cuda.graph".
        seen: the `WatchedGraphs`.
        calls: per call: batch_size, call, seconds, new_graphs (compile case).
        facts: what was counted and checked (recordings, compile ids, errors against eager, ...).
        reference: batch size -> graphlab's own capture of the same model (`gl.capture`), parsed.
        reference_pool_bytes: batch size -> the pool memory of that capture.
        source: where it ran: "live on ..." or the recording's banner.
    """

    name: str
    description: str
    seen: WatchedGraphs
    calls: list[dict[str, Any]] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    reference: dict[int, Any] = field(default_factory=dict)
    reference_pool_bytes: dict[int, int] = field(default_factory=dict)
    source: str = ""
    reference_dots: dict[int, str] = field(default_factory=dict, repr=False)

    def recording_for(self, batch_size: int) -> WatchedGraph:
        """The first CUDAGraph Trees recording whose inputs had this batch size."""
        for g in self.seen:
            if g.role == "recording" and batch_of(g) == batch_size:
                return g
        shapes = sorted({b for g in self.seen if g.role == "recording" and (b := batch_of(g)) is not None})
        raise BadInputError(f"no recording at batch size {batch_size} in the {self.name} example; it has {shapes}")

    def reference_graph(self, batch_size: int) -> Any:
        """graphlab's capture of the same model at this batch size (a `CudaGraph`)."""
        if batch_size not in self.reference:
            raise BadInputError(f"no gl.capture reference at batch size {batch_size}; it has {sorted(self.reference)}")
        return self.reference[batch_size]

    def diff(self, batch_size: int) -> Any:
        """`gl.diff` of what torch.compile captured vs what `gl.capture` captured, at one batch size."""
        return diff(self.recording_for(batch_size), self.reference_graph(batch_size),
                    names=(f"torch.compile b{batch_size}", f"gl.capture b{batch_size}"))

    def memory_rows(self) -> list[dict[str, Any]]:
        """Per batch size: nodes and pool memory of the torch.compile recording and of gl.capture.

        compile_pool_bytes is the reserved-memory growth during that recording (CUDAGraph Trees' one
        shared pool is mostly filled by its warm-up runs, so often 0), compile_pool_reserved_bytes
        what the shared pool held right after it; capture_pool_bytes is gl.capture's private pool.
        """
        rows = []
        for b in sorted(self.reference):
            rec = self.recording_for(b)
            ref = self.reference[b]
            rows.append({"batch_size": b, "compile_nodes": rec.nodes, "compile_kernels": rec.kernels,
                         "compile_pool_bytes": rec.pool_bytes, "compile_pool_reserved_bytes": rec.pool_reserved_bytes,
                         "capture_nodes": len(ref),
                         "capture_kernels": len(ref.kernels()), "capture_pool_bytes": self.reference_pool_bytes.get(b)})
        return rows

    def _title(self, what: str) -> str:
        return f"{what}: {self.source}" if self.source else what

    def memory_table(self) -> Table:
        """Pool memory per batch size, in MiB: what torch.compile's recording took from the device and what its one
        shared pool held right after it, beside gl.capture's own pool for the same model (`.memory_rows()` gives
        the raw numbers, with the node and kernel counts)."""
        mib = 1 / 2**20
        columns = [Column("batch_size", "batch size", kind="count"),
                   Column("compile_pool_bytes", "torch.compile: pool grew", kind="number", factor=mib, unit="MiB"),
                   Column("compile_pool_reserved_bytes", "torch.compile: shared pool held after", kind="number",
                          factor=mib, unit="MiB", missing="not known"),
                   Column("capture_pool_bytes", "gl.capture: its own pool", kind="number", factor=mib, unit="MiB",
                          missing="not measured")]
        notes = ["pool grew: reserved memory the recording took from the device; shared pool held after: all the "
                 "memory of the pool every recording shares (its warm-up runs filled it); gl.capture gives each "
                 "batch size a private pool."]
        return Table(self.memory_rows(), columns, index="batch_size",
                     title=self._title("Pool memory, torch.compile vs gl.capture"), notes=notes)

    def kernel_counts(self, batch_size: int) -> tuple[int, int]:
        """(kernels in torch.compile's recording, kernels in gl.capture's graph) at one batch size."""
        rec = self.recording_for(batch_size)
        return len(rec.graph.kernels()), len(self.reference_graph(batch_size).kernels())

    def calls_table(self) -> Table:
        """One row per call of the compiled model: its batch size, the call's number at that size, what it did
        (the first call at a size runs eagerly to warm up, compiling first when dynamo has to; a call that captures
        a graph records it; the others replay), its time and the graphs it made (`.calls` gives the raw rows)."""
        made = self._graphs_per_call()
        rows = []
        for i, c in enumerate(self.calls):
            new = c.get("new_graphs", 0)
            if c.get("call") == 0:
                did = "warm-up: runs eagerly (dynamo compiles first when it has to)"
                if made and made[i]:
                    did += f"; captures the {present.listing(made[i])}"
            elif new:
                did = f"captures the {present.listing(made[i])}" if made and made[i] else "records a graph"
            else:
                did = "replays the graph"
            rows.append({"batch_size": c.get("batch_size"), "call": (c.get("call") or 0) + 1, "did": did,
                         "seconds": c.get("seconds"), "new_graphs": new})
        columns = [Column("batch_size", "batch size", kind="count"), Column("call", "call at this size", kind="count"),
                   Column("did", "what it did", kind="text"),
                   Column("seconds", "time", kind="time", factor=1e6),
                   Column("new_graphs", "graphs captured", kind="count")]
        return Table(rows, columns, title=self._title(f"{present.count(len(rows))} calls of the compiled model"))

    def _graphs_per_call(self) -> list[list[str]] | None:
        """The roles of the graphs each call captured ("pool keeper", "recording"), when the calls' counts add up
        to the graphs the watch kept; None when they do not (a graph without a DOT was not kept)."""
        counts = [c.get("new_graphs", 0) for c in self.calls]
        if sum(counts) != len(self.seen):
            return None
        out, at = [], 0
        for n in counts:
            out.append([self.seen[at + k].role or "graph" for k in range(n)])
            at += n
        return out

    def facts_table(self) -> Table:
        """What was counted and checked, in words (`.facts` gives the raw values)."""
        return present.facts(_fact_rows(self), title=self._title(f"{self.name}: what the watch saw"),
                             notes=[self.description])

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, without the graphs themselves (the recorder stores those as DOT files)."""
        return {"name": self.name, "description": self.description, "calls": self.calls, "facts": self.facts,
                "reference_pool_bytes": {str(k): v for k, v in self.reference_pool_bytes.items()}}

    def __repr__(self) -> str:
        return f"<watch example {self.name!r}: {present.count(len(self.seen))} graphs; {self.source}>"

    def __str__(self) -> str:
        return str(self.facts_table())

    def _repr_html_(self) -> str:
        return self.facts_table()._repr_html_()


def _fact_rows(ex: WatchExample) -> list[tuple[str, Any]]:
    """The facts of one example as (what, value in words) rows; a fact this code does not know is shown with its
    key in words."""
    f = dict(ex.facts)
    rows: list[tuple[str, Any]] = []
    if "graphs" in f:
        parts = []
        if "recordings" in f:
            parts.append(f"{present.count(f.pop('recordings'))} recordings")
        if "pool_keepers" in f:
            keepers = f.pop("pool_keepers")
            parts.append(f"{present.count(keepers)} pool keeper{'s' if keepers != 1 else ''}")
        if "roles" in f:
            parts.append(present.listing(str(r) for r in f.pop("roles")))
        graphs = present.count(f.pop("graphs"))
        rows.append(("graphs the watch saw", f"{graphs}: {', '.join(parts)}" if parts else graphs))
    per_size = f.pop("recordings_per_batch_size", None)
    if per_size:
        counts = {int(b): n for b, n in per_size.items()}
        if set(counts.values()) == {1}:
            rows.append(("recordings per batch size", f"one at each batch size ({present.listing(sorted(counts))})"))
        else:
            rows.append(("recordings per batch size", present.listing(f"{n} at batch {b}" for b, n in sorted(counts.items()))))
    ids = f.pop("compile_ids", None)
    if ids is not None:
        rows.append(("dynamo compiles", _compiles_words(ex, list(ids))))
    first = f.pop("first_call_s", None)
    if first:
        rows.append(("first call at each batch size", present.listing(
            f"{present.duration(float(s) * 1e6)} at batch {b}" for b, s in sorted(first.items(), key=lambda x: int(x[0])))))
    if "total_s" in f:
        calls = f" for the {present.count(len(ex.calls))} calls" if ex.calls else ""
        rows.append(("all calls took", present.duration(float(f.pop("total_s")) * 1e6) + calls))
    if "seconds" in f:
        rows.append(("making the graphs took", present.duration(float(f.pop("seconds")) * 1e6)))
    if "library" in f:
        rows.append(("captured by", f.pop("library")))
    if "where" in f:
        f.pop("where")
        origin = ex.seen[0] if len(ex.seen) else None
        if origin is not None and origin.user_code:
            rows.append(("captured from", f"`{origin.user_code}` in `{origin.user_function}`"))
    errors = {"max_abs_err_vs_eager": "largest difference from eager (the last call at each size)",
              "forward_max_abs_err_vs_eager": "largest difference from eager, output",
              "grad_max_abs_err_vs_eager": "largest difference from eager, gradients",
              "replay_max_abs_err_vs_eager": "largest difference from eager after a replay with new inputs"}
    for key, what in errors.items():
        if key in f:
            rows.append((what, present.error(f.pop(key))))
    if "shared_pool" in f:
        rows.append(("one memory pool for both graphs", present.yes_no(f.pop("shared_pool"))))
    if "cudagraph_skips" in f:
        skips = f.pop("cudagraph_skips")
        rows.append(("times Inductor skipped CUDA graphs", "not known on this torch" if skips is None else
                     "none" if skips == 0 else present.count(skips)))
    rows += [(present.words(str(k)), v) for k, v in f.items()]
    return rows


def _compiles_words(ex: WatchExample, ids: list[str]) -> str:
    """ "2: `0/0` recorded batch 1; `0/1` (the batch size a dynamic input) recorded batch 4 and 8"."""
    if not ids:
        return "none recorded"
    sizes: dict[str, list[int]] = {}
    dynamic: set[str] = set()
    for g in ex.seen:
        cid = g.details.get("compile_id")
        if g.role == "recording" and cid:
            b = batch_of(g)
            if b is not None:
                sizes.setdefault(str(cid), []).append(b)
            if g.details.get("int_inputs"):
                dynamic.add(str(cid))
    parts = []
    for cid in ids:
        how = " (the batch size a dynamic input)" if cid in dynamic else ""
        served = f" recorded batch {present.listing(sorted(sizes[cid]))}" if sizes.get(cid) else ""
        parts.append(f"`{cid}`{how}{served}")
    return f"{present.count(len(ids))}: " + "; ".join(parts)


def _check_name(name: str) -> None:
    if name not in EXAMPLES:
        raise BadInputError(f"no watch example {name!r}; choose one of {', '.join(EXAMPLES)}")


def load_example(name: str = "compile", batch_sizes: Any = None, cases: WatchCases | None = None) -> WatchExample:
    """One worked case as recorded on a real GPU (`watch_example`'s answer in recorded mode), from `cases`
    (default: `gl.load(WatchCases)` of recorded mode's GPU)."""
    _check_name(name)
    cases = cases if cases is not None else load(WatchCases, RECORDING, gpu=recorded_gpu())
    info = cases.case(name)
    reference = cases.references(name)
    recorded_sizes = sorted(reference)
    if batch_sizes is not None and name == "compile" and sorted(batch_sizes) != recorded_sizes:
        raise RecordingError(f"the recording has the compile example at batch sizes {recorded_sizes} only, "
                             f"not {sorted(batch_sizes)}")
    return WatchExample(name, info["description"], cases.seen(name), info.get("calls", []), info.get("facts", {}),
                        reference, {int(k): v for k, v in info.get("reference_pool_bytes", {}).items()}, cases.where)


@stand_in(load_example)
def watch_example(name: str = "compile", batch_sizes: tuple[int, ...] | list[int] | None = None) -> WatchExample:
    """Run one worked case under `gl.watch` (live), or load it from the H200 recording (recorded mode).

    Args:
        name: "compile" (torch.compile reduce-overhead on the zoo GPT; about 15-30 s live),
            "make_graphed_callables" or "torch.cuda.graph" (about a second each).
        batch_sizes: the compile case's batch sizes (default 1, 4, 8); recorded mode has those only.

    Raises:
        BadInputError: no example of that name.
        RecordingError: recorded mode and the recording is missing (the message says how to make it).
        GPUUnavailableError: live use without a GPU (call `gl.set_mode("auto")` first for recordings).
    """
    _check_name(name)
    require_cuda("watch_example")
    example = run_example(name, tuple(batch_sizes or DEFAULT_BATCH_SIZES))
    example.source = f"live on this machine's {torch.cuda.get_device_name()}, torch {torch.__version__}"
    return example


def run_example(name: str, batch_sizes: tuple[int, ...] = DEFAULT_BATCH_SIZES, progress: bool = True) -> WatchExample:
    """Run one case live (the recorder calls this for each case)."""
    if name == "compile":
        return _compile_case(batch_sizes, progress)
    if name == "make_graphed_callables":
        return _graphed_callables_case()
    return _user_block_case()


# -- the cases (this file is the "user code" the watch points at) -------------------------------------------

def _skips() -> int:
    """How many times inductor skipped cudagraphs so far in this process (-1 if unknown)."""
    try:  # torch loads _dynamo on first use (torch.compile did): importing it at the top costs a second
        return int(torch._dynamo.utils.counters["inductor"]["cudagraph_skips"])
    except Exception:
        return -1


def batch_of(graph: WatchedGraph) -> int | None:
    """The batch size a recording ran at: the first dimension of its first input of two or more dims."""
    for shape in graph.input_shapes or ():
        if len(shape) >= 2:
            return int(shape[0])
    return None


def _compile_case(batch_sizes: tuple[int, ...], progress: bool = True) -> WatchExample:
    if not batch_sizes or any(b < 1 for b in batch_sizes):
        raise BadInputError(f"batch_sizes must be positive integers, got {list(batch_sizes)}")
    zm = get_model("gpt")
    model = zm.build(device="cuda")
    compiled = torch.compile(model, mode="reduce-overhead")
    calls: list[dict[str, Any]] = []
    max_err = 0.0
    skips0 = _skips()
    total = Stopwatch().start()
    bar = progress_bar(len(batch_sizes) * CALLS_PER_SIZE, "torch.compile calls (the first at each size compiles)",
                       show=progress, leave=False)
    with watch() as seen, torch.no_grad():
        for b in batch_sizes:
            (ids,) = zm.make_inputs(b, device="cuda")
            want = model(ids)
            for call in range(CALLS_PER_SIZE):
                before = len(seen)
                with Stopwatch(cuda_sync()) as one_call:
                    out = compiled(ids)
                calls.append({"batch_size": b, "call": call, "seconds": round(one_call.s, 4),
                              "new_graphs": len(seen) - before})
                if bar is not None:
                    bar.update(1)
            max_err = max(max_err, float((out.float() - want.float()).abs().max()))
    total_s = total.stop()
    if bar is not None:
        bar.close()
    reference: dict[int, Any] = {}
    reference_pool: dict[int, int] = {}
    reference_dots: dict[int, str] = {}
    for b in batch_sizes:
        cg = capture(model, *zm.make_inputs(b, device="cuda"), name=f"gpt-b{b}")
        reference_dots[b] = cg.dot()
        reference[b] = parse_dot(reference_dots[b], source=f"gl.capture b{b}")
        reference_pool[b] = int(cg.pool_bytes)
        cg.reset()
    recordings = seen.filter(role="recording")
    facts = {
        "graphs": len(seen), "recordings": len(recordings),
        "pool_keepers": len(seen.filter(role="pool keeper")),
        "recordings_per_batch_size": {str(b): sum(1 for g in recordings if batch_of(g) == b) for b in batch_sizes},
        "compile_ids": sorted({str(g.details.get("compile_id")) for g in recordings if g.details.get("compile_id")}),
        "first_call_s": {str(b): next(c["seconds"] for c in calls if c["batch_size"] == b) for b in batch_sizes},
        "total_s": round(total_s, 2), "max_abs_err_vs_eager": max_err,
        "cudagraph_skips": None if skips0 < 0 else _skips() - skips0,
    }
    return WatchExample("compile", DESCRIPTIONS["compile"], seen, calls, facts, reference, reference_pool,
                        reference_dots=reference_dots)


def _first_sentence(text: str) -> str:
    """A warning's first sentence, without torch's "(Triggered internally at ...)" tail."""
    text = text.split(" (Triggered internally")[0].strip()
    end = min((i for i in (text.find(". "), text.find("! ")) if i >= 0), default=-1)
    return text[: end + 1] if end >= 0 else text


def _graphed_callables_case() -> WatchExample:
    zm = get_model("mlp")
    model, eager = zm.build(device="cuda"), zm.build(device="cuda")  # same seeded weights
    (x,) = zm.make_inputs(16, device="cuda")
    # torch's autograd warns here (no current CUDA context for cuBLAS on the backward's thread; an AccumulateGrad
    # stream that differs from the graphed backward's): kept as facts in words, not spilled on the learner's stderr
    with torch.enable_grad(), warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        with Stopwatch() as making, watch() as seen:
            graphed = torch.cuda.make_graphed_callables(model, (x,))
        seconds = making.s
        (x2,) = zm.make_inputs(16, device="cuda", seed=1)
        out = graphed(x2)
        out.sum().backward()
        want = eager(x2)
        want.sum().backward()
    grad_err = max(float((p.grad - q.grad).abs().max()) for p, q in zip(model.parameters(), eager.parameters()))
    forward_err = float((out - want).detach().abs().max())  # detached: a float of a grad-tracking tensor warns
    facts = {"graphs": len(seen), "roles": [g.role for g in seen], "seconds": round(seconds, 3),
             "forward_max_abs_err_vs_eager": forward_err, "grad_max_abs_err_vs_eager": grad_err,
             "shared_pool": len({tuple(g.pool_id or ()) for g in seen}) == 1}
    said = sorted({_first_sentence(str(w.message)) for w in warned})
    if said:
        facts["torch_warned"] = said
    return WatchExample("make_graphed_callables", DESCRIPTIONS["make_graphed_callables"], seen, facts=facts)


def _user_block_case() -> WatchExample:
    zm = get_model("mlp")
    model = zm.build(device="cuda")
    (x,) = zm.make_inputs(8, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.no_grad():
        with torch.cuda.stream(side):
            for _ in range(3):
                model(x)  # warm up on a side stream, as PyTorch's docs do
        torch.cuda.current_stream().wait_stream(side)
        with watch() as seen:
            g = torch.cuda.CUDAGraph()  # made inside the watch, so the watch can keep it dumpable
            with torch.cuda.graph(g):
                y = model(x)
        (x_new,) = zm.make_inputs(8, device="cuda", seed=1)
        x.copy_(x_new)
        g.replay()
        err = float((y - model(x_new)).abs().max())
    facts = {"graphs": len(seen), "library": seen[0].library if len(seen) else None,
             "where": seen[0].where if len(seen) else None, "replay_max_abs_err_vs_eager": err}
    return WatchExample("torch.cuda.graph", DESCRIPTIONS["torch.cuda.graph"], seen, facts=facts)


__all__ = ["DEFAULT_BATCH_SIZES", "EXAMPLES", "RECORDING", "WatchExample", "batch_of", "load_example", "run_example",
           "watch_example"]
