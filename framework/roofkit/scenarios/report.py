"""A scenario as data: its inputs and derived attributes, for any scenario class.

Works on the builtin kinds and on a plugin's plain attrs class alike; a derived attribute
that cannot be computed (a missing optional input, a compile that never repays) is reported
with its reason instead of a value.
"""

from __future__ import annotations

import math

import attrs

from ..errors import RoofkitError
from .base import input_fields


def input_values(obj) -> dict:
    """Keyword name → public value (Quantity, count, None) of every input of ``obj``."""
    out = {}
    for name, field in input_fields(type(obj)).items():
        out[name] = getattr(obj, name) if hasattr(type(obj), name) else getattr(obj, field.name)
    return out


def evaluate(obj, names) -> tuple[dict, dict]:
    """(derived name → value, derived name → reason it is unavailable)."""
    values, unavailable = {}, {}
    for name in names:
        try:
            values[name] = getattr(obj, name)
        except RoofkitError as exc:
            unavailable[name] = str(exc)
    return values, unavailable


def unit_text(q) -> str:
    """ASCII unit of a Quantity: ``us``, ``ms``, ``s``, ``1/s``."""
    return format(q.units, "~C").replace("µ", "u").replace("μ", "u")


def jsonable(value):
    """A Quantity becomes ``{"value", "unit"}``; numbers stay numbers; None stays None."""
    if hasattr(value, "magnitude") and hasattr(value, "units"):
        return {"value": float(value.magnitude), "unit": unit_text(value)}
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def text(value, digits: int = 6) -> str:
    """A short human string: ``8640 us``, ``9.64824``, ``576``."""
    if value is None:
        return "-"
    if hasattr(value, "magnitude") and hasattr(value, "units"):
        return f"{float(value.magnitude):.{digits}g} {unit_text(value)}"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def doc_line(cls, name: str) -> str:
    """First paragraph of a derived attribute's docstring, on one line."""
    attr = getattr(cls, name, None)
    doc = (getattr(attr, "__doc__", None) or "").strip()
    return " ".join(doc.split("\n\n")[0].split())


def scenario_dict(obj, derived_names) -> dict:
    """``{"inputs", "derived", "unavailable"}`` with JSON-ready values."""
    values, unavailable = evaluate(obj, derived_names)
    return {
        "inputs": {k: jsonable(v) for k, v in input_values(obj).items()},
        "derived": {k: jsonable(v) for k, v in values.items()},
        "unavailable": unavailable,
    }


def derived_names_of(kind) -> tuple[str, ...]:
    """The derived attributes of a registered kind: its declared list, else the class's."""
    names = tuple(kind.derived) or tuple(getattr(kind.cls, "derived_names", ()))
    if names:
        return names
    inputs = set(input_fields(kind.cls))
    return tuple(n for n in dir(kind.cls) if not n.startswith("_") and n not in inputs
                 and isinstance(getattr(kind.cls, n, None), property)
                 and n not in {a.name for a in attrs.fields(kind.cls)})
