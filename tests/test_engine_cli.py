"""``roofkit solve``, ``roofkit sweep`` and ``roofkit workloads``."""

from __future__ import annotations

import csv
import io
import json

import pytest

from roofkit.testing import run_cli, write_spec

SOLVE_KEYS = {"latency_ms", "latency_compute_ms", "latency_memory_ms", "latency_overhead_ms",
              "throughput_per_s", "energy_j", "memory_footprint_bytes", "bottleneck",
              "feasible", "mfu", "hfu", "trace", "basis"}


def run(capsys, *args):
    return run_cli(capsys, *args, plugins=False)


def test_solve_json_has_the_documented_keys(capsys):
    code, out, _ = run(capsys, "solve", "resnet-50", "h100", "-b", "32", "--json")
    assert code == 0
    data = json.loads(out)
    assert set(data) >= SOLVE_KEYS
    assert data["inputs"]["batch_size"] == 32 and data["feasible"] is True


def test_solve_text_prints_summary_trace_and_basis(capsys):
    code, out, _ = run(capsys, "solve", "resnet-50", "h100", "-p", "bf16", "-e", "0.4")
    assert code == 0
    assert "resnet-50 on h100-sxm" in out and "trace:" in out and "basis:" in out


def test_solve_training_flags_reach_the_engine(capsys):
    code, out, _ = run(capsys, "solve", "resnet-50", "h100", "--train", "--lora", "--recompute",
                       "--zero-stage", "1", "--dp-size", "2", "--seq-len", "512", "--json")
    assert code == 0
    inputs = json.loads(out)["inputs"]
    assert inputs["is_training"] and inputs["is_lora"] and inputs["activation_recomputation"]
    assert (inputs["zero_stage"], inputs["dp_size"], inputs["seq_len"]) == (1, 2, 512)


@pytest.fixture
def fat(tmp_path):
    write_spec(tmp_path, "workloads", "fat-cnn", """
        name = "fat-cnn"
        display_name = "fat"
        domain = "vision"
        [generic]
        params = 20e9
        flops_per_sample = "40 GFLOP"
        layers = 100
        [sources]
        test = "fixture"
        [provenance]
        generic = "test"
        """)
    return str(tmp_path)


def test_enforce_fit_exits_2_when_it_does_not_fit(capsys, fat):
    code, _, err = run(capsys, "--spec-path", fat, "solve", "fat-cnn", "v100", "--enforce-fit")
    assert code == 2 and "does not fit" in err
    code, _, _ = run(capsys, "--spec-path", fat, "solve", "fat-cnn", "v100")
    assert code == 0
    code, _, _ = run(capsys, "--spec-path", fat, "solve", "fat-cnn", "h100", "--enforce-fit")
    assert code == 0


def test_bad_arguments_exit_1(capsys):
    assert run(capsys, "solve", "resnet-50", "h100", "-b", "0")[0] == 1
    assert run(capsys, "solve", "resnet-50", "h100", "-b", "2.5")[0] == 1
    assert run(capsys, "solve", "resnet-50", "h100", "-e", "2")[0] == 1
    assert run(capsys, "solve", "resnet-50", "h100", "-p", "fp7")[0] == 1
    assert run(capsys, "solve", "resnet-50", "h10")[0] == 1
    assert run(capsys, "solve", "resnet-50", "h100", "--train", "--zero-stage", "5")[0] == 1


