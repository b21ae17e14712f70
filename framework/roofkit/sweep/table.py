"""``SweepTable``: the columnar result of a sweep.

One numpy array per column (text columns as :class:`~roofkit.sweep.columns.Categorical`),
every column's unit in its name (``latency_ms``, ``throughput_per_s``,
``memory_footprint_bytes``), ``feasible`` and ``reason`` on every row. Queries return new
tables; nothing is copied until a query selects rows.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterator, Mapping

import numpy as np

from ..errors import ArgumentError, SpecError
from ..results import Result, sig
from . import query
from .catalog import COLUMNS, resolve_column
from .columns import Categorical, as_array, concat, to_python


class SweepTable(Result):
    """Rows of a design-space sweep, stored by column.

    ``len(table)`` rows; ``table.columns`` names the columns in order; ``table["latency_ms"]``
    is a numpy array; iterating yields one ``dict`` per row. ``meta`` records how the table
    was made (mode, workload, settings).
    """

    __slots__ = ("_columns", "_n", "meta")

    def __init__(self, columns: Mapping[str, object], meta: Mapping | None = None):
        cols = dict(columns)
        lengths = {name: len(c) for name, c in cols.items()}
        if len(set(lengths.values())) > 1:
            raise ArgumentError(f"columns differ in length: {lengths}")
        self._columns = cols
        self._n = next(iter(lengths.values()), 0)
        self.meta = dict(meta or {})

    # -- shape and access ------------------------------------------------------------------
    def __len__(self) -> int:
        return self._n

    @property
    def columns(self) -> list[str]:
        return list(self._columns)

    def column(self, name: str):
        """The stored column (numpy array or Categorical); short names resolve."""
        col = self._columns.get(name)
        if col is None:
            col = self._columns[resolve_column(name, self._columns)]
        return col

    def __getitem__(self, name: str) -> np.ndarray:
        """A column as a numpy array (text columns as an object array of str)."""
        if not isinstance(name, str):
            raise TypeError("index a SweepTable by column name; use .row(i) or .take(...) "
                            "for rows")
        return as_array(self.column(name))

    def __contains__(self, name: str) -> bool:
        return name in self._columns

    def row(self, i: int) -> dict:
        """Row ``i`` as a dict of Python values."""
        n = self._n
        if not -n <= i < n:
            raise IndexError(f"row {i} out of range for a table of {n} rows")
        out = {}
        for name, col in self._columns.items():
            v = col[i]
            out[name] = v.item() if isinstance(v, np.generic) else v
        return out

    def __iter__(self) -> Iterator[dict]:
        names = list(self._columns)
        lists = [to_python(c) for c in self._columns.values()]
        for values in zip(*lists, strict=True):
            yield dict(zip(names, values, strict=True))

    def to_dict(self) -> dict[str, list]:
        """Column name -> list of Python values."""
        return {name: to_python(c) for name, c in self._columns.items()}

    def describe(self) -> dict[str, str]:
        """Column name -> what it holds (unit in the name)."""
        return {name: COLUMNS.get(name, ("", None))[0] for name in self._columns}

    # -- row selection -------------------------------------------------------------------
    def take(self, index) -> SweepTable:
        """The rows at ``index`` (integer array) or where ``index`` (boolean mask) is true."""
        index = np.asarray(index)
        if index.dtype == np.bool_ and len(index) != self._n:
            raise ArgumentError(f"mask has {len(index)} entries for {self._n} rows")
        return SweepTable({k: c[index] for k, c in self._columns.items()}, self.meta)

    def head(self, n: int = 10) -> SweepTable:
        return self.take(np.arange(min(n, self._n)))

    def sort_by(self, column: str, descending: bool = False) -> SweepTable:
        """Rows ordered by ``column`` (stable; NaN last)."""
        col = self.column(column)
        if isinstance(col, Categorical):
            keys = np.array([col.categories[c] for c in range(len(col.categories))],
                            dtype=object)
            rank = np.argsort(np.argsort(keys, kind="stable"), kind="stable") if len(keys) else keys
            values = rank[col.codes].astype(np.float64) if len(keys) else np.zeros(self._n)
        else:
            values = col.astype(np.float64)
        if descending:
            values = -values
        return self.take(np.argsort(values, kind="stable"))

    # -- queries -------------------------------------------------------------------------
    def where(self, *conditions: str) -> SweepTable:
        """Rows satisfying every condition: ``table.where("latency_ms <= 50", "fits")``."""
        keep = np.ones(self._n, dtype=bool)
        for cond in conditions:
            keep &= query.mask(self, cond)
        return self.take(keep)

    def pareto(self, x: str = "throughput_per_s", y: str = "latency_ms", *,
               directions: tuple = (None, None)) -> SweepTable:
        """The Pareto front of two columns, best ``x`` first.

        By default a column is better in its declared direction (``throughput_per_s``
        larger, ``latency_ms`` smaller; see :mod:`roofkit.sweep.catalog`); override with
        ``directions=("max", "min")`` or ``"column:max"``.
        """
        return self.take(query.pareto_index(self, x, y, directions))

    def best_by(self, group: str, column: str, direction: str | None = None) -> SweepTable:
        """One row per value of ``group``: the one with the best ``column`` (its declared
        direction unless ``direction`` is ``"max"`` or ``"min"``)."""
        return self.take(query.best_index(self, group, column, direction))

    # -- output --------------------------------------------------------------------------
    def to_csv(self, path=None, columns=None) -> str | None:
        """CSV text (header row first) or, with ``path``, write it there."""
        names = self._select(columns)
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(names)
        lists = [to_python(self._columns[n]) for n in names]
        writer.writerows(zip(*lists, strict=True))
        text = buf.getvalue()
        if path is None:
            return text
        with open(path, "w", newline="") as fh:
            fh.write(text)
        return None

    def to_json(self, path=None, columns=None, *, orient: str = "records",
                indent=None) -> str | None:
        """JSON text: a list of row objects (``orient="records"``) or an object of column
        lists (``orient="columns"``); non-finite numbers become null."""
        names = self._select(columns)
        data = {n: [_finite(v) for v in to_python(self._columns[n])] for n in names}
        if orient == "columns":
            obj = data
        elif orient == "records":
            obj = [dict(zip(names, vals, strict=True))
                   for vals in zip(*data.values(), strict=True)] if names else []
        else:
            raise SpecError(f"orient must be 'records' or 'columns', got {orient!r}")
        text = json.dumps(obj, indent=indent, allow_nan=False)
        if path is None:
            return text
        with open(path, "w") as fh:
            fh.write(text)
        return None

    def to_pandas(self):
        """A ``pandas.DataFrame`` (text columns as ``category``); needs the ``pandas`` extra."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("to_pandas() needs pandas: pip install 'roofkit[pandas]'") from None
        data = {}
        for name, col in self._columns.items():
            if isinstance(col, Categorical):
                data[name] = pd.Categorical.from_codes(col.codes, categories=list(col.categories))
            else:
                data[name] = col
        frame = pd.DataFrame(data)
        frame.attrs.update(self.meta)
        return frame

    def _select(self, columns) -> list[str]:
        if columns is None:
            return list(self._columns)
        return [resolve_column(c, self._columns) for c in columns]

    # -- combination ---------------------------------------------------------------------
    @classmethod
    def concat(cls, tables) -> SweepTable:
        """Rows of ``tables`` one after another (same columns, in order)."""
        tables = list(tables)
        if not tables:
            return cls({})
        names = tables[0].columns
        for t in tables[1:]:
            if t.columns != names:
                raise ArgumentError("tables to concatenate have different columns")
        return cls({n: concat([t._columns[n] for t in tables]) for n in names}, tables[0].meta)

    @classmethod
    def concat_consuming(cls, tables: list) -> SweepTable:
        """:meth:`concat` that empties ``tables`` column by column as it goes, so the peak
        is about one table plus one column rather than two tables."""
        if not tables:
            return cls({})
        names = tables[0].columns
        for t in tables[1:]:
            if t.columns != names:
                raise ArgumentError("tables to concatenate have different columns")
        meta = tables[0].meta
        out = {}
        for n in names:
            out[n] = concat([t._columns.pop(n) for t in tables])
        tables.clear()
        return cls(out, meta)

    def __getstate__(self):
        return (self._columns, self._n, self.meta)

    def __setstate__(self, state):
        self._columns, self._n, self.meta = state

    # -- the result convention -------------------------------------------------------------
    KIND = "sweep"
    PLOT = "sweep"

    @property
    def q(self) -> _ColumnQuantities:
        """Numeric columns as pint Quantity arrays, by their unit suffix:
        ``table.q.latency`` is ``latency_ms`` in ms, ``table.q.memory_footprint`` bytes."""
        return _ColumnQuantities(self)

    @property
    def basis(self) -> str:
        """The bases of the rows (one of each, in order)."""
        if "basis" not in self._columns or not self._n:
            return str(self.meta.get("basis", ""))
        return ", ".join(dict.fromkeys(str(b) for b in self["basis"].tolist()))

    @property
    def plugins(self) -> tuple[str, ...]:
        return tuple(self.meta.get("plugins", ()))

    def title(self) -> str:
        mode = self.meta.get("mode", "")
        work = self.meta.get("workload", "")
        return f"{self._n} rows x {len(self._columns)} columns" + \
            (f", {mode}" if mode else "") + (f" of {work}" if work else "")

    def frame_rows(self) -> list[dict]:
        return list(self)

    #: the columns a short view shows, when present
    _VIEW = ("device", "precision", "batch_size", "context", "tp", "latency_ms", "itl_ms",
             "ttft_ms", "throughput_per_s", "memory_footprint_bytes", "bottleneck",
             "feasible")

    def _view(self, n: int):
        cols = [c for c in self._VIEW if c in self._columns] or self.columns[:8]
        rows = [[sig(r[c]) if isinstance(r[c], float) else str(r[c]) for c in cols]
                for r in self.head(n)]
        return cols, rows

    def __repr__(self) -> str:
        from ..cli.common import table

        cols, rows = self._view(8)
        more = f"\n... {self._n - len(rows)} more rows" if self._n > len(rows) else ""
        body = table(rows, cols) if cols else ""
        return f"<SweepTable {self.title()}; basis {self.basis or '-'}\n{body}{more}>"

    def _repr_html_(self) -> str:
        import html

        e = html.escape
        cols, rows = self._view(10)
        head = "".join(f"<th>{e(c)}</th>" for c in cols)
        body = "".join("<tr>" + "".join(f"<td>{e(v)}</td>" for v in r) + "</tr>" for r in rows)
        more = (f"<tr><td colspan='{len(cols)}'>... {self._n - len(rows)} more rows</td></tr>"
                if self._n > len(rows) else "")
        return (f"<table><caption>SweepTable: {e(self.title())}; basis "
                f"{e(self.basis or '-')}</caption><tr>{head}</tr>{body}{more}</table>")


#: unit suffix of a column name -> its unit
_SUFFIX_UNITS = (("_per_s", "1/s"), ("_ms", "ms"), ("_s", "s"), ("_bytes", "B"),
                 ("_j", "J"), ("_w", "W"))


class _ColumnQuantities:
    __slots__ = ("_table",)

    def __init__(self, table):
        self._table = table

    def __getattr__(self, name: str):
        for col in self._table.columns:
            for suffix, unit in _SUFFIX_UNITS:
                if col == name + suffix:
                    from ..units import Q

                    return Q(self._table[col], unit)
        raise AttributeError(f"no column {name}_<unit> in the table; columns: "
                             f"{', '.join(self._table.columns)}")

    def __dir__(self):
        return [c[: -len(s)] for c in self._table.columns for s, _ in _SUFFIX_UNITS
                if c.endswith(s)]


def _finite(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v
