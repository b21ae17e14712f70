"""Running a sweep on any ``concurrent.futures.Executor``: a process pool, a Dask client's
``client.get_executor()``, a Ray pool.

The grid is split into row ranges of ``chunk_size``; a work item carries only picklable
things (the :class:`~roofkit.sweep.grid.Grid`: names, paths and integer arrays; the range;
:class:`RegistrySettings`), each worker builds its own registry once per process (a
``Registry`` is deliberately not picklable) and returns a :class:`SweepTable`; the parent
concatenates the tables in row order, so the result equals the single-process one.

A thread-based executor (``ThreadPoolExecutor``) runs in this process: its workers share the
caller's ``Registry`` object and one evaluator, so any registry works with it (numpy
releases the GIL in the array passes).
"""

from __future__ import annotations

import functools
import math
from concurrent.futures import Executor, ThreadPoolExecutor
from pathlib import Path

from ..errors import RoofkitError, cut


class RegistrySettings:
    """How to build a registry in another process: ``build_registry(**settings)``.

    ``plugins`` are importable module names; ``spec_paths`` folders or files that every
    worker can read. ``None`` fields mean the process default registry.
    """

    __slots__ = ("blocked", "entry_points", "plugins", "spec_paths")

    def __init__(self, plugins=(), entry_points: bool = True, spec_paths=(), blocked=()):
        bad = [p for p in plugins if not isinstance(p, str)]
        if bad:
            raise RoofkitError(f"RegistrySettings.plugins must be importable module names "
                               f"(objects do not travel to workers), got {bad[0]!r}")
        self.plugins = tuple(plugins)
        self.entry_points = bool(entry_points)
        self.spec_paths = tuple(str(Path(p)) for p in spec_paths)
        self.blocked = tuple(blocked)

    def _key(self):
        return (self.plugins, self.entry_points, self.spec_paths, self.blocked)

    def __eq__(self, other):
        return isinstance(other, RegistrySettings) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __getstate__(self):
        return self._key()

    def __setstate__(self, state):
        self.plugins, self.entry_points, self.spec_paths, self.blocked = state

    def __repr__(self) -> str:
        return (f"RegistrySettings(plugins={list(self.plugins)!r}, entry_points="
                f"{self.entry_points!r}, spec_paths={list(self.spec_paths)!r}, "
                f"blocked={list(self.blocked)!r})")

    def build(self):
        return _built(self)


@functools.lru_cache(maxsize=8)
def _built(settings: RegistrySettings):
    from ..registry import build_registry

    return build_registry(plugins=list(settings.plugins), entry_points=settings.entry_points,
                          spec_paths=list(settings.spec_paths), blocked=settings.blocked)


def local_registry(registry):
    """A Registry (or None for the default) from what the caller passed as ``registry``."""
    if isinstance(registry, RegistrySettings):
        return registry.build()
    return registry


def shares_memory(executor) -> bool:
    """Whether ``executor`` runs its tasks in this process (threads), so they can share a
    ``Registry`` object; process pools, Dask and Ray executors cannot."""
    return isinstance(executor, ThreadPoolExecutor)


def portable_registry(registry):
    """What travels to workers for ``registry``: None (the default registry) or settings."""
    if registry is None or isinstance(registry, RegistrySettings):
        return registry
    from ..registry import default_registry

    if default_registry.cache_info().currsize and registry is default_registry():
        return None
    raise RoofkitError(
        "a Registry object cannot travel to executor workers in other processes (each builds "
        "its own); pass registry=roofkit.sweep.RegistrySettings(spec_paths=[...], "
        "plugins=['module']) describing how to build it, omit registry= for the default "
        "catalogue, or use a thread-based executor (ThreadPoolExecutor), whose workers share "
        "the Registry")


def run_chunk(item):
    """Worker entry point: evaluate one row range of a grid and keep what ``reduce`` keeps
    (module level, so picklable). Returns ``(start, stop, rows evaluated, table)``, so the
    parent sees a chunk an executor dropped or swapped."""
    from .evaluate import evaluate

    grid, start, stop, settings, reduce = item
    registry = settings.build() if settings is not None else None
    table = evaluate(grid, start, stop, registry)
    return start, stop, len(table), reduce.apply(table, partial=True) if reduce else table


