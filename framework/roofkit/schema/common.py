"""Pieces shared by every spec: names, aliases, sources and provenance.

The checks here read the raw TOML table, so the loader runs them whether or not the file
structured (a bad name is reported beside a misspelled key, not after it is fixed). The
same messages back the attrs validators that guard specs built in code.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping

import attrs

_KEY = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_SYMBOL = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class FieldProblem(ValueError):
    """A field validator's complaint, carrying the field's key so the loader reports it at
    its key path rather than at the top of the file."""

    def __init__(self, key: str, message: str):
        self.key = key
        self.message = message
        super().__init__(message)

    def __reduce__(self):
        return (FieldProblem, (self.key, self.message))


def key_problem(value: str) -> str | None:
    """Registry keys are lowercase and hyphenated: ``h100-sxm``, ``llama-3.1-8b``."""
    if _KEY.match(value):
        return None
    fixed = re.sub(r"[^a-z0-9._-]+", "-", value.lower()).strip("-")
    return f"{value!r} is not a lowercase hyphenated key; write {fixed!r}"


def symbol_problem(value: str) -> str | None:
    if _SYMBOL.match(value):
        return None
    return f"symbol {value!r} is not a Python identifier (write e.g. 'H100')"


def check_key(instance, attribute, value: str) -> None:
    """attrs validator: :func:`key_problem`."""
    msg = key_problem(value) if isinstance(value, str) else None
    if msg:
        raise FieldProblem(attribute.name, msg)


def check_symbol(instance, attribute, value: str | None) -> None:
    """attrs validator: :func:`symbol_problem`."""
    msg = symbol_problem(value) if isinstance(value, str) else None
    if msg:
        raise FieldProblem(attribute.name, msg)


def symbol_from(name: str) -> str:
    """A namespace attribute derived from a key: ``llama-3.1-8b`` → ``Llama_3_1_8b``."""
    parts = re.split(r"[^A-Za-z0-9]+", name)
    out = "_".join(p[:1].upper() + p[1:] for p in parts if p)
    return out if out[:1].isalpha() else "_" + out


def table(data: Mapping, key: str) -> Mapping:
    """``data[key]`` when it is a table, else an empty one (the converter reports the type)."""
    value = data.get(key)
    return value if isinstance(value, Mapping) else {}


def is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def identity_problems(data: Mapping) -> list[tuple[str, str]]:
    """Key format of ``name`` and identifier format of ``symbol``, on the raw table."""
    out = []
    name, symbol = data.get("name"), data.get("symbol")
    if isinstance(name, str) and (msg := key_problem(name)):
        out.append(("name", msg))
    if isinstance(symbol, str) and (msg := symbol_problem(symbol)):
        out.append(("symbol", msg))
    return out


def _is_sourced(field: attrs.Attribute) -> bool:
    """A field holding a number (a quantity, a bounded number, an int or a float)."""
    meta = field.metadata.get("roofkit") or {}
    if meta.get("dimension") or "range" in meta or "minimum" in meta:
        return True
    typ = field.type
    return typ in (int, float, int | None, float | None)


def sourced_paths(data: Mapping, cls, tables: Iterable[str]) -> list[str]:
    """Key paths of the numbers a raw spec sets in ``tables`` (fields of attrs class ``cls``):
    every key of a mapping table (``compute``, ``dims``), and every numeric field of a
    sub-table that the file actually writes. Defaults the file leaves out need no source."""
    attrs.resolve_types(cls)
    fields = attrs.fields_dict(cls)
    out = []
    for name in tables:
        raw = table(data, name)
        field = fields[name]
        sub = _attrs_class(field.type)
        if sub is None:  # a mapping: every key it sets is a number
            out += [f"{name}.{k}" for k in raw]
            continue
        attrs.resolve_types(sub)
        sub_fields = attrs.fields_dict(sub)
        out += [f"{name}.{k}" for k in raw if k in sub_fields and _is_sourced(sub_fields[k])]
    return out


def _attrs_class(typ):
    """The attrs class of ``T`` or ``T | None``; None for anything else."""
    import typing

    if attrs.has(typ):
        return typ
    args = [a for a in typing.get_args(typ) if a is not type(None)]
    if len(args) == 1 and attrs.has(args[0]):
        return args[0]
    return None


_SOURCE_KEY = re.compile(r"\s*([A-Za-z0-9_.-]+)")


def source_key(entry: str) -> str:
    """The [sources] key a provenance entry starts with: ``"datasheet: table 3"`` →
    ``datasheet`` (or ``derived`` / ``assumption``)."""
    m = _SOURCE_KEY.match(entry)
    return m.group(1) if m else ""


def provenance_of(provenance: Mapping, path: str) -> str | None:
    """The provenance entry covering ``path``: its own, or its table's (``"dims" = …``)."""
    entry = provenance.get(path)
    return entry if entry is not None else provenance.get(path.split(".")[0])


