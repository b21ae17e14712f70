"""``roofkit solve``, ``roofkit sweep`` and ``roofkit workloads``."""

from __future__ import annotations

import csv
import io
import json

import pytest

from roofkit.cli import main
from roofkit.testing import write_spec

SOLVE_KEYS = {"latency_ms", "latency_compute_ms", "latency_memory_ms", "latency_overhead_ms",
              "throughput_per_s", "energy_j", "memory_footprint_bytes", "bottleneck",
              "feasible", "mfu", "hfu", "trace", "basis"}


def run(capsys, *argv):
    try:
        code = main(["--no-plugins", *argv])
    except SystemExit as exc:  # argparse refusals
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


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


def test_solve_cost_model_routes_through_the_circuit(capsys):
    pytest.importorskip("roofkit.circuit.api")
    code, out, _ = run(capsys, "solve", "llama-3.1-8b", "h100", "-b", "8", "--cost-model",
                       "roofline", "--json")
    assert code == 0
    assert json.loads(out)["trace"][0].startswith("cost model 'roofline'")
