"""Field wrappers that attach units, ranges and key sets to attrs fields through metadata.

``capacity: float = quantity("bytes", high=1e15)`` declares a field whose TOML value is a
string with a unit (``"80 GB"``), whose Python value is an SI float, and which accepts
only values in its :class:`Range` ((0, 1 PB] here). Every numeric field of a spec is
declared through one of these wrappers (:func:`quantity`, :func:`quantities`,
:func:`number`, :func:`numbers`, :func:`fraction`, :func:`count`), so none exists without
a range; a test walks every spec class to keep it so. The spec converter reads this
metadata once, in one hook factory (:mod:`roofkit.loader`), and refuses NaN, infinity and
every value outside the range with the key and the range.

A mapping field (a TOML table of free keys) says which keys it knows: ``keys`` is the set
a consumer reads. A key outside it is refused when ``closed``; an open table (``launch``:
any named measurement, of which ``kernel`` is read) refuses only a near miss of a known
key (``kernl``), which would otherwise be silently ignored.
"""

from __future__ import annotations

import difflib
import math

import attrs

from .. import units

_KEY = "roofkit"


@attrs.frozen
class Range:
    """The values a numeric field accepts: ``low`` to ``high``, each end open or closed,
    integers only when ``integer``. NaN and infinity are never in a range."""

    low: float
    high: float
    low_open: bool = False
    integer: bool = False

    def __attrs_post_init__(self):
        if not (math.isfinite(self.low) and math.isfinite(self.high) and self.low < self.high):
            raise ValueError(f"a range needs finite low < high, got {self.low}, {self.high}")

    def contains(self, value) -> bool:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if isinstance(value, float) and not math.isfinite(value):
            return False
        if self.integer and not isinstance(value, int):
            return False
        if value > self.high or value < self.low:
            return False
        return not (self.low_open and value == self.low)

    def problem(self, value, shown: str, dimension: str | None = None) -> str | None:
        """Why ``value`` (written ``shown``) is outside the range, naming the range; None
        when it is inside."""
        if self.contains(value):
            return None
        allowed = f"allowed: {self.text(dimension)}"
        finite = not (isinstance(value, float) and not math.isfinite(value))
        if self.integer and (not isinstance(value, int) or isinstance(value, bool)):
            return f"must be an integer, got {shown} ({allowed})"
        if finite and value > self.high:
            return f"must be in {self.text(dimension)}, got {shown}"
        if self.low == 0 and self.low_open:
            what = "positive" + ("" if finite else " and finite")
            return f"must be {what}, got {shown} ({allowed})"
        if not finite:
            return f"must be finite, got {shown} ({allowed})"
        if self.low == 0:
            return f"must not be negative, got {shown} ({allowed})"
        if self.integer:
            return f"must be an integer >= {int(self.low)}, got {shown} ({allowed})"
        return f"must be at least {self.low:g}, got {shown} ({allowed})"

    def text(self, dimension: str | None = None) -> str:
        """``(0, 1 PB]``, ``[1, 100000]``: the range as a reader writes it."""
        def show(v):
            if dimension:
                return units.fmt(v, dimension)
            if self.integer:
                return f"{int(v)}"
            return f"{v:g}"
        lo = "(" if self.low_open else "["
        return f"{lo}{show(self.low)}, {show(self.high)}]"


def positive(high: float, *, integer: bool = False) -> Range:
    """(0, high]."""
    return Range(0.0, high, low_open=True, integer=integer)


def nonnegative(high: float, *, integer: bool = False) -> Range:
    """[0, high]."""
    return Range(0.0, high, integer=integer)


#: The largest value a quantity of each dimension may take unless its field says less: a
#: bound on what one device, model or measurement can plausibly be, with room to spare (10x
#: or more past the largest published figure), so a unit prefix typo (``"10 Ms"`` for
#: ``"10 ms"``, ``"80 PB"`` for ``"80 GB"``) is refused rather than read.
PLAUSIBLE: dict[str, float] = {
    # ~12 days: past the longest step, compile or measurement a spec records
    "time": 1e6,
    # 1 PB: 1000x the largest single-accelerator memory (AMD MI355X, 288 GB HBM3E)
    "bytes": 1e15,
    # 1 EB/s: ~50x Cerebras WSE-3's on-chip SRAM bandwidth (21 PB/s, cerebras.ai product page)
    "bandwidth": 1e18,
    # 1e21 FLOP per sample: ~1e6x a 175B-parameter forward pass over 2048 tokens
    # (derived: 2 * 1.75e11 * 2048 = 7.2e14)
    "compute": 1e21,
    # 1 EFLOP/s: ~8x Cerebras WSE-3's 125 PFLOP/s sparse peak, the largest single-chip figure
    "throughput": 1e18,
    # 1 MW: ~40x a Cerebras CS-3 system (23 kW)
    "power": 1e6,
    # 1 GJ
    "energy": 1e9,
    # 1e12 events per second
    "rate": 1e12,
    # 1e10 tokens: ~1000x the longest published context window (10M tokens)
    "tokens": 1e10,
}


def _meta(**values) -> dict:
    return {_KEY: values}


