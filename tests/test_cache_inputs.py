"""What GraphCache and capture are given (issue 26): checked when they capture (a miss), never on a hit; a wrong
dtype, shape, device or structure names the input, what the graph expects, what it got and the fix; each
backend says which devices it accepts and refuses the rest."""
from __future__ import annotations

import warnings

import pytest
import torch

import graphlab as gl
from graphlab.cache.backends import CudaBackend, EagerBackend, check_device
from graphlab.capture.api import check_capture_inputs
from graphlab.errors import BadInputError

GPU = torch.cuda.is_available()


def linear_cache(**options) -> gl.GraphCache:
    return gl.GraphCache(torch.nn.Linear(64, 8).eval(), buckets=[1, 2, 4, 8], max_size=None,
                         **{"backend": "eager", **options})


@pytest.fixture(autouse=True)
def _no_grad():
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fallbacks warn once; the tests read their errors
        yield


# -- devices ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("device, message", [
    ("gpu", r"device 'gpu' is not a device torch knows: use 'cuda', 'cuda:N' or 'cpu'"),
    ("meta", r"backend 'eager' runs on cpu or cuda devices, not 'meta'"),
    ("cpu:7", r"device 'cpu:7': there is one CPU device, 'cpu'"),
    (42.5, r"device 42.5 is not a device torch knows"),
])
def test_the_eager_backend_refuses_devices_it_cannot_run_on(device, message) -> None:
    with pytest.raises(BadInputError, match=message):
        linear_cache(device=device)


@pytest.mark.skipif(GPU, reason="checks the message of a machine without a GPU")
@pytest.mark.parametrize("device", ["cuda", "cuda:3"])
def test_a_cuda_device_that_is_not_here_is_refused(device) -> None:
    with pytest.raises(BadInputError, match=r"does not exist here \(no CUDA GPU\): use backend=\"eager\""):
        linear_cache(device=device)


def test_each_backend_says_which_devices_it_accepts() -> None:
    assert CudaBackend.devices == ("cuda",) and EagerBackend.devices == ("cpu", "cuda")
    with pytest.raises(BadInputError, match=r"backend 'cuda' runs on cuda devices, not 'cpu': .*backend=\"eager\""):
        check_device(CudaBackend(), "cpu")
    assert check_device(EagerBackend(), "cpu") == torch.device("cpu")
    assert check_device(EagerBackend(), None) is None

    class Custom:  # a backend that does not say: any device torch knows
        def capture(self, *a, **k): ...
        def new_pool(self, device): ...
    assert check_device(Custom(), "meta") == torch.device("meta")


def test_a_cpu_tensor_on_the_cuda_backend_names_backend_eager() -> None:
    cache = gl.GraphCache(torch.nn.Linear(64, 8).eval(), buckets=[4], max_size=None, backend="cuda")
    with pytest.raises(BadInputError, match=r"GraphCache 'Linear': input \[0\] is on cpu, but backend 'cuda' runs on "
                                            r"cuda devices: move the inputs with .to\('cuda'\), or use backend=\"eager\""):
        cache(torch.zeros(4, 64))


def test_the_default_backend_on_a_cpu_tensor_names_backend_eager(monkeypatch) -> None:
    from graphlab import mode

    monkeypatch.setattr(mode, "_current", None)  # no mode chosen: the default backend is the CUDA one
    cache = gl.GraphCache(torch.nn.Linear(64, 8).eval(), buckets=[4], max_size=None)
    assert cache.backend.name == "cuda"
    with pytest.raises(BadInputError, match=r"input \[0\] is on cpu, but backend 'cuda' .*backend=\"eager\"") as info:
        cache(torch.zeros(4, 64))
    assert "Expected a cuda device" not in str(info.value)


# -- what the model refuses, at a miss --------------------------------------------------------------------
@pytest.mark.parametrize("x, found", [
    (torch.zeros(4, 64, dtype=torch.float64), r"input 0 is float64 but the model's weights are float32 \(fix: "
                                              r"x.to\(torch.float32\)\); got input 0: 4 x 64 float64"),
    (torch.zeros(4, 64, dtype=torch.int64), r"input 0 is int64 but the model's weights are float32"),
    (torch.zeros(4, 32), r"got input 0: 4 x 32 float32; expected: the model's weights are float32 on cpu\. "
                         r"The model said: RuntimeError: mat1 and mat2 shapes cannot be multiplied"),
    ("hello", r"input 0 is a str, not a tensor \(fix: torch.tensor\(...\)\)"),
    ([1.0] * 64, r"input 0 is a list, not a tensor"),
    (None, r"input 0 is a NoneType, not a tensor"),
])
def test_a_model_that_refuses_its_inputs_gets_one_line_naming_input_expected_got(x, found) -> None:
    cache = linear_cache()
    with pytest.raises(BadInputError, match=found) as info:
        cache(x)
    message = str(info.value)
    assert message.startswith("GraphCache 'Linear': the model raised on the inputs of ") and "\n" not in message
    assert isinstance(info.value.__cause__, (RuntimeError, TypeError))  # torch's own error, kept as the cause
    assert len(cache) == 0  # nothing half-captured is kept


