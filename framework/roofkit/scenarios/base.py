"""What every scenario kind shares: typed keyword inputs, their validation, and ``variant``.

A scenario is a frozen attrs class whose inputs are declared with :func:`quantity_input`
(a time or rate, given as ``"10 us"`` or a pint Quantity, stored as an SI float) and
:func:`count_input` (an integer >= 1). Derived attributes are properties that compute in
floats and return pint Quantities (times) or plain numbers (ratios, counts).

A plugin writes a kind the same way::

    @scenario_class
    class MyScenario(Scenario):
        derived_names = ("total",)
        _step: float = quantity_input("time", "ms")
        steps: int = count_input()

        @property
        def total(self):
            return Q(self.steps * self.value_in("step"), "ms")
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from decimal import Decimal
from typing import ClassVar

import attrs

from .. import units
from ..errors import SpecError, closest
from ..schema.fields import PLAUSIBLE, Range

_KEY = "roofkit"

#: the largest count input unless its declaration says more (a trillion items, steps...)
MAX_COUNT = 10**12

#: display units a quantity input may name, with the SI factor (as a decimal string)
UNIT_FACTORS: dict[str, str] = {"ns": "1e-9", "us": "1e-6", "ms": "1e-3", "s": "1", "1/s": "1"}
#: the dimensions a scenario's quantity input may have (its display units are above)
INPUT_DIMENSIONS = ("time", "rate")


class SIValue(float):
    """A float already in SI units. Scenarios store their quantity inputs as these, and
    accept them back unchanged, so ``attrs.evolve`` and :meth:`Scenario.variant` round-trip
    while a bare number typed by a user (``dispatch=10``: seconds? microseconds?) is refused."""

    __slots__ = ()


class _Bad(Exception):
    """One input's problem (the message; the caller knows the name)."""


def quantity_input(dimension: str, unit: str, *, default=attrs.NOTHING, doc: str = "",
                   high: float | None = None):
    """A positive time or rate input, public as a Quantity in ``unit``, stored as SI float,
    at most ``high`` (SI; the dimension's plausible bound by default).

    Declare it on a private name (``_dispatch``); the keyword argument and the public
    Quantity property drop the underscore (``dispatch``).
    """
    if dimension not in INPUT_DIMENSIONS or unit not in UNIT_FACTORS:
        import sys

        from ..errors import PluginError

        where = sys._getframe(1).f_globals.get("__name__", "?")  # the declaring module
        if dimension not in INPUT_DIMENSIONS:
            what = (f"unknown dimension {dimension!r}; scenario inputs take "
                    f"{' or '.join(map(repr, INPUT_DIMENSIONS))}")
        else:
            what = f"unknown display unit {unit!r}; one of {', '.join(UNIT_FACTORS)}"
        raise PluginError(f"a scenario input declared in module {where!r} (a scenario kind's "
                          f"plugin) has an {what}")
    rng = Range(0.0, PLAUSIBLE[dimension] if high is None else high, low_open=True)
    meta = {_KEY: {"dimension": dimension, "unit": unit, "doc": doc, "input": True,
                   "range": rng}}
    return attrs.field(default=default, kw_only=True, metadata=meta)


def count_input(*, default=attrs.NOTHING, doc: str = "", maximum: int = MAX_COUNT):
    """An integer count input from 1 to ``maximum`` (``None`` allowed when that is the
    default)."""
    meta = {_KEY: {"count": True, "minimum": 1, "doc": doc, "input": True,
                   "range": Range(1, maximum, integer=True)}}
    return attrs.field(default=default, kw_only=True, metadata=meta)


def _meta(field: attrs.Attribute) -> dict:
    return field.metadata.get(_KEY) or {}


def input_fields(cls) -> dict[str, attrs.Attribute]:
    """Keyword name → attrs field, for every input of a scenario class (or any attrs class)."""
    return {f.alias: f for f in attrs.fields(cls) if f.init}


