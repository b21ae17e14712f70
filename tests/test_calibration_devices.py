"""Calibrations read from published matmul sweeps (MAMF): their peaks replace the
datasheet's on the calibrated basis; a bandwidth nobody measured stays the datasheet's and
keeps an estimate outside the calibrated range of the intervals."""

import pytest

import roofkit
from roofkit.circuit.roofline import device_roofline


@pytest.mark.parametrize(("device", "slot", "tflops"), [
    ("b200", "bf16", 1745.0), ("b200", "fp8", 3432.5), ("gb200", "bf16", 1822.0),
    ("gb200", "fp8", 3615.6), ("mi325x", "bf16", 784.9), ("gaudi3", "bf16", 1243.0),
    ("gaudi3", "fp8", 1289.5), ("mi355x", "bf16", 1565.0),
])
def test_mamf_peaks_replace_the_datasheet_on_the_calibrated_basis(registry, device, slot,
                                                                  tflops):
    dev = registry.device(device)
    roof = device_roofline(dev, "calibrated", registry)
    assert roof.peaks[slot] == pytest.approx(tflops * 1e12)
    assert roof.peaks[slot] < dev.compute[slot]
    assert roof.bandwidth == dev.memory.bandwidth and not roof.bandwidth_measured
    assert "datasheet ceiling kept for bandwidth" in roof.basis


def test_fp16_stands_for_bf16_where_the_datasheet_lists_equal_peaks(registry):
    roof = device_roofline(registry.device("b200"), "calibrated", registry)
    assert roof.peaks["fp16"] == roof.peaks["bf16"]


def test_an_unmeasured_bandwidth_is_outside_the_calibrated_range(registry):
    est = roofkit.serve("llama-3.1-8b", "b200", batch=8, input_len=128, output_len=8,
                        registry=registry)
    assert all("range=outside" in iv.stratum for iv in est.intervals().values())
    h100 = roofkit.serve("llama-3.1-8b", "h100-sxm", batch=8, input_len=128, output_len=8,
                         registry=registry)
    assert all("range=inside" in iv.stratum for iv in h100.intervals().values())
