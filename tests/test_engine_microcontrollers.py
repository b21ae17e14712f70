"""Engine.solve on microcontrollers, by hand from the catalogue's specs.

A microcontroller's primary memory is its SRAM (``memory.capacity`` = the ``[sram]`` tier);
its weights usually live in flash. So, per the reference's bandwidth path (host offload,
resident SRAM, flash, primary memory) and its capacity check (a footprint above capacity is
infeasible): weights within SRAM read at the SRAM bandwidth; weights beyond SRAM but within
flash do not fit, and their estimate streams them from flash (``flash_resident``); beyond
both there is no offload path (no ``[host_link]``), so the point cannot run.

esp32-s3 (specs/devices/esp32-s3.toml): int8 15.36 GOP/s, SRAM 512 KiB at 3.84 GB/s, flash
8 MB at 40 MB/s, dispatch 20 us, layer 4 us, TDP 0.33 W, no host link.
"""

from __future__ import annotations

import json
import math

import pytest

import roofkit
from roofkit import Engine, OOMError
from roofkit.cli import main

INT8_PEAK = 15.36e9
SRAM, SRAM_BW = 512 * 1024, 3.84e9
FLASH, FLASH_BW = 8e6, 40e6
DISPATCH, LAYER, TDP = 20e-6, 4e-6, 0.33


def approx(x):
    return pytest.approx(x, rel=1e-12, abs=0.0)


def test_the_spec_numbers_used_below(registry):
    d = registry.device("esp32-s3")
    assert d.compute["int8"] == INT8_PEAK
    assert d.memory.capacity == d.sram.capacity == SRAM and d.sram.bandwidth == SRAM_BW
    assert d.flash.capacity == FLASH and d.flash.bandwidth == FLASH_BW
    assert (d.overheads.dispatch, d.overheads.layer, d.power.tdp) == (DISPATCH, LAYER, TDP)
    assert d.host_link is None
    w = registry.workload("mobilenet-v2").generic
    assert (w.params, w.flops_per_sample, w.layers) == (3.5e6, 0.6e9, 53)
    w = registry.workload("ds-cnn").generic
    assert (w.params, w.flops_per_sample, w.layers) == (23.7e3, 5.3e6, 10)


def test_mobilenet_v2_int8_does_not_fit_the_esp32_s3_but_streams_from_its_flash(registry):
    """3.5 MB of int8 weights > 512 KiB of memory: infeasible, as the reference's capacity
    check says, with the flash-limited estimate (the weights read in place from flash)."""
    p = Engine.solve("mobilenet-v2", "esp32-s3", precision="int8", registry=registry)
    t_c = 0.6e9 / (INT8_PEAK * 0.5)               # 78.125 ms
    t_m = 3.5e6 * 1.1 / FLASH_BW                  # 96.25 ms: 3.5 MB (+10 %) at 40 MB/s
    t_o = DISPATCH + 53 * LAYER                   # 232 us
    assert p.feasible is False and p.bandwidth_path == "flash" and p.flash_resident
    assert p.to_dict()["feasible"] is False and p.to_dict()["flash_resident"] is True
    assert p.latency_compute.to("s").magnitude == approx(t_c)
    assert p.latency_memory.to("s").magnitude == approx(t_m)
    assert p.latency_overhead.to("s").magnitude == approx(t_o)
    assert p.latency_s == approx(t_m + t_o) and p.bottleneck == "Memory"
    assert p.peak_bw_actual.to("B/s").magnitude == FLASH_BW
    hfu = 0.6e9 / (t_m + t_o) / INT8_PEAK
    assert p.hfu == approx(hfu)
    assert p.energy_j == approx(TDP * (0.3 + 0.7 * hfu) * (t_m + t_o))
    assert p.memory_footprint_bytes == 3.5e6 and p.offload_spill.to("B").magnitude == 0.0
    text = "\n".join(p.trace)
    assert "DOES NOT FIT" in text and "8 MB flash holds the weights" in text
    assert "stream from flash at 40 MB/s" in text
    assert "offload" not in text and "PCIe" not in text and "host link" not in text
    assert "flash.bandwidth (derived: Quad SPI" in p.basis


def test_ds_cnn_is_sram_resident_on_the_esp32_s3(registry):
    p = Engine.solve("ds-cnn", "esp32-s3", precision="int8", registry=registry)
    t_c = 5.3e6 / (INT8_PEAK * 0.5)
    t_m = 23.7e3 * 1.1 / SRAM_BW
    t_o = DISPATCH + 10 * LAYER
    assert p.feasible and p.bandwidth_path == "sram"
    assert p.latency_memory.to("s").magnitude == approx(t_m)
    assert p.latency_s == approx(t_c + t_o) and p.bottleneck == "Compute"
    assert "on-chip SRAM" in p.trace[2]


