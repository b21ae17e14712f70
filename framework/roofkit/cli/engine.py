"""Engine commands: ``solve``, ``sweep`` and ``workloads``.

``roofkit solve WORKLOAD DEVICE`` prints one profile (``--json``: the keys of
``PerformanceProfile.to_dict``); ``--enforce-fit`` exits 2 when the footprint does not fit.
``roofkit sweep WORKLOAD DEVICE...`` prints a table, CSV or JSON of the product.
``roofkit workloads`` lists the catalogue with derived parameters and FLOPs (exit 1, naming
each and why, when any workload cannot be derived).
"""

from __future__ import annotations

import csv
import math
import sys

from .. import units
from ..results import sig
from . import common


def _finite(obj):
    """``obj`` with non-finite floats as None: strict JSON (a configuration with no memory
    path has an infinite latency)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite(v) for v in obj]
    return obj


def register(sub) -> None:
    p = sub.add_parser("solve", help="single-device roofline of a workload on a device",
                       description="T = max(F_batch/(eta*F_peak), W*(1+0.1*B)/BW) + T_dispatch "
                                   "+ L*T_layer*launch_multiplier")
    p.add_argument("workload", help="workload key, alias or TOML path")
    p.add_argument("device", help="device key, alias or TOML path")
    p.add_argument("-b", "--batch-size", "--batch", type=int, default=1, metavar="N",
                   dest="batch_size")
    p.add_argument("-p", "--precision", default="fp16", metavar="P")
    p.add_argument("-e", "--efficiency", type=float, default=0.5, metavar="EFF",
                   help="declared compute efficiency in [1e-9, 1] (default 0.5)")
    p.add_argument("--train", action="store_true", help="a training step instead of inference")
    p.add_argument("--seq-len", type=int, default=2048, metavar="N",
                   help="tokens per training sequence (default 2048)")
    p.add_argument("--zero-stage", type=int, default=0, metavar="Z", help="ZeRO stage 0-3")
    p.add_argument("--dp-size", type=int, default=1, metavar="N",
                   help="data-parallel size that ZeRO shards over")
    p.add_argument("--lora", action="store_true", help="LoRA training-memory approximation")
    p.add_argument("--recompute", action="store_true", help="full activation recomputation")
    p.add_argument("--enforce-fit", action="store_true",
                   help="exit 2 when the footprint does not fit the device")
    p.add_argument("--cost-model", default=None, metavar="NAME",
                   help="cost a template workload's inference through its circuit with this "
                        "cost model (roofline, roofline_launch) instead of the reference "
                        "equation; --seq-len is then the decode context")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_solve)

    p = sub.add_parser("sweep", help="inference profiles over devices x batch sizes x precisions")
    p.add_argument("workload", help="workload key, alias or TOML path")
    p.add_argument("devices", nargs="+", metavar="DEVICE")
    p.add_argument("-b", "--batch-sizes", type=common.int_list, default=[1], metavar="1,8,64")
    p.add_argument("-p", "--precisions", type=common.name_list, default=["fp16"],
                   metavar="bf16,fp8")
    p.add_argument("-e", "--efficiency", type=float, default=0.5, metavar="EFF")
    p.add_argument("--include-infeasible", action="store_true",
                   help="also list configurations that do not fit, with the reason")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--csv", action="store_true")
    out.add_argument("--json", action="store_true")
    from ..sweep import cli as sweep_cli  # --where/--pareto/--best-by/--mode/--context/--tp

    sweep_cli.add_arguments(p)
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("workloads", help="list the workload catalogue with derived counts")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_workloads)


def cmd_solve(args) -> int:
    from ..engine import Engine

    reg = common.registry(args)
    profile = Engine.solve(
        args.workload, args.device, batch_size=args.batch_size, precision=args.precision,
        efficiency=args.efficiency, is_training=args.train, seq_len=args.seq_len,
        zero_stage=args.zero_stage, dp_size=args.dp_size, is_lora=args.lora,
        activation_recomputation=args.recompute, cost_model=args.cost_model, registry=reg)
    if args.json:
        common.print_json(_finite(profile.to_dict()))
    else:
        print(profile.summary())
        for line in _reference_note(profile, args):
            print(line)
        print("\ntrace:")
        for line in profile.trace:
            print(f"  {line}")
        print(f"\nbasis: {profile.basis}")
    if args.enforce_fit and not profile.feasible:
        print(f"roofkit: does not fit (--enforce-fit, exit 2): {profile.trace[0]}",
              file=sys.stderr)
        return 2
    return 0


def _reference_note(profile, args) -> list[str]:
    """What ``solve`` is and is not: the reference single-device equation (weights only, no
    KV cache; fp16 unless -p; datasheet ceilings at a declared efficiency), and where the
    KV-aware, calibrated answer is."""
    lines = ["note: this is the reference single-device Engine equation on datasheet "
             f"ceilings at a declared efficiency {args.efficiency:g}, precision "
             f"{args.precision} (the reference's default unless -p)"]
    if profile.sample.startswith("token"):
        lines[0] += "; it reads the weights only, without the KV cache"
        lines.append(f"      for the KV-aware answer: roofkit decode {args.workload} "
                     f"{args.device} --batch {args.batch_size} --context 2048 (one step), "
                     f"or roofkit serve {args.workload} {args.device} --batch "
                     f"{args.batch_size} (TTFT, ITL, tokens/s; calibrated where measured)")
    return lines


_COLUMNS = ["hardware", "batch_size", "precision", "feasible", "latency_ms",
            "latency_compute_ms", "latency_memory_ms", "latency_overhead_ms", "throughput_per_s",
            "energy_j", "memory_footprint_bytes", "bottleneck", "overhead_dominated", "mfu",
            "hfu", "bandwidth_path", "compute_slot", "fell_back", "basis", "reason"]
#: what Engine.solve's device numbers rest on (the profile's ``basis`` has the fields)
_BASIS = "datasheet"


def _flat(row) -> dict:
    d = row["profile"].to_dict()
    out = {"hardware": row["hardware"], "batch_size": row["batch_size"],
           "precision": row["precision"]}
    for key in _COLUMNS[3:-2]:
        out[key] = d[key]
    out["basis"] = _BASIS
    out["reason"] = row.get("reason", "")
    return out


def cmd_sweep(args) -> int:
    from ..engine import Engine
    from ..sweep import cli as sweep_cli

    reg = common.registry(args)
    if sweep_cli.wanted(args):  # query flags: the columnar roofkit.sweep path
        return sweep_cli.run(args, reg)
    rows = Engine.sweep(args.workload, args.devices, args.batch_sizes, args.precisions,
                        efficiency=args.efficiency, include_infeasible=args.include_infeasible,
                        registry=reg)
    flat = [_flat(r) for r in rows]
    if args.json:
        common.print_json(_finite({
            "basis": _BASIS, "rows": flat,
            "omitted": [{k: r[k] for k in ("hardware", "batch_size", "precision", "reason")}
                        for r in rows.omitted]}))
        return 0
    if args.csv:
        writer = csv.DictWriter(sys.stdout, fieldnames=_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(flat)
        return 0
    table = [[r["hardware"], r["batch_size"], r["precision"],
              r["compute_slot"] + (" (fallback)" if r["fell_back"] else ""),
              units.fmt(r["latency_ms"] / 1e3, "time"), sig(r["throughput_per_s"]),
              units.fmt(r["energy_j"], "energy"), r["bottleneck"] +
              ("*" if r["overhead_dominated"] else ""), sig(r["mfu"], 3),
              "yes" if r["feasible"] else "no"] for r in flat]
    print(common.table(table, ["device", "batch", "precision", "slot", "latency",
                               "samples/s", "energy", "bound", "MFU", "fits"], "lrllrrrlrl"))
    if rows:
        print(f"\nsample: {rows[0]['profile'].sample}; * = overhead dominated; basis: "
              f"{_BASIS} (device spec ceilings, declared efficiency {args.efficiency:g})"
              + ("; (fallback): the device has no peak for the precision, so its default "
                 "peak is used" if any(r["fell_back"] for r in flat) else ""))
    if rows.omitted and not args.include_infeasible:
        print(f"{len(rows.omitted)} configuration(s) do not fit and are omitted "
              "(--include-infeasible lists them):")
        for r in rows.omitted:
            print(f"  {r['hardware']} batch {r['batch_size']} {r['precision']}: {r['reason']}")
    return 0


def _workload_row(reg, spec) -> dict:
    from ..engine.facts import cache_for

    row = {"name": spec.name, "display_name": spec.display_name, "domain": spec.domain,
           "kind": f"template {spec.template}" if spec.template else "generic",
           "aliases": list(spec.aliases)}
    try:
        wf = cache_for(reg).workload(spec)
    except Exception as exc:  # one broken or not-yet-derivable workload must not hide the rest
        row.update(params=None, active_params=None, flops=None, flops_per=None, layers=None,
                   error=str(exc))
        return row
    row.update(params=wf.params, active_params=wf.active_params, flops=wf.flops,
               flops_per="token" if wf.per_token else wf.sample, layers=wf.layers,
               published_params=spec.published.params,
               published_active_params=spec.published.active_params, source=wf.source)
    return row


def cmd_workloads(args) -> int:
    """The catalogue; exit 1 (after listing everything else) when any workload's
    parameters or FLOPs could not be derived, naming each and why."""
    reg = common.registry(args)
    rows = [_workload_row(reg, spec) for spec in reg.workloads.values()]
    errors = [r for r in rows if r.get("error")]
    if args.json:
        common.print_json(rows)
        _report_underived(errors)
        return 1 if errors else 0

    def count(v):
        if v is None:
            return "-"
        for scale, unit in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
            if v >= scale:
                return f"{v / scale:.4g} {unit}"
        return f"{v:g}"

    table = [[r["name"], r["domain"], r["kind"], count(r["params"]),
              count(r["active_params"]) if r["active_params"] != r["params"] else "",
              "-" if r["flops"] is None else units.fmt(r["flops"], "compute"),
              r["flops_per"] or "", r["layers"] or "-"] for r in rows]
    print(common.table(table, ["workload", "domain", "kind", "params", "active", "FLOPs",
                               "per", "layers"], "lllrrrll"))
    print(f"\n{len(rows)} workloads; FLOPs are forward FLOPs per token (templates) or per "
          "declared sample (generic).")
    _report_underived(errors)
    return 1 if errors else 0


def _report_underived(errors: list[dict]) -> None:
    if errors:
        print(f"roofkit: {len(errors)} workload(s) could not be derived:", file=sys.stderr)
        for r in errors:
            print(f"  {r['name']}: {r['error']}", file=sys.stderr)
