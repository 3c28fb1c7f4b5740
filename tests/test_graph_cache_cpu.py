"""The graph cache's logic on CPU, with the eager backend (replay = run the model on the static inputs):
buckets and padding, the padding check, fallback, keys, limits, stats, thread safety."""
from __future__ import annotations

import dataclasses
import warnings
from typing import NamedTuple

import pytest
import torch

import graphlab as gl
from graphlab.cache.buckets import (POLICIES, BucketTable, bucket_list, bucket_policy, policy_names, pow2_buckets,
                                    vllm_buckets)
from graphlab.errors import BadInputError, CacheMissError, ConfigurationError, PaddingError

#: the padding check off: these tests watch what the model is given, and the check would call it too
NO_CHECK = gl.CacheOptions(check_padding=False)


def rowwise():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4)).eval()


class Bidirectional(torch.nn.Module):
    """Every position sees every other one (mean over the sequence): right padding changes the answer."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(50, 8)

    def forward(self, ids):
        h = self.emb(ids)
        return h + h.mean(dim=1, keepdim=True)


class Causal(torch.nn.Module):
    """Position t sees positions <= t only (a cumulative mean): right padding is exact."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(50, 8)

    def forward(self, ids):
        h = self.emb(ids)
        steps = torch.arange(1, ids.shape[1] + 1, dtype=h.dtype).view(1, -1, 1)
        return h.cumsum(dim=1) / steps


# -- buckets ------------------------------------------------------------------------------------------------
def test_policies():
    assert pow2_buckets(64) == [1, 2, 4, 8, 16, 32, 64]
    assert pow2_buckets(48) == [1, 2, 4, 8, 16, 32, 48]
    assert vllm_buckets(40) == [1, 2, 4, 8, 16, 24, 32, 40]
    assert vllm_buckets(300)[-4:] == [256, 272, 288, 300]
    assert bucket_list("every", 3) == [1, 2, 3] and bucket_list([8, 2, 2]) == [2, 8]


def test_bad_bucket_specs_are_refused_clearly():
    with pytest.raises(BadInputError, match="unknown bucket policy 'pow3'"):
        bucket_list("pow3", 8)
    with pytest.raises(ConfigurationError, match="needs max_size"):
        bucket_list("pow2", None)
    with pytest.raises(BadInputError, match="positive integers"):
        bucket_list([0, 4])
    with pytest.raises(BadInputError, match="positive integers"):
        bucket_list([])


def test_a_new_bucket_policy_is_one_registration_that_everything_sees():
    @bucket_policy("pow4", label="powers of four")
    def pow4_buckets(max_size):
        out, size = [], 1
        while size < max_size:
            out.append(size)
            size *= 4
        return out + [max_size]

    try:
        assert "pow4" in policy_names() and bucket_list("pow4", 64) == [1, 4, 16, 64]
        cache = gl.GraphCache(rowwise(), buckets="pow4", max_size=64, backend="eager")
        assert list(cache.tables[0].buckets) == [1, 4, 16, 64] and "batch buckets 1, 4, 16 and 64" in repr(cache)
        advice = gl.advise_buckets([1, 3, 9, 40], {s: 10.0 + s for s in range(1, 65)}, max_graphs=2)
        assert advice.strategy("powers of four").buckets == (1, 4, 16, 40)  # the ladder up to the first cover
        from graphlab.serve.config import ServeConfig

        assert ServeConfig(buckets="pow4", max_batch_size=16).bucket_list() == [1, 4, 16]
    finally:
        del POLICIES["pow4"]
    with pytest.raises(BadInputError, match="unknown bucket policy 'pow4'"):
        bucket_list("pow4", 64)


def test_bucket_table_is_the_smallest_bucket_that_holds_a_size():
    table = BucketTable([1, 2, 4, 8])
    assert [table.bucket_for(n) for n in range(1, 10)] == [1, 2, 4, 4, 8, 8, 8, 8, None]
    assert table.bucket_for(0) is None
    assert table.pad_waste([3, 8]) == pytest.approx(1 / 12)


