"""``roofkit serve``: the issue's two commands, the text table and the exit codes."""

import json

import pytest

import roofkit
from roofkit.cli import main
from roofkit.testing import run_cli

KEYS = ("ttft_ms", "itl_ms", "e2e_ms", "output_tokens_per_s", "fits", "basis")


def run(capsys, *args):
    return run_cli(capsys, *args)


def test_llama2_7b_on_a100_batch_1(capsys):
    code, out, _ = run(capsys, "serve", "llama-2-7b", "a100-80gb", "--batch", "1",
                       "--input-len", "128", "--output-len", "20", "--json")
    assert code == 0
    d = json.loads(out)
    for k in KEYS:
        assert k in d
    assert d["basis"] == "calibrated" and d["fits"] is True
    # batch-1 decode streams 13.5 GB of weights per token: milliseconds, not microseconds
    assert 5 < d["itl_ms"] < 20 and d["ttft_ms"] > 0
    assert d["e2e_ms"] == pytest.approx(d["ttft_ms"] + 19 * d["itl_ms"], rel=1e-9)
    assert d["output_tokens_per_s"] == pytest.approx(20 / d["e2e_ms"] * 1e3)


def test_llama31_70b_on_four_h100_batch_64(capsys):
    code, out, _ = run(capsys, "serve", "llama-3.1-70b", "h100", "--tp", "4", "--batch", "64",
                       "--input-len", "128", "--output-len", "128", "--json")
    assert code == 0
    d = json.loads(out)
    for k in KEYS:
        assert k in d
    assert d["tp"] == 4 and d["fits"] is True and d["max_batch"] >= 64
    assert d["output_tokens_per_s"] > 0 and d["itl_last_ms"] > d["itl_first_ms"]


def test_the_datasheet_basis_is_faster_than_the_measured_one(capsys):
    args = ["serve", "llama-2-7b", "a100", "--output-len", "20", "--json"]
    _, cal, _ = run(capsys, *args)
    _, sheet, _ = run(capsys, *args, "--basis", "datasheet")
    assert json.loads(sheet)["basis"] == "datasheet"
    assert json.loads(sheet)["itl_ms"] < json.loads(cal)["itl_ms"]


def test_the_text_output_names_the_basis(capsys):
    code, out, _ = run(capsys, "serve", "mixtral-8x7b", "h100", "--tp", "2", "--batch", "8",
                       "--engine", "vllm-v0")
    assert code == 0
    assert "time to first token" in out and "inter-token latency" in out
    assert "basis: calibrated" in out


def test_exit_codes(capsys):
    assert run(capsys, "serve", "llama-3.1-70b", "h100", "--batch", "8")[0] == 0
    code, _, err = run(capsys, "serve", "llama-3.1-70b", "h100", "--batch", "8",
                       "--require-fit")
    assert code == 2 and "does not fit" in err
    code, _, err = run(capsys, "serve", "llama-2-7b", "h10")
    assert code == 1 and "Did you mean" in err
    code, _, err = run(capsys, "serve", "llama-2-7b", "h100", "--engine", "tgi")
    assert code == 1 and "engine profile" in err


def test_serve_is_exported_lazily_from_the_top_package():
    est = roofkit.serve("llama-3.1-8b", "h200", batch=8, input_len=32, output_len=128,
                        engine="vllm-v0")
    assert est.quantity("e2e").units == roofkit.Q(1, "ms").units
    assert est.fits