@pytest.mark.parametrize("device", ["stm32f407", "nrf52840"])
def test_ds_cnn_is_sram_resident_on_the_cortex_m4_boards(registry, device):
    d = registry.device(device)
    p = Engine.solve("ds-cnn", device, precision="int8", registry=registry)
    assert p.feasible and p.bandwidth_path == "sram"
    assert p.latency_memory.to("s").magnitude == approx(23.7e3 * 1.1 / d.sram.bandwidth)


def test_a_model_beyond_sram_and_flash_is_infeasible_with_its_reason(registry):
    p = Engine.solve("resnet-50", "esp32-s3", precision="int8", registry=registry)
    assert not p.feasible and p.bandwidth_path == "none"
    assert math.isinf(p.latency_s) and p.throughput_per_s == 0.0
    assert p.latency_compute.to("s").magnitude == approx(8.2e9 / (INT8_PEAK * 0.5))
    text = "\n".join(p.trace)
    assert "> its 8 MB flash: DOES NOT FIT" in text
    assert "declares no [host_link]" in text and "cannot run" in text and "PCIe" not in text
    rows = Engine.sweep("resnet-50", ["esp32-s3"], [1], ["int8"], registry=registry)
    assert not rows and rows.omitted[0]["reason"] == (
        "needs 25.6 MB (int8 weights) but esp32-s3 has 524.3 kB and 8 MB of flash; no "
        "[host_link], so nothing can be offloaded: it cannot run")
    with pytest.raises(OOMError, match="8 MB of flash"):
        Engine.solve("resnet-50", "esp32-s3", precision="int8", raise_errors=True,
                     registry=registry)


def test_mobilenet_v2_is_beyond_the_1_mb_flash_of_the_cortex_m4_boards(registry):
    for device in ("stm32f407", "nrf52840"):
        p = Engine.solve("mobilenet-v2", device, precision="int8", registry=registry)
        assert not p.feasible and p.bandwidth_path == "none"


def test_training_checks_primary_memory_only(registry):
    # 3 x 3.5 MB of training state: flash is read-only at run time
    p = Engine.solve("mobilenet-v2", "esp32-s3", precision="int8", is_training=True,
                     registry=registry)
    assert not p.feasible and p.bandwidth_path == "none"
    assert "read-only" in p.trace[0]
    # ds-cnn's training state (3 x 23.7 kB) fits the SRAM
    q = Engine.solve("ds-cnn", "esp32-s3", precision="int8", is_training=True,
                     registry=registry)
    assert q.feasible and q.bandwidth_path == "sram"


def test_the_sweep_takes_the_same_paths(registry):
    t = roofkit.sweep("mobilenet-v2", ["esp32-s3", "stm32f407"], ["int8"], [1, 4],
                      registry=registry)
    rows = {(r["device"], r["batch_size"]): r for r in t}
    flash = rows[("esp32-s3", 4)]
    p = Engine.solve("mobilenet-v2", "esp32-s3", batch_size=4, precision="int8",
                     registry=registry)
    assert not flash["feasible"] and flash["bandwidth_path"] == "flash"
    assert flash["latency_ms"] == p.to_dict()["latency_ms"]
    assert "the weights fit its 8 MB of flash, so the latency reads them in place" in \
        flash["reason"]
    none = rows[("stm32f407", 1)]
    assert not none["feasible"] and none["bandwidth_path"] == "none"
    assert math.isinf(none["latency_ms"]) and "no [host_link]" in none["reason"]
    assert json.loads(t.to_json())[2]["latency_ms"] is None  # non-finite -> null


def test_cli_solve_on_a_microcontroller(capsys):
    assert main(["solve", "mobilenet-v2", "esp32-s3", "-p", "int8", "--enforce-fit"]) == 2
    out = capsys.readouterr().out
    assert "does not fit" in out and "flash" in out and "PCIe" not in out
    assert main(["solve", "ds-cnn", "esp32-s3", "-p", "int8", "--enforce-fit"]) == 0
    capsys.readouterr()
    assert main(["solve", "resnet-50", "esp32-s3", "-p", "int8", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)  # strict JSON: no Infinity
    assert d["feasible"] is False and d["bandwidth_path"] == "none"
    assert d["latency_ms"] is None and d["throughput_per_s"] == 0.0
    assert main(["solve", "resnet-50", "esp32-s3", "-p", "int8", "--enforce-fit"]) == 2
    assert "cannot run" in capsys.readouterr().out
