"""Serving under load: ``simulate`` (one deployment, step by step), ``plan`` (the best
configurations for an SLO) and ``engines`` (the engine profiles)."""

from __future__ import annotations

import sys

from ..results import sig
from . import common


def register(sub) -> None:
    p = sub.add_parser("simulate", help="continuous batching of a request stream simulated "
                       "step by step: TTFT, TPOT, ITL, E2E percentiles, throughput, goodput")
    p.add_argument("workload", help="workload key, alias or TOML path")
    p.add_argument("device", help="device or cluster key, alias, TOML path or NxDEVICE")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--concurrency", type=int, help="closed loop of C clients")
    src.add_argument("--rate", type=float, help="Poisson arrivals, requests/s")
    src.add_argument("--trace", help="JSON lines: arrival (s), input_len, output_len")
    p.add_argument("--think-time", default=None, metavar="T", help="closed loop: each client "
                   "waits T after a request's last token before its next (0.5, 500ms, "
                   "exp:2s, uniform:1:3)")
    p.add_argument("--no-frontend", action="store_true", help="charge no API-server time "
                   "(prompts handed to the engine in process, as offline benchmarks do)")
    p.add_argument("--requests", type=int, default=None, help="requests in all (default 8 x "
                   "concurrency, at least 200; 1000 for a rate)")
    p.add_argument("--input-len", default="128", help="prompt tokens: N, uniform:LO:HI, "
                   "normal:MEAN:STD or hist:FILE.csv (default 128)")
    p.add_argument("--output-len", default="128", help="generated tokens, as --input-len")
    p.add_argument("--tp", type=int, default=1, help="tensor-parallel devices per replica")
    p.add_argument("--pp", type=int, default=1, help="pipeline stages per replica (one "
                   "node; pp virtual engines)")
    p.add_argument("--ep", type=common.count(1), default=1,
                   help="expert parallelism over EP ranks with attention data parallelism "
                        "(DeepSeek-style, one node)")
    p.add_argument("--attention-dp", type=common.count(1), default=None,
                   help="attention data-parallel ranks (equal to --ep)")
    p.add_argument("--dp", type=int, default=1, help="engine replicas (requests dealt "
                   "round-robin)")
    p.add_argument("--precision", default=None, help="weight format")
    p.add_argument("--kv-dtype", dest="kv_cache_dtype", default="bf16", metavar="D")
    p.add_argument("--engine", default="vllm", help="engine profile of specs/engines "
                   "(vllm, vllm-v0, sglang, tensorrt-llm; none: serve's host cost, no graphs)")
    p.add_argument("--max-num-seqs", type=common.count(1), default=None)
    p.add_argument("--max-batched-tokens", type=common.count(1), default=None)
    p.add_argument("--no-chunked-prefill", action="store_true")
    p.add_argument("--policy", choices=("prefill-first", "decode-first"), default=None)
    p.add_argument("--prefix-hit", type=float, default=0.0, help="prefix-cache hit rate of "
                   "new prompts, 0..1")
    p.add_argument("--disagg", default=None, metavar="P:D[,ptp=N,dtp=N,link=BW]",
                   help="disaggregated prefill and decode workers")
    p.add_argument("--spec-decode", default=None, metavar="k=N,acceptance=A[,draft=W]",
                   help="speculative decoding (acceptance per position as 0.8/0.6/0.4; draft a "
                        "workload, or mtp for the workload's own MTP modules)")
    p.add_argument("--slo", default=None, metavar="ttft_p90=2s,tpot_p90=50ms")
    p.add_argument("--seed", type=common.count(0), default=0)
    p.add_argument("--basis", choices=("datasheet", "calibrated"), default="auto",
                   help="default: calibrated where the device has a calibration in "
                   "specs/calibration, else datasheet")
    common.add_interval(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_simulate)

    p = sub.add_parser("plan", help="the serving configurations that meet an SLO, ranked by "
                       "output tokens/s per device, with the Pareto front and refusals")
    p.add_argument("workload", help="workload key, alias or TOML path")
    p.add_argument("--devices", required=True, type=common.name_list,
                   help="comma-separated devices or clusters "
                   "(h100,h200,b200 or dgx-h100,16xh200): a device beyond one node, or a "
                   "cluster, is planned across nodes")
    p.add_argument("--max-devices", type=int, default=8)
    p.add_argument("--input-len", type=int, default=None, help="prompt tokens (default: the "
                   "--trace mean)")
    p.add_argument("--output-len", type=int, default=None, help="generated tokens (default: "
                   "the --trace mean)")
    p.add_argument("--trace", default=None, metavar="F", help="JSON-lines requests (arrival, "
                   "input_len, output_len): screened at their mean lengths, verified with "
                   "their length pairs")
    p.add_argument("--slo", required=True, metavar="ttft_p90=2s,tpot_p90=50ms")
    p.add_argument("--precisions", type=common.name_list, default=None,
                   help="comma-separated weight formats "
                   "(default: the workload's, and fp8 where the device has it)")
    p.add_argument("--engine", default="vllm")
    p.add_argument("--no-disagg", action="store_true", help="aggregated serving only")
    p.add_argument("--kv-dtype", dest="kv_cache_dtype", default="bf16", metavar="D")
    p.add_argument("--verify", type=int, default=3, help="re-run the best N through the "
                   "simulator (default 3)")
    p.add_argument("--top", type=common.count(0), default=10, help="rows shown (default 10)")
    p.add_argument("--plot", default=None, metavar="FILE.png|.svg", help="draw tokens/s per "
                   "device against tokens/s per user with the Pareto front (the plot extra)")
    p.add_argument("--basis", choices=("datasheet", "calibrated"), default="auto",
                   help="default: calibrated where the device has a calibration in "
                   "specs/calibration, else datasheet")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("engines", help="list the engine profiles (specs/engines)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_engines)


def cmd_simulate(args) -> int:
    from ..load import simulate

    reg = common.registry(args)
    r = simulate(args.workload, args.device, concurrency=args.concurrency, rate=args.rate,
                 trace=args.trace, requests=args.requests, input_len=args.input_len,
                 output_len=args.output_len, tp=args.tp, dp=args.dp, pp=args.pp,
                 ep=args.ep, attention_dp=args.attention_dp,
                 precision=args.precision,
                 kv_cache_dtype=args.kv_cache_dtype,
                 engine=None if args.engine == "none" else args.engine,
                 max_num_seqs=args.max_num_seqs, max_batched_tokens=args.max_batched_tokens,
                 chunked_prefill=False if args.no_chunked_prefill else None,
                 policy=args.policy, prefix_hit=args.prefix_hit, disagg=args.disagg,
                 spec_decode=args.spec_decode, slo=args.slo, seed=args.seed,
                 think_time=args.think_time, frontend=not args.no_frontend,
                 basis=args.basis, registry=reg)
    from ..intervals import check_level

    level = check_level(args.interval)
    data = r.to_dict(level=level)
    if args.json:
        common.print_json(data)
        return 0
    print(f"{r.workload} on {r.device}, engine {r.engine}, layout {r.layout}")
    print(f"{r.pattern}")
    rows = [[m.upper()] + [sig(data[f"{m}_ms"][k]) for k in ("mean", "p50", "p90", "p99")]
            for m in ("ttft", "tpot", "itl", "e2e")]
    print(common.table(rows, ["ms", "mean", "p50", "p90", "p99"], "lrrrr"))
    print(f"output {r.output_tokens_per_s:.1f} tok/s ({r.output_tokens_per_s_per_device:.1f} "
          f"per device), input {r.input_tokens_per_s:.1f} tok/s, {r.requests_per_s:.3f} "
          f"requests/s; mean batch {r.mean_batch:.1f}, KV peak {r.kv_peak_fraction:.0%}, "
          f"{r.preemptions} preemptions")
    if r.slo:
        print(f"goodput {r.goodput:.3f} requests/s; SLO {'met' if r.slo_met else 'missed'}")
    print(f"energy {data['energy_per_output_token_j']:.4g} J per output token, "
          f"{data['energy_per_request_j']:.4g} J per request, "
          f"{data['average_power_per_device_w']:.0f} W per device ({data['energy_model']} model, "
          "docs/energy.md)")
    ivs = data["intervals"]
    if ivs:
        print(f"{100 * level:g}% intervals (out-of-sample validation residuals):")
        for name in ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms", "output_tokens_per_s"):
            if name in ivs:
                iv = ivs[name]
                print(f"  {name}: {sig(iv['lo'])} .. {sig(iv['hi'])} ({iv['stratum']})")
    print(f"basis: {r.basis}")
    for n in r.notes:
        print(f"note: {n}")
    return 0


def cmd_plan(args) -> int:
    from ..load.plan import plan

    if args.plot:
        from ..plot import target

        target(args.plot)
    reg = common.registry(args)
    r = plan(args.workload, args.devices, input_len=args.input_len,
             output_len=args.output_len, slo=args.slo, max_devices=args.max_devices,
             precisions=args.precisions,
             engine=None if args.engine == "none" else args.engine,
             disagg=not args.no_disagg, kv_cache_dtype=args.kv_cache_dtype, basis=args.basis,
             verify=args.verify, trace=args.trace, registry=reg)
    if args.plot:
        from .. import plot

        path = plot.save(r.plot(), args.plot)
        print(f"wrote {path}", file=sys.stderr if args.json else sys.stdout)
    if args.json:
        common.print_json(r.to_dict())
        return 0
    print(f"{r.workload}: input {r.input_len}, output {r.output_len}, SLO "
          + ", ".join(f"{k} <= {v * 1e3:g} ms" for k, v in r.slo.items()))
    print(f"{r.evaluated} configurations evaluated, {len(r.rows)} meet the SLO")
    rows = [[x.get("cluster", x["device"]), x["precision"], x["layout"], x["concurrency"],
             sig(x["ttft_ms"]), sig(x["tpot_ms"]), sig(x["output_tokens_per_s_per_device"]),
             sig(x["output_tokens_per_s_per_user"]), "*" if x["pareto"] else "",
             x.get("verified", "")]
            for x in r.rows[:args.top]]
    if rows:
        print(common.table(rows, ["device", "precision", "layout", "C", "TTFT ms", "TPOT ms",
                                  "tok/s/dev", "tok/s/user", "pareto", "simulated"],
                           "lllrrrrrll"))
    for v in r.verified:
        sim = v["simulated"]
        print(f"simulated (steady state: {sim['kept_requests']} requests, {sim['warmup_requests']}"
              f" of warm-up and of drain dropped) "
              f"{v.get('cluster', v['device'])} {v['precision']} {v['layout']} "
              f"C={v['concurrency']}: "
              f"TTFT p90 {sim['ttft_ms']['p90']:.0f} ms, TPOT p90 {sim['tpot_ms']['p90']:.1f} "
              f"ms, {sim['output_tokens_per_s_per_device']:.0f} tok/s/dev, SLO "
              f"{'met' if sim['slo_met'] else 'missed'}")
    print("refused: " + ("; ".join(f"{k}: {n}" for k, n in sorted(
        r.refused.items(), key=lambda kv: -kv[1])) or "none"))
    for n in r.notes:
        print(f"note: {n}")
    return 0


def cmd_engines(args) -> int:
    reg = common.registry(args)
    cat = reg.catalogues["engines"]
    specs = cat.values_in_order()
    if args.json:
        common.print_json([{**common.spec_to_dict(e), "origin": str(cat.origin(e.name))}
                           for e in specs])
        return 0
    rows = []
    for e in specs:
        s = e.scheduler
        g = e.cuda_graphs.batch_sizes
        rows.append([e.name, e.version, s.policy, s.max_num_seqs, s.max_num_batched_tokens,
                     "yes" if s.chunked_prefill else "no", "yes" if s.mixed_batches else "no",
                     s.admission, f"1..{g[-1]}" if g else "-",
                     e.host.calibration or ("overlap" if e.host.overlap else "sync")])
    print(common.table(rows, ["engine", "version", "policy", "max seqs", "max tokens",
                              "chunked", "mixed", "KV", "graphs", "host"]))
    print(f"\n{len(specs)} engine profiles. `roofkit show ENGINE` for every field and source.")
    return 0


def show_engine(args, reg, name) -> int:
    """``roofkit show ENGINE``: every field of an engine profile with its source."""
    e = reg.spec("engines", name)
    data = {**common.spec_to_dict(e), "origin": str(reg.catalogues["engines"].origin(e.name))}
    if args.json:
        common.print_json(data)
        return 0
    print(f"{e.display_name} ({e.name}, version {e.version}); from {data['origin']}")
    import attrs

    for table in ("scheduler", "memory", "cuda_graphs", "host"):
        fields = attrs.asdict(getattr(e, table))
        if table == "memory" and not fields["static_fraction"]:
            continue
        print(f"[{table}]")
        for k, v in fields.items():
            if v not in (None, "", [], {}):
                print(f"  {k:<24} {v}")
    return 0


def validate_load(args, reg) -> int:
    """``roofkit validate --kind load``: every load case on both bases, and the summary."""
    from ..load.validation import run

    cases = None
    if getattr(args, "case", None):
        cat = reg.catalogues["load_cases"]
        cases = [cat[name] for name in args.case]
    report = run(registry=reg, cases=cases)
    if args.json:
        common.print_json(report.to_dict())
        return 0

    def pct(x):
        return "-" if x is None else f"{x:+.1%}"

    def num(x):
        return "-" if x is None else f"{x:.4g}"

    def met(c):  # whether the calibrated run meets the case's latency bounds
        v = c.bounds_met.get("calibrated") if c.bounds else None
        return "-" if v is None else ("yes" if v else "no")

    rows = [[c.name, f"{c.metric} {c.statistic}", c.config, num(c.measured),
             num(c.predicted.get("datasheet")), pct(c.error("datasheet")),
             num(c.predicted.get("calibrated")), pct(c.error("calibrated")),
             met(c)] for c in report.cases]
    headers = ["case", "metric", "config", "measured", "datasheet", "err", "calibrated", "err",
               "bounds_met"]
    print(common.markdown_table(rows, headers) if args.markdown else
          common.table(rows, headers, "lllrrrrrl"))
    print("\nerror = (predicted - measured) / measured")
    for fam, by_basis in report.summary().items():
        for basis, s in by_basis.items():
            if s["cases"]:
                print(f"{fam:>10} {basis:>10}: median |error| {s['median_abs_error']:.1%}, max "
                      f"|error| {s['max_abs_error']:.1%} over {s['cases']} cases")
    for c in report.cases:
        if c.reason:
            print(f"  {c.name}: {c.reason}")
    shared = [s for s in report.independence
              if s["cases_removed_for"] or s.get("cases_in_sample")]
    print(f"leave-one-source-out: {len(report.independence) - len(shared)} constants "
          "(calibrations, engine profiles) come from origins no scored load case has")
    for s in shared:
        print(f"  {s['constant']}: {s['statement']}")
    from ..intervals import coverage, load_residuals, table

    # the load cases' intervals draw on the whole serving table (a stratum needs two
    # sources): this run's load residuals and the shipped static ones
    rows = load_residuals(report, reg) + [r for r in table() if not
                                          r.metric.startswith(("load_", "train_"))]
    for level in (0.8, 0.9):
        for leave_out in ("case", "source"):
            c = coverage(rows, level, leave_out, score=lambda r: r.metric.startswith("load_"))
            if c["covered"] is not None:
                print(f"{100 * level:g}% intervals, leave one {leave_out} out: cover "
                      f"{c['covered']:.1%} of {c['cases']} load cases")
    return 0
