"""The whole serving validation set: static and load cases scored together, per basis, view
and breakdown, with the interval coverage out of sample and the misses with their causes."""

import json
import statistics

import attrs
import pytest
from coverage_pins import COVERAGE

from roofkit.cli import main
from roofkit.errors import SpecError
from roofkit.serving import suite
from roofkit.serving.validation import SCORED

#: one xdist worker for every user of the session's whole-set run (conftest serving_suite)
pytestmark = pytest.mark.xdist_group("serving_suite")

#: leave-one-source-out (median, max) over the 320 scored cases (127 static, 193 under load),
#: measured on the set as it stands; a regression fails, an improvement passes (vLLM's Marlin
#: MXFP4 experts on the A100 at the SM80 Marlin sweep's 0.521 moved the whole set from 14.7 %
#: to 14.0 % and the load median from 21.6 % to 20.9 %; GPUStack's 48
#: vLLM gpt-oss-20b load cases moved the whole set from 13.2 % to 16.1 %, vLLM's Marlin MXFP4
#: kernel on Hopper back to 14.7 %; vLLM V1's step rest 13.4 % to 13.2 % before; the 79 load
#: cases from ROCm vLLM on MI300X, SGLang on H200, A100 and H100 and SGLang disaggregated on
#: H200 moved the load median from 17.1 % to 33.5 %; a closed loop's successor joining the
#: step after the one formed as its predecessor finished moved it from 29.4 % to 30.3 % and
#: the max from 209 % to 383 %, the NIM 70B TTFT rows, docs/load.md 'The benchmark protocol
#: and lock step'; the kernels' device startup in graph replays and overlapped steps moved
#: the load median from 28.8 % to 25.5 % and the MXFP4 experts' weight stream on Hopper (a
#: triton_kernels H100 row) to 20.7 %; the L40S FP8 rows, scored since the L40S has a
#: measured FP8 ceiling, moved the static median from 8.5 % to 9.4 %; a second, third-party
#: measurement of the TensorRT-LLM session's host step, which leaving NVIDIA's repository out
#: keeps, moved the whole set from 13.9 % to 13.6 % and the static max from 36.2 % to 35.0 %;
#: the NIM rows, whose in-flight executor takes the session's step as a stand-in, now at the
#: two runs' mean, moved the load median from 20.9 % to 21.1 %; the three cases of vLLM PR
#: 23151's baseline (Qwen3-30B-A3B on an H100, two of them beyond 35 %) moved the whole set
#: to 13.9 % and the load median to 21.3 %; four new sources scored as they came, 13 vLLM
#: benchmark_latency Mixtral rows (PRs 3240, 4002), 4 SGLang bench_one_batch DeepSeek rows
#: (datacrunch blog, PR 14764), 3 GPUStack SGLang Qwen3-235B rows and 3 vLLM PR rows (43232 on
#: a B200, 28992 on an H200), moved the whole set to 14.6 %, static 9.5 % with its max at 86.4 %
#: (an SGLang 0.4.3 DeepSeek-V3 batch-1 prefill), load 21.5 %)
PINNED = {"all": (0.1456, 3.8241), "static": (0.0948, 0.8640), "load": (0.2145, 3.8241)}
#: per metric family: the LOSO median reached (the issue's target: none above 20 %; TTFT is
#: above it, 20.2 % before the SGLang and MI300X load cases; 28.6 % before vLLM's Marlin MXFP4
#: experts on the A100, which took decode from 13.4 % to 12.5 % and throughput from 11.3 %;
#: 26.1 % before the session step's third-party measurement, which took throughput from
#: 11.0 % to 10.0 % and decode from 12.5 % to 12.6 %; vLLM PR 23151's cases then took decode
#: to 12.8 %, throughput to 10.2 % and TTFT to 25.0 %; the four new sources took decode to
#: 13.2 %, e2e to 9.4 %, throughput to 10.5 % and TTFT to 25.3 %)
PINNED_FAMILY = {"decode": 0.1315, "e2e": 0.0935, "kernel": 0.0629, "throughput": 0.1052,
                 "ttft": 0.2526}


def test_the_set_is_every_scored_static_and_load_case(serving_suite):
    static = {c.name for c in serving_suite.static.cases if c.group == SCORED}
    load = {c.name for c in serving_suite.load.cases if c.scored}
    assert {r.name for r in serving_suite.select(view="static")} == static
    assert {r.name for r in serving_suite.select(view="load")} == load
    assert len(serving_suite.rows) == len(static) + len(load) >= 150


def test_the_whole_set_median_is_over_both_views(serving_suite):
    both = [abs(c.error("loso")) for c in serving_suite.static.cases if c.group == SCORED] + [
        abs(c.error("loso")) for c in serving_suite.load.cases if c.scored]
    assert serving_suite.median("loso") == pytest.approx(statistics.median(both))
    assert serving_suite.median("loso", view="static") == pytest.approx(
        serving_suite.static.median("loso"))


