"""Field wrappers that attach units and bounds to attrs fields through metadata.

``capacity: float = quantity("bytes", positive=True)`` declares a field whose TOML value is a
string with a unit (``"80 GB"``) and whose Python value is an SI float. The spec converter
reads this metadata once, in one hook factory (:mod:`roofkit.loader`).
"""

from __future__ import annotations

import attrs

from .. import units

_KEY = "roofkit"


def quantity(dimension: str, *, default=attrs.NOTHING, positive: bool = True,
             nonnegative: bool = False, doc: str = ""):
    """An SI-float field parsed from ``"<number> <unit>"`` of ``dimension``."""
    if dimension not in units.DIMENSIONS:
        raise ValueError(f"unknown dimension {dimension!r}")
    meta = {_KEY: {"dimension": dimension, "positive": positive and not nonnegative,
                   "nonnegative": nonnegative, "doc": doc}}
    return attrs.field(default=default, metadata=meta, kw_only=True)


def fraction(*, default=attrs.NOTHING, low: float = 0.0, high: float = 1.0,
             low_open: bool = True, doc: str = ""):
    """A plain number in (low, high] (or [low, high] with ``low_open=False``)."""
    meta = {_KEY: {"range": (low, high, low_open), "doc": doc}}
    return attrs.field(default=default, metadata=meta, kw_only=True)


def count(*, default=attrs.NOTHING, minimum: int = 1, doc: str = ""):
    """An integer at least ``minimum``."""
    meta = {_KEY: {"minimum": minimum, "doc": doc}}
    return attrs.field(default=default, metadata=meta, kw_only=True)


def meta_of(field: attrs.Attribute) -> dict | None:
    return field.metadata.get(_KEY)


def unit_of(cls, name: str) -> str | None:
    """The dimension declared for field ``name`` of ``cls`` (None if not a quantity)."""
    m = meta_of(attrs.fields_dict(cls)[name])
    return m.get("dimension") if m else None