def quantity(dimension: str, *, default=attrs.NOTHING, nonnegative: bool = False,
             high: float | None = None, positive: bool = True, doc: str = ""):
    """An SI-float field parsed from ``"<number> <unit>"`` of ``dimension``, in
    (0, high] (or [0, high] with ``nonnegative``); ``high`` defaults to the dimension's
    :data:`PLAUSIBLE` bound."""
    if dimension not in units.DIMENSIONS:
        raise ValueError(f"unknown dimension {dimension!r}")
    top = PLAUSIBLE[dimension] if high is None else high
    rng = Range(0.0, top, low_open=positive and not nonnegative)
    return attrs.field(default=default, kw_only=True,
                       metadata=_meta(dimension=dimension, range=rng, doc=doc))


def quantities(dimension: str, *, high: float | None = None, keys: tuple[str, ...] = (),
               closed: bool = False, factory=dict, required: bool = False, doc: str = ""):
    """A table of ``key = "<number> <unit>"`` entries of ``dimension``, each an SI float in
    (0, high]; ``keys`` the keys a consumer reads (see the module docstring)."""
    if dimension not in units.DIMENSIONS:
        raise ValueError(f"unknown dimension {dimension!r}")
    top = PLAUSIBLE[dimension] if high is None else high
    meta = _meta(dimension=dimension, range=Range(0.0, top, low_open=True), mapping=True,
                 keys=tuple(keys), closed=closed, doc=doc)
    if required:
        return attrs.field(metadata=meta)
    return attrs.field(factory=factory, kw_only=True, metadata=meta)


def number(range: Range, *, default=attrs.NOTHING, doc: str = ""):
    """A plain number (no unit) in ``range``."""
    return attrs.field(default=default, kw_only=True, metadata=_meta(range=range, doc=doc))


def numbers(range: Range, *, keys: tuple[str, ...] = (), closed: bool = False,
            limits: dict[str, Range] | None = None, doc: str = ""):
    """A table of plain numbers, each in ``range`` (or in ``limits[key]`` for the keys it
    names: ``layers`` of a workload's dims)."""
    return attrs.field(factory=dict, kw_only=True,
                       metadata=_meta(range=range, mapping=True, keys=tuple(keys),
                                      closed=closed, limits=dict(limits or {}), doc=doc))


def fraction(*, default=attrs.NOTHING, low: float = 0.0, high: float = 1.0,
             low_open: bool = True, doc: str = ""):
    """A plain number in (low, high] (or [low, high] with ``low_open=False``)."""
    return number(Range(low, high, low_open=low_open), default=default, doc=doc)


#: the largest count a field accepts unless it says otherwise
MAX_COUNT = 1_000_000


def count(*, maximum: int = MAX_COUNT, default=attrs.NOTHING, minimum: int = 1,
          doc: str = ""):
    """An integer from ``minimum`` to ``maximum`` (``None`` allowed when that is the
    default)."""
    return attrs.field(default=default, kw_only=True,
                       metadata=_meta(range=Range(minimum, maximum, integer=True), doc=doc))


def counts(*, maximum: int = MAX_COUNT, minimum: int = 1, doc: str = ""):
    """A list of integers, each from ``minimum`` to ``maximum``."""
    return attrs.field(factory=list, kw_only=True,
                       metadata=_meta(range=Range(minimum, maximum, integer=True),
                                      sequence=True, doc=doc))


def keyed(*, keys: tuple[str, ...] = (), closed: bool = False, factory=dict, doc: str = ""):
    """A table of named sub-specs (``[launch.kernel]``, ``[compute.bf16]``) whose keys are
    checked like a mapping field's."""
    return attrs.field(factory=factory, metadata=_meta(keys=tuple(keys), closed=closed,
                                                       doc=doc))


def meta_of(field: attrs.Attribute) -> dict | None:
    return field.metadata.get(_KEY)


def range_of(field: attrs.Attribute, key: str | None = None) -> Range | None:
    """The declared range of a numeric field (of its entry ``key``, for a mapping field);
    None for anything else."""
    m = meta_of(field)
    if not m:
        return None
    return (m.get("limits") or {}).get(key, m.get("range"))


def unit_of(cls, name: str) -> str | None:
    """The dimension declared for field ``name`` of ``cls`` (None if not a quantity)."""
    m = meta_of(attrs.fields_dict(cls)[name])
    return m.get("dimension") if m else None


def key_problems(meta: dict, keys) -> list[tuple[str, str]]:
    """(key, message) for each key of a mapping field (its metadata ``meta``) that its
    declaration does not know: any unknown key of a closed table, a near miss of a known
    key in an open one."""
    from ..errors import closest

    m = meta
    known = m.get("keys") or ()
    if not known:
        return []
    out = []
    for key in keys:
        if key in known:
            continue
        if m.get("closed"):
            near = closest(str(key), known)
            hint = f"did you mean {', '.join(map(repr, near))}? " if near else ""
            out.append((str(key), f"unknown key {key!r}; {hint}known: {', '.join(known)}"))
        elif near := difflib.get_close_matches(str(key).lower(), known, n=1, cutoff=0.8):
            out.append((str(key), f"unknown key {key!r}; did you mean {near[0]!r}? (a table "
                        f"read for {', '.join(map(repr, known))}; another name is kept but "
                        "never read)"))
    return out
