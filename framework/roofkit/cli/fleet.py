"""Fleet commands: ``clusters`` (the cluster catalogue) and ``train`` (a training step on a
cluster, or the layout search with ``--search``)."""

from __future__ import annotations

from .. import units
from . import common


def register(sub) -> None:
    p = sub.add_parser("clusters", help="list the cluster catalogue")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_clusters)

    p = sub.add_parser("train", help="training step time, MFU and memory of a layout on a "
                       "cluster; --search ranks every valid layout")
    p.add_argument("workload")
    p.add_argument("cluster", help="cluster key, alias, TOML path or NxDEVICE (64xh100)")
    p.add_argument("--devices", type=common.count(1), dest="device_count", metavar="N")
    for flag in ("tp", "pp", "vpp", "cp", "ep"):
        p.add_argument(f"--{flag}", type=common.count(1),
                       default=None if flag in ("tp", "pp") else 1)
    p.add_argument("--dp", type=common.count(1))
    p.add_argument("--micro-batch", type=common.count(1), default=None)
    p.add_argument("--global-batch", type=common.count(1))
    p.add_argument("--seq-len", type=common.count(1), required=True)
    p.add_argument("--precision", choices=("bf16", "fp16", "fp8"), default="bf16")
    p.add_argument("--recompute", choices=("none", "selective", "full"), default=None)
    p.add_argument("--zero", type=int, choices=(0, 1, 2, 3), default=None)
    group = p.add_mutually_exclusive_group()
    group.add_argument("--lora", type=common.count(1), metavar="RANK")
    group.add_argument("--qlora", type=common.count(1), metavar="RANK")
    p.add_argument("--capacity-factor", type=float, default=1.0)
    p.add_argument("--kernels", choices=("fused", "eager"), default="fused",
                   help="elementwise kernels: fused (Megatron, NeMo) or eager PyTorch ops "
                        "(Hugging Face Transformers)")
    p.add_argument("--lora-targets", choices=("attention", "all"), default="attention",
                   help="linears that carry LoRA adapters")
    p.add_argument("--uneven-stages", action="store_true",
                   help="let pp leave a remainder of layers (embedding and head as layers)")
    p.add_argument("--collective-algorithm", help="a registered collective algorithm")
    p.add_argument("--price-per-device-hour", type=float, metavar="USD")
    p.add_argument("--basis", choices=("calibrated", "datasheet"), default="auto",
                   help="default: calibrated where the device has a calibration in "
                   "specs/calibration, else datasheet")
    p.add_argument("--search", action="store_true",
                   help="enumerate every valid layout; print the fastest that fit")
    p.add_argument("--top", type=common.count(1), default=10)
    common.add_interval(p, "the training cases' out-of-sample residuals")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_train)


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


def cmd_train(args) -> int:
    reg = common.registry(args)
    if args.search:
        from ..fleet.search import search_layouts

        result = search_layouts(
            args.workload, args.cluster, devices=args.device_count, global_batch=args.global_batch,
            seq_len=args.seq_len, precision=args.precision, basis=args.basis,
            lora=args.lora, qlora=args.qlora, top=args.top, registry=reg,
            fixed={k: getattr(args, k) for k in ("tp", "pp", "micro_batch", "recompute",
                                                  "zero") if getattr(args, k) is not None})
        if args.json:
            common.print_json(result.to_dict())
        else:
            print(result.text())
        return 0
    from ..fleet.training import train

    est = train(args.workload, args.cluster, devices=args.device_count, tp=args.tp or 1,
                pp=args.pp or 1, vpp=args.vpp, dp=args.dp, cp=args.cp, ep=args.ep,
                micro_batch=args.micro_batch or 1, global_batch=args.global_batch,
                seq_len=args.seq_len, precision=args.precision,
                recompute=args.recompute or "none", zero=args.zero or 0, lora=args.lora,
                qlora=args.qlora, basis=args.basis, capacity_factor=args.capacity_factor,
                collective_algorithm=args.collective_algorithm,
                price_per_device_hour=args.price_per_device_hour, kernels=args.kernels,
                lora_targets=args.lora_targets, uneven_stages=args.uneven_stages,
                registry=reg)
    from ..intervals import check_level

    level = check_level(args.interval)
    if args.json:
        common.print_json(est.to_dict(level=level))
        return 0
    print(training_text(est, level))
    return 0


