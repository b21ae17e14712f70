"""Per-op energy model and its validation against published measurements."""

import types

import attrs
import pytest

from roofkit import energy, energy_cases
from roofkit.errors import SpecError


def _estimate(device, time, rows, tdp=700.0, peaks=None):
    return types.SimpleNamespace(device=device, time=time, tdp=tdp, rows=rows, energy=-1.0,
                                 slot_peaks=peaks or {"bf16": 1e15})


def _row(flops, nbytes, slot="bf16"):
    return types.SimpleNamespace(flops=flops, bytes=nbytes, slot=slot, count=32)


TABLE = {"dev": energy.EnergyConstants("dev", p_idle=100.0, e_byte=40e-12, sources={"x": "y"})}
# busy board at 200 W, a 1e-12 J/B link, and a measured bf16 rate at the power limit
BUSY = {"dev": energy.EnergyConstants("dev", p_idle=100.0, e_byte=40e-12, sources={"x": "y"},
                                      p_static=200.0, e_link=1e-12,
                                      flops_at_tdp={"bf16": 5e14})}


def test_step_energy_is_idle_plus_flops_plus_bytes():
    # e_flop = (700 - 100) W / 1e15 FLOP/s = 6e-13 J/FLOP
    est = _estimate("dev", 0.01, [_row(1e12, 1e9), _row(2e12, 0.0)])
    want = 100.0 * 0.01 + 6e-13 * 3e12 + 40e-12 * 1e9  # 1 + 1.8 + 0.04 J
    assert energy.step_energy(est, TABLE) == pytest.approx(want)


def test_step_energy_charges_static_power_link_bytes_and_the_measured_peak():
    # e_flop = (700 - 200) W / 5e14 FLOP/s = 1e-12 J/FLOP (the measured rate, not the 1e15 peak)
    est = _estimate("dev", 0.01, [_row(1e12, 1e9)])
    est.rows[0].link_bytes = 2e9
    want = 200.0 * 0.01 + 1e-12 * 1e12 + 40e-12 * 1e9 + 1e-12 * 2e9  # 2 + 1 + 0.04 + 0.002 J
    assert energy.step_energy(est, BUSY) == pytest.approx(want)
    assert BUSY["dev"].e_flop(700.0, 1e15, "fp8") == pytest.approx(5e-13)  # no fp8 rate given


def test_steps_energy_adds_host_time_at_idle_power():
    est = _estimate("dev", 0.01, [_row(0.0, 0.0)])
    # 200 W x 0.01 s busy + 100 W x 0.5 s at rest
    assert energy.steps_energy(est, 0.5, BUSY) == pytest.approx(2.0 + 50.0)
    # without constants: the TDP model, 0.3 x 700 W on the host
    other = _estimate("other", 0.01, [_row(0.0, 0.0)])
    assert energy.steps_energy(other, 0.5, BUSY) == pytest.approx(-1.0 + 0.3 * 700.0 * 0.5)


def test_step_over_the_power_limit_takes_longer_at_tdp():
    # 1 ms of work whose dynamic energy is 6e-13 x 1e13 + 40e-12 x 1e11 = 10 J: it would
    # draw 10 kW, so the board slows until E_dyn / t = TDP - P_static = 600 W
    est = _estimate("dev", 0.001, [_row(1e13, 1e11)])
    t = 10.0 / 600.0
    assert energy.step_time(est, TABLE) == pytest.approx(t)
    assert energy.step_energy(est, TABLE) == pytest.approx(100.0 * t + 10.0)
    assert energy.step_energy(est, TABLE) == pytest.approx(700.0 * t)  # average power = TDP
    # under the limit the time is the estimate's own: 0.1 s x 100 W + 10 J
    slow = _estimate("dev", 0.1, [_row(1e13, 1e11)])
    assert energy.step_time(slow, TABLE) == pytest.approx(0.1)
    assert energy.step_energy(slow, TABLE) == pytest.approx(20.0)
    # a device without constants keeps its time
    assert energy.step_time(_estimate("other", 0.001, []), TABLE) == pytest.approx(0.001)


def test_device_without_constants_falls_back_to_the_tdp_model():
    est = _estimate("other", 0.01, [_row(1e12, 1e9)])
    assert energy.model_name("other", TABLE) == "tdp"
    assert energy.step_energy(est, TABLE) == -1.0  # the estimate's own (TDP-model) energy


