"""Serving-under-load validation: published latencies and throughputs of engines under a
request load, predicted by the simulator (``roofkit validate --kind load``).

A case (``specs/load_cases/*.toml``) names the workload and device, the engine and the
engine profile the simulator runs (``config.profile``), the layout (tp, dp, disaggregation),
the request pattern (closed-loop concurrency or a rate, lengths, requests), the metric
(``ttft_ms``, ``tpot_ms``, ``itl_ms``, ``e2e_ms`` at a ``statistic``, or
``output_tokens_per_s``, ``requests_per_s``) and where the number was read. Every case is
predicted on both bases; the signed error is ``(predicted - measured) / measured``, and the
summary gives the median and maximum absolute error per metric family (TTFT; TPOT and ITL;
throughput).
"""

from __future__ import annotations

import statistics

import attrs

from ..circuit.roofline import BASES
from ..errors import RoofkitError
from ..progress import iterate
from ..schema.load_case import FAMILIES, LoadCase

LOSO = "loso"  # the calibrated basis, each source scored without its own constants


def predict(case: LoadCase, basis: str, registry, _runs: dict | None = None) -> float:
    """The simulator's value of ``case.metric`` at ``case.statistic`` (``_runs`` caches one
    simulation per configuration across the cases that read different metrics of it)."""
    return _read(case, _simulated(case, basis, registry, _runs))


def bounds_met(case: LoadCase, basis: str, registry, _runs: dict | None = None) -> bool | None:
    """Whether the simulated run meets every one of ``config.latency_bounds`` (each bound's
    percentile of the simulated requests at or under it); None when the case gives none."""
    if not case.config.latency_bounds:
        return None
    return bool(_simulated(case, basis, registry, _runs).slo_met)


def _simulated(case: LoadCase, basis: str, registry, _runs: dict | None = None):
    from .simulate import simulate

    c = case.config
    if c.concurrency is not None:
        requests = c.requests or max(10 * c.concurrency, 100)
    else:
        requests = c.requests or 1000
    kw = dict(concurrency=c.concurrency, rate=c.rate, requests=requests,
              input_len=c.input_lengths or c.input_len,
              output_len=c.output_lengths or c.output_len, tp=c.tp, dp=c.dp,
              precision=c.precision, kv_cache_dtype=c.kv_dtype or "bf16", engine=c.profile,
              max_num_seqs=c.max_num_seqs, max_batched_tokens=c.max_batched_tokens,
              disagg=c.disagg or None, basis=basis, frontend=c.frontend)
    if c.latency_bounds:  # the bounds only add the goodput and slo_met readings
        kw["slo"] = c.latency_bounds
    # one run per simulated configuration: cases reading other metrics of it share it
    key = (case.workload, case.device, tuple(sorted(kw.items())))
    r = None if _runs is None else _runs.get(key)
    if r is not None:
        return r
    r = simulate(case.workload, case.device, registry=registry, **kw)
    if _runs is not None:
        _runs[key] = r
    return r


def _read(case, r) -> float:
    c = case.config
    if case.metric in ("output_tokens_per_s", "requests_per_s"):
        v = getattr(r, case.metric)
        return v / r.devices if c.throughput_basis == "per_gpu" else v
    return getattr(r, case.metric.removesuffix("_ms"))[case.statistic] * 1e3


@attrs.frozen
class LoadCaseResult:
    name: str
    metric: str
    statistic: str
    config: str
    measured: float
    predicted: dict
    scored: bool
    reason: str = ""
    origin: str = ""  # the source's origin (roofkit.serving.loso.origin)
    removed: tuple[str, ...] = ()  # calibration constants of its origin left out of its LOSO
    cause: str = ""  # the case spec's one line on why the prediction misses, where known
    bounds: str = ""  # the latency bounds the measured run met (config.latency_bounds)
    #: whether the simulated run meets them, per basis (and LOSO); None without bounds
    bounds_met: dict = attrs.field(factory=dict)

    def error(self, basis: str) -> float | None:
        p = self.predicted.get(basis)
        return None if p is None else (p - self.measured) / self.measured

    def to_dict(self) -> dict:
        return {"name": self.name, "metric": self.metric, "statistic": self.statistic,
                "config": self.config, "measured": self.measured, "scored": self.scored,
                "reason": self.reason,
                "origin": self.origin, "loso_removed": list(self.removed), "cause": self.cause,
                "latency_bounds": self.bounds or None,
                "bounds_met": self.bounds_met.get("calibrated") if self.bounds else None,
                **{f"bounds_met_{b}": self.bounds_met.get(b) if self.bounds else None
                   for b in (*BASES, LOSO)},
                **{f"predicted_{b}": self.predicted.get(b) for b in (*BASES, LOSO)},
                **{f"error_{b}": self.error(b) for b in (*BASES, LOSO)}}


