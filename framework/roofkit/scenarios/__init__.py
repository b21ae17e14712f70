"""Scenarios: small analytical what-if models with named inputs (host dispatch overhead,
compile breakeven, graph capture), kept as TOML specs and registered as plugin kinds.

``Scenarios.Gpt2XlEagerDecodeDispatch`` (or ``registry.scenario("…")``) builds a named one;
``HostDispatchScenario(ops_per_block=12, dispatch="10 us", …)`` an unnamed one;
``.variant(dispatch="2 us")`` a what-if copy.
"""

from __future__ import annotations

from .base import (
    Scenario,
    SIValue,
    convert_inputs,
    count_input,
    input_fields,
    quantity_input,
    scenario_class,
)
from .compile_breakeven import CompileBreakevenScenario
from .graph_capture import GraphCaptureScenario
from .host_dispatch import HostDispatchScenario
from .resolve import instantiate, resolve_scenario, scenario_spec
from .spec import ScenarioSpec, build, check

__all__ = [
    "CompileBreakevenScenario", "GraphCaptureScenario", "HostDispatchScenario", "SIValue",
    "Scenario", "ScenarioSpec", "build", "check", "convert_inputs", "count_input",
    "input_fields", "instantiate", "quantity_input", "resolve_scenario", "scenario_class",
    "scenario_spec",
]
