"""Catalogue commands: ``devices``, ``show``, ``check``, ``plugins``."""

from __future__ import annotations

import sys
from pathlib import Path

from .. import units
from . import common


def register(sub) -> None:
    p = sub.add_parser("devices", help="list the device catalogue")
    p.add_argument("--json", action="store_true")
    p.add_argument("--category", help="only this category (cloud, workstation, mobile, edge, tiny)")
    p.set_defaults(func=cmd_devices)

    p = sub.add_parser("show", help="every field of a device, with units and sources")
    p.add_argument("device", help="device key, alias or TOML path")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("check", help="validate spec files or folders; exit 1 on any problem")
    p.add_argument("paths", nargs="+")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("plugins", help="list loaded plugins, their distributions and hooks")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_plugins)


def _peak_text(d) -> str:
    slot = d.default_slot
    text = units.fmt(d.compute[slot], "throughput")
    if slot.startswith("int"):
        text = text.replace("FLOP/s", "OP/s")  # integer slots count operations
    return f"{text} ({slot})"


def cmd_devices(args) -> int:
    reg = common.registry(args)
    devices = [d for d in reg.devices.values()
               if not args.category or d.category == args.category]
    if args.json:
        common.print_json([{
            "name": d.name, "display_name": d.display_name, "category": d.category,
            "vendor": d.vendor, "aliases": list(d.aliases),
            "peaks_flop_per_s": dict(d.compute),
            "sparse_peaks_flop_per_s": dict(d.compute_sparse),
            "default_slot": d.default_slot,
            "memory_bytes": d.memory.capacity, "bandwidth_bytes_per_s": d.memory.bandwidth,
            "tdp_w": d.power.tdp, "sources": dict(d.sources),
            "origin": str(reg.devices.origin(d.name)),
        } for d in devices])
        return 0
    order = {"cloud": 0, "workstation": 1, "edge": 2, "mobile": 3, "tiny": 4}
    devices.sort(key=lambda d: (order.get(d.category, 9), -d.default_peak))
    rows = [[d.name, d.category, _peak_text(d),
             units.fmt(d.compute.get("fp8", 0), "throughput") if "fp8" in d.compute else "-",
             units.fmt(d.memory.capacity, "bytes"), units.fmt(d.memory.bandwidth, "bandwidth"),
             units.fmt(d.power.tdp, "power") if d.power.tdp else "-"] for d in devices]
    print(common.table(rows, ["device", "category", "default peak", "fp8", "memory",
                              "bandwidth", "TDP"], "llrrrrr"))
    print(f"\n{len(devices)} devices. `roofkit show NAME` for every field and its source.")
    return 0


def cmd_show(args) -> int:
    reg = common.registry(args)
    d = reg.device(args.device)
    data = common.spec_to_dict(d)
    try:
        data["origin"] = str(reg.devices.origin(d.name))
    except Exception:
        data["origin"] = str(Path(args.device).resolve())
    if args.json:
        common.print_json(data)
        return 0
    print(f"{d.display_name} ({d.name}, {d.category}); from {data['origin']}")
    for table_name, value in data.items():
        if isinstance(value, dict) and value and all(isinstance(v, dict) for v in value.values()):
            if table_name in ("sources", "provenance"):
                continue
            print(f"[{table_name}]")
            for k, v in value.items():
                if isinstance(v, dict) and "text" in v:
                    print(f"  {k:<16} {v['text']:>16}   {v['source'] or ''}")
        elif isinstance(value, dict) and table_name not in ("sources", "provenance"):
            for k, v in value.items():
                if isinstance(v, dict) and "text" in v:
                    print(f"[{table_name}] {k:<16} {v['text']:>16}   {v['source'] or ''}")
                elif v not in (None, "", 1.0):
                    print(f"[{table_name}] {k:<16} {v}")
    print("sources:")
    for k, url in d.sources.items():
        print(f"  {k}: {url}")
    return 0


def cmd_check(args) -> int:
    from ..catalogue import _files_of
    from ..errors import SpecError
    from ..loader import format_problems, problems_of, read_toml
    from ..registry import build_registry

    try:
        reg = common.registry(args)
    except SpecError:  # a broken catalogue must not stop checking the files given
        reg = build_registry(entry_points=not args.no_plugins, specs=False)
    tables = {**reg._tables, **reg.catalogues}
    problems, n = [], 0
    for raw in args.paths:
        try:
            files = _files_of(Path(raw))
        except SpecError as exc:
            problems += exc.problems
            continue
        for kind, file in files:
            n += 1
            try:
                data = read_toml(file)
            except SpecError as exc:
                problems += exc.problems
                continue
            obj, items = problems_of(data, kind.cls, reg.converter)
            if obj is not None and kind.check is not None and not items:
                items = kind.check(obj, tables)
            problems += format_problems(file, items)
    for line in problems:
        print(line, file=sys.stderr)
    if problems:
        print(f"{len(problems)} problem(s) in {n} file(s)", file=sys.stderr)
        return 1
    print(f"{n} spec file(s) OK")
    return 0


def cmd_plugins(args) -> int:
    reg = common.registry(args)
    infos = reg.plugins
    if args.json:
        common.print_json([{"name": i.name, "distribution": i.distribution,
                            "version": i.version, "hooks": list(i.hooks)} for i in infos])
        return 0
    rows = [[i.name, i.distribution, i.version, ", ".join(h.removeprefix("roofkit_register_")
                                                          for h in i.hooks)] for i in infos]
    print(common.table(rows, ["plugin", "distribution", "version", "hooks (roofkit_register_*)"]))
    return 0
