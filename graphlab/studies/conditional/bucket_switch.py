"""Use 3, one graph for several batch sizes: a SWITCH over bucket bodies, chosen on the GPU.

A claim often made for conditional nodes is that they keep dynamic shapes "on the graph path". A SWITCH node
can hold one body per bucket (the zoo MLP captured at batch 1, 2, 4, ... 64 over views of one
64-row input buffer), and a kernel picks the body from a device-side row count, so one graph and
one launch serve every batch size. This measures it against what a graph cache does, one graph per
bucket (copy the rows into that bucket's static input, replay it), against one graph padded to
the largest bucket, against `gl.GraphCache` itself, and eager:

    >>> from graphlab.studies.conditional import bucket_switch_study
    >>> study = bucket_switch_study()         # live on a GPU, recorded otherwise  # doctest: +SKIP

Every body is still a fixed shape captured ahead: the SWITCH moves the choice of bucket onto the
GPU, it does not make shapes dynamic. Rows past the request in the chosen bucket hold stale data,
harmless for a model whose rows are independent (checked against eager for every size).
"""
from __future__ import annotations

from typing import Any, Sequence

import torch

from graphlab.cache.buckets import smallest_bucket
from graphlab.cache.graph_cache import GraphCache
from graphlab.capture.api import CapturedGraph, capture
from graphlab.conditional.api import switch
from graphlab.conditional.results import EAGER, PER_BUCKET, SWITCH, ConditionalStudy
from graphlab.errors import BadInputError
from graphlab.mode import stand_in
from graphlab.studies.conditional.common import graph_facts, max_abs_err, recorded, study_conditions, zoo_on_gpu
from graphlab.studies.conditional.timing import time_call
from graphlab.zoo import ZooModel

#: this study's name in the "conditional" recording (and in graphlab.conditional.results.VERDICTS)
STUDY = "bucket_switch"
BUCKETS = (1, 2, 4, 8, 16, 32, 64)
SIZES = (1, 3, 8, 20, 64)
PAD_TO_MAX = "one graph padded to the largest"
GRAPH_CACHE = "gl.GraphCache"
TOLERANCE = 1e-4


class BucketSwitch:
    """Static buffers for a SWITCH over buckets: x (max rows), out, the row count and the bucket index."""

    def __init__(self, model: torch.nn.Module, example_row: torch.Tensor, buckets: Sequence[int]):
        if list(buckets) != sorted(set(buckets)) or buckets[0] < 1:
            raise BadInputError(f"buckets must be distinct positive sizes in increasing order, got {list(buckets)}")
        self.model, self.buckets = model, tuple(buckets)
        device = example_row.device
        self.x = example_row.new_zeros(self.buckets[-1], *example_row.shape[1:]).normal_()
        with torch.no_grad():
            self.out = torch.empty_like(model(self.x))
        self.rows = torch.ones((), dtype=torch.long, device=device)
        self.index = torch.zeros((), dtype=torch.long, device=device)
        self.bounds = torch.tensor(self.buckets, dtype=torch.long, device=device)

    def pick(self) -> None:
        """index = the first bucket that holds `rows` (len(buckets) when none does: no body runs)."""
        self.index.copy_(torch.searchsorted(self.bounds, self.rows.view(1)).view(()))

    def body(self, size: int) -> Any:
        return lambda: self.out[:size].copy_(self.model(self.x[:size]))

    def bodies(self) -> list[Any]:
        return [self.body(b) for b in self.buckets]

    def bucket_for(self, rows: int) -> int:
        bucket = smallest_bucket(rows, self.buckets)
        if bucket is not None:
            return bucket
        raise BadInputError(f"{rows} rows do not fit the largest bucket ({self.buckets[-1]}): add a larger bucket")