# -- the cache ----------------------------------------------------------------------------------------------
def test_any_batch_size_matches_the_model_and_buckets_are_reused():
    model = rowwise()
    cache = gl.GraphCache(model, buckets=[1, 2, 4, 8], backend="eager", max_size=None)
    with torch.no_grad():
        for n in [3, 4, 1, 3, 7, 8]:
            x = torch.randn(n, 8)
            out = cache(x)
            assert out.shape == (n, 4)
            torch.testing.assert_close(out, model(x))
    stats = cache.stats()
    assert (stats.captures, stats.hits, stats.fallbacks) == (3, 3, 0)  # buckets 4, 1, 8 captured
    assert set(cache.graphs) == {"1", "4", "8"}
    assert stats.per_bucket["4"].calls == 3 and stats.per_bucket["4"].padded_rows == 1 + 0 + 1
    assert stats.pad_waste == pytest.approx((1 + 1 + 1) / (4 * 3 + 1 + 8 * 2))


def test_padding_region_is_reset_when_a_smaller_call_follows_a_larger_one():
    seen = []

    def spy(x):
        seen.append(x.clone())
        return x * 2

    cache = gl.GraphCache(spy, buckets=[8], max_size=None, backend="eager", options=NO_CHECK)
    cache(torch.full((7, 2), 5.0))
    cache(torch.full((2, 2), 3.0))
    last = seen[-1]
    assert torch.equal(last[:2], torch.full((2, 2), 3.0)) and torch.equal(last[2:], torch.zeros(6, 2))


def test_padding_that_changes_the_answer_raises_and_returns_nothing():
    model = Bidirectional().eval()
    cache = gl.GraphCache(model, dims=[gl.Pad("seq", dim=1, buckets=[8, 16], max_size=None, out_dim=1)],
                          backend="eager")
    ids = torch.randint(1, 50, (2, 5))
    with torch.no_grad(), pytest.raises(PaddingError) as info:
        cache(ids)
    err = info.value
    assert err.dim_name == "seq" and err.max_abs_err > 0
    assert "dim 1 ('seq')" in str(err) and "attention mask" in str(err) and "Nothing was returned" in str(err)
    with torch.no_grad(), pytest.raises(PaddingError):  # padding into that graph fails again, at once
        cache(torch.randint(1, 50, (2, 6)))
    with torch.no_grad():  # an exact size needs no padding, so its graph serves it
        ids = torch.randint(1, 50, (2, 8))
        torch.testing.assert_close(cache(ids), model(ids))


def test_padding_along_two_dims_is_reset_too():
    seen = []

    def spy(ids):
        seen.append(ids.clone())
        return ids * 2

    cache = gl.GraphCache(spy, dims=[gl.Pad("batch", dim=0, buckets=[4], max_size=None),
                                     gl.Pad("seq", dim=1, buckets=[16], max_size=None, out_dim=1)],
                          backend="eager", options=NO_CHECK)
    out = cache(torch.full((3, 14), 5))
    assert out.shape == (3, 14) and torch.equal(out, torch.full((3, 14), 10))
    cache(torch.full((4, 9), 3))  # fewer positions, more rows: the old positions 9..13 must go
    expected = torch.zeros(4, 16, dtype=torch.long)
    expected[:, :9] = 3
    assert torch.equal(seen[-1], expected)


def test_right_padding_a_causal_model_is_exact():
    model = Causal().eval()
    cache = gl.GraphCache(model, dims=[gl.Pad("batch", dim=0, buckets=[1, 2, 4], max_size=None),
                                       gl.Pad("seq", dim=1, buckets=[8, 16], max_size=None, out_dim=1)],
                          backend="eager")
    with torch.no_grad():
        for batch, seq in [(3, 5), (1, 16), (2, 9)]:
            ids = torch.randint(1, 50, (batch, seq))
            torch.testing.assert_close(cache(ids), model(ids))
    assert set(cache.graphs) == {"4x8", "1x16", "2x16"}


def test_exact_false_never_pads_and_exact_true_skips_the_check():
    model = Bidirectional().eval()
    never = gl.GraphCache(model, dims=[gl.Pad("seq", dim=1, buckets=[8], max_size=None, out_dim=1, exact=False)],
                          backend="eager")
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ids = torch.randint(1, 50, (2, 5))
        torch.testing.assert_close(never(ids), model(ids))
    assert never.stats().fallbacks == 1 and never.stats().graphs == 0
    trusted = gl.GraphCache(model, dims=[gl.Pad("seq", dim=1, buckets=[8], max_size=None, out_dim=1, exact=True)],
                            backend="eager")
    with torch.no_grad():
        trusted(torch.randint(1, 50, (2, 5)))  # the caller said it is exact: no check, no error
    assert trusted.stats().captures == 1


