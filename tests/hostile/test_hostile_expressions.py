"""Hostile expressions and costs: let chains that grow exponentially are refused when the
spec loads; a rule or a plugin cost model that gives a negative, non-finite or non-number
cost is refused when a plan compiles, naming the rule, node and workload (or the plugin)."""

from __future__ import annotations

import ast
import math
import re
import time
from pathlib import Path

import attrs
import pytest

from roofkit import CostModel, hookimpl
from roofkit.catalogue import check_paths
from roofkit.circuit import expr
from roofkit.circuit.model import build_model
from roofkit.circuit.plan import build_plan
from roofkit.circuit.roofline import device_roofline
from roofkit.errors import PluginError, RoofkitError, SpecError
from roofkit.testing import make_registry

SPECS = Path(__file__).parents[2] / "specs"


def _doubling_rule(lets: int) -> str:
    """rms_norm's rule with ``l_i = l_{i-1} + l_{i-1}``: 2**lets nodes once inlined."""
    text = (SPECS / "ops" / "rms_norm.toml").read_text()
    chain = "\n".join(["[decode.let]", "l0 = \"width\""] +
                      [f"l{i} = \"l{i - 1} + l{i - 1}\"" for i in range(1, lets + 1)])
    text = text.replace("[decode]\n", f"{chain}\n\n[decode]\n", 1)
    text = text.replace('flops = "4 * rows * groups * width"', f'flops = "rows * l{lets}"', 1)
    return text  # _check marks it as replacing the shipped rule


def _check(registry, tmp_path, kind, name, text):
    folder = tmp_path / kind
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(_overriding(text))
    tables = {**registry._tables, **registry.catalogues}
    return check_paths([str(tmp_path)], registry.converter, tables, registry.spec_layers)[1]


@pytest.mark.parametrize("lets", [24, 60, 250])
def test_a_doubling_let_chain_is_refused_when_it_loads(registry, tmp_path, lets):
    start = time.perf_counter()
    problems = _check(registry, tmp_path, "ops", "rms_norm.toml", _doubling_rule(lets))
    assert time.perf_counter() - start < 30  # measured, not built: never minutes
    hits = [p for p in problems if (p.key or "").startswith("decode.let.l")]
    assert hits, [str(p) for p in problems]
    assert "nodes (the limit is" in hits[0].message or "levels deep" in hits[0].message
    assert len(problems) == 1  # one located error, not one per let


def test_a_short_let_chain_still_loads(registry, tmp_path):
    assert _check(registry, tmp_path, "ops", "rms_norm.toml", _doubling_rule(8)) == []


def test_a_long_linear_let_chain_is_refused_by_depth_not_a_syntax_error(registry, tmp_path):
    text = (SPECS / "ops" / "rms_norm.toml").read_text()
    chain = "\n".join(["[decode.let]", "l0 = \"width\""] +
                      [f"l{i} = \"l{i - 1} + 1\"" for i in range(1, 251)])
    text = text.replace("[decode]\n", f"{chain}\n\n[decode]\n", 1)
    text = text.replace('flops = "4 * rows * groups * width"', 'flops = "rows * l250"', 1)
    problems = _check(registry, tmp_path, "ops", "rms_norm.toml", text)
    assert [p.key for p in problems] == [f"decode.let.l{expr.MAX_INLINED_DEPTH}"], \
        [str(p) for p in problems]
    assert "levels deep" in problems[0].message


def test_substitute_measures_before_it_builds():
    tree = expr.parse("x").body
    for _ in range(16):  # 2**16 nodes if built
        try:
            tree = expr.substitute(expr.parse("y + y").body, {"y": tree})
        except expr.ExprError as exc:
            assert "nodes (the limit is" in str(exc)
            break
    else:
        pytest.fail("a doubling chain of 16 substitutions was built")
    nodes, _ = expr.shape(tree)
    assert nodes <= expr.MAX_NODES


def test_shape_counts_a_tree_as_ast_walk_does():
    body = expr.parse("min(a, 2 * b) + ceil(c / 3) ** 2").body
    counted = sum(1 for n in ast.walk(body)
                  if not isinstance(n, ast.expr_context | ast.operator | ast.unaryop))
    assert expr.shape(body)[0] == counted


# -- costs checked when a plan compiles -------------------------------------------------

