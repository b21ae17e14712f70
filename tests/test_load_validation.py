"""Serving-under-load validation: the published NIM load measurements predicted by the
simulator, with the errors reached pinned (they may fall, not rise)."""

from __future__ import annotations

import pytest

import roofkit
from roofkit.load.validation import run
from roofkit.testing import run_cli


@pytest.fixture(scope="module")
def report():
    return run(bases=("calibrated",))


@pytest.mark.slow
def test_load_cases_are_predicted(report, registry):
    assert len(report.cases) >= 30
    assert {c.name for c in report.cases} == set(registry.catalogues["load_cases"])
    assert all(c.predicted["calibrated"] > 0 for c in report.cases)
    # every case is scored but the saturated rows that declare why not
    assert all(c.scored or c.reason.startswith("a saturated row") for c in report.cases)
    assert sum(c.scored for c in report.cases) >= 30
    origins = {c.origin for c in report.cases}
    assert len(origins) >= 2  # not one source


@pytest.mark.slow
def test_tpot_errors_do_not_rise_above_the_values_reached(report):
    # reached on the calibrated basis over the 24 TPOT cases: median 8.3 %, max 18.3 %
    # (target: median <= 15 %, max <= 40 %; the NIM fp8 engines hold an fp8 KV cache)
    assert report.median("calibrated", "tpot") <= 0.085
    assert report.max("calibrated", "tpot") <= 0.185


@pytest.mark.slow
def test_ttft_errors_do_not_rise_above_the_values_reached(report):
    # reached over the 29 TTFT cases (24 NIM, 5 vLLM on an RTX 4090): median 57.6 %, max 209 %
    # (targets 15 % / 40 % missed: a closed loop of fixed lengths stays in lock step in the
    # simulator, docs/load.md#accuracy-the-mechanisms)
    assert report.median("calibrated", "ttft") <= 0.58
    assert report.max("calibrated", "ttft") <= 2.1


@pytest.mark.slow
def test_throughput_errors_do_not_rise_above_the_values_reached(report):
    # reached over the 5 output-tokens/s cases (vLLM, Mistral-7B, RTX 4090): median 26.6 %,
    # max 36.6 %, all too fast (the RTX 4090's measured bandwidth still prices the decode
    # below the rows' implied time per token)
    assert report.median("calibrated", "throughput") <= 0.27
    assert report.max("calibrated", "throughput") <= 0.37


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