def test_above_the_largest_bucket_runs_eagerly_warns_once_and_counts():
    model = rowwise()
    cache = gl.GraphCache(model, buckets=[1, 2], max_size=None, backend="eager")
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            x = torch.randn(5, 8)
            torch.testing.assert_close(cache(x), model(x))
    assert len([w for w in caught if "above the largest bucket" in str(w.message)]) == 1
    assert cache.stats().fallbacks == 3 and cache.stats().fallback_reasons == {"above the largest bucket": 3}


def test_strict_refuses_sizes_it_cannot_serve():
    cache = gl.GraphCache(rowwise(), buckets=[1, 2], max_size=None, backend="eager", strict=True)
    with torch.no_grad(), pytest.raises(CacheMissError, match=r"size 3 > largest bucket 2"):
        cache(torch.randn(3, 8))


def test_autograd_calls_fall_back_instead_of_losing_the_history():
    model = rowwise()
    cache = gl.GraphCache(model, buckets=[4], max_size=None, backend="eager")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = cache(torch.randn(4, 8))
    assert out.requires_grad and cache.stats().fallbacks == 1 and cache.stats().graphs == 0
    with torch.inference_mode():
        cache(torch.randn(4, 8))
    with torch.no_grad():  # the graph captured under inference mode serves no_grad calls too
        cache(torch.randn(3, 8))
    assert (cache.stats().captures, cache.stats().hits) == (1, 1)


def test_keys_separate_dtypes_other_dims_and_plain_arguments():
    fn = lambda x, k: x * k  # noqa: E731
    cache = gl.GraphCache(fn, buckets=[4], max_size=None, backend="eager")
    with torch.no_grad():
        cache(torch.randn(3, 8), 2)
        cache(torch.randn(3, 8), 3)
        cache(torch.randn(3, 8).double(), 2)
        cache(torch.randn(3, 5), 2)
        out = cache(torch.ones(2, 8), 3)
    assert cache.stats().captures == 4 and torch.equal(out, torch.full((2, 8), 3.0))
    assert list(cache.graphs) == ["4#0", "4#1", "4#2", "4#3"]  # one bucket, four keys: told apart in LRU order
    assert cache.graphs["4#3"] is cache.graph_for(3)  # the most recently used one


def test_inputs_that_disagree_on_the_padded_dim_are_refused():
    cache = gl.GraphCache(lambda a, b: a + b, buckets=[4], max_size=None, backend="eager")
    with torch.no_grad(), pytest.raises(BadInputError, match="inputs disagree on dim 0"):
        cache(torch.randn(3, 2), torch.randn(2, 2))


def test_max_graphs_evicts_the_least_recently_used():
    cache = gl.GraphCache(rowwise(), buckets=[1, 2, 4, 8], max_size=None, backend="eager",
                          options=gl.CacheOptions(max_graphs=2))
    with torch.no_grad():
        for n in [1, 2, 1, 4]:
            cache(torch.randn(n, 8))
    assert set(cache.graphs) == {"1", "4"} and cache.stats().evictions == 1


def test_memory_budget_evicts_until_it_fits():
    budget = gl.CacheOptions(memory_budget_bytes=8 * 4 * 4 + 4 * 4 * 4)  # outputs of buckets 8 and 4, float32
    cache = gl.GraphCache(rowwise(), buckets=[1, 2, 4, 8], max_size=None, backend="eager", options=budget)
    with torch.no_grad():
        for n in [1, 2, 4, 8]:
            cache(torch.randn(n, 8))
    assert set(cache.graphs) == {"4", "8"} and cache.stats().evictions == 2


