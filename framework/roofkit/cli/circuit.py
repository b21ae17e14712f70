"""Circuit commands: ``decode``, ``prefill``, ``fit`` — per-node roofline estimates.

``roofkit decode WORKLOAD DEVICE --batch B --context N`` prints every node's FLOPs, bytes,
time and bound sorted by time, the totals, whether the batch fits in memory and the basis;
``prefill`` the same for T prompt tokens (the layers; ``--head`` adds the embedding and the
LM head); ``fit`` whether S sequences of N tokens fit in usable memory, and by how much.
``--tp N`` costs one of N tensor-parallel devices (rows include the all-reduce nodes).
"""

from __future__ import annotations

from .. import units
from ..results import sig
from . import common


def _common(p, *, costed: bool = True) -> None:
    p.add_argument("workload", help="workload key, alias or TOML path (a template workload)")
    p.add_argument("device", help="device key, alias or TOML path")
    p.add_argument("-p", "--precision", help="weights and activations format (bf16, fp8, "
                   "nvfp4; weight-only awq-int4-g128, q4_k_m, nf4-dq... compute beside their "
                   "16-bit activations); the workload's [formats] table still wins for the "
                   "roles it names")
    p.add_argument("--kv-dtype", dest="kv_dtype", help="KV cache format (bf16, fp8)")
    p.add_argument("--ssm-dtype", dest="ssm_dtype",
                   help="GatedDeltaNet state format (f32, f16, f16-pool, bf16); default f32 "
                        "(Mamba states are f32 whatever it says)")
    p.add_argument("--format", dest="formats", action="append", default=[], metavar="ROLE=FMT",
                   help="a role's format, e.g. experts=nvfp4 or activations=fp8 (repeatable)")
    p.add_argument("--basis", choices=("datasheet", "calibrated"), default=None,
                   help="device constants: datasheet ceilings or measured achievable values "
                        "(default: calibrated where the device has a calibration, else "
                        "datasheet)")
    p.add_argument("--tp", type=int, default=1,
                   help="tensor-parallel devices of one node; figures are one device's "
                        "(default 1)")
    p.add_argument("--conv-windows", dest="conv_windows", action="store_true",
                   help="count the conv1d windows of recurrent layers in the memory check "
                        "(the reference leaves them out)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    if costed:
        p.add_argument("--cost-model", dest="cost_model", default=None,
                       help="registered cost model (roofline, roofline_launch, "
                            "roofline_calibrated...); default by basis: roofline on the "
                            "datasheet, roofline_calibrated on the calibrated basis")
        p.add_argument("--by", choices=("node", "op", "section"), default="node",
                       help="group the rows")
        p.add_argument("--top", type=common.count(0), default=0,
                       help="show only the N longest rows (0, the default: all)")
        p.add_argument("--engine", default=None,
                       help="engine profile of specs/engines whose kernel profiles cost the "
                            "nodes they cover (llama.cpp, tensorrt-llm, vllm)")
        p.add_argument("--engine-version", dest="engine_version", default=None, metavar="V",
                       help="the engine version whose kernels apply (default: the profile's "
                            "own)")
        common.add_interval(p)


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
    p.add_argument("--head", action="store_true",
                   help="add the embedding of the prompt and the LM head's logits of each "
                        "sequence's last token (a time to first token); default: the layers "
                        "only, as the reference")
    p.set_defaults(func=cmd_prefill)

    p = sub.add_parser("fit", help="whether weights, KV cache and state fit in device memory")
    _common(p, costed=False)
    p.add_argument("--seqs", type=int, default=1, help="concurrent sequences")
    p.add_argument("--context", type=int, default=2048, help="tokens per sequence")
    p.add_argument("--enforce", action="store_true", help="exit 2 when it does not fit")
    p.set_defaults(func=cmd_fit)


def _settings(args) -> dict:
    from ..errors import ArgumentError, shown

    out = {"basis": args.basis or "auto", "tp": args.tp}
    if args.conv_windows:
        out["conv_windows"] = True
    if args.ssm_dtype:
        out["ssm_h_dtype"] = args.ssm_dtype
    if getattr(args, "engine", None):
        out["engine"] = args.engine
    if getattr(args, "engine_version", None):
        out["engine_version"] = args.engine_version
    if args.formats:
        table = {}
        for item in args.formats:
            role, sep, fmt = item.partition("=")
            if not sep or not role.strip() or not fmt.strip():
                raise ArgumentError(f"--format takes ROLE=FORMAT (e.g. experts=nvfp4), got "
                                    f"{shown(item, 80)}")
            if role.strip() in table:
                raise ArgumentError(f"--format names role {shown(role.strip(), 80)} twice")
            table[role.strip()] = fmt.strip()
        out["formats"] = table
    return out


def _t(v) -> str:
    return units.fmt(float(v), "time")


#: the leading columns of each grouping: a group's name is its first column, once
_KEYS = {"node": (("node", "node"), ("op", "op"), ("section", "section")),
         "op": (("op", "node"), ("sections", "section")),
         "section": (("section", "node"),)}


def _memory_lines(est) -> list[str]:
    """Whether weights + the KV and state of the step's sequences fit, in words."""
    if est.footprint is None:
        return []
    b = lambda v: units.fmt(float(v), "bytes")  # noqa: E731
    fp = est.footprint
    req, usable, margin = est.memory_required, est.usable_memory, est.memory_margin
    where = f"each of {est.tp} x {est.device}" if est.tp > 1 else est.device
    seqs, ctx = int(est.memory_seqs), int(est.memory_context)
    state = float(seqs * fp.state_per_seq)
    parts = f"weights {b(fp.weights)} + KV {b(seqs * fp.kv_bytes(float(ctx)))}"
    if state or fp.conv_state_per_seq:
        parts += f" + state {b(state)}"
        conv = seqs * fp.conv_state_per_seq
        parts += (f" + conv windows {b(conv)}" if fp.count_conv else
                  f"; conv windows {b(conv)} not counted (--conv-windows counts them)")
    need = (f"memory: needs {b(req)} of {where}'s usable {b(usable)} "
            f"({est.usable_fraction:g} x {b(est.capacity)}) for {seqs} sequence(s) x {ctx} "
            f"tokens ({parts})")
    if est.fits:
        return [need, f"fits with {b(margin)} to spare"]
    return [need, f"DOES NOT FIT: short by {b(-margin)} "
            f"({100 * -margin / usable:.1f}% of usable); the time above assumes every byte "
            "resident"]


def _print_estimate(est, args, header: str) -> None:
    from ..intervals import check_level

    level = check_level(args.interval)
    if args.json:
        common.print_json(est.to_dict(by=args.by, level=level))
        return
    rows = est.by(args.by)
    total = est.time
    shown = rows[: args.top] if args.top > 0 else rows
    keys = _KEYS[args.by]
    table = [[getattr(r, attr) for _, attr in keys] +
             [r.count, units.fmt(r.flops, "compute"), units.fmt(r.bytes, "bytes"), _t(r.time),
              f"{sig(100 * r.time / total, 3)}%", r.bound, r.slot] for r in shown]
    print(header)
    print(common.basis_choice(args.basis, est.settings["basis"], est.device))
    if est.fits is False:
        print(f"DOES NOT FIT in memory: short by {units.fmt(float(-est.memory_margin), 'bytes')}"
              " (below); estimated as if it did")
    print(common.table(table, [name for name, _ in keys] +
                       ["count", "FLOPs", "bytes", "time", "share", "bound", "slot"],
                       "l" * len(keys) + "rrrrrll"))
    if len(shown) < len(rows):
        print(f"... {len(rows) - len(shown)} more rows (--top 0 for all)")
    print()
    link = f", interconnect {_t(est.link_time)}" if est.tp > 1 else ""
    print(f"total {_t(total)}  ({est.bound}-bound; memory {_t(est.memory_time)}, compute "
          f"{_t(est.compute_time)}{link}; {units.fmt(est.flops, 'compute')}, "
          f"{units.fmt(est.bytes, 'bytes')}); {est.tokens_per_second:,.0f} tokens/s")
    iv = est.interval(level)
    if iv is not None:
        print(f"{100 * level:g}% interval {_t(iv.lo)} .. {_t(iv.hi)} (out-of-sample "
              f"residuals of {iv.stratum})")
    if est.tp > 1:
        print(f"per device: one of {est.tp} tensor-parallel devices (its shard of weights, "
              "heads and KV, and its all-reduces)")
    for line in _memory_lines(est):
        print(line)
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
                  cost_model=args.cost_model, registry=reg, head=args.head, **_settings(args))
    what = "embedding, layers and LM head" if args.head else \
        "the layers (--head adds the embedding and LM head)"
    _print_estimate(est, args, f"prefill: {est.workload} on {est.device}, {args.seqs} x "
                    f"{args.tokens} tokens at causal half-context {max(args.tokens // 2, 1)}; "
                    f"{what}")
    return 0