def describe_input(field: attrs.Attribute) -> str:
    """``dispatch (time, e.g. '10 us')``: an input's name with what it takes."""
    meta = _meta(field)
    optional = field.default is None
    if "dimension" in meta:
        example = units.DIMENSIONS[meta["dimension"]][1]
        what = f"{meta['dimension']}, e.g. {example!r}"
    elif meta.get("count"):
        what = "integer >= 1"
    else:
        what = getattr(field.type, "__name__", None) or str(field.type or "value")
    if optional:
        what += ", optional"
    elif field.default is not attrs.NOTHING:
        what += f", default {field.default!r}"
    return f"{field.alias} ({what})"


def known_inputs_text(cls) -> str:
    return "known inputs: " + "; ".join(describe_input(f) for f in input_fields(cls).values())


# -- conversion ---------------------------------------------------------------------------

def parse_quantity(text: str, dimension: str) -> float:
    """``"0.8955 ms"`` → SI float; :func:`roofkit.units.parse` validates and words errors."""
    return units.parse(text, dimension)


def _from_quantity(q, dimension: str) -> float:
    try:
        magnitude = float(q.magnitude)
    except (TypeError, ValueError):
        raise _Bad(f"expected one {dimension}, got {q!r}") from None
    for unit_text in (str(q.units), format(q.units, "D")):
        try:
            return units.to_si(repr(magnitude), unit_text, dimension)
        except SpecError as exc:
            raise _Bad(str(exc)) from None
        except Exception:  # a spelling our registry lacks: try the long form
            continue
    raise _Bad(f"cannot read the unit of {q!r} as a {dimension}")


def _to_quantity_si(meta: dict, value) -> float:
    dim = meta["dimension"]
    example = f"'{10 if meta['unit'] != '1/s' else 1450} {meta['unit']}'"
    if isinstance(value, SIValue):
        out = float(value)
    elif isinstance(value, bool):
        raise _Bad(f"expected a {dim} such as {example}, got {value!r}")
    elif isinstance(value, numbers.Real):
        raise _Bad(f"a bare number {value!r} has no unit; write a string such as {example} "
                   f"or a Quantity, roofkit.Q({value!r}, {meta['unit']!r})")
    elif isinstance(value, str):
        try:
            out = parse_quantity(value, dim)
        except SpecError as exc:
            raise _Bad(str(exc)) from None
    elif hasattr(value, "magnitude") and hasattr(value, "units"):
        out = _from_quantity(value, dim)
    else:
        raise _Bad(f"expected a {dim} such as {example}, got {value!r} ({type(value).__name__})")
    rng = meta.get("range") or Range(0.0, PLAUSIBLE[dim], low_open=True)
    bad = rng.problem(out, f"{value!r}" + (f" (read as {units.fmt(out, dim)})"
                                           if math.isfinite(out) else ""), dim)
    if bad:
        meant = units.prefix_fix(value, dim, rng.contains) if isinstance(value, str) else None
        raise _Bad(bad + (f"; did you mean {meant!r}?" if meant else ""))
    return SIValue(out)