def training_text(est, level: float = 0.8) -> str:
    d = est.to_dict(level=level)
    lo = est.layout
    lines = [f"{est.workload} on {lo.devices} x {est.device} ({est.cluster}): tp {lo.tp}, "
             f"pp {lo.pp} (vpp {lo.vpp}), dp {lo.dp}, cp {lo.cp}, ep {lo.ep}, micro-batch "
             f"{lo.micro_batch} x {lo.micro_batches}, global batch {lo.global_batch} x "
             f"{lo.seq_len} tokens, {lo.precision}, recompute {lo.recompute}, ZeRO {lo.zero}"
             + (f", {'QLoRA' if lo.qlora else 'LoRA'} rank {lo.lora}" if lo.lora else ""),
             f"step {units.fmt(est.step_time_s, 'time')}, {est.tokens_per_s:,.0f} tokens/s, "
             f"MFU {est.mfu:.1%}, HFU {est.hfu:.1%}"]
    rows = [[k, units.fmt(v, "time"), f"{v / est.step_time_s:.1%}"]
            for k, v in est.breakdown.items() if v > 0]
    lines += ["", common.table(rows, ["part", "time", "share"], "lrr")]
    mem = [[k, units.fmt(v, "bytes")] for k, v in est.memory_parts.items()]
    mem.append(["total", units.fmt(est.memory_per_device_bytes, "bytes")])
    lines += ["", common.table(mem, ["memory per device", "bytes"], "lr")]
    verdict = "fits" if est.fits else "does not fit"
    lines.append(f"{verdict} in {units.fmt(est.capacity, 'bytes')} "
                 f"(headroom {units.fmt(abs(d['headroom_bytes']), 'bytes')}"
                 f"{'' if est.fits else ' short'})")
    for g, p in est.placement.items():
        lines.append(f"  {g} {p['size']}: {p['where']}")
    if "energy_per_step_j" in d:
        lines.append(f"energy {units.fmt(d['energy_per_step_j'], 'energy')} per step")
    if "energy_per_step_measured_model_j" in d:
        lines.append(f"energy (per-op model) "
                     f"{units.fmt(d['energy_per_step_measured_model_j'], 'energy')} per step, "
                     f"{units.fmt(d['energy_per_million_tokens_measured_model_j'], 'energy')} "
                     "per million tokens")
    if "cost_per_step_usd" in d:
        lines.append(f"cost ${d['cost_per_step_usd']:.4g} per step, "
                     f"${d['cost_per_million_tokens_usd']:.4g} per million tokens")
    for name, iv in d["intervals"].items():
        lines.append(f"{100 * level:g}% interval {name}: {iv['lo']:.4g} .. {iv['hi']:.4g} "
                     f"({iv['stratum']})")
    lines.append(f"basis: {est.basis}")
    return "\n".join(lines)


def _pct(v) -> str:
    return "-" if v is None else f"{v:+.1%}"


def cmd_validate_training(args) -> int:
    """``roofkit validate --kind training``: every case on both bases, median and max."""
    from ..fleet.validation import run
    from ..intervals import coverage, training_residuals

    reg = common.registry(args)
    report = run(registry=reg)
    res = training_residuals(report, reg)
    cov = [coverage(res, lv, lo) for lv in (0.8, 0.9) for lo in ("case", "source")]
    threshold = getattr(args, "misses", None)
    if threshold is not None:
        from .serving import _check_misses

        _check_misses(threshold)
        cat = reg.catalogues["training"]
        misses = sorted((c for c in report.cases if c.scored
                         and abs(c.error("calibrated")) > threshold),
                        key=lambda c: -abs(c.error("calibrated")))
        data = [{"name": c.name, "error_calibrated": c.error("calibrated"),
                 "cause": cat[c.name].cause} for c in misses]
        if args.json:
            common.print_json({"threshold": threshold, "basis": "calibrated", "misses": data})
            return 0
        print(f"{len(data)} scored training case(s) with calibrated |error| above "
              f"{100 * threshold:g}%:")
        for d in data:
            print(f"  {d['name']}: {_pct(d['error_calibrated'])}; cause: "
                  f"{d['cause'] or 'not yet known (no cause in its case spec)'}")
        return 0
    if args.json:
        common.print_json({**report.to_dict(), "interval_coverage": cov})
        return 0
    rows = [[c.name, c.config, f"{c.measured:.4g} s",
             f"{c.predicted['datasheet']:.4g}" if "datasheet" in c.predicted else "-",
             _pct(c.error("datasheet")),
             f"{c.predicted['calibrated']:.4g}" if "calibrated" in c.predicted else "-",
             _pct(c.error("calibrated")), "yes" if c.scored else "no"] for c in report.cases]
    head = ["case", "layout", "measured", "datasheet", "err", "calibrated", "err", "scored"]
    print(common.markdown_table(rows, head) if args.markdown else
          common.table(rows, head, "llrrrrrl"))
    for c in report.cases:
        if not c.scored:
            print(f"  {c.name}: not scored: {c.reason}")
    print("error = (predicted - measured) / measured, step time")
    for basis in ("datasheet", "calibrated"):
        s = report.summary()[basis]
        med = "-" if s["median_abs_error"] is None else f"{s['median_abs_error']:.1%}"
        mx = "-" if s["max_abs_error"] is None else f"{s['max_abs_error']:.1%}"
        print(f"{basis:>10}: median |error| {med}, max |error| {mx} over {s['scored']} "
              "scored training cases")
    for c in cov:
        print(f"{100 * c['level']:g}% step-time intervals, leave one {c['leave_out']} out: "
              f"cover {c['covered'] or 0:.1%} of {c['cases']} cases (calibrated range "
              f"{c['inside']['covered'] or 0:.1%} of {c['inside']['cases']}, outside "
              f"{c['outside']['covered'] or 0:.1%} of {c['outside']['cases']})")
    return 0