def test_builtin_constants_have_sources():
    c = energy.constants("h100-sxm")
    assert c is not None and c.p_idle == pytest.approx(80.3) and c.p_busy == pytest.approx(105.4)
    assert c.e_byte == pytest.approx((3.9 + 11.4) * 8e-12)  # HBM + on-chip, pJ/bit -> J/B
    assert c.e_link == pytest.approx(1.3 * 8e-12)
    assert c.flops_at_tdp["bf16"] == pytest.approx(794.5e12)
    # (700 - 105.4) W / 794.5e12 FLOP/s = 0.748 pJ/FLOP
    assert c.e_flop(700.0, 989.4e12, "bf16") == pytest.approx(594.6 / 794.5e12)
    assert set(c.sources) == {"p_idle", "p_static", "e_byte_hbm", "e_byte_onchip",
                              "e_byte_link", "flops_at_tdp"}
    b = energy.constants("b200")
    # idle: the eight nvidia-smi readings (136 + 140 + 138 + 138 + 139 + 140 + 142 + 138) / 8
    # = 138.875 W; static power while kernels run stays the derived 2 x 105.4 W, above it
    assert b is not None and b.p_idle == pytest.approx(138.9)
    assert b.p_busy == pytest.approx(2 * 105.4) and b.p_busy > b.p_idle
    a = energy.constants("a100-40gb")  # no idle figure: p_idle takes p_static
    assert a is not None and a.p_idle == a.p_busy == pytest.approx(66.5)


def test_b200_host_time_is_charged_at_its_idle_power():
    # a replica with no step to run rests at P_idle: 2 s on a B200 add 2 x 138.9 = 277.8 J,
    # not the 2 x 210.8 = 421.6 J static power would
    est = _estimate("b200", 0.01, [_row(0.0, 0.0)], tdp=1000.0)
    assert energy.steps_energy(est, 2.0) - energy.steps_energy(est, 0.0) == \
        pytest.approx(277.8)
    from roofkit.load.energy import StepEnergy  # the load path's idle power is the same

    assert StepEnergy.idle_power(types.SimpleNamespace(c=energy.constants("b200"),
                                                       tdp=1000.0)) == pytest.approx(138.9)


def test_bad_table_names_the_file_and_key(tmp_path):
    p = tmp_path / "e.toml"
    p.write_text('[dev]\np_idle = "80 W"\n')
    with pytest.raises(SpecError, match=r"e\.toml.*\[dev\].*e_byte_hbm"):
        energy.load_table(p)
    p.write_text('[dev]\np_idle = "80 W"\ne_byte_hbm = 3.9\n')
    with pytest.raises(SpecError, match="sources"):
        energy.load_table(p)
    p.write_text('[dev]\np_idle = "80 W"\ne_byte_hbm = 3.9\ne_byte_onchip = 2.0\n'
                 '[dev.sources]\np_idle = "x"\ne_byte_hbm = "y"\n')
    with pytest.raises(SpecError, match=r"\[dev\.sources\] lacks \['e_byte_onchip'\]"):
        energy.load_table(p)
    p.write_text('[dev]\ne_byte_hbm = 3.9\n[dev.sources]\ne_byte_hbm = "y"\n')
    with pytest.raises(SpecError, match="p_idle"):
        energy.load_table(p)
    p.write_text('[dev]\np_idle = "80 W"\ne_byte_hbm = 3.9\np_statc = "1 W"\n'
                 '[dev.sources]\np_idle = "x"\ne_byte_hbm = "y"\n')
    with pytest.raises(SpecError, match=r"unknown keys.*p_statc"):
        energy.load_table(p)
    p.write_text('[dev]\np_idle = "80 W"\ne_byte_hbm = 3.9\nflops_at_tdp = { bf16 = "5 W" }\n'
                 '[dev.sources]\np_idle = "x"\ne_byte_hbm = "y"\nflops_at_tdp = "z"\n')
    with pytest.raises(SpecError, match="flops_at_tdp"):
        energy.load_table(p)


def test_bad_case_names_the_missing_keys(tmp_path):
    (tmp_path / "c.toml").write_text('name = "c"\nworkload = "llama-3.1-8b"\n')
    with pytest.raises(SpecError, match=r"c\.toml: missing device"):
        energy_cases.load_cases(tmp_path)


