"""Serving commands: ``serve`` (one configuration) and ``validate`` (every published case)."""

from __future__ import annotations

from .. import units
from . import common


def register(sub) -> None:
    p = sub.add_parser("serve", help="TTFT, inter-token latency, end-to-end latency and "
                       "throughput of a batch of requests on one node")
    p.add_argument("workload", help="workload key, alias or TOML path")
    p.add_argument("device", help="device key, alias or TOML path")
    p.add_argument("--tp", type=int, default=1, help="tensor-parallel devices (default 1)")
    p.add_argument("--batch", type=int, default=None,
                   help="requests in the batch (default 1; --max-load sizes it instead)")
    p.add_argument("--input-len", type=int, default=128, help="prompt tokens (default 128)")
    p.add_argument("--output-len", type=int, default=128, help="generated tokens (default 128)")
    p.add_argument("-p", "--precision", default=None,
                   help="weight format (default: the workload's, else bf16): bf16, fp8, "
                        "awq-int4-g128, gptq-int4-g128, q4_k_m, q8_0, q4f16_1, nf4-dq...")
    p.add_argument("--kv-dtype", dest="kv_cache_dtype", default="bf16", metavar="D",
                   help="KV-cache format (default bf16); kv_cache_dtype= in Python")
    p.add_argument("--basis", choices=("datasheet", "calibrated"), default="calibrated",
                   help="measured achievable constants (default) or datasheet ceilings")
    p.add_argument("--engine", default=None,
                   help="engine profile of specs/calibration whose measured per-step host "
                        "time is added on the calibrated basis (vllm, tensorrt-llm-session)")
    p.add_argument("--max-load", action="store_true",
                   help="offline serving at full load: the batch is as many requests as the "
                        "KV cache admits (in-flight batching), not --batch")
    p.add_argument("--admission", choices=("grow", "reserve"), default=None,
                   help="with --max-load: the KV a request holds, its tokens so far (grow, "
                        "vLLM) or all input + output tokens from admission (reserve, "
                        "TensorRT-LLM's default)")
    p.add_argument("--max-requests", type=int, default=None, metavar="N",
                   help="with --max-load: at most N requests in flight")
    p.add_argument("--require-fit", action="store_true",
                   help="exit 2 when weights and KV do not fit in device memory")
    p.add_argument("--pp", type=int, default=1, help="pipeline stages (a fleet layout)")
    p.add_argument("--ep", type=int, default=1, help="expert-parallel devices (MoE)")
    p.add_argument("--attention-dp", type=int, default=1, metavar="D",
                   help="data-parallel attention replicas (with --ep)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("validate", help="predict every published measurement of "
                       "specs/validation on both bases and report the errors")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true")
    out.add_argument("--markdown", action="store_true",
                     help="the tables and summary as Markdown (for docs and reports)")
    p.add_argument("--kind", choices=("serving", "training"), default="serving",
                   help="serving (specs/validation) or training (specs/training) cases")
    p.set_defaults(func=cmd_validate)


def _ms(v) -> str:
    return "-" if v is None else f"{v:.2f} ms"


def cmd_serve(args) -> int:
    from ..errors import RoofkitError
    from ..serving import max_load, serve

    reg = common.registry(args)
    from .fleet import is_fleet_serve, serve_on_cluster

    if is_fleet_serve(reg, args):
        return serve_on_cluster(reg, args)
    if args.max_load and args.batch is not None:
        raise RoofkitError("--max-load sizes the batch from the KV cache; drop --batch "
                           "(cap the requests in flight with --max-requests N)")
    if not args.max_load and (args.admission or args.max_requests):
        raise RoofkitError("--admission and --max-requests belong to --max-load; add "
                           "--max-load, or set the batch with --batch B")
    if args.max_load:
        est = max_load(args.workload, args.device, input_len=args.input_len,
                       output_len=args.output_len, tp=args.tp, precision=args.precision,
                       kv_cache_dtype=args.kv_cache_dtype, basis=args.basis, registry=reg,
                       engine=args.engine, max_requests=args.max_requests,
                       admission=args.admission or "grow")
    else:
        est = serve(args.workload, args.device, batch=1 if args.batch is None else args.batch,
                    input_len=args.input_len,
                    output_len=args.output_len, tp=args.tp, precision=args.precision,
                    kv_cache_dtype=args.kv_cache_dtype, basis=args.basis, registry=reg,
                    engine=args.engine,
                    require_fit=args.require_fit)
    data = est.to_dict()
    if args.json:
        common.print_json(data)
        return 0
    tp = f"{est.tp} x " if est.tp > 1 else ""
    print(f"{est.workload} on {tp}{est.device}: batch {est.batch}, {est.input_len} in / "
          f"{est.output_len} out, weights {est.precision} ({est.slot} slot), "
          f"KV {est.kv_cache_dtype}")
    rows = [
        ["time to first token", _ms(data["ttft_ms"])],
        ["inter-token latency (mean)", _ms(data["itl_ms"])],
        ["  first / last step", f"{_ms(data['itl_first_ms'])} / {_ms(data['itl_last_ms'])}"],
        ["end-to-end", _ms(data["e2e_ms"])],
        ["output tokens/s", f"{data['output_tokens_per_s']:.1f}"],
        ["energy", f"{units.fmt(est.energy, 'energy')} "
         f"({units.fmt(est.energy_per_output_token, 'energy')} per output token, "
         f"all {est.tp} device{'s' if est.tp > 1 else ''})"],
        ["host per decode step", f"{data['host']['decode_step_s'] * 1e3:.3f} ms "
         f"({data['host']['launches_per_step']} launches, counted from the circuit)"],
        ["memory per device", f"{units.fmt(est.memory_per_device, 'bytes')} of "
         f"{units.fmt(est.usable_memory, 'bytes')} usable"],
        ["fits", f"{'yes' if est.fits else 'no'}; largest batch at context "
         f"{est.input_len + est.output_len}: {data['max_batch']}"],
    ]
    print(common.table(rows, ["", "estimate"], "lr"))
    print(f"\nbasis: {est.basis} (cost model {est.cost_model}): {est.basis_detail}")
    for note in est.notes:
        print(f"note: {note}")
    return 0


