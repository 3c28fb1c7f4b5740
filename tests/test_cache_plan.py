"""The graph cache's decision, from plain values: which key, which bucket, what to pad and cut, when to fall back.

Every test here runs twice: in this process, and once more in a fresh one with torch blocked
(`test_the_decision_needs_no_torch`), which shows that `graphlab.cache.plan` decides without it."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import REPO
from graphlab.cache.buckets import Pad
from graphlab.cache.plan import ABOVE, AUTOGRAD, NOT_A_BUCKET, CachePlanner, Fallback, Plan, TensorSpec
from graphlab.errors import BadInputError, CacheMissError, ConfigurationError

BLOCKED = ["torch", "ipywidgets", "anywidget", "plotly", "graphviz", "pandas", "IPython"]


def spec(*shape, dtype="float32", device=0):
    return TensorSpec(tuple(shape), dtype, device)


def batch(buckets=(1, 2, 4, 8), **kw):
    return CachePlanner([Pad("batch", dim=0, buckets=list(buckets), max_size=None, **kw)], name="toy")


def test_a_size_is_served_by_the_smallest_bucket_that_holds_it():
    plan = batch().decide((spec(3, 16),))
    assert isinstance(plan, Plan)
    assert (plan.sizes, plan.buckets, plan.label, plan.pads) == ((3,), (4,), "4", True)
    assert (plan.rows, plan.padded_rows) == (3, 1)
    (padded,) = plan.inputs
    assert (padded.index, padded.dims, padded.sizes, padded.buckets, padded.value) == (0, (0,), (3,), (4,), 0)
    assert plan.cuts == ((0, 3, 4),) and [p.name for p in plan.check] == ["batch"]


def test_an_exact_bucket_pads_nothing_and_checks_nothing():
    plan = batch().decide((spec(4, 16),))
    assert not plan.pads and plan.padded_rows == 0 and plan.cuts == () and plan.check == ()
    assert plan.inputs[0].buckets == (4,)  # the static input is still made at the bucket's shape


def test_sizes_of_one_bucket_share_a_key_and_anything_else_splits_it():
    planner = batch()
    key = planner.decide((spec(3, 16),)).key
    assert planner.decide((spec(4, 16),)).key == key
    assert planner.decide((spec(2, 16),)).key != key  # another bucket
    assert planner.decide((spec(3, 16, dtype="float64"),)).key != key
    assert planner.decide((spec(3, 17),)).key != key  # another size of a dim that is not padded
    assert planner.decide((spec(3, 16, device=1),)).key != key
    with_arg = planner.decide((spec(3, 16), 2)).key
    assert with_arg != key and planner.decide((spec(3, 16), 3)).key != with_arg
    assert planner.decide((spec(3, 16), [1, 2])).key == planner.decide((spec(3, 16), [1, 2])).key  # by repr


def test_two_padded_dims_pad_each_input_along_both_and_cut_the_outputs_along_both():
    planner = CachePlanner([Pad("batch", dim=0, buckets=[1, 2, 4], max_size=None),
                            Pad("seq", dim=1, buckets=[8, 16], max_size=None, out_dim=1, value=-1)])
    plan = planner.decide((spec(3, 9, dtype="int64"),))
    assert (plan.sizes, plan.buckets, plan.label) == ((3, 9), (4, 16), "4x16")
    assert (plan.rows, plan.padded_rows) == (27, 64 - 27)
    assert plan.inputs[0].dims == (0, 1) and plan.inputs[0].value == 0  # one fill value: the first Pad's
    assert plan.cuts == ((0, 3, 4), (1, 9, 16))
    only_batch = planner.decide((spec(3, 16, dtype="int64"),))
    assert only_batch.cuts == ((0, 3, 4),) and [p.name for p in only_batch.check] == ["batch"]


def test_a_pad_reaches_only_the_inputs_it_names_and_those_with_the_dim():
    planner = CachePlanner([Pad("seq", dim=1, buckets=[8], max_size=None, out_dim=1, inputs=(0,))])
    plan = planner.decide((spec(2, 5), spec(2, 3), spec(7)))
    assert [p.index for p in plan.inputs] == [0]
    assert planner.pads_of(1, 2) == () and planner.pads_of(0, 2) == (0,) and planner.pads_of(0, 1) == ()


def test_inputs_that_disagree_on_a_padded_dim_are_refused():
    with pytest.raises(BadInputError, match="inputs disagree on dim 0"):
        batch().decide((spec(3, 2), spec(2, 2)))


def test_what_falls_back_and_why():
    planner = batch(buckets=(1, 2))
    assert planner.decide((spec(5, 8),)) == Fallback(ABOVE)
    assert planner.decide((spec(2, 8),), autograd=True) == Fallback(AUTOGRAD)
    assert planner.decide((3,)) == Fallback("no input has dim 0 ('batch')")
    assert planner.decide((spec(0, 8),)) == Fallback("dim 0 ('batch') is empty")
    never = CachePlanner([Pad("seq", dim=1, buckets=[8], max_size=None, exact=False)])
    assert never.decide((spec(2, 5),)) == Fallback(NOT_A_BUCKET)
    assert isinstance(never.decide((spec(2, 8),)), Plan)
    trusted = CachePlanner([Pad("seq", dim=1, buckets=[8], max_size=None, exact=True)])
    assert trusted.decide((spec(2, 5),)).check == ()  # padded, and promised exact: nothing to check


def test_strict_raises_instead_of_falling_back():
    strict = CachePlanner([Pad("batch", dim=0, buckets=[1, 2], max_size=None)], strict=True, name="toy")
    with pytest.raises(CacheMissError, match=r"'toy': dim 0 \('batch'\) size 3 > largest bucket 2"):
        strict.decide((spec(3, 8),))


def test_bucket_for_and_the_warmup_order():
    planner = CachePlanner([Pad("batch", dim=0, buckets=[1, 4], max_size=None),
                            Pad("seq", dim=1, buckets=[8, 16], max_size=None)])
    assert planner.bucket_for((3, 9)) == (4, 16) and planner.bucket_for((5, 9)) is None
    assert planner.warmup_order() == [(4, 16), (4, 8), (1, 16), (1, 8)]  # largest first
    assert planner.warmup_order([(1, 8), (4, 16)]) == [(4, 16), (1, 8)]
    with pytest.raises(BadInputError, match="not a bucket"):
        planner.warmup_order([(3, 8)])
    with pytest.raises(BadInputError, match="one size per padded dim"):
        planner.warmup_order([4])
    with pytest.raises(BadInputError, match="one size per padded dim"):
        planner.bucket_for((4,))
    assert planner.describe() == "batch [1, 4]; seq [8, 16]"


def test_pads_that_cannot_work_are_refused():
    with pytest.raises(ConfigurationError, match="at least one dimension"):
        CachePlanner([])
    with pytest.raises(ConfigurationError, match="different input dimension"):
        CachePlanner([Pad("a", dim=0), Pad("b", dim=0)])
    with pytest.raises(ConfigurationError, match="needs max_size"):
        CachePlanner([Pad("batch", buckets="pow2", max_size=None)])


def test_the_decision_needs_no_torch():
    if os.environ.get("GRAPHLAB_PLAN_TORCH_BLOCKED"):
        pytest.skip("this is the torch-blocked run itself")
    prelude = "import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in BLOCKED)
    code = prelude + (f"import pytest\nsys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', {__file__!r}]))\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                            env={**os.environ, "GRAPHLAB_PLAN_TORCH_BLOCKED": "1"})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "failed" not in result.stdout and " passed" in result.stdout
