"""graphlab.decode on the CPU with tiny random-init Hugging Face models (the real HF code): the decode step with the
cache position as a tensor gives HF's own eager StaticCache tokens, reads nothing on the host (so a capture
would not sync), and scratch blocks leave the live cache alone. Graph capture itself: tests/gpu/test_gpu_decode.py."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from graphlab.decode.graphs import DecodeGraphs  # noqa: E402
from graphlab.decode.models import (DecodeStep, build_model, cache_tensors, hf_greedy, host_reads,  # noqa: E402
                                    kv_cache_bytes, make_cache, make_prompts, prefill, scratch_cache)
from graphlab.decode.results import DecodeReport, StepTiming  # noqa: E402
from graphlab.errors import BadInputError  # noqa: E402

MAX_LEN = 32


@pytest.fixture(scope="module", params=["llama", "gpt2"])
def model(request):
    return build_model(request.param, "tiny")


def _step_loop(model, prompts, new_tokens):
    cache = make_cache(model, prompts.shape[0], MAX_LEN)
    step = DecodeStep(model, cache)
    tok = prefill(model, cache, prompts)
    out = [tok]
    for t in range(new_tokens - 1):
        tok, _ = step(tok, torch.tensor([prompts.shape[1] + t]))
        out.append(tok)
    return torch.cat(out, dim=1)


@pytest.mark.parametrize("batch", [1, 4])
def test_step_with_tensor_position_gives_hf_eager_tokens(model, batch):
    prompts = make_prompts(model, batch, 6, seed=batch)
    assert torch.equal(_step_loop(model, prompts, 12), hf_greedy(model, prompts, 12, MAX_LEN))


def test_hf_greedy_is_what_generate_gives_with_a_static_cache(model):
    prompts = make_prompts(model, 2, 5)
    out = model.generate(prompts, attention_mask=torch.ones_like(prompts), max_new_tokens=6, do_sample=False,
                         cache_implementation="static", pad_token_id=0, eos_token_id=None)
    assert torch.equal(out[:, 5:], hf_greedy(model, prompts, 6, MAX_LEN))


def test_the_step_reads_nothing_on_the_host(model):
    cache = make_cache(model, 2, MAX_LEN)
    tok = prefill(model, cache, make_prompts(model, 2, 4))
    assert host_reads(DecodeStep(model, cache), tok, torch.tensor([4])) == []


def test_host_reads_finds_an_item():
    assert host_reads(lambda x: x.sum().item(), torch.ones(3)) == ["aten._local_scalar_dense"]


def test_scratch_block_leaves_the_live_cache_and_its_tensors_alone(model):
    cache = make_cache(model, 2, MAX_LEN)
    tok = prefill(model, cache, make_prompts(model, 2, 4))
    tensors = cache_tensors(cache)
    before = [t.clone() for t in tensors]
    pointers = [t.data_ptr() for t in tensors]
    step = DecodeStep(model, cache)
    with scratch_cache(cache):
        assert [t.data_ptr() for t in cache_tensors(cache)] != pointers
        for p in range(4, 10):
            step(tok, torch.tensor([p]))
    assert all(a is b for a, b in zip(tensors, cache_tensors(cache)))
    assert [t.data_ptr() for t in tensors] == pointers
    assert all(torch.equal(a, b) for a, b in zip(before, tensors))


def test_kv_cache_bytes_counts_keys_and_values(model):
    cache = make_cache(model, 3, MAX_LEN)
    layers = model.config.num_hidden_layers
    heads = getattr(model.config, "num_key_value_heads", None) or model.config.num_attention_heads
    head_dim = model.config.hidden_size // model.config.num_attention_heads
    assert kv_cache_bytes(cache) == 2 * layers * 3 * heads * MAX_LEN * head_dim * 4


def test_bad_input_is_one_clear_error(model):
    with pytest.raises(BadInputError, match="arch must be one of"):
        build_model("bert")
    with pytest.raises(BadInputError, match="size must be one of"):
        build_model("llama", "huge")
    with pytest.raises(BadInputError, match="positive"):
        make_prompts(model, 0, 4)
    with pytest.raises(BadInputError, match="exceed max_cache_len"):
        hf_greedy(model, make_prompts(model, 1, 30), 8, MAX_LEN)
    with pytest.raises(BadInputError, match="buckets must be positive"):
        DecodeGraphs(model, [0, 4], MAX_LEN)
    with pytest.raises(BadInputError, match="larger than the largest bucket"):
        DecodeGraphs(model, [1, 4], MAX_LEN).bucket_for(5)


def test_report_round_trips_and_compares():
    report = DecodeReport("llama", [StepTiming("eager", 1, 400.0, 500.0, 100), StepTiming("graphlab", 1, 100.0, 120.0, 100)],
                          tokens_equal={"graphlab": {"1": True}}, kv_cache_bytes={"1": 1024})
    again = DecodeReport.from_dict(report.to_dict())
    assert again.speedup("graphlab", "eager", 1) == pytest.approx(4.0)
    assert again.timing("graphlab", 1).tokens_per_s == pytest.approx(10_000.0)
    assert "graphlab" in str(again.table()) and again.ways == ["eager", "graphlab"]
    with pytest.raises(BadInputError, match="no timing of 'reduce-overhead'"):
        again.timing("reduce-overhead", 1)


def test_the_compiled_ways_functions_are_the_ones_the_report_names():
    """The "compile" view names torch's functions by the way that compiles them."""
    from graphlab.decode.graphs import _compiled_body
    from graphlab.decode.results import COMPILED_FUNCTIONS
    from graphlab.decode.ways import _ro_body

    assert COMPILED_FUNCTIONS == {_ro_body.__name__: "reduce-overhead", _compiled_body.__name__: "graphlab+compile"}


def test_memory_view_counts_a_shared_kv_cache_once():
    """Buckets 1, 2 and 4 viewing one 4-row cache hold 4 rows of memory together, not 1 + 2 + 4 rows; a report
    from before the caches were shared (no total kept) still sums its buckets."""
    per_row = 1024
    shared = DecodeReport("llama", [StepTiming("graphlab", b, 100.0, 120.0, 10) for b in (1, 2, 4)],
                          kv_cache_bytes={str(b): b * per_row for b in (1, 2, 4)}, kv_total_bytes=4 * per_row)
    again = DecodeReport.from_dict(shared.to_dict())
    assert again.kv_total_bytes == 4 * per_row
    rows = again.table("memory").rows
    assert rows[-1]["kv"] == 4 * per_row and "share one KV cache" in " ".join(again.table("memory").notes)
    separate = DecodeReport.from_dict({**shared.to_dict(), "kv_total_bytes": None})
    assert separate.table("memory").rows[-1]["kv"] == 7 * per_row
    assert "share one KV cache" not in " ".join(separate.table("memory").notes)
