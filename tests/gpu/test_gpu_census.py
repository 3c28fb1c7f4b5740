"""The node census read from the CUDA graph API agrees with the parsed DOT of the same graph."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("cuda.bindings")

from graphlab.capture.api import capture  # noqa: E402
from graphlab.zoo import get_model  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("name, batch_size", [("mlp", 1), ("gpt", 8), ("cnn", 8)])
@pytest.mark.parametrize("flags", [1, 4])
def test_census_agrees_with_parsed_dot(name, batch_size, flags):
    zm = get_model(name)
    cg = capture(zm.build(), *zm.make_inputs(batch_size), dot_flags=flags)
    census = cg.census()
    assert census.compare(cg.graph) == []
    assert census.count_by_kind()["kernel"] == len(cg.graph.kernels())
    assert all(n.name and n.grid and n.block for n in census.kernels())


def test_census_walks_child_graph_bodies():
    from cuda.bindings import runtime as rt

    from graphlab.graph.census import take_census
    from graphlab.graph.export import check_cuda, dot_from_handle
    from graphlab.graph.dot_parser import parse_dot

    cg = capture(lambda t: t * 2 + 1, torch.randn(64, device="cuda"))
    body = cg.torch_graph.raw_cuda_graph()
    parent = check_cuda(rt.cudaGraphCreate(0), "cudaGraphCreate")
    check_cuda(rt.cudaGraphAddChildGraphNode(parent, None, 0, body), "cudaGraphAddChildGraphNode")
    check_cuda(rt.cudaGraphAddEmptyNode(parent, None, 0), "cudaGraphAddEmptyNode")
    try:
        census = take_census(int(parent))
        parsed = parse_dot(dot_from_handle(int(parent), 1))
        assert census.graph_count == 2 and census.count_by_kind()["child_graph"] == 1
        assert census.compare(parsed) == []
    finally:
        rt.cudaGraphDestroy(parent)
