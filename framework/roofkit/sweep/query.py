"""The questions users ask of a sweep: filter by constraints, the Pareto front, the best row
per group.

``where`` reads a tiny comparison language, parsed by a regular expression and never
evaluated as code::

    condition := term (("and" | "&") term)*
    term      := COLUMN OP VALUE | COLUMN | "not" COLUMN
    OP        := <= | < | >= | > | == | = | !=
    VALUE     := a number (50, 1e-3, -2.5, inf) | true | false | a word or 'quoted text'

Numeric columns compare with numbers (a NaN row satisfies no comparison, not even
``!=``), boolean columns stand alone
(``fits``, ``not fits``) or compare with true/false, text columns (device, precision…) take
``==`` and ``!=`` with a word. ``latency`` finds ``latency_ms`` (see
:func:`roofkit.sweep.catalog.resolve_column`).

Pareto front of two objectives (x better when larger for ``max``, y better when smaller for
``min``): a row is on the front when no other row is at least as good in both and strictly
better in one. After sorting by x best-first (ties: y best-first), a row is on the front iff
its y beats every y before it: ``y_i < min(y_0 .. y_{i-1})`` (as a minimization), an
O(n log n) pass; exact duplicates of a front row are on the front too.
"""

from __future__ import annotations

import math
import re

import numpy as np

from ..errors import SpecError
from .catalog import direction_of, resolve_column, split_direction
from .columns import Categorical

_TERM = re.compile(r"^\s*(?P<col>[A-Za-z_][A-Za-z0-9_]*)\s*(?P<op><=|>=|==|!=|<|>|=)\s*"
                   r"(?P<val>\S.*?)\s*$")
_BARE = re.compile(r"^\s*(?P<neg>not\s+|!\s*)?(?P<col>[A-Za-z_][A-Za-z0-9_]*)\s*$")
_AND = re.compile(r"\s+and\s+|\s*&&?\s*", re.IGNORECASE)
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$|^[+-]?inf(inity)?$",
                     re.IGNORECASE)
_COMPARE = {"<=": np.less_equal, "<": np.less, ">=": np.greater_equal, ">": np.greater,
            "==": np.equal, "=": np.equal, "!=": np.not_equal}

#: longest condition text accepted
MAX_LENGTH = 1000


def parse_terms(expr: str) -> list[tuple[str, str, str | None]]:
    """(column, op, value text) for each term of ``expr``; a bare column gives op ``bool``
    (``not`` column: op ``not``). Raises :class:`SpecError` on anything else."""
    if not isinstance(expr, str):
        raise SpecError(f"a condition must be text such as 'latency_ms <= 50', got {expr!r}")
    if len(expr) > MAX_LENGTH:
        raise SpecError(f"condition is {len(expr)} characters long; the limit is {MAX_LENGTH}")
    terms = []
    for part in _AND.split(expr.strip()):
        if not part.strip():
            raise SpecError(f"empty term in condition {expr!r}")
        m = _TERM.match(part)
        if m:
            terms.append((m["col"], m["op"], m["val"]))
            continue
        m = _BARE.match(part)
        if m:
            terms.append((m["col"], "not" if m["neg"] else "bool", None))
            continue
        raise SpecError(f"cannot read condition {part.strip()!r}: write COLUMN OP NUMBER "
                        f"(e.g. 'latency_ms <= 50'), a boolean column ('fits', 'not fits') or "
                        f"COLUMN == word (e.g. 'device == h100-sxm'); terms join with 'and'")
    return terms


def _number(column: str, text: str) -> float:
    if not _NUMBER.match(text):
        raise SpecError(f"{column} compares with a number, got {text!r}")
    return float(text)


