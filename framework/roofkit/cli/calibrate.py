"""``roofkit calibrate``: measure this machine's CPU (numpy) or GPU (torch, cupy) and write
a calibration spec, and for an uncatalogued device its device spec, under ``--out``."""

from __future__ import annotations

import sys

from . import common


def register(sub) -> None:
    p = sub.add_parser("calibrate", help="measure this device and write its calibration TOML",
                       description=__doc__)
    p.add_argument("--backend", default="numpy", choices=("numpy", "torch", "cupy"),
                   help="numpy: the host CPU (default); torch or cupy: a GPU (when installed)")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="folder to write calibration/ (and devices/) into; layer it with "
                        "--spec-path DIR")
    p.add_argument("--device", default=None,
                   help="the catalogued device measured (a GPU: h100-sxm); without it a "
                        "device spec is written too")
    p.add_argument("--name", default=None,
                   help="key of the written specs (default local-cpu / local-gpu)")
    p.add_argument("--category", default="workstation",
                   choices=("cloud", "workstation", "mobile", "edge", "tiny"),
                   help="category of a written device spec")
    p.add_argument("--quick", action="store_true",
                   help="fewer, smaller sizes: seconds instead of minutes (CI)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_calibrate)


def cmd_calibrate(args) -> int:
    from ..calibrate import calibrate

    reg = common.registry(args) if args.device else None
    quiet = args.json

    def log(line):
        if not quiet:
            print(line, file=sys.stderr, flush=True)

    run = calibrate(args.backend, quick=args.quick, device=args.device, name=args.name,
                    out=args.out, category=args.category, registry=reg, log=log)
    if args.json:
        common.print_json(run.to_dict())
        return 0
    r = run.results
    print(f"calibrated {run.device} with {args.backend}: triad {r.bandwidth / 1e9:.4g} GB/s, "
          + ", ".join(f"{s} {r.peak(s) / 1e9:.4g} GFLOP/s" for s in r.gemm)
          + f", launch {r.launch * 1e6:.3g} us")
    for path in run.paths:
        print(f"wrote {path}")
    print(f"use it: roofkit --spec-path {args.out} decode WORKLOAD {run.device} "
          "--basis calibrated")
    return 0
