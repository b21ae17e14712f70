"""Invariants of the scenario kinds over their whole input space (hypothesis)."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from roofkit import CompileBreakevenScenario, GraphCaptureScenario, HostDispatchScenario, Q

counts = st.integers(min_value=1, max_value=1000)
micros = st.floats(min_value=1e-3, max_value=1e4, allow_nan=False, allow_infinity=False)
device = st.floats(min_value=1e-2, max_value=1e7, allow_nan=False, allow_infinity=False)
rates = st.floats(min_value=1e-2, max_value=1e6, allow_nan=False, allow_infinity=False)


@st.composite
def host_dispatch(draw, cls=HostDispatchScenario, **extra):
    return cls(ops_per_block=draw(counts), blocks=draw(counts),
               launches_per_block=draw(st.none() | counts),
               dispatch=Q(draw(micros), "us"), launch=Q(draw(micros), "us"),
               device_time=Q(draw(device), "us"), **extra)


@settings(max_examples=200)
@given(host_dispatch())
def test_host_share_is_strictly_between_zero_and_one(s):
    assert 0 < s.host_share < 1


@settings(max_examples=200)
@given(host_dispatch())
def test_speedup_limit_is_one_plus_overhead_ratio(s):
    assert math.isclose(s.speedup_limit, 1 + s.overhead_ratio, rel_tol=1e-12)


@given(host_dispatch())
def test_host_time_is_dispatch_time_plus_launch_time(s):
    assert s.host_time == s.dispatch_time + s.launch_time
    assert math.isclose(s.overhead_ratio, s.host_time / s.device_time, rel_tol=1e-12)


@given(host_dispatch())
def test_variant_without_changes_is_equal(s):
    assert s.variant() == s


@settings(max_examples=200)
@given(rates, st.floats(min_value=1e-3, max_value=100), st.floats(min_value=1e-2, max_value=1e5))
def test_breakeven_items_times_saving_per_item_is_compile_time(eager, gain, compile_s):
    s = CompileBreakevenScenario(eager_rate=Q(eager, "1/s"),
                                 compiled_rate=Q(eager * (1 + gain), "1/s"),
                                 compile_time=Q(compile_s, "s"))
    repaid = (s.breakeven_items * s.saving_per_item).to("s").magnitude
    assert math.isclose(repaid, s.compile_time.to("s").magnitude, rel_tol=1e-9)
    assert math.isclose(s.speedup, 1 + gain, rel_tol=1e-9)


@given(rates, rates, st.floats(min_value=1e-2, max_value=1e5), counts, counts)
def test_experiment_total_is_running_plus_one_compile_per_change(eager, compiled, compile_s,
                                                                  items, recompiles):
    s = CompileBreakevenScenario(eager_rate=Q(eager, "1/s"), compiled_rate=Q(compiled, "1/s"),
                                 compile_time=Q(compile_s, "s"), experiment_items=items,
                                 recompiles=recompiles)
    total = s.experiment_compiled_total.to("s").magnitude
    expected = recompiles * compile_s + s.experiment_compiled_running.to("s").magnitude
    assert math.isclose(total, expected, rel_tol=1e-9)
    assert math.isclose(s.experiment_slowdown, total / s.experiment_eager.to("s").magnitude,
                        rel_tol=1e-9)


@settings(max_examples=200)
@given(host_dispatch(GraphCaptureScenario))
def test_one_graph_launch_never_beats_the_eager_ceiling(g):
    assert g.graph_speedup <= g.speedup_limit * (1 + 1e-12)
    assert 0 < g.limit_attained <= 1 + 1e-12
    assert math.isclose(g.graph_step_time.to("us").magnitude,
                        g.graph_host_time.to("us").magnitude + g.device_time.to("us").magnitude,
                        rel_tol=1e-12)