def _num(v) -> str:
    if v is None:
        return "-"
    return f"{v:.4g}"


def _err(v) -> str:
    return "-" if v is None else f"{v * 100:+.1f}%"


def _pct(v) -> str:
    return "-" if v is None else f"{v * 100:.1f}%"


def _first_sentence(text: str) -> str:
    text = " ".join(text.replace("|", "/").split())
    cut = text.find(". ")
    return text if cut < 0 else text[:cut + 1]


def _markdown(report) -> str:
    """The validation report as Markdown: the scored cases, the summary, the rest."""
    from ..serving.validation import OTHER, SCORED

    def row(c, *extra):
        cells = [f"`{c.name}`", c.metric, c.config, _num(c.measured),
                 _num(c.predicted.get("datasheet")), _err(c.error("datasheet")),
                 _num(c.predicted.get("calibrated")), _err(c.error("calibrated")), *extra]
        return "| " + " | ".join(cells) + " |"

    head = "| case | metric | config | measured | datasheet | error | calibrated | error |"
    rule = "|---|---|---|---:|---:|---:|---:|---:|"
    scored = [c for c in report.cases if c.group == SCORED]
    lines = [f"Scored: {len(scored)} {SCORED} cases.", "", head, rule]
    lines += [row(c) for c in scored]
    lines += ["", "| basis | median abs error | max abs error |", "|---|---:|---:|"]
    for basis in ("datasheet", "calibrated"):
        lines.append(f"| {basis} | {_pct(report.median(basis))} | {_pct(report.max(basis))} |")
    other = [c for c in report.cases if c.group == OTHER]
    if other:
        lines += ["", f"Listed, not scored: {len(other)} cases.", "",
                  head[:-1] + " why not scored |", rule + "---|"]
        lines += [row(c, _first_sentence(c.reason)) for c in other]
    return "\n".join(lines)


def cmd_validate(args) -> int:
    if getattr(args, "kind", "serving") == "training":
        from .fleet import cmd_validate_training

        return cmd_validate_training(args)
    from ..serving.validation import OTHER, SCORED, run

    reg = common.registry(args)
    report = run(registry=reg)
    if args.json:
        common.print_json(report.to_dict())
        return 0
    if args.markdown:
        print(_markdown(report))
        return 0
    headers = ["case", "metric", "config", "measured", "datasheet", "err", "calibrated", "err"]
    for group in (SCORED, OTHER):
        cases = [c for c in report.cases if c.group == group]
        if not cases:
            continue
        print(f"{group} ({len(cases)} cases)")
        rows = [[c.name, c.metric, c.config, _num(c.measured),
                 _num(c.predicted.get("datasheet")), _err(c.error("datasheet")),
                 _num(c.predicted.get("calibrated")), _err(c.error("calibrated"))]
                for c in cases]
        print(common.table(rows, headers, "lllrrrrr"))
        if group == OTHER:
            for c in cases:
                print(f"  {c.name}: {c.reason}")
        print()
    print("error = (predicted - measured) / measured")
    for basis in ("datasheet", "calibrated"):
        n = len(report.errors(basis))
        print(f"{basis:>10}: median |error| {_pct(report.median(basis))}, max |error| "
              f"{_pct(report.max(basis))} over {n} {SCORED} cases")
    return 0
