"""One default rule in Python: every public entry point defaults to ``basis="auto"``, the
calibrated basis where the device (a cluster's device) has a calibration in
specs/calibration/, else the datasheet, and records the basis it chose. The Engine keeps its
reference equation."""

from __future__ import annotations

import pytest

import roofkit
from roofkit import Engine
from roofkit.circuit.roofline import default_basis

CALIBRATED, UNCALIBRATED = "h100-sxm", "a17-pro"  # only h100-sxm has a calibration


def test_the_two_devices_sit_on_either_side_of_the_rule(registry):
    assert default_basis(registry.device(CALIBRATED), registry) == "calibrated"
    assert default_basis(registry.device(UNCALIBRATED), registry) == "datasheet"


@pytest.mark.parametrize(("device", "chosen"), [(CALIBRATED, "calibrated"),
                                                 (UNCALIBRATED, "datasheet")])
def test_decode_and_prefill_default_to_the_rule_and_record_it(registry, device, chosen):
    for call, kw in ((roofkit.decode, {"batch": 8, "context": 1024}),
                     (roofkit.prefill, {"tokens": 512})):
        default = call("llama-3.1-8b", device, registry=registry, **kw)
        asked = call("llama-3.1-8b", device, basis=chosen, registry=registry, **kw)
        assert default.settings["basis"] == chosen
        assert default.time == asked.time and default.basis == asked.basis
        assert default.to_dict()["settings"]["basis"] == chosen
    # on the calibrated device the default is not the datasheet's number
    if chosen == "calibrated":
        sheet = roofkit.decode("llama-3.1-8b", device, batch=8, context=1024,
                               basis="datasheet", registry=registry)
        assert sheet.time < roofkit.decode("llama-3.1-8b", device, batch=8, context=1024,
                                           registry=registry).time


def test_fits_and_footprint_take_the_rule_and_footprint_without_a_device_has_none(registry):
    fp = roofkit.footprint("llama-3.1-8b", CALIBRATED, registry=registry)
    assert fp.basis == roofkit.footprint("llama-3.1-8b", CALIBRATED, basis="calibrated",
                                         registry=registry).basis
    assert fp.basis.startswith("measured achievable")
    assert roofkit.footprint("llama-3.1-8b", registry=registry).basis == ""
    fit = roofkit.fits("llama-3.1-8b", UNCALIBRATED, seqs=4, registry=registry)
    assert fit.footprint.basis.startswith("datasheet ceiling")


@pytest.mark.parametrize(("device", "chosen"), [(CALIBRATED, "calibrated"),
                                                 (UNCALIBRATED, "datasheet")])
def test_serve_defaults_to_the_rule(registry, device, chosen):
    default = roofkit.serve("llama-3.1-8b", device, batch=4, input_len=64, output_len=8,
                            registry=registry)
    asked = roofkit.serve("llama-3.1-8b", device, batch=4, input_len=64, output_len=8,
                          basis=chosen, registry=registry)
    assert default.basis == chosen
    assert default.itl_ms == asked.itl_ms and default.ttft_ms == asked.ttft_ms


def test_a_sweep_puts_each_device_on_its_own_default_basis(registry):
    t = roofkit.sweep("llama-3.1-8b", [UNCALIBRATED, CALIBRATED], ["bf16"], [1, 16],
                      contexts=[1024], mode="decode", registry=registry)
    by_device = {r["device"]: r["basis"] for r in t}
    assert by_device == {UNCALIBRATED: "datasheet", CALIBRATED: "calibrated"}
    for r in t:
        est = roofkit.decode("llama-3.1-8b", r["device"], batch=r["batch_size"],
                             context=r["context"], precision="bf16", registry=registry)
        assert r["itl_ms"] == pytest.approx(est.time * 1e3, rel=1e-12)


def test_a_mixed_basis_sweep_joins_refused_tp_rows(registry):
    # a17-pro has no interconnect: every tp=2 row is refused; h100-sxm computes them
    t = roofkit.sweep("llama-3.1-8b", [UNCALIBRATED, CALIBRATED], ["bf16"], [1],
                      contexts=[128], tp=[2], mode="decode", registry=registry)
    rows = {r["device"]: r for r in t}
    assert not rows[UNCALIBRATED]["feasible"] and "no [interconnect]" in \
        rows[UNCALIBRATED]["reason"]
    assert rows[CALIBRATED]["feasible"] and rows[CALIBRATED]["basis"] == "calibrated"


def test_the_engine_sweep_mode_has_no_basis(registry):
    t = roofkit.sweep("llama-3.1-8b", [CALIBRATED], batch_sizes=[1], registry=registry)
    assert set(t["basis"]) == {"datasheet"}  # the Engine's declared-efficiency equation


def test_training_defaults_to_its_devices_rule(registry):
    from roofkit.fleet.training import train

    cal = train("llama-3.2-1b", "8xh100", seq_len=1024, registry=registry)
    assert cal.step_time_s == train("llama-3.2-1b", "8xh100", seq_len=1024,
                                    basis="calibrated", registry=registry).step_time_s
    assert cal.basis.startswith("measured achievable")
    sheet = train("llama-3.2-1b", "8xmi250x", seq_len=1024, registry=registry)
    assert sheet.basis.startswith("datasheet ceiling for mi250x")
    # not the calibrated basis's "no calibration for mi250x ... so datasheet" text
    assert "no calibration" not in sheet.basis


def test_simulate_defaults_to_the_rule(registry):
    kw = dict(concurrency=2, requests=8, input_len=64, output_len=8, registry=registry)
    sim = roofkit.simulate("llama-3.2-1b", UNCALIBRATED, **kw)
    assert sim.basis.startswith("datasheet ceiling for a17-pro")
    assert sim.to_dict()["ttft_ms"] == roofkit.simulate("llama-3.2-1b", UNCALIBRATED,
                                                        basis="datasheet", **kw).to_dict()[
        "ttft_ms"]


def test_the_engine_solve_circuit_route_stays_on_the_datasheet(registry):
    # Engine.solve(cost_model=...) is the reference single-device route: its basis is fixed
    p = Engine.solve("llama-3.1-8b", CALIBRATED, batch_size=8, seq_len=1024,
                     cost_model="roofline", registry=registry)
    sheet = roofkit.decode("llama-3.1-8b", CALIBRATED, batch=8, context=1024,
                           precision="fp16", basis="datasheet", registry=registry)
    dispatch, layers = 10e-6, 32 * 10e-6  # the reference's T_dispatch + L * T_layer
    assert p.latency_s == pytest.approx(sheet.time + dispatch + layers, rel=1e-12)
