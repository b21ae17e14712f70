"""Collectives over a group placed on a cluster: alpha-beta per tier, measured curves where
calibrated.

A group of ``n`` devices has ``l`` members in each scale-up domain it touches and spans
``m = n / l`` domains. Each tier ``x`` is a latency ``alpha_x`` per step and a bandwidth
``beta_x`` per device per direction (scale-out: the NIC's, divided by the fabric's
oversubscription). With ``S`` the buffer each device holds:

    all-reduce      inner: 2 (l-1)/l S bytes in 2 (l-1) steps
                    outer: 2 (m-1)/m S/l bytes in 2 (m-1) steps
    reduce-scatter  inner: (l-1)/l S in (l-1) steps;  outer: (m-1)/m S/l in (m-1) steps
    all-gather      as reduce-scatter (S the gathered buffer)
    all-to-all      inner: (l-1)/n S in 1 step;  outer: (n-l)/n S in 1 step
    p2p             S in 1 step over the tier the two devices share

``hierarchical`` (the builtin default): ``t = max(t_inner, t_outer)``, each tier's
``steps * alpha + bytes / beta``. The phases pipeline in chunks (NCCL's tree and NVLS
algorithms), so the slower tier sets the time; the sum would be the unpipelined bound.
``ring``: one flat ring over all ``n``, bottlenecked by its slowest hop, the ``l`` NICs of a
domain carrying the ring's crossing traffic: ``t = 2 (n-1)/n S / min(beta_in, l beta_out)
+ 2 (n-1) alpha_max``. The fastest registered algorithm is taken unless a layout names one.

On the calibrated basis the inner tier is the device's measured all-reduce curves
(``specs/calibration``, :class:`roofkit.circuit.collective.LinkModel`) read at the same link
bytes and steps; the outer tier stays on its cited figures (no measured curve of a
catalogued fabric is held), which the basis says.
"""

from __future__ import annotations

import attrs
import numpy as np

from ..errors import SpecError

COLLECTIVES = ("all_reduce", "reduce_scatter", "all_gather", "all_to_all", "p2p")


@attrs.frozen
class Tier:
    """One tier of links: ``alpha`` s per step, ``beta`` B/s per device per direction;
    ``link`` the measured curves that replace ``alpha``/``beta`` where calibrated."""

    name: str
    alpha: float
    beta: float
    link: object = None  # roofkit.circuit.collective.LinkModel | None
    measured: bool = False

    def time(self, link_bytes, steps, n):
        """``steps * alpha + link_bytes / beta`` (or the measured curves at group size n)."""
        link_bytes = np.asarray(link_bytes, dtype=float)
        steps = np.asarray(steps, dtype=float)
        if self.link is None:
            out = steps * self.alpha + link_bytes / self.beta
        else:
            n_arr = np.broadcast_to(np.asarray(n), np.broadcast(link_bytes, steps).shape)
            out = np.zeros(n_arr.shape)
            lb, st = np.broadcast_arrays(link_bytes, steps)
            for size in np.unique(n_arr):
                if size <= 1:
                    continue
                sel = n_arr == size
                out[sel] = self.link.time(lb[sel], st[sel], int(size))
        out = np.where(steps > 0, out, 0.0)
        return out if out.ndim else float(out)


@attrs.frozen
class Group:
    """A communicator: ``size`` devices, ``inner`` of them per scale-up domain, spanning
    ``outer`` domains (``size = inner * outer``); floats or numpy arrays."""

    size: object
    inner: object
    outer: object

    @classmethod
    def of(cls, size, inner):
        size = np.asarray(size)
        inner = np.minimum(np.asarray(inner), size)
        out = size // np.maximum(inner, 1)
        if size.ndim == 0:
            return cls(int(size), int(inner), int(out))
        return cls(size, inner, out)


@attrs.frozen
class Topology:
    """The tiers of a cluster on one basis: ``inner`` (scale-up) and ``outer`` (scale-out,
    None when the cluster has no network beyond its scale-up domain)."""

    inner: Tier
    outer: Tier | None
    domain: int
    basis: str

    def check(self, group: Group, what: str) -> None:
        if self.outer is None and np.any(np.asarray(group.outer) > 1):
            raise SpecError(f"the {what} group spans scale-up domains of {self.domain} "
                            "devices but the cluster has no scale-out network")


def topology(cluster, basis: str, registry) -> Topology:
    """The tiers of ``cluster`` on ``basis`` (``datasheet`` or ``calibrated``)."""
    up, out = cluster.scale_up, cluster.scale_out
    link, measured, note = None, False, "scale-up: cited figures"
    if basis == "calibrated":
        from ..circuit.roofline import device_roofline

        roof = device_roofline(registry.device(cluster.device), "calibrated", registry)
        if roof.measured and roof.link is not None and roof.link.basis == "calibrated":
            link, measured = roof.link, True
            note = f"scale-up: measured all-reduce curves of {cluster.device}"
    inner = Tier(up.name or "scale-up", up.latency, up.bandwidth, link, measured)
    outer = None
    if out is not None:
        outer = Tier(out.name or "scale-out", out.latency, out.bandwidth / out.oversubscription)
        m = cluster.measured_all_reduce
        if basis == "calibrated" and m is not None and m.devices > up.size:
            outer = measured_outer(outer, m, min(up.size, cluster.devices_per_node))
            note += (f"; scale-out: fitted to a measured {m.devices}-device all-reduce "
                     f"({m.source})")
        else:
            note += "; scale-out: cited figures (no measured curve of this fabric)"
    return Topology(inner, outer, up.size, note)


