"""Serving under load: continuous batching simulated step by step on the circuit's step
costs, with engine profiles (``specs/engines``), disaggregated prefill/decode, speculative
decoding and an SLO planner.

``roofkit.simulate(workload, device, concurrency=64, input_len=1024, output_len=256)``
returns a :class:`LoadEstimate`; ``roofkit.plan(...)`` searches layouts for an SLO.
"""

from __future__ import annotations

from .plan import PlanResult, plan
from .simulate import Disagg, LoadEstimate, SpecDecode, parse_slo, simulate

__all__ = ["Disagg", "LoadEstimate", "PlanResult", "SpecDecode", "parse_slo", "plan",
           "simulate"]


def __getattr__(name: str):
    """``roofkit.load.validation`` (and every other submodule) after ``import roofkit``."""
    import importlib
    import importlib.util

    if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}"):
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
