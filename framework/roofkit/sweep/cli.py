"""The query flags of ``roofkit sweep`` (the command lives in :mod:`roofkit.cli.engine`).

``--where EXPR`` (repeatable), ``--pareto COL1,COL2``, ``--best-by COL``, ``--mode``,
``--context``, ``--tp``, ``--kv-dtype`` and ``--basis`` route the command through
:func:`roofkit.sweep`; without them the command keeps its ``Engine.sweep`` output. Order: the
grid, then every ``--where``, then (unless ``--include-infeasible``) only the points that
fit, then ``--pareto``, then ``--best-by`` (the best row per device). Every output says its
basis and, per row, the compute slot used and whether it is a fallback.
"""

from __future__ import annotations

import argparse
import sys

from ..cli.common import int_list

#: the default of ``-p``: recognized by identity, so decode and prefill can use the
#: workload's own formats when no precision was asked for
ENGINE_DEFAULT_PRECISIONS = ["fp16"]

_TEXT = {
    "engine": (["device", "precision", "compute_slot", "batch_size", "latency_ms",
                "throughput_per_s", "energy_j", "bottleneck", "mfu", "feasible"],
               ["device", "precision", "slot", "batch", "latency", "samples/s", "energy",
                "bound", "MFU", "fits"]),
    "decode": (["device", "precision", "compute_slot", "tp", "context", "batch_size",
                "itl_ms", "throughput_per_s", "memory_footprint_bytes", "bottleneck",
                "feasible"],
               ["device", "precision", "slot", "tp", "context", "batch", "ITL", "tokens/s",
                "memory", "bound", "fits"]),
    "prefill": (["device", "precision", "compute_slot", "tp", "context", "batch_size",
                 "ttft_ms", "throughput_per_s", "memory_footprint_bytes", "bottleneck",
                 "feasible"],
                ["device", "precision", "slot", "tp", "prompt", "batch", "TTFT", "tokens/s",
                 "memory", "bound", "fits"]),
}
_LEFT = ("device", "precision", "compute_slot", "bottleneck", "feasible")
#: most rows the text table prints (CSV and JSON print all)
TEXT_ROWS = 50


def _pair(text: str) -> list[str]:
    cols = [x.strip() for x in text.split(",") if x.strip()]
    if len(cols) != 2:
        raise argparse.ArgumentTypeError(
            f"expected two columns such as throughput,latency (each may end in :max or "
            f":min), got {text!r}")
    return cols


def add_arguments(p) -> None:
    """The query flags, added to the ``sweep`` parser."""
    p.set_defaults(precisions=ENGINE_DEFAULT_PRECISIONS)
    g = p.add_argument_group(
        "queries (route through roofkit.sweep; output columns carry their units)")
    g.add_argument("--mode", choices=("engine", "decode", "prefill"), default=None,
                   help="engine: the Engine.solve equation (default); decode: the circuit's "
                        "decode step at a KV context; prefill: the prefill of a prompt")
    g.add_argument("--context", type=int_list, default=None, metavar="128,2048",
                   help="decode: KV context tokens; prefill: prompt tokens (default 2048)")
    g.add_argument("--tp", type=int_list, default=None, metavar="1",
                   help="tensor-parallel degrees (decode/prefill)")
    g.add_argument("--kv-dtype", default=None, metavar="D",
                   help="KV-cache format of decode/prefill (bf16, fp8...; default the "
                        "workload's)")
    g.add_argument("--basis", choices=("datasheet", "calibrated"), default=None,
                   help="decode/prefill: datasheet ceilings or measured achievable "
                        "constants (default: calibrated where the device has a "
                        "calibration, else datasheet)")
    g.add_argument("--where", action="append", default=[], metavar="EXPR",
                   help="keep rows where EXPR holds, e.g. 'latency_ms <= 50', 'fits', "
                        "'device == h100-sxm'; repeatable (all must hold)")
    g.add_argument("--pareto", type=_pair, default=None, metavar="COL1,COL2",
                   help="the Pareto front of two columns, e.g. throughput,latency (each in "
                        "its natural direction; append :max or :min to choose)")
    g.add_argument("--best-by", default=None, metavar="COL",
                   help="the best row per device by COL (natural direction; COL:max/COL:min)")


