"""``roofkit sweep`` with the query flags: --where, --pareto, --best-by, --mode, --context,
--tp (routed through roofkit.sweep)."""

from __future__ import annotations

import csv
import io
import json

import pytest

import roofkit
from roofkit.testing import run_cli


def run(capsys, *args):
    return run_cli(capsys, *args, plugins=False)


def test_where_and_pareto_over_a_decode_grid(capsys):
    code, out, _ = run(capsys, "sweep", "llama-3.1-70b", "h100", "b200", "mi300x",
                       "-b", "1,8,64", "-p", "fp8", "--mode", "decode", "--context",
                       "2048,32768", "--where", "itl_ms<=20", "--pareto", "throughput,latency",
                       "--json")
    assert code == 0
    data = json.loads(out)
    assert data["mode"] == "decode" and data["points"] == 18
    rows = data["rows"]
    assert rows and all(r["itl_ms"] <= 20 and r["feasible"] for r in rows)
    table = roofkit.sweep("llama-3.1-70b", ["h100", "b200", "mi300x"], ["fp8"], [1, 8, 64],
                          contexts=[2048, 32768], mode="decode", registry=None)
    front = table.where("itl_ms<=20", "fits").pareto("throughput_per_s", "latency_ms")
    assert [r["latency_ms"] for r in rows] == front["latency_ms"].tolist()


def test_best_by_gives_one_row_per_device_that_fits(capsys):
    code, out, _ = run(capsys, "sweep", "resnet-50", "h100", "v100", "esp32-s3", "-b",
                       "1,8,64", "-p", "fp16,int8", "--best-by", "throughput", "--csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["device"] for r in rows] == ["h100-sxm", "v100"]  # nothing fits the ESP32
    assert all(r["feasible"] == "True" for r in rows)


def test_best_by_direction_can_be_given(capsys):
    code, out, _ = run(capsys, "sweep", "resnet-50", "h100", "-b", "1,8,64",
                       "--best-by", "throughput:min", "--json")
    assert code == 0 and json.loads(out)["rows"][0]["batch_size"] == 1


def test_include_infeasible_keeps_points_that_do_not_fit(capsys):
    code, out, _ = run(capsys, "sweep", "llama-3.1-70b", "h100", "--where", "not fits",
                       "--include-infeasible", "--json")
    assert code == 0
    rows = json.loads(out)["rows"]
    assert len(rows) == 1 and rows[0]["reason"].startswith("needs")


def test_text_output_says_what_was_applied(capsys):
    code, out, _ = run(capsys, "sweep", "llama-3.1-8b", "h100", "l4", "-b", "1,16",
                       "--mode", "prefill", "--context", "128,2048", "--where", "fits")
    assert code == 0
    assert "TTFT" in out and "8 points; where fits" in out


def test_unknown_column_lists_the_known_ones_and_exits_1(capsys):
    code, _, err = run(capsys, "sweep", "resnet-50", "h100", "--where", "bogus <= 3")
    assert code == 1
    assert "unknown column 'bogus'" in err and "latency_ms" in err and "throughput_per_s" in err


def test_bad_pareto_and_engine_tp_are_refused(capsys):
    code, _, err = run(capsys, "sweep", "resnet-50", "h100", "--pareto", "latency")
    assert code == 1 and "two columns" in err
    code, _, err = run(capsys, "sweep", "llama-3.1-8b", "h100", "--tp", "2")
    assert code == 1 and "tensor parallelism" in err


def test_decode_sweeps_a_tp_axis(capsys):
    code, out, _ = run(capsys, "sweep", "llama-3.1-70b", "h100", "--mode", "decode",
                       "--tp", "1,2,4,8", "-b", "1", "--context", "2048", "--json")
    assert code == 0
    rows = json.loads(out)["rows"]
    assert sorted(r["tp"] for r in rows) == [2, 4, 8]  # tp 1 does not fit, so it is dropped
    by_tp = {r["tp"]: r for r in rows}
    assert by_tp[4]["itl_ms"] < by_tp[2]["itl_ms"]


def test_without_query_flags_the_engine_sweep_output_is_unchanged(capsys):
    code, out, _ = run(capsys, "sweep", "resnet-50", "h100", "-b", "1,8", "--csv")
    assert code == 0
    assert out.splitlines()[0].startswith("hardware,batch_size,precision")


def test_every_output_says_basis_slot_and_fallback(capsys):
    args = ["sweep", "llama-3.1-8b", "a100-80gb", "h100", "-b", "1", "-p", "fp8",
            "--mode", "decode", "--context", "128", "--basis", "datasheet"]
    code, out, _ = run(capsys, *args, "--csv")
    assert code == 0
    rows = {r["device"]: r for r in csv.DictReader(io.StringIO(out))}
    assert rows["a100-80gb"]["fell_back"] == "True" and rows["h100-sxm"]["fell_back"] == "False"
    assert rows["a100-80gb"]["compute_slot"].startswith("fp16")
    assert {r["basis"] for r in rows.values()} == {"datasheet"}
    code, out, _ = run(capsys, *args, "--json")
    rows = {r["device"]: r for r in json.loads(out)["rows"]}
    assert rows["a100-80gb"]["fell_back"] is True and rows["a100-80gb"]["basis"] == "datasheet"
    code, out, _ = run(capsys, *args)
    assert "fp16+bf16 (fallback)" in out and "basis: datasheet" in out
    # the engine mode too, through roofkit.sweep and through Engine.sweep
    code, out, _ = run(capsys, "sweep", "resnet-50", "a100-80gb", "-p", "fp8", "--where",
                       "fits", "--csv")
    row = next(csv.DictReader(io.StringIO(out)))
    assert (row["basis"], row["compute_slot"], row["fell_back"]) == ("datasheet", "fp16",
                                                                     "True")
    code, out, _ = run(capsys, "sweep", "resnet-50", "a100-80gb", "-p", "fp8", "--csv")
    row = next(csv.DictReader(io.StringIO(out)))
    assert (row["basis"], row["compute_slot"], row["fell_back"]) == ("datasheet", "fp16",
                                                                     "True")
    code, out, _ = run(capsys, "sweep", "resnet-50", "a100-80gb", "-p", "fp8")
    assert "fp16 (fallback)" in out and "basis: datasheet" in out


def test_kv_dtype_and_basis_flags_reach_the_decode_sweep(capsys):
    code, out, _ = run(capsys, "sweep", "llama-3.1-8b", "h100", "-b", "8", "-p", "fp8",
                       "--mode", "decode", "--context", "4096", "--kv-dtype", "fp8",
                       "--basis", "calibrated", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["meta"]["kv_cache_dtype"] == "fp8" and data["meta"]["basis"] == "calibrated"
    row = data["rows"][0]
    assert row["basis"] == "calibrated"
    est = roofkit.decode("llama-3.1-8b", "h100", batch=8, context=4096, precision="fp8",
                         kv_cache_dtype="fp8", basis="calibrated")
    assert row["itl_ms"] == pytest.approx(est.time * 1e3, rel=1e-12)
