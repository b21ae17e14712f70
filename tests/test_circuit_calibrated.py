"""The circuit's calibrated basis: measured constants, GEMM-size efficiency, the overlap of
compute and memory, and the roofline_calibrated cost model that uses them."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import roofkit
from roofkit.circuit.calibrated import combine, efficiency, gemm_curve, overlap_exponent
from roofkit.circuit.roofline import device_roofline


@pytest.fixture(scope="module")
def a100(registry):
    return device_roofline(registry.device("a100-80gb"), "calibrated", registry)


def test_the_datasheet_basis_is_the_device_spec(registry):
    d = registry.device("h100")
    roof = device_roofline(d, "datasheet", registry)
    assert roof.bandwidth == d.memory.bandwidth and roof.peaks["fp8"] == d.compute["fp8"]
    assert math.isinf(roof.overlap) and roof.curves == {} and roof.attention_peak is None
    assert roof.launch == d.overheads.launch and roof.dispatch == d.overheads.dispatch
    assert roof.link.rings(4)[0].beta == d.interconnect.bandwidth
    assert all(v.startswith("datasheet") for v in roof.provenance.values())


def test_calibrated_constants_are_the_measurements_with_their_sources(registry):
    roof = device_roofline(registry.device("h100"), "calibrated", registry)
    assert roof.bandwidth == 2.97e12                        # STREAM triad, Azure ND H100 v5
    assert roof.peaks["bf16"] == pytest.approx(794.5e12)    # MAMF
    assert roof.peaks["fp16"] == roof.peaks["bf16"]         # same datapath, same datasheet peak
    assert roof.peaks["fp8"] == pytest.approx(1402.6e12)
    assert roof.launch == 2.7e-6                            # CSCS kernel-launch reference
    assert roof.attention_peak == pytest.approx(327.9e12)   # FlashAttention-2
    for key in ("memory.bandwidth", "compute.bf16", "compute.fp16", "gemm.fp8", "attention",
                "launch", "interconnect", "overlap"):
        assert "https://" in roof.provenance[key], key
    assert roof.measured and "overlap p" in roof.basis


def test_a_slot_without_a_measurement_keeps_its_ceiling_and_says_so(registry):
    # the H200's calibration measures fp8 (and derives bf16 from the H100's); tf32 has none
    roof = device_roofline(registry.device("h200"), "calibrated", registry)
    assert roof.peaks["tf32"] == registry.device("h200").compute["tf32"]
    assert roof.provenance["compute.tf32"] == "datasheet"
    assert "datasheet ceiling kept for" in roof.basis and "compute.tf32" in roof.basis
    assert roof.peaks["bf16"] == pytest.approx(788.2e12)
    assert roof.peaks["bf16"] == pytest.approx(794.5e12 * 1366.3 / 1377.3, rel=1e-4)


def test_gemm_efficiency_interpolates_the_measured_sweep_in_log_flops(a100):
    best = 256.5e12
    at = 2.0 * 4096**3
    assert a100.efficiency("fp16", at) == pytest.approx(228.0 / 256.5)
    mid = 2.0 * 4096**3 * 2.0**1.5                          # halfway between 4096^3 and 8192^3
    assert a100.efficiency("fp16", mid) == pytest.approx((228.0 + 253.7) / 2 / 256.5)
    assert a100.efficiency("fp16", 1.0) == pytest.approx(119.4 / 256.5)   # held flat below
    assert a100.matmul_rate("fp16", at) == pytest.approx(228.0e12 * a100.peaks["fp16"] / best)
    arr = a100.efficiency("fp16", np.array([at, mid, 1.0]))
    assert arr == pytest.approx([228.0 / 256.5, (228.0 + 253.7) / 2 / 256.5, 119.4 / 256.5])


def test_the_overlap_exponent_reproduces_the_mixed_bound_gemm(registry):
    for name in ("a100-80gb", "h100-sxm", "h200", "mi300x"):
        roof = device_roofline(registry.device(name), "calibrated", registry)
        cal = next(c for c in registry.catalogues["calibration"].values() if c.device == name)
        slot, row = next(iter(cal.mixed.items()))
        m, n, k = row.dims()
        flops = 2 * m * n * k
        c = flops / roof.matmul_rate(slot, flops)
        mem = (m * k * row.a_bytes + k * n * row.b_bytes + m * n * row.c_bytes) / roof.bandwidth
        assert 1 < roof.overlap < 8
        assert float(roof.combine(c, mem)) == pytest.approx(flops / row.throughput, rel=1e-6)
        assert max(c, mem) < flops / row.throughput < c + mem


def test_overlap_exponent_limits():
    assert math.isinf(overlap_exponent(1.0, 0.5, 1.0))
    assert overlap_exponent(1.0, 0.5, 1.5) == 1.0
    p = overlap_exponent(1.0, 1.0, 2 ** 0.5)
    assert p == pytest.approx(2.0, rel=1e-9)


def test_combine_lies_between_max_and_sum(a100):
    c, m = np.array([1.0, 2.0, 0.0]), np.array([1.0, 0.5, 3.0])
    out = a100.combine(c, m)
    assert np.all(out >= np.maximum(c, m)) and np.all(out <= c + m)
    assert out[2] == 3.0
    assert combine(1.0, 2.0, math.inf) == 2.0


@settings(max_examples=60, deadline=None)
@given(st.floats(0, 1e-2), st.floats(0, 1e-2), st.floats(1, 64))
def test_combine_floats_equal_arrays_and_stay_between_max_and_sum(c, m, p):
    t = combine(c, m, p)
    assert max(c, m) * (1 - 1e-12) <= t <= (c + m) * (1 + 1e-12)
    assert float(combine(np.array([c]), np.array([m]), p)[0]) == pytest.approx(t, rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.floats(1.0, 1e16))
def test_efficiency_floats_equal_arrays(f):
    curve = gemm_curve([(2e9, 100.0), (1.4e11, 200.0), (8.8e12, 250.0)])
    assert efficiency(curve, f) == pytest.approx(float(efficiency(curve, np.array([f]))[0]),
                                                 rel=1e-12)


def test_calibrated_cost_model_is_the_default_on_the_calibrated_basis(registry):
    cal = roofkit.decode("llama-3.1-8b", "h100", batch=8, context=1024, basis="calibrated",
                         registry=registry)
    sheet = roofkit.decode("llama-3.1-8b", "h100", batch=8, context=1024, basis="datasheet",
                           registry=registry)
    assert cal.cost_model == "roofline_calibrated" and sheet.cost_model == "roofline"
    plain = roofkit.decode("llama-3.1-8b", "h100", batch=8, context=1024, basis="calibrated",
                           cost_model="roofline", registry=registry)
    assert cal.time > plain.time > sheet.time  # overlap and small-GEMM efficiency cost time


def test_a_matrix_node_by_hand_on_the_calibrated_basis(registry, a100):
    T = 4096
    est = roofkit.prefill("llama-2-7b", "a100-80gb", tokens=T, basis="calibrated",
                          precision="fp16", registry=registry)
    row = next(r for r in est.rows if r.node == "ffn.gate_up")
    flops = 2 * T * 4096 * 2 * 11008
    nbytes = 4096 * 2 * 11008 * 2 + T * (4096 + 2 * 11008) * 2
    c = flops / (a100.peaks["fp16"] * a100.efficiency("fp16", flops))
    m = nbytes / a100.bandwidth
    assert row.time / row.count == pytest.approx(a100.combine(c, m), rel=1e-12)
    assert row.t_compute / row.count == pytest.approx(c, rel=1e-12)


def test_prefill_attention_runs_at_the_measured_attention_throughput(registry, a100):
    T = 2048
    est = roofkit.prefill("llama-2-7b", "a100-80gb", tokens=T, basis="calibrated",
                          registry=registry)
    row = next(r for r in est.rows if r.op == "paged_attention")
    assert row.t_compute == pytest.approx(row.flops / a100.attention_peak, rel=1e-12)
    dec = roofkit.decode("llama-2-7b", "a100-80gb", batch=8, context=T, basis="calibrated",
                         registry=registry)
    drow = next(r for r in dec.rows if r.op == "paged_attention")
    assert drow.t_compute == pytest.approx(drow.flops / a100.peaks["bf16"], rel=1e-12)


def test_routed_experts_read_efficiency_at_one_experts_gemm(registry):
    roof = device_roofline(registry.device("h100"), "calibrated", registry)
    est = roofkit.prefill("mixtral-8x7b", "h100", tokens=512, basis="calibrated",
                          precision="fp8", registry=registry)
    row = next(r for r in est.rows if r.node == "moe.experts_down")
    touched = 8 * (1 - (1 - 2 / 8) ** 512)
    one = row.flops / row.count / touched
    assert row.t_compute / row.count == pytest.approx(
        row.flops / row.count / roof.matmul_rate("fp8", one), rel=1e-12)


def test_calibrated_decode_arrays_equal_scalar_calls(registry):
    ctx = np.array([1.0, 300.0, 5000.0])
    many = roofkit.decode("mixtral-8x7b", "h100", batch=4, context=ctx, basis="calibrated",
                          registry=registry)
    for i, c in enumerate(ctx):
        one = roofkit.decode("mixtral-8x7b", "h100", batch=4, context=float(c),
                             basis="calibrated", registry=registry)
        assert many.time[i] == pytest.approx(one.time, rel=1e-12)
