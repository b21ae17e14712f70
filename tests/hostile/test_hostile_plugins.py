"""Plugins that misbehave are named in the error: a cost model that raises or returns the
wrong type, a hook whose generator raises, a hook of the wrong signature, a hook or an
import that calls ``sys.exit``, a scenario input of an unsupported dimension. No traceback,
no silent exit, no wrong number."""

from __future__ import annotations

import sys
import textwrap

import pytest
from deadline import deadline
from hostile_run import kept_promises, run_script

import roofkit
from roofkit import CostModel, PluginError, Precision, RoofkitError, hookimpl

W, D = "llama-3.1-8b", "h100"


@pytest.fixture(autouse=True)
def _deadline():
    with deadline(60):
        yield


def _registry(plugin):
    return roofkit.build_registry(entry_points=False, plugins=[plugin])


def _cost_plugin(name, node_time):
    cls = type(name, (), {"roofkit_register_cost_models": hookimpl(
        lambda self: [CostModel(name.lower(), node_time)])})
    return cls()


def _raises(*args, **kwargs):
    raise RuntimeError("the vendor library is missing")


@pytest.mark.parametrize(("plugin_name", "node_time"), [
    ("RaisingCost", _raises),
    ("StringCost", lambda f, b, p, bw, launch=0.0: "fast"),
    ("NoneCost", lambda f, b, p, bw, launch=0.0: None),
    ("ComplexCost", lambda f, b, p, bw, launch=0.0: complex(1e-6, 1.0)),
])
def test_a_cost_model_that_raises_or_returns_the_wrong_type_is_named(plugin_name, node_time):
    reg = _registry(_cost_plugin(plugin_name, node_time))
    with pytest.raises(RoofkitError) as info:
        roofkit.decode(W, D, cost_model=plugin_name.lower(), registry=reg)
    assert f"{plugin_name}-0" in str(info.value)  # the plugin, by its registered name
    assert plugin_name.lower() in str(info.value)  # and the cost model


def test_a_cost_model_that_raises_is_named_in_a_sweep_too():
    reg = _registry(_cost_plugin("RaisingCost", _raises))
    with pytest.raises(PluginError, match="RaisingCost-0"):
        roofkit.sweep(W, [D], batch_sizes=[1, 2], mode="decode", cost_model="raisingcost",
                      registry=reg)


class GeneratorRaises:
    @hookimpl
    def roofkit_register_precisions(self):
        yield Precision("fp5", bits=5, slot="fp8")
        raise KeyError("half-way through")


class ReturnsANumber:
    @hookimpl
    def roofkit_register_precisions(self):
        return 5


class Exits:
    @hookimpl
    def roofkit_register_op_kinds(self):
        sys.exit(3)


class WrongSignature:
    @hookimpl
    def roofkit_register_precisions(self, device):
        return []


@pytest.mark.parametrize(("plugin", "words"), [
    (GeneratorRaises(), "failed in roofkit_register_precisions while its result was read: "
                        "KeyError"),
    (ReturnsANumber(), "must return an iterable of objects, got int"),
    (Exits(), "called sys.exit(3)"),
    (WrongSignature(), "does not match its hookspec"),
])
def test_a_misbehaving_hook_is_a_plugin_error_naming_the_plugin(plugin, words):
    with pytest.raises(PluginError) as info:
        _registry(plugin)
    assert f"{type(plugin).__name__}-0" in str(info.value)
    assert words in str(info.value)


def test_a_scenario_input_of_an_unsupported_dimension_names_its_module(tmp_path, monkeypatch):
    (tmp_path / "bytes_scenario_plugin.py").write_text(textwrap.dedent('''
        from roofkit.scenarios.base import Scenario, quantity_input, scenario_class

        @scenario_class
        class CopyScenario(Scenario):
            derived_names = ()
            _size: float = quantity_input("information", "B")
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(PluginError) as info:
        roofkit.build_registry(entry_points=False, plugins=["bytes_scenario_plugin"])
    text = str(info.value)
    assert "bytes_scenario_plugin" in text and "unknown dimension 'information'" in text
    assert "'time' or 'rate'" in text


def _installed(tmp_path, name: str, body: str):
    """A plugin distribution on ``tmp_path``: a module and a dist-info with its entry point,
    found by importlib.metadata as an installed package is (no pip needed)."""
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(body))
    info = tmp_path / f"{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[roofkit.plugins]\n{name} = {name}\n")
    return {"PYTHONPATH": str(tmp_path), "ROOFKIT_CACHE_DIR": str(tmp_path / "cache")}


@pytest.mark.parametrize(("body", "words"), [
    ("""
     import sys
     from roofkit import hookimpl

     @hookimpl
     def roofkit_register_op_kinds():
         sys.exit(3)
     """, "called sys.exit(3)"),
    ("import sys\nsys.exit(3)\n", "failed to load: it called sys.exit(3)"),
    ("import roofkit_no_such_dependency\n", "failed to load: ModuleNotFoundError"),
    ("""
     from roofkit import hookimpl

     @hookimpl
     def roofkit_register_precisions(registry):
         return []
     """, "does not match its hookspec"),
])
def test_the_cli_names_an_installed_plugin_that_exits_or_breaks(tmp_path, body, words):
    env = _installed(tmp_path, "misbehaving_plugin", body)
    o = run_script("devices", "--json", env=env)
    error = kept_promises(o, json_mode=True)
    assert o.code == 1 and error["kind"] == "plugin"
    assert "misbehaving_plugin" in error["message"] and words in error["message"]
    assert "ROOFKIT_BLOCKED_PLUGINS" in error["hint"]
    o = run_script("devices", "--no-plugins", env=env)  # the way out the hint names
    assert o.code == 0 and "h100-sxm" in o.out
