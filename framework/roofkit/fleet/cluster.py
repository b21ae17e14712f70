"""Cluster specs: a device times devices per node times nodes, joined by two tiers of links.

The **scale-up domain** (NVLink/NVSwitch, xGMI, NeuronLink, TPU ICI) joins ``size`` devices
with ``bandwidth`` per device per direction and a per-message ``latency``; it may span
several nodes (GB200 NVL72: 18 trays of 4 GPUs, one 72-GPU NVLink domain). The
**scale-out network** joins scale-up domains: ``bandwidth`` per device per direction (its
own NIC on a rail-optimised fat tree), ``latency`` and an ``oversubscription`` (1 for a
non-blocking fabric; 2 halves the bandwidth a device sees when every device sends).

An ad hoc cluster ``64xh100`` is built from the device's ``[interconnect]`` (its scale-up
domain) and :data:`DEFAULT_NETWORK`, whose numbers are cited there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import attrs

from ..errors import SpecError
from ..schema.common import (
    check_key,
    identity_problems,
    provenance_problems,
    sourced_paths,
    table,
)
from ..schema.fields import count, fraction, number, positive, quantities, quantity

#: devices of one cluster: ~5x the largest published training cluster (xAI Colossus, 200k
#: GPUs in 2025)
MAX_DEVICES = 1_000_000


@attrs.frozen
class ScaleUp:
    """The scale-up domain: ``size`` devices, each with ``bandwidth`` per direction."""

    size: int = count(maximum=MAX_DEVICES)
    bandwidth: float = quantity("bandwidth")
    latency: float = quantity("time", high=1.0)
    name: str = attrs.field(default="", kw_only=True)
    topology: str = attrs.field(default="switch", kw_only=True)  # switch | mesh | torus


@attrs.frozen
class ScaleOut:
    """The network between scale-up domains: per-device NIC bandwidth per direction."""

    bandwidth: float = quantity("bandwidth")
    latency: float = quantity("time", high=1.0)
    name: str = attrs.field(default="", kw_only=True)
    topology: str = attrs.field(default="rail-optimised fat tree", kw_only=True)
    oversubscription: float = fraction(default=1.0, low=1.0, high=64.0, low_open=False)


@attrs.frozen
class MeasuredAllReduce:
    """A published all-reduce over ``devices`` devices of this cluster spanning nodes
    (nccl-tests ``all_reduce_perf``): message bytes -> time. On the calibrated basis it fits
    the scale-out tier's alpha and beta (:func:`roofkit.fleet.collectives.topology`)."""

    devices: int = count(minimum=2, maximum=MAX_DEVICES)
    time: dict[str, float] = quantities("time", high=3600.0, required=True)
    source: str = attrs.field(kw_only=True)
    where: str = attrs.field(kw_only=True)
    notes: str = attrs.field(default="", kw_only=True)

    def points(self) -> list[tuple[float, float]]:
        return sorted((float(k), v) for k, v in self.time.items())


