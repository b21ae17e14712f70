"""Predicting the published measurements of ``specs/validation`` on both bases.

For every case the estimator runs the configuration the publisher ran and reads the same
metric; the signed error is ``(predicted - measured) / measured`` (positive: the prediction
is larger, i.e. slower for a time and faster for a throughput). The summary gives, per basis,
the median and the maximum absolute error over the scored cases (single-node inference);
cases the estimator does not predict are listed with their reason, never scored. A case
superseded by the same publisher's later measurement of the same configuration (a later
engine version) is predicted and listed beside it; only the later one is scored, because the
calibrated basis rests on current kernels and libraries. A case marked ``unscored`` (the run
depends on something the estimate does not model and the source leaves open) is predicted
and listed too. A case on a device without a
calibration file is predicted and listed too, but not scored: its calibrated basis is its
datasheet.
"""

from __future__ import annotations

import statistics

import attrs

from ..circuit.roofline import BASES
from ..errors import RoofkitError, SpecError
from ..progress import Bar
from ..results import Headline, Result
from .estimate import configure, estimate, max_load

SCORED = "single-node inference"
OTHER = "other"
LOSO = "loso"  # the calibrated basis, each source scored without its own constants
#: what a breakdown can group the scored cases by
BREAKDOWNS = ("metric", "engine", "device_class")


@attrs.frozen
class CaseResult:
    """One case: measured, the prediction on each basis and the signed errors."""

    name: str
    kind: str
    workload: str
    device: str
    metric: str
    measured: float
    predicted: dict
    group: str
    reason: str = ""
    config: str = ""
    origin: str = ""  # the source's origin (roofkit.serving.loso.origin)
    engine: str = ""  # the engine family: the first word of the publisher's engine
    device_class: str = ""  # the device's vendor and category
    removed: tuple[str, ...] = ()  # constants of the case's origin left out of its LOSO
    cause: str = ""  # the case spec's one line on why the prediction misses, where known

    def error(self, basis: str) -> float | None:
        """Signed error on ``basis``: datasheet, calibrated, or ``loso`` (calibrated with
        the constants of the case's own origin removed)."""
        p = self.predicted.get(basis)
        return None if p is None else (p - self.measured) / self.measured

    def to_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "workload": self.workload,
                "device": self.device, "metric": self.metric, "config": self.config,
                "measured": self.measured, "group": self.group, "reason": self.reason,
                "origin": self.origin, "engine": self.engine,
                "device_class": self.device_class, "loso_removed": list(self.removed),
                "cause": self.cause,
                **{f"predicted_{b}": self.predicted.get(b) for b in (*BASES, LOSO)},
                **{f"error_{b}": self.error(b) for b in (*BASES, LOSO)}}


@attrs.frozen(repr=False)
class Report(Result):
    """Every case, and per basis the median and maximum absolute error of the scored ones."""

    cases: tuple[CaseResult, ...]
    plugins: tuple[str, ...] = ()  # the registry's plugin set that produced the predictions
    independence: tuple[dict, ...] = ()  # per calibration constant: origin and statement

    def coverage(self, level: float = 0.8, leave_out: str = "case") -> dict:
        """Out-of-sample coverage of the prediction intervals at ``level`` over this run's
        residuals (:func:`roofkit.intervals.coverage`)."""
        from ..intervals import coverage, residuals

        return coverage(residuals(self), level, leave_out)

    HEADLINE = tuple(
        Headline(f"{stat}_error_{b}", "%", (lambda r, b=b, f=stat: _percent(
            getattr(r, f)(b))), f"{stat} |error| {b}", key_name=f"{stat}_abs_error_{b}_pct")
        for b in BASES for stat in ("median", "max"))
    KIND = "validation report"
    PLOT = "validation"
    basis = "both: every case predicted on the datasheet and on the calibrated basis"

    def title(self) -> str:
        return f"{len(self.cases)} cases, {len(self.scored())} scored ({SCORED})"

    def identity(self) -> dict:
        return {"cases": len(self.cases), "scored": len(self.scored())}

    def frame_rows(self) -> list[dict]:
        """One row per case (``CaseResult.to_dict``)."""
        return [c.to_dict() for c in self.cases]

    def scored(self) -> list[CaseResult]:
        return [c for c in self.cases if c.group == SCORED]

    def errors(self, basis: str, group: str = SCORED) -> list[float]:
        return [abs(c.error(basis)) for c in self.cases
                if c.group == group and c.error(basis) is not None]

    def median(self, basis: str, group: str = SCORED) -> float | None:
        e = self.errors(basis, group)
        return statistics.median(e) if e else None

    def max(self, basis: str, group: str = SCORED) -> float | None:
        e = self.errors(basis, group)
        return max(e) if e else None

    def summary(self) -> dict:
        out = {}
        for group in (SCORED, OTHER):
            n = len([c for c in self.cases if c.group == group])
            out[group] = {"cases": n, **{b: {
                "predicted": len(self.errors(b, group)),
                "median_abs_error": self.median(b, group),
                "max_abs_error": self.max(b, group)} for b in (*BASES, LOSO)}}
        return out

    def breakdown(self, by: str) -> list[dict]:
        """The scored cases grouped by ``by`` (metric, engine, device_class): per group the
        count and the median and max absolute error in sample (calibrated) and LOSO."""
        if by not in BREAKDOWNS:
            raise SpecError(f"unknown breakdown {by!r}; one of {', '.join(BREAKDOWNS)}")
        groups: dict[str, list[CaseResult]] = {}
        for c in self.scored():
            groups.setdefault(getattr(c, by), []).append(c)
        rows = []
        for key, cases in sorted(groups.items()):
            row = {by: key, "cases": len(cases)}
            for b in ("calibrated", LOSO):
                e = [abs(c.error(b)) for c in cases if c.error(b) is not None]
                row[f"{b}_median_abs_error"] = statistics.median(e) if e else None
                row[f"{b}_max_abs_error"] = max(e) if e else None
            rows.append(row)
        return rows

    def to_dict(self) -> dict:
        return {"cases": [c.to_dict() for c in self.cases], "summary": self.summary(),
                **self.headline(), "basis": self.basis,
                "breakdown": {by: self.breakdown(by) for by in BREAKDOWNS},
                "independence": list(self.independence),
                "interval_coverage": [self.coverage(lv, lo) for lv in (0.8, 0.9)
                                      for lo in ("case", "source")] if self.independence
                else [], "plugins": list(self.plugins)}


