"""Serving commands: ``serve`` (one configuration) and ``validate`` (every published case)."""

from __future__ import annotations

from .. import units
from ..results import sig
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
    p.add_argument("--basis", choices=("datasheet", "calibrated"), default=None,
                   help="measured achievable constants or datasheet ceilings (default: "
                        "calibrated where the device has a calibration, else datasheet)")
    p.add_argument("--engine", default=None,
                   help="engine profile of specs/calibration whose measured per-step host "
                        "time is added on the calibrated basis (vllm-v0, vllm-v1, "
                        "tensorrt-llm-session), or of specs/engines, whose host time and "
                        "kernel profiles cost the steps and nodes they cover (vllm = "
                        "vllm-v1 as in simulate, llama.cpp, tensorrt-llm)")
    p.add_argument("--engine-version", dest="engine_version", default=None, metavar="V",
                   help="the engine version whose kernel profiles apply (default: the "
                        "profile's own), e.g. 0.6.1 for TensorRT-LLM's masked MHA decode")
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
    p.add_argument("--pp", type=common.count(1), default=1, help="pipeline stages (a fleet layout)")
    p.add_argument("--ep", type=common.count(1), default=1, help="expert-parallel devices (MoE)")
    p.add_argument("--attention-dp", type=common.count(1), default=1, metavar="D",
                   help="data-parallel attention replicas (with --ep)")
    p.add_argument("--interval", type=float, default=0.8, metavar="LEVEL",
                   help="prediction interval level from out-of-sample validation residuals "
                        "(default 0.8)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("validate", help="predict every published measurement of "
                       "specs/validation on both bases and report the errors")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true")
    out.add_argument("--markdown", action="store_true",
                     help="the tables and summary as Markdown (for docs and reports)")
    p.add_argument("--kind", choices=("serving", "static", "load", "training", "energy"),
                   default="serving",
                   help="serving (default: the whole serving set, the static cases of "
                        "specs/validation and the load cases of specs/load_cases scored "
                        "together), static (specs/validation only), load (specs/load_cases "
                        "only, predicted by the simulator), training (specs/training) or "
                        "energy (specs/energy_cases, per-op and TDP models)")
    p.add_argument("--misses", type=float, default=None, metavar="FRACTION",
                   help="list only the scored cases whose leave-one-source-out |error| "
                        "exceeds FRACTION (0.35 for 35 %%), worst first, with their cause")
    p.add_argument("--case", action="append", default=None, metavar="NAME",
                   help="with --kind load or serving: only this load case (repeatable)")
    p.set_defaults(func=cmd_validate)


