"""Serving-under-load validation: the published NIM load measurements predicted by the
simulator, with the errors reached pinned (they may fall, not rise)."""

from __future__ import annotations

import pytest

import roofkit
from roofkit.load.validation import run
from roofkit.testing import run_cli

#: one xdist worker for every user of the session's whole-set run (conftest serving_suite)
pytestmark = pytest.mark.xdist_group("serving_suite")


@pytest.fixture(scope="module")
def report(serving_suite):
    """The load cases as the session's whole-set run scored them (every basis)."""
    return serving_suite.load


@pytest.mark.slow
def test_load_cases_are_predicted(report, registry):
    assert len(report.cases) >= 30
    assert {c.name for c in report.cases} == set(registry.catalogues["load_cases"])
    assert all(c.predicted["calibrated"] > 0 for c in report.cases)
    # every case is scored but the saturated rows that declare why not
    assert all(c.scored or c.reason.startswith("a saturated row") for c in report.cases)
    assert sum(c.scored for c in report.cases) >= 30
    origins = {c.origin for c in report.cases}
    assert len(origins) >= 6  # NIM, the RTX 4090 post, ROCm vLLM, SGLang on H200, SGLang,
    # SGLang disaggregated on H200


@pytest.mark.slow
def test_tpot_errors_do_not_rise_above_the_values_reached(report):
    # reached on the calibrated basis over the 66 TPOT and ITL cases (24 NIM, 9 SGLang on
    # H200, 8 SGLang v0.3.0, 9 SGLang disaggregated on H200, 16 GPUStack vLLM gpt-oss-20b):
    # median 13.4 % (15.4 % before vLLM's Marlin MXFP4 kernel on Hopper, 11.3 % before the
    # GPUStack cases), max 106 % (a GPUStack H100 burst with async scheduling; 108 % before
    # vLLM's API server was charged, 70.8 % before the GPUStack cases)
    # (16.2 % and 75.3 % before the kernels' device startup in graph replays, 15.8 % before
    # the MXFP4 experts' weight stream on Hopper)
    # (target: median <= 15 %, max <= 40 %; the NIM fp8 engines hold an fp8 KV cache; the
    # max is an SGLang H200 ITL past saturation)
    # (13.4 % before vLLM's Marlin MXFP4 experts on the A100 at 0.521 of the BF16 MAMF;
    # 12.8 % before the session step, the NIM engines' stand-in, became the mean of two runs;
    # 13.0 % over 67 with vLLM PR 23151's H100 Qwen3-30B-A3B baseline, +41 %)
    # 13.1 % over 68 with GPUStack's SGLang Qwen3-235B burst (-78 %)
    assert report.median("calibrated", "tpot") <= 0.1307
    assert report.max("calibrated", "tpot") <= 1.065


@pytest.mark.slow
def test_ttft_errors_do_not_rise_above_the_values_reached(report):
    # reached over the 67 TTFT cases (24 NIM, 5 vLLM on an RTX 4090, 9 SGLang on H200, 4 SGLang
    # v0.3.0, 9 SGLang disaggregated on H200, 16 GPUStack vLLM gpt-oss-20b): median 41.8 %,
    # max 383 % (209 % before a closed
    # loop's successor joined the step after the one formed as its predecessor finished)
    # (targets 15 % / 40 % missed: a closed loop of fixed lengths stays in lock step in the
    # simulator, docs/load.md#accuracy-the-mechanisms)
    # (41.8 % before vLLM's API server was charged: its serial tokenizer hands a burst of
    # prompts to the engine one after another, so the first of a round no longer waits for
    # the others' prefill)
    # (37.8 % over 68 with vLLM PR 23151's H100 Qwen3-30B-A3B baseline, -36 %)
    # 40.5 % over 70 with GPUStack's SGLang Qwen3-235B burst (-52 %) and vLLM PR 43232's
    # B200 30000-token run (-64 %)
    assert report.median("calibrated", "ttft") <= 0.4048
    assert report.max("calibrated", "ttft") <= 3.83


