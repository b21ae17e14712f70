"""The calibrated basis: measured constants, GEMM efficiency, overlap, engine step time."""

import math

import numpy as np
import pytest

from roofkit.errors import SpecError
from roofkit.serving.overhead import engine_step_time
from roofkit.serving.roofline import build, host_calibration
from roofkit.testing import make_registry, write_spec


@pytest.fixture(scope="module")
def a100(registry):
    return build(registry.device("a100-80gb"), "calibrated", registry)


def test_the_datasheet_basis_is_the_device_spec(registry):
    d = registry.device("h100")
    roof = build(d, "datasheet", registry)
    assert roof.bandwidth == d.memory.bandwidth and roof.peaks["fp8"] == d.compute["fp8"]
    assert math.isinf(roof.overlap) and roof.curves == {}
    assert set(roof.provenance.values()) <= {"datasheet", "datasheet: device overheads.launch"}


def test_calibrated_constants_are_the_measurements_with_their_sources(registry):
    roof = build(registry.device("h100"), "calibrated", registry)
    assert roof.bandwidth == 2.97e12                        # STREAM triad, Azure ND H100 v5
    assert roof.peaks["bf16"] == pytest.approx(794.5e12)    # MAMF
    assert roof.peaks["fp16"] == roof.peaks["bf16"]         # same datapath, same datasheet peak
    assert roof.peaks["fp8"] == pytest.approx(1402.6e12)
    assert roof.launch == 2.7e-6                            # CSCS kernel-launch reference
    for key in ("memory.bandwidth", "compute.bf16", "compute.fp16", "launch", "interconnect"):
        assert "https://" in roof.provenance[key]
    assert roof.device.memory.bandwidth == roof.bandwidth   # the evolved device spec


def test_a_slot_without_a_measurement_keeps_its_ceiling_and_says_so(registry):
    roof = build(registry.device("h200"), "calibrated", registry)
    assert roof.peaks["bf16"] == registry.device("h200").compute["bf16"]
    assert roof.provenance["compute.bf16"] == "datasheet"


def test_gemm_efficiency_interpolates_the_measured_sweep_in_log_flops(a100):
    best = 256.5e12
    at = 2.0 * 4096**3
    assert a100.efficiency("fp16", at) == pytest.approx(228.0 / 256.5)
    mid = 2.0 * 4096**3 * 2.0**1.5                          # halfway between 4096^3 and 8192^3
    assert a100.efficiency("fp16", mid) == pytest.approx((228.0 + 253.7) / 2 / 256.5)
    assert a100.efficiency("fp16", 1.0) == pytest.approx(119.4 / 256.5)   # held flat below
    assert a100.matmul_rate("fp16", at) == pytest.approx(228.0e12 * a100.peaks["fp16"] / best)


def test_the_overlap_exponent_reproduces_the_mixed_bound_gemm(registry):
    for name in ("a100-80gb", "h100-sxm", "h200", "mi300x"):
        roof = build(registry.device(name), "calibrated", registry)
        cal = next(c for c in registry.catalogues["calibration"].values() if c.device == name)
        slot, row = next(iter(cal.mixed.items()))
        m, n, k = row.dims()
        flops = 2 * m * n * k
        c = flops / roof.matmul_rate(slot, flops)
        mem = (m * k * row.a_bytes + k * n * row.b_bytes + m * n * row.c_bytes) / roof.bandwidth
        assert 1 < roof.overlap < 8
        assert float(roof.combine(c, mem)) == pytest.approx(flops / row.throughput, rel=1e-6)
        assert max(c, mem) < flops / row.throughput < c + mem


def test_combine_lies_between_max_and_sum(a100):
    c, m = np.array([1.0, 2.0, 0.0]), np.array([1.0, 0.5, 3.0])
    out = a100.combine(c, m)
    assert np.all(out >= np.maximum(c, m)) and np.all(out <= c + m)
    assert out[2] == 3.0


def test_engine_step_time_sums_components_and_interpolates_in_batch(registry):
    vllm = host_calibration(registry)["engines"]["vllm"]
    at8 = 0.16513 + 0.29317 + 0.88781 + 0.62438 + 0.05125       # ms, vidur medians, batch 8
    at16 = 0.27832 + 0.43911 + 0.94459 + 1.13542 + 0.05324
    assert engine_step_time(vllm, 8) == pytest.approx(at8 * 1e-3)
    assert engine_step_time(vllm, 12) == pytest.approx((at8 + at16) / 2 * 1e-3)
    assert engine_step_time(vllm, 4) == pytest.approx((at8 - (at16 - at8) / 2) * 1e-3)


def test_every_measurement_cites_a_url(registry):
    for cal in registry.catalogues["calibration"].values():
        for path, m in cal.measurements():
            assert m.source.startswith("https://"), f"{cal.name}: {path}"
            assert m.where, f"{cal.name}: {path} needs `where`"


BAD = """
name = "toy-bad"
device = "h100-sxm"

[bandwidth]
value = "3 TB/s"
source = "somewhere"

[gemm.fp8]
source = "https://example.com"
throughput = { "4096x4096" = "1 PFLOP/s" }
"""


def test_a_measurement_without_a_url_or_with_a_bad_shape_is_refused(tmp_path):
    write_spec(tmp_path, "calibration", "toy-bad", BAD)
    with pytest.raises(SpecError) as err:
        make_registry(spec_paths=[tmp_path], cache=False)
    text = str(err.value)
    assert "bandwidth.source" in text and "URL" in text
    assert "4096x4096" in text and "MxNxK" in text


def test_a_calibration_of_an_unknown_device_is_refused(tmp_path):
    write_spec(tmp_path, "calibration", "ghost", """
        name = "ghost"
        device = "no-such-gpu"
        [bandwidth]
        value = "1 TB/s"
        source = "https://example.com"
        where = "nowhere"
        """)
    with pytest.raises(SpecError, match="unknown device 'no-such-gpu'"):
        make_registry(spec_paths=[tmp_path], cache=False)
