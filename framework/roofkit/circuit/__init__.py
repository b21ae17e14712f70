"""Circuits: per-node roofline estimates of decode, prefill and memory fit.

A template workload lowers through its circuit template (``specs/circuits``) into a
:class:`~roofkit.circuit.ir.Circuit` of nodes; each node's op kind has a cost rule
(``specs/ops``) whose expressions give FLOPs and bytes; a registered cost model turns
them into time on a device roofline whose basis is named.

Modules: ``expr`` (the expression language), ``spec`` (template and rule specs and their
checks), ``template`` (merging and lowering), ``ir``, ``formats`` (the precision table),
``roofline`` (device constants and basis), ``model`` (a lowered, prepared workload),
``plan`` (compiled per device), ``results``, ``stats`` (params and FLOPs), ``api``.
"""

from __future__ import annotations

import importlib

_LAZY = {
    "decode": "roofkit.circuit.api", "prefill": "roofkit.circuit.api",
    "footprint": "roofkit.circuit.api", "fits": "roofkit.circuit.api",
    "workload_stats": "roofkit.circuit.stats", "WorkloadStats": "roofkit.circuit.stats",
    "DeviceRoofline": "roofkit.circuit.roofline", "device_roofline": "roofkit.circuit.roofline",
    "build_model": "roofkit.circuit.model", "rule_cost": "roofkit.circuit.model",
    "Circuit": "roofkit.circuit.ir", "Node": "roofkit.circuit.ir", "Edge": "roofkit.circuit.ir",
    "Estimate": "roofkit.circuit.results", "Footprint": "roofkit.circuit.results",
    "Fit": "roofkit.circuit.results", "NodeCost": "roofkit.circuit.results",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'roofkit.circuit' has no attribute {name!r}")
    value = getattr(importlib.import_module(mod), name)
    globals()[name] = value
    return value
