"""Which pictures each result type is drawn as (its default first)."""

from __future__ import annotations

from . import charts, roofline

DRAW = {"roofline": roofline.roofline, "sweep": charts.sweep, "breakdown": charts.breakdown,
        "serve": charts.serve, "memory": charts.memory, "validation": charts.validation,
        "plan": charts.plan}

KINDS_OF = {
    "PerformanceProfile": ("roofline",),
    "Estimate": ("breakdown", "roofline"),
    "Fit": ("memory",),
    "ServingEstimate": ("serve", "breakdown"),
    "Report": ("validation",),
    "SweepTable": ("sweep",),
    "PlanResult": ("plan",),
}