@pytest.mark.slow
def test_throughput_errors_do_not_rise_above_the_values_reached(report):
    # reached over the 60 output-tokens/s cases (5 vLLM on an RTX 4090, 8 vLLM on MI300X, 14
    # SGLang on H200, 9 SGLang disaggregated on H200, 8 MLPerf v4.1 Llama-2-70B, 16 GPUStack
    # vLLM gpt-oss-20b on an H100 and an A100): median 16.7 % (20.2 % before vLLM's Marlin
    # MXFP4 kernel on Hopper, 12.7 % before the GPUStack cases, 15.0 % before vLLM V1's step
    # rest, 34.3 % before the kernels' device startup in graph replays), max 150 % (a GPUStack
    # A100 32K-prompt row); every
    # all-at-once run of vLLM on MI300X and of SGLang on H200 is
    # predicted too fast, the MLPerf ones within 21 %, docs/load.md#validation; 16.8 % with
    # vLLM's API server charged (16.7 % before: its streaming time delays the RTX 4090
    # clients' next requests)
    # 14.7 % with vLLM's Marlin MXFP4 experts on the A100 at 0.521 of the BF16 MAMF; 15.0 %
    # over 61 with vLLM PR 23151's H100 Qwen3-30B-A3B baseline (-28 %)
    # 16.8 % over 64 with GPUStack's SGLang Qwen3-235B burst (+198 %, the max) and vLLM PR
    # rows 43232 (+101 %) and 28992 (+32 %)
    assert report.median("calibrated", "throughput") <= 0.1681
    assert report.max("calibrated", "throughput") <= 1.9777


def test_a_case_needs_one_request_pattern(tmp_path):
    folder = tmp_path / "load_cases"
    folder.mkdir()
    (folder / "x.toml").write_text(
        'name = "x"\nworkload = "llama-3.1-8b"\ndevice = "h100"\nmetric = "ttft_ms"\n'
        'value = 10.0\n[config]\nengine = "e"\nprofile = "vllm-v1"\n'
        '[source]\nurl = "https://example.org"\nwhere = "table"\n', encoding="utf-8")
    with pytest.raises(roofkit.SpecError, match=r"exactly one of config\.concurrency"):
        roofkit.build_registry(entry_points=False, spec_paths=[tmp_path])


def test_validate_kind_load_cli(capsys, tmp_path):
    folder = tmp_path / "load_cases"
    folder.mkdir()
    (folder / "one.toml").write_text(
        'name = "one"\nworkload = "llama-3.1-8b"\ndevice = "h100"\nmetric = "tpot_ms"\n'
        'value = 5.0\n[config]\nengine = "e"\nprofile = "vllm-v1"\nconcurrency = 2\n'
        'requests = 4\ninput_len = 64\noutput_len = 16\n'
        '[source]\nurl = "https://example.org"\nwhere = "table"\n', encoding="utf-8")
    code, out, _ = run_cli(capsys, "--spec-path", str(tmp_path), "validate", "--kind", "load",
                           "--case", "one")
    assert code == 0 and "one" in out and "median |error|" in out


def _one_case(tmp_path, extra: str) -> None:
    folder = tmp_path / "load_cases"
    folder.mkdir()
    (folder / "d.toml").write_text(
        'name = "d"\nworkload = "llama-3.1-8b"\ndevice = "h100"\nmetric = "tpot_ms"\n'
        'value = 5.0\n[config]\nengine = "e"\nprofile = "vllm-v1"\nrate = 2.0\n'
        'requests = 20\ninput_len = 64\noutput_len = 16\n' + extra +
        '[source]\nurl = "https://example.org"\nwhere = "table"\n', encoding="utf-8")


def test_a_bad_length_distribution_names_the_key(tmp_path):
    _one_case(tmp_path, 'input_lengths = "uniform:64"\n')
    with pytest.raises(roofkit.SpecError, match=r"config\.input_lengths"):
        roofkit.build_registry(entry_points=False, spec_paths=[tmp_path])


def test_a_length_distribution_reaches_the_simulator(tmp_path):
    from roofkit.load.simulate import simulate

    _one_case(tmp_path, 'input_lengths = "uniform:1:64"\noutput_lengths = "uniform:8:24"\n')
    reg = roofkit.build_registry(spec_paths=[tmp_path])
    (case,) = [c for c in reg.catalogues["load_cases"].values() if c.name == "d"]
    report = run(registry=reg, cases=[case], bases=("calibrated",), loso=False)
    direct = simulate("llama-3.1-8b", "h100", rate=2.0, requests=20, input_len="uniform:1:64",
                      output_len="uniform:8:24", engine="vllm-v1", basis="calibrated",
                      registry=reg)
    assert report.cases[0].predicted["calibrated"] == pytest.approx(direct.tpot["mean"] * 1e3)
    assert "uniform:1:64/uniform:8:24" in report.cases[0].config
