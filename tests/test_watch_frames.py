"""gl.watch's attribution: which library captured a graph, and the user's line, from (fake) stack frames."""
from __future__ import annotations

import pytest

from graphlab.watch.frames import (CAPTURE_BEGIN, COMPILE, COMPILE_TREES, GRAPHLAB, MAKE_GRAPHED_CALLABLES,
                                       TORCH_CUDA_GRAPH, Frame, Roots, classify, display_path, origin,
                                       shapes_and_role, stack_frames)

SITE = "/venv/lib/python3.11/site-packages"
ROOTS = Roots(torch=f"{SITE}/torch", graphlab="/src/graphlab", stdlib=("/usr/lib/python3.11",), cwd="/home/me/proj")


def torch_frame(rel: str, function: str, lineno: int = 1, local_values=None) -> Frame:
    return Frame(f"{SITE}/torch/{rel}", function, lineno, local_values or (lambda: {}))


USER = Frame("/home/me/proj/serve.py", "main", 12)
GRAPH_ENTER = torch_frame("cuda/graphs.py", "__enter__", 470)
CONTEXTLIB = Frame("/usr/lib/python3.11/contextlib.py", "__enter__", 137)


class FakeTensor:
    dtype = "float32"

    def __init__(self, *shape: int):
        self.shape = shape


@pytest.mark.parametrize(("frames", "library"), [
    ([GRAPH_ENTER, USER], TORCH_CUDA_GRAPH),
    ([USER], CAPTURE_BEGIN),
    ([GRAPH_ENTER, torch_frame("cuda/graphs.py", "make_graphed_callables", 680), USER], MAKE_GRAPHED_CALLABLES),
    ([GRAPH_ENTER, CONTEXTLIB, torch_frame("_inductor/cudagraph_trees.py", "_record", 1370),
      torch_frame("_inductor/cudagraph_trees.py", "__init__"), torch_frame("_inductor/output_code.py", "__call__"),
      torch_frame("_dynamo/eval_frame.py", "_fn"), USER], COMPILE_TREES),
    ([GRAPH_ENTER, torch_frame("_inductor/cudagraph_utils.py", "cudagraphify"), USER], COMPILE),
    ([Frame("/src/graphlab/capture/engine.py", "begin", 140), Frame("/src/graphlab/capture/api.py", "capture", 80), USER],
     GRAPHLAB),
    ([GRAPH_ENTER, Frame(f"{SITE}/vllm/worker/model_runner.py", "capture", 900),
      torch_frame("_dynamo/eval_frame.py", "_fn"), USER], "vllm"),
    ([Frame(f"{SITE}/sglang.py", "run", 3), USER], "sglang"),
])
def test_the_innermost_frame_that_says_who_names_the_library(frames, library):
    found = origin(frames, ROOTS)
    assert found.library == library
    assert (found.user_file, found.user_line, found.user_function) == ("serve.py", 12, "main")
    assert found.where == "serve.py:12"


def test_watch_internals_and_the_standard_library_are_skipped():
    frames = [Frame("/src/graphlab/watch/patch.py", "capture_begin", 1), CONTEXTLIB, GRAPH_ENTER,
              Frame("<frozen runpy>", "_run_code", 1), USER]
    assert origin(frames, ROOTS).library == TORCH_CUDA_GRAPH


def test_graphlab_worked_examples_stand_in_for_user_code():
    example = Frame("/src/graphlab/studies/watch_examples.py", "run_user_block", 77)
    found = origin([GRAPH_ENTER, example, Frame("/src/graphlab/cli.py", "main", 5)], ROOTS)
    assert found.library == TORCH_CUDA_GRAPH
    assert found.user_file == "watch_examples.py" and found.user_line == 77  # outside cwd: the file name only


def test_no_user_frame_leaves_the_line_empty():
    found = origin([GRAPH_ENTER, torch_frame("_inductor/cudagraph_trees.py", "_record")], ROOTS)
    assert found.library == COMPILE_TREES and found.user_file is None and found.where == ""


def test_a_notebook_cell_is_user_code():
    cell = Frame("/tmp/ipykernel_123/456.py", "<module>", 3)
    assert origin([GRAPH_ENTER, cell], ROOTS).user_file == "456.py"


def test_classify_and_display_path():
    assert classify(f"{SITE}/torch/cuda/graphs.py", ROOTS) == ("torch", "cuda/graphs.py")
    assert classify("/src/graphlab/watch/api.py", ROOTS) == ("watch", "watch/api.py")
    assert classify(f"{SITE}/numpy/core/x.py", ROOTS) == ("site", "numpy")
    assert classify("/usr/lib/python3.11/threading.py", ROOTS)[0] == "stdlib"
    assert classify("/home/me/proj/a/b.py", ROOTS) == ("user", "/home/me/proj/a/b.py")
    assert display_path("/home/me/proj/a/b.py", "/home/me/proj") == "a/b.py"
    assert display_path("/elsewhere/c.py", "/home/me/proj") == "c.py"
    assert display_path("/home/me/project2/c.py", "/home/me/proj") == "c.py"  # a prefix is not a parent


