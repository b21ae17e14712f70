"""Named scenario specs (``specs/scenarios/*.toml``) and their check against the kinds.

```toml
kind = "host_dispatch"                 # a registered scenario kind
name = "Gpt2XlEagerDecodeDispatch"     # a Python identifier: Scenarios.<name>
description = "..."
[inputs]                               # keyword inputs of the kind, quantities with units
ops_per_block = 12
dispatch = "10 us"
[sources]
reference = "https://..."
[provenance]                           # every numeric input: a source key or 'derived: ...'
"inputs.dispatch" = "reference"
```

Quantity strings are parsed once, when the file loads (and cached with it), so building a
scenario from the catalogue does not touch pint.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs

from .. import units
from ..errors import closest
from ..schema.common import provenance_problems
from .base import (
    Scenario,
    SIValue,
    _meta,
    convert_inputs,
    input_fields,
    known_inputs_text,
    parse_quantity,
)

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _name_problem(value: str) -> str | None:
    if _IDENT.match(value):
        return None
    fixed = "".join(p[:1].upper() + p[1:] for p in re.split(r"[^A-Za-z0-9]+", value) if p)
    return (f"scenario name {value!r} is not a Python identifier; write "
            f"{fixed or 'e.g. Gpt2XlEagerDecodeDispatch'!r}")


def _is_number_text(value) -> bool:
    return isinstance(value, str) and bool(units._NUMBER.match(value))


def _parse_any(text: str) -> tuple[str, float] | None:
    """(dimension, SI float) of a quantity string, or None when it is not one."""
    m = units._NUMBER.match(text)
    if not m or not m.group(2):
        return None
    for dim in units.DIMENSIONS:
        try:
            return dim, parse_quantity(text, dim)
        except Exception:
            continue
    return None


@attrs.frozen
class ScenarioSpec:
    """A named scenario: its kind, inputs (quantities with units) and their sources."""

    kind: str
    name: str
    description: str
    inputs: dict[str, Any]
    sources: dict[str, str]
    provenance: dict[str, str]
    display_name: str = ""
    aliases: tuple[str, ...] = ()
    notes: str = ""
    #: quantity strings of ``inputs`` parsed at load: name -> (dimension, SI float)
    parsed: dict = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self):
        parsed = {}
        for key, value in self.inputs.items():
            if isinstance(value, str):
                hit = _parse_any(value)
                if hit is not None:
                    parsed[key] = hit
        object.__setattr__(self, "parsed", parsed)

    @property
    def attr_name(self) -> str:
        return self.name

    def numeric_paths(self) -> list[str]:
        return [f"inputs.{k}" for k, v in self.inputs.items()
                if (isinstance(v, int | float) and not isinstance(v, bool)) or _is_number_text(v)]

    def problems(self) -> list[tuple[str, str]]:
        out = []
        bad_name = _name_problem(self.name)
        if bad_name:
            out.append(("name", bad_name))
        if not self.description.strip():
            out.append(("description", "say in a sentence what the scenario models"))
        for key, value in self.inputs.items():
            if isinstance(value, bool) or not isinstance(value, str | int | float):
                out.append((f"inputs.{key}", f"expected a quantity string such as '10 us' or "
                            f"an integer count, got {value!r}"))
        out += provenance_problems(self, self.numeric_paths())
        return out


def build(cls, inputs: Mapping, parsed: Mapping | None = None):
    """Construct ``cls`` from spec inputs: (object or None, [(key path, message)...])."""
    fields = input_fields(cls)
    problems = []
    for key in inputs:
        if key not in fields:
            near = closest(key, fields)
            hint = f"did you mean {', '.join(map(repr, near))}?" if near else \
                known_inputs_text(cls)
            problems.append((f"inputs.{key}", f"unknown input {key!r} for {cls.__name__}; {hint}"))
    for name, field in fields.items():
        if field.default is attrs.NOTHING and name not in inputs:
            problems.append((f"inputs.{name}", f"missing required input {name!r} of "
                             f"{cls.__name__}; {known_inputs_text(cls)}"))
    values = {k: v for k, v in inputs.items() if k in fields}
    if issubclass(cls, Scenario):
        for key, (dim, si) in (parsed or {}).items():
            if key in values and _meta(fields[key]).get("dimension") == dim:
                values[key] = SIValue(si)  # parsed at load: no pint here
        values, bad = convert_inputs(cls, values)
        problems += [(f"inputs.{name}", message) for name, message in bad]
    if problems:
        return None, problems
    try:
        return cls(**values), []
    except Exception as exc:  # a kind's own validation: report it, never crash the loader
        lines = getattr(exc, "problems", None) or [str(exc)]
        return None, [("inputs", line) for line in lines]


def check(spec: ScenarioSpec, tables) -> list[tuple[str, str]]:
    """The kind exists in the registry and the inputs structure into its class."""
    kinds = tables.get("scenario_kinds")
    if kinds is None:
        return []
    entry = kinds.get(spec.kind.strip().lower())
    if entry is None:
        known = sorted({k.name for _, k in kinds.values()})
        near = closest(spec.kind, known)
        hint = f"did you mean {', '.join(map(repr, near))}? " if near else ""
        return [("kind", f"unknown scenario kind {spec.kind!r}; {hint}known: "
                 f"{', '.join(known) or 'none'}")]
    kind = entry[1] if isinstance(entry, tuple) else entry
    return build(kind.cls, spec.inputs, spec.parsed)[1]