def _percent(v):
    return None if v is None else 100 * v


def _describe(case) -> str:
    c = case.config
    parts = [c.precision or "16-bit", f"tp{c.tp}"]
    if c.batch:
        parts.append(f"b{c.batch}")
    elif c.batching == "max_load":
        parts.append("max load")
    if c.tokens:
        parts.append(f"{c.tokens} tok")
    if c.input_len:
        parts.append(f"{c.input_len}/{c.output_len or 1}")
    if c.runtime:
        parts.append(c.runtime)
    return " ".join(parts)


def predict(case, basis: str, registry) -> float:
    """The estimator's value of ``case.metric`` for ``case`` on ``basis``."""
    c = case.config
    precision = c.precision
    kv = c.kv_dtype or "bf16"  # the TOML key ``kv_dtype`` is the KV-cache format
    engine = c.runtime or None
    if case.kind == "kernel":
        return _kernel_ms(case, basis, registry)
    if c.batching == "max_load":
        est = max_load(case.workload, case.device, input_len=c.input_len,
                       output_len=c.output_len, tp=c.tp, precision=precision, kv_cache_dtype=kv,
                       basis=basis, engine=engine, registry=registry,
                       max_requests=c.num_requests, admission=c.kv_admission or "grow",
                       engine_version=c.engine_version or None)
    else:
        est = estimate(case.workload, case.device, batch=c.batch or c.concurrency or 1,
                       input_len=c.input_len, output_len=c.output_len or 1, tp=c.tp,
                       precision=precision, kv_cache_dtype=kv, basis=basis, engine=engine,
                       registry=registry, engine_version=c.engine_version or None)
    value = {"ttft_ms": est.ttft_ms, "itl_ms": est.itl_ms, "e2e_ms": est.e2e_ms,
             "output_tokens_per_s": est.output_tokens_per_s}.get(case.metric)
    if value is None:
        raise RoofkitError(f"metric {case.metric!r} is not a serving estimate")
    if case.metric == "output_tokens_per_s" and c.throughput_basis == "per_gpu":
        value /= max(c.gpus, c.tp)
    return float(value)


def _kernel_ms(case, basis: str, registry) -> float:
    """One operator at ``tokens`` rows, timed alone (device time, no host launch): the
    circuit node named ``node`` (``qkv`` is ``attention.qkv``) of a prefill of ``tokens``
    tokens, one layer's instance."""
    from ..circuit import api

    c = case.config
    s = configure(registry, case.workload, case.device, c.precision or "bf16",
                  c.kv_dtype or "bf16", basis, c.tp)
    est = api.prefill(s.workload, s.device, tokens=c.tokens, seqs=1, **s.circuit)
    rows = [r for r in est.rows if r.section == "main" and
            (r.node == c.node or r.node.rsplit(".", 1)[-1] == c.node)]
    if not rows:
        raise RoofkitError(f"no node {c.node!r} in {s.workload.name}'s circuit")
    r = rows[0]
    return float(r.time) / r.count * 1e3


#: the words of every listed reason whose case has no measurement behind its calibrated basis
DATASHEET_ONLY = "its calibrated basis is its datasheet"


