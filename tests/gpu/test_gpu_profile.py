"""gl.profile on a real GPU: module attribution exact where the launch counts are known, every GPU node of the
zoo GPT matched, a GraphCache profiled bucket by bucket, the critical path's model giving back the span."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import graphlab as gl  # noqa: E402
from graphlab.profile.api import capture_with_modules  # noqa: E402
from graphlab.profile.modules import assign_modules  # noqa: E402
from graphlab.studies.profile import EXPECTED, counted_model  # noqa: E402
from graphlab.zoo import get_model  # noqa: E402

pytestmark = pytest.mark.gpu


def test_module_attribution_is_exact_when_each_module_launches_a_known_count():
    x = torch.randn(64, 64, device="cuda")
    cg, spans = capture_with_modules(counted_model().cuda(), x)
    graph = cg.graph
    found = assign_modules(spans, [n.index for n in graph.root.nodes])
    assert [found[n.index] for n in graph.root.nodes if n.kind.value == "kernel"] == EXPECTED
    cg.reset()


def test_every_gpu_node_of_the_zoo_gpt_is_matched_and_has_its_module():
    zoo = get_model("gpt")
    prof = gl.profile(zoo.build(), *zoo.make_inputs(1), replays=10)
    assert prof.replays == 10 and prof.matched_fraction == 1.0, prof.unmatched
    assert prof.span_us > 0 and 0 <= prof.idle_us < prof.span_us
    modules = {m for n in prof.nodes for m in n.modules}
    assert "blocks.0.qkv" in modules and "head" in modules
    assert prof.critical_path().span_us == pytest.approx(prof.span_us, rel=0.1)
    rows = prof.module_rows(depth=2)
    assert sum(r["gpu_us"] for r in rows) == pytest.approx(prof.node_sum_us)


def test_a_graph_cache_is_profiled_bucket_by_bucket():
    zoo = get_model("mlp")
    cache = gl.GraphCache(zoo.build(), buckets=[1, 8])
    cache.warmup(*zoo.make_inputs(8))
    profs = gl.profile(cache, replays=5)
    assert set(profs) == {"1", "8"} and all(p.matched_fraction == 1.0 for p in profs.values())
    one = gl.profile(cache, bucket="8", replays=5)
    assert one.name.endswith("bucket 8")
    with pytest.raises(gl.BadInputError, match="no graph for bucket"):
        gl.profile(cache, bucket="3")


# -- the what-if against a graph that really does half the work ------------------------------------------------
class _MatK(torch.nn.Module):
    """`x[:, :k] @ w[:k]`: the same output shape for any k, so k=K/2 is the same node doing half the work."""

    def __init__(self, w, k):
        super().__init__()
        self.register_buffer("w", w)
        self.k = k

    def forward(self, x):
        return x[:, :self.k] @ self.w[:self.k]


class _Chain(torch.nn.Module):
    def __init__(self, ws, half=None):
        super().__init__()
        k = ws[0].shape[0]
        for i, w in enumerate(ws):
            self.add_module(f"mm{i}", _MatK(w, k // 2 if f"mm{i}" == half else k))

    def forward(self, x):
        for m in self.children():
            x = m(x)
        return x


class _Fork(torch.nn.Module):
    """Two streams inside the capture: mm0 -> mm1 on the capturing stream, side0 (a quarter of the work) beside."""

    def __init__(self, ws, side_w, half=None):
        super().__init__()
        self.main = _Chain(ws, half)
        self.side0 = _MatK(side_w, side_w.shape[0])

    def forward(self, x):
        here = torch.cuda.current_stream()
        side = torch.cuda.Stream()
        side.wait_stream(here)
        with torch.cuda.stream(side):
            b = self.side0(x)
        a = self.main(x)
        here.wait_stream(side)
        return a[:, :b.shape[1]] + b


def _nodes_of(prof, module):
    return [n for n in prof.nodes if any(m == module or m.endswith("." + module) for m in n.modules)
            and n.median_us is not None]


def _check_what_if(build, x, module, report):
    full = gl.profile(build(None), x, replays=50, show_progress=False)
    half = gl.profile(build(module), x, replays=50, show_progress=False)
    chosen, halved = _nodes_of(full, module), _nodes_of(half, module)
    assert chosen and halved, (full.module_rows(), half.module_rows())
    predicted = full.what_if({n.node_id: 0.5 for n in chosen})
    ratio = sum(n.median_us for n in halved) / sum(n.median_us for n in chosen)  # what halving K really did
    with_ratio = full.what_if({n.node_id: ratio for n in chosen})
    report.update(full_span_us=full.span_us, half_span_us=half.span_us, predicted_span_us=predicted,
                  measured_node_ratio=ratio, predicted_with_measured_ratio_us=with_ratio,
                  chosen_share=sum(n.median_us for n in chosen) / full.span_us)
    print(module, {k: round(v, 3) for k, v in report.items()}, flush=True)
    assert predicted == pytest.approx(half.span_us, rel=0.10), report
    assert with_ratio == pytest.approx(half.span_us, rel=0.10), report
    return full


def test_the_what_if_predicts_a_chain_whose_chosen_gemm_does_half_the_work():
    torch.manual_seed(0)
    ws = [torch.randn(8192, 8192, device="cuda") / 90.0 for _ in range(3)]
    x = torch.randn(64, 8192, device="cuda")
    _check_what_if(lambda half: _Chain(ws, half).cuda(), x, "mm1", {})


def test_the_what_if_predicts_a_graph_with_parallel_branches():
    torch.manual_seed(0)
    ws = [torch.randn(8192, 8192, device="cuda") / 90.0 for _ in range(2)]
    side_w = torch.randn(8192, 2048, device="cuda") / 90.0
    x = torch.randn(64, 8192, device="cuda")
    full = _check_what_if(lambda half: _Fork(ws, side_w, half).cuda(), x, "mm1", {})
    on_path = set(full.critical_path().node_ids)
    assert {n.node_id for n in _nodes_of(full, "mm1")} <= on_path
    assert not {n.node_id for n in _nodes_of(full, "side0")} & on_path  # the short branch is not critical
