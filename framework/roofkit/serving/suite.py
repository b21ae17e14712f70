"""The whole serving validation set: the static cases of ``specs/validation`` and the load
cases of ``specs/load_cases`` scored together (``roofkit validate``).

Each scored case of either set is one row with its measurement, its predictions on the
datasheet basis, the calibrated basis and leave-one-source-out (``loso``: the calibrated
basis without the constants of the case's own source, :mod:`roofkit.serving.loso`), its
metric family, engine, device class and source. The report gives the median and maximum
absolute error per basis over the whole set, over each view (``static``, ``load``) and per
breakdown (metric family, engine, device class); the coverage of the prediction intervals
out of sample, leave one case out and leave one source out; and, with a threshold, every
miss with the cause its case spec gives.
"""

from __future__ import annotations

import statistics

import attrs

from ..circuit.roofline import BASES
from ..errors import SpecError
from ..intervals import family
from ..results import Headline, Result

LOSO = "loso"
#: every basis a row is scored on
SCORES = (*BASES, LOSO)
#: the views of the set
VIEWS = ("static", "load")
#: what a breakdown can group the rows by
BREAKDOWNS = ("family", "engine", "device_class", "view")


@attrs.frozen
class Row:
    """One scored case of the set."""

    name: str
    view: str  # static | load
    metric: str
    family: str
    engine: str
    device_class: str
    origin: str
    config: str
    measured: float
    predicted: dict
    cause: str = ""

    def error(self, basis: str) -> float | None:
        """Signed error ``(predicted - measured) / measured`` on ``basis``."""
        p = self.predicted.get(basis)
        return None if p is None else (p - self.measured) / self.measured

    def to_dict(self) -> dict:
        return {"name": self.name, "view": self.view, "metric": self.metric,
                "family": self.family, "engine": self.engine,
                "device_class": self.device_class, "origin": self.origin,
                "config": self.config, "measured": self.measured, "cause": self.cause,
                **{f"predicted_{b}": self.predicted.get(b) for b in SCORES},
                **{f"error_{b}": self.error(b) for b in SCORES}}


def _stat(values, f):
    return f(values) if values else None


