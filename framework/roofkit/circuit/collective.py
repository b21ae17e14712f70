"""The device-to-device link: collectives over ``n`` devices of one node, as rings with a
latency and a bandwidth term.

A collective's op rule (``specs/ops/all_reduce.toml``) says what it moves: ``link_bytes``,
the bytes each device sends over its link, and ``link_steps``, the sequential steps that each
pay the link latency once. A ring all-reduce of ``S`` bytes is a reduce-scatter and an
all-gather of ``n - 1`` steps each, every step moving ``S / n`` bytes:

    link_bytes = 2 (n - 1) / n * S,   link_steps = 2 (n - 1)

and on a link of latency ``alpha`` and per-device bandwidth ``beta`` it takes

    t = link_steps * alpha + link_bytes / beta = 2 (n - 1) alpha + 2 (n - 1) / n * S / beta

On the datasheet basis there is one ring, the device's ``[interconnect]`` latency and
bandwidth. On the calibrated basis each measured algorithm (NCCL's ring, the custom one-shot
kernels serving engines use for small messages) is fitted to the same equation from its
smallest and largest measured message; where it was measured at more than two sizes over
the group size asked for, its time between the measured sizes is the measurements'
(:class:`Curve`: piecewise linear in log bytes and log time, the fit beyond them), because
bus bandwidth at a few MB lies well below the large-message asymptote the two-point fit
takes (NCCL over 8 H100s: 296 GB/s at 32 MiB against 479 GB/s at 8 GiB). An engine is taken
to run the fastest algorithm at each size: ``t = min over algorithms``.

A group size ``n`` without its own measurement of an algorithm uses the nearest measured
size ``m``: the same bus bandwidth ``beta`` (nccl-tests' busbw is defined to be independent
of ``n``) and the same small-message latency, ``2 (n - 1) alpha_n = 2 (m - 1) alpha_m``. The
latency is not scaled with the ring's step count because the measurements say it does not
scale so: on H100 the custom one-shot kernels take 3.7, 4.8 and 5.9 us at 2, 4 and 8 devices
(ring steps 2, 6, 14), and NCCL's smallest all-reduce takes 23.7 us over 4 devices (ring)
and 25.6 us over 8 (NVLS). The datasheet ring (the device's ``[interconnect]`` latency per
step) is the same at every ``n``.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping

import attrs
import numpy as np


@attrs.frozen
class Ring:
    """One link model: latency ``alpha`` (s per step) and bandwidth ``beta`` (B/s)."""

    alpha: float
    beta: float
    name: str = "ring"

    def cost(self, link_bytes, link_steps):
        """``link_steps * alpha + link_bytes / beta``, seconds (floats or arrays)."""
        return link_steps * self.alpha + link_bytes / self.beta

    def time(self, message, n: int):
        """A ring all-reduce of ``message`` bytes over ``n`` devices (0 for one device)."""
        if n <= 1:
            return 0.0 * message
        return self.cost(2.0 * (n - 1) / n * message, 2.0 * (n - 1))


@attrs.frozen
class Curve:
    """An algorithm measured at several message sizes over its own group size: the measured
    all-reduce times, interpolated in log-log between the sizes, and ``ring`` (its two-point
    fit) below the smallest and beyond the largest. Read at ``link_bytes``, the bytes one
    device sends, which for an all-reduce of ``S`` over ``n`` devices is ``2 (n - 1) / n * S``.
    """

    ring: Ring
    log_bytes: tuple[float, ...]  # log link bytes of the measured messages, increasing
    log_times: tuple[float, ...]  # log seconds

    @property
    def alpha(self) -> float:
        return self.ring.alpha

    @property
    def beta(self) -> float:
        return self.ring.beta

    @property
    def name(self) -> str:
        return f"{self.ring.name} (measured at {len(self.log_bytes)} sizes)"

    def time(self, message, n: int):
        """An all-reduce of ``message`` bytes over ``n`` devices (0 for one device)."""
        if n <= 1:
            return 0.0 * message
        return self.cost(2.0 * (n - 1) / n * message, 2.0 * (n - 1))

    def cost(self, link_bytes, link_steps):
        """The measured time between the smallest and largest measured message, the ring's
        ``link_steps * alpha + link_bytes / beta`` outside them."""
        xs, ys = self.log_bytes, self.log_times
        outside = self.ring.cost(link_bytes, link_steps)
        if isinstance(link_bytes, np.ndarray) or isinstance(link_steps, np.ndarray):
            lb = np.asarray(link_bytes, dtype=float)
            inside = np.exp(np.interp(np.log(np.maximum(lb, 1e-30)), xs, ys))
            within = (lb >= math.exp(xs[0])) & (lb <= math.exp(xs[-1]))
            return np.where(within, inside, outside)
        if link_bytes <= 0:
            return outside
        x = math.log(link_bytes)
        if x < xs[0] or x > xs[-1]:
            return outside
        i = min(max(bisect.bisect_right(xs, x), 1), len(xs) - 1)
        x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
        return math.exp(y0 + (y1 - y0) * (x - x0) / (x1 - x0))


def curve(points: list[tuple[float, float]], n: int, ring: Ring) -> Curve | Ring:
    """The measured curve of all-reduce ``points`` ``(message bytes, seconds)`` over ``n``
    devices (the ring alone when fewer than three sizes were measured)."""
    pts = sorted(points)
    if len(pts) < 3 or n <= 1:
        return ring
    c = 2.0 * (n - 1) / n
    return Curve(ring, tuple(math.log(c * s) for s, _ in pts),
                 tuple(math.log(t) for _, t in pts))


def fit(points: list[tuple[float, float]], n: int, fallback_beta: float, name: str) -> Ring:
    """The ring through all-reduce measurements ``(bytes, seconds)`` at ``n`` devices: two
    points fix alpha and beta; one point fixes alpha, with ``fallback_beta`` (the best
    measured bus bandwidth) for beta."""
    c = 2.0 * (n - 1) / n
    (s1, t1), (s2, t2) = points[0], points[-1]
    beta = fallback_beta
    if len(points) > 1 and t2 > t1 and s2 > s1:
        beta = c * (s2 - s1) / (t2 - t1)
    alpha = max(0.0, (t1 - c * s1 / beta) / (2.0 * (n - 1)))
    return Ring(alpha, beta, name)


@attrs.frozen
class LinkModel:
    """The link of a basis: ring models per algorithm and measured group size.

    ``models`` maps an algorithm name to ``{devices: Ring}``.
    """

    models: Mapping[str, Mapping[int, Ring | Curve]]
    basis: str = ""

    def rings(self, n: int) -> tuple[Ring, ...]:
        """One ring per algorithm at ``n`` devices: its own measurement, else the nearest
        measured size ``m`` carried over with its bandwidth and its total small-message
        latency (``alpha * (m - 1) / (n - 1)`` per step)."""
        out = []
        for by_n in self.models.values():
            nearest = min(by_n, key=lambda m: (abs(m - n), -m))
            ring = by_n[nearest]
            if self.basis == "calibrated" and nearest != n and n > 1 and nearest > 1:
                fitted = ring.ring if isinstance(ring, Curve) else ring
                ring = Ring(fitted.alpha * (nearest - 1) / (n - 1), fitted.beta,
                            f"{fitted.name} (measured at {nearest})")
            out.append(ring)
        return tuple(out)

    def time(self, link_bytes, link_steps, n: int):
        """The fastest algorithm's ``link_steps * alpha + link_bytes / beta`` at ``n``."""
        return fastest(self.rings(n), link_bytes, link_steps)

    def all_reduce(self, message, n: int):
        """Seconds for one all-reduce of ``message`` bytes over ``n`` devices (arrays too)."""
        if n <= 1:
            return 0.0 * np.asarray(message, dtype=float)
        return self.time(2.0 * (n - 1) / n * np.asarray(message, dtype=float),
                         2.0 * (n - 1), n)


def fastest(rings, link_bytes, link_steps):
    """min over ``rings`` of their cost; floats stay floats, arrays give arrays."""
    if len(rings) == 1:
        return rings[0].cost(link_bytes, link_steps)
    times = [r.cost(link_bytes, link_steps) for r in rings]
    if any(isinstance(t, np.ndarray) for t in times):
        return np.minimum.reduce(np.broadcast_arrays(*times))
    return min(times)