@attrs.frozen
class Cluster:
    """A cluster spec (``specs/clusters/*.toml``)."""

    name: str = attrs.field(validator=check_key)
    display_name: str
    device: str
    devices_per_node: int = count(maximum=MAX_DEVICES)
    nodes: int = count(maximum=MAX_DEVICES)
    scale_up: ScaleUp
    sources: dict[str, str]
    provenance: dict[str, str]
    scale_out: ScaleOut | None = None
    node_power: float | None = quantity("power", default=None)
    #: US dollars; 1e4 is ~1000x an on-demand H100 hour
    price_per_device_hour: float | None = number(positive(1e4), default=None)
    aliases: tuple[str, ...] = attrs.field(default=(), kw_only=True)
    notes: str = attrs.field(default="", kw_only=True)
    measured_all_reduce: MeasuredAllReduce | None = attrs.field(default=None, kw_only=True)

    @property
    def devices(self) -> int:
        return self.devices_per_node * self.nodes

    SOURCED = ("scale_up", "scale_out")

    @classmethod
    def sourced_paths(cls, data: Mapping) -> list[str]:
        out = sourced_paths(data, cls, cls.SOURCED)
        for key in ("devices_per_node", "nodes", "node_power", "price_per_device_hour"):
            if key in data:
                out.append(key)
        return out

    @classmethod
    def raw_problems(cls, data: Mapping) -> list[tuple[str, str]]:
        out = identity_problems(data)
        up = table(data, "scale_up")
        if up.get("topology") not in (None, "switch", "mesh", "torus"):
            out.append(("scale_up.topology", "topology must be 'switch', 'mesh' or 'torus'"))
        out += provenance_problems(data, cls.sourced_paths(data))
        return out

    def problems(self) -> list[tuple[str, str]]:
        out = []
        if self.scale_out is None and self.devices > self.scale_up.size:
            out.append(("scale_out", f"{self.devices} devices exceed the scale-up domain of "
                        f"{self.scale_up.size}; add a [scale_out] network"))
        m = self.measured_all_reduce
        if m is not None:
            if self.scale_out is None or m.devices <= self.scale_up.size:
                out.append(("measured_all_reduce.devices", "a measured all-reduce calibrates "
                            "the scale-out tier: it must span more than one scale-up domain "
                            f"of {self.scale_up.size}"))
            for k in m.time:
                if not k.isdigit():
                    out.append((f"measured_all_reduce.time.{k}", "keys are message sizes in "
                                "bytes, written as digits (\"8589934592\")"))
            if len(m.time) < 2:
                out.append(("measured_all_reduce.time", "give at least two message sizes "
                            "(the smallest fixes the latency, the largest the bandwidth)"))
        if self.price_per_device_hour is not None and self.price_per_device_hour <= 0:
            out.append(("price_per_device_hour", "a price must be positive (US dollars)"))
        return out


def check(cluster: Cluster, tables) -> list[tuple[str, str]]:
    """Cross-check: the device exists in the device catalogue."""
    devices = tables.get("devices")
    if devices is not None and cluster.device not in devices:
        return [("device", f"unknown device {cluster.device!r} (not in the devices catalogue)")]
    return []


#: the scale-out network of an ad hoc ``NxDEVICE`` cluster: one 400 Gb/s NIC per device on a
#: non-blocking rail-optimised fat tree, as DGX H100/H200/B200 are built
DEFAULT_NETWORK = {
    "name": "ConnectX-7 400 Gb/s InfiniBand NDR per device (default)",
    "bandwidth": 50e9,  # 400 Gb/s = 50 GB/s per direction
    "latency": 5e-6,
    "source": "https://docs.nvidia.com/dgx-basepod/reference-architecture-infrastructure-"
              "foundation-enterprise-ai/latest/core-components.html",
    "notes": "bandwidth: DGX H100/H200/B200 carry eight single-port ConnectX-7 up to 400 Gb/s, "
             "one per GPU; latency: assumption, an order of magnitude for one InfiniBand hop "
             "through the NIC and a leaf switch (no per-message figure is published)",
}

_AD_HOC = re.compile(r"^\s*(\d+)\s*[x*]\s*(\S+)\s*$", re.IGNORECASE)


def parse_ad_hoc(name: str) -> tuple[int, str] | None:
    """``64xh100`` -> (64, 'h100'); None when ``name`` is not of that form."""
    m = _AD_HOC.match(name)
    return (int(m.group(1)), m.group(2)) if m else None


