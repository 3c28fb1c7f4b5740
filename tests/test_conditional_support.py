"""Conditional-node feature detection: pure decisions from facts, one clear error naming what is missing,
and the detection itself on this CPU machine (no GPU: everything missing, nothing raised)."""
from __future__ import annotations

import dataclasses

import pytest

import graphlab as gl
from graphlab.errors import ConditionalUnsupportedError, GPUUnavailableError
from graphlab.conditional.support import (ConditionalFacts, ConditionalSupport, conditional_features,
                                              conditional_support, detect_facts, driver_version_text)

H200 = ConditionalFacts(cuda_available=True, torch_version="2.11.0+cu130", driver_version=13000,
                        cuda_bindings="13.3.1", bindings_kinds=("if", "while", "switch"), bindings_node_params=True,
                        nvrtc="13.0", keep_graph=True, raw_cuda_graph=True, pool_routing=True)


def test_the_h200_facts_support_every_kind_by_both_routes_but_not_torch_cond():
    support = ConditionalSupport.from_facts(H200)
    assert support.kinds == {"if": True, "while": True, "if_else": True, "switch": True}
    assert support.routes == {"child": True, "capture": True, "torch": False}
    assert support.best_route() == "child"
    support.require("switch", "capture")  # no error
    with pytest.raises(ConditionalUnsupportedError, match=r"torch >= 2.12.*torch 2.11.0\+cu130"):
        support.require("if", "torch")


@pytest.mark.parametrize("driver, ok_kinds", [
    (12020, set()),                       # before CUDA 12.3: no conditional nodes at all
    (12030, {"if", "while"}),             # 12.3: IF and WHILE
    (12060, {"if", "while"}),
    (12080, {"if", "while", "if_else", "switch"}),  # 12.8: IF/ELSE and SWITCH
])
def test_kinds_follow_the_driver_version(driver, ok_kinds):
    support = ConditionalSupport.from_facts(dataclasses.replace(H200, driver_version=driver))
    assert {k for k, v in support.kinds.items() if v} == ok_kinds
    for kind in set(support.kinds) - ok_kinds:
        with pytest.raises(ConditionalUnsupportedError, match=r"needs a CUDA 12\.[38] driver .* supports CUDA 12\."):
            support.require(kind, "child")


def test_an_old_driver_error_is_one_line_naming_kind_driver_and_route():
    support = ConditionalSupport.from_facts(dataclasses.replace(H200, driver_version=12060, pool_routing=False))
    with pytest.raises(ConditionalUnsupportedError) as err:
        support.require("switch", "capture")
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("a SWITCH conditional node by route 'capture' needs")
    assert "CUDA 12.8 driver for SWITCH nodes (this driver supports CUDA 12.6)" in message
    assert "_cuda_beginAllocateCurrentStreamToPool" in message


def test_missing_bindings_nvrtc_and_gpu_are_all_named():
    facts = ConditionalFacts(torch_version="2.13.0+cpu", nvrtc_error="libnvrtc.so.13 not found")
    support = ConditionalSupport.from_facts(facts)
    assert not any(support.kinds.values())
    text = support.missing["kind:if"]
    assert "a CUDA GPU" in text and "cuda-bindings (pip install" in text and "NVRTC" in text
    assert "libnvrtc.so.13 not found" in text


def test_bindings_without_switch_or_node_params_are_named():
    old = dataclasses.replace(H200, bindings_kinds=("if", "while"))
    support = ConditionalSupport.from_facts(old)
    assert support.kinds["switch"] is False and support.kinds["if"] is True
    assert "names SWITCH conditionals" in support.missing["kind:switch"]
    no_params = ConditionalSupport.from_facts(dataclasses.replace(H200, bindings_node_params=False))
    assert "cudaGraphAddNode" in no_params.missing["kind:if"]


def test_routes_follow_torch_features():
    support = ConditionalSupport.from_facts(dataclasses.replace(H200, keep_graph=False, torch_cond=True))
    assert support.routes == {"child": False, "capture": True, "torch": True}
    assert support.best_route() == "capture"
    assert "keep_graph=True" in support.missing["route:child"]
    none = ConditionalSupport.from_facts(dataclasses.replace(H200, keep_graph=False, pool_routing=False))
    assert none.best_route() is None


def test_unknown_kind_or_route_is_one_clear_error():
    support = ConditionalSupport.from_facts(H200)
    with pytest.raises(ConditionalUnsupportedError, match="unknown conditional kind 'until'"):
        support.require("until", "child")
    with pytest.raises(ConditionalUnsupportedError, match="unknown route 'magic'"):
        support.require("if", "magic")


def test_support_round_trips_through_json_and_prints():
    support = ConditionalSupport.from_facts(H200)
    again = ConditionalSupport.from_dict(support.to_dict())
    assert again == support
    text = str(support)
    assert "SWITCH node" in text and "13.0" in text and "route 'torch'" in text
    assert "<table" in support._repr_html_()


def test_driver_version_text():
    assert driver_version_text(12080) == "12.8"
    assert driver_version_text(13000) == "13.0"
    assert driver_version_text(None) == "unknown"


def test_detection_on_this_machine_never_raises_and_names_the_missing_gpu():
    facts = detect_facts()
    support = conditional_support(refresh=True)
    assert support.facts == facts
    if not facts.cuda_available:
        assert not any(support.kinds.values())
        assert "a CUDA GPU" in support.missing["kind:if"]
    features = conditional_features()
    assert set(features) == {"cond_if", "cond_while", "cond_if_else", "cond_switch", "cond_torch_cond"}
    assert gl.conditional_support() is support


def test_the_public_functions_need_a_gpu_first():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    from graphlab.studies import conditional as studies

    flag = torch.zeros((), dtype=torch.bool)
    for call in (lambda: gl.cond(flag, lambda: None), lambda: gl.while_loop(flag, lambda: None),
                 lambda: gl.switch(flag, [lambda: None]), lambda: gl.capture_with_torch_cond(lambda: None),
                 lambda: studies.early_exit_study(), lambda: studies.decode_loop_study(),
                 lambda: studies.bucket_switch_study(), lambda: studies.conditional_route_study()):
        with pytest.raises(GPUUnavailableError):
            call()


def test_the_error_is_public():
    assert gl.ConditionalUnsupportedError is ConditionalUnsupportedError
    assert issubclass(ConditionalUnsupportedError, gl.GraphlabError)
