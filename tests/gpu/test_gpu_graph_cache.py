"""The graph cache on a real GPU: answers equal eager at every size, padding check, threads, eviction,
devices. Figures (hot path, pools) are measured in bench/bench_cache.py, not asserted here."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import graphlab as gl  # noqa: E402
from graphlab.zoo import get_model  # noqa: E402

pytestmark = pytest.mark.gpu


def test_mlp_every_size_matches_eager_and_each_bucket_is_captured_once():
    zoo = get_model("mlp")
    model = zoo.build()
    cache = gl.GraphCache(model, buckets="pow2", max_size=64)
    with torch.no_grad():
        for n in list(range(1, 65)) + [3, 64, 17]:
            (x,) = zoo.make_inputs(n, seed=n)
            torch.testing.assert_close(cache(x), model(x), rtol=1e-4, atol=1e-5)
    stats = cache.stats()
    assert stats.captures == 7 and stats.fallbacks == 0 and stats.hits == 64 + 3 - 7
    assert set(cache.graphs) == {"1", "2", "4", "8", "16", "32", "64"}
    assert cache.graph_for(5).graph.count_by_kind()["kernel"] >= 3  # a real graph, parsed from its DOT


def test_gpt_batch_and_right_padded_sequence_are_exact():
    zoo = get_model("gpt")
    model = zoo.build()
    cache = gl.GraphCache(model, dims=[gl.Pad("batch", dim=0, buckets=[1, 2, 4, 8], max_size=None),
                                       gl.Pad("seq", dim=1, buckets=[16, 32, 64], max_size=None, out_dim=1)])
    with torch.no_grad():
        for batch, seq in [(1, 10), (3, 17), (8, 64), (5, 33), (2, 16), (3, 9)]:
            ids = torch.randint(1, 512, (batch, seq), device="cuda")
            torch.testing.assert_close(cache(ids), model(ids), rtol=1e-4, atol=1e-4)


def test_padding_a_bidirectional_encoder_is_caught_on_the_gpu():
    encoder = get_model("encoder").build()
    cache = gl.GraphCache(encoder, dims=[gl.Pad("seq", dim=1, buckets=[32, 64], max_size=None, out_dim=1)])
    with torch.no_grad(), pytest.raises(gl.PaddingError, match=r"dim 1 \('seq'\)"):
        cache(torch.randint(1, 512, (2, 20), device="cuda"))


def test_sixteen_threads_with_mixed_sizes(run_threads):
    zoo = get_model("mlp")
    model = zoo.build()
    cache = gl.GraphCache(model, buckets="pow2", max_size=64)

    def work(seed):
        gen = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for i in range(30):
                n = int(torch.randint(1, 65, (1,), generator=gen))
                (x,) = zoo.make_inputs(n, seed=seed * 100 + i)
                torch.testing.assert_close(cache(x), model(x), rtol=1e-4, atol=1e-5)

    assert run_threads(work, range(16), 120) == []
    assert cache.stats().captures <= 7 and cache.stats().calls == 16 * 30


def test_evicting_private_graphs_returns_their_memory():
    zoo = get_model("gpt")
    model = zoo.build()
    with torch.no_grad():
        model(*zoo.make_inputs(64))
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        base = torch.cuda.memory_reserved()
        cache = gl.GraphCache(model, buckets=[8, 64], max_size=None, pool="private",
                              options=gl.CacheOptions(max_graphs=1))
        cache(*zoo.make_inputs(64))
        held_large = torch.cuda.memory_reserved() - base
        cache(*zoo.make_inputs(8))  # evicts the batch-64 graph
        held_small = torch.cuda.memory_reserved() - base
    assert cache.stats().evictions == 1 and held_small < held_large / 2


def test_a_graph_refuses_inputs_on_another_device_and_the_cache_falls_back_above_its_buckets():
    model = torch.nn.Linear(8, 8).cuda()
    with torch.no_grad():
        cg = gl.capture(model, torch.randn(2, 8, device="cuda"))
    with pytest.raises(gl.GraphlabError, match=r"input \[0\] is on cpu but graph 'Linear' lives on cuda:0"):
        cg(torch.randn(2, 8))
    cache = gl.GraphCache(model, buckets=[2], max_size=None)
    with torch.no_grad(), pytest.warns(UserWarning, match="above the largest bucket"):
        out = cache(torch.randn(5, 8, device="cuda"))
    assert out.shape == (5, 8) and cache.stats().fallbacks == 1


def test_from_host_copies_pinned_rows_into_the_graph_with_no_device_tensor_per_call():
    zoo = get_model("mlp")
    model = zoo.build()
    cache = gl.GraphCache(model, buckets=[1, 2, 4, 8], max_size=None, copy_outputs=False, device="cuda")
    with torch.no_grad():
        for n in [3, 4, 1, 8, 2, 3]:  # new signatures (the usual call plans them), then a hit
            (x,) = zoo.make_inputs(n, seed=n)
            got = cache.from_host(x.cpu().pin_memory())
            torch.testing.assert_close(got, model(x), rtol=1e-4, atol=1e-5)
        hosts = [zoo.make_inputs(3, seed=100 + i)[0].cpu().pin_memory() for i in range(10)]
        out = torch.empty(10, 3, *got.shape[1:], device="cuda")
        torch.cuda.synchronize()
        made = torch.cuda.memory_stats()["allocation.all.allocated"]
        for i, host in enumerate(hosts):
            out[i].copy_(cache.from_host(host))
        torch.cuda.synchronize()
        assert torch.cuda.memory_stats()["allocation.all.allocated"] == made  # no staging tensor on the device
        for i, host in enumerate(hosts):
            torch.testing.assert_close(out[i], model(host.cuda()), rtol=1e-4, atol=1e-5)
        made = torch.cuda.memory_stats()["allocation.all.allocated"]
        cache(hosts[0].cuda())  # the usual call, for contrast: the moved input is a new device tensor
        assert torch.cuda.memory_stats()["allocation.all.allocated"] > made
