"""Catalogue commands: ``devices``, ``show``, ``check``, ``plugins``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import units
from . import common


def _category(text: str) -> str:
    """argparse type of ``--category``: one of the device categories, any case."""
    from ..errors import closest
    from ..schema.device import CATEGORIES

    value = text.strip().lower()
    if value in CATEGORIES:
        return value
    near = closest(value, CATEGORIES)
    hint = f"did you mean {', '.join(map(repr, near))}? " if near else ""
    raise argparse.ArgumentTypeError(f"unknown category {text!r}; {hint}categories: "
                                     f"{', '.join(CATEGORIES)}")


def register(sub) -> None:
    p = sub.add_parser("devices", help="list the device catalogue")
    p.add_argument("--json", action="store_true")
    p.add_argument("--category", type=_category,
                   help="only this category (cloud, workstation, mobile, edge, tiny)")
    p.set_defaults(func=cmd_devices)

    p = sub.add_parser("show", help="every field of a device, cluster or engine profile, "
                       "with units and sources")
    p.add_argument("device", help="device, cluster or engine key, alias, TOML path or "
                   "NxDEVICE")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("check", help="validate spec files or folders; exit 1 on any problem")
    p.add_argument("paths", nargs="+")
    p.add_argument("--json", action="store_true",
                   help="print {files, count, problems: [{file, key, message}]}")
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


#: printed under ``show``'s title: a figure written in bits ("100 Gb/s") shows in bytes
UNITS_LEGEND = ("units: B = byte = 8 bits (b); sizes and bandwidths are in bytes, a figure "
                "written in bits (Gb, Gb/s) is shown converted")


def _cluster_named(reg, name: str):
    """The cluster ``show`` means: a cluster key, a cluster TOML, an ``NxDEVICE``, or a
    cluster alias that is not also a device's name (None: show a device)."""
    from ..files import read_spec_bytes
    from ..fleet.cluster import parse_ad_hoc

    key = name.strip().lower()
    if key in reg.clusters._entries or (name.endswith(".toml") and
                                        b"scale_up" in read_spec_bytes(name)):
        return reg.cluster(name)
    if name in reg.devices:
        return None
    if name in reg.clusters or parse_ad_hoc(name) is not None:
        return reg.cluster(name)
    return None


def cmd_show(args) -> int:
    reg = common.registry(args)
    cluster = _cluster_named(reg, args.device)
    if cluster is not None:
        from .fleet import show_cluster

        return show_cluster(reg, cluster, args.json)
    engines = reg.catalogues.get("engines")
    if engines is not None and args.device in engines and args.device not in reg.devices:
        from .load import show_engine

        return show_engine(args, reg, args.device)
    d = reg.device(args.device)
    data = common.spec_to_dict(d)
    try:
        data["origin"] = str(reg.devices.origin(d.name))
        if reg.devices[d.name] is not d:
            raise KeyError(d.name)  # a TOML path of a spec the catalogue does not hold
    except Exception:
        data["origin"] = str(Path(args.device).resolve())
    data["calibrated_basis"] = _calibrated_basis(d, reg)
    if args.json:
        common.print_json(data)
        return 0
    print(f"{d.display_name} ({d.name}, {d.category}); from {data['origin']}")
    print(UNITS_LEGEND)
    for table_name, value in data.items():
        if table_name in ("sources", "provenance") or not isinstance(value, dict) or not value:
            continue
        quantities = [(k, v) for k, v in value.items() if isinstance(v, dict) and "text" in v]
        plain = [(k, v) for k, v in value.items()
                 if not isinstance(v, dict) and v not in (None, "")]
        if not quantities and not plain:
            continue
        print(f"[{table_name}]")
        for k, v in quantities:
            print(f"  {k:<16} {v['text']:>16}   {v['source'] or ''}")
        for k, v in plain:
            print(f"  {k:<16} {v}")
    print("sources:")
    for k, url in d.sources.items():
        print(f"  {k}: {url}")
    for _, key, note in _bit_notes([data["origin"]]) if Path(data["origin"]).is_file() else ():
        print(f"note: {key} {note}")
    print(f"calibrated basis: {data['calibrated_basis']}")
    return 0


def _calibrated_basis(device, reg) -> str:
    """What the calibrated basis of ``device`` rests on: its measured constants, or
    "datasheet only" where specs/calibration has none."""
    from ..circuit.roofline import device_roofline
    from ..errors import RoofkitError

    try:
        return device_roofline(device, "calibrated", reg).basis
    except RoofkitError as exc:
        return f"not available: {exc}"


def cmd_check(args) -> int:
    from ..registry import check_specs

    # the files are checked against the catalogue they would join (plugin spec dirs,
    # --spec-path, ROOFKIT_SPEC_PATH), whether or not it loads as it stands
    n, problems, warnings = check_specs(args.paths, entry_points=not args.no_plugins,
                                        spec_paths=args.spec_path or ())
    notes = _bit_notes(args.paths)
    if args.json:
        common.print_json({"files": n, "count": len(problems),
                           "problems": [p.to_dict() for p in problems],
                           "warnings": [w.to_dict() for w in warnings],
                           "notes": [{"file": f, "key": k, "message": m} for f, k, m in notes]})
        return 1 if problems else 0
    for file, key, message in notes:
        print(f"note: {message} @ {file}:{key}")
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"{len(problems)} problem(s) in {n} file(s)", file=sys.stderr)
        return 1
    print(f"{n} spec file(s) OK" + (f", {len(warnings)} warning(s)" if warnings else ""))
    return 0


def _bit_notes(paths) -> list[tuple[str, str, str]]:
    """(file, key path, note) for every figure the files under ``paths`` write in bits, so
    ``check`` shows what it read ("'400 Gb/s' is read as 50 GB/s")."""
    from ..catalogue import files_of
    from ..errors import SpecError
    from ..loader import read_toml

    out = []
    for raw in paths:
        try:
            files = files_of(raw)[0]
        except SpecError:
            continue
        for _, file in files:
            try:
                data = read_toml(file)
            except SpecError:
                continue
            out += [(str(file), key, note) for key, note in units.bit_notes(data)
                    if not key.startswith("provenance.")]
    return out


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