def ad_hoc(devices: int, device) -> Cluster:
    """A cluster of ``devices`` devices built from the device's ``[interconnect]`` (its
    scale-up domain: ``max_devices`` per node) and :data:`DEFAULT_NETWORK` between nodes."""
    from .. import bounds

    if isinstance(devices, bool) or not isinstance(devices, int) or devices < 1:
        raise SpecError(f"an ad hoc cluster '{devices}x{device.name}' needs a whole number "
                        f"of devices >= 1, got {devices!r}")
    bounds.check_int("devices", devices, bounds.MAX_DEVICES)
    ic = device.interconnect
    if ic is None and devices == 1:
        return _one_device(device)
    if ic is None:
        raise SpecError(f"device {device.name!r} has no [interconnect]; an ad hoc cluster "
                        f"'{devices}x{device.name}' needs one (or write a specs/clusters/ file)")
    per_node = min(ic.max_devices, devices)
    if devices % per_node:
        raise SpecError(f"{devices} devices do not fill whole nodes of {per_node} "
                        f"{device.name}; use a multiple of {per_node}")
    net = DEFAULT_NETWORK
    return Cluster(
        name=f"{devices}x{device.name}", display_name=f"{devices} x {device.display_name}",
        device=device.name, devices_per_node=per_node, nodes=devices // per_node,
        scale_up=ScaleUp(size=per_node, bandwidth=ic.bandwidth, latency=ic.latency or 0.0,
                         name=ic.name),
        scale_out=ScaleOut(bandwidth=net["bandwidth"], latency=net["latency"],
                           name=net["name"]),
        sources={"device": f"device spec {device.name} [interconnect]",
                 "network": net["source"]},
        provenance={"scale_up": "device", "scale_out": f"network: {net['notes']}"},
        notes="ad hoc: built from the device's [interconnect] and the default network")


def _one_device(device) -> Cluster:
    """One device alone (``1xDEVICE`` of a device without an ``[interconnect]``, a single
    GPU fine-tuning run): a scale-up domain of one and no network, so every group is of one
    and no collective is ever timed; the domain's bandwidth is the device's memory
    bandwidth, a placeholder no cost reads."""
    return Cluster(
        name=f"1x{device.name}", display_name=f"1 x {device.display_name}",
        device=device.name, devices_per_node=1, nodes=1,
        scale_up=ScaleUp(size=1, bandwidth=device.memory.bandwidth, latency=0.0,
                         name="none (one device)"),
        scale_out=None,
        sources={"device": f"device spec {device.name}"},
        provenance={"scale_up": "device: one device, no link (no collective is timed)"},
        notes="ad hoc: one device, no interconnect")


def training_cluster(ref, registry, devices: int | None = None) -> Cluster:
    """The cluster a training or layout search runs on: a cluster (key, alias, TOML path,
    spec, ``NxDEVICE``) as :func:`resolve_cluster`, or a device name, taken as the ad hoc
    ``NxDEVICE`` of ``devices`` (default one) of it."""
    from ..errors import UnknownNameError

    try:
        return resolve_cluster(ref, registry)
    except UnknownNameError as exc:
        if not isinstance(ref, str) or parse_ad_hoc(ref) is not None:
            raise
        try:
            device = registry.device(ref)
        except UnknownNameError:
            raise exc from None
        return ad_hoc(devices or 1, device)


def resolve_cluster(ref, registry) -> Cluster:
    """A cluster by key, alias, TOML path, spec object, or ``NxDEVICE`` (ad hoc)."""
    if isinstance(ref, Cluster):
        return ref
    if isinstance(ref, str) and not ref.endswith(".toml") and ref not in registry.clusters:
        parsed = parse_ad_hoc(ref)
        if parsed is not None:
            n, dev = parsed
            return ad_hoc(n, registry.device(dev))
    return registry.spec("clusters", ref)


def with_devices(cluster: Cluster, devices: int | None) -> Cluster:
    """``cluster`` cut or grown to ``devices`` (whole nodes; every node alike)."""
    if devices is None or devices == cluster.devices:
        return cluster
    per = cluster.devices_per_node
    if devices < 1:
        raise SpecError(f"devices must be at least 1, got {devices}")
    if devices < per:
        return attrs.evolve(cluster, devices_per_node=devices, nodes=1)
    if devices % per:
        raise SpecError(f"{devices} devices do not fill whole nodes of {per} on cluster "
                        f"{cluster.name!r}; use a multiple of {per}")
    nodes = devices // per
    if cluster.scale_out is None and devices > cluster.scale_up.size:
        raise SpecError(f"cluster {cluster.name!r} has no scale-out network beyond its "
                        f"scale-up domain of {cluster.scale_up.size} devices")
    return attrs.evolve(cluster, nodes=nodes)
