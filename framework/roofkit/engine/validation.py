"""Argument checks of ``Engine.solve`` and ``Engine.sweep``, with messages that teach.

The solver calls these only when a fast type-and-range test fails, so a valid call pays a
few comparisons. Integers must be ``int`` (2.5 and "32" are refused, not coerced); flags
must be booleans.
"""

from __future__ import annotations

import math
import numbers

from .. import bounds
from ..errors import ArgumentError as SpecError
from ..errors import cut, shown
from . import calibration as cal


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def positive_int(name: str, value, minimum: int = 1) -> int:
    """An ``int`` >= ``minimum`` and within the bound of ``name`` (:mod:`roofkit.bounds`)."""
    if not _is_int(value):
        extra = ""
        if isinstance(value, str) and value.strip().lstrip("+").isdigit():
            extra = f"; pass {cut(value.strip(), 60)} as a number, not a string"
        elif isinstance(value, float) and value.is_integer():
            extra = f"; pass {int(value)}"
        raise SpecError(f"{name} must be an integer >= {minimum}, got {shown(value)} "
                        f"({type(value).__name__}){extra}")
    if value < minimum:
        raise SpecError(f"{name} must be an integer >= {minimum}, got {shown(value)}")
    return bounds.check_int(name, int(value))


def efficiency(value) -> float:
    lo, hi = cal.EFFICIENCY_MIN, cal.EFFICIENCY_MAX
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise SpecError(f"efficiency must be a number in [{lo:g}, {hi:g}], got {shown(value)} "
                        f"({type(value).__name__})")
    v = float(value)
    if not (math.isfinite(v) and lo <= v <= hi):
        raise SpecError(f"efficiency must be in [{lo:g}, {hi:g}] (a fraction of the peak "
                        f"FLOP/s), got {shown(value)}")
    return v


def zero_stage(value) -> int:
    if not _is_int(value) or value not in cal.ZERO_STAGES:
        raise SpecError(f"zero_stage must be one of {', '.join(map(str, cal.ZERO_STAGES))}, "
                        f"got {shown(value)}")
    return int(value)


def flag(name: str, value) -> bool:
    if value is True or value is False:
        return value
    if _is_int(value) and value in (0, 1):
        return bool(value)
    try:  # numpy.bool_
        import numpy as np

        if isinstance(value, np.bool_):
            return bool(value)
    except ImportError:  # pragma: no cover
        pass
    raise SpecError(f"{name} must be True or False, got {shown(value)} "
                    f"({type(value).__name__})")


def int_list(name: str, values, default: list[int]) -> list[int]:
    """A list of positive ints; None or empty gives ``default``."""
    if values is None:
        return list(default)
    if isinstance(values, str | bytes) or not hasattr(values, "__iter__"):
        raise SpecError(f"{name} must be a list of integers, got {shown(values)}")
    out = [positive_int(f"{name}[{i}]", v) for i, v in enumerate(values)]
    return out or list(default)


def name_list(name: str, values, default: list[str]) -> list:
    if values is None:
        return list(default)
    if isinstance(values, str | bytes):
        raise SpecError(f"{name} must be a list, got the string {shown(values)}; write "
                        f"[{shown(values)}]")
    out = list(values)
    return out or list(default)