def test_warm_up_captures_every_bucket_largest_first():
    captured = []
    from graphlab.cache.backends import EagerBackend

    class Spy(EagerBackend):
        def capture(self, fn, static_inputs, **kw):
            captured.append(static_inputs[0].shape[0])
            return super().capture(fn, static_inputs, **kw)

    cache = gl.GraphCache(rowwise(), buckets=[1, 2, 4, 8], max_size=None, backend=Spy())
    stats = cache.warm_up(torch.randn(3, 8), progress=False)
    assert captured == [8, 4, 2, 1] and stats.captures == 4
    with torch.no_grad():
        cache(torch.randn(3, 8))
    assert cache.stats().hits == 1 and cache.stats().captures == 4
    with pytest.raises(BadInputError, match="not a bucket"):
        cache.warm_up(torch.randn(3, 8), sizes=[3], progress=False)
    assert cache.stats().captures == 4  # a bad size is refused before anything is captured
    with pytest.raises(BadInputError, match="needs example inputs"):
        cache.warm_up(progress=False)


def test_copy_outputs_false_returns_views_of_the_static_outputs():
    cache = gl.GraphCache(lambda x: x + 1, buckets=[4], max_size=None, backend="eager", copy_outputs=False)
    with torch.no_grad():
        first = cache(torch.zeros(4, 2))
        cache(torch.ones(4, 2))
    assert torch.equal(first, torch.full((4, 2), 2.0)), "a view: the next call overwrote it"
    safe = gl.GraphCache(lambda x: x + 1, buckets=[4], max_size=None, backend="eager")
    with torch.no_grad():
        first = safe(torch.zeros(4, 2))
        safe(torch.ones(4, 2))
    assert torch.equal(first, torch.ones(4, 2))


def test_sixteen_threads_get_eager_answers_and_no_key_is_captured_twice(run_threads):
    model = rowwise()
    captured = []
    from graphlab.cache.backends import EagerBackend

    class Counting(EagerBackend):
        def capture(self, fn, static_inputs, **kw):
            captured.append(static_inputs[0].shape[0])
            return super().capture(fn, static_inputs, **kw)

    cache = gl.GraphCache(model, buckets=[1, 2, 4, 8], max_size=None, backend=Counting())

    def worker(seed):
        gen = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for _ in range(20):
                n = int(torch.randint(1, 9, (1,), generator=gen))
                x = torch.randn(n, 8, generator=gen)
                torch.testing.assert_close(cache(x), model(x))

    assert run_threads(worker, range(16), 60) == []
    assert sorted(captured) == sorted(set(captured)) and cache.stats().calls == 16 * 20


def test_stats_read_as_a_table_and_as_pandas():
    cache = gl.GraphCache(rowwise(), buckets=[2, 4], max_size=None, backend="eager")
    with torch.no_grad():
        cache(torch.randn(3, 8))
        cache(torch.randn(4, 8))
    stats = cache.stats()
    text = str(stats)
    # an eager backend captures nothing: it says so rather than counting "captures" with a capture time
    assert "2 calls: 1 hits, 1 misses that made an eager stand-in, 0 ran eagerly" in text
    assert "padding was 12% of the rows" in text and "no CUDA graph was captured" in text
    frame = stats.to_pandas()
    assert list(frame["bucket"]) == ["4"] and int(frame["padded_rows"][0]) == 1
    assert gl.CacheStats.from_dict(stats.to_dict()).to_dict() == stats.to_dict()
    assert "<table" in stats._repr_html_() and "pad waste (%)" in stats._repr_html_()


def test_bad_arguments_are_refused_clearly():
    with pytest.raises(ConfigurationError, match="max_graphs must be at least 1"):
        gl.CacheOptions(max_graphs=0)
    with pytest.raises(ConfigurationError, match="memory_budget_bytes must be positive"):
        gl.CacheOptions(memory_budget_bytes=0)
    with pytest.raises(ConfigurationError, match="pool must be one of"):
        gl.GraphCache(rowwise(), pool="global", backend="eager")
    with pytest.raises(ConfigurationError, match="different input dimension"):
        gl.GraphCache(rowwise(), dims=[gl.Pad("a", dim=0), gl.Pad("b", dim=0)], backend="eager")
    with pytest.raises(BadInputError, match="backend must be"):
        gl.GraphCache(rowwise(), backend="tpu")
    with pytest.raises(BadInputError, match="one size per padded dim"):
        gl.GraphCache(rowwise(), backend="eager").bucket_for(1, 2)