@pytest.mark.parametrize(("argv", "words"), [
    (["solve", "h100", "llama-3.1-8b"], "is a device"),                    # swapped
    (["solve", "specs/devices/h100-sxm.toml", "h100"], "device spec"),     # a device as workload
    (["solve", "llama-3.1-8b", "specs/workloads/resnet-50.toml"], "workload spec"),
    (["solve", "resnet-50", "h100", "-p", "fp7"], "Known precisions"),
    (["solve", "resnet-50", "h100", "-p", ""], "Unknown precision"),
    (["solve", "llama-3.1-8b", "h100", "--train", "--seq-len", "-5"], "seq_len"),
    (["solve", "llama-3.1-8b", "h100", "--train", "--seq-len", "0"], "seq_len"),
    (["solve", "llama-3.1-8b", "h100", "--zero-stage", "5"], "zero_stage"),
    (["solve", "llama-3.1-8b", "h100", "--dp-size", "0"], "dp_size"),
    (["solve", "llama-3.1-8b", "h100", "-e", "nan"], "efficiency"),
    (["solve", "llama-3.1-8b", "h100", "-e", "0"], "efficiency"),
    (["solve", "llama-3.1-8b", "h100", "-b", "x"], "invalid int"),
    (["solve", "llama-3.1-8b", "h100", "--cost-model", "nope"], "cost model"),
    (["solve", "resnet-50", "h100", "--cost-model", "roofline"], "generic workload"),
    (["solve", "llama-3.1-8b", "h100", "--cost-model", "roofline", "--train"], "training"),
    (["solve", "/no/such/file.toml", "h100"], "no such spec file"),
    (["solve", "llama-3.1-8b"], "required"),
    (["sweep", "h100", "llama-3.1-8b"], "is a device"),
    (["sweep", "resnet-50", "h100", "-b", "0"], ">= 1"),
    (["sweep", "resnet-50", "h100", "-b", "1,x"], "integers"),
    (["sweep", "resnet-50", "h100", "-p", ",,"], "names"),
    (["sweep", "resnet-50", "h100", "-p", "fp7"], "Unknown precision"),
    (["sweep", "resnet-50", "h100", "--where", "nope < 3"], "unknown column"),
    (["sweep", "resnet-50", "h100", "--pareto", "latency"], "two columns"),
    (["sweep", "resnet-50", "h100", "--tp", "2"], "tensor parallelism"),
    (["sweep", "resnet-50", "h100", "--kv-dtype", "fp8"], "--mode decode"),
    (["sweep", "llama-3.1-8b", "h100", "--mode", "decode", "-b", "99999999999999999999"],
     "at most 16,777,216"),
    (["sweep", "llama-3.1-8b", "h100", "--mode", "decode", "--kv-dtype", "fp7"],
     "Unknown precision"),
    (["sweep", "llama-3.1-8b", "h100", "--mode", "prefill", "--context", "0"], ">= 1"),
    (["sweep", "bert-base", "h100", "--mode", "decode"], "encoder"),
])
def test_every_bad_input_exits_1_with_a_message_not_a_traceback(capsys, argv, words):
    code, out, err = run(capsys, *argv)
    assert code == 1, (argv, out, err)
    assert words in err and "Traceback" not in err
    assert err.startswith(("roofkit:", "usage:"))


def test_engine_solve_refuses_unknown_keywords():
    from roofkit import Engine

    with pytest.raises(TypeError, match="'batch'"):
        Engine.solve("llama-3.1-8b", "h100", batch=32)
    with pytest.raises(TypeError, match="'batch'"):
        Engine.sweep("llama-3.1-8b", ["h100"], precisions=["fp8"], batch=[1])