@pytest.mark.parametrize("view", ["all", "static", "load"])
def test_leave_one_source_out_scores_are_pinned(serving_suite, view):
    s = serving_suite.summary()[view]
    median, worst = PINNED[view]
    assert s["loso_median_abs_error"] <= median + 0.005
    assert s["loso_max_abs_error"] <= worst + 0.005


def test_every_family_is_scored_and_pinned(serving_suite):
    rows = {g["family"]: g for g in serving_suite.breakdown("family")}
    assert set(rows) == set(PINNED_FAMILY)
    assert sum(g["cases"] for g in rows.values()) == len(serving_suite.rows)
    for fam, median in PINNED_FAMILY.items():
        assert rows[fam]["loso_median_abs_error"] <= median + 0.005, fam
    # static TTFT and TTFT under load are one family, as ITL and TPOT are
    assert {r.view for r in serving_suite.select(family="ttft")} == {"static", "load"}
    assert {r.metric for r in serving_suite.select(family="decode")} == {"itl_ms", "tpot_ms"}


def test_breakdowns_by_engine_and_device_class_cover_the_set(serving_suite):
    for by in ("engine", "device_class", "view"):
        rows = serving_suite.breakdown(by)
        assert sum(g["cases"] for g in rows) == len(serving_suite.rows)
    with pytest.raises(SpecError, match="unknown breakdown"):
        serving_suite.breakdown("colour")


def test_80_percent_intervals_cover_75_to_85_percent_of_the_set_both_ways(serving_suite):
    for leave_out, (lo, hi) in COVERAGE.items():
        c = serving_suite.coverage(0.8, leave_out)
        assert c["without_interval"] == 0 and c["cases"] >= 246
        assert lo <= c["covered"] <= hi, (leave_out, c["covered"])
    views = [serving_suite.coverage(0.8, "source", v)["cases"] for v in suite.VIEWS]
    assert sum(views) == serving_suite.coverage(0.8, "source")["cases"]


def test_misses_are_the_rows_beyond_the_threshold_worst_first(serving_suite):
    misses = serving_suite.misses(0.35)
    errors = [abs(r.error("loso")) for r in misses]
    assert errors == sorted(errors, reverse=True) and all(e > 0.35 for e in errors)
    beyond = [r for r in serving_suite.rows if abs(r.error("loso")) > 0.35]
    assert len(misses) == len(beyond)


def test_a_case_spec_cause_reaches_its_row(serving_suite, registry):
    from roofkit.serving.validation import run

    spec = registry.catalogues["validation"][serving_suite.static.scored()[0].name]
    static = run(registry=registry, cases=[attrs.evolve(spec, cause="a cause")], loso=False)
    (row,) = suite.rows(static, attrs.evolve(serving_suite.load, cases=()), registry)
    assert row.cause == "a cause" and row.to_dict()["cause"] == "a cause"


def test_the_known_causes_of_misses_are_in_the_case_specs(serving_suite):
    by_name = {r.name: r for r in serving_suite.rows}
    falcon = by_name["trtllm_v090_h100_falcon_180b_fp8_tp4_ttft_128"]
    assert "128-token FP8 prefill" in falcon.cause


def test_validate_prints_the_whole_set(capsys, monkeypatch, serving_suite):
    monkeypatch.setattr(suite, "run", lambda **kw: serving_suite)
    assert main(["validate"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"The whole serving validation set: {serving_suite.title()}.")
    assert "leave one source out: cover all" in out and "LOSO: median |error|" in out
    assert main(["validate", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["kind"] == "serving" and set(data["summary"]) == {"all", "static", "load"}
    assert {r["family"] for r in data["breakdown"]["family"]} == set(PINNED_FAMILY)


def test_validate_misses_lists_each_miss_with_its_cause(capsys, monkeypatch, serving_suite):
    monkeypatch.setattr(suite, "run", lambda **kw: serving_suite)
    assert main(["validate", "--misses", "0.35", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [m["name"] for m in data["misses"]] == [r.name for r in serving_suite.misses(0.35)]
    assert main(["validate", "--misses", "0.35"]) == 0
    out = capsys.readouterr().out
    assert all(r.name in out for r in serving_suite.misses(0.35)) and "cause:" in out
    assert main(["validate", "--kind", "static", "--misses", "0.3", "--json"]) == 0
    static = json.loads(capsys.readouterr().out)["misses"]
    assert [m["name"] for m in static] == [r.name for r in serving_suite.misses(0.3)
                                           if r.view == "static"]
    assert main(["validate", "--misses", "-1"]) == 1
    assert "a fraction of the measurement" in capsys.readouterr().err


def test_validate_training_misses_list_the_cases_beyond_with_their_cause(capsys, registry):
    from roofkit.fleet.validation import run

    report = run(registry=registry)
    beyond = {c.name for c in report.cases if c.scored and abs(c.error("calibrated")) > 0.35}
    assert main(["validate", "--kind", "training", "--misses", "0.35", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {m["name"] for m in data["misses"]} == beyond
    cat = registry.catalogues["training"]
    assert all(m["cause"] == cat[m["name"]].cause for m in data["misses"])
