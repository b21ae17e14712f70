"""The terms a calibrated roofline adds to max(compute, memory): GEMM efficiency against
matrix size, and the overlap of compute with memory traffic.

**GEMM efficiency.** A measured GEMM sweep (``[gemm.<slot>]`` of ``specs/calibration``) gives
throughput at several sizes; as a curve of efficiency against the FLOPs of one GEMM,

    eta(F_gemm) = interp(log F_gemm, log F_i, R_i / max R)

held flat outside the measured range (1 where no sweep exists). A matrix node of ``F``
FLOPs split into ``gemms`` independent GEMMs (a routed-expert node runs one per touched
expert) computes in ``c = F / (P_slot * eta(F / gemms))``.

**Overlap.** A kernel overlaps its memory traffic ``m = B / BW`` with its math ``c`` only in
part:

    t = (c^p + m^p)^(1/p)

``p = inf`` is the roofline's perfect overlap, ``max(c, m)``; ``p = 1`` none, ``c + m``.
:func:`overlap_exponent` solves ``p`` from one GEMM measured where ``c`` and ``m`` are about
equal (``[mixed.<slot>]``), whose measured time lies between the two.

Both work on floats (plain Python, for the per-call hot path) and on numpy arrays.
"""

from __future__ import annotations

import bisect
import math

import numpy as np


def gemm_curve(points: list[tuple[float, float]]) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """``(log F_i, R_i / max R)`` from ``(FLOPs of one GEMM, measured FLOP/s)`` points."""
    pts = sorted(points)
    top = max(r for _, r in pts)
    return tuple(math.log(f) for f, _ in pts), tuple(r / top for _, r in pts)


def efficiency(curve, gemm_flops):
    """eta at ``gemm_flops`` (interpolated in log FLOPs, flat outside); 1 without a curve."""
    if curve is None:
        return 1.0
    xs, ys = curve
    if isinstance(gemm_flops, np.ndarray):
        return np.interp(np.log(np.maximum(gemm_flops, 1.0)), xs, ys)
    x = math.log(max(gemm_flops, 1.0))
    if x <= xs[0]:
        return ys[0]
    if x >= xs[-1]:
        return ys[-1]
    i = bisect.bisect_right(xs, x)
    x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


def combine(c, m, p: float):
    """``(c^p + m^p)^(1/p)``; ``max(c, m)`` when ``p`` is infinite."""
    if isinstance(c, np.ndarray) or isinstance(m, np.ndarray):
        if math.isinf(p):
            return np.maximum(c, m)
        top = np.maximum(np.maximum(c, m), 1e-300)
        return top * ((c / top) ** p + (m / top) ** p) ** (1.0 / p)
    top = c if c >= m else m
    if math.isinf(p) or top <= 0.0:
        return top
    return top * ((c / top) ** p + (m / top) ** p) ** (1.0 / p)


def overlap_exponent(c: float, m: float, t: float) -> float:
    """The ``p`` with ``(c^p + m^p)^(1/p) = t``, by bisection on ``1 <= p <= 64``; infinite
    when ``t`` is at or below ``max(c, m)``, 1 at or above ``c + m``."""
    if t <= max(c, m):
        return math.inf
    if t >= c + m:
        return 1.0
    lo, hi = 1.0, 64.0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if (c ** mid + m ** mid) ** (1.0 / mid) - t > 0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)
