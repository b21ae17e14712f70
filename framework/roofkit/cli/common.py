"""Helpers shared by CLI commands: the registry from flags, tables, JSON."""

from __future__ import annotations

import json
import math
import sys

import attrs

from .. import units
from ..schema.fields import meta_of


def registry(args):
    from ..registry import build_registry, default_registry

    if not args.spec_path and not args.no_plugins:
        return default_registry()
    return build_registry(entry_points=not args.no_plugins, spec_paths=args.spec_path)


def print_json(obj) -> None:
    """Print ``obj`` as strict JSON, built whole first: a value JSON cannot hold (NaN) is an
    error before anything is written, never a half-printed document."""
    from ..errors import RoofkitError

    try:
        text = json.dumps(obj, indent=2, default=_default, allow_nan=False)
    except ValueError as exc:
        raise RoofkitError(f"the result holds a number JSON cannot represent ({exc}); a "
                           "NaN in a result means an input was not a number: check the "
                           "spec values and arguments") from None
    sys.stdout.write(text + "\n")


def _default(o):
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if hasattr(o, "to_dict"):
        return o.to_dict()
    return str(o)


def table(rows: list[list], headers: list[str], align: str | None = None) -> str:
    """A plain text table; ``align`` is a string of 'l'/'r' per column."""
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    align = align or "l" * len(headers)
    lines = []
    for n, r in enumerate(cells):
        parts = [c.rjust(w) if a == "r" else c.ljust(w)
                 for c, w, a in zip(r, widths, align, strict=True)]
        lines.append("  ".join(parts).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


_SI = {"time": "s", "bytes": "B", "bandwidth": "B/s", "compute": "FLOP",
       "throughput": "FLOP/s", "power": "W", "energy": "J", "rate": "1/s", "tokens": "token"}


@attrs.frozen
class _Sourcing:
    """What every value of one spec looks its source up in: the top-level spec's
    [provenance] and [sources], and the tables whose plain numbers are sourced."""

    provenance: dict
    sources: dict
    tables: tuple = ()

    def source(self, path: str, value, default) -> tuple[str | None, str | None]:
        from ..schema.common import provenance_of, source_key

        entry = provenance_of(self.provenance, path)
        if entry is None:
            return ("default (not set in the spec)", None) if value == default else (None, None)
        url = self.sources.get(source_key(entry))
        return entry, url if isinstance(url, str) and "://" in url else None


def spec_to_dict(spec, sourcing: _Sourcing | None = None, prefix: str = "") -> dict:
    """Every field of an attrs spec. Quantities, and the plain numbers of the sourced tables
    (``memory.usable_fraction``, ``interconnect.max_devices``), become
    ``{value, unit, text, source, source_url}``, their source looked up in the top-level
    spec's [provenance] and [sources] whatever table they sit in."""
    if sourcing is None:
        sourcing = _Sourcing(dict(getattr(spec, "provenance", {}) or {}),
                             dict(getattr(spec, "sources", {}) or {}),
                             tuple(getattr(type(spec), "SOURCED", ())))
    out = {}
    for f in attrs.fields(type(spec)):
        value = getattr(spec, f.name)
        path = f"{prefix}{f.name}"
        meta = meta_of(f) or {}
        dim = meta.get("dimension")
        default = f.default if f.default is not attrs.NOTHING else None
        if dim and meta.get("mapping"):
            out[f.name] = {k: _q(v, dim, f"{path}.{k}", sourcing, None)
                           for k, v in value.items()}
        elif dim:
            out[f.name] = None if value is None else _q(value, dim, path, sourcing, default)
        elif attrs.has(type(value)):
            out[f.name] = spec_to_dict(value, sourcing, f"{path}.")
        elif (isinstance(value, int | float) and not isinstance(value, bool)
              and path.split(".")[0] in sourcing.tables):
            out[f.name] = _plain(value, path, sourcing, default)
        elif isinstance(value, tuple):
            out[f.name] = list(value)
        elif isinstance(value, dict):
            out[f.name] = dict(value)
        else:
            out[f.name] = value
    return out


def _q(value, dim, path, sourcing, default):
    src, url = sourcing.source(path, value, default)
    unit, text = _SI[dim], units.fmt(value, dim)
    if dim == "throughput" and path.rsplit(".", 1)[-1].startswith("int"):
        unit, text = "OP/s", text.replace("FLOP/s", "OP/s")  # integer slots count operations
    return {"value": value, "unit": unit, "text": text, "source": src, "source_url": url}


def _plain(value, path, sourcing, default):
    src, url = sourcing.source(path, value, default)
    return {"value": value, "unit": "", "text": f"{value:g}", "source": src, "source_url": url}


#: the most values one list option expands to (a sweep costs and prints a row per value;
#: a longer list is a mistyped range such as 1:100000000:+1, refused before it is built)
MAX_LIST_VALUES = 1 << 16


def int_range(item: str) -> list[int]:
    """One item of a list option: ``64``, or a range ``START:STOP:xK`` (multiply by K),
    ``START:STOP:+K`` (add K) or ``START:STOP`` (add 1); STOP is included when reached.
    ``1:256:x2`` → 1, 2, 4 ... 256; ``1:8:+1`` → 1 ... 8."""
    parts = [p.strip() for p in item.split(":")]
    if len(parts) == 1:
        return [int(parts[0])]
    if len(parts) not in (2, 3):
        raise ValueError(f"a range is START:STOP:xK or START:STOP:+K, got {item!r}")
    start, stop = int(parts[0]), int(parts[1])
    step = parts[2] if len(parts) == 3 else "+1"
    if step[:1] not in ("x", "*", "+") or not step[1:].isdigit():
        raise ValueError(f"the step of range {item!r} is xK (multiply) or +K (add), "
                         f"e.g. 1:256:x2 or 1:8:+1, got {step!r}")
    k = int(step[1:])
    grows = k > 1 if step[0] in "x*" else k > 0
    if start < 1 or stop < start or not grows:
        raise ValueError(f"range {item!r} needs 1 <= START <= STOP and a step that grows "
                         "(x2 or more, +1 or more)")
    if step[0] == "+" and (stop - start) // k + 1 > MAX_LIST_VALUES:
        raise ValueError(f"range {item!r} holds {(stop - start) // k + 1:,} values, more than "
                         f"the {MAX_LIST_VALUES:,} a list option takes; use a larger step or "
                         "a multiplying range (xK)")
    out, v = [], start
    while v <= stop:
        out.append(v)
        v = v * k if step[0] in "x*" else v + k
    return out


def int_list(text: str) -> list[int]:
    """argparse type: ``"1,8,64"`` → [1, 8, 64]; items may be ranges (:func:`int_range`),
    ``"1:256:x2"`` → [1, 2, 4, ..., 256]."""
    import argparse

    try:
        out = [v for x in text.split(",") if x.strip() for v in int_range(x)]
    except ValueError as exc:
        msg = str(exc) if "range" in str(exc) else (
            f"expected integers or ranges (1:256:x2, 1:8:+1) separated by commas, "
            f"got {text!r}")
        raise argparse.ArgumentTypeError(msg) from None
    if not out:
        raise argparse.ArgumentTypeError("expected at least one integer")
    if len(out) > MAX_LIST_VALUES:
        raise argparse.ArgumentTypeError(f"{len(out):,} values, more than the "
                                         f"{MAX_LIST_VALUES:,} a list option takes")
    return list(dict.fromkeys(out))


def name_list(text: str) -> list[str]:
    """argparse type: ``"bf16,fp8"`` → ["bf16", "fp8"]."""
    import argparse

    out = [x.strip() for x in text.split(",") if x.strip()]
    if not out:
        raise argparse.ArgumentTypeError(f"expected names separated by commas, got {text!r}")
    return out


def name_note(catalogue, name) -> str | None:
    """When ``name`` is an alias that picks one of a family of specs (``a100`` among
    ``a100-80gb``, ``a100-40gb``, ``a100-80gb-pcie``), the choice in words:
    ``"a100 -> a100-80gb (also: a100-40gb, a100-80gb-pcie)"``; else None."""
    if not isinstance(name, str) or name.endswith(".toml") or "/" in name:
        return None
    n = name.strip().lower()
    key = catalogue.aliases.get(n)
    if key is None:
        return None
    names: dict[str, set] = {}  # every other spec's key and aliases
    for alias, k in catalogue.aliases.items():
        names.setdefault(k, {k}).add(alias)
    others = [k for k in catalogue if k != key and any(
        _extends(other, n) for other in names.get(k, {k}))]
    if not others:
        return None
    return f"{name} -> {key} (also: {', '.join(sorted(others))})"


def _extends(name: str, stem: str) -> bool:
    """Whether ``name`` is ``stem`` made more specific: ``stem`` then a separator
    (``a100`` -> ``a100-40gb``), or a stem ending in a letter then a digit (``a100-sxm`` ->
    ``a100-sxm4-40gb``); ``l4`` does not extend to ``l40s``."""
    if not name.startswith(stem) or name == stem:
        return False
    nxt = name[len(stem)]
    return not nxt.isalnum() or (stem[-1].isalpha() and nxt.isdigit())


def _cluster_device(ref) -> str | None:
    """The DEVICE of an ad hoc cluster name ``NxDEVICE`` (``8xa100``), else None."""
    if not isinstance(ref, str) or ref.endswith(".toml") or "/" in ref:
        return None
    count, x, device = ref.strip().partition("x")
    return device if x and count.isdigit() and device else None


def announce_names(args) -> None:
    """Print, on stderr, the choice an ambiguous device or workload alias made."""
    refs = [("devices", getattr(args, "device", None)),
            ("workloads", getattr(args, "workload", None))]
    devices = getattr(args, "devices", None) or ()
    if isinstance(devices, str):  # plan's --devices h100,a100
        devices = devices.split(",")
    refs += [("devices", d.strip()) for d in devices if isinstance(d, str)]
    for ref in (getattr(args, "device", None), getattr(args, "cluster", None)):
        device = _cluster_device(ref)
        if device:  # an ad hoc cluster NxDEVICE names its device by alias too
            refs.append(("devices", device))
    if not any(isinstance(r, str) and not r.endswith(".toml") for _, r in refs):
        return
    reg = registry(args)
    for folder, ref in refs:
        cat = reg.catalogues.get(folder)
        note = None if cat is None else name_note(cat, ref)
        if note:
            print(f"roofkit: {note}", file=sys.stderr)


def basis_choice(given, chosen: str, device: str) -> str:
    """The basis line every estimating command prints: which basis, and why when it was the
    default (calibrated where the device has a calibration, else datasheet)."""
    if given:
        return f"basis: {chosen} (as asked)"
    if chosen == "calibrated":
        return (f"basis: calibrated (the default: {device} has measured constants in "
                "specs/calibration; --basis datasheet for the spec ceilings)")
    return (f"basis: datasheet (the default: datasheet only, {device} has no calibration "
            "in specs/calibration, so its spec ceilings are used)")


def count(minimum: int):
    """argparse type: an integer >= ``minimum`` (``--top -1`` is refused, not read as 0)."""
    import argparse

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text[:60]!r}") \
                from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {value}")
        return value

    parse.__name__ = f"integer >= {minimum}"
    return parse
