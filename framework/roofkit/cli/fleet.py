"""Fleet commands: ``clusters`` (the cluster catalogue) and ``train`` (a training step on a
cluster, or the layout search with ``--search``)."""

from __future__ import annotations

from .. import units
from . import common


def register(sub) -> None:
    p = sub.add_parser("clusters", help="list the cluster catalogue")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_clusters)


def cluster_summary(c) -> dict:
    out = {"name": c.name, "display_name": c.display_name, "device": c.device,
           "devices_per_node": c.devices_per_node, "nodes": c.nodes, "devices": c.devices,
           "scale_up": {"name": c.scale_up.name, "topology": c.scale_up.topology,
                        "size": c.scale_up.size,
                        "bandwidth_bytes_per_s": c.scale_up.bandwidth,
                        "latency_s": c.scale_up.latency},
           "scale_out": None, "node_power_w": c.node_power,
           "price_per_device_hour_usd": c.price_per_device_hour,
           "aliases": list(c.aliases), "sources": dict(c.sources)}
    if c.scale_out is not None:
        o = c.scale_out
        out["scale_out"] = {"name": o.name, "topology": o.topology,
                            "bandwidth_bytes_per_s": o.bandwidth, "latency_s": o.latency,
                            "oversubscription": o.oversubscription}
    return out


def cmd_clusters(args) -> int:
    reg = common.registry(args)
    clusters = list(reg.clusters.values())
    if args.json:
        common.print_json([{**cluster_summary(c), "origin": str(reg.clusters.origin(c.name))}
                           for c in clusters])
        return 0
    rows = []
    for c in clusters:
        out = c.scale_out
        rows.append([c.name, c.device, f"{c.devices_per_node} x {c.nodes}",
                     f"{c.scale_up.size} @ {units.fmt(c.scale_up.bandwidth, 'bandwidth')}",
                     units.fmt(out.bandwidth, "bandwidth") if out else "-",
                     units.fmt(c.node_power, "power") if c.node_power else "-"])
    print(common.table(rows, ["cluster", "device", "per node x nodes",
                              "scale-up (size @ per device)", "scale-out per device",
                              "node power"], "llrrrr"))
    print(f"\n{len(clusters)} clusters; an ad hoc NxDEVICE (64xh100) is built from the "
          "device's [interconnect]. `roofkit show NAME` for every field and its source.")
    return 0


def show_cluster(reg, c, as_json: bool) -> int:
    data = cluster_summary(c)
    data["provenance"] = dict(c.provenance)
    try:
        data["origin"] = str(reg.clusters.origin(c.name))
    except Exception:
        data["origin"] = "ad hoc"
    if as_json:
        common.print_json(data)
        return 0
    print(f"{c.display_name} ({c.name}); from {data['origin']}")
    print(f"  device {c.device}, {c.devices_per_node} per node x {c.nodes} nodes = "
          f"{c.devices} devices")
    up = c.scale_up
    print(f"[scale_up] {up.name} ({up.topology}): {up.size} devices, "
          f"{units.fmt(up.bandwidth, 'bandwidth')} per device per direction, "
          f"{units.fmt(up.latency, 'time')} per step")
    if c.scale_out is not None:
        o = c.scale_out
        print(f"[scale_out] {o.name} ({o.topology}): "
              f"{units.fmt(o.bandwidth, 'bandwidth')} per device per direction, "
              f"{units.fmt(o.latency, 'time')} per step, oversubscription {o.oversubscription:g}")
    if c.node_power:
        print(f"node power {units.fmt(c.node_power, 'power')}")
    print("provenance:")
    for k, v in c.provenance.items():
        print(f"  {k}: {v}")
    print("sources:")
    for k, url in c.sources.items():
        print(f"  {k}: {url}")
    return 0
