"""One KV cache shared by every decode bucket, on the CPU with a tiny random Llama (the real HF code): each bucket's
cache is a view of the first rows of the largest one's, greedy tokens are the same as with a cache per bucket and
as HF's own eager decode, a bucket writes only its rows, and a layout that cannot be sliced is a clear error.
The graphs themselves (a replay writes only its rows, KV bytes within 1.1x): tests/gpu/test_gpu_decode.py."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from graphlab.decode.graphs import DecodeGraphs  # noqa: E402
from graphlab.decode.models import build_model, hf_greedy, kv_cache_bytes, make_cache, make_prompts  # noqa: E402
from graphlab.decode.shared_cache import distinct_kv_bytes, kv_layout, row_cache, shares_rows  # noqa: E402
from graphlab.errors import BadInputError, UnsupportedError  # noqa: E402

MAX_LEN, BUCKETS = 32, [1, 2, 4]


@pytest.fixture(scope="module")
def model():
    return build_model("llama", "tiny")


def test_each_bucket_is_a_view_of_the_first_rows_of_the_largest(model):
    graphs = DecodeGraphs(model, BUCKETS, MAX_LEN)
    largest = graphs.cache_for(4)
    for b in (1, 2):
        cache = graphs.cache_for(b)
        assert shares_rows(cache, largest)
        assert kv_layout(cache)[0] == b and kv_cache_bytes(cache) == kv_cache_bytes(largest) * b // 4
    assert graphs.kv_cache_bytes() == kv_cache_bytes(largest)
    separate = DecodeGraphs(model, BUCKETS, MAX_LEN, shared_cache=False)
    for b in BUCKETS:
        separate.cache_for(b)
    assert separate.kv_cache_bytes() == kv_cache_bytes(largest) * (1 + 2 + 4) // 4


@pytest.mark.parametrize("batch", [1, 2, 3, 4])
def test_greedy_tokens_equal_with_shared_and_separate_caches(model, batch):
    prompts = make_prompts(model, batch, 6, seed=batch)
    shared = DecodeGraphs(model, BUCKETS, MAX_LEN).greedy(prompts, 10, eager=True)
    separate = DecodeGraphs(model, BUCKETS, MAX_LEN, shared_cache=False).greedy(prompts, 10, eager=True)
    assert torch.equal(shared, separate)
    assert torch.equal(shared, hf_greedy(model, prompts, 10, MAX_LEN))


def test_buckets_one_after_another_on_the_one_cache(model):
    """Bucket 4 after bucket 1 and bucket 1 again after bucket 4: each prefill starts its rows afresh."""
    graphs = DecodeGraphs(model, BUCKETS, MAX_LEN)
    for batch in (1, 4, 1, 2):
        prompts = make_prompts(model, batch, 5, seed=10 + batch)
        assert torch.equal(graphs.greedy(prompts, 8, eager=True), hf_greedy(model, prompts, 8, MAX_LEN))


def test_a_bucket_writes_only_its_rows(model):
    graphs = DecodeGraphs(model, BUCKETS, MAX_LEN)
    largest = graphs.cache_for(4)
    for layer in largest.layers:
        layer.keys.fill_(7.0)
        layer.values.fill_(7.0)
    graphs.greedy(make_prompts(model, 2, 5), 6, eager=True)
    for layer in largest.layers:
        assert (layer.keys[2:] == 7.0).all() and (layer.values[2:] == 7.0).all()
        assert not (layer.keys[:2] == 7.0).all()


def test_row_cache_refuses_rows_it_does_not_have(model):
    big = make_cache(model, 2, MAX_LEN)
    with pytest.raises(BadInputError, match="takes 1 to 2 rows, got 3"):
        row_cache(model, big, 3)
    assert distinct_kv_bytes([big, row_cache(model, big, 1), big]) == kv_cache_bytes(big)


def test_a_layout_that_cannot_be_sliced_says_what_it_found(model):
    big = make_cache(model, 2, MAX_LEN)
    big.layers[1].keys = big.layers[1].keys.transpose(1, 2)  # (batch, len, heads, dim), not contiguous
    with pytest.raises(UnsupportedError, match=r"layer 1 \(StaticLayer\) has keys: tensor \(2, 32, 2, 16\) "
                                               r"\(not contiguous\), values: tensor") as info:
        row_cache(model, big, 1)
    assert "shared_cache=False" in str(info.value)
    big.layers[0].keys = None
    with pytest.raises(UnsupportedError, match="keys: NoneType"):
        kv_layout(big)


# -- layers by name: the bookkeeping a capture does, on the CPU -----------------------------------------------------
def test_the_decode_steps_module_spans_name_each_layer(model, monkeypatch):
    """The capture's node count stood in for by a count of ATen ops (a capture makes about one node per op): the
    hooks `DecodeGraphs` puts round its capture name every op by its layer, `model.layers.1.mlp` and the like."""
    from torch.utils._python_dispatch import TorchDispatchMode

    from graphlab.capture import module_recorder
    from graphlab.decode.models import DecodeStep, prefill
    from graphlab.profile.modules import OUTSIDE, assign_modules, module_prefix

    class Count(TorchDispatchMode):
        n = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            Count.n += 1
            return func(*args, **(kwargs or {}))

    monkeypatch.setattr(module_recorder, "has_cuda_bindings", lambda: True)
    monkeypatch.setattr(module_recorder, "capture_node_count", lambda: (1, Count.n))
    cache = make_cache(model, 2, MAX_LEN)
    step = DecodeStep(model, cache)
    ids = prefill(model, cache, make_prompts(model, 2, 4))
    with module_recorder.record_modules(model) as recorder, Count():
        step(ids, torch.tensor([4]))
    found = assign_modules(recorder.last, range(Count.n))
    names = {module_prefix(p or "(root)", 4) for p in found.values() if p is not None}
    assert {"model.layers.0.self_attn", "model.layers.0.mlp", "model.layers.1.self_attn", "model.layers.1.mlp",
            "lm_head"} <= names
    layers = {module_prefix(p, 3) for p in found.values() if p and p.startswith("model.layers.")}
    assert layers == {"model.layers.0", "model.layers.1"}
    assert OUTSIDE not in names


def test_a_compiled_steps_module_paths_read_as_the_eager_ones():
    """Dynamo names modules from `_compiled_body`'s step (paths as Inductor's provenance gave them for the tiny
    Llama, CPU, torch 2.13); the hooks name them from the LM."""
    from graphlab.decode.graphs import model_relative

    seen = ["model.model.embed_tokens", "model.model.layers.0.input_layernorm", "(root)", "model",
            "model.model.layers.0.self_attn.q_proj", "model.lm_head", "model.model.layers.0.input_layernorm"]
    assert model_relative(seen) == ["model.embed_tokens", "model.layers.0.input_layernorm", "(root)",
                                    "model.layers.0.self_attn.q_proj", "lm_head"]


def test_a_bucket_by_number_or_label_and_one_not_captured_names_those_that_were(model):
    from graphlab.decode.buckets import bucket_label, resolve_bucket

    assert resolve_bucket(8, [1, 8]) == resolve_bucket("8", [1, 8]) == resolve_bucket("b8", [8]) == 8
    assert bucket_label(64) == "b64"
    with pytest.raises(BadInputError, match="bucket 4 was not captured; captured buckets: 1, 8"):
        resolve_bucket("b4", [8, 1])
    with pytest.raises(BadInputError, match=r"a batch size \(8\) or its label \('b8'\), not 'eight'"):
        resolve_bucket("eight", [8])
    with pytest.raises(BadInputError, match="not True"):
        resolve_bucket(True, [1])
    with pytest.raises(BadInputError, match="none yet"):
        DecodeGraphs(model, BUCKETS, MAX_LEN).graph_for(4)