def _ms(v) -> str:
    return "-" if v is None else f"{sig(v)} ms"


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
    if not args.max_load and (args.admission or args.max_requests is not None):
        raise RoofkitError("--admission and --max-requests belong to --max-load; add "
                           "--max-load, or set the batch with --batch B")
    if args.max_load:
        est = max_load(args.workload, args.device, input_len=args.input_len,
                       output_len=args.output_len, tp=args.tp, precision=args.precision,
                       kv_cache_dtype=args.kv_cache_dtype, basis=args.basis or "auto",
                       registry=reg,
                       engine=args.engine, max_requests=args.max_requests,
                       admission=args.admission or "grow",
                       engine_version=args.engine_version)
    else:
        est = serve(args.workload, args.device, batch=1 if args.batch is None else args.batch,
                    input_len=args.input_len,
                    output_len=args.output_len, tp=args.tp, precision=args.precision,
                    kv_cache_dtype=args.kv_cache_dtype, basis=args.basis or "auto",
                    registry=reg,
                    engine=args.engine, engine_version=args.engine_version)
    from ..intervals import check_level

    level = check_level(args.interval)
    data = est.to_dict(level=level)
    if args.json:
        common.print_json(data)
        return _enforce_fit(args, est)
    from ..energy import model_name as energy_model_name

    tp = f"{est.tp} x " if est.tp > 1 else ""
    print(f"{est.workload} on {tp}{est.device}: batch {est.batch}, {est.input_len} in / "
          f"{est.output_len} out, weights {est.precision} ({est.slot} slot), "
          f"KV {est.kv_cache_dtype}")
    rows = [
        ["time to first token", _ms(data["ttft_ms"])],
        ["inter-token latency (mean)", _ms(data["itl_ms"])],
        ["  first / last step", f"{_ms(data['itl_first_ms'])} / {_ms(data['itl_last_ms'])}"],
        ["end-to-end", _ms(data["e2e_ms"])],
        ["output tokens/s", sig(data["output_tokens_per_s"])],
        ["energy", f"{units.fmt(est.energy, 'energy')} "
         f"({units.fmt(est.energy_per_output_token, 'energy')} per output token, "
         f"all {est.tp} device{'s' if est.tp > 1 else ''}, TDP model)"],
        *([["energy, per-op model", f"{units.fmt(est.energy_measured_model, 'energy')} ("
            f"{units.fmt(est.energy_measured_model / (est.batch * est.output_len), 'energy')}"
            " per output token, docs/energy.md)"]]
          if energy_model_name(est.device) == "per-op" else []),
        ["host per decode step", f"{sig(data['host']['decode_step_s'] * 1e3)} ms "
         f"({data['host']['launches_per_step']} launches, counted from the circuit)"],
        ["memory per device", f"{units.fmt(est.memory_per_device, 'bytes')} of "
         f"{units.fmt(est.usable_memory, 'bytes')} usable"],
        ["fits", f"{'yes' if est.fits else 'no'}; largest batch at context "
         f"{est.input_len + est.output_len}: {data['max_batch']}"],
    ]
    print(common.table(rows, ["", "estimate"], "lr"))
    ivs = data["intervals"]
    if ivs:
        print(f"\n{100 * level:g}% intervals (out-of-sample validation residuals):")
        for name, iv in ivs.items():
            print(f"  {name}: {iv['lo']:.4g} .. {iv['hi']:.4g} ({iv['stratum']})")
    print()
    print(common.basis_choice(args.basis, est.basis, est.device))
    print(f"cost model {est.cost_model}: {est.basis_detail}")
    for note in est.notes:
        print(f"note: {note}")
    return _enforce_fit(args, est)


def _enforce_fit(args, est) -> int:
    """``--require-fit``: exit 2 when weights and KV do not fit, after the estimate is
    printed (text or JSON, as ``solve --enforce-fit`` and ``fit --enforce`` do)."""
    if not args.require_fit or est.fits:
        return 0
    import sys

    print(f"roofkit: does not fit (--require-fit, exit 2): {est.workload} at batch "
          f"{est.batch}, context {est.fit_context} needs "
          f"{units.fmt(est.memory_per_device, 'bytes')} per device; {est.device} has "
          f"{units.fmt(est.usable_memory, 'bytes')} usable (largest batch that fits: "
          f"{est.max_batch()})", file=sys.stderr)
    return 2


