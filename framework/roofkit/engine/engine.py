"""``Engine``: the single-device roofline entry points, ``Engine.solve`` and ``Engine.sweep``."""

from __future__ import annotations

from .solve import solve as _solve
from .sweep import sweep as _sweep


class Engine:
    """Maps a (workload, device) pair to a :class:`PerformanceProfile` by the roofline.

    ``T = max(F_batch / (eta * F_peak), W * (1 + 0.1 * B) / BW) + T_dispatch
    + L * T_layer * launch_multiplier`` (Williams et al. 2009, "Roofline", with the activation
    traffic, layer tax and power model as declared assumptions in
    :mod:`roofkit.engine.calibration`).
    """

    solve = staticmethod(_solve)
    sweep = staticmethod(_sweep)
