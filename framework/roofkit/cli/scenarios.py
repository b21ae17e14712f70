"""Scenario commands: ``scenarios`` lists the catalogue; ``scenario`` evaluates one.

    roofkit scenario Gpt2XlEagerDecodeDispatch --set dispatch="2 us" --json
    roofkit scenario --kind host_dispatch --set ops_per_block=12 --set blocks=48 \\
        --set dispatch="10 us" --set launch="5 us" --set device_time="0.8955 ms"
"""

from __future__ import annotations

from pathlib import Path

import attrs

from ..errors import SpecError
from . import common


def register(sub) -> None:
    p = sub.add_parser("scenarios", help="list the named scenarios and the scenario kinds")
    p.add_argument("--json", action="store_true")
    p.add_argument("--kind", help="only scenarios of this kind")
    p.set_defaults(func=cmd_scenarios)

    p = sub.add_parser("scenario", help="a scenario's inputs and every derived attribute, "
                       "with units; a named one (NAME) or an unnamed one (--kind)")
    p.add_argument("name", nargs="?", help="scenario name, alias or TOML path")
    p.add_argument("--kind", help="evaluate an unnamed scenario of this kind from --set inputs")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="sets",
                   help="set an input (repeatable): --set dispatch='2 us' --set blocks=48")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_scenario)


def cmd_scenarios(args) -> int:
    reg = common.registry(args)
    cat = reg.catalogues["scenarios"]
    if args.kind:
        reg.scenario_kind(args.kind)  # an unknown kind is refused with the closest ones
    specs = [s for s in cat.values() if not args.kind or s.kind.lower() == args.kind.lower()]
    if args.json:
        common.print_json([{
            "name": s.name, "kind": s.kind, "description": s.description,
            "inputs": dict(s.inputs), "sources": dict(s.sources),
            "origin": str(cat.origin(s.name)),
        } for s in specs])
        return 0
    rows = [[s.name, s.kind, _short(s.description, 70)] for s in sorted(specs, key=_order)]
    print(common.table(rows, ["scenario", "kind", "description"]))
    kinds = ", ".join(sorted(k.name for k in reg.scenario_kinds.values()))
    print(f"\n{len(specs)} scenarios; kinds: {kinds}.\n`roofkit scenario NAME` for inputs "
          "and derived values; `roofkit scenario --kind KIND --set key=value ...` for an "
          "unnamed one.")
    return 0


def _order(spec):
    return (spec.kind, spec.name.lower())