def test_published_energy_cases_median_errors():
    # Out of sample: no constant was fitted to these cases. The pins are what the models
    # reach today; the per-op median meets the <= 15 % target since decode steps replayed
    # from a CUDA graph pay each kernel's startup (docs/energy.md lists each miss and its
    # cause).
    report = energy_cases.run()
    rows = report["rows"]
    assert len(rows) >= 26
    assert {r["case"].split("_")[0] for r in rows} >= {"alice", "mlenergy"}
    med = report["median_abs_error"]
    assert med["per_op"] == pytest.approx(0.149, abs=0.02) and med["per_op"] <= 0.15
    assert med["tdp"] == pytest.approx(0.558, abs=0.02)
    assert med["per_op"] < med["tdp"]
    # the split over the 21 ML.ENERGY v3.0 runs that give their ITL and power: the power
    # model is within the target, the time model carries the rest of the miss
    assert sum(r["power_error"] is not None for r in rows) == 22
    assert med["power"] == pytest.approx(0.058, abs=0.02) and med["power"] <= 0.15
    assert med["itl"] == pytest.approx(0.235, abs=0.02)
    # had the steps taken the measured ITL the per-op power would read 13 % off (median):
    # the small power part is partly the short steps' doing (docs/energy.md)
    assert med["power_at_measured_itl"] == pytest.approx(0.133, abs=0.02)
    # the 22 runs served with continuous batching are costed on the load path
    assert sum(r["run"] == "load" for r in rows) == 22
    # every case the per-op model misses by more than 35 % says why, in its own spec
    assert all(r["cause"] for r in rows if abs(r["per_op_error"]) > 0.35)


def test_v3_8b_h100_bs64_is_the_leaderboard_run_on_the_load_path():
    # the longitudinal post's "0.12 J" is the leaderboard's max_num_seqs 64 H100 row,
    # 0.118580 J at 610.348 W: served with continuous batching like the other v3.0 runs
    case = next(c for c in energy_cases.load_cases()
                if c.name == "mlenergy_v3_llama31_8b_h100_bs64")
    assert case.measured == pytest.approx(0.11858) and round(case.measured, 2) == 0.12
    assert case.max_num_seqs == 64 and sum(case.output_len_counts) == case.num_requests == 1024
    assert energy_cases.predict(case)["run"] == "load"


def test_energy_case_cause_must_be_text(tmp_path):
    import re

    bad = tmp_path / "c.toml"
    assert 'cause = "' in _v3_case_text()
    bad.write_text(re.sub(r'(?m)^cause = ".*"$', "cause = 3", _v3_case_text()))
    with pytest.raises(SpecError, match=r"c\.toml: cause must be one line of text"):
        energy_cases.load_cases(tmp_path)
    bad.write_text(_v3_case_text().replace("cause = ", "causes = "))
    with pytest.raises(SpecError, match="unknown keys \\['causes'\\]"):
        energy_cases.load_cases(tmp_path)


def test_validate_energy_cli_reports_both_models(capsys):
    import json

    from roofkit.testing import run_cli

    code, out, _ = run_cli(capsys, "validate", "--kind", "energy", "--json")
    assert code == 0
    d = json.loads(out)
    assert {r["case"] for r in d["rows"]} >= {"mlenergy_v3_llama31_8b_h100_bs64"}
    assert d["median_abs_error"]["per_op"] < d["median_abs_error"]["tdp"]


def test_serving_json_reports_the_per_op_energy_beside_the_tdp_energy():
    import roofkit.serving as s

    d = s.serve("llama-3.1-8b", "h100-sxm", batch=8).to_dict()
    assert 0.0 < d["energy_measured_model_j"] != d["energy_j"]
    # a device without per-op constants: the TDP model answers for both keys
    d = s.serve("llama-3.1-8b", "mi300x", batch=8).to_dict()
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


def test_fit_power_recovers_static_power_and_per_byte_energy():
    # P = 100 W + 50 pJ/B x BW + 2 pJ/FLOP x rate, exact on four rows
    rows = [(bw, f, 100.0 + 50e-12 * bw + 2e-12 * f)
            for bw, f in ((3e12, 1e12), (2e12, 30e12), (0.5e12, 40e12), (1e12, 5e12))]
    p0, eb, ef = energy.fit_power(rows)
    assert (p0, eb, ef) == pytest.approx((100.0, 50e-12, 2e-12))
    with pytest.raises(ValueError, match="3 rows"):
        energy.fit_power(rows[:2])