def _uncalibrated(case, registry) -> str:
    """Why the calibrated basis of ``case`` is its datasheet ("" when a measurement of its
    device stands behind it: the memory bandwidth, or the compute slot its precision runs
    on)."""
    from ..circuit.roofline import device_roofline

    try:
        roof = device_roofline(registry.device(case.device), "calibrated", registry)
        if not roof.measured:
            return f"{case.device} has no calibration in specs/calibration"
        if roof.bandwidth_measured:
            return ""
        precision = registry.precision(case.config.precision or "bf16")
        slot = roof.slot_for(precision)[0]
    except (LookupError, RoofkitError):
        return ""  # the prediction reports the unknown name
    if roof.provenance.get(f"compute.{slot}", "").startswith("calibration"):
        return ""
    return (f"{case.device}'s calibration in specs/calibration measures neither its memory "
            f"bandwidth nor its {slot} compute")


def _why_listed(case, by_name: dict, registry) -> str:
    """Why ``case`` is listed and not scored ("" when it is scored)."""
    if case.not_predicted:
        return case.not_predicted
    if case.nodes > 1:
        return "multi-node"
    if case.superseded_by:
        later = by_name.get(case.superseded_by)
        if later is None:
            raise SpecError(f"validation case {case.name!r}: superseded_by names "
                            f"{case.superseded_by!r}, which is not a validation case; "
                            "name the case that holds the later measurement")
        return (f"superseded by {later.name} ({later.value:g}): the same configuration "
                f"measured by the same publisher with {later.config.engine}")
    if case.unscored:
        return case.unscored
    uncalibrated = _uncalibrated(case, registry)
    if uncalibrated:
        return f"{uncalibrated}, so {DATASHEET_ONLY}: listed, not scored"
    return ""


def _engine_family(engine: str) -> str:
    return (engine.split() or ["unknown"])[0].lower()


def _device_class(device: str, registry) -> str:
    try:
        d = registry.device(device)
    except LookupError:
        return "unknown"
    return f"{(d.vendor or 'other').lower()} {d.category}"


def _loso_predict(case, reg, removed: tuple[str, ...]) -> float:
    """The calibrated prediction on ``reg`` (the case's own constants removed); a removed
    engine profile leaves the engine's host time out, and keeps the kernel profiles of the
    ``specs/engines`` profile that names it (the measured ones of the case's origin are gone
    from ``reg``)."""
    from ..circuit.kernels import engine_spec

    gone = {name.split(":engines.", 1)[1] for name in removed if ":engines." in name}
    runtime = case.config.runtime
    if runtime and runtime in gone:
        spec = engine_spec(reg, runtime)
        keep = spec.name if spec is not None and spec.kernels else ""
        case = attrs.evolve(case, config=attrs.evolve(case.config, runtime=keep))
    return predict(case, "calibrated", reg)


def run(registry=None, cases=None, loso: bool = True) -> Report:
    """Predict ``cases`` (default: the whole validation catalogue) on every basis, and with
    ``loso`` each case again on the calibrated basis without its own origin's constants."""
    from ..registry import resolve
    from . import loso as _loso

    reg = resolve(registry)
    if cases is None:
        cases = list(reg.catalogues["validation"].values())
    by_name = {c.name: c for c in cases}
    origins = {c.name: _loso.origin(c.source.url) for c in cases}
    held: dict[str, tuple] = {}  # origin -> (registry without it, removed constants)
    out = []
    with Bar(len(cases), "validate") as bar:
        for case in sorted(cases, key=lambda c: (c.kind, c.name)):
            reason = _why_listed(case, by_name, reg)
            group, predicted = (OTHER if reason else SCORED), {}
            removed: tuple[str, ...] = ()
            if not case.not_predicted:
                for basis in BASES:
                    try:
                        predicted[basis] = predict(case, basis, reg)
                    except RoofkitError as exc:
                        predicted[basis] = None
                        group, reason = OTHER, f"not predicted: {exc}"
                if loso and predicted.get("calibrated") is not None:
                    o = origins[case.name]
                    if o not in held:
                        held[o] = _loso.without(reg, o)
                    sub, removed = held[o]
                    try:
                        predicted[LOSO] = (predicted["calibrated"] if sub is reg
                                           else _loso_predict(case, sub, removed))
                    except RoofkitError:
                        predicted[LOSO] = None
            out.append(CaseResult(case.name, case.kind, case.workload, case.device, case.metric,
                                  case.value, predicted, group, reason, _describe(case),
                                  origins[case.name], _engine_family(case.config.engine),
                                  _device_class(case.device, reg), removed, case.cause))
            bar.update()
    scored_origins = [c.origin for c in out if c.group == SCORED]
    return Report(tuple(out), reg.plugin_set,
                  tuple(_loso.statements(reg, scored_origins)) if loso else ())