def _to_count(meta: dict, value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        hint = ""
        if isinstance(value, float) and value.is_integer():
            hint = f"; write {int(value)}"
        elif isinstance(value, str) and value.strip().isdigit():
            hint = f"; write {value.strip()} without quotes"
        raise _Bad(f"expected an integer, got {value!r}{hint}")
    value = int(value)
    rng = meta.get("range") or Range(meta.get("minimum", 1), MAX_COUNT, integer=True)
    digits = len(str(abs(value)))
    bad = rng.problem(value, f"{value}" if digits <= 30 else f"an integer of {digits} digits")
    if bad:
        raise _Bad(bad)
    return value


def convert_inputs(cls, values: Mapping) -> tuple[dict, list[tuple[str, str]]]:
    """Convert and validate keyword inputs of ``cls``: (converted values, [(name, message)]).

    Only names present in ``values`` are converted; inputs without roofkit metadata pass
    through unchanged.
    """
    out, problems = {}, []
    for name, field in input_fields(cls).items():
        if name not in values:
            continue
        value, meta = values[name], _meta(field)
        if value is None and field.default is None:
            out[name] = None
            continue
        try:
            if "dimension" in meta:
                out[name] = _to_quantity_si(meta, value)
            elif meta.get("count"):
                out[name] = _to_count(meta, value)
            else:
                out[name] = value
        except _Bad as exc:
            problems.append((name, str(exc)))
    return out, problems


def scenario_class(cls):
    """Make ``cls`` a frozen attrs scenario and give each quantity input a public property
    (``_dispatch`` → ``dispatch``) returning a pint Quantity in its declared unit."""
    cls = attrs.frozen(cls, repr=False)
    for field in attrs.fields(cls):
        meta = _meta(field)
        if "dimension" in meta and field.name != field.alias:
            setattr(cls, field.alias, _quantity_property(field.alias, meta))
    return cls


def _quantity_property(name: str, meta: dict):
    unit = meta["unit"]

    def get(self):
        value = self.value_in(name)
        return None if value is None else units.Q(value, unit)

    get.__doc__ = meta.get("doc") or f"The {name} input, in {unit}."
    return property(get)


class Scenario:
    """Base of the builtin scenario kinds: input validation, Quantities, ``variant``, dicts."""

    __slots__ = ()
    #: the derived attributes, in the order they are reported
    derived_names: ClassVar[tuple[str, ...]] = ()

    def __attrs_post_init__(self):
        cls = type(self)
        fields = input_fields(cls)
        values = {name: getattr(self, f.name) for name, f in fields.items()}
        converted, problems = convert_inputs(cls, values)
        problems += self._check(converted) if not problems else []
        if problems:
            raise SpecError([f"{name}: {message}" for name, message in problems],
                            title=f"{cls.__name__}: {len(problems)} bad input(s)")
        for name, field in fields.items():
            object.__setattr__(self, field.name, converted[name])

    def _check(self, values: dict) -> list[tuple[str, str]]:
        """Cross-input checks of a kind: (name, message) pairs. None by default."""
        return []

    # -- values ---------------------------------------------------------------------------
    def value_in(self, name: str) -> float | None:
        """Input ``name`` as a float in its declared unit (``dispatch`` → 10.0 for 10 us)."""
        field = input_fields(type(self))[name]
        si = getattr(self, field.name)
        if si is None:
            return None
        factor = Decimal(UNIT_FACTORS[_meta(field)["unit"]])
        return float(Decimal(repr(float(si))) / factor)

    def require(self, attribute: str, *names: str) -> None:
        """Raise a SpecError naming each input ``attribute`` needs that this scenario lacks."""
        missing = [n for n in names if getattr(self, input_fields(type(self))[n].name) is None]
        if missing:
            example = ", ".join(f"{n}=..." for n in missing)
            raise SpecError(f"{type(self).__name__}.{attribute} needs "
                            f"{' and '.join(missing)}, which this scenario does not set; "
                            f"set {'them' if len(missing) > 1 else 'it'}, e.g. "
                            f".variant({example})")

    def inputs(self) -> dict:
        """Every input by keyword name: Quantities for times and rates, ints for counts."""
        return {name: getattr(self, name) for name in input_fields(type(self))}

    def derived(self) -> dict:
        """Every derived attribute that can be computed (see :func:`evaluate` for the rest)."""
        from .report import evaluate

        return evaluate(self, self.derived_names)[0]

    def to_dict(self) -> dict:
        from .report import scenario_dict

        return scenario_dict(self, self.derived_names)

    def variant(self, **changes):
        """A copy with some inputs changed, for what-if questions:
        ``s.variant(dispatch="2 us")``. Unknown names raise a SpecError listing the known."""
        fields = input_fields(type(self))
        unknown = [k for k in changes if k not in fields]
        if unknown:
            lines = []
            for k in unknown:
                near = closest(k, fields)
                hint = f"; did you mean {', '.join(map(repr, near))}?" if near else ""
                lines.append(f"unknown input {k!r} for {type(self).__name__}{hint}")
            raise SpecError([*lines, known_inputs_text(type(self))])
        return attrs.evolve(self, **changes)

    def __repr__(self) -> str:
        parts = []
        for name, field in input_fields(type(self)).items():
            value = getattr(self, field.name)
            if "dimension" in _meta(field) and value is not None:
                parts.append(f"{name}='{self.value_in(name):g} {_meta(field)['unit']}'")
            else:
                parts.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(parts)})"
