"""The three scenario kinds as Python objects: inputs, units, validation, variants, errors."""

from __future__ import annotations

import pickle

import attrs
import pint
import pytest

from roofkit import (
    CompileBreakevenScenario,
    GraphCaptureScenario,
    HostDispatchScenario,
    Q,
    RoofkitError,
    SpecError,
)

HOST = dict(ops_per_block=12, blocks=48, dispatch="10 us", launch="5 us",
            device_time="0.8955 ms")
COMPILE = dict(eager_rate="1450 1/s", compiled_rate="2150 1/s", compile_time="30 s")


def host(**changes):
    return HostDispatchScenario(**{**HOST, **changes})


def compile_(**changes):
    return CompileBreakevenScenario(**{**COMPILE, **changes})


# -- inputs and units --------------------------------------------------------------------

def test_quantities_strings_and_other_registries_give_the_same_scenario():
    other = pint.UnitRegistry()
    a = host()
    b = host(dispatch=Q(10, "us"), launch=Q(0.005, "ms"), device_time=Q(895.5, "us"))
    c = host(dispatch=other.Quantity(10, "microsecond"), device_time=other.Quantity(0.8955, "ms"))
    assert a == b == c


def test_inputs_are_stored_as_si_floats_and_shown_as_quantities():
    s = host()
    assert s._dispatch == 1e-05 and isinstance(s._dispatch, float)
    assert s._device_time == 0.0008955
    assert s.dispatch == Q(10, "us") and s.device_time.to("us").magnitude == 895.5
    c = compile_()
    assert c.eager_rate == Q(1450, "1/s") and c.compile_time == Q(30, "s")


def test_inputs_method_and_repr_name_every_input():
    s = host()
    assert list(s.inputs()) == ["ops_per_block", "blocks", "launches_per_block", "dispatch",
                                "launch", "device_time"]
    assert repr(s) == ("HostDispatchScenario(ops_per_block=12, blocks=48, launches_per_block="
                       "None, dispatch='10 us', launch='5 us', device_time='895.5 us')")


def test_defaults_blocks_one_and_one_launch_per_operation():
    s = HostDispatchScenario(ops_per_block=7, dispatch="10 us", launch="5 us",
                             device_time="1 ms")
    assert s.blocks == 1 and s.operations == 7 and s.launches == 7


def test_launches_per_block_overrides_one_per_operation():
    s = host(launches_per_block=3)
    assert s.launches == 3 * 48
    assert s.launch_time.to("us").magnitude == 3 * 48 * 5
    assert s.host_time.to("us").magnitude == 576 * 10 + 144 * 5


def test_scenarios_pickle_and_hash():
    s, c = host(), compile_(experiment_items=10, recompiles=1)
    assert pickle.loads(pickle.dumps(s)) == s and pickle.loads(pickle.dumps(c)) == c
    assert hash(s) == hash(host())


# -- variant -------------------------------------------------------------------------------

def test_variant_returns_a_modified_copy():
    s = host()
    v = s.variant(dispatch="2 us")
    assert v.host_time.to("us").magnitude == 576 * 2 + 576 * 5
    assert s.host_time.to("us").magnitude == 8640  # the original is unchanged
    assert s.variant() == s
    assert attrs.evolve(s, blocks=24).operations == 288


def test_variant_rejects_unknown_inputs_and_lists_the_known():
    with pytest.raises(SpecError, match="did you mean 'dispatch'") as exc:
        host().variant(dispach="2 us")
    assert "known inputs" in str(exc.value) and "device_time" in str(exc.value)


def test_variant_validates_like_the_constructor():
    with pytest.raises(SpecError, match="blocks: must be an integer >= 1"):
        host().variant(blocks=0)


# -- bad inputs ----------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "value", "message"), [
    ("ops_per_block", 0, "must be an integer >= 1, got 0"),
    ("ops_per_block", -3, "must be an integer >= 1"),
    ("ops_per_block", 1.5, "expected an integer, got 1.5"),
    ("ops_per_block", 12.0, "write 12"),
    ("ops_per_block", "12", "write 12 without quotes"),
    ("ops_per_block", True, "expected an integer, got True"),
    ("ops_per_block", None, "expected an integer, got None"),
    ("blocks", 0, "must be an integer >= 1"),
    ("launches_per_block", 0, "must be an integer >= 1"),
    ("dispatch", 10, "a bare number 10 has no unit"),
    ("dispatch", "10", "has no unit"),
    ("dispatch", "10 W", "is not a time"),
    ("dispatch", "10 TFLOPS", "write '10 TFLOP/s'"),
    ("dispatch", "ten us", "does not start with a number"),
    ("dispatch", "-1 us", "must be positive"),
    ("launch", "0 us", "must be positive"),
    ("device_time", Q(float("nan"), "us"), "must be positive and finite"),
    ("device_time", Q(1, "B"), "is not a time"),
    ("device_time", None, "expected a time"),
])
def test_each_bad_host_dispatch_input_is_named(name, value, message):
    with pytest.raises(SpecError, match="HostDispatchScenario: 1 bad input") as exc:
        host(**{name: value})
    assert exc.value.problems[0].startswith(f"{name}: ")
    assert message in exc.value.problems[0]


