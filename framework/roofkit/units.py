"""roofkit's units: one pint registry at the boundary, SI floats inside.

Spec values such as ``"3.35 TB/s"`` are parsed once, when a spec loads, into SI floats
(s, B, FLOP, B/s, FLOP/s, W, J, 1/s, token). Public results wrap floats back into pint
Quantities lazily. Nothing in a solver's hot path touches pint.
"""

from __future__ import annotations

import functools
import math
import re
from decimal import Decimal
from pathlib import Path

from .errors import SpecError

_DEFINITIONS = Path(__file__).with_name("units.txt")

#: Dimensions a spec field may declare, with the SI unit its float is stored in and an
#: example spelling shown when a value is refused.
DIMENSIONS: dict[str, tuple[str, str]] = {
    "time": ("second", "10 us"),
    "bytes": ("byte", "80 GB"),
    "bandwidth": ("byte / second", "3.35 TB/s"),
    "compute": ("FLOP", "8.2 GFLOP"),
    "throughput": ("FLOP / second", "989.4 TFLOP/s"),
    "power": ("watt", "700 W"),
    "energy": ("joule", "1.5 J"),
    "rate": ("1 / second", "1450 1/s"),
    "tokens": ("token", "2048 token"),
}

#: a FLOP or OP word with its prefix, any case, optionally plural and/or "/s": FLOPS, FLOPs,
#: Flops, TFLOPs, GOPs, tops, TFLOPS/s... The legal spellings are FLOP, FLOP/s, OP, OP/s
#: (and lowercase flop, op); the rest read as plurals, not rates, and are refused.
_FLOPS = re.compile(r"(?<![A-Za-z])([kKmMgGtTpPeE]?)(flop|op)(s?)(/s\b|/S\b)?(?![A-Za-z])",
                    re.IGNORECASE)
_LEGAL_WORDS = {"FLOP", "flop", "OP", "op"}


@functools.cache
def ureg():
    """The project unit registry (built on first use; importing pint costs ~0.3 s)."""
    import pint

    reg = pint.UnitRegistry(None, autoconvert_offset_to_baseunit=False, cache_folder=None)
    reg.load_definitions(str(_DEFINITIONS))
    reg.formatter.default_format = "~P"
    return reg


def Q(value, unit: str):
    """A pint Quantity in the project registry: the public edge of every result."""
    return ureg().Quantity(value, unit)


def _spelling_hint(text: str, dimension: str = "throughput") -> str | None:
    """The right spelling of a FLOP/OP rate or count written as ``FLOPS``, ``TFLOPs``,
    ``GOPs``, ``Tflops``…, or None when the text has no such word. A count (``dimension``
    'compute') is written ``GFLOP``; anything else is taken for a rate, ``TFLOP/s``."""
    for m in _FLOPS.finditer(text):
        prefix, word, plural, per = m.groups()
        if word in _LEGAL_WORDS and not plural and per in (None, "/s") \
                and not (prefix and prefix in "mgtpe"):
            continue  # legal; lowercase m, g, t, p, e are milli, pico or no prefix: refused
        spelled = m.group(0)
        if word in _LEGAL_WORDS and not plural and per in (None, "/s"):
            meant = {"m": "milli", "p": "pico"}.get(prefix, "no prefix")
            why = f"{prefix!r} is {meant}, not {prefix.upper()!r}"
        else:
            why = "a plural or an unknown unit rather than " + (
                "a FLOP count" if dimension == "compute" and not per else "a rate")
        if prefix and prefix not in "kK":
            prefix = prefix.upper()  # no one means milli- or pico-FLOPs
        elif prefix:
            prefix = "k"
        unit = prefix + word.upper() + ("" if dimension == "compute" and not per else "/s")
        fixed = text[: m.start()] + unit + text[m.end():]
        return f"{text!r} writes {spelled!r}, {why}; write {fixed!r}"
    return None