def test_the_kv_cache_format_is_kv_cache_dtype_in_python_and_kv_dtype_on_the_cli(capsys):
    from roofkit.serving import max_load

    est = roofkit.serve("llama-3.1-8b", "h100", batch=4, input_len=64, output_len=4,
                        kv_cache_dtype="fp8")
    bf16 = roofkit.serve("llama-3.1-8b", "h100", batch=4, input_len=64, output_len=4)
    assert est.kv_cache_dtype == "fp8" and bf16.kv_cache_dtype == "bf16"
    assert est.to_dict()["kv_cache_dtype"] == "fp8" and "kv_dtype" not in est.to_dict()
    assert est.kv_per_token_per_device == pytest.approx(bf16.kv_per_token_per_device / 2)
    # the same keyword as roofkit.decode
    step = roofkit.decode("llama-3.1-8b", "h100", batch=4, context=64, kv_cache_dtype="fp8")
    assert step.settings["kv_cache_dtype"] == "fp8"
    full = max_load("llama-3.1-8b", "h100", input_len=128, output_len=128,
                    kv_cache_dtype="fp8", max_requests=8)
    assert full.kv_cache_dtype == "fp8"
    with pytest.raises(TypeError, match="kv_dtype"):
        roofkit.serve("llama-3.1-8b", "h100", kv_dtype="fp8")
    code, out, _ = run(capsys, "serve", "llama-3.1-8b", "h100", "--batch", "4",
                       "--input-len", "64", "--output-len", "4", "--kv-dtype", "fp8", "--json")
    assert code == 0 and json.loads(out)["kv_cache_dtype"] == "fp8"


@pytest.mark.parametrize(("argv", "words"), [
    (["serve", "h100", "llama-3.1-8b"], "is a device"),
    (["serve", "specs/devices/h100-sxm.toml", "h100"], "device spec"),
    (["serve", "llama-3.1-8b", "h100", "--kv-dtype", "fp7"], "Unknown precision"),
    (["serve", "llama-3.1-8b", "h100", "--precision", "fp7"], "Unknown precision"),
    (["serve", "llama-3.1-8b", "h100", "--batch", "0"], "batch"),
    (["serve", "llama-3.1-8b", "h100", "--input-len", "-1"], "input_len"),
    (["serve", "llama-3.1-8b", "h100", "--tp", "3"], "heads"),
    (["serve", "llama-3.1-8b", "l4", "--tp", "2"], "interconnect"),
    (["serve", "llama-3.1-8b", "h100", "--basis", "guess"], "invalid choice"),
    (["serve", "bert-base", "h100"], "encoder"),
])
def test_bad_serve_inputs_exit_1_without_a_traceback(capsys, argv, words):
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse refusals
        code = exc.code
    err = capsys.readouterr().err
    assert code == 1 and words in err and "Traceback" not in err


def test_max_load_admits_as_many_requests_as_the_kv_cache_holds(capsys):
    from roofkit.errors import SpecError
    from roofkit.serving import max_load

    kw = dict(input_len=128, output_len=2048, precision="fp8", kv_cache_dtype="fp8")
    grow = max_load("llama-3.1-8b", "h100", **kw)
    reserve = max_load("llama-3.1-8b", "h100", admission="reserve", **kw)
    free = grow.usable_memory - grow.weights_per_device
    per_token = grow.kv_per_token_per_device                  # 65,536 B: 32 x 2 x 8 x 128 x 1
    assert per_token == 65_536
    assert grow.batch == int(free // ((128 + 1024) * per_token))     # the mean context held
    assert reserve.batch == int(free // ((128 + 2048) * per_token))  # the whole request held
    with pytest.raises(SpecError, match=r"grow.*reserve"):
        max_load("llama-3.1-8b", "h100", admission="greedy", **kw)
    code, out, _ = run(capsys, "serve", "llama-3.1-8b", "h100", "--max-load", "--admission",
                       "reserve", "--input-len", "128", "--output-len", "2048", "--precision",
                       "fp8", "--kv-dtype", "fp8", "--json")
    assert code == 0 and json.loads(out)["batch"] == reserve.batch


@pytest.mark.parametrize(("argv", "words"), [
    (["--max-load", "--batch", "4"], "drop --batch"),
    (["--admission", "reserve"], "belong to --max-load"),
    (["--max-requests", "8"], "belong to --max-load"),
])
def test_max_load_flags_are_not_mixed_silently(capsys, argv, words):
    code, _, err = run(capsys, "serve", "llama-3.1-8b", "h100", *argv)
    assert code == 1 and words in err
