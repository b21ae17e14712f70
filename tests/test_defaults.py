"""Commands that agree: one default rule (the calibrated basis wherever the device has a
calibration, else the datasheet, always printed; the model's own format except where the
Engine reference fixes fp16), and ``solve`` says what it is."""

import json

import pytest

import roofkit
from roofkit.circuit.roofline import default_basis
from roofkit.testing import run_cli

BARE = "mi250x"  # a device without a calibration


def test_default_basis_is_calibrated_only_where_a_calibration_exists(registry):
    assert default_basis(registry.device("h100"), registry) == "calibrated"
    assert default_basis(registry.device(BARE), registry) == "datasheet"


def _decode_ms(capsys, *extra):
    code, out, _ = run_cli(capsys, "decode", "llama-3.1-8b", *extra, "--batch", "32", "--json")
    assert code == 0
    d = json.loads(out)
    return d["totals"]["time_s"] * 1e3, d["settings"]["basis"]


@pytest.mark.parametrize(("device", "expected"), [("h100-sxm", "calibrated"),
                                                  (BARE, "datasheet")])
def test_decode_defaults_to_the_devices_default_basis(capsys, device, expected):
    default = _decode_ms(capsys, device)
    asked = _decode_ms(capsys, device, "--basis", expected)
    assert default == asked and default[1] == expected


def test_serve_names_its_default_basis_on_a_device_without_calibration(capsys):
    code, out, _ = run_cli(capsys, "serve", "llama-3.1-8b", BARE, "--batch", "4",
                           "--output-len", "4")
    assert code == 0
    assert f"basis: datasheet (the default: datasheet only, {BARE} has no calibration" in out
    code, out, _ = run_cli(capsys, "serve", "llama-3.1-8b", BARE, "--batch", "4",
                           "--output-len", "4", "--json")
    assert json.loads(out)["basis"] == "datasheet"


def test_sweep_puts_each_device_on_its_default_basis_in_order(capsys, registry):
    code, out, _ = run_cli(capsys, "sweep", "llama-3.1-8b", BARE, "h100", "-b", "1,8",
                           "--mode", "decode", "--json")
    assert code == 0
    rows = json.loads(out)["rows"]
    assert [(r["device"], r["basis"]) for r in rows] == [
        (BARE, "datasheet"), (BARE, "datasheet"), ("h100-sxm", "calibrated"),
        ("h100-sxm", "calibrated")]
    one = roofkit.decode("llama-3.1-8b", "h100", batch=8, basis="calibrated",
                         registry=registry)
    assert rows[3]["itl_ms"] == pytest.approx(one.time * 1e3)


def test_auto_sweep_keeps_the_pareto_front_across_bases(registry):
    kw = dict(batch_sizes=[1, 4, 16, 64], contexts=[2048], mode="decode", registry=registry)
    auto = roofkit.sweep("llama-3.1-8b", ["l40s", "h100"], ["bf16"], basis="auto",
                         pareto=("throughput_per_s", "itl_ms"), **kw)
    whole = roofkit.sweep("llama-3.1-8b", ["l40s", "h100"], ["bf16"], basis="auto", **kw)
    assert len(auto) >= 1
    assert sorted(auto["itl_ms"].tolist()) == sorted(
        whole.pareto("throughput_per_s", "itl_ms")["itl_ms"].tolist())


def test_serve_decode_steps_are_the_decode_command_plus_host_time(registry):
    """Why serve's ITL and decode's step differ: ITL_j = decode(B, I + j) + host per step."""
    est = roofkit.serve("llama-3.1-8b", "h100", batch=32, input_len=128, output_len=129,
                        basis="auto", registry=registry)
    step = roofkit.decode("llama-3.1-8b", "h100", batch=32, context=256, basis="auto",
                          registry=registry)
    assert est.basis == step.settings["basis"] == "calibrated"
    assert est.itl_steps[-1] == pytest.approx(step.time + est.decode_host.host_time)


def test_solve_says_it_is_the_reference_equation_without_kv(capsys):
    code, out, _ = run_cli(capsys, "solve", "llama-3.1-8b", "h100-sxm", "--batch", "32")
    assert code == 0
    assert "reference single-device Engine equation" in out
    assert "without the KV cache" in out
    assert "roofkit decode llama-3.1-8b h100-sxm --batch 32" in out
    assert "roofkit serve llama-3.1-8b h100-sxm --batch 32" in out
    code, out, _ = run_cli(capsys, "solve", "resnet-50", "h100-sxm")
    assert "reference single-device" in out and "KV cache" not in out
