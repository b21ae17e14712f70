"""roofkit: predict how ML workloads perform on hardware from first principles.

The top package stays light: heavy pieces (pint, numpy, solvers) load on first use.
"""

from __future__ import annotations

import importlib
import importlib.util

from .errors import ArgumentError, OOMError, PluginError, RoofkitError, SpecError, UnknownNameError
from .hookspecs import hookimpl, hookspec
from .types import CollectiveAlgorithm, CostModel, OpKind, Precision, ScenarioKind

__version__ = "0.1.0"

# public name -> "module:attribute", imported on first access
_LAZY = {
    "build_registry": "roofkit.registry:build_registry",
    "default_registry": "roofkit.registry:default_registry",
    "Registry": "roofkit.registry:Registry",
    "Hardware": "roofkit.namespaces:Hardware",
    "Models": "roofkit.namespaces:Models",
    "Scenarios": "roofkit.namespaces:Scenarios",
    "Q": "roofkit.units:Q",
    "Engine": "roofkit.engine:Engine",
    "PerformanceProfile": "roofkit.engine:PerformanceProfile",
    "HostDispatchScenario": "roofkit.scenarios:HostDispatchScenario",
    "CompileBreakevenScenario": "roofkit.scenarios:CompileBreakevenScenario",
    "GraphCaptureScenario": "roofkit.scenarios:GraphCaptureScenario",
    "decode": "roofkit.circuit.api:decode",
    "prefill": "roofkit.circuit.api:prefill",
    "footprint": "roofkit.circuit.api:footprint",
    "fits": "roofkit.circuit.api:fits",
    "serve": "roofkit.serving:serve",
    "sweep": "roofkit.sweep:sweep",
    "ureg": "roofkit.units:ureg",
    "train": "roofkit.fleet.training:train",
    "search_layouts": "roofkit.fleet.search:search_layouts",
    "simulate": "roofkit.load:simulate",
    "plan": "roofkit.load:plan",
    "precision_from_hf": "roofkit.quantization:precision_from_hf",
    "workload_from_hf": "roofkit.importers:workload_from_hf",
}

__all__ = [
    "CollectiveAlgorithm", "CostModel", "OOMError", "OpKind", "PluginError", "Precision",
    "RoofkitError",
    "ScenarioKind", "SpecError", "UnknownNameError", "__version__", "hookimpl", "hookspec",
    *_LAZY,
    "ArgumentError",
]


def __getattr__(name: str):
    target = _LAZY.get(name)
    if target is None:
        # a subpackage the README names (roofkit.serving.validate(), roofkit.fleet...)
        # works after a plain ``import roofkit``, as after ``import roofkit.serving``
        if not name.startswith("_") and importlib.util.find_spec(f"roofkit.{name}"):
            return importlib.import_module(f"roofkit.{name}")
        raise AttributeError(f"module 'roofkit' has no attribute {name!r}")
    mod, attr = target.split(":")
    value = getattr(importlib.import_module(mod), attr)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