def _state_formats(fp) -> str:
    """Which format each recurrent state is kept at: GatedDeltaNet at ssm_h_dtype, the
    Mamba/Mamba2 selective-scan state at f32 (the reference fixes it)."""
    ops = set(fp.state_by_op)
    if not ops:
        return f"at {fp.ssm_h_dtype}"
    out = []
    if ops - {"ssm_update"}:
        out.append(f"at {fp.ssm_h_dtype}")
    if "ssm_update" in ops:
        out.append("Mamba state at f32")
    return ", ".join(out)


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
                 [f"recurrent state ({b(fp.state_per_seq)}/sequence; {_state_formats(fp)})",
                  b(fit.state_bytes)]]
        if fp.conv_state_per_seq:
            rows.append([f"conv windows ({b(fp.conv_state_per_seq)}/sequence) "
                         f"{'counted' if fit.conv_counted else 'NOT counted'}",
                         b(fit.conv_state_bytes) if fit.conv_counted else
                         f"({b(fit.conv_state_bytes)})"])
        rows += [["required", b(fit.required)],
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
        print(f"weight floor: {b(fp.weight_floor)} read per decode row in the layers (routed "
              f"experts at top_k), {_t(fp.weight_floor_time)} at the device bandwidth; with "
              f"the embedding row and LM head {b(fp.weight_floor_all_sections)}, "
              f"{_t(fp.weight_floor_all_sections_time)}")
        print(f"not counted: {fit.not_counted}")
    if args.enforce and not fit.fits:
        return 2
    return 0