def test_fit_power_on_quoted_h200_roofline_rows():
    # three rows of te42kyfo/gpu-benches gpu-roofline/h200.txt (0.25, 16.25, 102.25 FLOP/B);
    # solved exactly they give 90.4 W and 126.6 pJ/B, near the 55-row fit the table holds
    # (105.4 W, 122.4 pJ/B = 15.3 pJ/bit = 3.9 DRAM + 11.4 on-chip)
    rows = [(3759e9, 940e9, 572.0), (2204e9, 35812e9, 583.0), (415e9, 42442e9, 396.0)]
    p0, eb, _ = energy.fit_power(rows)
    assert p0 == pytest.approx(90.4, abs=0.1) and eb == pytest.approx(126.6e-12, rel=1e-3)
    c = energy.constants("h200")
    assert c.p_busy == pytest.approx(105.4) and c.e_byte == pytest.approx(122.4e-12, rel=1e-3)


def test_energy_cases_split_the_miss_into_time_and_power(tmp_path):
    import tomllib

    from roofkit.paths import builtin_specs_dir

    src = builtin_specs_dir() / "energy_cases" / "mlenergy_v3_llama318b_h100sxm_tp1_bs8.toml"
    case = energy_cases.load_cases(src.parent)
    case = next(c for c in case if c.name == src.stem)
    data = tomllib.loads(src.read_text())
    assert case.scope == "gpu" and case.measured_itl_ms == data["measured_itl_ms"]
    row = energy_cases.run([case])["rows"][0]
    p = energy_cases.predict(case)
    # the split: predicted per-device power and ITL against the run's own
    assert row["power_error"] == pytest.approx(p["power_w"] / case.measured_power_w - 1.0)
    assert row["itl_error"] == pytest.approx(p["itl_ms"] / case.measured_itl_ms - 1.0)
    bad = tmp_path / "c.toml"
    bad.write_text(src.read_text().replace('scope = "gpu"', 'scope = "rack"'))
    with pytest.raises(SpecError, match="scope 'rack'"):
        energy_cases.load_cases(tmp_path)
    bad.write_text(src.read_text().replace('scope = "gpu"', 'scope = "node"'))
    with pytest.raises(SpecError, match="not scored yet"):
        energy_cases.load_cases(tmp_path)


def test_serving_steps_past_the_power_limit_stretch_and_hold_power_at_tdp():
    import roofkit.serving as s

    # B200 decode streams 7.7 TB/s in the roofline; at 122.4 pJ/B that is 942 W of dynamic
    # power, above TDP - P_static = 1000 - 210.8 W: the steps stretch
    est = s.serve("llama-3.1-8b", "b200", batch=8, input_len=634, output_len=388)
    e2e, itl = energy.serving_times(est)
    assert e2e > est.e2e and itl * 1e3 > est.itl_ms
    assert energy.serving_energy(est) / e2e <= 1000.0 * (1 + 1e-9)
    # H100 decode at 2.97 TB/s needs 364 W beyond static power, under its 594.6 W: unchanged
    h = s.serve("llama-3.1-8b", "h100-sxm", batch=8, input_len=634, output_len=389)
    assert energy.serving_times(h)[1] * 1e3 == pytest.approx(h.itl_ms)


def _v3_case_text():
    from roofkit.paths import builtin_specs_dir

    return (builtin_specs_dir() / "energy_cases" /
            "mlenergy_v3_llama318b_b200_tp1_bs8.toml").read_text()


def test_continuous_case_keys_are_checked(tmp_path):
    text = _v3_case_text()
    bad = tmp_path / "c.toml"
    bad.write_text(text.replace("num_requests = 1024\n", ""))
    with pytest.raises(SpecError, match=r"c\.toml: .*missing \['num_requests'\]"):
        energy_cases.load_cases(tmp_path)
    bad.write_text(text.replace("num_requests = 1024", "num_requests = 9"))
    with pytest.raises(SpecError, match="at least max_num_seqs \\+ 2"):
        energy_cases.load_cases(tmp_path)
    bad.write_text(text.replace("output_len_counts = [", "output_len_counts = [1, "))
    with pytest.raises(SpecError, match="one more than output_len_counts"):
        energy_cases.load_cases(tmp_path)


