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

from ..errors import SpecError
from . import query
from .catalog import COLUMNS, resolve_column
from .columns import Categorical, as_array, concat, to_python


class SweepTable:
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
            raise ValueError(f"columns differ in length: {lengths}")
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
            raise ValueError(f"mask has {len(index)} entries for {self._n} rows")
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
                raise ValueError("tables to concatenate have different columns")
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
                raise ValueError("tables to concatenate have different columns")
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

    def __repr__(self) -> str:
        mode = self.meta.get("mode", "")
        return (f"<SweepTable {self._n} rows x {len(self._columns)} columns"
                f"{' (' + mode + ')' if mode else ''}: {', '.join(self._columns)}>")


def _finite(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v