def test_trees_recording_shapes_leave_out_static_inputs():
    class Node:
        id = type("GraphID", (), {"id": 3})()
        compile_id = "0/1"
        wrapped_function = type("WF", (), {"static_input_idxs": [0, 1]})()

    inputs = [FakeTensor(512, 128), FakeTensor(128), 8, FakeTensor(8, 64)]
    record = torch_frame("_inductor/cudagraph_trees.py", "_record", local_values=lambda: {"self": Node(),
                                                                                         "inputs": inputs})
    shapes, role, details = shapes_and_role([GRAPH_ENTER, record, USER], object(), ROOTS)
    assert shapes == [[8, 64]] and role == "recording"
    assert details == {"static_inputs": 2, "int_inputs": [8], "tree_graph_id": 3, "compile_id": "0/1"}


def test_trees_pool_keeper_graph():
    class CUDAGraphTreeManager:
        pass

    init = torch_frame("_inductor/cudagraph_trees.py", "__init__", local_values=lambda: {"self": CUDAGraphTreeManager()})
    assert shapes_and_role([GRAPH_ENTER, init, USER], object(), ROOTS) == (None, "pool keeper", {})


def test_make_graphed_callables_forward_and_backward():
    fwd, bwd = object(), object()
    local = {"fwd_graph": fwd, "bwd_graph": bwd, "args": (FakeTensor(16, 64),),
             "static_outputs": (FakeTensor(16, 8),)}
    mgc = torch_frame("cuda/graphs.py", "make_graphed_callables", local_values=lambda: local)
    assert shapes_and_role([GRAPH_ENTER, mgc, USER], fwd, ROOTS)[:2] == ([[16, 64]], "forward")
    assert shapes_and_role([GRAPH_ENTER, mgc, USER], bwd, ROOTS)[:2] == ([[16, 8]], "backward")


def test_unknowable_shapes_and_broken_locals_give_none():
    assert shapes_and_role([GRAPH_ENTER, USER], object(), ROOTS) == (None, None, {})

    def boom():
        raise RuntimeError("frame gone")

    record = torch_frame("_inductor/cudagraph_trees.py", "_record", local_values=boom)
    assert shapes_and_role([GRAPH_ENTER, record, USER], object(), ROOTS) == (None, None, {})


def test_stack_frames_reads_a_live_stack():
    import sys

    def inner():
        return stack_frames(sys._getframe(), limit=3)

    frames = inner()
    assert frames[0].function == "inner" and frames[1].function == "test_stack_frames_reads_a_live_stack"
    assert "frames" not in frames[0].local_values()  # locals read on demand, at the time asked
    assert origin(frames).user_function == "inner"


def test_code_torch_generated_is_not_the_users_line():
    """Seen on the H200: the innermost non-torch frame of a reduce-overhead call was inductor's output module
    in /tmp/torchinductor_root/...; and torch.fx runs forwards named "<eval_with_key>.N"."""
    generated = Frame("/tmp/torchinductor_root/cg/cg3uiyos47zip7h2.py", "call", 190)
    fx = Frame("<eval_with_key>.5", "forward", 3)
    record = torch_frame("_inductor/cudagraph_trees.py", "_record")
    found = origin([GRAPH_ENTER, record, generated, fx, torch_frame("_dynamo/eval_frame.py", "_fn"), USER], ROOTS)
    assert found.library == COMPILE_TREES and found.where == "serve.py:12"
    assert origin([GRAPH_ENTER, generated, USER], ROOTS).library == COMPILE
    custom = Roots(torch=ROOTS.torch, graphlab=ROOTS.graphlab, cwd=ROOTS.cwd, inductor_cache="/cache/ind")
    assert classify("/cache/ind/ab/x.py", custom)[0] == "torch"


def test_trees_compile_id_comes_from_the_node_constructor_frame():
    """CUDAGraphNode keeps no compile_id attribute in 2.11; its __init__ has it as a local."""
    class Node:
        wrapped_function = type("WF", (), {"static_input_idxs": []})()

    record = torch_frame("_inductor/cudagraph_trees.py", "_record",
                         local_values=lambda: {"self": Node(), "inputs": [FakeTensor(4, 64)]})
    init = torch_frame("_inductor/cudagraph_trees.py", "__init__", local_values=lambda: {"compile_id": "0/1"})
    shapes, role, details = shapes_and_role([GRAPH_ENTER, record, init, USER], object(), ROOTS)
    assert (shapes, role, details["compile_id"]) == ([[4, 64]], "recording", "0/1")