def test_output_histogram_draws_each_bin_at_its_midpoint(tmp_path):
    case = energy_cases.EnergyCase(
        "c", "llama-3.1-8b", "b200", 8, 634, 100, "j_per_token", 1.0, "u", "q",
        max_num_seqs=8, max_num_batched_tokens=8192, num_requests=16,
        output_len_bins=(2.0, 83.88, 165.76, 247.64), output_len_counts=(3, 0, 1))
    lengths = energy_cases._output_lengths(case)
    # (2 + 83.88) / 2 = 42.94 -> 43; (165.76 + 247.64) / 2 = 206.7 -> 207; the empty bin drops
    assert lengths.values == (43, 207) and lengths.weights == (3.0, 1.0)


def test_continuous_case_runs_on_the_load_path_under_the_power_limit():
    case = next(c for c in energy_cases.load_cases()
                if c.name == "mlenergy_v3_llama318b_b200_tp1_bs8")
    p = energy_cases.predict(case)
    assert p["run"] == "load"
    # every step reads the 16.06 GB of bf16 weights at 122.4 pJ/B: 1.966 J, which within
    # B200's 1000 - 210.8 W of headroom takes at least 2.49 ms (the roofline says 2.1 ms)
    assert p["itl_ms"] >= 16.06e9 * 122.4e-12 / (1000.0 - 210.8) * 1e3
    assert 210.8 <= p["power_w"] <= 1000.0 * (1 + 1e-9)


def test_continuous_case_without_per_op_constants_takes_the_tdp_model():
    assert energy.model_name("mi300x") == "tdp"
    case = energy_cases.EnergyCase(
        "c", "llama-3.1-8b", "mi300x", 8, 128, 64, "power_w", 500.0, "u", "q",
        max_num_seqs=8, max_num_batched_tokens=256, num_requests=40)
    p = energy_cases.predict(case)
    assert p["model"] == "tdp" and p["run"] == "load"
    assert p["per_op"] == pytest.approx(p["tdp"]) and p["power_w"] == pytest.approx(p["tdp"])
    # the TDP model's power lies between its idle floor (0.3 x 750 W) and TDP
    assert 0.3 * 750.0 <= p["power_w"] <= 750.0


def test_json_gives_the_power_limited_times_beside_the_roofline_times():
    import roofkit.serving as s
    from roofkit.circuit import api

    b = s.serve("llama-3.1-8b", "b200", batch=8, input_len=634, output_len=388).to_dict()
    assert b["e2e_power_limited_ms"] > b["e2e_ms"]
    assert b["itl_power_limited_ms"] > b["itl_ms"]
    h = s.serve("llama-3.1-8b", "h100-sxm", batch=8, input_len=634, output_len=389).to_dict()
    assert h["itl_power_limited_ms"] == pytest.approx(h["itl_ms"])
    dec = api.decode("llama-3.1-8b", "b200", batch=8, context=1000)
    # one B200 decode step: its dynamic energy over 1000 - 210.8 W
    t = float(dec.time_power_limited)
    assert t > float(dec.time)
    assert float(dec.energy_measured_model) == pytest.approx(1000.0 * t)


def test_power_at_the_measured_itl_spreads_the_same_dynamic_energy():
    case = next(c for c in energy_cases.load_cases()
                if c.name == "mlenergy_v3_llama318b_b200_tp1_bs64")
    # a 4 ms step at 1000 W holds (1000 - 210.8) W x 4 ms = 3.157 J of dynamic energy; over
    # 9 ms at the 210.8 W static power that is 210.8 + 789.2 x 4 / 9 = 561.5 W
    p = {"power_w": 1000.0, "itl_ms": 4.0}
    c = attrs.evolve(case, measured_itl_ms=9.0)
    assert energy_cases._power_at_itl(c, p) == pytest.approx(210.8 + 789.2 * 4.0 / 9.0)
    # the report's column is that figure against the run's measured power
    row = energy_cases.run([case])["rows"][0]
    got = energy_cases.predict(case)
    want = energy_cases._power_at_itl(case, got) / case.measured_power_w - 1.0
    assert row["power_at_measured_itl_error"] == pytest.approx(want)
    # a case without a measured ITL has no such figure
    assert energy_cases.run([attrs.evolve(case, measured_itl_ms=None)])["rows"][0][
        "power_at_measured_itl_error"] is None