def _short(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _parse_sets(sets, cls) -> dict:
    """``["blocks=48", "dispatch=2 us"]`` → keyword inputs of ``cls``, typed by field."""
    from ..errors import closest
    from ..scenarios.base import _meta, input_fields

    fields = input_fields(cls)
    out, problems = {}, []
    for item in sets:
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            problems.append(f"--set {item!r}: write KEY=VALUE, e.g. --set blocks=48")
            continue
        field = fields.get(key)
        if field is None:
            near = closest(key, fields)
            hint = f"; did you mean {', '.join(map(repr, near))}?" if near else ""
            problems.append(f"--set {item!r}: unknown input {key!r} for {cls.__name__}{hint}")
            continue
        meta = _meta(field)
        if value.lower() in ("none", "") and field.default is None:
            out[key] = None
        elif meta.get("count") or field.type in (int, "int"):
            try:
                out[key] = int(value)
            except ValueError:
                problems.append(f"--set {item!r}: {key} takes an integer, got {value!r}")
        elif field.type in (float, "float") and "dimension" not in meta:
            try:
                out[key] = float(value)
            except ValueError:
                problems.append(f"--set {item!r}: {key} takes a number, got {value!r}")
        else:
            out[key] = value
    if problems:
        raise _input_error(problems, cls)
    return out


def _build(reg, args):
    """(scenario object, spec or None, kind, changed inputs)."""
    from ..scenarios import scenario_spec
    from ..scenarios.base import input_fields

    if args.name and args.kind:
        raise SpecError("give a scenario NAME or --kind KIND, not both")
    if args.name:
        spec = scenario_spec(reg, args.name)
        kind = reg.scenario_kind(spec.kind)
        obj = reg.scenario(args.name)
        changes = _parse_sets(args.sets, kind.cls)
        if changes:
            obj = _variant(obj, changes)
        return obj, spec, kind, changes
    if not args.kind:
        raise SpecError("name a scenario (`roofkit scenarios` lists them) or give --kind KIND "
                        "with --set inputs")
    kind = reg.scenario_kind(args.kind)
    changes = _parse_sets(args.sets, kind.cls)
    missing = [n for n, f in input_fields(kind.cls).items()
               if n not in changes and f.default is attrs.NOTHING]
    if missing:
        raise _input_error([f"--kind {kind.name} needs --set for {', '.join(missing)}"],
                           kind.cls)
    return _construct(kind.cls, changes), None, kind, changes


def _input_error(problems, cls) -> SpecError:
    """One message: the problems, then every input the kind knows."""
    from ..scenarios.base import known_inputs_text

    return SpecError("\n".join([*problems, known_inputs_text(cls)]))


def _construct(cls, values):
    try:
        return cls(**values)
    except SpecError as exc:
        raise _input_error(exc.problems, cls) from None
    except (TypeError, ValueError) as exc:
        raise _input_error([str(exc)], cls) from None


def _variant(obj, changes):
    """A what-if copy: the kind's ``variant`` if it has one, else ``attrs.evolve``."""
    try:
        if hasattr(obj, "variant"):
            return obj.variant(**changes)
        return attrs.evolve(obj, **changes)
    except SpecError as exc:
        raise _input_error(exc.problems, type(obj)) from None
    except (TypeError, ValueError) as exc:
        raise _input_error([str(exc)], type(obj)) from None


def cmd_scenario(args) -> int:
    from ..scenarios.report import derived_names_of, doc_line, evaluate, input_values, jsonable
    from ..scenarios.report import text as show

    reg = common.registry(args)
    obj, spec, kind, changes = _build(reg, args)
    names = derived_names_of(kind)
    values, unavailable = evaluate(obj, names)
    inputs = input_values(obj)
    origin = None
    if spec is not None:
        try:
            origin = str(reg.catalogues["scenarios"].origin(spec.name))
        except Exception:
            origin = str(Path(args.name).resolve())
    if args.json:
        common.print_json({
            "name": spec.name if spec else None,
            "kind": kind.name,
            "description": spec.description if spec else kind.description,
            "origin": origin,
            "inputs": {k: jsonable(v) for k, v in inputs.items()},
            "derived": {k: jsonable(v) for k, v in values.items()},
            "unavailable": unavailable,
            "set": sorted(changes),
            "sources": dict(spec.sources) if spec else {},
            "provenance": dict(spec.provenance) if spec else {},
        })
        return 0
    title = spec.name if spec else f"unnamed {kind.name} scenario"
    print(f"{title} ({kind.name})")
    print(_short(spec.description if spec else kind.description, 200))
    if origin:
        print(f"from {origin}")
    rows = [[k, show(v), _short(_basis(k, spec, changes, kind.cls), 60)]
            for k, v in inputs.items()]
    print("\ninputs")
    print(_indent(common.table(rows, ["input", "value", "source"], "lrl")))
    rows = [[k, show(values[k]) if k in values else "n/a", _short(
        doc_line(type(obj), k) if k in values else unavailable[k], 80)] for k in names]
    print("\nderived")
    print(_indent(common.table(rows, ["attribute", "value", "meaning"], "lrl")))
    if spec and spec.sources:
        print("\nsources")
        for k, url in spec.sources.items():
            print(f"  {k}: {url}")
    return 0


def _basis(name: str, spec, changes, cls) -> str:
    """Where an input's value comes from: --set, the spec's provenance, or the default."""
    from ..scenarios.base import _meta, input_fields

    if name in changes:
        return "set with --set"
    if spec is not None and name in spec.inputs:
        return spec.provenance.get(f"inputs.{name}") or spec.provenance.get("inputs") or ""
    doc = _meta(input_fields(cls)[name]).get("doc", "")
    return f"default ({doc})" if doc else "default"


def _indent(block: str) -> str:
    return "\n".join("  " + line for line in block.splitlines())