def test_sweep_writes_csv(capsys):
    code, out, _ = run(capsys, "sweep", "resnet-50", "h100", "v100", "-b", "1,8,64", "-p",
                       "bf16,fp8", "--csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 12
    assert rows[0]["hardware"] == "h100-sxm" and rows[0]["batch_size"] == "1"
    assert {"latency_ms", "throughput_per_s", "energy_j", "bottleneck", "mfu"} <= set(rows[0])


def test_sweep_json_and_omitted(capsys, fat):
    code, out, _ = run(capsys, "--spec-path", fat, "sweep", "fat-cnn", "v100", "h100", "--json")
    assert code == 0
    data = json.loads(out)
    assert [r["hardware"] for r in data["rows"]] == ["h100-sxm"]
    assert data["omitted"][0]["hardware"] == "v100" and "32 GB" in data["omitted"][0]["reason"]


def test_sweep_table_mentions_omitted_configurations(capsys, fat):
    code, out, _ = run(capsys, "--spec-path", fat, "sweep", "fat-cnn", "v100", "h100")
    assert code == 0 and "do not fit" in out and "v100" in out
    code, out, _ = run(capsys, "--spec-path", fat, "sweep", "fat-cnn", "v100", "h100",
                       "--include-infeasible", "--csv")
    assert len(list(csv.DictReader(io.StringIO(out)))) == 2


def test_workloads_lists_generic_workloads_with_counts(capsys):
    code, out, _ = run(capsys, "workloads", "--json")
    assert code == 0
    rows = {r["name"]: r for r in json.loads(out)}
    assert rows["resnet-50"]["params"] == 25.6e6
    assert rows["resnet-50"]["flops"] == 8.2e9
    assert rows["resnet-50"]["flops_per"].startswith("image")
    code, out, _ = run(capsys, "workloads")
    assert code == 0 and "resnet-50" in out


def test_workloads_exits_1_naming_each_workload_it_could_not_derive(capsys, tmp_path,
                                                                     monkeypatch):
    from roofkit.engine import facts
    from roofkit.errors import RoofkitError

    real = facts._template_facts

    def broken(spec, registry):
        if spec.name == "mixtral-8x7b":
            raise RoofkitError("template 'moe' could not be built (a test fault)")
        return real(spec, registry)

    monkeypatch.setattr(facts, "_template_facts", broken)
    spec_dir = str(tmp_path)  # a fresh registry: nothing derived before the fault
    code, out, err = run(capsys, "--spec-path", spec_dir, "workloads")
    assert code == 1
    assert "resnet-50" in out and "llama-3.1-8b" in out  # the rest is still listed
    assert "1 workload(s) could not be derived" in err
    assert "mixtral-8x7b: template 'moe' could not be built (a test fault)" in err
    code, out, err = run(capsys, "--spec-path", spec_dir, "workloads", "--json")
    assert code == 1 and "mixtral-8x7b" in err
    rows = {r["name"]: r for r in json.loads(out)}
    assert rows["mixtral-8x7b"]["error"].startswith("template 'moe'")
    assert rows["llama-3.1-8b"]["params"] > 0


def test_solve_cost_model_routes_through_the_circuit(capsys):
    pytest.importorskip("roofkit.circuit.api")
    code, out, _ = run(capsys, "solve", "llama-3.1-8b", "h100", "-b", "8", "--cost-model",
                       "roofline", "--json")
    assert code == 0
    assert json.loads(out)["trace"][0].startswith("cost model 'roofline'")


def _doc_solve_commands():
    """Every ``roofkit solve`` example of the README and docs/engine.md (continuations
    joined), except those naming the reader's own files, with whether its comment says it
    does not fit."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    out = []
    for doc in (root / "README.md", root / "docs" / "engine.md"):
        text = doc.read_text().replace("\\\n", " ")
        for line in text.splitlines():
            line, _, comment = line.partition("#")
            line = line.strip()
            if line.startswith("roofkit solve ") and "~" not in line and "WORKLOAD" not in line:
                out.append((line.split()[2:], "does not fit" not in comment))
    return out


@pytest.mark.parametrize(("argv", "fits"), _doc_solve_commands(),
                         ids=[" ".join(a) for a, _ in _doc_solve_commands()])
def test_documented_solve_examples_run_and_fit_as_their_comment_says(capsys, argv, fits):
    code, out, err = run(capsys, "solve", *argv, *([] if "--json" in argv else ["--json"]))
    assert code == 0, err
    assert json.loads(out)["feasible"] is fits


def test_the_readme_training_example_needs_both_zero3_and_recomputation(capsys):
    argv = ["solve", "llama-3.1-70b", "h100", "-p", "bf16", "--train", "--seq-len", "4096",
            "--enforce-fit"]
    assert run(capsys, *argv, "--zero-stage", "3", "--dp-size", "32", "--recompute")[0] == 0
    assert run(capsys, *argv, "--zero-stage", "3", "--dp-size", "32")[0] == 2
    assert run(capsys, *argv, "--recompute")[0] == 2
