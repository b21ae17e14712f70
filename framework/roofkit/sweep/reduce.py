"""What a sweep keeps, applied where the rows are made: in each chunk's worker, then once
more on the union of what the chunks kept.

    kept = best_by(pareto(feasible(where(rows))))

Each step is decomposable over chunks, so reducing per chunk first changes nothing but the
size of what travels back:

* ``where`` and ``feasible`` are per row;
* a point on the global Pareto front is on its own chunk's front (nothing in the chunk
  dominates it), so the front of the union of chunk fronts is the global front;
* a group's best row is its chunk's best; each chunk also keeps the first row of every
  group, so the union orders groups by first appearance as the whole table would.

With both ``pareto`` and ``best_by``, chunks stop after the front (a chunk's best of its own
front may be dominated elsewhere); the union applies both.
"""

from __future__ import annotations

import numpy as np

from ..errors import SpecError


class Reduce:
    """The row filters of a sweep (picklable: strings and tuples only)."""

    __slots__ = ("best_by", "feasible_only", "pareto", "where")

    def __init__(self, where=(), feasible_only: bool = False, pareto=None, best_by=None):
        if isinstance(where, str):
            where = (where,)
        bad = [w for w in where if not isinstance(w, str)]
        if bad:
            raise SpecError(f"where takes condition strings such as 'latency_ms <= 50', "
                            f"got {bad[0]!r}")
        self.where = tuple(where)
        self.feasible_only = bool(feasible_only)
        if pareto is not None:
            if isinstance(pareto, str) or len(pareto) != 2 or \
                    not all(isinstance(c, str) for c in pareto):
                raise SpecError(f"pareto takes two column names, e.g. "
                                f"('throughput_per_s', 'latency_ms'), got {pareto!r}")
            pareto = tuple(pareto)
        self.pareto = pareto
        if best_by is not None:
            if isinstance(best_by, str) or len(best_by) not in (2, 3) or \
                    not all(isinstance(c, str) or c is None for c in best_by):
                raise SpecError(f"best_by takes (group, column) or (group, column, 'max' | "
                                f"'min'), e.g. ('device', 'itl_ms'), got {best_by!r}")
            best_by = tuple(best_by) + (None,) * (3 - len(best_by))
        self.best_by = best_by

    def __bool__(self) -> bool:
        return bool(self.where or self.feasible_only or self.pareto or self.best_by)

    def __getstate__(self):
        return (self.where, self.feasible_only, self.pareto, self.best_by)

    def __setstate__(self, state):
        self.where, self.feasible_only, self.pareto, self.best_by = state

    def __repr__(self) -> str:
        return (f"Reduce(where={list(self.where)!r}, feasible_only={self.feasible_only!r}, "
                f"pareto={self.pareto!r}, best_by={self.best_by!r})")

    def apply(self, table, *, partial: bool = False):
        """The rows of ``table`` this reduction keeps; ``partial=True`` for one chunk.

        The result's ``meta`` counts ``evaluated`` rows and the ``omitted_infeasible``
        ones (summed over chunks by :func:`combine`).
        """
        evaluated = int(table.meta.get("evaluated", len(table)))
        omitted = int(table.meta.get("omitted_infeasible", 0))
        for cond in self.where:
            table = table.where(cond)
        if self.feasible_only:
            fits = table.where("feasible")
            omitted += len(table) - len(fits)
            table = fits
        if self.pareto:
            table = table.pareto(*self.pareto)
        if self.best_by and not (partial and self.pareto):
            group, column, direction = self.best_by
            from . import query

            best = query.best_index(table, group, column, direction)
            if partial:  # keep each group's first row too: the union then orders groups
                best = np.union1d(best, _first_rows(table, group))
            table = table.take(np.sort(best) if partial else best)
        table.meta["evaluated"] = evaluated
        table.meta["omitted_infeasible"] = omitted
        return table


def _first_rows(table, group: str) -> np.ndarray:
    from .columns import Categorical
    from .query import resolve_column

    col = table.column(resolve_column(group, table.columns))
    codes = col.codes if isinstance(col, Categorical) else np.unique(
        np.asarray(col), return_inverse=True)[1]
    if len(codes) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.unique(codes, return_index=True)[1]


def combine(tables, reduce: Reduce | None):
    """Concatenate chunk tables in row order (consuming them), then apply ``reduce``."""
    from .table import SweepTable

    evaluated = sum(int(t.meta.get("evaluated", len(t))) for t in tables)
    omitted = sum(int(t.meta.get("omitted_infeasible", 0)) for t in tables)
    table = SweepTable.concat_consuming(tables)
    if reduce:
        table.meta["evaluated"] = evaluated
        table.meta["omitted_infeasible"] = omitted
        table = reduce.apply(table)
    return table
