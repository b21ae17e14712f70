"""The links a serving layout's traffic crosses: one node's interconnect, or a cluster's
scale-up domain and scale-out network (``specs/clusters``, ``NxDEVICE``).

Pipeline stages of ``tp`` devices each fill a scale-up domain of ``size`` devices
``size // tp`` stages at a time; of the ``pp - 1`` stage boundaries,
``ceil(pp / (size // tp)) - 1`` cross the scale-out network and the rest stay inside:

    t_hop(bytes) = n_in * (lat_up + bytes / bw_up) + n_out * (lat_out + bytes / bw_out)

An all-to-all over ``ep`` ranks sends ``(s - 1) / (ep - 1)`` of a rank's bytes inside its
domain (``s = min(size, ep)`` ranks) and the rest across the network, the two at once:

    t_a2a(bytes) = lat + max(f_in * bytes / bw_up, f_out * bytes / bw_out)

with ``bw_out`` the NIC bandwidth over the fabric's oversubscription and ``lat`` the slower
tier's latency in use.
"""

from __future__ import annotations

import math

import attrs

from ..errors import SpecError


@attrs.frozen
class Tier:
    name: str
    bandwidth: float
    latency: float


@attrs.frozen
class Fabric:
    name: str
    up: Tier
    size: int  # devices in one scale-up domain
    out: Tier | None  # None: one node, nothing beyond it
    devices: int  # devices in all

    def check(self, used: int, what: str) -> None:
        if used > self.devices:
            raise SpecError(f"{what} needs {used} devices; {self.name} has {self.devices}")

    def pipeline(self, tp: int, pp: int) -> tuple[float, float]:
        """(seconds, seconds per byte) of one step's sends across the ``pp - 1`` stage
        boundaries."""
        per_domain = max(self.size // tp, 1)
        cross = math.ceil(pp / per_domain) - 1
        if cross and self.out is None:
            raise SpecError(f"tp {tp} x pp {pp} devices exceed one {self.name} node "
                            f"({self.size} devices on its interconnect); name a cluster "
                            "(specs/clusters or NxDEVICE) for multi-node pipelines")
        inside = pp - 1 - cross
        fixed = inside * self.up.latency + (cross * self.out.latency if cross else 0.0)
        per_byte = inside / self.up.bandwidth + (cross / self.out.bandwidth if cross else 0.0)
        return fixed, per_byte

    def all_to_all(self, ep: int) -> tuple[float, float]:
        """(seconds, seconds per byte a rank sends) of one all-to-all over ``ep`` ranks."""
        if ep <= 1:
            return 0.0, 0.0
        s = min(self.size, ep)
        if ep > self.size and self.out is None:
            raise SpecError(f"ep {ep} exceeds one {self.name} node ({self.size} devices); "
                            "name a cluster for multi-node expert parallelism")
        f_in, f_out = (s - 1) / (ep - 1), (ep - s) / (ep - 1)
        per_byte = max(f_in / self.up.bandwidth,
                       f_out / self.out.bandwidth if f_out else 0.0)
        lat = self.out.latency if f_out else self.up.latency
        return lat, per_byte

    def kv_link(self, devices_used: int) -> Tier:
        """The link a disaggregated KV transfer crosses: inside the domain when both pools
        fit in it, else the network."""
        if devices_used <= self.size or self.out is None:
            return self.up
        return self.out


def fabric_of(reg, ref):
    """(device spec, Fabric) of a device or a cluster (key, alias, TOML, ``NxDEVICE``)."""
    from ..errors import UnknownNameError

    if isinstance(ref, str) and ref not in reg.devices:
        from ..fleet.cluster import parse_ad_hoc

        try:
            cluster = reg.cluster(ref)
        except (UnknownNameError, SpecError, LookupError):
            if parse_ad_hoc(ref) is not None and ref.lower() not in reg.devices:
                raise  # "12xh100": say why the NxDEVICE cluster is refused
            cluster = None
        if cluster is not None:
            d = reg.device(cluster.device)
            up = cluster.scale_up
            out = cluster.scale_out
            net = None if out is None else Tier(out.name or "scale-out",
                                                out.bandwidth / out.oversubscription,
                                                out.latency)
            return d, Fabric(cluster.name, Tier(up.name or "scale-up", up.bandwidth,
                                                up.latency), up.size, net, cluster.devices)
    d = reg.device(ref)
    ic = d.interconnect
    if ic is None:
        return d, Fabric(d.name, Tier("none", math.inf, 0.0), 1, None, 1)
    return d, Fabric(d.name, Tier(ic.name or "interconnect", ic.bandwidth, ic.latency or 0.0),
                     ic.max_devices, None, ic.max_devices)