@attrs.frozen(repr=False)
class LoadReport:
    cases: tuple[LoadCaseResult, ...]
    independence: tuple[dict, ...] = ()  # per constant: origin and LOSO statement

    def errors(self, basis: str, family: str | None = None) -> list[float]:
        return [abs(c.error(basis)) for c in self.cases if c.scored and
                c.error(basis) is not None and
                (family is None or FAMILIES[c.metric] == family)]

    def median(self, basis: str, family: str | None = None) -> float | None:
        e = self.errors(basis, family)
        return statistics.median(e) if e else None

    def max(self, basis: str, family: str | None = None) -> float | None:
        e = self.errors(basis, family)
        return max(e) if e else None

    def summary(self) -> dict:
        fams = sorted({FAMILIES[c.metric] for c in self.cases})
        return {f: {b: {"cases": len(self.errors(b, f)), "median_abs_error": self.median(b, f),
                        "max_abs_error": self.max(b, f)} for b in (*BASES, LOSO)}
                for f in fams}

    def to_dict(self) -> dict:
        return {"cases": [c.to_dict() for c in self.cases], "summary": self.summary(),
                "independence": list(self.independence)}

    def to_pandas(self):
        """One row per case: measured, predicted and error per basis (and LOSO)."""
        from ..fleet.report import frame

        return frame([c.to_dict() for c in self.cases])

    def _lines(self) -> list[tuple[str, str]]:
        """Median |error| per metric family and basis, with the scored count."""
        out = []
        for fam, by in self.summary().items():
            cells = [f"{b} {by[b]['median_abs_error']:.1%} ({by[b]['cases']})"
                     for b in (*BASES, LOSO) if by[b]["median_abs_error"] is not None]
            out.append((fam, ", ".join(cells) or "nothing scored"))
        return out

    def __repr__(self) -> str:
        scored = sum(c.scored for c in self.cases)
        lines = [f"<LoadReport {len(self.cases)} load cases, {scored} scored; median |error|"]
        lines += [f"  {fam:<12} {text}" for fam, text in self._lines()[:12]]
        return "\n".join(lines) + ">"

    def _repr_html_(self) -> str:
        from ..fleet.report import html_table

        scored = sum(c.scored for c in self.cases)
        return html_table(f"load validation: {len(self.cases)} cases, {scored} scored "
                          "(median |error| per basis, cases scored)", self._lines())


def _describe(case: LoadCase) -> str:
    c = case.config
    load = f"c{c.concurrency}" if c.concurrency is not None else f"{c.rate:g} req/s"
    lens = f"{c.input_lengths or c.input_len}/{c.output_lengths or c.output_len}"
    return (f"{c.precision or '16-bit'} tp{c.tp}{f' dp{c.dp}' if c.dp > 1 else ''} {load} "
            f"{lens}{f' {c.disagg}' if c.disagg else ''} {c.profile}")


def run(registry=None, cases=None, bases=BASES, loso: bool = True) -> LoadReport:
    """Predict every load case (default: the ``load_cases`` catalogue) on ``bases``, and with
    ``loso`` on the calibrated basis again without the calibration constants of the case's
    own origin (:mod:`roofkit.serving.loso`)."""
    from ..registry import resolve
    from ..serving import loso as _loso

    reg = resolve(registry)
    if cases is None:
        cases = list(reg.catalogues["load_cases"].values())
    out = []
    runs: dict = {}
    held: dict[str, tuple] = {}  # origin -> (registry without it, removed, its runs)
    for case in iterate(sorted(cases, key=lambda c: c.name), "validate load"):
        predicted, reason, met = {}, case.unscored, {}
        for basis in bases:
            try:
                predicted[basis] = float(predict(case, basis, reg, runs))
                met[basis] = bounds_met(case, basis, reg, runs)
            except RoofkitError as exc:
                predicted[basis] = None
                reason = f"not predicted: {exc}"
        o = _loso.origin(case.source.url)
        removed: tuple[str, ...] = ()
        if loso and predicted.get("calibrated") is not None:
            if o not in held:
                held[o] = (*_loso.without(reg, o), {})
            sub, removed, sub_runs = held[o]
            try:
                predicted[LOSO] = (predicted["calibrated"] if sub is reg else
                                   float(predict(case, "calibrated", sub, sub_runs)))
                met[LOSO] = (met.get("calibrated") if sub is reg else
                             bounds_met(case, "calibrated", sub, sub_runs))
            except RoofkitError:
                predicted[LOSO] = None
        out.append(LoadCaseResult(case.name, case.metric, case.statistic, _describe(case),
                                  case.value, predicted, not reason, reason, o, removed,
                                  case.cause, case.config.latency_bounds, met))
    origins = [c.origin for c in out if c.scored]
    return LoadReport(tuple(out), tuple(_loso.statements(reg, origins, engines=True))
                      if loso else ())
