"""Your own model served (CPU): gl.ServedModel from any nn.Module + example input + buckets, its request protocol,
the numbers it refuses (422 naming the element), a padding check that fails at start-up, and the CLI's lookup."""
from __future__ import annotations

import sys
import types

import pytest

torch = pytest.importorskip("torch")

import graphlab as gl  # noqa: E402
from graphlab.errors import BadInputError, BadRequestError, ConfigurationError, RequestTooLargeError  # noqa: E402
from graphlab.serve.models import resolve_model  # noqa: E402


def _net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))


@pytest.fixture(scope="module")
def service():
    s = gl.serve(_net(), torch.randn(3, 16), buckets=[1, 2, 4, 8], device="cpu", config=gl.ServeConfig(max_wait_us=0))
    yield s
    s.close()


def test_own_model_answers_its_output_rows(service):
    x = [[0.1 * i] * 16 for i in range(3)]
    answer = service.infer_sync({"inputs": x})
    want = _net()(torch.tensor(x)).tolist()
    assert len(answer["outputs"]) == 3
    for got_row, want_row in zip(answer["outputs"], want):
        assert got_row == pytest.approx(want_row, abs=1e-5)
    assert answer["batch"]["bucket"] == 4
    assert service.stats()["model"] == "Sequential"


@pytest.mark.parametrize("value, says", [
    (float("nan"), r"inputs\[0\]\[2\] is NaN"),
    (float("inf"), r"inputs\[0\]\[2\] is Infinity"),
    (-float("inf"), r"inputs\[0\]\[2\] is -Infinity"),
    (1e300, r"inputs\[0\]\[2\] is 1e\+300: send finite numbers within float32's range"),
    (10**400, r"inputs\[0\]\[2\] is an integer of 401 digits"),
    ("7", r"inputs\[0\]\[2\] must be a number, got str"),
    (None, r"inputs\[0\]\[2\] must be a number, got null"),
])
def test_bad_numbers_are_422_naming_the_element_and_the_service_goes_on(service, value, says):
    row = [0.0] * 16
    row[2] = value
    with pytest.raises(BadRequestError, match=says) as info:
        service.infer_sync({"inputs": [row]})
    assert info.value.status == 422
    assert len(service.infer_sync({"inputs": [[0.0] * 16]})["outputs"]) == 1


@pytest.mark.parametrize("body, error, says", [
    ({"inputs": [[0.0] * 15]}, BadRequestError, r"rows of shape \[15\]; this model takes rows of shape \[16\]"),
    ({"inputs": [[0.0] * 16, [0.0] * 15]}, BadRequestError, "inputs"),
    ({"inputs": {"y": [[0.0] * 16]}}, BadRequestError, "unknown input 'y'; this model takes x"),
    ({"inputs": {"x": [[0.0] * 16]}}, None, None),
    ({"input": []}, BadRequestError, "unknown field 'input'"),
    ({"inputs": []}, BadRequestError, "inputs is empty"),
    ({"inputs": [[0.0] * 16] * 9}, RequestTooLargeError, "inputs has 9 rows; this service takes at most 8"),
    ({"inputs": [[0.0] * 16], "top_k": 2}, BadRequestError, "unknown field 'top_k'"),
])
def test_the_protocol_checks_the_outline(service, body, error, says):
    if error is None:
        assert len(service.infer_sync(body)["outputs"]) == 1
        return
    with pytest.raises(error, match=says):
        service.infer_sync(body)


