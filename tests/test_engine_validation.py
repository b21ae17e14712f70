"""Engine.solve and Engine.sweep refuse bad arguments with messages that say what to pass."""

from __future__ import annotations

import math

import pytest

import roofkit
from roofkit import Engine, SpecError, UnknownNameError


@pytest.fixture(scope="module")
def reg():
    return roofkit.build_registry(entry_points=False)


def solve(reg, **kw):
    return Engine.solve("resnet-50", "h100", registry=reg, **kw)


@pytest.mark.parametrize("bad", [2.5, "32", 0, -1, True, None, 32.0])
def test_batch_size_must_be_a_positive_int(reg, bad):
    with pytest.raises(SpecError, match="batch_size"):
        solve(reg, batch_size=bad)


def test_batch_size_string_message_says_pass_a_number(reg):
    with pytest.raises(SpecError, match="not a string"):
        solve(reg, batch_size="32")


@pytest.mark.parametrize("bad", [0.0, 1e-10, 1.0000001, -0.1, 50.0, math.nan, math.inf, "0.5",
                                 True, None])
def test_efficiency_must_be_in_range(reg, bad):
    with pytest.raises(SpecError, match="efficiency"):
        solve(reg, efficiency=bad)


@pytest.mark.parametrize("good", [1e-9, 1.0, 1, 0.5])
def test_efficiency_bounds_are_inclusive(reg, good):
    assert solve(reg, efficiency=good).feasible


@pytest.mark.parametrize("bad", [-1, 4, 1.0, "1", True])
def test_zero_stage_must_be_0_to_3(reg, bad):
    with pytest.raises(SpecError, match="zero_stage"):
        solve(reg, zero_stage=bad, is_training=True)


@pytest.mark.parametrize("name", ["dp_size", "seq_len"])
@pytest.mark.parametrize("bad", [0, -2, 1.5, "8"])
def test_dp_size_and_seq_len_at_least_one(reg, name, bad):
    with pytest.raises(SpecError, match=name):
        solve(reg, **{name: bad})


@pytest.mark.parametrize("name", ["is_training", "is_lora", "activation_recomputation",
                                  "raise_errors"])
def test_flags_must_be_booleans(reg, name):
    with pytest.raises(SpecError, match=name):
        solve(reg, **{name: "yes"})


def test_unknown_precision_lists_known_ones(reg):
    with pytest.raises(UnknownNameError) as info:
        solve(reg, precision="fp6")
    text = str(info.value)
    assert "precision" in text and "'fp6'" in text
    for known in ("bf16", "fp16", "fp8", "int8", "nvfp4"):
        assert known in text


def test_unknown_precision_far_from_any_name_lists_known_ones(reg):
    with pytest.raises(UnknownNameError, match="bf16"):
        solve(reg, precision="quux")


def test_precision_names_are_case_insensitive_and_aliased(reg):
    a = solve(reg, precision="BF16").latency_s
    assert a == solve(reg, precision="bfloat16").latency_s == solve(reg, precision="bf16").latency_s


def test_unknown_model_and_device_suggest_names(reg):
    with pytest.raises(UnknownNameError, match="resnet-50"):
        Engine.solve("resnet50x", "h100", registry=reg)
    with pytest.raises(UnknownNameError, match="h100"):
        Engine.solve("resnet-50", "h10", registry=reg)


def test_model_of_wrong_type_is_an_argument_error(reg):
    from roofkit import ArgumentError

    with pytest.raises(ArgumentError, match="expected a workload name"):
        Engine.solve(42, "h100", registry=reg)


def test_sweep_validates_its_arguments(reg):
    with pytest.raises(SpecError, match="batch_sizes"):
        Engine.sweep("resnet-50", ["h100"], [1, 2.5], registry=reg)
    with pytest.raises(SpecError, match="efficiency"):
        Engine.sweep("resnet-50", ["h100"], efficiency=2, registry=reg)
    with pytest.raises(UnknownNameError, match="precision"):
        Engine.sweep("resnet-50", ["h100"], precisions=["fp16", "fp7"], registry=reg)
    with pytest.raises(SpecError, match="precisions"):
        Engine.sweep("resnet-50", ["h100"], precisions="fp16", registry=reg)