def _num(v) -> str:
    if v is None:
        return "-"
    return sig(v)


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
    from ..serving.validation import BREAKDOWNS, LOSO, OTHER, SCORED

    def row(c, *extra):
        cells = [f"`{c.name}`", c.metric, c.config, _num(c.measured),
                 _num(c.predicted.get("datasheet")), _err(c.error("datasheet")),
                 _num(c.predicted.get("calibrated")), _err(c.error("calibrated")),
                 _err(c.error(LOSO)), *extra]
        return "| " + " | ".join(cells) + " |"

    head = ("| case | metric | config | measured | datasheet | error | calibrated | error | "
            "LOSO error |")
    rule = "|---|---|---|---:|---:|---:|---:|---:|---:|"
    scored = [c for c in report.cases if c.group == SCORED]
    lines = [f"Scored: {len(scored)} {SCORED} cases.", "", head, rule]
    lines += [row(c) for c in scored]
    lines += ["", "| basis | median abs error | max abs error |", "|---|---:|---:|"]
    for basis in ("datasheet", "calibrated", LOSO):
        label = "calibrated, leave-one-source-out" if basis == LOSO else basis
        lines.append(f"| {label} | {_pct(report.median(basis))} | {_pct(report.max(basis))} |")
    for by in BREAKDOWNS:
        lines += ["", f"| {by} | cases | calibrated median | max | LOSO median | max |",
                  "|---|---:|---:|---:|---:|---:|"]
        lines += [f"| {r[by]} | {r['cases']} | {_pct(r['calibrated_median_abs_error'])} | "
                  f"{_pct(r['calibrated_max_abs_error'])} | {_pct(r['loso_median_abs_error'])} "
                  f"| {_pct(r['loso_max_abs_error'])} |" for r in report.breakdown(by)]
    lines += ["", *[f"- {line}" for line in _coverage_lines(report)]]
    lines += ["", "| calibration constant | origin | leave-one-source-out |", "|---|---|---|"]
    lines += [f"| `{s['constant']}` | {s['origin']} | {s['statement']} |"
              for s in report.independence]
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
    from ..serving.validation import BREAKDOWNS, LOSO, OTHER, SCORED, run

    reg = common.registry(args)
    if args.misses is not None and args.kind in ("static", "load"):
        return validate_suite(args, reg, view=args.kind)
    if args.kind == "load":
        from .load import validate_load

        return validate_load(args, reg)
    if args.kind == "energy":
        from .energy import validate_energy

        return validate_energy(args, reg)
    if args.kind == "serving":
        return validate_suite(args, reg)
    report = run(registry=reg)
    if args.json:
        common.print_json(report.to_dict())
        return 0
    if args.markdown:
        print(_markdown(report))
        return 0
    headers = ["case", "metric", "config", "measured", "datasheet", "err", "calibrated", "err",
               "loso err"]
    for group in (SCORED, OTHER):
        cases = [c for c in report.cases if c.group == group]
        if not cases:
            continue
        print(f"{group} ({len(cases)} cases)")
        rows = [[c.name, c.metric, c.config, _num(c.measured),
                 _num(c.predicted.get("datasheet")), _err(c.error("datasheet")),
                 _num(c.predicted.get("calibrated")), _err(c.error("calibrated")),
                 _err(c.error(LOSO))]
                for c in cases]
        print(common.table(rows, headers, "lllrrrrrr"))
        if group == OTHER:
            for c in cases:
                print(f"  {c.name}: {c.reason}")
        print()
    for by in BREAKDOWNS:
        rows = [[r[by], r["cases"], _pct(r["calibrated_median_abs_error"]),
                 _pct(r["calibrated_max_abs_error"]), _pct(r["loso_median_abs_error"]),
                 _pct(r["loso_max_abs_error"])] for r in report.breakdown(by)]
        print(common.table(rows, [by, "cases", "calibrated median", "max", "loso median",
                                  "max"], "lrrrrr"))
        print()
    removed = [s for s in report.independence if s["cases_removed_for"]]
    print(f"leave-one-source-out: {len(report.independence) - len(removed)} calibration "
          "constants come from origins no scored case has (independent); removed for the "
          "cases of their own origin:")
    for s in removed:
        print(f"  {s['constant']}: {s['statement']}")
    print()
    print("error = (predicted - measured) / measured; loso: calibrated, each case without the "
          "calibration constants of its own source")
    for basis in ("datasheet", "calibrated", LOSO):
        n = len(report.errors(basis))
        print(f"{basis:>10}: median |error| {_pct(report.median(basis))}, max |error| "
              f"{_pct(report.max(basis))} over {n} {SCORED} cases")
    print()
    for line in _coverage_lines(report):
        print(line)
    return 0


def _coverage_lines(report) -> list[str]:
    out = []
    for level in (0.8, 0.9):
        for leave_out in ("case", "source"):
            c = report.coverage(level, leave_out)
            out.append(f"{100 * level:g}% intervals, leave one {leave_out} out: cover "
                       f"{_pct(c['covered'])} of {c['cases']} cases (calibrated range "
                       f"{_pct(c['inside']['covered'])} of {c['inside']['cases']}, outside "
                       f"{_pct(c['outside']['covered'])} of {c['outside']['cases']})")
    return out