def test_integer_inputs_stay_inside_the_embedding_and_top_k_answers():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Embedding(100, 8), torch.nn.Flatten(), torch.nn.Linear(40, 3))
    served = gl.ServedModel(net, torch.randint(0, 100, (2, 5)), buckets=[1, 2, 4], answer="top_k",
                            labels=["a", "b", "c"], input_names=["ids"])
    with gl.serve(served, device="cpu") as service:
        answer = service.infer_sync({"inputs": [[1, 2, 3, 4, 5]], "top_k": 2})
        assert [r["label"] for r in answer["results"][0]] == [
            "abc"[i] for i in torch.topk(net(torch.tensor([[1, 2, 3, 4, 5]])), 2).indices[0].tolist()]
        with pytest.raises(BadRequestError, match=r"inputs holds true/false; this input takes numbers \(int64\)"):
            service.infer_sync({"inputs": [[True] * 5]})
        for bad, says in [(100, r"inputs\[0\]\[4\] is 100; this input takes integers from 0 to 99"),
                          (-1, "from 0 to 99"), (1.5, r"is 1.5; this input takes integers"),
                          (2**70, "outside int64")]:
            with pytest.raises(BadRequestError, match=says):
                service.infer_sync({"inputs": [[1, 2, 3, 4, bad]]})


def test_several_inputs_by_name():
    class Two(torch.nn.Module):
        def forward(self, a, b):
            return a * b.float().unsqueeze(-1)

    served = gl.ServedModel(Two(), (torch.randn(1, 2, 3), torch.ones(1, 2, dtype=torch.int64)),
                            input_names=("a", "b"), buckets=[1, 2])
    with gl.serve(served, device="cpu") as service:
        answer = service.infer_sync({"inputs": {"a": [[[1, 2, 3], [4, 5, 6]]], "b": [[2, 0]]}})
        assert answer["outputs"] == [[[2.0, 4.0, 6.0], [0.0, 0.0, 0.0]]]
        with pytest.raises(BadRequestError, match="missing input 'b'"):
            service.infer_sync({"inputs": {"a": [[[1, 2, 3], [4, 5, 6]]]}})
        with pytest.raises(BadRequestError, match="inputs must be an object with a, b"):
            service.infer_sync({"inputs": [[1]]})


def test_a_model_whose_rows_see_each_other_is_refused_at_start_with_one_line():
    class Mix(torch.nn.Module):
        def forward(self, x):
            return x - x.mean(0, keepdim=True)

    with pytest.raises(ConfigurationError) as info:
        gl.serve(Mix(), torch.randn(1, 4), buckets=[1, 2, 4], device="cpu")
    message = str(info.value)
    assert "\n" not in message
    assert "padding dim 'batch' changes its answer" in message and "buckets=list(range(1, 5))" in message


def test_an_output_that_is_not_finite_is_an_error_for_that_request_only():
    class Overflow(torch.nn.Module):
        def forward(self, x):
            return x * 1e38 * 10

    with gl.serve(Overflow(), torch.zeros(1, 2), buckets=[1, 2], device="cpu", config=gl.ServeConfig(max_wait_us=0)) as service:
        with pytest.raises(gl.ServeError, match="returned NaN or Infinity") as info:
            service.infer_sync({"inputs": [[1.0, 1.0]]})
        assert info.value.status == 500
        assert service.infer_sync({"inputs": [[0.0, 0.0]]})["outputs"] == [[0.0, 0.0]]


def test_a_hugging_face_model_with_random_weights_serves_its_logits():
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                     intermediate_size=64, max_position_embeddings=16, num_labels=3)
    torch.manual_seed(0)
    model = transformers.BertForSequenceClassification(config).eval()
    example = (torch.randint(1, 64, (2, 8)), torch.ones(2, 8, dtype=torch.int64))
    served = gl.ServedModel(model, example, input_names=("input_ids", "attention_mask"), output="logits",
                            buckets=[1, 2, 4], answer="top_k", labels=["neg", "neutral", "pos"])
    with gl.serve(served, device="cpu") as service:
        ids = [[5, 6, 7, 8, 0, 0, 0, 0]]
        answer = service.infer_sync({"inputs": {"input_ids": ids, "attention_mask": [[1, 1, 1, 1, 0, 0, 0, 0]]},
                                     "top_k": 3})
        with torch.no_grad():
            logits = model(torch.tensor(ids), attention_mask=torch.tensor([[1, 1, 1, 1, 0, 0, 0, 0]])).logits
        probs = torch.softmax(logits, -1)[0]
        assert {r["label"]: r["prob"] for r in answer["results"][0]} == pytest.approx(
            dict(zip(["neg", "neutral", "pos"], probs.tolist())), abs=1e-5)
        with pytest.raises(BadRequestError, match="from 0 to 63"):
            service.infer_sync({"inputs": {"input_ids": [[64] * 8], "attention_mask": [[1] * 8]}})


