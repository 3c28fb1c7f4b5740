"""One graph surface: the live, recorded and eager graphs all implement `graphlab.capture.surface.Replayable`."""
from __future__ import annotations

import inspect

import pytest

from graphlab.capture.surface import Replayable

torch = pytest.importorskip("torch")

#: every member the Protocol names (its methods, properties and attributes)
MEMBERS = sorted({n for n in vars(Replayable) if not n.startswith("_")} | set(Replayable.__annotations__) | {"__call__"})


def _classes():
    from graphlab.cache.backends import EagerGraph
    from graphlab.capture.captured import CapturedGraph
    from graphlab.capture.recorded import RecordedGraph

    return {"live": CapturedGraph, "recorded": RecordedGraph, "eager": EagerGraph}


@pytest.mark.parametrize("origin", ["live", "recorded", "eager"])
def test_each_graph_class_has_every_member_of_the_surface(origin):
    cls = _classes()[origin]
    instance_attributes = {"name", "inputs", "outputs"}  # set in __init__
    missing = [m for m in MEMBERS if m not in instance_attributes and not hasattr(cls, m)]
    assert missing == [], f"{cls.__name__} lacks {missing}"
    assert cls.origin == origin


def test_the_protocol_is_what_the_classes_share_and_no_more():
    # a member every class offers but the Protocol leaves out would be a surface kept in step by hand again
    shared = set.intersection(*({n for n in dir(cls) if not n.startswith("_")} for cls in _classes().values()))
    assert shared - set(MEMBERS) == set()


def test_an_eager_stand_in_is_replayable_and_says_what_it_cannot_do():
    from graphlab.cache.graph_cache import GraphCache
    from graphlab.errors import UnsupportedError

    model = torch.nn.Linear(4, 3).eval()
    cache = GraphCache(model, buckets=[2], backend="eager")
    with torch.no_grad():  # with autograd on the cache runs the model eagerly and holds no graph
        cache(torch.randn(2, 4))
    graph = next(iter(cache.graphs.values()))
    # isinstance(graph, Replayable) before Python 3.12 reads every property, and this one's `graph` raises by
    # design; look the members up statically instead, as isinstance does from 3.12 on
    assert all(inspect.getattr_static(graph, m, None) is not None for m in MEMBERS) and graph.origin == "eager"
    for call in (graph.dot, graph.census, graph.pool):
        with pytest.raises(UnsupportedError, match="eager"):
            call()
    with pytest.raises(UnsupportedError, match="eager"):
        graph.graph  # noqa: B018
    assert graph.verify().passed  # an eager stand-in replays the model itself: it agrees with eager
    assert set(graph.summary()) >= {"name", "nodes", "capture_ms", "pool_bytes", "inputs", "outputs"}


def test_a_recorded_graph_is_replayable():
    import graphlab as gl
    from graphlab.mode import set_mode

    set_mode("recorded")
    try:
        zoo = gl.get_model("mlp")
        graph = gl.capture(zoo.build(), *zoo.make_inputs(1))
    finally:
        from graphlab import mode

        mode._current = None
    assert isinstance(graph, Replayable) and graph.origin == "recorded"
    assert graph.graph.count_by_kind()["kernel"] > 0


def test_a_signature_of_the_surface_matches_the_live_class():
    from graphlab.capture.captured import CapturedGraph

    for name in ("dot", "verify", "unchecked"):
        protocol = list(inspect.signature(getattr(Replayable, name)).parameters)
        live = list(inspect.signature(getattr(CapturedGraph, name)).parameters)
        assert protocol == live, name