def is_fleet_serve(reg, args) -> bool:
    """``roofkit serve`` on a fleet layout: --pp, --ep or --attention-dp above one, or a
    cluster (a catalogue cluster or NxDEVICE) where the device goes."""
    from ..fleet.cluster import parse_ad_hoc

    if max(getattr(args, "pp", 1), getattr(args, "ep", 1), getattr(args, "attention_dp", 1)) > 1:
        return True
    name = args.device
    return name not in reg.devices and (name in reg.clusters or parse_ad_hoc(name) is not None)


def serve_on_cluster(reg, args) -> int:
    from ..errors import RoofkitError
    from ..fleet.serving import serve_fleet

    if args.max_load or args.engine:
        raise RoofkitError("--max-load and --engine are single-node options; a fleet layout "
                           "(--pp, --ep, --attention-dp, a cluster) serves a static --batch")
    devices = args.tp * args.pp * args.attention_dp
    cluster = args.device
    if args.device in reg.devices:  # a device: the ad hoc cluster of the layout's devices
        cluster = f"{devices}x{reg.device(args.device).name}"
    basis = args.basis  # None: the one default rule, on the cluster's device
    if basis is None:
        from ..circuit.roofline import resolve_basis

        basis = resolve_basis("auto", reg.cluster(cluster).device, reg)
    est = serve_fleet(args.workload, cluster, batch=args.batch or 1,
                      input_len=args.input_len, output_len=args.output_len, tp=args.tp,
                      pp=args.pp, ep=args.ep, attention_dp=args.attention_dp,
                      precision=args.precision, kv_cache_dtype=args.kv_cache_dtype,
                      basis=basis, registry=reg, require_fit=args.require_fit)
    from ..intervals import check_level

    level = check_level(getattr(args, "interval", 0.8))
    d = est.to_dict(level=level)
    if args.json:
        common.print_json(d)
        return 0
    lo = est.layout
    print(f"{est.workload} on {lo['devices']} x {est.device} ({est.cluster}): tp {lo['tp']}, "
          f"pp {lo['pp']}, ep {lo['ep']}, attention dp {lo['attention_dp']}, {lo['precision']}"
          f", batch {est.batch} x ({args.input_len} in, {args.output_len} out)")
    print(f"TTFT {d['ttft_ms']:.1f} ms, ITL {d['itl_ms']:.2f} ms, e2e {d['e2e_ms']:.0f} ms, "
          f"{d['output_tokens_per_s']:,.0f} output tokens/s")
    print(f"memory per device {units.fmt(est.memory_per_device_bytes, 'bytes')} of "
          f"{units.fmt(est.capacity, 'bytes')}: {'fits' if est.fits else 'does not fit'}")
    for name, iv in d["intervals"].items():
        print(f"{100 * level:g}% interval {name}: {iv['lo']:.4g} .. {iv['hi']:.4g} "
              f"({iv['stratum']})")
    print(f"basis: {est.basis}")
    return 0
