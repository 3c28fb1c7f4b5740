"""graphlab.decode on a real GPU: the Hugging Face decode step (StaticCache) captured per bucket gives HF eager's
tokens for 64 new tokens at batch 1, 4 and 16; warm-up and the padding check never write the live cache; the
compiled step captures into graphlab's graph; what torch.compile did is summarised with its reasons."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from graphlab.decode.graphs import DecodeGraphs  # noqa: E402
from graphlab.decode.models import build_model, cache_tensors, hf_greedy, make_prompts, prefill  # noqa: E402
from graphlab.decode.ways import time_ways  # noqa: E402
from graphlab.watch.compile_log import watch_compile  # noqa: E402

pytestmark = pytest.mark.gpu
NEW, PROMPT, MAX_LEN = 64, 16, 96


@pytest.fixture(scope="module", params=["llama", "gpt2"])
def eager_graphs(request):
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    model = build_model(request.param, "small", device="cuda")
    return model, DecodeGraphs(model, [1, 4, 16], MAX_LEN).capture_all()


@pytest.mark.parametrize("batch", [1, 4, 16])
def test_tokens_equal_hf_eager(eager_graphs, batch):
    model, graphs = eager_graphs
    prompts = make_prompts(model, batch, PROMPT, seed=batch)
    assert torch.equal(graphs.greedy(prompts, NEW), hf_greedy(model, prompts, NEW, MAX_LEN))


def test_padded_batch_gives_the_same_tokens(eager_graphs):
    model, graphs = eager_graphs
    prompts = make_prompts(model, 3, PROMPT, seed=3)
    assert torch.equal(graphs.greedy(prompts, 8), hf_greedy(model, prompts, 8, MAX_LEN))


def test_padding_check_and_capture_leave_the_live_cache_alone(eager_graphs):
    model, graphs = eager_graphs
    slot = graphs.slots[4]
    prefill(model, slot.cache, make_prompts(model, 4, PROMPT, seed=7))
    before = [t.clone() for t in cache_tensors(slot.cache)]
    check = graphs.check_padding(make_prompts(model, 3, PROMPT, seed=5))
    assert check["tokens_equal"] and check["bucket"] == 4
    assert all(torch.equal(a, b) for a, b in zip(before, cache_tensors(slot.cache)))


def test_ways_time_in_one_harness(eager_graphs):
    model, graphs = eager_graphs
    g = graphs.slots[1].graph
    ids, pos = (t.clone() for t in g.inputs)
    wall = time_ways({"graphlab": lambda: g(ids, pos)}, rounds=2)
    assert len(wall["graphlab"]) > 4 and min(wall["graphlab"]) > 0


def test_compiled_step_captured_by_graphlab_matches_its_eager_run():
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    model = build_model("llama", "tiny", device="cuda")
    graphs = DecodeGraphs(model, [2], 48, compiled=True)
    prompts = make_prompts(model, 2, 8, seed=2)
    with watch_compile() as log:
        got = graphs.greedy(prompts, 8)
    want = hf_greedy(model, prompts, 8, 48)
    assert got.shape == want.shape
    assert (got == want).float().mean() >= 0.75  # Inductor's fused kernels round differently; most tokens agree
    assert isinstance(log.summary().rows(), list)


def test_reduce_overhead_is_summarised_with_reasons():
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from graphlab.decode.models import DecodeStep, make_cache
    from graphlab.decode.ways import _ro_body
    from graphlab.watch.api import Watch

    model = build_model("llama", "tiny", device="cuda")
    ro = torch.compile(_ro_body, mode="reduce-overhead")
    with Watch(keep_dot=False) as seen, watch_compile() as log:
        for b in (1, 2):
            cache = make_cache(model, b, 32)
            step = DecodeStep(model, cache)
            for _ in range(3):
                ro(step, torch.zeros(b, 1, dtype=torch.long, device="cuda"), torch.tensor([1], device="cuda"))
    summary = log.summary(watched=list(seen))
    assert summary.recordings, summary.table()
    assert all(e.reason for e in summary.events if e.kind != "recording")
    assert summary.unexplained_skips() == 0, summary.table()


# -- one KV cache for every bucket -------------------------------------------------------------------------------
def test_a_buckets_replay_writes_only_its_rows_of_the_shared_cache(eager_graphs):
    from graphlab.decode.models import kv_cache_bytes
    from graphlab.decode.shared_cache import shares_rows

    model, graphs = eager_graphs
    largest = graphs.slots[16].cache
    assert graphs.shared_cache and shares_rows(graphs.slots[4].cache, largest)
    for layer in largest.layers:
        layer.keys.fill_(7.0)
        layer.values.fill_(7.0)
    g = graphs.slots[4].graph
    ids, position = g.inputs
    ids.fill_(3)
    position.fill_(5)
    g.replay()
    torch.cuda.synchronize()
    for layer in largest.layers:
        assert (layer.keys[4:] == 7.0).all() and (layer.values[4:] == 7.0).all()
        assert not (layer.keys[:4, :, 5] == 7.0).all()  # its own rows were written at position 5
    assert graphs.kv_cache_bytes() <= 1.1 * kv_cache_bytes(largest)


def test_profile_of_a_decode_bucket_answers_by_layer(eager_graphs):
    import graphlab as gl

    model, graphs = eager_graphs
    prof = gl.profile(graphs, bucket="b4", replays=5, show_progress=False)
    layers = set(prof.by_module(3).column("module"))
    n = model.config.num_hidden_layers if hasattr(model.config, "num_hidden_layers") else model.config.n_layer
    prefix = "model.layers" if "llama" in type(model).__name__.lower() else "transformer.h"
    assert {f"{prefix}.{i}" for i in range(n)} <= layers, layers
    with pytest.raises(gl.BadInputError, match="captured buckets: 1, 4, 16"):
        gl.profile(graphs, bucket=8)


def test_a_compiled_decode_step_names_its_fused_kernels_modules():
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    import graphlab as gl

    model = build_model("llama", "tiny", device="cuda")
    graphs = DecodeGraphs(model, [2], 48, compiled=True)
    slot = graphs.capture(2)
    assert slot.node_modules, slot.modules_note
    named = {m for mods in slot.node_modules.values() for m in mods}
    assert any(m.startswith("model.layers.1.") for m in named), named
    prof = gl.profile(graphs, bucket=2, replays=5, show_progress=False)
    assert any(str(m).startswith("model.layers") for m in prof.by_module(3).column("module"))