def test_graph_for_names_what_it_holds():
    cache = gl.GraphCache(rowwise(), buckets=[2, 4], max_size=None, backend="eager")
    with torch.no_grad():
        cache(torch.randn(3, 8))
    assert cache.graph_for(3) is cache.graphs["4"]
    with pytest.raises(BadInputError, match=r"holds no graph for size 1 \(bucket 2\); it holds graphs 4"):
        cache.graph_for(1)
    assert repr(cache) == ("GraphCache 'Sequential': batch buckets 2 and 4; 1 stand-in held (backend eager: each graph "
                           "is an eager stand-in that runs the model, nothing is captured)")


# -- outputs keep the model's container types ---------------------------------------------------------------
class Pair(NamedTuple):
    logits: torch.Tensor
    hidden: torch.Tensor


@dataclasses.dataclass
class Out:
    logits: torch.Tensor
    hidden: torch.Tensor


def _model_output():
    transformers = pytest.importorskip("transformers")

    @dataclasses.dataclass
    class Output(transformers.utils.ModelOutput):
        logits: torch.Tensor = None
        hidden: torch.Tensor = None

    return Output


@pytest.mark.parametrize("container", ["namedtuple", "dataclass", "model_output"])
@pytest.mark.parametrize("copy_outputs", [True, False])
def test_outputs_keep_their_container_type_and_only_the_real_rows(container, copy_outputs):
    make = {"namedtuple": Pair, "dataclass": Out, "model_output": None}[container] or _model_output()

    def model(x):
        return make(logits=x * 2, hidden=x + 1)

    cache = gl.GraphCache(model, buckets=[4], max_size=None, backend="eager", copy_outputs=copy_outputs)
    with torch.no_grad():
        x = torch.randn(3, 5)
        out = cache(x)
    assert type(out) is make
    assert out.logits.shape == (3, 5) and torch.equal(out.logits, x * 2) and torch.equal(out.hidden, x + 1)


# -- from_host: the worker's launch (pinned host rows straight into the static inputs on a GPU) -----------------
def test_from_host_answers_as_the_usual_call_and_counts_the_same():
    model = rowwise()
    usual = gl.GraphCache(model, buckets=[1, 2, 4, 8], backend="eager", max_size=None, device="cpu")
    hosted = gl.GraphCache(model, buckets=[1, 2, 4, 8], backend="eager", max_size=None, device="cpu")
    with torch.no_grad():
        for n in [3, 4, 1, 3, 7, 8, 2, 12]:  # misses, hits, a smaller call after a larger one, the fallback
            x = torch.randn(n, 8)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want, got = usual(x), hosted.from_host(x)
            torch.testing.assert_close(got, want)
            torch.testing.assert_close(got, model(x))
    a, b = usual.stats(), hosted.stats()
    assert (b.captures, b.hits, b.fallbacks) == (a.captures, a.hits, a.fallbacks) == (4, 3, 1)
    assert {k: v.calls for k, v in b.per_bucket.items()} == {k: v.calls for k, v in a.per_bucket.items()}


def test_from_host_refills_the_padding_a_larger_call_left():
    seen = []

    def spy(x):
        seen.append(x.clone())
        return x * 2

    cache = gl.GraphCache(spy, buckets=[8], max_size=None, backend="eager", options=NO_CHECK, device="cpu")
    cache.from_host(torch.full((7, 2), 5.0))  # captured
    cache.from_host(torch.full((2, 2), 3.0))  # the same graph, a new route (planned by the usual call)
    cache.from_host(torch.full((7, 2), 4.0))
    out = cache.from_host(torch.full((2, 2), 1.0))  # a known route: from_host's own path, after a larger call
    assert (cache.stats().captures, cache.stats().hits) == (1, 3)
    assert torch.equal(seen[-1][:2], torch.ones(2, 2)) and torch.equal(seen[-1][2:], torch.zeros(6, 2))
    assert torch.equal(out, torch.full((2, 2), 2.0))


def test_from_host_needs_to_know_the_device():
    cache = gl.GraphCache(rowwise(), buckets=[1, 2], backend="eager", max_size=None)
    with pytest.raises(BadInputError, match=r"from_host needs to know where the graphs live: make the cache with "
                                            r"device="):
        cache.from_host(torch.randn(1, 8))