@functools.cache
def _factor(unit_text: str, dimension: str) -> float:
    """SI factor of a unit expression for ``dimension`` (cached: specs repeat units)."""
    reg = ureg()
    si_unit, example = DIMENSIONS[dimension]
    q = reg.Quantity(1.0, unit_text)
    target = reg.Quantity(1.0, si_unit)
    if q.dimensionality != target.dimensionality:
        raise SpecError(
            f"{unit_text!r} is not a {dimension} (it has dimension "
            f"{dict(q.dimensionality) or 'none'}); write e.g. {example!r}"
        )
    return float(q.to(si_unit).magnitude)


#: One unit expression: unit words joined by ``/`` or ``*``, each with an optional integer
#: power (``B/s``, ``FLOP/s``, ``1/s``, ``GiB``, ``m^2``). Words side by side (``GB GB``),
#: symbols (``%``) and anything after the expression are stray tokens, refused.
_TERM = r"[A-Za-zµμ]+(?:(?:\^|\*\*)-?\d+)?"
_UNIT_TEXT = re.compile(rf"(?:1|{_TERM})(?:\s*[*/]\s*{_TERM})*")
_WORD = re.compile(r"[A-Za-zµμ]+")
#: prefixes below one: a milli- or micro-byte (or bit) is no amount of memory anyone means
_SUB_UNIT = {"milli", "micro", "nano", "pico", "femto", "atto", "zepto", "yocto", "quecto",
             "centi", "deci"}
#: units no spec field is measured in (a plain fraction is written as a number)
_REFUSED_UNITS = {"percent": "a percentage is no unit of a quantity field"}


def _unit_problem(text: str, number: str, unit_text: str, dimension: str) -> str | None:
    """Why ``unit_text`` is not one clean unit expression, with the spelling probably
    meant; None when it is."""
    example = DIMENSIONS[dimension][1]
    m = _UNIT_TEXT.match(unit_text)
    if m is None or m.end() != len(unit_text):
        head = unit_text[: m.end()].rstrip() if m else ""
        stray = unit_text[m.end():].strip() if m else unit_text
        meant = f"; did you mean {number + ' ' + head!r}?" if head else ""
        return (f"{text!r} has a stray {stray!r} after the unit{meant} (write one unit, "
                f"e.g. {example!r})")
    reg = ureg()
    for word in _WORD.findall(unit_text):
        try:
            parts = reg.parse_unit_name(word)
        except Exception:
            continue  # an unknown unit: pint's error, below, names it
        for prefix, unit, _suffix in parts:
            if unit in _REFUSED_UNITS:
                return f"{text!r}: {_REFUSED_UNITS[unit]}; write e.g. {example!r}"
            if unit in ("byte", "bit") and prefix in _SUB_UNIT:
                letter = word[: len(word) - len(reg.get_symbol(unit))]
                fixed = letter.upper() if letter in ("m", "c", "d") else None
                meant = ""
                if fixed:
                    meant = f"; did you mean {text.replace(word, fixed + word[len(letter):], 1)!r}?"
                return (f"{text!r} reads {word!r} as {prefix}-{unit}s, a fraction of a {unit}"
                        f"{meant}")
    return None


_BITS = {"bit", "b"}


def bits_note(text, dimension: str) -> str | None:
    """``"400 Gb/s"`` → ``"'400 Gb/s' is read as 50 GB/s (8 bits to a byte)"``: a size or
    bandwidth written in bits, shown converted; None for anything else."""
    if not isinstance(text, str):
        return None
    m = _NUMBER.match(text)
    if not m or not m.group(2):
        return None
    reg = ureg()
    in_bits = False
    for word in _WORD.findall(m.group(2)):
        try:
            in_bits |= any(unit == "bit" for _, unit, _ in reg.parse_unit_name(word))
        except Exception:
            return None
    if not in_bits:
        return None
    try:
        value = parse(text, dimension)
    except SpecError:
        return None
    return f"{text!r} is read as {fmt(value, dimension)} (8 bits to a byte)"


def bit_notes(data, path: str = "") -> list[tuple[str, str]]:
    """(key path, note) for every size or bandwidth a raw TOML table writes in bits."""
    out = []
    items = data.items() if isinstance(data, dict) else enumerate(data)
    for key, value in items:
        sub = (f"{path}.{key}" if path else str(key)) if isinstance(data, dict) \
            else f"{path}[{key}]"
        if isinstance(value, dict | list):
            out += bit_notes(value, sub)
            continue
        note = bits_note(value, "bandwidth") or bits_note(value, "bytes")
        if note:
            out.append((sub, note))
    return out


