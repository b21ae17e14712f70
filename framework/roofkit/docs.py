"""The spec reference page, generated from the attrs spec classes so it cannot drift.

``python -m roofkit.docs -o docs/reference.md`` (or ``roofkit reference -o ...``) writes one
section per spec kind (the catalogue folders of :data:`roofkit.spec_kinds.SPEC_KINDS`) and
one per registered scenario kind's inputs: every key with its TOML type, unit, allowed
range, default and whether it is required, and the class docstring. ``--check`` exits 1
when the file differs from what the code generates (the test suite runs it).
"""

from __future__ import annotations

import argparse
import functools
import inspect
import sys
import types
import typing
from pathlib import Path

import attrs

from . import units
from .schema.fields import meta_of

HEADER = """# Spec reference

Generated from the spec classes by `python -m roofkit.docs -o docs/reference.md` (also
`roofkit reference -o docs/reference.md`); do not edit by hand: a test fails when this page
and the code disagree.

Every spec is a TOML file whose keys are the fields below (unknown keys are refused, with the
closest known key suggested). A quantity is a string with a unit (`"3.35 TB/s"`,
`"10 us"`); the column *unit* names its dimension and an example, and the value is kept in SI
units inside (bytes, seconds, FLOP). A table of a nested class is written `[name]`; a table
keyed by your own names is `[name.KEY]`; an array of tables `[[name]]`. Numbers in the
sourced tables of a device or workload each need a `[provenance]` entry. An *expression* is a
number or a string over names (`"heads * head_dim"`) in the whitelisted grammar of
[docs/circuits.md](circuits.md): numbers, names, `+ - * / // **`, `min`, `max`, `ceil`.
"""

_PLAIN = {str: "string", int: "integer", float: "number", bool: "boolean",
          typing.Any: "any TOML value"}


def _hints(cls) -> dict:
    try:
        return typing.get_type_hints(cls)
    except Exception:  # an annotation that cannot be resolved: fall back to its text
        return {f.name: f.type for f in attrs.fields(cls)}


def _annotation(cls, name: str) -> str:
    """A field's annotation as written in the class body (a string under postponed
    evaluation), whether or not attrs has resolved the field's type since."""
    for klass in cls.__mro__:
        ann = inspect.get_annotations(klass)
        if name in ann:
            return ann[name] if isinstance(ann[name], str) else ""
    return ""