def provenance_problems(spec, numeric_paths: list[str]) -> list[tuple[str, str]]:
    """Each number needs a provenance entry naming a source key, or 'derived:' /
    'assumption:' with its reasoning; and each entry must be for something the spec sets.

    ``spec`` is the raw TOML table or a structured spec (anything with ``sources`` and
    ``provenance``). Returns (key path, message) pairs.
    """
    raw = isinstance(spec, Mapping)
    get = spec.get if raw else (lambda key, default=None: getattr(spec, key, default))
    sources = get("sources")
    sources = sources if isinstance(sources, Mapping) else {}
    prov = get("provenance")
    prov = prov if isinstance(prov, Mapping) else {}
    problems = []
    for path in numeric_paths:
        entry = provenance_of(prov, path)  # its own entry, or its table's
        if entry is None:
            problems.append((f"provenance.{path}",
                             f"no source for {path}; add \"{path}\" = \"<source key>\" or "
                             "\"derived: <arithmetic>\" to [provenance]"))
            continue
        if not isinstance(entry, str):
            continue  # the converter reports the type
        first = source_key(entry)
        if first in ("derived", "assumption") or first in sources:
            continue
        known = ", ".join(sorted(sources)) or "none"
        problems.append((f"provenance.{path}",
                         f"{entry!r} names no key of [sources] ({known}) and does not start "
                         "with 'derived:' or 'assumption:'"))
    numbered = set(numeric_paths)
    for path in prov:
        if path in numbered or _sets(get, path):
            continue
        # a note on a table the spec sets ("dims.flags": what the template fixes) stands,
        # unless it is a near miss of a number the spec sets ("memory.capacty")
        near = difflib.get_close_matches(path, numbered, n=3, cutoff=0.85)
        if _sets(get, path.split(".")[0]) and not near:
            continue
        hint = f"; did you mean {', '.join(map(repr, near))}?" if near else ""
        problems.append((f"provenance.{path}",
                         f"provenance for {path!r}, which the spec does not set{hint}"))
    return problems


def _sets(get, path: str) -> bool:
    """Whether the spec sets ``path`` (``memory.capacity``, or a whole table ``dims``)."""
    head, *rest = path.split(".")
    value = get(head)
    for part in rest:
        if isinstance(value, Mapping):
            value = value.get(part)
        elif attrs.has(type(value)):
            value = getattr(value, part, None)
        else:
            return False
    return not (value is None or value == {} or value == () or value == [])


_URL = re.compile(r"^https?://\S+$")


def measured_problems(url: str, value: float) -> list[tuple[str, str]]:
    """The checks every measured case kind shares: the URL it was read from, and a
    positive measured value."""
    out = []
    if not _URL.match(url.strip()):
        out.append(("source.url", f"a case needs the URL it was read from, got {url!r}"))
    if not value > 0:
        out.append(("value", f"a measured value must be positive, got {value}"))
    return out


def catalogue_problems(case, tables) -> list[tuple[str, str]]:
    """A measured case's ``workload`` and ``device`` that no catalogue in ``tables`` holds."""
    out = []
    for field, table in (("workload", "workloads"), ("device", "devices")):
        cat = tables.get(table)
        name = getattr(case, field)
        if cat is not None and name not in cat:
            out.append((field, f"unknown {field} {name!r} (not in the {table} catalogue)"))
    return out


def precision_problems(config, tables) -> list[tuple[str, str]]:
    """A case config's ``precision`` and ``kv_dtype`` that name no registered precision."""
    out = []
    precisions = tables.get("precisions", {})
    for f in ("precision", "kv_dtype"):
        v = getattr(config, f)
        if v is not None and precisions and v.lower() not in precisions:
            out.append((f"config.{f}", f"unknown precision {v!r}"))
    return out