def prefix_fix(text, dimension: str, accept) -> str | None:
    """The spelling of ``text`` with one unit prefix in the other case (``Ms`` → ``ms``,
    ``mB`` → ``MB``) whose value ``accept`` takes, or None: what a value outside its
    field's range probably meant."""
    if not isinstance(text, str):
        return None
    m = _NUMBER.match(text)
    if not m or not m.group(2):
        return None
    number, unit_text = m.group(1), m.group(2)
    for w in _WORD.finditer(unit_text):
        head = w.group(0)[0]
        if head.swapcase() == head or len(w.group(0)) < 2:
            continue
        candidate = (unit_text[: w.start()] + head.swapcase() + unit_text[w.start() + 1:])
        try:
            value = parse(f"{number} {candidate}", dimension)
        except SpecError:
            continue
        if accept(value):
            return f"{number} {candidate}"
    return None


_NUMBER = re.compile(r"^\s*([-+]?(?:\d[\d_]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(.*?)\s*$")


def parse(text, dimension: str) -> float:
    """``"3.35 TB/s"`` → 3.35e12 (SI float) for ``dimension``; a clear SpecError otherwise."""
    example = DIMENSIONS[dimension][1]
    if isinstance(text, bool) or not isinstance(text, str):
        raise SpecError(
            f"expected a {dimension} with its unit as a string, got {text!r}; "
            f"write e.g. {example!r}"
        )
    hint = _spelling_hint(text, dimension)
    if hint:
        raise SpecError(hint)
    m = _NUMBER.match(text)
    if not m:
        raise SpecError(f"{text!r} does not start with a number; write e.g. {example!r}")
    number, unit_text = m.group(1), m.group(2)
    if not unit_text:
        raise SpecError(f"{text!r} has no unit; write e.g. {example!r}")
    problem = _unit_problem(text, number, unit_text, dimension)
    if problem:
        raise SpecError(problem)
    try:
        out = to_si(number, unit_text, dimension)
    except SpecError:
        raise
    except Exception as exc:  # pint's UndefinedUnitError, DefinitionSyntaxError...
        raise SpecError(f"unknown unit {unit_text!r} in {text!r}; write e.g. {example!r}") from exc
    if not math.isfinite(out):
        raise SpecError(f"{text!r} is not a finite {dimension}")
    return out


def to_si(number: str, unit_text: str, dimension: str) -> float:
    """``number`` (decimal text) in ``unit_text`` as an SI float of ``dimension``, rounded once:
    ``66.9 TFLOP/s`` is 6.69e13 and ``0.8955 ms`` is 0.0008955, not 0.0008954999999999999."""
    factor = _factor(unit_text, dimension)
    exact = Decimal(number.replace("_", ""))
    inverse = 1.0 / factor
    if factor >= 1.0:
        return float(exact * Decimal(factor))
    if abs(inverse - round(inverse)) <= 1e-9 * inverse:
        return float(exact / Decimal(round(inverse)))
    return float(exact) * factor


def fmt(value: float, dimension: str, digits: int = 4) -> str:
    """A short human string for an SI float, with a decimal prefix: 3.35e12 B/s → '3.35 TB/s'."""
    unit = {
        "time": "s", "bytes": "B", "bandwidth": "B/s", "compute": "FLOP",
        "throughput": "FLOP/s", "power": "W", "energy": "J", "rate": "1/s", "tokens": "token",
    }[dimension]
    if value == 0 or not math.isfinite(value):
        return f"{value:g} {unit}"
    if dimension == "time":
        for scale, name in ((1, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")):
            if abs(value) >= scale:
                return f"{value / scale:.{digits}g} {name}"
        return f"{value / 1e-9:.{digits}g} ns"
    if dimension == "rate":
        return f"{value:.{digits}g} {unit}"
    for scale, p in ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.{digits}g} {p}{unit}"
    if abs(value) < 1 and dimension == "power":
        return f"{value * 1e3:.{digits}g} mW"
    return f"{value:.{digits}g} {unit}"
