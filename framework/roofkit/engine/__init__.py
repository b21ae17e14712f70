"""The single-device roofline engine: ``Engine.solve``, ``Engine.sweep``, ``PerformanceProfile``.

    T = max(F_batch / (eta * F_peak), W * (1 + 0.1 * B) / BW) + T_dispatch + L * T_layer * m
"""

from __future__ import annotations

from .engine import Engine
from .profile import PerformanceProfile
from .sweep import SweepResult, inference_arrays

__all__ = ["Engine", "PerformanceProfile", "SweepResult", "inference_arrays"]
