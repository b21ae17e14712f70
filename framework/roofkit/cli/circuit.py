"""Circuit commands: ``decode``, ``prefill``, ``fit`` — per-node roofline estimates.

``roofkit decode WORKLOAD DEVICE --batch B --context N`` prints every node's FLOPs, bytes,
time and bound sorted by time, the totals and the basis; ``prefill`` the same for T prompt
tokens; ``fit`` whether S sequences of N tokens fit in usable memory, and by how much.
``--tp N`` costs one of N tensor-parallel devices (rows include the all-reduce nodes).
"""

from __future__ import annotations

from .. import units
from . import common


def _common(p, *, costed: bool = True) -> None:
    p.add_argument("workload", help="workload key, alias or TOML path (a template workload)")
    p.add_argument("device", help="device key, alias or TOML path")
    p.add_argument("--precision", help="weights and activations format (bf16, fp8, nvfp4...); "
                   "the workload's [formats] table still wins for the roles it names")
    p.add_argument("--kv-dtype", dest="kv_dtype", help="KV cache format (bf16, fp8)")
    p.add_argument("--ssm-dtype", dest="ssm_dtype",
                   help="recurrent state format (f32, f16, bf16); default f32")
    p.add_argument("--format", dest="formats", action="append", default=[], metavar="ROLE=FMT",
                   help="a role's format, e.g. experts=nvfp4 or activations=fp8 (repeatable)")
    p.add_argument("--basis", choices=("datasheet", "calibrated"), default="datasheet",
                   help="device constants: datasheet ceilings or measured achievable values")
    p.add_argument("--tp", type=int, default=1,
                   help="tensor-parallel devices of one node; figures are one device's "
                        "(default 1)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    if costed:
        p.add_argument("--cost-model", dest="cost_model", default=None,
                       help="registered cost model (roofline, roofline_launch, "
                            "roofline_calibrated...); default by basis: roofline on the "
                            "datasheet, roofline_calibrated on the calibrated basis")
        p.add_argument("--by", choices=("node", "op", "section"), default="node",
                       help="group the rows")
        p.add_argument("--top", type=int, default=0, help="show only the N longest rows")


def register(sub) -> None:
    p = sub.add_parser("decode", help="per-node estimate of one decode step")
    _common(p)
    p.add_argument("--batch", type=int, default=1, help="sequences in the batch")
    p.add_argument("--context", type=int, default=2048, help="tokens already in each sequence")
    p.set_defaults(func=cmd_decode)

    p = sub.add_parser("prefill", help="per-node estimate of a prefill")
    _common(p)
    p.add_argument("--tokens", type=int, default=2048, help="prompt tokens per sequence")
    p.add_argument("--seqs", type=int, default=1, help="sequences prefilled together")
    p.set_defaults(func=cmd_prefill)

    p = sub.add_parser("fit", help="whether weights, KV cache and state fit in device memory")
    _common(p, costed=False)
    p.add_argument("--seqs", type=int, default=1, help="concurrent sequences")
    p.add_argument("--context", type=int, default=2048, help="tokens per sequence")
    p.add_argument("--enforce", action="store_true", help="exit 2 when it does not fit")
    p.set_defaults(func=cmd_fit)


def _settings(args) -> dict:
    out = {"basis": args.basis, "tp": args.tp}
    if args.ssm_dtype:
        out["ssm_h_dtype"] = args.ssm_dtype
    if args.formats:
        table = {}
        for item in args.formats:
            role, sep, fmt = item.partition("=")
            if not sep or not role.strip() or not fmt.strip():
                raise ValueError(f"--format takes ROLE=FORMAT (e.g. experts=nvfp4), got {item!r}")
            table[role.strip()] = fmt.strip()
        out["formats"] = table
    return out


def _t(v) -> str:
    return units.fmt(float(v), "time")


def _print_estimate(est, args, header: str) -> None:
    if args.json:
        common.print_json(est.to_dict(by=args.by))
        return
    rows = est.by(args.by)
    total = est.time
    shown = rows[: args.top] if args.top > 0 else rows
    table = [[r.node, r.op, r.section, r.count, units.fmt(r.flops, "compute"),
              units.fmt(r.bytes, "bytes"), _t(r.time), f"{100 * r.time / total:.1f}%",
              r.bound, r.slot] for r in shown]
    print(header)
    print(common.table(table, [args.by, "op", "section", "count", "FLOPs", "bytes", "time",
                               "share", "bound", "slot"], "lllrrrrrll"))
    if len(shown) < len(rows):
        print(f"... {len(rows) - len(shown)} more rows (--top 0 for all)")
    print()
    link = f", interconnect {_t(est.link_time)}" if est.tp > 1 else ""
    print(f"total {_t(total)}  ({est.bound}-bound; memory {_t(est.memory_time)}, compute "
          f"{_t(est.compute_time)}{link}; {units.fmt(est.flops, 'compute')}, "
          f"{units.fmt(est.bytes, 'bytes')}); {est.tokens_per_second:,.0f} tokens/s")
    if est.tp > 1:
        print(f"per device: one of {est.tp} tensor-parallel devices (its shard of weights, "
              "heads and KV, and its all-reduces)")
    print(f"basis: {est.basis}; cost model {est.cost_model}")
    for note in est.notes:
        print(f"note: {note}")


def cmd_decode(args) -> int:
    from ..circuit.api import decode

    reg = common.registry(args)
    est = decode(args.workload, args.device, batch=args.batch, context=args.context,
                 precision=args.precision, kv_cache_dtype=args.kv_dtype,
                 cost_model=args.cost_model, registry=reg, **_settings(args))
    _print_estimate(est, args, f"decode step: {est.workload} on {est.device}, batch "
                    f"{args.batch} at context {args.context} (precision "
                    f"{est.settings.get('precision') or 'per checkpoint'}, activations "
                    f"{est.settings['activations']}, KV {est.settings['kv_cache_dtype']})")
    return 0


def cmd_prefill(args) -> int:
    from ..circuit.api import prefill

    reg = common.registry(args)
    est = prefill(args.workload, args.device, tokens=args.tokens, seqs=args.seqs,
                  precision=args.precision, kv_cache_dtype=args.kv_dtype,
                  cost_model=args.cost_model, registry=reg, **_settings(args))
    _print_estimate(est, args, f"prefill: {est.workload} on {est.device}, {args.seqs} x "
                    f"{args.tokens} tokens at causal half-context {max(args.tokens // 2, 1)}")
    return 0


def cmd_fit(args) -> int:
    from ..circuit.api import fits

    reg = common.registry(args)
    fit = fits(args.workload, args.device, seqs=args.seqs, context=args.context,
               precision=args.precision, kv_cache_dtype=args.kv_dtype, registry=reg,
               **_settings(args))
    if args.json:
        common.print_json(fit.to_dict())
    else:
        fp = fit.footprint
        b = lambda v: units.fmt(v, "bytes")  # noqa: E731
        where = f"each of {fit.tp} x " if fit.tp > 1 else ""
        print(f"{fit.workload} on {where}{fit.device}: {fit.seqs} sequence(s) x {fit.context} "
              "tokens")
        rows = [["weights", b(fit.weights)]]
        rows += [[f"  {role}", b(v)] for role, v in
                 sorted(fp.weights_by_role.items(), key=lambda kv: -kv[1])]
        rows += [[f"KV cache ({b(fp.kv_per_token)}/token at {fp.kv_cache_dtype})",
                  b(fit.kv_bytes)],
                 [f"recurrent state ({b(fp.state_per_seq)}/sequence at {fp.ssm_h_dtype})",
                  b(fit.state_bytes)],
                 ["required", b(fit.required)],
                 [f"usable ({fit.usable_fraction:g} x {b(fit.capacity)})", b(fit.usable)]]
        print(common.table(rows, ["", "bytes"], "lr"))
        if fit.weights > fit.usable:
            most = "the weights alone exceed usable memory"
        else:
            most = f"at most {fit.max_seqs} sequences of {fit.context} tokens fit"
        if fit.fits:
            print(f"\nFITS with {b(fit.margin)} to spare ({100 * fit.margin / fit.usable:.1f}% "
                  f"of usable); {most}.")
        else:
            print(f"\nDOES NOT FIT: short by {b(-fit.margin)} "
                  f"({100 * -fit.margin / fit.usable:.1f}% of usable); {most}.")
        print(f"usable fraction: {fit.usable_reason}")
        print(f"weight floor: {b(fp.weight_floor)} read per decode row, "
              f"{_t(fp.weight_floor_time)} at the device bandwidth")
        print(f"not counted: {fit.not_counted}")
    if args.enforce and not fit.fits:
        return 2
    return 0
