"""Invariants of the serving estimate, over random configurations (hypothesis)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofkit.circuit.roofline import device_roofline
from roofkit.serving import serve

configs = st.fixed_dictionaries({
    "batch": st.integers(1, 256),
    "input_len": st.integers(1, 4096),
    "output_len": st.integers(1, 512),
    "tp": st.sampled_from([1, 2, 4, 8]),
    "basis": st.sampled_from(["datasheet", "calibrated"]),
})


@settings(max_examples=60, deadline=None)
@given(configs)
def test_latencies_are_ordered_and_grow_with_the_context(cfg):
    est = serve("llama-3.1-8b", "h100", **cfg)
    assert est.ttft > 0 and est.e2e >= est.ttft
    assert np.all(np.diff(est.itl_steps) >= -1e-15)   # the KV read only grows
    assert est.e2e == pytest.approx(est.ttft + est.itl_steps.sum())
    assert est.output_tokens_per_s == pytest.approx(cfg["batch"] * cfg["output_len"] / est.e2e)


@settings(max_examples=60, deadline=None)
@given(st.floats(0, 1e-2), st.floats(0, 1e-2))
def test_a_kernel_takes_between_max_and_sum_of_compute_and_memory(c, m):
    from roofkit import default_registry

    reg = default_registry()
    for name in ("a100-80gb", "h100-sxm", "mi300x"):
        roof = device_roofline(reg.device(name), "calibrated", reg)
        t = float(roof.combine(c, m))
        assert max(c, m) * (1 - 1e-12) <= t <= (c + m) * (1 + 1e-12)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 64), st.integers(16, 2048))
def test_the_calibrated_basis_is_never_faster_than_the_datasheet(batch, context):
    kw = dict(batch=batch, input_len=context, output_len=8)
    sheet = serve("llama-3.1-8b", "h100", basis="datasheet", **kw)
    cal = serve("llama-3.1-8b", "h100", basis="calibrated", **kw)
    device = cal.itl_steps - cal.decode_host.host_time
    assert np.all(device >= sheet.itl_steps - sheet.decode_host.host_time - 1e-12)