def _word(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _bool(column: str, text: str) -> bool:
    low = text.strip().lower()
    if low in ("true", "yes", "1"):
        return True
    if low in ("false", "no", "0"):
        return False
    raise SpecError(f"{column} is true or false, got {text!r}")


def mask(table, expr: str) -> np.ndarray:
    """The boolean mask of rows of ``table`` satisfying ``expr``."""
    out = np.ones(len(table), dtype=bool)
    for col, op, val in parse_terms(expr):
        name = resolve_column(col, table.columns)
        column = table.column(name)
        if op in ("bool", "not"):
            if isinstance(column, Categorical) or column.dtype != np.bool_:
                raise SpecError(f"{name} is not a true/false column; compare it, e.g. "
                                f"'{name} <= 50'")
            out &= column if op == "bool" else ~column
            continue
        if isinstance(column, Categorical):
            if op not in ("==", "=", "!="):
                example = column.categories[0] if column.categories else "x"
                raise SpecError(f"{name} is text; compare it with == or != (e.g. "
                                f"'{name} == {example}')")
            code = column.code_of(_word(val))
            hit = column.codes == code
            out &= hit if op != "!=" else ~hit
            continue
        if column.dtype == np.bool_:
            if op not in ("==", "=", "!="):
                raise SpecError(f"{name} is true or false; use '{name}' or 'not {name}'")
            out &= _COMPARE[op](column, _bool(name, val))
            continue
        value = _number(name, val)
        with np.errstate(invalid="ignore"):
            hit = _COMPARE[op](column, value)
        if column.dtype.kind == "f":
            hit &= ~np.isnan(column)  # NaN satisfies no comparison, != included
        out &= hit
    return out


def _objective(table, spec, given) -> tuple[str, np.ndarray]:
    name, inline = split_direction(spec)
    name = resolve_column(name, table.columns)
    direction = direction_of(name, given if given is not None else inline)
    column = table.column(name)
    if isinstance(column, Categorical):
        raise SpecError(f"{name} is text; a Pareto front or best row needs a numeric column")
    values = column.astype(np.float64)
    # everything as a minimization: larger-is-better columns are negated
    return name, (-values if direction == "max" else values)


def pareto_index(table, x: str, y: str, directions=(None, None)) -> np.ndarray:
    """Row indices of the Pareto front of ``x`` and ``y``, best ``x`` first.

    Directions default to each column's declared one (``throughput_per_s``: max,
    ``latency_ms``: min); ``'col:max'`` or ``directions=("max", "min")`` set them.
    Rows with NaN in either column are not candidates.
    """
    if len(directions) != 2:
        raise SpecError(f"pareto takes one direction per column, got {directions!r}")
    _, a = _objective(table, x, directions[0])
    _, b = _objective(table, y, directions[1])
    ok = ~(np.isnan(a) | np.isnan(b))
    idx = np.flatnonzero(ok)
    if idx.size == 0:
        return idx
    a, b = a[idx], b[idx]
    order = np.lexsort((idx, b, a))  # primary a, then b, then row order (all minimized)
    a, b, idx = a[order], b[order], idx[order]
    prev_best = np.empty_like(b)
    prev_best[0] = math.inf
    np.minimum.accumulate(b[:-1], out=prev_best[1:])
    strict = b < prev_best
    # runs of identical (a, b): a run is on the front when its first row is
    start = np.ones(len(a), dtype=bool)
    start[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    run = np.cumsum(start) - 1
    front = strict[start][run]
    return idx[front]


def best_index(table, group: str, column: str, direction: str | None = None) -> np.ndarray:
    """For each value of ``group`` (in order of first appearance) the row with the best
    ``column`` (earliest row on ties); rows with NaN are not candidates."""
    gname = resolve_column(group, table.columns)
    _, key = _objective(table, column, direction)
    gcol = table.column(gname)
    codes = gcol.codes if isinstance(gcol, Categorical) else np.unique(
        np.asarray(gcol), return_inverse=True)[1]
    idx = np.flatnonzero(~np.isnan(key))
    if idx.size == 0:
        return idx
    order = np.lexsort((idx, key[idx], codes[idx]))
    g = codes[idx][order]
    first = np.ones(len(g), dtype=bool)
    first[1:] = g[1:] != g[:-1]
    best = idx[order][first]
    # groups in order of their first appearance in the table
    first_seen = np.full(int(codes.max()) + 1, len(codes), dtype=np.int64)
    np.minimum.at(first_seen, codes, np.arange(len(codes)))
    return best[np.argsort(first_seen[codes[best]], kind="stable")]