def _strip_none(tp):
    args = typing.get_args(tp)
    if typing.get_origin(tp) in (typing.Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return (rest[0] if len(rest) == 1 else typing.Union[tuple(rest)]), True  # noqa: UP007
    return tp, False


def _type_text(tp) -> str:
    tp, _ = _strip_none(tp)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Literal:
        text = "one of " + ", ".join(f"`{a!r}`".replace("'", '"') for a in args)
    elif origin in (typing.Union, types.UnionType):
        text = " or ".join(_type_text(a) for a in args)
    elif origin in (tuple, list):
        inner = args[0] if args else typing.Any
        text = f"array of {_type_text(inner)}"
    elif origin is dict:
        inner = _type_text(args[1]) if len(args) > 1 else "values"
        text = "table of tables" if inner == "table" else f"table of {inner}"
    elif attrs.has(tp):
        text = "table"
    elif isinstance(tp, str):
        text = tp
    else:
        text = _PLAIN.get(tp, getattr(tp, "__name__", str(tp)))
    return text


def _nested(tp):
    """(attrs class, how it nests: 'table' | 'keyed' | 'array') of a field type, or None."""
    tp, _ = _strip_none(tp)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if attrs.has(tp):
        return tp, "table"
    if origin is dict and len(args) == 2 and attrs.has(args[1]):
        return args[1], "keyed"
    if origin in (tuple, list) and args and attrs.has(args[0]):
        return args[0], "array"
    return None


def _unit(meta: dict | None) -> str:
    if not meta or not meta.get("dimension"):
        return ""
    dim = meta["dimension"]
    example = units.DIMENSIONS[dim][1]
    return f"{dim} (`\"{example}\"`)"


def _range(meta: dict | None, tp) -> str:
    """The allowed values a field's metadata declares, in words: its range (a ``Range``
    object that writes itself, or a ``(low, high, low_open)`` tuple), a minimum and maximum,
    the sign a quantity must have, and the keys a table knows."""
    if not meta:
        return ""
    parts = []
    dim = meta.get("dimension")
    rng = meta.get("range")
    if rng is not None:
        if hasattr(rng, "text"):
            parts.append(rng.text(dim) if dim else rng.text())
        else:
            low, high, low_open = rng
            parts.append(f"{'(' if low_open else '['}{low:g}, {high:g}]")
    lo, hi = meta.get("minimum"), meta.get("maximum")
    if lo is not None and hi is not None:
        parts.append(f"[{lo:g}, {hi:g}]")
    elif lo is not None:
        parts.append(f">= {lo:g}")
    elif hi is not None:
        parts.append(f"<= {hi:g}")
    if dim and rng is None:
        if meta.get("nonnegative"):
            parts.append(">= 0")
        elif meta.get("positive"):
            parts.append("> 0")
    for key, rng_k in (meta.get("limits") or {}).items():
        shown = rng_k.text(dim) if hasattr(rng_k, "text") else str(rng_k)
        parts.append(f"`{key}` {shown}")
    keys = meta.get("keys")
    if keys:
        shown = ", ".join(f"`{k}`" for k in keys)
        parts.append(f"keys {'only ' if meta.get('closed') else 'read: '}{shown}")
    return ", ".join(parts)


def _default(field: attrs.Attribute) -> tuple[str, bool]:
    """(default in words, required)."""
    d = field.default
    if d is attrs.NOTHING:
        return "", True
    if isinstance(d, attrs.Factory):
        d = d.factory() if not d.takes_self else None
    meta = meta_of(field) or {}
    if meta.get("dimension") and isinstance(d, int | float) and not isinstance(d, bool):
        return units.fmt(d, meta["dimension"]) if d else "0", False
    if attrs.has(type(d)):
        return "(the table's defaults)", False
    if d is None:
        return "none", False
    if d == "":
        return '`""`', False
    if d in ({}, (), []):
        return "empty", False
    if isinstance(d, str):
        return f'`"{d}"`', False
    if isinstance(d, bool):
        return f"`{str(d).lower()}`", False
    return f"`{d!r}`", False


def _doc(cls) -> str:
    doc = inspect.getdoc(cls) or ""
    if doc.startswith(f"{cls.__name__}("):  # attrs' generated signature, not a docstring
        return ""
    return " ".join(doc.split()).replace("``", "`")


def _table(cls, prefix: str, out: list[str], seen: set) -> None:
    hints = _hints(cls)
    doc = _doc(cls)
    if doc:
        out += [doc, ""]
    fields = [f for f in attrs.fields(cls) if f.init]
    about = any((meta_of(f) or {}).get("doc") for f in fields)  # a column only when used
    out += ["| key | type | unit | range | default | required |" + (" about |" if about else ""),
            "|---|---|---|---|---|---|" + ("---|" if about else "")]
    later = []
    for f in fields:
        tp = hints.get(f.name, f.type)
        meta = meta_of(f)
        default, required = _default(f)
        nested = _nested(tp)
        text = _type_text(tp)
        if "Expression" in _annotation(cls, f.name):  # an alias of Any: say what it holds
            text = text.replace("any TOML value", "expression")
        if meta and meta.get("dimension"):
            text = "table of quantities" if meta.get("mapping") else "quantity"
            if _strip_none(tp)[1]:
                text += " (optional)"
        row = (f"| `{prefix}{f.name}` | {text} | {_unit(meta)} | {_range(meta, tp)} | "
               f"{default} | {'yes' if required else ''} |")
        if about:
            row += f" {(meta or {}).get('doc', '')} |"
        out.append(row)
        if nested:
            later.append((f, *nested))
    out.append("")
    for f, sub, how in later:
        path = {"table": f"{prefix}{f.name}", "keyed": f"{prefix}{f.name}.KEY",
                "array": f"{prefix}{f.name}"}[how]
        head = f"[[{path}]]" if how == "array" else f"[{path}]"
        if (sub, path) in seen:
            continue
        seen.add((sub, path))
        out += [f"#### `{head}`: {sub.__name__}", ""]
        _table(sub, f"{path}." if how != "array" else "", out, seen)


@functools.cache
def _builtin_registry():
    """roofkit's own registry, without third-party plugins: the page documents roofkit."""
    from .registry import build_registry

    return build_registry(entry_points=False)


def reference_markdown(registry=None) -> str:
    """The whole reference page (scenario kinds from ``registry``, the builtin one unless
    given)."""
    from .spec_kinds import SPEC_KINDS

    reg = registry if registry is not None else _builtin_registry()
    out = [HEADER]
    out.append("Spec kinds: " + ", ".join(
        f"[{k.noun}](#{k.noun.replace(' ', '-')}-{k.folder})" for k in SPEC_KINDS.values())
        + "; the [dims of each circuit template](#workload-dims-by-circuit-template) and the "
        "[inputs of each scenario kind](#scenario-kind-inputs).\n")
    for kind in SPEC_KINDS.values():
        cls = kind.cls
        out += [f"## {kind.noun} ({kind.folder})", "",
                f"`specs/{kind.folder}/*.toml`, class `{cls.__module__}.{cls.__name__}`; "
                f"keyed by `{kind.key}`"
                + (f"; a loose file is recognised by its `{kind.marker}` key" if kind.marker
                   else "") + ".", ""]
        _table(cls, "", out, set())
    out += _template_dims(reg)
    out += ["## Scenario kind inputs", "",
            "A scenario spec's `[inputs]` are the keyword inputs of its kind: a number, or a "
            "quantity string of the dimension below (parsed once, when the file loads).", ""]
    for name in sorted(reg.scenario_kinds):
        sk = reg.scenario_kinds[name]
        out += [f"### `kind = \"{sk.name}\"`", ""]
        out += _scenario_inputs(sk)
    return "\n".join(out).rstrip() + "\n"


def _template_dims(reg) -> list[str]:
    """The ``[dims]`` a workload of each builtin circuit template may set."""
    from .circuit.template import merged, settable_dims

    circuits = reg.catalogues["circuits"]
    out = ["## Workload dims by circuit template", "",
           "A template workload's `[dims]` may set these names and no others (`layers` and "
           "the required ones must be set; every dim is a whole number unless the template "
           "lists it as fractional). Defaults are numbers or expressions over other dims.", ""]
    for key in sorted(circuits):
        t = merged(circuits[key], circuits)
        out += [f"### `template = \"{t.name}\"`", "", t.description.strip() + ".", "",
                "| dim | required | default |", "|---|---|---|"]
        for d in settable_dims(t):
            if d in t.fixed:
                default = f"fixed at `{t.fixed[d]:g}`"
            elif d in t.defaults:
                v = t.defaults[d]
                default = f'`"{v}"`' if isinstance(v, str) else f"`{v:g}`"
            else:
                default = ""
            req = "yes" if d == "layers" or (d in t.requires and d not in t.defaults) else ""
            out.append(f"| `{d}` | {req} | {default} |")
        out.append("")
    return out


def _scenario_inputs(sk) -> list[str]:
    from .scenarios.base import _meta, input_fields

    rows = ["| input | unit | default | required | about |", "|---|---|---|---|---|"]
    for name, f in input_fields(sk.cls).items():
        meta = _meta(f)
        dim = meta.get("dimension")
        if dim:
            unit = f"{dim} (`\"{units.DIMENSIONS[dim][1]}\"`)"
        elif meta.get("count"):
            unit = "integer >= 1"
        else:
            unit = _type_text(_hints(sk.cls).get(f.name, f.type))
        if f.default is attrs.NOTHING:
            default, required = "", "yes"
        elif f.default is None:
            default, required = "none", ""
        else:
            default, required = f"`{f.default!r}`", ""
        rows.append(f"| `{name}` | {unit} | {default} | {required} | {meta.get('doc', '')} |")
    doc = _doc(sk.cls)
    derived = ", ".join(f"`{d}`" for d in sk.derived)
    return [*([doc, ""] if doc else []), *rows, "", f"Derived: {derived}.", ""]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m roofkit.docs",
                                description="Write the spec reference page.")
    p.add_argument("-o", "--output", metavar="FILE", help="write here (default stdout)")
    p.add_argument("--check", action="store_true",
                   help="exit 1 when FILE differs from the generated page")
    args = p.parse_args(argv)
    return run(args.output, args.check)


def run(output: str | None, check: bool = False) -> int:
    text = reference_markdown()
    if check:
        if output is None:
            print("roofkit: --check needs -o FILE", file=sys.stderr)
            return 1
        current = Path(output).read_text(encoding="utf-8") if Path(output).is_file() else ""
        if current != text:
            print(f"roofkit: {output} is stale; regenerate it with "
                  f"`python -m roofkit.docs -o {output}`", file=sys.stderr)
            return 1
        return 0
    if output:
        Path(output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
