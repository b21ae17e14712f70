"""The grid of a sweep: its axes, their validation, and how a flat row index maps onto them.

Rows are the Cartesian product in this order (the last axis fastest)::

    device x precision x tp x context (or seq_len) x batch_size

so one (device, precision, tp) *group* is a contiguous block of ``len(contexts) *
len(batch_sizes)`` rows that one array pass evaluates. A chunk of rows ``[start, stop)`` is
the part of each group it overlaps; chunks of one grid concatenate back in row order.
"""

from __future__ import annotations

import numbers
from pathlib import Path

import numpy as np

from .. import bounds
from ..errors import SpecError

MODES = ("engine", "decode", "prefill")


def int_axis(name: str, values, default, minimum: int = 1) -> np.ndarray:
    """A 1-d int64 array of integers >= ``minimum`` (a list, range or integer numpy array).

    ``None`` or empty gives ``default``. Floats, strings and booleans are refused, not
    coerced, as ``Engine.solve`` refuses them.
    """
    if values is None:
        values = default
    if isinstance(values, numbers.Integral) and not isinstance(values, bool):
        values = [values]
    if isinstance(values, str | bytes) or not hasattr(values, "__iter__"):
        raise SpecError(f"{name} must be a list of integers >= {minimum}, got {values!r}")
    if isinstance(values, np.ndarray):
        arr = values
    else:
        items = list(values)
        bad = [v for v in items
               if isinstance(v, bool) or not isinstance(v, numbers.Integral)]
        if bad:
            v = bad[0]
            hint = f"; pass {int(v)}" if isinstance(v, float) and v.is_integer() else ""
            raise SpecError(f"{name} must hold integers >= {minimum}, got {v!r} "
                            f"({type(v).__name__}){hint}")
        for v in items:
            bounds.check_int(name, v)
        arr = np.asarray(items, dtype=np.int64)
    if arr.size == 0:
        arr = np.asarray(list(default), dtype=np.int64)
    if arr.ndim != 1:
        raise SpecError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    if not (np.issubdtype(arr.dtype, np.integer)) or arr.dtype == np.bool_:
        raise SpecError(f"{name} must hold integers >= {minimum}, got dtype {arr.dtype}")
    if (arr < minimum).any():
        raise SpecError(f"{name} must hold integers >= {minimum}, got "
                        f"{int(arr[arr < minimum][0])}")
    bounds.check_array(name, arr)  # in the array's own dtype: a uint64 never wraps to -1
    return arr.astype(np.int64, copy=False)


def name_axis(name: str, values, default) -> list:
    """A list of names (str), paths or spec objects; None or empty gives ``default``."""
    if values is None:
        return list(default)
    if isinstance(values, str | Path) or not hasattr(values, "__iter__"):
        values = [values]
    out = list(values)
    return out or list(default)


class Grid:
    """The axes of one sweep, already validated; picklable (names, paths and arrays)."""

    __slots__ = ("batch_sizes", "contexts", "devices", "mode", "precisions", "settings",
                 "tps", "workload")

    def __init__(self, mode, workload, devices, precisions, tps, contexts, batch_sizes,
                 settings):
        self.mode = mode
        self.workload = workload
        self.devices = tuple(devices)
        self.precisions = tuple(precisions)
        self.tps = np.asarray(tps, dtype=np.int64)
        self.contexts = np.asarray(contexts, dtype=np.int64)
        self.batch_sizes = np.asarray(batch_sizes, dtype=np.int64)
        self.settings = dict(settings)

    def __getstate__(self):
        return {k: getattr(self, k) for k in self.__slots__}

    def __setstate__(self, state):
        for k, v in state.items():
            object.__setattr__(self, k, v)

    @property
    def inner(self) -> int:
        """Rows per (device, precision, tp) group."""
        return len(self.contexts) * len(self.batch_sizes)

    @property
    def groups(self) -> int:
        return len(self.devices) * len(self.precisions) * len(self.tps)

    def __len__(self) -> int:
        return self.groups * self.inner

    def group(self, g: int) -> tuple[int, int, int]:
        """(device index, precision index, tp index) of group ``g``."""
        nt, np_ = len(self.tps), len(self.precisions)
        t = g % nt
        p = (g // nt) % np_
        d = g // (nt * np_)
        return d, p, t

    def parts(self, start: int, stop: int):
        """(group, inner start, inner stop, output offset) for rows ``[start, stop)``."""
        inner = self.inner
        if inner == 0:
            return
        g = start // inner
        while start < stop:
            g_end = (g + 1) * inner
            end = min(stop, g_end)
            yield g, start - g * inner, end - g * inner
            start = end
            g += 1

    def inner_values(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """(contexts, batch sizes) of inner rows ``[lo, hi)`` of a group, as int64 arrays."""
        nb = len(self.batch_sizes)
        if lo == 0 and hi == self.inner:
            c = np.repeat(self.contexts, nb)
            b = np.tile(self.batch_sizes, len(self.contexts))
            return c, b
        j = np.arange(lo, hi, dtype=np.int64)
        ci, bi = np.divmod(j, nb)
        return self.contexts[ci], self.batch_sizes[bi]

    def chunks(self, chunk_size: int) -> list[tuple[int, int]]:
        """Row ranges ``[start, stop)`` of at most ``chunk_size`` rows covering the grid."""
        n = len(self)
        return [(s, min(s + chunk_size, n)) for s in range(0, n, chunk_size)]
