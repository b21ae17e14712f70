"""``roofkit plot roofline|sweep|breakdown|serve ... -o FILE.png|.svg``: pictures of results.

``roofline``: the device's ceilings per compute slot and bandwidth tier with the circuit's
nodes and the whole step by arithmetic intensity; ``sweep``: two columns of a sweep with its
Pareto front; ``breakdown``: a stacked bar per node or op of a decode, prefill or serve;
``serve``: the inter-token latency over the output steps. Needs the ``plot`` extra.
"""

from __future__ import annotations

from . import common


def _target(p) -> None:
    p.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="where to write the picture: .png, .svg or .pdf")


def _step_options(p, modes=("decode", "prefill")) -> None:
    p.add_argument("workload", help="workload key, alias or TOML path")
    p.add_argument("device", help="device key, alias or TOML path")
    p.add_argument("--mode", choices=modes, default=modes[0],
                   help=f"which step to draw (default {modes[0]})")
    p.add_argument("-b", "--batch", type=int, default=1,
                   help="decode: sequences in the batch; prefill: sequences prefilled; "
                        "serve: requests (default 1)")
    p.add_argument("--context", type=int, default=2048,
                   help="decode: tokens already in each sequence (default 2048)")
    p.add_argument("--tokens", type=int, default=2048,
                   help="prefill: prompt tokens per sequence (default 2048)")
    p.add_argument("--precision", default=None, help="weight format (default the workload's)")
    p.add_argument("--kv-dtype", dest="kv_dtype", default=None, help="KV cache format")
    p.add_argument("--basis", choices=("datasheet", "calibrated"), default=None,
                   help="default: calibrated where the device has a calibration, else "
                        "datasheet")
    p.add_argument("--tp", type=int, default=1, help="tensor-parallel devices (default 1)")


def _serve_options(p) -> None:
    p.add_argument("--input-len", type=int, default=128, help="prompt tokens (default 128)")
    p.add_argument("--output-len", type=int, default=128,
                   help="generated tokens (default 128)")


def register(sub) -> None:
    p = sub.add_parser("plot", help="draw a roofline, sweep, breakdown or serving picture",
                       description=__doc__.split("\n\n")[0])
    kinds = p.add_subparsers(dest="picture", metavar="PICTURE",
                             parser_class=type(p))
    r = kinds.add_parser("roofline", help="device ceilings with the step's nodes as points")
    _step_options(r)
    _target(r)
    r.set_defaults(func=cmd_plot)

    b = kinds.add_parser("breakdown", help="stacked bar of where a step's time goes")
    _step_options(b, ("decode", "prefill", "serve"))
    b.add_argument("--by", choices=("node", "op", "section"), default="node")
    b.add_argument("--top", type=common.count(1), default=12,
                   help="segments shown; the rest summed")
    _serve_options(b)
    _target(b)
    b.set_defaults(func=cmd_plot)

    s = kinds.add_parser("serve", help="inter-token latency over the output steps")
    _step_options(s, ("serve",))
    _serve_options(s)
    _target(s)
    s.set_defaults(func=cmd_plot)

    w = kinds.add_parser("sweep", help="two columns of a sweep with its Pareto front")
    w.add_argument("workload", help="workload key, alias or TOML path")
    w.add_argument("devices", nargs="+", metavar="DEVICE")
    w.add_argument("-b", "--batch-sizes", type=common.int_list, default=[1, 8, 64],
                   metavar="1:256:x2", help="batch sizes (lists and ranges; default 1,8,64)")
    w.add_argument("-p", "--precisions", type=common.name_list, default=None,
                   metavar="fp8,bf16", help="default: the workload's format")
    w.add_argument("--mode", choices=("engine", "decode", "prefill"), default="decode")
    w.add_argument("--context", type=common.int_list, default=None, metavar="2048",
                   help="decode: KV context; prefill: prompt tokens (lists and ranges)")
    w.add_argument("--tp", type=common.int_list, default=None, metavar="1")
    w.add_argument("--basis", choices=("datasheet", "calibrated"), default=None,
                   help="decode/prefill; default: calibrated where the device has a "
                        "calibration, else datasheet")
    w.add_argument("--where", action="append", default=[], metavar="EXPR",
                   help="keep rows where EXPR holds (repeatable), e.g. 'itl_ms <= 20'")
    w.add_argument("--x", default="throughput_per_s", metavar="COL",
                   help="x column (default throughput_per_s)")
    w.add_argument("--y", default="latency_ms", metavar="COL",
                   help="y column (default latency_ms)")
    w.add_argument("--pareto", action="store_true", help="draw the Pareto front of x and y")
    w.add_argument("--include-infeasible", action="store_true",
                   help="also draw configurations that do not fit")
    _target(w)
    w.set_defaults(func=cmd_plot)
    p.set_defaults(func=lambda args: (p.print_help(), 1)[1])


def _basis(args, reg, device) -> str:
    from ..circuit.roofline import default_basis

    return args.basis or default_basis(reg.device(device), reg)


def _result(args, reg):
    """The result the picture draws."""
    from ..circuit.api import decode, prefill
    from ..serving import serve

    if args.picture == "sweep":
        from ..sweep import sweep

        table = sweep(args.workload, args.devices, args.precisions, args.batch_sizes,
                      contexts=args.context, tp=args.tp, mode=args.mode,
                      basis=(args.basis or "auto") if args.mode != "engine" else None,
                      registry=reg)
        for cond in args.where:
            table = table.where(cond)
        if not args.include_infeasible:
            table = table.where("feasible")
        return table
    basis = _basis(args, reg, args.device)
    if args.mode == "serve":
        return serve(args.workload, args.device, batch=args.batch, input_len=args.input_len,
                     output_len=args.output_len, tp=args.tp, precision=args.precision,
                     kv_cache_dtype=args.kv_dtype or "bf16", basis=basis, registry=reg)
    kw = dict(precision=args.precision, kv_cache_dtype=args.kv_dtype, registry=reg,
              tp=args.tp, basis=basis)
    if args.mode == "prefill":
        return prefill(args.workload, args.device, tokens=args.tokens, seqs=args.batch,
                       head=True, **kw)
    return decode(args.workload, args.device, batch=args.batch, context=args.context, **kw)


def cmd_plot(args) -> int:
    from .. import plot
    from ..plot import charts, roofline

    plot.figure(1, 1)  # matplotlib present? (a clear message and exit 1 if not)
    plot.target(args.output)
    reg = common.registry(args)
    result = _result(args, reg)
    if args.picture == "roofline":
        fig = roofline.roofline(result, device=args.device, registry=reg)
    elif args.picture == "breakdown":
        fig = charts.breakdown(result, by=args.by, top=args.top)
    elif args.picture == "serve":
        fig = charts.serve(result)
    else:
        fig = charts.sweep(result, args.x, args.y, pareto=args.pareto)
    path = plot.save(fig, args.output)
    basis = getattr(result, "basis", "")
    print(f"wrote {path} ({args.picture}: {result.title()}; basis: "
          f"{basis if len(basis) < 80 else basis[:77] + '...'})")
    return 0
