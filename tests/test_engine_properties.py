"""Invariants of Engine.solve over random configurations (hypothesis)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import roofkit
from roofkit import Engine

WORKLOADS = ["resnet-50", "resnet-18", "mobilenet-v2", "vit-l-16", "ds-cnn", "yolov8n"]
try:  # template workloads take their counts from the circuit
    import roofkit.circuit.stats

    WORKLOADS += ["llama-3.1-8b", "mixtral-8x7b", "bert-base", "qwen3-next-80b-a3b"]
except ImportError:  # pragma: no cover
    pass
PRECISIONS = ["fp32", "fp16", "bf16", "fp8", "int8", "int4", "nvfp4"]


@pytest.fixture(scope="module")
def reg():
    return roofkit.build_registry(entry_points=False)


@pytest.fixture(scope="module")
def devices(reg):
    return sorted(reg.devices)


configs = st.fixed_dictionaries({
    "model": st.sampled_from(WORKLOADS),
    "device": st.integers(0, 10_000),
    "batch_size": st.integers(1, 4096),
    "precision": st.sampled_from(PRECISIONS),
    "efficiency": st.floats(1e-9, 1.0),
    "is_training": st.booleans(),
    "is_lora": st.booleans(),
    "activation_recomputation": st.booleans(),
    "seq_len": st.integers(1, 32768),
    "zero_stage": st.integers(0, 3),
    "dp_size": st.integers(1, 64),
})


def _solve(reg, devices, c, **over):
    kw = {k: v for k, v in c.items() if k not in ("model", "device")}
    kw.update(over)
    return Engine.solve(c["model"], devices[c["device"] % len(devices)], registry=reg, **kw)


@settings(max_examples=150, deadline=None)
@given(c=configs)
def test_latency_at_least_each_bound(reg, devices, c):
    p = _solve(reg, devices, c)
    assert p.latency >= max(p.latency_compute, p.latency_memory)
    assert p.latency_s >= max(p._tc, p._tm) + p._to * (1 - 1e-15)


@settings(max_examples=150, deadline=None)
@given(c=configs)
def test_throughput_is_batch_over_latency(reg, devices, c):
    p = _solve(reg, devices, c)
    assert p.throughput_per_s == c["batch_size"] / p.latency_s
    assert 0.0 <= p.mfu <= p.hfu <= 1.0
    assert p.energy_j >= 0.0


@settings(max_examples=100, deadline=None)
@given(c=configs, extra=st.integers(1, 4096))
def test_latency_non_decreasing_in_batch(reg, devices, c, extra):
    small = _solve(reg, devices, c)
    large = _solve(reg, devices, c, batch_size=c["batch_size"] + extra)
    assert large.latency_s >= small.latency_s
