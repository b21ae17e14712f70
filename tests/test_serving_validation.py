"""``roofkit validate``: every published case predicted on both bases, and a guard on the
calibrated error measured when the serving estimator was resolved (issue 6)."""

import json

import attrs
import pytest
from coverage_pins import COVERAGE

from roofkit.cli import main
from roofkit.serving.validation import OTHER, SCORED, run

#: one xdist worker for every user of the session's whole-set run (conftest serving_suite)
pytestmark = pytest.mark.xdist_group("serving_suite")

#: calibrated basis, single-node inference cases (127 scored: the 102 of the TensorRT-LLM
#: v0.9.0 performance doc's addition read 6.41 %; the 14 L40S FP8 rows, scored since the
#: L40S has a measured FP8 ceiling, moved it to 7.70 %; the TensorRT-LLM session's host step
#: as the mean of NVIDIA's README run and a third party's, 0.774 ms instead of the README's
#: 1.013 ms, moved it to 8.43 %: in sample for the first, the leave-one-source-out scores,
#: which keep only the second, improved)
#: 144 scored since 17 rows of three new sources (vLLM benchmark_latency Mixtral rows of PRs
#: 3240 and 4002, SGLang bench_one_batch DeepSeek rows): 8.93 %, max 86.4 % (an SGLang 0.4.3
#: DeepSeek-V3 batch-1 prefill, 258 ms measured against 35 ms: eager host time unmodelled)
MEASURED_MEDIAN = 0.0893
MEASURED_MAX = 0.8640  # 0.3439 over the 127 before them; 0.3381 before the session step's mean
#: the issue's targets for the calibrated basis
TARGET_MEDIAN, TARGET_MAX = 0.15, 0.35
#: the datasheet basis, shown beside it (127 scored cases, with the RTX 4090 decode cases and
#: the L40S FP8 rows)
DATASHEET_MEDIAN = 0.2880


@pytest.fixture(scope="module")
def report(serving_suite):
    return serving_suite.static  # the static view of the whole set, run once per session


def test_validate_runs_over_the_whole_set(report, registry):
    names = {c.name for c in report.cases}
    assert names == set(registry.catalogues["validation"])
    assert len(report.cases) >= 206
    assert len(report.scored()) >= 102


def test_every_case_is_scored_on_both_bases_or_says_why_not(report):
    for c in report.cases:
        if c.group == SCORED:
            assert c.predicted["datasheet"] > 0 and c.predicted["calibrated"] > 0, c.name
        else:
            assert c.group == OTHER and c.reason, c.name


def test_calibrated_median_error_does_not_rise_above_the_value_measured(report):
    assert report.median("calibrated") <= MEASURED_MEDIAN + 0.005


def test_calibrated_max_error_does_not_rise_above_the_value_measured(report):
    assert report.max("calibrated") <= MEASURED_MAX + 0.005


def test_calibrated_errors_meet_the_targets(report):
    assert report.median("calibrated") <= TARGET_MEDIAN
    # the max target is missed since the new static sources: the SGLang DeepSeek-V3 batch-1
    # rows (86 %, 84 %) and vLLM's untuned-MoE Mixtral batch-64 row (42 %) each carry their
    # cause; every other scored case is within it
    over = sorted(c.name for c in report.cases
                  if c.group == SCORED and abs(c.error("calibrated")) > TARGET_MAX)
    assert over == ["dcblog_h200_deepseek_v3_fp8_tp8_b1_itl_256_32",
                    "dcblog_h200_deepseek_v3_fp8_tp8_b1_ttft_256",
                    "vllmpr3240_a100_mixtral8x7b_tp2_bs32_1000_50",
                    "vllmpr3240_a100_mixtral8x7b_tp2_bs64_1000_50"]


def test_unscored_cases_are_predicted_and_listed_with_their_reason(report, registry):
    marked = [c for c in registry.catalogues["validation"].values() if c.unscored]
    assert marked
    by_name = {c.name: c for c in report.cases}
    for case in marked:
        r = by_name[case.name]
        assert r.group == OTHER and r.reason == case.unscored
        assert r.predicted["calibrated"] > 0 and r.predicted["datasheet"] > 0


