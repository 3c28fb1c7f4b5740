"""Real multi-GPU DOT dumps (tests/fixtures/multigpu): what one rank's graph holds, parsed and drawn."""
from __future__ import annotations

import pytest
from conftest import FIXTURES

import graphlab as gl
from graphlab.viz.style import FAMILY_COLORS

MULTIGPU = FIXTURES / "multigpu"
SEVERAL_GPUS = sorted(p for p in MULTIGPU.glob("*x[0-9]*/*.dot"))


def test_a_one_rank_all_reduce_leaves_no_kernel_in_the_graph():
    graph = gl.read_dot(MULTIGPU / "h200" / "allreduce_ws1_rank0.dot")
    assert graph.count_by_kind() == {"kernel": 2}
    assert graph.count_by_family() == {"ATen elementwise": 2}


def test_the_world_size_one_tensor_parallel_layer_is_the_plain_layers_kernels():
    graph = gl.read_dot(MULTIGPU / "h200" / "tp_layer_b1_ws1_rank0.dot")
    assert len(graph.kernels()) == 20 and "NCCL" not in graph.count_by_family()
    assert "digraph" in gl.render(graph).source


@pytest.mark.parametrize("path", SEVERAL_GPUS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_rank_of_several_holds_nccl_kernels_drawn_in_their_colour(path):
    graph = gl.read_dot(path)
    nccl = [n for n in graph.kernels() if n.family == "NCCL"]
    assert nccl, f"{path.name}: no NCCL kernel"
    assert all(n.short_name.endswith("(NCCL)") for n in nccl)
    assert FAMILY_COLORS["NCCL"].lower() in gl.render(graph).source.lower()