def measured_outer(cited: Tier, m, per_domain: int) -> Tier:
    """The scale-out tier through a measured all-reduce of ``m.devices`` devices, ``l =
    per_domain`` per scale-up domain over ``k = devices / l`` domains, where the outer phase
    sets the time (the hierarchical model): the largest message gives ``beta``,

        t_max = 2 (k-1)/k * (S_max / l) / beta   (latency negligible at S_max),

    and the smallest gives ``alpha = t_min / (2 (k-1))``."""
    pts = m.points()
    k = m.devices / per_domain
    t0, (s1, t1) = pts[0][1], pts[-1]
    beta = 2 * (k - 1) / k * (s1 / per_domain) / t1
    alpha = t0 / (2 * (k - 1))
    return Tier(cited.name + " (measured)", alpha, beta, None, True)


def _phases(collective: str, message, group: Group):
    """(inner bytes, inner steps, outer bytes, outer steps) one device moves."""
    s = np.asarray(message, dtype=float)
    n = np.asarray(group.size, dtype=float)
    l_ = np.asarray(group.inner, dtype=float)
    m = np.asarray(group.outer, dtype=float)
    if collective == "all_reduce":
        return 2 * (l_ - 1) / l_ * s, 2 * (l_ - 1), 2 * (m - 1) / m * s / l_, 2 * (m - 1)
    if collective in ("reduce_scatter", "all_gather"):
        return (l_ - 1) / l_ * s, l_ - 1, (m - 1) / m * s / l_, m - 1
    if collective == "all_to_all":
        return ((l_ - 1) / n * s, (l_ > 1) * 1.0, (n - l_) / n * s, (m > 1) * 1.0)
    if collective == "p2p":
        return s * (m <= 1), (m <= 1) * (n > 1) * 1.0, s * (m > 1), (m > 1) * 1.0
    raise SpecError(f"unknown collective {collective!r}; one of {', '.join(COLLECTIVES)}")


def hierarchical_time(collective: str, message, group: Group, topo: Topology):
    """The slower of the two tiers' ``steps * alpha + bytes / beta`` (phases pipelined)."""
    b_in, s_in, b_out, s_out = _phases(collective, message, group)
    t_in = topo.inner.time(b_in, s_in, group.inner)
    if topo.outer is None:
        return t_in
    t_out = topo.outer.time(b_out, s_out, group.outer)
    out = np.maximum(t_in, t_out)
    return out if np.ndim(out) else float(out)


def ring_time(collective: str, message, group: Group, topo: Topology):
    """One flat ring over the whole group, at the bandwidth of its slowest hop."""
    s = np.asarray(message, dtype=float)
    n = np.asarray(group.size, dtype=float)
    l_ = np.asarray(group.inner, dtype=float)
    crosses = np.asarray(group.outer) > 1
    beta = np.full(np.broadcast(n, l_).shape, topo.inner.beta)
    alpha = np.full(beta.shape, topo.inner.alpha)
    if topo.outer is not None:
        beta = np.where(crosses, np.minimum(beta, l_ * topo.outer.beta), beta)
        alpha = np.where(crosses, max(topo.inner.alpha, topo.outer.alpha), alpha)
    factor = {"all_reduce": 2.0, "reduce_scatter": 1.0, "all_gather": 1.0}.get(collective)
    if factor is None:  # all-to-all and p2p are not rings: the hierarchical cost stands
        return hierarchical_time(collective, message, group, topo)
    out = factor * (n - 1) * alpha + factor * (n - 1) / n * s / beta
    if topo.inner.link is not None:  # a group inside one domain: its measured curves
        inside = hierarchical_time(collective, message, group, topo)
        out = np.where(crosses, out, inside)
    out = np.where(n > 1, out, 0.0)
    return out if np.ndim(out) else float(out)


def collective_time(collective: str, message, group: Group, topo: Topology, registry,
                    algorithm: str | None = None):
    """Seconds for one collective: the named algorithm, else the fastest registered one."""
    if algorithm:
        algo = registry.collective(algorithm)
        if collective not in algo.collectives:
            raise SpecError(f"collective algorithm {algo.name!r} does not implement "
                            f"{collective} (it implements {', '.join(algo.collectives)})")
        return algo.time(collective, message, group, topo)
    times = [a.time(collective, message, group, topo) for a in registry.collectives.values()
             if collective in a.collectives]
    if not times:
        raise SpecError(f"no registered collective algorithm implements {collective}")
    out = np.minimum.reduce(np.broadcast_arrays(*times)) if len(times) > 1 else times[0]
    return out if np.ndim(out) else float(out)
