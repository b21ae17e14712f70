"""Per-op energy model and its validation against published measurements."""

import types

import pytest

from roofkit import energy, energy_cases
from roofkit.errors import SpecError


def _estimate(device, time, rows, tdp=700.0, peaks=None):
    return types.SimpleNamespace(device=device, time=time, tdp=tdp, rows=rows, energy=-1.0,
                                 slot_peaks=peaks or {"bf16": 1e15})


def _row(flops, nbytes, slot="bf16"):
    return types.SimpleNamespace(flops=flops, bytes=nbytes, slot=slot, count=32)


TABLE = {"dev": energy.EnergyConstants("dev", p_idle=100.0, e_byte=40e-12, sources={"x": "y"})}


def test_step_energy_is_idle_plus_flops_plus_bytes():
    # e_flop = (700 - 100) W / 1e15 FLOP/s = 6e-13 J/FLOP
    est = _estimate("dev", 0.01, [_row(1e12, 1e9), _row(2e12, 0.0)])
    want = 100.0 * 0.01 + 6e-13 * 3e12 + 40e-12 * 1e9  # 1 + 1.8 + 0.04 J
    assert energy.step_energy(est, TABLE) == pytest.approx(want)


def test_step_energy_is_capped_at_tdp_times_time():
    est = _estimate("dev", 0.001, [_row(1e13, 1e11)])  # 0.1 + 6 + 4 J > 0.7 J
    assert energy.step_energy(est, TABLE) == pytest.approx(700.0 * 0.001)


def test_device_without_constants_falls_back_to_the_tdp_model():
    est = _estimate("other", 0.01, [_row(1e12, 1e9)])
    assert energy.model_name("other", TABLE) == "tdp"
    assert energy.step_energy(est, TABLE) == -1.0  # the estimate's own (TDP-model) energy


def test_builtin_constants_have_sources():
    c = energy.constants("h100-sxm")
    assert c is not None and c.p_idle == pytest.approx(80.3)
    assert c.e_byte == pytest.approx(3.9 * 8e-12) and set(c.sources) == {"p_idle", "e_byte_hbm"}


def test_bad_table_names_the_file_and_key(tmp_path):
    p = tmp_path / "e.toml"
    p.write_text('[dev]\np_idle = "80 W"\n')
    with pytest.raises(SpecError, match=r"e\.toml.*\[dev\].*e_byte_hbm"):
        energy.load_table(p)
    p.write_text('[dev]\np_idle = "80 W"\ne_byte_hbm = 3.9\n')
    with pytest.raises(SpecError, match="sources"):
        energy.load_table(p)


def test_bad_case_names_the_missing_keys(tmp_path):
    (tmp_path / "c.toml").write_text('name = "c"\nworkload = "llama-3.1-8b"\n')
    with pytest.raises(SpecError, match=r"c\.toml: missing device"):
        energy_cases.load_cases(tmp_path)


def test_published_energy_cases_median_errors():
    # Out of sample: no constant was fitted to these cases. Both models under-predict every
    # case (the DRAM-only byte energy misses on-chip data movement); the pins are what the
    # models reach today, not the <= 15 % target.
    report = energy_cases.run()
    assert len(report["rows"]) >= 5
    assert all(r["per_op_error"] < 0.0 for r in report["rows"])
    med = report["median_abs_error"]
    assert med["per_op"] == pytest.approx(0.613, abs=0.02)
    assert med["tdp"] == pytest.approx(0.440, abs=0.02)


def test_validate_energy_cli_reports_both_models(capsys):
    import json

    from roofkit.testing import run_cli

    code, out, _ = run_cli(capsys, "validate", "--kind", "energy", "--json")
    assert code == 0
    d = json.loads(out)
    assert {r["case"] for r in d["rows"]} >= {"mlenergy_v3_llama31_8b_h100_bs64"}
    assert d["median_abs_error"]["per_op"] > d["median_abs_error"]["tdp"]


def test_serving_json_reports_the_per_op_energy_beside_the_tdp_energy():
    import roofkit.serving as s

    d = s.serve("llama-3.1-8b", "h100-sxm", batch=8).to_dict()
    assert 0.0 < d["energy_measured_model_j"] != d["energy_j"]
    # a device without per-op constants: the TDP model answers for both keys
    d = s.serve("llama-3.1-8b", "a100-80gb", batch=8).to_dict()
    assert d["energy_measured_model_j"] == d["energy_j"]


def test_energy_tables_refuse_nan_and_non_regular_files(tmp_path):
    import os

    from roofkit.energy import load_table
    from roofkit.errors import SpecError

    bad = tmp_path / "e.toml"
    bad.write_text('[h100-sxm]\np_idle = "80 W"\ne_byte_hbm = nan\n'
                   '[h100-sxm.sources]\np_idle = "x"\n')
    with pytest.raises(SpecError, match="e_byte_hbm"):
        load_table(bad)
    fifo = tmp_path / "f.toml"
    os.mkfifo(fifo)
    with pytest.raises(SpecError, match=r"f\.toml"):
        load_table(fifo)