@pytest.mark.parametrize(("name", "value", "message"), [
    ("eager_rate", "1450", "has no unit"),
    ("eager_rate", "1450 s", "is not a rate"),
    ("compiled_rate", "0 1/s", "must be positive"),
    ("compile_time", "-30 s", "must be positive"),
    ("compile_time", 30, "a bare number 30 has no unit"),
    ("experiment_items", 0, "must be an integer >= 1"),
    ("recompiles", 0, "must be an integer >= 1"),
    ("recompiles", 2.5, "expected an integer"),
])
def test_each_bad_compile_breakeven_input_is_named(name, value, message):
    with pytest.raises(SpecError) as exc:
        compile_(**{name: value})
    assert exc.value.problems[0].startswith(f"{name}: ") and message in exc.value.problems[0]


def test_every_bad_input_is_reported_at_once():
    with pytest.raises(SpecError, match="3 bad input") as exc:
        host(ops_per_block=0, dispatch=10, device_time="1 GB")
    assert [p.split(":")[0] for p in exc.value.problems] == ["ops_per_block", "dispatch",
                                                             "device_time"]


def test_a_missing_required_input_names_it():
    with pytest.raises(TypeError, match="device_time"):
        HostDispatchScenario(ops_per_block=1, dispatch="1 us", launch="1 us")


# -- errors from derived attributes --------------------------------------------------------

@pytest.mark.parametrize("compiled", ["1450 1/s", "1000 1/s"])
def test_breakeven_without_a_positive_saving_says_compiling_cannot_repay(compiled):
    s = compile_(compiled_rate=compiled)
    assert s.saving_per_item.to("ms").magnitude <= 0  # the saving itself is reported
    with pytest.raises(SpecError, match="compiling never repays compile_time") as exc:
        s.breakeven_items  # noqa: B018
    assert "not above eager_rate 1450 1/s" in str(exc.value)


@pytest.mark.parametrize(("attribute", "missing"), [
    ("experiment_eager", "experiment_items"),
    ("experiment_compiled_running", "experiment_items"),
    ("experiment_compiled_total", "experiment_items and recompiles"),
    ("experiment_slowdown", "experiment_items and recompiles"),
])
def test_experiment_attributes_without_inputs_name_what_is_missing(attribute, missing):
    with pytest.raises(SpecError, match=f"{attribute} needs {missing}, which this scenario"):
        getattr(compile_(), attribute)


def test_experiment_total_without_recompiles_names_only_recompiles():
    s = compile_(experiment_items=10_000)
    assert s.experiment_eager.to("s").magnitude == pytest.approx(10_000 / 1450)
    with pytest.raises(SpecError, match="needs recompiles, which") as exc:
        s.experiment_compiled_total  # noqa: B018
    assert not isinstance(exc.value, TypeError) and isinstance(exc.value, RoofkitError)


def test_derived_and_to_dict_report_what_is_unavailable():
    s = compile_()
    assert "experiment_eager" not in s.derived()
    data = s.to_dict()
    assert data["derived"]["breakeven_items"] == pytest.approx(133_607.142857, rel=1e-9)
    assert data["inputs"]["eager_rate"] == {"value": 1450.0, "unit": "1/s"}
    assert set(data["unavailable"]) == {"experiment_eager", "experiment_compiled_running",
                                        "experiment_compiled_total", "experiment_slowdown"}


# -- graph capture -------------------------------------------------------------------------

def graph(**changes):
    return GraphCaptureScenario(**{**HOST, **changes})


def test_graph_capture_replaces_the_step_host_cost_with_one_launch():
    g = graph()
    assert g.host_time.to("us").magnitude == 8640  # the eager host time, as before
    assert g.graph_launch_cost.to("us").magnitude == 10 + 5  # default: dispatch + launch
    assert g.graph_host_time.to("us").magnitude == 15
    assert g.eager_step_time.to("us").magnitude == pytest.approx(8640 + 895.5)
    assert g.graph_step_time.to("us").magnitude == pytest.approx(15 + 895.5)
    assert g.step_saving.to("us").magnitude == 8640 - 15
    assert g.graph_overhead_ratio == pytest.approx(15 / 895.5)
    assert g.graph_speedup == pytest.approx((8640 + 895.5) / (15 + 895.5), rel=1e-12)
    assert g.speedup_limit == pytest.approx((8640 + 895.5) / 895.5, rel=1e-12)
    assert g.limit_attained == pytest.approx(895.5 / (15 + 895.5), rel=1e-12)


def test_graph_capture_with_its_own_launch_cost_several_graphs_and_a_capture_time():
    g = graph(graph_launch="4 us", graphs=3, capture_time="2 s")
    assert g.graph_host_time.to("us").magnitude == 12
    assert g.breakeven_steps == pytest.approx(2e6 / (8640 - 12), rel=1e-12)


def test_graph_capture_breakeven_needs_capture_time_and_a_saving():
    with pytest.raises(SpecError, match="breakeven_steps needs capture_time"):
        graph().breakeven_steps  # noqa: B018
    slow = graph(graph_launch="9 ms", capture_time="1 s")
    assert slow.graph_speedup < 1
    with pytest.raises(SpecError, match="capturing never repays"):
        slow.breakeven_steps  # noqa: B018


def test_graph_capture_validates_its_own_inputs():
    with pytest.raises(SpecError) as exc:
        graph(graph_launch="0 us", graphs=0)
    assert [p.split(":")[0] for p in exc.value.problems] == ["graph_launch", "graphs"]
