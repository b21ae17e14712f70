"""Hostile input files and the values read from them: request traces, length histograms,
Hugging Face configs, output paths and layout sizes. Each is one message naming the file,
the line or key and what to write instead, an exit code of 1, never a traceback, a hang
or a number computed from a value that cannot be right."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from deadline import deadline
from hostile_run import kept_promises, run_cli

import roofkit
from roofkit.errors import ArgumentError, RoofkitError, SpecError
from roofkit.load.requests import Lengths, read_trace, stream

W, D = "llama-3.1-8b", "h100"
HF = Path(__file__).resolve().parents[1] / "data" / "hf"
GOOD = '{"arrival": 0.5, "input_len": 64, "output_len": 8}\n'


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFKIT_CACHE_DIR", str(tmp_path / "cache"))


def _refused(o, *words):
    """A failure kept its promises (one message, exit 1) and says each of ``words``."""
    kept_promises(o)
    assert o.code == 1, o
    for w in words:
        assert w in o.err, (w, o.err)
    return o.err


# -- request traces ------------------------------------------------------------------------

#: (trace line, words the message holds): the line's number and the key are always named
BAD_TRACE_LINES = [
    ('{"arrival": NaN, "input_len": 5, "output_len": 10}', "arrival = NaN"),
    ('{"arrival": Infinity, "input_len": 5, "output_len": 10}', "arrival = Infinity"),
    ('{"arrival": -1, "input_len": 5, "output_len": 10}', "finite time >= 0"),
    ('{"arrival": 0, "input_len": -5, "output_len": 10}', "input_len = -5"),
    ('{"arrival": 0, "input_len": 0, "output_len": 10}', "whole number of tokens >= 1"),
    ('{"arrival": 0, "input_len": 5.7, "output_len": 10}', "input_len = 5.7"),
    ('{"arrival": 0, "input_len": true, "output_len": 10}', "input_len = true is not a number"),
    ('{"arrival": "0", "input_len": 5, "output_len": 10}', 'arrival = "0" is not a number'),
    ('{"arrival": 0, "input_len": 5, "output_len": NaN}', "output_len = NaN"),
    ('{"arrival": 0, "input_len": 100000000000000000000000000000, "output_len": 10}',
     "MAX_TOKENS"),
    ('{"arrival": 0, "input_len": 5, "output_len": 2000000}', "MAX_OUTPUT_TOKENS"),
    ('{"arrival": 0, "input_len": 10}', "missing 'output_len'"),
    ("[0, 5, 10]", "got a list"),
    ("0,5,10", "not JSON"),
]


@pytest.mark.parametrize(("line", "words"), BAD_TRACE_LINES,
                         ids=[w for _, w in BAD_TRACE_LINES])
def test_a_bad_trace_line_is_refused_naming_file_line_and_key(tmp_path, line, words):
    trace = tmp_path / "t.jsonl"
    trace.write_text(GOOD + line + "\n")  # the second line is the bad one
    with deadline(10), pytest.raises(SpecError) as info:
        read_trace(trace)
    assert f"{trace}:2" in str(info.value)
    assert words in str(info.value)


def test_a_nan_arrival_is_refused_by_simulate_instead_of_hanging(tmp_path):
    trace = tmp_path / "nan.jsonl"
    trace.write_text('{"arrival": NaN, "input_len": 5, "output_len": 10}\n' + GOOD)
    _refused(run_cli("simulate", W, D, "--trace", trace, timeout=30), "nan.jsonl:1",
             "arrival = NaN")


@pytest.mark.parametrize(("make", "words"), [
    (lambda p: p.mkdir(), "a folder, not a file"),
    (lambda p: p.write_bytes(b"\xff\xfe\x00garbage"), "not UTF-8 text"),
    (lambda p: None, "no such file"),
    (lambda p: p.write_text("\n  \n"), "holds no requests"),
], ids=["folder", "binary", "missing", "blank"])
def test_a_trace_path_that_is_no_trace_is_refused(tmp_path, make, words):
    trace = tmp_path / "t.jsonl"
    make(trace)
    err = _refused(run_cli("simulate", W, D, "--trace", trace), words)
    assert str(trace) in err


def test_plan_reads_its_trace_as_simulate_does(tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"arrival": 0, "input_len": 1.5, "output_len": 10}\n')
    _refused(run_cli("plan", W, "--devices", D, "--slo", "ttft_p90=2s", "--trace", trace,
                     "--verify", "0"), "t.jsonl:1", "input_len = 1.5")


def test_a_well_formed_trace_still_reads(tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"timestamp": 2.0, "input_tokens": 7, "output_tokens": 3}\n'
                     '{"arrival": 1.0, "input_len": 64.0, "output_len": 8}\n')
    st = read_trace(trace)
    # sorted by arrival and shifted to start at 0; 64.0 is a whole number
    assert st.arrival.tolist() == [0.0, 1.0]
    assert st.input_len.tolist() == [64, 7] and st.output_len.tolist() == [8, 3]


# -- generated streams and length distributions --------------------------------------------

@pytest.mark.parametrize(("kwargs", "words"), [
    (dict(rate=float("inf")), "finite number > 0"),
    (dict(rate=1e-307), "past the largest float time"),
    (dict(concurrency=4, seed=-1), "seed must be a whole number >= 0"),
    (dict(concurrency=4, seed=1.5), "seed must be a whole number >= 0"),
    (dict(concurrency=4, input_len="normal:100:nan"), "must be finite"),
    (dict(concurrency=4, input_len="uniform:nan:5"), "must be finite"),
    (dict(concurrency=4, input_len="uniform:1:1e30"), "MAX_TOKENS"),
    (dict(concurrency=4, output_len="uniform:1:2000000"), "MAX_OUTPUT_TOKENS"),
], ids=lambda v: str(v)[:40])
def test_a_stream_refuses_values_no_load_can_have(kwargs, words):
    with pytest.raises(RoofkitError, match=words):
        stream(**kwargs)


def test_a_length_histogram_with_a_nan_weight_is_refused():
    with pytest.raises(SpecError, match="finite weights"):
        Lengths("histogram", values=(10, 20), weights=(float("nan"), 1.0))


@pytest.mark.parametrize(("make", "words"), [
    (lambda p: p.mkdir(), "a folder, not a file"),
    (lambda p: p.write_bytes(b"\xff\xfe\x00"), "not UTF-8 text"),
    (lambda p: p.write_text("length,weight\n10,nan\n20,1\n"), "finite weights"),
], ids=["folder", "binary", "nan weight"])
def test_a_bad_length_histogram_file_is_refused(tmp_path, make, words):
    hist = tmp_path / "h.csv"
    make(hist)
    _refused(run_cli("simulate", W, D, "--concurrency", "4", "--input-len", f"hist:{hist}"),
             words)


# -- command-line values the parser or the call now refuses --------------------------------

#: (argv, words of the message): each was accepted, hung or crashed before
CLI_FAILURES = [
    (["simulate", W, D, "--rate", "inf"], "finite number > 0"),
    (["simulate", W, D, "--concurrency", "4", "--seed", "-1"], "--seed: expected an integer"),
    (["simulate", W, D, "--concurrency", "4", "--max-num-seqs", "0"],
     "--max-num-seqs: expected an integer >= 1"),
    (["simulate", W, D, "--concurrency", "4", "--max-batched-tokens", "-5"],
     "--max-batched-tokens: expected an integer >= 1"),
    (["simulate", W, "0xh100", "--concurrency", "4"], "needs a whole number of devices >= 1"),
    (["plan", W, "--devices", ",", "--slo", "ttft_p90=2s", "--input-len", "512",
      "--output-len", "128"], "--devices: expected names separated by commas"),
    (["plan", W, "--devices", D, "--slo", "ttft_p90=2s", "--input-len", "512",
      "--output-len", "128", "--precisions", ","], "--precisions: expected names"),
    (["plan", W, "--devices", D, "--slo", "ttft_p90=2s", "--input-len", "512",
      "--output-len", "128", "--max-devices", "100000000"], "max_devices must be at most 256"),
    (["plan", W, "--devices", D, "--slo", "ttft_p90=2s", "--input-len", "512",
      "--output-len", "128", "--verify", "-1"], "verify must be a whole number >= 0"),
    (["plan", W, "--devices", D, "--slo", "ttft_p90=2s", "--input-len", "512",
      "--output-len", "128", "--verify", "100000"], "verify must be at most 100"),
    (["plan", W, "--devices", D, "--slo", "ttft_p90=2s", "--input-len", "100000000000",
      "--output-len", "128"], "MAX_TOKENS"),
    (["plan", W, "--devices", D, "--slo", "ttft_p90=2s", "--input-len", "512",
      "--output-len", "128", "--top", "-1"], "--top: expected an integer >= 0"),
    (["sweep", W, D, "-b", "1:100000000:+1"], "more than the 65,536 a list option takes"),
    (["train", W, "dgx-h100", "--seq-len", "100000000000"], "MAX_TOKENS"),
    (["train", W, "dgx-h100", "--seq-len", "2048", "--global-batch", "100000000000"],
     "global_batch must be at most"),
    (["train", W, "dgx-h100", "--seq-len", "2048", "--capacity-factor", "inf"],
     "capacity_factor must be a finite number"),
    (["train", W, "dgx-h100", "--seq-len", "2048", "--price-per-device-hour", "-2"],
     "price_per_device_hour must be a finite number"),
    (["train", W, "dgx-h100", "--seq-len", "2048", "--price-per-device-hour", "nan"],
     "price_per_device_hour must be a finite number"),
    (["train", W, "dgx-h100", "--seq-len", "2048", "--qlora", "100000"],
     "LoRA rank 100000 exceeds hidden 4096"),
    (["train", W, "0xh100", "--seq-len", "2048"], "needs a whole number of devices >= 1"),
    (["train", W, "100000000000xh100", "--seq-len", "2048"], "devices must be at most 1,048,576"),
]


@pytest.mark.parametrize(("argv", "words"), CLI_FAILURES,
                         ids=[" ".join(a[3:] if a[0] != "sweep" else a)[:60]
                              for a, _ in CLI_FAILURES])
def test_a_value_no_run_can_have_is_one_message(argv, words):
    _refused(run_cli(*argv), words)


def test_a_folder_given_as_a_device_says_it_is_a_folder(tmp_path):
    _refused(run_cli("solve", W, tmp_path), "Unknown device", "is a folder",
             "read from a .toml file")


def test_a_non_toml_file_given_as_a_device_says_so(tmp_path):
    f = tmp_path / "h100.json"
    f.write_text("{}")
    _refused(run_cli("solve", W, f), "does not end in .toml")


# -- output paths: refused before the work, not after -------------------------------------

def test_a_plot_into_a_missing_folder_is_refused_before_planning(tmp_path):
    out = tmp_path / "no" / "such" / "plan.png"
    with deadline(20):  # the plan itself is not run
        _refused(run_cli("plan", W, "--devices", D, "--slo", "ttft_p90=2s", "--input-len",
                         "512", "--output-len", "128", "--plot", out), "does not exist")


def test_a_plot_onto_a_folder_is_refused(tmp_path):
    folder = tmp_path / "pic.png"
    folder.mkdir()
    _refused(run_cli("plot", "roofline", W, D, "-o", folder), "it is a folder")


def test_calibrate_out_on_a_file_is_refused_before_measuring(tmp_path):
    f = tmp_path / "cal"
    f.write_text("")
    with deadline(20):  # no microbenchmark runs
        _refused(run_cli("calibrate", "--quick", "--out", f), "is a file, not a folder")


@pytest.mark.parametrize("where", ["folder", "under a file"])
def test_import_hf_output_that_cannot_be_a_file_is_refused(tmp_path, where):
    if where == "folder":
        out = tmp_path / "w.toml"
        out.mkdir()
    else:
        (tmp_path / "f").write_text("")
        out = tmp_path / "f" / "w.toml"
    _refused(run_cli("import-hf", HF / "gpt2", "-o", out), "cannot write the workload to")


# -- Hugging Face configs -------------------------------------------------------------------

def _config(tmp_path, base: str, **changes) -> Path:
    cfg = json.loads((HF / base / "config.json").read_text())
    cfg.update(changes)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return path


@pytest.mark.parametrize(("base", "changes", "key", "words"), [
    ("llama-3.1-8b", {"num_key_value_heads": 5}, "num_key_value_heads",
     "does not divide num_attention_heads 32"),
    ("llama-3.1-8b", {"num_key_value_heads": -8}, "num_key_value_heads", "must be positive"),
    ("llama-3.1-8b", {"head_dim": -128}, "head_dim", "must be positive"),
    ("falcon-7b-instruct", {"hidden_size": 4545}, "hidden_size",
     "not a multiple of num_attention_heads 71"),
    ("snowflake-arctic-embed-m", {"hidden_size": 770}, "hidden_size",
     "not a multiple of num_attention_heads 12"),
    ("mamba-2.8b-hf", {"state_size": "16"}, "state_size", "is not a number"),
    ("mamba-2.8b-hf", {"expand": 0}, "expand", "must be positive"),
    ("mamba2-2.7b", {"head_dim": 0}, "head_dim", "must be positive"),
], ids=lambda v: str(v)[:30])
def test_a_config_value_no_model_has_is_refused_naming_the_key(tmp_path, registry, base,
                                                                changes, key, words):
    from roofkit.importers import workload_from_hf

    path = _config(tmp_path, base, **changes)
    with pytest.raises(SpecError) as info:
        workload_from_hf(path, registry=registry)
    assert f"{path}:{key}" in str(info.value)
    assert words in str(info.value)


def test_a_mamba_dim_left_null_takes_the_mamba_ssm_default_and_says_so(tmp_path):
    from roofkit.importers.hf_arch import map_config

    draft = map_config(json.loads(_config(tmp_path, "mamba-2.8b-hf", state_size=None)
                                  .read_text()), "config.json")
    assert draft.dims["ssm_state"] == 16  # mamba_ssm's Mamba default d_state
    assert draft.provenance["dims.ssm_state"] == "mamba_ssm: Mamba default d_state 16"


def test_plan_refuses_max_devices_past_its_bound_on_the_api_too():
    # the API path of the bounds above: the same refusal without the command line
    with pytest.raises(ArgumentError, match="max_devices must be at most 256"):
        roofkit.plan(W, [D], input_len=512, output_len=128, slo="ttft_p90=2s",
                     max_devices=10**6, verify=0)
