"""All-reduce over ``n`` devices of one node: the ring model with a latency and a bandwidth term.

A ring all-reduce of ``S`` bytes runs a reduce-scatter and an all-gather of ``n - 1`` steps
each; every step pays the link latency ``alpha`` and moves ``S / n`` bytes at the per-device
link bandwidth ``beta``:

    t(S, n) = 2 (n - 1) alpha + 2 (n - 1) / n * S / beta

On the datasheet basis ``alpha`` and ``beta`` are the device's ``[interconnect]`` latency and
bandwidth. On the calibrated basis each measured algorithm (NCCL's ring, the custom one-shot
kernels serving engines use for small messages) is fitted to the same equation from its
smallest and largest measured message, and an engine is taken to run the fastest of them
at each size: ``t = min over algorithms``.
"""

from __future__ import annotations

import attrs
import numpy as np


@attrs.frozen
class Ring:
    """``t(S, n) = 2 (n - 1) alpha + 2 (n - 1) / n * S / beta`` (alpha s, beta B/s)."""

    alpha: float
    beta: float
    name: str = "ring"

    def time(self, message, n: int):
        if n <= 1:
            return 0.0 * message
        return 2.0 * (n - 1) * self.alpha + 2.0 * (n - 1) / n * message / self.beta


def fit(points: list[tuple[float, float]], n: int, fallback_beta: float, name: str) -> Ring:
    """The ring through a measurement at ``n`` devices: two points fix alpha and beta; one
    point fixes alpha, with ``fallback_beta`` (the best measured bus bandwidth) for beta."""
    c = 2.0 * (n - 1) / n
    (s1, t1), (s2, t2) = points[0], points[-1]
    beta = fallback_beta
    if len(points) > 1 and t2 > t1 and s2 > s1:
        beta = c * (s2 - s1) / (t2 - t1)
    alpha = max(0.0, (t1 - c * s1 / beta) / (2.0 * (n - 1)))
    return Ring(alpha, beta, name)


@attrs.frozen
class AllReduce:
    """The all-reduce time of a basis: the fastest of its ring models, per group size.

    ``models`` maps an algorithm name to ``{devices: Ring}``; a group size without its own
    measurement uses the nearest measured one (its alpha and beta in the ring equation).
    """

    models: dict[str, dict[int, Ring]]
    basis: str = ""

    def rings(self, n: int) -> list[Ring]:
        out = []
        for by_n in self.models.values():
            nearest = min(by_n, key=lambda m: (abs(m - n), -m))
            out.append(by_n[nearest])
        return out

    def time(self, message, n: int):
        """Seconds for one all-reduce of ``message`` bytes over ``n`` devices (arrays too)."""
        if n <= 1:
            return 0.0 * np.asarray(message, dtype=float)
        times = [r.time(np.asarray(message, dtype=float), n) for r in self.rings(n)]
        return np.minimum.reduce(times) if len(times) > 1 else times[0]
