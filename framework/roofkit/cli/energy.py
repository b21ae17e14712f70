"""``roofkit validate --kind energy``: the energy cases on the per-op and TDP models."""

from __future__ import annotations

from . import common


def validate_energy(args, reg) -> int:
    from ..energy_cases import run

    report = run(registry=reg)
    if args.json:
        common.print_json(report)
        return 0
    def pct(v):
        return "" if v is None else f"{v:+.1%}"

    rows = [[r["case"], r["metric"], f"{r['measured']:.4g}", f"{r['per_op']:.4g}",
             f"{r['per_op_error']:+.1%}", f"{r['tdp']:.4g}", f"{r['tdp_error']:+.1%}", r["model"],
             pct(r["itl_error"]), pct(r["power_error"]),
             pct(r.get("power_at_measured_itl_error")), r["scope"], r["run"]]
            for r in report["rows"]]
    headers = ["case", "metric", "measured", "per-op", "err", "tdp", "err", "model",
               "itl err", "power err", "power@itl", "meter", "run"]
    print(common.markdown_table(rows, headers) if args.markdown else
          common.table(rows, headers, "llrrrrrlrrrll"))
    med = report["median_abs_error"]
    print(f"\nerror = predicted / measured - 1; median |error|: per-op {med['per_op']:.1%}, "
          f"TDP model {med['tdp']:.1%} over {len(rows)} cases (docs/energy.md)")
    if med.get("power") is not None:
        print(f"the per-op miss split where the case gives the run's ITL and power: median "
              f"|itl err| {med['itl']:.1%} (the time model), median |power err| "
              f"{med['power']:.1%} (the power model); meter: gpu boards or the node; run: "
              "a static serve batch, or the load simulator's steady state (continuous "
              "batching as the run was served); power@itl: the per-op power error had the "
              "steps taken the measured ITL (the same dynamic energy a step), median "
              f"|error| {med['power_at_measured_itl']:.1%}")
    causes = [(r["case"], r["per_op_error"], r["cause"]) for r in report["rows"] if r["cause"]]
    if causes:
        print("\ncauses (the case specs' own lines):")
        for name, err, cause in causes:
            print(f"  {name} ({err:+.1%}): {cause}")
    return 0
