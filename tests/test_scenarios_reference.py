"""The scenario references' examples, verbatim with only the import changed, and the two
named scenarios checked attribute by attribute against hand arithmetic."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

import roofkit
import roofkit.registry

SPECS = Path(__file__).resolve().parents[1] / "specs"

HOST_DISPATCH_EXAMPLE = """
>>> from roofkit import Scenarios
>>> s = Scenarios.Gpt2XlEagerDecodeDispatch
>>> s.host_time == s.dispatch_time+s.launch_time
True
"""

COMPILE_BREAKEVEN_EXAMPLE = """
>>> from roofkit import Scenarios
>>> scenario = Scenarios.ResNet50CompileBreakeven
>>> round(float(scenario.eager_item_time.magnitude), 4)
0.6897
"""


@pytest.fixture(scope="module")
def reg():
    """A fresh registry: the builtin plugins with the builtin scenario catalogue only."""
    return roofkit.build_registry(entry_points=False, blocked=["roofkit_builtins.specs"],
                                  spec_paths=[SPECS / "scenarios"])


@pytest.fixture
def default_is_fresh(reg, monkeypatch):
    """``Scenarios`` resolves against the process default registry; point it at ours."""
    monkeypatch.setattr(roofkit.registry, "default_registry", lambda: reg)


def _run(text: str, name: str) -> doctest.TestResults:
    test = doctest.DocTestParser().get_doctest(text, {}, name, None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    return runner.summarize(verbose=False)


def test_host_dispatch_example(default_is_fresh):
    result = _run(HOST_DISPATCH_EXAMPLE, "HostDispatchScenario")
    assert result.failed == 0 and result.attempted == 3


def test_compile_breakeven_example(default_is_fresh):
    result = _run(COMPILE_BREAKEVEN_EXAMPLE, "CompileBreakevenScenario")
    assert result.failed == 0 and result.attempted == 3


def test_gpt2_xl_eager_decode_dispatch_by_hand(reg):
    s = reg.scenario("Gpt2XlEagerDecodeDispatch")
    # inputs: 12 ops per block, 48 blocks, one launch per op, 10 us, 5 us,
    # device time 1.5e9 params x 2 B / 3.35e12 B/s = 895.52 us, which the reference rounds
    # to 0.8955 ms
    device_us = 1.5e9 * 2 / 3.35e12 * 1e6
    assert round(device_us, 1) == 895.5
    assert s.device_time.to("us").magnitude == pytest.approx(895.5, rel=1e-15)
    assert s.operations == 12 * 48 == 576
    assert s.launches == 576
    assert s.per_op_cost.to("us").magnitude == 10 + 5
    assert s.dispatch_time.to("us").magnitude == 576 * 10 == 5760
    assert s.launch_time.to("us").magnitude == 576 * 5 == 2880
    assert s.host_time.to("us").magnitude == 5760 + 2880 == 8640
    assert str(s.host_time.units) == "µs"
    assert s.overhead_ratio == pytest.approx(8640 / 895.5, rel=1e-12)
    assert round(s.overhead_ratio, 3) == 9.648
    assert s.launch_ratio == pytest.approx(2880 / 895.5, rel=1e-12)
    assert s.host_share == pytest.approx(8640 / (8640 + 895.5), rel=1e-12)
    assert s.speedup_limit == pytest.approx((8640 + 895.5) / 895.5, rel=1e-12)


def test_resnet50_compile_breakeven_by_hand(reg):
    s = reg.scenario("ResNet50CompileBreakeven")
    eager_ms, compiled_ms = 1000 / 1450, 1000 / 2150
    assert s.eager_item_time.to("ms").magnitude == pytest.approx(eager_ms, rel=1e-15)
    assert str(s.eager_item_time.units) == "ms"
    assert s.compiled_item_time.to("ms").magnitude == pytest.approx(compiled_ms, rel=1e-15)
    assert s.saving_per_item.to("ms").magnitude == pytest.approx(eager_ms - compiled_ms)
    # 30 s / (1/1450 - 1/2150) s = 30 * 1450 * 2150 / 700 = 133,607.14...
    assert s.breakeven_items == pytest.approx(30 * 1450 * 2150 / 700, rel=1e-12)
    assert round(s.breakeven_items) == 133_607
    assert s.speedup == pytest.approx(2150 / 1450, rel=1e-15)
    assert s.experiment_eager.to("s").magnitude == pytest.approx(10_000 / 1450, rel=1e-15)
    assert str(s.experiment_eager.units) == "s"
    assert s.experiment_compiled_running.to("s").magnitude == pytest.approx(10_000 / 2150)
    total = 10 * 30 + 10_000 / 2150
    assert s.experiment_compiled_total.to("s").magnitude == pytest.approx(total, rel=1e-15)
    assert s.experiment_slowdown == pytest.approx(total / (10_000 / 1450), rel=1e-12)


def test_scenarios_namespace_lists_the_catalogue(default_is_fresh):
    from roofkit import Scenarios

    names = dir(Scenarios)
    assert "Gpt2XlEagerDecodeDispatch" in names and "ResNet50CompileBreakeven" in names
    with pytest.raises(AttributeError, match="Gpt2XlEagerDecodeDispatch"):
        Scenarios.Gpt2XlEagerDecode  # noqa: B018 - the lookup is the test