def test_resolve_model_names_zoo_factories_and_says_what_is_wrong(monkeypatch):
    mod = types.ModuleType("my_served_models")
    mod.make = lambda: gl.ServedModel(_net(), torch.randn(1, 16), buckets=[1, 2])
    mod.module_only = _net()
    mod.wrong = lambda: 3
    monkeypatch.setitem(sys.modules, "my_served_models", mod)
    assert resolve_model("my_served_models:make").name == "Sequential"
    assert resolve_model("mlp").kind == "vector"
    for name, says in [("nope", "no served model 'nope'"), ("no_such_pkg:make", "cannot import 'no_such_pkg'"),
                       ("my_served_models:missing", "has no 'missing'"),
                       ("my_served_models:module_only", "an nn.Module alone does not say its example input"),
                       ("my_served_models:wrong", "returned int, not a gl.ServedModel")]:
        with pytest.raises(BadInputError, match=says):
            resolve_model(name)


def test_served_model_checks_its_arguments():
    with pytest.raises(BadInputError, match="takes an nn.Module"):
        gl.ServedModel(lambda x: x, torch.zeros(1, 2))
    with pytest.raises(BadInputError, match="same batch size"):
        gl.ServedModel(_net(), (torch.zeros(1, 2), torch.zeros(2, 2)))
    with pytest.raises(BadInputError, match="needs example="):
        gl.serve(_net(), device="cpu")


class _Counting(torch.nn.Module):
    """A linear layer that counts its forward calls (and, once served, says its output shape [rows, 3])."""

    def __init__(self):
        super().__init__()
        self.inner = torch.nn.Linear(5, 3)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.inner(x)


@pytest.mark.parametrize("setting", ["eager", "graphs"])
def test_the_output_metadata_comes_from_the_warm_up_with_no_forward_of_its_own(setting):
    from graphlab.serve.runners import EagerRunner, make_cache_runner

    buckets = [1, 2, 4]
    # what the warm-up alone calls: the runner the service builds, warmed up on a module of its own
    alone = _Counting().eval()
    examples = lambda rows: (torch.randn(rows, 5),)  # noqa: E731 - the runner's example_inputs
    if setting == "eager":
        runner = EagerRunner(alone, examples, max_batch_size=4)
    else:
        runner = make_cache_runner(alone, examples, max_batch_size=4, buckets=buckets, device=torch.device("cpu"),
                                   name="count")
    with torch.no_grad():
        runner.warm_up()
    assert alone.calls > 0

    module = _Counting()
    served = gl.ServedModel(module, torch.randn(2, 5), buckets=buckets)
    assert served.oip_outputs() == [{"name": "output", "datatype": "FP32", "shape": [-1]}]  # not warmed up: rank unknown
    service = gl.serve(served, device="cpu", config=gl.ServeConfig(setting=setting, max_wait_us=0))
    try:
        assert module.calls == alone.calls, f"start-up called the model {module.calls} times, warm-up needs {alone.calls}"
        assert served.oip_outputs() == [{"name": "output", "datatype": "FP32", "shape": [-1, 3]}]
        service.infer_sync({"inputs": [[0.0] * 5]})
        assert module.calls == alone.calls + 1  # the hook is gone: one request, one call
        assert served.oip_outputs()[0]["shape"] == [-1, 3]
    finally:
        service.close()
