"""``roofkit scenarios`` and ``roofkit scenario``: listing, evaluation, --set, --kind, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import roofkit
import roofkit.cli.common
from roofkit.cli import main

SPECS = Path(__file__).resolve().parents[1] / "specs"
HOST_INPUTS = ["ops_per_block", "blocks", "launches_per_block", "dispatch", "launch",
               "device_time"]


@pytest.fixture(scope="module")
def reg():
    return roofkit.build_registry(entry_points=False, blocked=["roofkit_builtins.specs"],
                                  spec_paths=[SPECS / "scenarios"])


@pytest.fixture(autouse=True)
def cli_registry(reg, monkeypatch):
    """The CLI resolves a fresh registry holding the builtin scenario catalogue."""
    monkeypatch.setattr(roofkit.cli.common, "registry", lambda args: reg)


def run_json(capsys, *argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_scenario_json_for_gpt2_xl(capsys):
    data = run_json(capsys, "scenario", "Gpt2XlEagerDecodeDispatch")
    assert data["name"] == "Gpt2XlEagerDecodeDispatch" and data["kind"] == "host_dispatch"
    assert data["derived"]["host_time"] == {"value": 8640.0, "unit": "us"}
    assert data["derived"]["overhead_ratio"] == pytest.approx(9.648, abs=5e-4)
    assert data["inputs"]["device_time"] == {"value": 895.5, "unit": "us"}
    assert data["inputs"]["ops_per_block"] == 12
    assert data["inputs"]["launches_per_block"] is None
    assert set(data["derived"]) == set(roofkit.HostDispatchScenario.derived_names)
    assert data["provenance"]["inputs.blocks"].startswith("gpt2_config")


def test_scenario_json_for_resnet50(capsys):
    data = run_json(capsys, "scenario", "ResNet50CompileBreakeven")
    assert data["derived"]["breakeven_items"] == pytest.approx(133_607, abs=1)
    assert data["derived"]["eager_item_time"]["unit"] == "ms"
    assert data["derived"]["experiment_compiled_total"]["unit"] == "s"
    assert data["unavailable"] == {}


def test_scenario_text_prints_every_input_and_derived_attribute(capsys):
    assert main(["scenario", "Gpt2XlEagerDecodeDispatch"]) == 0
    out = capsys.readouterr().out
    for name in [*HOST_INPUTS, *roofkit.HostDispatchScenario.derived_names]:
        assert f"  {name} " in out
    assert "8640 us" in out and "9.64824" in out and "895.5 us" in out


def test_unavailable_attributes_say_why(capsys):
    assert main(["scenario", "Llama32FinetuneCompileBreakeven"]) == 0
    out = capsys.readouterr().out
    assert "n/a" in out and "needs experiment_items" in out
    data = run_json(capsys, "scenario", "Llama32FinetuneCompileBreakeven")
    assert "experiment_eager" in data["unavailable"]
    assert data["derived"]["breakeven_items"] == pytest.approx(20 / (1 / 7075 - 1 / 8998))


def test_set_changes_an_input_of_a_named_scenario(capsys):
    data = run_json(capsys, "scenario", "Gpt2XlEagerDecodeDispatch", "--set", "dispatch=2 us",
                    "--set", "launches_per_block=6")
    assert data["derived"]["host_time"] == {"value": 576 * 2 + 48 * 6 * 5, "unit": "us"}
    assert data["set"] == ["dispatch", "launches_per_block"]


def test_kind_evaluates_an_unnamed_scenario(capsys):
    data = run_json(capsys, "scenario", "--kind", "host_dispatch", "--set", "ops_per_block=12",
                    "--set", "blocks=48", "--set", "dispatch=10 us", "--set", "launch=5 us",
                    "--set", "device_time=0.8955 ms")
    assert data["name"] is None and data["kind"] == "host_dispatch"
    assert data["derived"]["host_time"] == {"value": 8640.0, "unit": "us"}
    assert main(["scenario", "--kind", "graph_capture", "--set", "ops_per_block=12",
                 "--set", "dispatch=10 us", "--set", "launch=5 us",
                 "--set", "device_time=1 ms"]) == 0
    assert "graph_speedup" in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "message"), [
    (["Gpt2XlEagerDecodeDispatch", "--set", "dispach=2 us"], "did you mean 'dispatch'"),
    (["Gpt2XlEagerDecodeDispatch", "--set", "dispatch=2"], "dispatch: '2' has no unit"),
    (["Gpt2XlEagerDecodeDispatch", "--set", "dispatch=2 GB"], "is not a time"),
    (["Gpt2XlEagerDecodeDispatch", "--set", "blocks=x"], "blocks takes an integer"),
    (["Gpt2XlEagerDecodeDispatch", "--set", "blocks=0"], "must be an integer >= 1"),
    (["Gpt2XlEagerDecodeDispatch", "--set", "blocks"], "write KEY=VALUE"),
    (["--kind", "host_dispatch", "--set", "ops_per_block=3"],
     "needs --set for dispatch, launch, device_time"),
])
def test_bad_keys_and_values_exit_1_listing_the_known_inputs(capsys, argv, message):
    assert main(["scenario", *argv]) == 1
    err = capsys.readouterr().err
    assert message in err and "known inputs:" in err
    for name in HOST_INPUTS:
        assert name in err


@pytest.mark.parametrize(("argv", "message"), [
    (["NoSuchScenario"], "Unknown scenario 'NoSuchScenario'"),
    (["Gpt2XlEager"], "Did you mean 'Gpt2XlEagerDecodeDispatch'"),
    (["--kind", "host_dispach"], "Did you mean 'host_dispatch'"),
    (["Gpt2XlEagerDecodeDispatch", "--kind", "host_dispatch"], "not both"),
    ([], "name a scenario"),
])
def test_bad_names_exit_1(capsys, argv, message):
    assert main(["scenario", *argv]) == 1
    assert message in capsys.readouterr().err


def test_scenarios_lists_the_catalogue_and_the_kinds(capsys):
    assert main(["scenarios"]) == 0
    out = capsys.readouterr().out
    assert "Gpt2XlEagerDecodeDispatch" in out and "graph_capture" in out
    data = run_json(capsys, "scenarios")
    names = {row["name"] for row in data}
    assert {"Gpt2XlEagerDecodeDispatch", "ResNet50CompileBreakeven"} <= names
    only = run_json(capsys, "scenarios", "--kind", "compile_breakeven")
    assert {row["kind"] for row in only} == {"compile_breakeven"}