@stand_in(recorded(STUDY))
def bucket_switch_study(*, buckets: Sequence[int] = BUCKETS, sizes: Sequence[int] = SIZES, repeats: int = 300,
                        route: str = "auto") -> ConditionalStudy:
    """Measure one SWITCH graph against one graph per bucket (module docs): host launch, GPU, memory, build.

    In recorded mode this returns the study recorded on the GPU (`graphlab record --models conditional`).
    """
    zoo = zoo_on_gpu("mlp", "bucket_switch_study")
    model = zoo.build(device="cuda")
    s = BucketSwitch(model, zoo.make_inputs(1, device="cuda")[0], buckets)
    bad = [n for n in sizes if not 1 <= n <= s.buckets[-1]]
    if bad:
        raise BadInputError(f"sizes {bad} fall outside the buckets 1..{s.buckets[-1]}: pick sizes within them")
    with torch.no_grad():
        graph = switch(s.index, s.bodies(), before=s.pick, route=route, name="bucket_switch")
        per_bucket: dict[int, CapturedGraph] = {}
        for b in sorted(s.buckets, reverse=True):  # largest first into one shared pool, as the graph cache does
            owner = per_bucket.get(s.buckets[-1])
            per_bucket[b] = capture(model, zoo.make_inputs(b, device="cuda")[0], name=f"mlp-b{b}", pool=owner)
        padded = per_bucket[s.buckets[-1]]
        cache, cache_note = _graph_cache(model, zoo, s.buckets)

        rows, errs = [], []
        for n in sizes:
            (batch,) = zoo.make_inputs(n, device="cuda", seed=n)
            want = model(batch)
            b = s.bucket_for(n)
            cg = per_bucket[b]

            def via_switch(batch: Any = batch, n: int = n) -> Any:
                s.x[:n].copy_(batch)
                s.rows.fill_(n)
                graph.launch()
                return s.out[:n]

            def via_bucket(batch: Any = batch, n: int = n, cg: Any = cg) -> Any:
                cg.inputs[0][:n].copy_(batch)
                cg.replay()
                return cg.outputs[:n]

            def via_padded(batch: Any = batch, n: int = n) -> Any:
                padded.inputs[0][:n].copy_(batch)
                padded.replay()
                return padded.outputs[:n]

            variants = [(SWITCH, via_switch), (PER_BUCKET, via_bucket), (PAD_TO_MAX, via_padded),
                        (EAGER, lambda batch=batch: model(batch))]
            if cache is not None:
                variants.append((GRAPH_CACHE, lambda batch=batch: cache(batch)))
            for variant, call in variants:
                got = call()
                torch.cuda.synchronize()
                err = max_abs_err(got, want)
                errs.append(err)
                rows.append({"variant": variant, "case": f"batch {n}", "batch_size": n,
                             "bucket": s.buckets[-1] if variant == PAD_TO_MAX else (None if variant == EAGER else b),
                             **time_call(call, repeats=repeats), "launches": 0 if variant == EAGER else 1,
                             "syncs": 0, "max_abs_err": err})
    facts = {"model": "mlp", "buckets": list(s.buckets), "sizes": list(sizes), **graph_facts(graph),
             "switch_pool_bytes": graph.pool_bytes, "switch_exec_bytes": graph.exec_bytes,
             "switch_build_ms": round(graph.capture_ms + graph.instantiate_ms, 3),
             "per_bucket_pool_bytes": sum(g.pool_bytes for g in per_bucket.values()),
             "per_bucket_exec_bytes": sum(g.exec_bytes or 0 for g in per_bucket.values()),
             "per_bucket_build_ms": round(sum(g.capture_ms + g.instantiate_ms for g in per_bucket.values()), 3),
             "graph_cache": cache_note, "tolerance": TOLERANCE}
    checks = {"matches_eager": all(e <= TOLERANCE for e in errs), "max_abs_err": max(errs)}
    dot = graph.dot(1)
    graph.close()
    for g in per_bucket.values():
        g.reset()
    if cache is not None and hasattr(cache, "clear"):
        cache.clear()
    return ConditionalStudy(
        name=STUDY, title=f"One SWITCH graph for batch sizes 1-{s.buckets[-1]} vs one graph per bucket",
        question="Do conditional nodes keep several batch sizes on the graph path more cheaply than one graph per "
                 "bucket?", rows=rows, checks=checks, facts=facts,
        conditions=study_conditions(repeats=repeats), dot=dot)


def _graph_cache(model: torch.nn.Module, zoo: ZooModel, buckets: Sequence[int]) -> tuple[GraphCache | None, str]:
    """The project's graph cache over the same buckets, warmed up (None, and why, when it cannot be built)."""
    try:
        cache = GraphCache(model, buckets=list(buckets), max_size=buckets[-1], copy_outputs=False)
        cache.warm_up(zoo.make_inputs(1, device="cuda")[0], progress=False)
        return cache, "copy_outputs=False, shared pool, warmed up"
    except Exception as exc:  # noqa: BLE001 - the comparison is optional; say why it is missing
        return None, f"skipped: {type(exc).__name__}: {str(exc)[:200]}"


def run_for_recording(quick: bool = False) -> ConditionalStudy:
    """The study as `graphlab record --models conditional` runs it (a quarter of the repeats when `quick`)."""
    return bucket_switch_study(repeats=75 if quick else 300)


__all__ = ["BUCKETS", "BucketSwitch", "GRAPH_CACHE", "PAD_TO_MAX", "SIZES", "STUDY", "bucket_switch_study",
           "run_for_recording"]
