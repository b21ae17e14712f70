"""``roofkit decode | prefill | fit``."""

import json

from roofkit.testing import run_cli


def run(capsys, *args):
    return run_cli(capsys, *args)


def test_decode_json_gives_rows_totals_and_basis(capsys):
    code, out, _ = run(capsys, "decode", "llama-3.1-70b", "h100", "--batch", "64",
                       "--context", "2048", "--json")
    assert code == 0
    d = json.loads(out)
    assert d["rows"] and {"node", "op", "flops", "bytes", "time_s", "bound"} <= set(d["rows"][0])
    times = [r["time_s"] for r in d["rows"]]
    assert times == sorted(times, reverse=True)
    assert d["totals"]["time_s"] > 0 and d["totals"]["bound"] == "memory"
    # the default basis: calibrated, since h100-sxm has measured constants
    assert d["basis"].startswith("measured achievable for h100-sxm")
    assert d["settings"]["basis"] == "calibrated"


def test_decode_table_is_sorted_by_time_with_totals_and_basis(capsys):
    code, out, _ = run(capsys, "decode", "mixtral-8x7b", "h100", "--batch", "8", "--by", "op")
    assert code == 0
    assert out.index("expert_gate_up") < out.index("rms_norm")
    assert "total " in out and "basis: calibrated (the default: h100-sxm has measured" in out
    code, out, _ = run(capsys, "decode", "mixtral-8x7b", "h100", "--batch", "8", "--basis",
                       "datasheet")
    assert code == 0 and "basis: datasheet (as asked)" in out


def test_prefill_by_section(capsys):
    code, out, _ = run(capsys, "prefill", "llama-3.1-8b", "h100", "--tokens", "1024",
                       "--by", "section")
    assert code == 0 and "compute-bound" in out and "main" in out


def test_fit_says_whether_it_fits_and_by_how_much(capsys):
    code, out, _ = run(capsys, "fit", "qwen3-next-80b-a3b", "h200", "--seqs", "32",
                       "--context", "32768")
    assert code == 0
    assert "DOES NOT FIT: short by" in out and "GB" in out
    code, out, _ = run(capsys, "fit", "llama-3.1-8b", "h100", "--seqs", "4", "--context",
                       "8192")
    assert code == 0 and "FITS with" in out and "to spare" in out


def test_fit_enforce_exits_2_when_it_does_not_fit(capsys):
    code, _, _ = run(capsys, "fit", "qwen3-next-80b-a3b", "h200", "--seqs", "32",
                     "--context", "32768", "--enforce")
    assert code == 2


def test_formats_and_kv_dtype_flags(capsys):
    code, out, _ = run(capsys, "fit", "gpt-oss-120b", "h100", "--format", "experts=nvfp4",
                       "--kv-dtype", "fp8", "--json")
    d = json.loads(out)
    assert code == 0 and d["footprint"]["kv_cache_dtype"] == "fp8"


def test_bad_input_exits_1(capsys):
    code, _, err = run(capsys, "decode", "llama-3.1-8b", "h10")
    assert code == 1 and "Did you mean" in err
    code, _, err = run(capsys, "decode", "bert-base", "h100")
    assert code == 1 and "encoder" in err
