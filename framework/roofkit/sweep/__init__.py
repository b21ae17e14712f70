"""Design-space sweeps in array passes: ``roofkit.sweep(workload, devices, ...)``.

    rows = device x precision x tp x context x batch_size

The result is a columnar :class:`SweepTable` with ``where``, ``pareto`` and ``best_by``
queries; ``executor=`` spreads the grid over any ``concurrent.futures.Executor``.

``roofkit.sweep`` is both this package and the function: the package module is callable
(``roofkit.sweep(...)`` works whichever of the two an import left on ``roofkit``). The
package imports numpy and its modules on first use, so the CLI can register its flags
cheaply.
"""

from __future__ import annotations

import importlib
import sys
import types

_LAZY = {"sweep": ".api", "SweepTable": ".table", "RegistrySettings": ".distribute"}

__all__ = ["RegistrySettings", "SweepTable", "sweep"]


def __getattr__(name: str):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'roofkit.sweep' has no attribute {name!r}")
    value = getattr(importlib.import_module(mod, __name__), name)
    globals()[name] = value
    return value


class _CallableModule(types.ModuleType):
    """Importing ``roofkit.sweep.table`` binds the package on ``roofkit``; calling it calls
    :func:`roofkit.sweep.api.sweep`, so ``roofkit.sweep(...)`` never depends on import
    order."""

    def __call__(self, *args, **kwargs):
        from .api import sweep

        return sweep(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