@attrs.frozen(repr=False)
class SuiteReport(Result):
    """The scored rows of both sets, their residuals for the intervals, and the two views'
    own reports (``static``: :class:`~roofkit.serving.validation.Report`, ``load``:
    :class:`~roofkit.load.validation.LoadReport`)."""

    rows: tuple[Row, ...]
    residuals: tuple = ()  # roofkit.intervals.Residual of both sets
    static: object = None
    load: object = None
    plugins: tuple[str, ...] = ()

    HEADLINE = tuple(
        Headline(f"{stat}_error_{b}", "%", (lambda r, b=b, f=stat: _percent(
            getattr(r, f)(b))), f"{stat} |error| {b}", key_name=f"{stat}_abs_error_{b}_pct")
        for b in SCORES for stat in ("median", "max"))
    KIND = "serving validation set"
    basis = ("datasheet, calibrated and leave-one-source-out: every scored static and load "
             "case predicted on each")

    def title(self) -> str:
        n = {v: len(self.select(view=v)) for v in VIEWS}
        return f"{len(self.rows)} scored cases ({n['static']} static, {n['load']} under load)"

    def identity(self) -> dict:
        return {"cases": len(self.rows)}

    def frame_rows(self) -> list[dict]:
        return [r.to_dict() for r in self.rows]

    def select(self, **keys) -> list[Row]:
        """The rows whose attributes equal ``keys`` (``view="load"``, ``family="ttft"``)."""
        return [r for r in self.rows if all(getattr(r, k) == v for k, v in keys.items())]

    def errors(self, basis: str, **keys) -> list[float]:
        return [abs(r.error(basis)) for r in self.select(**keys) if r.error(basis) is not None]

    def median(self, basis: str, **keys) -> float | None:
        return _stat(self.errors(basis, **keys), statistics.median)

    def max(self, basis: str, **keys) -> float | None:
        return _stat(self.errors(basis, **keys), max)

    def _scores(self, **keys) -> dict:
        out = {"cases": len(self.select(**keys))}
        for b in SCORES:
            out[f"{b}_median_abs_error"] = self.median(b, **keys)
            out[f"{b}_max_abs_error"] = self.max(b, **keys)
        return out

    def summary(self) -> dict:
        """Per basis the median and max over the whole set and over each view."""
        return {"all": self._scores(), **{v: self._scores(view=v) for v in VIEWS}}

    def breakdown(self, by: str, view: str | None = None) -> list[dict]:
        """The rows (of ``view``, default both) grouped by ``by``: family, engine,
        device_class or view; per group the count and each basis' median and max."""
        if by not in BREAKDOWNS:
            raise SpecError(f"unknown breakdown {by!r}; one of {', '.join(BREAKDOWNS)}")
        base = {} if view is None else {"view": view}
        keys = sorted({getattr(r, by) for r in self.select(**base)})
        return [{by: k, **self._scores(**base, **{by: k})} for k in keys]

    def coverage(self, level: float = 0.8, leave_out: str = "case",
                 view: str | None = None) -> dict:
        """Out-of-sample coverage of the prediction intervals at ``level`` over the whole
        set's residuals (:func:`roofkit.intervals.coverage`); with ``view`` only that view's
        cases are scored, their intervals still drawn from the whole set."""
        from ..intervals import coverage

        if view is not None and view not in VIEWS:
            raise SpecError(f"unknown view {view!r}; one of {', '.join(VIEWS)}")

        def score(r):  # a load residual's metric is load_<metric>
            return view is None or r.metric.startswith("load_") == (view == "load")

        return {**coverage(self.residuals, level, leave_out, score=score), "view": view or "all"}

    def misses(self, threshold: float, basis: str = LOSO) -> list[Row]:
        """The rows whose |error| on ``basis`` exceeds ``threshold``, worst first."""
        rows = [r for r in self.rows if r.error(basis) is not None
                and abs(r.error(basis)) > threshold]
        return sorted(rows, key=lambda r: -abs(r.error(basis)))

    def to_dict(self) -> dict:
        return {"kind": "serving", **self.headline(), "basis": self.basis,
                "summary": self.summary(),
                "breakdown": {by: self.breakdown(by) for by in BREAKDOWNS},
                "interval_coverage": [self.coverage(lv, lo, v) for lv in (0.8, 0.9)
                                      for lo in ("case", "source") for v in (None, *VIEWS)],
                "cases": [r.to_dict() for r in self.rows],
                "static": self.static.to_dict() if self.static is not None else None,
                "load": self.load.to_dict() if self.load is not None else None,
                "plugins": list(self.plugins)}


def _percent(v):
    return None if v is None else 100 * v


def rows(static, load, registry) -> list[Row]:
    """The scored rows of a static report and a load report."""
    from ..intervals import engine_family
    from .validation import SCORED, _device_class

    out = [Row(c.name, "static", c.metric, family(c.metric), c.engine,
               c.device_class, c.origin, c.config, c.measured, dict(c.predicted), c.cause)
           for c in static.cases if c.group == SCORED]
    lcat = registry.catalogues["load_cases"]
    for c in load.cases:
        if not c.scored:
            continue
        case = lcat[c.name]
        out.append(Row(c.name, "load", c.metric, family(c.metric),
                       engine_family(case.config.profile),
                       _device_class(case.device, registry), c.origin, c.config,
                       c.measured, dict(c.predicted), c.cause))
    return out


def run(registry=None, static=None, load=None) -> SuiteReport:
    """Score the whole serving validation set (or the given ``static`` and ``load``
    reports of it)."""
    from ..intervals import load_residuals, residuals
    from ..load import validation as load_validation
    from ..registry import resolve
    from . import validation

    reg = resolve(registry)
    static = static if static is not None else validation.run(registry=reg)
    load = load if load is not None else load_validation.run(registry=reg)
    res = (*residuals(static), *load_residuals(load, reg))
    return SuiteReport(tuple(rows(static, load, reg)), res, static, load, reg.plugin_set)
