"""Latency bounds on load cases (``config.latency_bounds``) and the MLPerf Inference cases
that carry them: a bound parses with the ``--slo`` syntax, a malformed one is refused by key
and file, and validation says whether the simulated run meets the bounds."""

from __future__ import annotations

import json

import pytest

import roofkit
from roofkit.load.simulate import simulate
from roofkit.load.validation import run
from roofkit.testing import run_cli


def _case(tmp_path, bounds: str) -> None:
    folder = tmp_path / "load_cases"
    folder.mkdir(parents=True)
    (folder / "b.toml").write_text(
        'name = "b"\nworkload = "llama-3.1-8b"\ndevice = "h100"\n'
        'metric = "output_tokens_per_s"\nvalue = 100.0\n[config]\nengine = "e"\n'
        'profile = "vllm-v1"\nrate = 2.0\nrequests = 20\ninput_len = 64\noutput_len = 16\n'
        'throughput_basis = "total"\n' + (f'latency_bounds = "{bounds}"\n' if bounds else "") +
        '[source]\nurl = "https://example.org"\nwhere = "table"\n', encoding="utf-8")


def _report(tmp_path, bounds: str):
    _case(tmp_path, bounds)
    reg = roofkit.build_registry(spec_paths=[tmp_path])
    case = reg.catalogues["load_cases"]["b"]
    return case, run(registry=reg, cases=[case], bases=("calibrated",), loso=False).cases[0]


def test_bounds_parse_with_the_slo_syntax(tmp_path):
    case, _ = _report(tmp_path, "ttft_p99=2s,tpot_p99=200ms")
    from roofkit.load.simulate import parse_slo

    # 2 s and 200 ms in seconds, as roofkit simulate --slo reads them
    assert parse_slo(case.config.latency_bounds) == {"ttft_p99": 2.0, "tpot_p99": 0.2}


def test_bounds_met_follows_the_simulated_percentiles(tmp_path):
    # 8B on an H100 at 2 requests/s of 64/16 tokens: the p99 TTFT and TPOT are milliseconds,
    # far under 1000 s and far over 1 microsecond
    _, loose = _report(tmp_path / "a", "ttft_p99=1000s,tpot_p99=1000s")
    _, tight = _report(tmp_path / "b", "ttft_p99=0.001ms")
    assert loose.to_dict()["bounds_met"] is True
    assert tight.to_dict()["bounds_met"] is False
    direct = simulate("llama-3.1-8b", "h100", rate=2.0, requests=20, input_len=64,
                      output_len=16, engine="vllm-v1", basis="calibrated")
    assert 1e-6 < direct.ttft["p99"] < 1000.0  # the two bounds do bracket the run
    assert tight.to_dict()["latency_bounds"] == "ttft_p99=0.001ms"


def test_a_case_without_bounds_reports_none(tmp_path):
    _, r = _report(tmp_path, "")
    d = r.to_dict()
    assert d["bounds_met"] is None and d["latency_bounds"] is None


@pytest.mark.parametrize("bad", ["ttft_p99=2", "ttft_p42=2s", "goodput_p99=1s"])
def test_a_malformed_bound_is_refused_by_key_and_file(tmp_path, bad):
    _case(tmp_path, bad)
    with pytest.raises(roofkit.SpecError, match=r"config\.latency_bounds") as exc:
        roofkit.build_registry(entry_points=False, spec_paths=[tmp_path])
    assert "b.toml" in str(exc.value)


def test_the_text_report_has_a_bounds_column(capsys, tmp_path):
    _case(tmp_path, "ttft_p99=1000s")
    code, out, _ = run_cli(capsys, "--spec-path", str(tmp_path), "validate", "--kind", "load",
                           "--case", "b")
    assert code == 0 and "bounds_met" in out
    row = next(line for line in out.splitlines() if line.startswith("b "))
    assert row.rstrip().endswith("yes")