def wanted(args) -> bool:
    """Whether any query flag was given (else the command keeps its Engine.sweep output)."""
    return bool(args.mode or args.context or args.tp or args.where or args.pareto
                or args.best_by or args.kv_dtype or args.basis)


def run(args, registry) -> int:
    """``roofkit sweep`` through :func:`roofkit.sweep` and the table queries."""
    from .. import units
    from ..cli import common
    from ..results import sig
    from .api import sweep
    from .catalog import split_direction

    if args.mode in (None, "engine"):
        given = [flag for flag, v in (("--kv-dtype", args.kv_dtype), ("--basis", args.basis))
                 if v is not None]
        if given:
            from ..errors import SpecError

            raise SpecError(f"{' and '.join(given)} set(s) the circuit's decode/prefill "
                            "estimate; add --mode decode or --mode prefill (the engine mode "
                            "is the Engine.solve equation on datasheet ceilings)")
    mode = args.mode or "engine"
    precisions = args.precisions
    if precisions is ENGINE_DEFAULT_PRECISIONS:
        precisions = None  # each mode's own default
    best_by = None
    if args.best_by:
        name, direction = split_direction(args.best_by)
        best_by = ("device", name, direction)
    # the filters run where the rows are made (per chunk under an executor)
    table = sweep(args.workload, args.devices, precisions, args.batch_sizes,
                  contexts=args.context, tp=args.tp, mode=mode,
                  efficiency=args.efficiency, kv_cache_dtype=args.kv_dtype,
                  basis=(args.basis or "auto") if mode != "engine" else None,
                  where=args.where,
                  feasible_only=not args.include_infeasible, pareto=args.pareto,
                  best_by=best_by, registry=registry)
    points = int(table.meta.pop("evaluated", len(table)))
    omitted = int(table.meta.pop("omitted_infeasible", 0))

    if args.json:
        common.print_json({"mode": mode, "points": points, "omitted_infeasible": omitted,
                           "meta": table.meta, "columns": table.describe(),
                           "rows": [{k: _finite(v) for k, v in r.items()} for r in table]})
        return 0
    if args.csv:
        sys.stdout.write(table.to_csv())
        return 0
    cols, heads = _TEXT[mode]
    shown = table.head(TEXT_ROWS)
    rows = []
    for r in shown:
        line = []
        for c in cols:
            v = r[c]
            if c.endswith("_ms"):
                line.append(units.fmt(v / 1e3, "time"))
            elif c == "energy_j":
                line.append(units.fmt(v, "energy"))
            elif c == "memory_footprint_bytes":
                line.append(units.fmt(v, "bytes"))
            elif c == "feasible":
                line.append("yes" if v else "no")
            elif c == "compute_slot":
                line.append(f"{v} (fallback)" if r["fell_back"] else v)
            elif isinstance(v, float):
                line.append(sig(v))
            else:
                line.append(v)
        rows.append(line)
    align = "".join("l" if c in _LEFT else "r" for c in cols)
    print(common.table(rows, heads, align))
    steps = [f"{points} points"]
    steps += [f"where {w}" for w in args.where]
    if omitted:
        steps.append(f"{omitted} that do not fit omitted (--include-infeasible keeps them)")
    if args.pareto:
        steps.append(f"Pareto front of {' vs '.join(args.pareto)}")
    if args.best_by:
        steps.append(f"best per device by {args.best_by}")
    print(f"\n{'; '.join(steps)}: {len(table)} row(s)"
          + (f", first {TEXT_ROWS} shown (--csv or --json for all)" if len(table) > TEXT_ROWS
             else ""))
    if len(table):
        bases = ", ".join(dict.fromkeys(table["basis"].tolist()))
        why = ""
        if args.basis is None and mode != "engine":
            why = " (the default: calibrated where the device has a calibration, else datasheet)"
        elif mode == "engine":
            why = " (the Engine equation on the device spec ceilings)"
        print(f"basis: {bases}{why}" + ("; slot: the compute slot(s) whose peak was used; "
                                    "(fallback): the device has no peak for the precision"
                                    if table["fell_back"].any() else ""))
    return 0


def _finite(v):
    import math

    return None if isinstance(v, float) and not math.isfinite(v) else v
