"""Builtin scenario kinds: host dispatch, compile breakeven and graph capture.

Registered through ``roofkit_register_scenario_kinds``, the hook a third party uses to add
its own kind; a spec selects one with ``kind = "host_dispatch"``.
"""

from roofkit import (
    CompileBreakevenScenario,
    GraphCaptureScenario,
    HostDispatchScenario,
    ScenarioKind,
    hookimpl,
)

SCENARIO_KINDS = (
    ScenarioKind("host_dispatch", HostDispatchScenario, HostDispatchScenario.derived_names,
                 "host dispatch and kernel-launch overhead of an eager step against its "
                 "device time"),
    ScenarioKind("compile_breakeven", CompileBreakevenScenario,
                 CompileBreakevenScenario.derived_names,
                 "eager against compiled execution: the items that repay the compile time"),
    ScenarioKind("graph_capture", GraphCaptureScenario, GraphCaptureScenario.derived_names,
                 "an eager step against the same step replayed from one captured graph"),
)


@hookimpl
def roofkit_register_scenario_kinds():
    return SCENARIO_KINDS