MLPERF = ["mlperf41_nvidia_h100_llama2_70b_fp8_tp2x4_offline_tokps",
          "mlperf41_nvidia_h100_llama2_70b_fp8_tp2x4_server_tokps",
          "mlperf41_nvidia_h200_llama2_70b_fp8_tp1x8_offline_tokps",
          "mlperf41_nvidia_h200_llama2_70b_fp8_tp1x8_server_tokps",
          "mlperf41_amd_mi300x_llama2_70b_fp8_tp1_offline_tokps",
          "mlperf41_amd_mi300x_llama2_70b_fp8_tp1_server_tokps",
          "mlperf41_amd_mi300x_llama2_70b_fp8_tp1x8_offline_tokps",
          "mlperf41_amd_mi300x_llama2_70b_fp8_tp1x8_server_tokps"]


def test_the_mlperf_cases_load_with_their_derived_values(registry):
    cat = registry.catalogues["load_cases"]
    h100 = cat["mlperf41_nvidia_h100_llama2_70b_fp8_tp2x4_server_tokps"]
    # 21605.79 completed tokens/s of 8 GPUs in 4 TP2 replicas; 75.10 scheduled samples/s / 4
    assert h100.value == pytest.approx(21605.79 / 4, abs=0.01)
    assert h100.config.rate == pytest.approx(75.10 / 4)
    assert h100.config.latency_bounds == "ttft_p99=2s,tpot_p99=200ms"
    # output length: tokens/s over samples/s of the same summary, 24524.9 / 84.4792 = 290.3
    # 8 one-GPU vLLM engines: 23514.8 tokens/s / 8, and 23514.8 / 80.15 samples/s = 293.4
    amd = cat["mlperf41_amd_mi300x_llama2_70b_fp8_tp1x8_offline_tokps"]
    assert amd.value == pytest.approx(23514.8 / 8, abs=0.01) and amd.config.output_len == 293
    off = cat["mlperf41_nvidia_h100_llama2_70b_fp8_tp2x4_offline_tokps"]
    assert off.config.output_len == 290 and not off.config.latency_bounds
    for name in MLPERF:
        assert cat[name].workload == "llama-2-70b" and cat[name].config.precision == "fp8"
        assert ("server" in name) == bool(cat[name].config.latency_bounds)


def test_the_mlperf_cases_are_scored_at_the_published_prompt_mean(capsys):
    code, out, _ = run_cli(capsys, "validate", "--kind", "load", "--json",
                           *[a for n in MLPERF for a in ("--case", n)])
    assert code == 0
    cases = {c["name"]: c for c in json.loads(out)["cases"]}
    assert set(cases) == set(MLPERF)
    for name, c in cases.items():
        # scored: the prompts run at the published mean, 5,463,976 tokens / 24,576 samples
        # = 222.3 (HBFSim's lengths table of the OpenOrca subset)
        assert c["scored"] and not c["reason"] and " 222/29" in c["config"]
        assert c["predicted_calibrated"] > 0 and c["error_loso"] is not None
        assert (c["bounds_met"] is None) == ("offline" in name)
        # at 222-token prompts no Server queue builds: every run meets TTFT/TPOT p99 bounds
        assert c["bounds_met"] in (None, True)


@pytest.mark.parametrize("text, words", [("ttft_p99=1.2.3s", "METRIC_STAT=VALUE"),
                                          ("ttft_p99=0s", "above 0"),
                                          ("tpot_p90=0ms", "above 0"),
                                          ("ttft_p99=2s,ttft_p99=1s", "given twice")])
def test_a_bad_bound_is_refused_by_name(text, words):
    from roofkit.load.simulate import parse_slo

    with pytest.raises(roofkit.SpecError, match=words):
        parse_slo(text)
    # a leading-dot value is a number: .5 s
    assert parse_slo("ttft_p99=.5s,tpot_p90=40ms") == {"ttft_p99": 0.5, "tpot_p90": 0.04}
