"""The notebook face of graphlab.decode: the same calls live on a GPU and from the H200 recording without one.

    >>> report = decode_report("llama", batch_sizes=[1, 4])     # four ways timed (recorded: the H200's run)
    >>> graph = decode_graph("llama", batch=1)                  # the decode step's CUDA graph (a CudaGraph)
    >>> report.compile["all"]                                   # what torch.compile did (CompileSummary)
"""
from __future__ import annotations

from typing import Any, Sequence

from graphlab.decode.graphs import DecodeGraphs
from graphlab.decode.models import build_model
from graphlab.decode.recorded import recorded_graph, recorded_report
from graphlab.decode.results import WAYS, DecodeReport
from graphlab.decode.options import MAX_CACHE_LEN, DecodeOptions
from graphlab.decode.ways import compare_decode
from graphlab.env import require_cuda
from graphlab.graph.dot_parser import parse_dot
from graphlab.mode import stand_in


@stand_in(recorded_report)
def decode_report(arch: str = "llama", *, batch_sizes: Sequence[int] = (1, 4, 16, 64), ways: Sequence[str] = WAYS,
                  token_batches: Sequence[int] = (1, 4, 16), options: DecodeOptions = DecodeOptions(),
                  budget_s: float | None = None, progress: bool = True,
                  keep_dots: dict[str, str] | None = None) -> DecodeReport:
    """Time one decode step four ways on this GPU (graphlab.decode.ways.compare_decode, same arguments; `options`:
    the model size, the lengths and the timing rounds); recorded: the H200's."""
    return compare_decode(arch, batch_sizes=batch_sizes, ways=ways, token_batches=token_batches, options=options,
                          budget_s=budget_s, progress=progress, keep_dots=keep_dots)


@stand_in(recorded_graph)
def decode_graph(arch: str = "llama", batch: int = 1, compiled: bool = False) -> Any:
    """Capture the decode step of the small `arch` model at `batch` and return its parsed graph."""
    require_cuda("graphlab.decode.decode_graph")
    graphs = DecodeGraphs(build_model(arch, "small", device="cuda"), [batch], MAX_CACHE_LEN, compiled=compiled)
    graph = graphs.capture(batch).graph  # capture() sets it or raises
    return parse_dot(graph.dot(), source=f"{arch} decode step b{batch}{' (compiled)' if compiled else ''}")


__all__ = ["decode_graph", "decode_report"]