def test_the_calibrated_basis_beats_the_datasheet_basis(report):
    assert report.median("calibrated") < report.median("datasheet")
    assert report.median("datasheet") == pytest.approx(DATASHEET_MEDIAN, abs=0.02)


def test_signed_error_is_prediction_over_measurement(report):
    c = next(c for c in report.cases if c.group == SCORED)
    assert c.error("calibrated") == pytest.approx(c.predicted["calibrated"] / c.measured - 1)


def test_validate_cli_prints_both_bases_and_the_summary(capsys):
    assert main(["validate", "--kind", "static"]) == 0
    out = capsys.readouterr().out
    assert "datasheet: median |error|" in out and "calibrated: median |error|" in out
    assert "other (" in out  # unscored cases shown separately, with their reasons


def test_validate_json(capsys):
    assert main(["validate", "--kind", "static", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    case = data["cases"][0]
    for key in ("name", "measured", "predicted_datasheet", "predicted_calibrated",
                "error_datasheet", "error_calibrated", "group"):
        assert key in case
    summary = data["summary"][SCORED]
    assert summary["calibrated"]["median_abs_error"] <= MEASURED_MEDIAN + 0.005


def test_a_superseded_case_is_predicted_and_listed_beside_its_later_measurement(report,
                                                                              registry):
    cases = registry.catalogues["validation"]
    old = cases["trtllm_v05_h100_llama2_70b_fp8_tp4_ttft_128"]
    new = cases[old.superseded_by]
    # the same configuration, a later engine version, the same publisher's doc
    assert (new.workload, new.device, new.config.tp, new.config.batch, new.config.input_len) \
        == (old.workload, old.device, old.config.tp, old.config.batch, old.config.input_len)
    by_name = {c.name: c for c in report.cases}
    listed, scored = by_name[old.name], by_name[new.name]
    assert listed.group == OTHER and new.name in listed.reason
    assert listed.predicted["calibrated"] == pytest.approx(scored.predicted["calibrated"])
    assert scored.group == SCORED


def test_superseded_by_must_name_a_case(registry):
    from roofkit.errors import SpecError

    case = registry.catalogues["validation"]["trtllm_v05_h100_llama2_70b_fp8_tp4_ttft_128"]
    broken = attrs.evolve(case, superseded_by="no_such_case")
    with pytest.raises(SpecError, match="no_such_case"):
        run(registry=registry, cases=[broken])


def test_a_case_no_measurement_stands_behind_is_listed_not_scored(registry):
    # the L40S calibration measures matmul (bf16, fp16, fp32, fp8) but neither its memory
    # bandwidth nor its int8 slot: a case run in int8 keeps the datasheet
    case = registry.catalogues["validation"]["trtllm_v090_l40s_gptj_6b_fp8_ttft_128"]
    int8 = attrs.evolve(case, config=attrs.evolve(case.config, precision="int8"))
    (row,) = run(registry=registry, cases=[int8], loso=False).cases
    assert row.group == OTHER
    assert "measures neither its memory bandwidth nor its int8 compute" in row.reason
    assert "its calibrated basis is its datasheet" in row.reason
    assert row.predicted["datasheet"] > 0 and row.predicted["calibrated"] > 0


def test_a_case_on_a_measured_compute_slot_is_scored(registry, report):
    # the single-GPU L40S FP8 cases run on the measured fp8 slot (vLLM PR #6677): scored
    l40s = [c for c in report.cases if c.device == "l40s" and c.predicted.get("calibrated")]
    assert l40s and all(c.group == SCORED and not c.reason for c in l40s)
    case = registry.catalogues["validation"]["trtllm_v090_l40s_gptj_6b_fp8_ttft_2048"]
    bf16 = attrs.evolve(case, config=attrs.evolve(case.config, precision="bf16"))
    (fp8_row,) = run(registry=registry, cases=[case], loso=False).cases
    (bf16_row,) = run(registry=registry, cases=[bf16], loso=False).cases
    assert fp8_row.group == SCORED and bf16_row.group == SCORED and not bf16_row.reason
    # the measured ceilings are below the datasheet's (BF16 252 of 366.5 TFLOP/s, FP8 377.6
    # of 733), so a 2048-token prefill is predicted slower on the calibrated basis
    assert bf16_row.predicted["calibrated"] > bf16_row.predicted["datasheet"]
    assert fp8_row.predicted["calibrated"] > fp8_row.predicted["datasheet"]


def test_validate_markdown_gives_the_tables_and_summary(capsys, report):
    assert main(["validate", "--kind", "static", "--markdown"]) == 0
    out = capsys.readouterr().out
    n = len(report.scored())
    assert out.startswith(f"Scored: {n} single-node inference cases.")
    assert "| basis | median abs error | max abs error |" in out
    assert f"| calibrated | {report.median('calibrated') * 100:.1f}% |" in out
    first = report.scored()[0]
    assert f"| `{first.name}` | {first.metric} |" in out


#: leave-one-source-out on the calibrated basis (8.13 % over the 102 cases when it was added,
#: 9.35 % over the 127 with the L40S FP8 rows): the TensorRT-LLM cases lose the session
#: engine profile derived from TensorRT-LLM's own README; 9.48 % over 144 with the vLLM
#: benchmark_latency and SGLang bench_one_batch rows, max 86.4 % (SGLang 0.4.3's DeepSeek-V3
#: batch-1 prefill)
LOSO_MEDIAN, LOSO_MAX = 0.0948, 0.8640


def test_leave_one_source_out_scores_are_pinned(report):
    assert report.median("loso") <= LOSO_MEDIAN + 0.005
    assert report.max("loso") <= LOSO_MAX + 0.005
    assert report.summary()[SCORED]["loso"]["predicted"] == len(report.scored())


def test_every_constant_has_an_independence_statement(report, registry):
    from roofkit.serving.loso import constants, frontend_constants

    named = {s["constant"] for s in report.independence}
    kernels = {f"engine:{key}:kernels.{k.name}" for key in registry.catalogues["engines"]
               for k in registry.catalogues["engines"][key].kernels}
    frontends = {c.name for c in frontend_constants(registry)}
    assert frontends == {"engine:vllm-v1:frontend", "engine:vllm-v1-async:frontend"}
    assert named == {c.name for c in constants(registry)} | kernels | frontends
    removed = {s["constant"] for s in report.independence if s["cases_removed_for"]}
    assert "host:engines.tensorrt-llm-session" in removed


def test_interval_coverage_out_of_sample_meets_the_target(report):
    # the whole serving set: this run's static residuals and the shipped load ones; each
    # case's 80 % interval from the other cases' LOSO residuals, and from the other sources'
    from roofkit.intervals import coverage, residuals, table

    rows = residuals(report) + [r for r in table() if r.metric.startswith("load_")]
    for leave_out in ("case", "source"):
        c = coverage(rows, 0.8, leave_out)
        # the target 75-85 % for a new source, and what is reached: coverage_pins.py
        lo, hi = COVERAGE[leave_out]
        assert lo <= c["covered"] <= hi and c["cases"] >= 109 + 137, (leave_out, c)


def test_the_shipped_residual_table_matches_a_fresh_run(report):
    from roofkit.intervals import residuals, table

    fresh = {(r.case, r.basis): r.r for r in residuals(report)}
    static = [r for r in table() if not r.metric.startswith(("load_", "train_"))]
    shipped = [r for r in static if (r.case, r.basis) in fresh]
    assert len(shipped) >= 0.9 * len(static)
    close = [r for r in shipped if abs(r.r - fresh[r.case, r.basis]) < 0.05]
    assert len(close) >= 0.9 * len(shipped), "regenerate: python -m roofkit.intervals"