def _plan(registry, edit_rule=None, cost_model="roofline", origin=""):
    model = build_model("llama-3.1-8b", registry)
    if edit_rule is not None:
        rules = dict(model.rules)
        rules["linear"] = edit_rule(rules["linear"])
        model = attrs.evolve(model, rules=rules, compiled={})
    roof = device_roofline(registry.device("h100-sxm"), "datasheet", registry)
    return build_plan(model, roof, registry.cost_model(cost_model), "decode", origin=origin)


def test_a_rule_that_goes_negative_is_refused_naming_rule_node_and_workload(registry):
    def negative(rule):
        return attrs.evolve(rule, decode=attrs.evolve(rule.decode,
                                                      weight_bytes="0 - (k*n)*w_bytes"))
    with pytest.raises(SpecError) as info:
        _plan(registry, negative)
    text = str(info.value)
    assert "llama-3.1-8b" in text and "op rule 'linear'" in text
    assert "decode.weight_bytes" in text and "node '" in text and ">= 0" in text


def test_a_rule_that_goes_negative_only_at_a_long_context_is_refused(registry):
    def negative(rule):
        return attrs.evolve(rule, decode=attrs.evolve(rule.decode,
                                                      act_bytes="1e6 - context * 1e3"))
    with pytest.raises(SpecError, match=r"decode\.act_bytes"):
        _plan(registry, negative)


def test_the_shipped_rules_compile_for_a_shipped_workload(registry):
    assert _plan(registry).nodes


class _Bad:
    """A plugin whose cost model returns ``value`` (or ``value(flops)``) as every node's
    time; one registry serves every value."""

    value = None

    @hookimpl
    def roofkit_register_cost_models(self):
        def node_time(flops, nbytes, peak, bandwidth, launch=0.0):
            return self.value(flops) if callable(self.value) else self.value
        return [CostModel("hostile", node_time, "returns a hostile time")]


@pytest.fixture(scope="module")
def bad():
    plugin = _Bad()
    return plugin, make_registry(plugin)


@pytest.mark.parametrize("value", [-1e-3, math.nan, math.inf, "1 ms", 1e-3 + 1j, None,
                                   lambda f: -f, lambda f: f * float("nan")],
                         ids=["negative", "nan", "inf", "string", "complex", "none",
                              "negative-array", "nan-array"])
def test_a_plugin_cost_model_with_a_bad_time_is_refused_naming_the_plugin(bad, value):
    plugin, reg = bad
    plugin.value = value
    origin = reg._tables["cost_models"]["hostile"][0]
    with pytest.raises(PluginError) as info:
        _plan(reg, cost_model="hostile", origin=origin)
    assert "cost model 'hostile'" in str(info.value) and origin in str(info.value)


def test_a_plugin_cost_model_that_raises_is_named(bad):
    def boom(flops):
        raise ZeroDivisionError("boom")
    plugin, reg = bad
    plugin.value = boom
    with pytest.raises(PluginError, match=r"cost model 'hostile'.*ZeroDivisionError"):
        _plan(reg, cost_model="hostile")


def test_the_public_decode_refuses_a_bad_plugin_time(bad):
    import roofkit

    plugin, reg = bad
    plugin.value = -1.0
    with pytest.raises(RoofkitError, match="cost model 'hostile'"):
        roofkit.decode("llama-3.1-8b", "h100-sxm", batch=1, context=100,
                       cost_model="hostile", registry=reg)


def test_check_refuses_a_rule_that_goes_negative_on_a_workload(registry):
    from roofkit.circuit.validate import workload_problems

    tables = {**registry._tables, **registry.catalogues}
    ops = {k: registry.catalogues["ops"][k] for k in registry.catalogues["ops"]}
    rule = ops["linear"]
    ops["linear"] = attrs.evolve(rule, decode=attrs.evolve(rule.decode,
                                                           weight_bytes="0 - (k*n)*w_bytes"))
    tables["ops"] = ops
    problems = workload_problems(registry.workload("llama-3.1-8b"), tables)
    assert any("op rule 'linear' decode.weight_bytes is negative" in m for _, m in problems), \
        problems


def _overriding(text: str) -> str:
    """``text`` replacing the shipped spec of its name (``overrides``), so checking it beside
    the catalogue reports its own problems, not the collision."""
    if re.search(r"^overrides\s*=", text, re.M):
        return text  # it says so already
    name = re.search(r'^name = "([^"]+)"', text, re.M).group(1)
    return f'overrides = "{name}"\n' + text