def test_a_wrong_shape_after_a_good_capture_says_what_the_graphs_were_captured_for() -> None:
    cache = linear_cache()
    cache(torch.zeros(4, 64))
    with pytest.raises(BadInputError, match=r"got input 0: 4 x 32 float32; expected: the model's weights are "
                                            r"float32 on cpu; graph 4 was captured for input \[0\]: 4 x 64 float32"):
        cache(torch.zeros(4, 32))
    assert torch.equal(cache(torch.ones(2, 64)), cache.model(torch.ones(2, 64)))  # the cache still serves


def test_no_inputs_is_one_line() -> None:
    with pytest.raises(BadInputError, match=r"GraphCache 'Linear' was called with no inputs"):
        linear_cache()()


def test_the_checks_run_at_a_miss_only(monkeypatch) -> None:
    cache = linear_cache()
    x = torch.zeros(4, 64)
    cache(x)
    calls = []
    monkeypatch.setattr(gl.GraphCache, "_check_inputs", lambda self, inputs: calls.append(1))
    for _ in range(5):
        cache(x)  # hits
    assert calls == [] and cache.stats().hits == 5
    cache(torch.zeros(8, 64))  # a miss: checked
    assert calls == [1]


# -- gl.capture's checks ---------------------------------------------------------------------------------
@pytest.mark.parametrize("fn, inputs, device, message", [
    (42, (), None, r"gl.capture takes a function or nn.Module first, got int"),
    (len, (torch.zeros(2),), None, r"input \[0\] is on cpu, but a CUDA graph reads GPU memory: move it with "
                                   r".to\('cuda'\) first, or pin it"),
    (len, (), "gpu", r"device 'gpu' is not a device torch knows"),
    (len, (), "cpu", r"gl.capture records CUDA graphs on a GPU, not on 'cpu'.*backend=\"eager\""),
    (len, (), "meta", r"not on 'meta'"),
    (len, ({"x": [torch.zeros(1)]},), None, r"input \[0\]\['x'\]\[0\] is on cpu"),
])
def test_capture_checks_what_it_is_given_before_capturing(fn, inputs, device, message) -> None:
    with pytest.raises(BadInputError, match=message):
        check_capture_inputs(fn, inputs, device)


@pytest.mark.skipif(GPU, reason="checks the message of a machine without a GPU")
def test_capture_refuses_a_gpu_that_is_not_here() -> None:
    with pytest.raises(BadInputError, match=r"device 'cuda:2' does not exist here \(no CUDA GPU\)"):
        check_capture_inputs(len, (), "cuda:2")


def test_capture_wraps_a_model_that_refuses_its_inputs_in_warm_up_in_one_line() -> None:
    # gl.capture needs a GPU; what it raises when the warm-up (an eager run) fails is this helper's line
    from graphlab.capture.input_plan import model_refused

    model = torch.nn.Linear(64, 8)
    x = torch.zeros(4, 64, dtype=torch.float16)
    try:
        model(x)
    except RuntimeError as exc:
        err = model_refused(model, (x,), exc, where="gl.capture 'Linear'", what="the warm-up (an eager run)")
    assert str(err).startswith("gl.capture 'Linear': the model raised on the inputs of the warm-up (an eager run): "
                               "input 0 is float16 but the model's weights are float32 (fix: x.to(torch.float32)); "
                               "got input 0: 4 x 64 float16; expected: the model's weights are float32 on cpu.")
    embedding = torch.nn.Sequential(torch.nn.Embedding(10, 4), torch.nn.Linear(4, 2))
    ids = torch.zeros(2, 3, dtype=torch.int64)
    assert "input 0 is int64" not in str(model_refused(embedding, (ids,), RuntimeError("x"), where="w", what="a"))
    import inspect

    from graphlab.capture import api
    assert "model_refused(fn, example_inputs, exc" in inspect.getsource(api.capture_graph)
