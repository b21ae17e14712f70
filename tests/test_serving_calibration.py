"""Calibration specs and the serving engine's step time (the calibrated roofline itself is
the circuit's: tests/test_circuit_calibrated.py)."""

import pytest

from roofkit.circuit.roofline import host_calibration
from roofkit.errors import SpecError
from roofkit.serving.overhead import engine_step_time
from roofkit.testing import make_registry, write_spec


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
