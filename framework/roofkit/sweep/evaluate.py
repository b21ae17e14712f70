"""Evaluate rows ``[start, stop)`` of a grid into a :class:`SweepTable`.

The mode's pass (engine, decode, prefill) resolves its facts once; each (device, precision,
tp) group the range overlaps is then one array evaluation, written into preallocated
columns. A pass returns per column an array, a scalar (broadcast over the group), a string
(one category), ``(mask, if_true, if_false)`` for a two-valued text column or
``(codes, texts)`` for a text column with a few values.
"""

from __future__ import annotations

import numpy as np

from .columns import Categorical
from .table import SweepTable

#: input columns that are integers
INT_INPUTS = ("tp", "seq_len", "context", "batch_size")


def make_pass(grid, registry):
    if grid.mode == "engine":
        from .engine_pass import EnginePass

        return EnginePass(grid, registry)
    from .circuit_pass import CircuitPass

    return CircuitPass(grid, registry)


class _TextColumn:
    """Codes of a categorical column under construction."""

    __slots__ = ("codes", "index")

    def __init__(self, n: int):
        self.codes = np.zeros(n, dtype=np.int32)
        self.index: dict[str, int] = {}

    def code(self, text: str) -> int:
        hit = self.index.get(text)
        if hit is None:
            hit = self.index[text] = len(self.index)
        return hit

    def put(self, lo: int, hi: int, value) -> None:
        if isinstance(value, str):
            self.codes[lo:hi] = self.code(value)
        elif len(value) == 2:  # (local codes, their texts)
            local, texts = value
            remap = np.array([self.code(t) for t in texts] or [0], dtype=np.int32)
            self.codes[lo:hi] = remap[local]
        else:  # (mask, text where true, text where false)
            mask, yes, no = value
            self.codes[lo:hi] = np.where(mask, self.code(yes), self.code(no))

    def done(self) -> Categorical:
        return Categorical(self.codes, self.index)


def evaluate(grid, start: int, stop: int, registry=None, evaluator=None) -> SweepTable:
    """The table of rows ``[start, stop)`` of ``grid`` (all of it: ``0, len(grid)``)."""
    ev = evaluator if evaluator is not None else make_pass(grid, registry)
    n = max(stop - start, 0)
    inputs = ev.inputs
    columns: dict[str, object] = {}
    for name in inputs:
        columns[name] = (np.empty(n, dtype=np.int64) if name in INT_INPUTS
                         else _TextColumn(n) if name != "efficiency"
                         else np.empty(n, dtype=np.float64))
    out = None
    pos = 0
    axis = ev.axis
    for g, lo, hi in grid.parts(start, stop):
        d, p, t = grid.group(g)
        ctx, batch = grid.inner_values(lo, hi)
        tp = int(grid.tps[t])
        values = ev.run(d, p, tp, ctx, batch)
        end = pos + (hi - lo)
        labels = ev.labels(d, p)
        for name in inputs:
            col = columns[name]
            if name in labels:
                col.put(pos, end, labels[name])
            elif name == "batch_size":
                col[pos:end] = batch
            elif name == axis:
                col[pos:end] = ctx
            elif name == "tp":
                col[pos:end] = tp
            else:
                col[pos:end] = values[name]
        if out is None:
            out = {}
            for name, v in values.items():
                if name in columns:
                    continue
                if isinstance(v, str | tuple):
                    out[name] = _TextColumn(n)
                else:
                    dtype = np.bool_ if np.asarray(v).dtype == np.bool_ else np.float64
                    out[name] = np.empty(n, dtype=dtype)
        for name, col in out.items():
            v = values[name]
            if isinstance(col, _TextColumn):
                col.put(pos, end, v)
            else:
                col[pos:end] = v
        pos = end
    if out is None:  # an empty range: columns with no rows, names from the pass
        out = {name: (_TextColumn(0) if kind == "text" else
                      np.empty(0, dtype=np.bool_ if kind == "bool" else np.float64))
               for name, kind in ev.output_kinds().items()}
    table = {}
    for name, col in {**columns, **out}.items():
        table[name] = col.done() if isinstance(col, _TextColumn) else col
    return SweepTable(table, ev.meta())
