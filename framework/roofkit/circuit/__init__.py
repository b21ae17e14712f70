"""Circuits: per-node roofline estimates of decode, prefill and memory fit.

A template workload lowers through its circuit template (``specs/circuits``) into a
:class:`~roofkit.circuit.ir.Circuit` of nodes; each node's op kind has a cost rule
(``specs/ops``) whose expressions give FLOPs and bytes; a registered cost model turns
them into time on a device roofline whose basis is named.

The circuit is the one description of a model's work: ``roofkit.serve`` (request-level
serving), ``roofkit.sweep`` (design spaces) and ``Engine.solve(cost_model=...)`` all cost
its plans. Tensor parallelism is the template's: ``tp`` is a name every template expression
may read, and collectives are nodes (``all_reduce``) costed on the device's link.

Modules: ``expr`` (the expression language), ``spec`` (template and rule specs and their
checks), ``template`` (merging, lowering, tensor-parallel checks), ``ir``, ``formats`` (the
precision table), ``roofline`` (device constants and basis), ``calibrated`` (GEMM-size
efficiency, compute/memory overlap), ``collective`` (the link's ring models), ``model`` (a
lowered, prepared workload), ``plan`` (compiled per device), ``results``, ``stats`` (params
and FLOPs), ``validate`` (a workload's dims against its template, when specs load), ``api``.
"""

from __future__ import annotations

import importlib

_LAZY = {
    "decode": "roofkit.circuit.api", "prefill": "roofkit.circuit.api",
    "footprint": "roofkit.circuit.api", "fits": "roofkit.circuit.api",
    "workload_stats": "roofkit.circuit.stats", "WorkloadStats": "roofkit.circuit.stats",
    "DeviceRoofline": "roofkit.circuit.roofline", "device_roofline": "roofkit.circuit.roofline",
    "LinkModel": "roofkit.circuit.collective", "Ring": "roofkit.circuit.collective",
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