def _check_misses(value) -> float | None:
    from ..errors import RoofkitError

    if value is not None and not 0 <= value < 100:
        raise RoofkitError(f"--misses is a fraction of the measurement (0.35 for 35 %), got "
                           f"{value:g}")
    return value


def _misses_lines(rows, threshold: float, basis: str = "loso") -> list[str]:
    out = [f"{len(rows)} scored case(s) with leave-one-source-out |error| above "
           f"{100 * threshold:g}%:"]
    for r in rows:
        out.append(f"  {r.name} ({r.view}, {r.family}): {_err(r.error(basis))}; cause: "
                   f"{r.cause or 'not yet known (no cause in its case spec)'}")
    return out


def validate_suite(args, reg, view: str | None = None) -> int:
    """``roofkit validate`` (``--kind serving``): the static and the load cases scored
    together, per basis, per view and per breakdown, the interval coverage both ways."""
    from ..serving import suite
    from ..serving.suite import BREAKDOWNS, SCORES, VIEWS

    threshold = _check_misses(args.misses)
    kw = {}
    if getattr(args, "case", None):  # only these load cases
        from ..load.validation import run as run_load

        cat = reg.catalogues["load_cases"]
        kw["load"] = run_load(registry=reg, cases=[cat[name] for name in args.case])
    report = suite.run(registry=reg, **kw)
    if threshold is not None:
        misses = [r for r in report.misses(threshold) if view in (None, r.view)]
        if args.json:
            common.print_json({"threshold": threshold, "basis": "loso",
                               "misses": [r.to_dict() for r in misses]})
        else:
            print("\n".join(_misses_lines(misses, threshold)))
        return 0
    if args.json:
        common.print_json(report.to_dict())
        return 0
    label = {"datasheet": "datasheet", "calibrated": "calibrated", "loso": "LOSO"}
    md = args.markdown

    def show(rows, headers, align):
        if md:
            print("| " + " | ".join(headers) + " |")
            print("|" + "".join("---|" if a == "l" else "---:|" for a in align))
            for r in rows:
                print("| " + " | ".join(str(x) for x in r) + " |")
        else:
            print(common.table(rows, headers, align))
        print()

    print(f"The whole serving validation set: {report.title()}.\n")
    rows = [[r.name, r.view, r.family, r.config, _num(r.measured),
             *(_err(r.error(b)) for b in SCORES)] for r in report.rows]
    show(rows, ["case", "view", "family", "config", "measured",
                *(f"{label[b]} err" for b in SCORES)], "llllr" + "r" * len(SCORES))
    stats = [f"{label[b]} {s}" for b in SCORES for s in ("median", "max")]
    for by in ("view", *[b for b in BREAKDOWNS if b != "view"]):
        rows = [[g[by], g["cases"], *(_pct(g[f"{b}_{s}_abs_error"]) for b in SCORES
                                     for s in ("median", "max"))]
                for g in report.breakdown(by)]
        show(rows, [by, "cases", *stats], "lr" + "r" * len(stats))
    print("error = (predicted - measured) / measured; LOSO: calibrated, each case without the "
          "calibration constants of its own source")
    for b in SCORES:
        print(f"{label[b]:>10}: median |error| {_pct(report.median(b))}, max |error| "
              f"{_pct(report.max(b))} over {len(report.errors(b))} scored cases")
    print()
    for level in (0.8, 0.9):
        for leave_out in ("case", "source"):
            parts = []
            for v in (None, *VIEWS):
                c = report.coverage(level, leave_out, v)
                parts.append(f"{v or 'all'} {_pct(c['covered'])} of {c['cases']}")
            print(f"{100 * level:g}% intervals, leave one {leave_out} out: cover "
                  + ", ".join(parts))
    print("\n(roofkit validate --kind static and --kind load give each view alone, with the "
          "per-constant leave-one-source-out statements)")
    return 0
