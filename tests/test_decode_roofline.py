"""The decode step's roofline arithmetic against values worked out by hand for Llama-3-8B's shape (bf16, untied
head), and its bad input. Pure: no torch."""
from __future__ import annotations

import pytest

from graphlab.decode.roofline import (Bandwidth, DecoderShape, bound_of, floor_read_bytes, kernel_read_bytes,
                                      kv_bytes_per_token, layer_parameters, parameter_bytes, parameter_count,
                                      step_flops, step_floor, weight_read_bytes)
from graphlab.errors import BadInputError

L8B = DecoderShape.llama3_8b()
# by hand: attention 4096*4096*2 + 4096*1024*2 = 41,943,040; MLP 3*4096*14336 = 176,160,768; norms 2*4096
LAYER = 41_943_040 + 176_160_768 + 8_192
EMBED = 128_256 * 4_096  # 525,336,576, and as much again for the untied head


def test_llama3_8b_parameters_and_bytes_by_hand():
    assert layer_parameters(L8B) == LAYER == 218_112_000
    assert parameter_count(L8B) == 32 * LAYER + 2 * EMBED + 4_096 == 8_030_261_248  # Llama-3-8B's published count
    assert parameter_bytes(L8B) == 16_060_522_496  # ~16.06 GB in bf16
    assert kv_bytes_per_token(L8B) == 2 * 32 * 8 * 128 * 2 == 128 * 1024


def test_a_step_reads_all_weights_but_the_embeddings_unused_rows_and_kv_up_to_its_position():
    weights_b1 = (8_030_261_248 - EMBED + 4_096) * 2
    assert weight_read_bytes(L8B, 1) == weights_b1 == 15_009_857_536
    assert weight_read_bytes(L8B, 8) == weights_b1 + 7 * 4_096 * 2
    assert floor_read_bytes(L8B, 1, 128) == weights_b1 + 129 * 131_072
    assert floor_read_bytes(L8B, 256, 1023) == weight_read_bytes(L8B, 256) + 256 * 1024 * 131_072
    # HF's static cache: attention over every position of the cache, masked
    assert kernel_read_bytes(L8B, 1, 1024) - floor_read_bytes(L8B, 1, 128) == (1024 - 129) * 131_072
    tied = DecoderShape(layers=1, hidden=8, intermediate=16, heads=2, kv_heads=1, vocab=100, tied_embeddings=True)
    assert weight_read_bytes(tied, 1) == parameter_bytes(tied)  # the head reads the whole embedding


def test_step_flops_by_hand():
    matmuls = 8_030_261_248 - EMBED - (32 * 2 * 4_096 + 4_096)
    attention = 2 * 2 * 32 * 32 * 128 * 129
    assert step_flops(L8B, 1, 128) == 2 * matmuls + attention == 15_076_950_016
    assert step_flops(L8B, 64, 128) == 64 * step_flops(L8B, 1, 128)


def test_the_floor_is_the_higher_of_memory_and_compute():
    one = step_floor(L8B, 1, 128, read_bytes_per_s=4.0e12, mm_flops_per_s=7.0e14, max_cache_len=1024)
    assert one.memory_us == pytest.approx(15_026_765_824 / 4.0e12 * 1e6)
    assert one.compute_us == pytest.approx(15_076_950_016 / 7.0e14 * 1e6)
    assert one.bound == "memory" and one.floor_us == one.memory_us
    assert one.kernel_bytes_us == pytest.approx(15_144_075_264 / 4.0e12 * 1e6)
    assert one.ratio(2 * one.floor_us) == pytest.approx(2.0)
    big = step_floor(L8B, 256, 128, read_bytes_per_s=4.0e12, mm_flops_per_s=7.0e14)
    assert big.bound == "compute" and big.floor_us == big.compute_us and big.kernel_bytes_us is None
    assert bound_of(10 * one.floor_us, one, graph_us=2 * one.floor_us) == "launch-bound"
    assert bound_of(1.5 * one.floor_us, one, graph_us=one.floor_us) == "memory-bound"
    assert bound_of(big.floor_us, big) == "compute-bound"


def test_bandwidth_takes_the_higher_and_says_which():
    assert Bandwidth(4.1e12, 4.3e12).best == (4.3e12, "device-to-device copy (read + write)")
    assert Bandwidth(4.4e12, 4.3e12).best == (4.4e12, "read-only reduction")
    assert Bandwidth.from_dict(Bandwidth(1.0, 2.0, 8, 20).to_dict()) == Bandwidth(1.0, 2.0, 8, 20)


def test_a_shape_from_a_config_and_bad_shapes():
    config = {"num_hidden_layers": 32, "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
              "num_key_value_heads": 8, "vocab_size": 128256, "tie_word_embeddings": False}
    assert DecoderShape.from_hf_config(config) == L8B
    with pytest.raises(BadInputError, match="needs 'vocab_size'"):
        DecoderShape.from_hf_config({k: v for k, v in config.items() if k != "vocab_size"})
    with pytest.raises(BadInputError, match="multiple of kv_heads"):
        DecoderShape(layers=1, hidden=64, intermediate=64, heads=4, kv_heads=3, vocab=10)
    with pytest.raises(BadInputError, match="layers must be positive"):
        DecoderShape(layers=0, hidden=64, intermediate=64, heads=4, kv_heads=2, vocab=10)
    with pytest.raises(BadInputError, match="batch must be at least 1"):
        floor_read_bytes(L8B, 0, 3)
    with pytest.raises(BadInputError, match="must be positive"):
        step_floor(L8B, 1, 1, read_bytes_per_s=0, mm_flops_per_s=1.0)