def _evaluate_reduced(grid, start, stop, reg, ev, reduce):
    from .evaluate import evaluate

    table = evaluate(grid, start, stop, reg, ev)
    return reduce.apply(table, partial=True) if reduce else table


def _chunk_in_thread(grid, start, stop, reg, ev, reduce):
    """:func:`run_chunk` for a thread of this process (the shared registry and evaluator)."""
    from .evaluate import evaluate

    table = evaluate(grid, start, stop, reg, ev)
    return start, stop, len(table), reduce.apply(table, partial=True) if reduce else table


def _collect(futures, ranges, n: int, reduce=None) -> list:
    """The table of every chunk, in row order; a chunk that failed, or that the executor
    dropped or replaced (a result that is not its rows), is an error naming the chunk."""
    from ..progress import Bar

    tables = []
    with Bar(len(futures), "sweep chunks") as bar:
        for (start, stop), future in zip(ranges, futures, strict=True):
            tables.append(_chunk_result(future, start, stop, n, reduce))
            bar.update()
    return tables


def _chunk_result(future, start: int, stop: int, n: int, reduce):
    """One chunk's table, checked to be the rows it was asked for."""
    from .table import SweepTable

    where = f"sweep chunk rows [{start}, {stop}) of {n}"
    try:
        result = future.result()
    except RoofkitError:
        raise
    except Exception as exc:
        hint = ""
        if type(exc).__name__ == "BrokenProcessPool":
            hint = ("; a worker process died (killed, or out of memory): rerun with a "
                    "smaller chunk_size or fewer workers")
        raise RoofkitError(f"{where} failed on the executor: {type(exc).__name__}: "
                           f"{cut(exc, 300)}{hint}") from exc
    ok = (isinstance(result, tuple) and len(result) == 4
          and result[:3] == (start, stop, stop - start)
          and isinstance(result[3], SweepTable)
          and (reduce or len(result[3]) == stop - start))  # unreduced: every row
    if not ok:
        got = (f"{len(result[3])} rows of rows [{result[0]}, {result[1]})"
               if isinstance(result, tuple) and len(result) == 4
               and isinstance(result[3], SweepTable) else cut(repr(result), 80))
        raise RoofkitError(f"the executor returned {got} for {where}, not its "
                           f"{stop - start} evaluated rows: a chunk was dropped or "
                           "replaced, and a sweep never returns part of its grid")
    return result[3]


def default_chunk_size(n: int, executor) -> int:
    """About four chunks per worker (when the executor says how many), else 16 chunks."""
    workers = getattr(executor, "_max_workers", None)
    parts = 4 * workers if isinstance(workers, int) and workers > 0 else 16
    return max(1, math.ceil(n / parts))


def run(grid, executor: Executor, chunk_size: int | None, registry, reduce=None):
    """Evaluate ``grid`` on ``executor`` in chunks, each reduced by ``reduce`` in its worker;
    the kept rows concatenated in row order and reduced once more."""
    from .reduce import combine

    if not isinstance(executor, Executor) and not hasattr(executor, "submit"):
        raise RoofkitError(f"executor must be a concurrent.futures.Executor (or have "
                           f"submit()), got {type(executor).__name__}")
    size = chunk_size or default_chunk_size(len(grid), executor)
    if shares_memory(executor):
        # threads share this process: the registry (object or built from settings) and one
        # evaluator, whose resolved facts and plans are read-only once built
        from .evaluate import make_pass

        reg = local_registry(registry)
        ev = make_pass(grid, reg)
        ranges = list(grid.chunks(size))
        futures = [executor.submit(_chunk_in_thread, grid, s, e, reg, ev, reduce)
                   for s, e in ranges]
    else:
        settings = portable_registry(registry)
        ranges = list(grid.chunks(size))
        futures = [executor.submit(run_chunk, (grid, s, e, settings, reduce))
                   for s, e in ranges]
    tables = _collect(futures, ranges, len(grid), reduce)
    if not tables:
        from .evaluate import evaluate

        tables = [evaluate(grid, 0, 0, local_registry(registry))]
    return combine(tables, reduce)
