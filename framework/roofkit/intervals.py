"""Prediction intervals from the out-of-sample residuals of the validation cases.

A residual is r = ln(predicted / measured) of one validation case (static serving, under
load, training) on the calibrated basis, leave-one-source-out: the case predicted without
the calibration constants of its own source (:mod:`roofkit.serving.loso`). A stratum is
engine x metric x device class x inside or outside the calibrated range (the device has a
calibration, or only its datasheet). Outside the calibrated range an estimate rests on the
datasheet, so the outside strata hold, beside the cases on uncalibrated devices, the
datasheet-basis residual of every case (``basis = "datasheet"``: no constant of any source
enters it, so it is out of sample by construction).

An interval answers "where will a new source's measurement land", because a user's next
workload, engine build or client is a new source: cases of one source share its systematic
error (one engine build, one client, one reading), so the exchangeable unit is the source,
not the case. With residual ``r_si`` of case ``i`` of source ``s`` taken as
``mu + b_s + e_si`` (a source offset ``b_s`` of between-source variance ``tau2``, a case
scatter ``e_si`` of within-source variance ``sigma_w2``), a new source's residual
``mu + b* + e*`` is predicted from the ``k`` sources of the stratum by

    centre -/+ t_{k-1, (1+L)/2} sqrt(tau2 + sigma_w2 + between / k)

with ``centre`` the mean of the per-source means (each source weighs the same, however many
cases it has), ``between`` their sample variance (``between / k``: the centre's own error;
from three sources on their median and squared scaled median absolute deviation, robust to
the few sources that miss by several times, :func:`spread`),
``sigma_w2`` the pooled within-source variance and ``tau2 = max(0, between - sigma_w2 *
mean(1/n_s))`` (method of moments, :func:`spread`). The interval of an estimate ``v`` is
``[v exp(-r_hi), v exp(-r_lo)]``. It is the prediction interval of a new group of a one-way
random-effects model: with no within-source scatter, the classical interval of one new draw
from a normal sample of ``k`` source means, ``m -/+ t_{k-1} s sqrt(1 + 1/k)``; in form the
interval a random-effects meta-analysis gives for a new study (Higgins, Thompson &
Spiegelhalter, J. R. Stat. Soc. A 172 (2009) 137-159, who take k - 2 degrees of freedom
over study effects of known variance). Its degrees of freedom count sources, so a
stratum of few sources gets a wide interval (t_{k-1, 0.9} = 3.08 for two sources, 1.53 for
five, z = 1.28 for many); the normal source offsets are an assumption, and with very few
sources the interval rests on it.

Why not the alternatives (``docs/accuracy.md`` has their figures): split-conformal order
statistics over the cases (the construction before) weigh a source by its case count, and
its intervals transferred to a held-out source only 70.8 % of the time; the same order
statistics over sources (source-weighted quantiles, the finite-sample correction counting
sources) are distribution-free but need k >= (1 - a) / a sources, 9 for 80 % and 19 for 90 %
(a = (1 - L) / 2), which only the whole serving range has (13 sources): one wide interval for
every metric and none at all at 90 %; a Welch-Satterthwaite degree of freedom would count the
within-source cases again.

A stratum is thin when its residuals come from fewer than ``MIN_SOURCES`` sources: one
source's spread says nothing of how far the next publisher lands. A thin stratum backs off:
drop the engine, then the device class, then widen the metric to its family (ITL and TPOT
under load; tokens/s and requests/s), then drop the family, then the range; the interval names the
stratum it used and its residual and source counts. The residuals of the three estimators
never share a stratum (:func:`view`): static serving (``roofkit serve``, ``decode``,
``prefill``: one batch costed by the circuit), under load (``roofkit simulate``: metrics
``load_*``, a scheduler run over those step costs) and training (``train_step_s``). Their
errors come from different places (a load run's queue and host time, a training step's
collectives), so one estimator's misses say nothing of the other's: with static and load
residuals pooled at the family level, the static estimates' 80 % intervals covered 96.1 % of
the held-out static sources (they took the width of the load misses), 73.2 % apart, on the
323-case table (``docs/accuracy.md``). ``roofkit validate`` scores
the construction both ways: each case's interval from the other cases' residuals, and from
the other sources' only (its own source held out: the headline, as the intervals are built
for a new source; with the source kept, they are wider than needed).

The residual table ships as ``residuals.json`` beside this module, written by
``python -m roofkit.intervals`` from ``roofkit validate``'s leave-one-source-out runs; the
validate report computes its own coverage from a fresh run.
"""

from __future__ import annotations

import functools
import json
import math
import re
import statistics
from collections.abc import Iterable, Sequence
from pathlib import Path

import attrs

from .errors import RoofkitError

DEFAULT_LEVEL = 0.8
TABLE = Path(__file__).with_name("residuals.json")
#: the stratum keys, dropped from the left when a stratum is too thin
KEYS = ("engine", "device_class", "metric", "range")
#: the strata tried in turn: the full stratum, then without the engine, the device class,
#: the metric in favour of its family (load ITL and TPOT; tokens/s and requests/s), the
#: family, the range; always within one estimator's residuals (:func:`view`)
LEVELS = (KEYS, KEYS[1:], KEYS[2:], ("family", "range"), ("range",), ())
#: a metric (without its ``load_`` prefix) -> its family
METRIC_FAMILY = {"ttft_ms": "ttft", "itl_ms": "decode", "tpot_ms": "decode",
                 "e2e_ms": "e2e", "output_tokens_per_s": "throughput",
                 "requests_per_s": "throughput", "kernel_ms": "kernel"}


def family(metric: str) -> str:
    """The family of a residual's metric: ``load_ttft_ms`` and ``ttft_ms`` -> ``ttft``."""
    m = metric.removeprefix("load_")
    return METRIC_FAMILY.get(m, m)


def view(metric: str) -> str:
    """The estimator a residual's metric belongs to, the outermost stratum: ``train`` (a
    ``train_`` metric), ``load`` (``load_``) or ``static``."""
    if metric.startswith("train_"):
        return "train"
    return "load" if metric.startswith("load_") else "static"


#: the normal consistency factor of the median absolute deviation, 1 / Phi^-1(3/4)
MAD_SCALE = 1.4826
#: the fewest sources whose residuals make a stratum (see the module docstring)
MIN_SOURCES = 2
#: which validation metric family stands for each headline figure (a load estimate's
#: figures are ``load_ttft_ms``, ``load_tpot_ms``... from the load cases)
FAMILY = {"ttft_ms": "ttft_ms", "itl_ms": "itl_ms", "e2e_ms": "e2e_ms",
          "output_tokens_per_s": "output_tokens_per_s", "decode": "itl_ms",
          "prefill": "ttft_ms", "kernel_ms": "kernel_ms"}
#: engine profile name -> engine family of the validation cases
ENGINES = {"vllm": "vllm", "tensorrt-llm-session": "tensorrt-llm"}


@attrs.frozen
class Residual:
    """One validation case's out-of-sample residual and its stratum."""

    case: str
    origin: str
    engine: str
    metric: str
    device_class: str
    range: str  # inside | outside
    r: float
    #: ``loso``: the case's own out-of-sample residual (scored for coverage); ``datasheet``:
    #: the datasheet-basis residual of a calibrated case, standing for the outside range
    basis: str = "loso"

    @property
    def family(self) -> str:
        return family(self.metric)


@attrs.frozen
class Interval:
    """``lo`` and ``hi`` around a headline ``value`` at ``level``, from ``n`` residuals of
    ``stratum``."""

    value: float
    lo: float
    hi: float
    level: float
    stratum: str
    n: int

    def to_dict(self) -> dict:
        return {"lo": self.lo, "hi": self.hi, "level": self.level, "stratum": self.stratum,
                "residuals": self.n}


def check_level(level: float) -> float:
    if isinstance(level, bool) or not isinstance(level, int | float) or not 0 < level < 1:
        raise RoofkitError(f"interval level must be a fraction between 0 and 1 (0.8 for 80 %), "
                           f"got {level!r}")
    return float(level)


@functools.lru_cache(maxsize=256)
def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile (``p`` >= 0.5) of Student's t with ``df`` (integer) degrees of
    freedom: the closed form of P(|T| <= t) for integer df (Abramowitz & Stegun 26.7.3,
    odd df; 26.7.4, even df; Cephes ``stdtr`` computes it the same way), inverted by
    bisection."""
    if df < 1 or not 0.5 <= p < 1:
        raise RoofkitError(f"t quantile needs df >= 1 and 0.5 <= p < 1, got df={df}, p={p}")

    def central(t: float) -> float:  # P(|T| <= t)
        th = math.atan(t / math.sqrt(df))
        c2, term = math.cos(th) ** 2, 1.0
        if df % 2:  # odd: (2/pi) (theta + sin cos (1 + 2/3 cos^2 + 2*4/(3*5) cos^4 ...))
            acc = 1.0 if df > 1 else 0.0
            for k in range(3, df - 1, 2):
                term *= (k - 1) / k * c2
                acc += term
            return 2 / math.pi * (th + math.sin(th) * math.cos(th) * acc)
        acc = 1.0  # even: sin (1 + 1/2 cos^2 + 1*3/(2*4) cos^4 ...)
        for k in range(2, df - 1, 2):
            term *= (k - 1) / k * c2
            acc += term
        return math.sin(th) * acc

    lo, hi = 0.0, 1.0
    while (1 + central(hi)) / 2 < p:
        hi *= 2
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if (1 + central(mid)) / 2 < p else (lo, mid)
    return (lo + hi) / 2


@attrs.frozen
class Spread:
    """The one-way random-effects summary of a stratum's residuals, the source the unit:
    ``k`` sources; ``centre``, the per-source means' mean (two sources) or median (each
    source weighs the same, however many cases it has); ``between``, their spread (sample
    variance, or the squared scaled median absolute deviation from three sources on);
    ``within``, the pooled within-source variance; ``tau2``, the between-source variance net
    of the within-source noise the source means carry."""

    k: int
    centre: float
    between: float
    within: float
    tau2: float

    @property
    def predictive(self) -> float:
        """The variance of a new source's residual about ``centre``: its source's offset
        (tau2), its case's scatter within the source (within), the centre's own error
        (between / k)."""
        return self.tau2 + self.within + self.between / self.k


def spread(rs: Iterable[tuple[str, float]]) -> Spread | None:
    """:class:`Spread` of ``(source, residual)`` pairs; None for fewer than two sources.

        m_s = mean of source s's residuals
        k = 2:   centre = (m_1 + m_2) / 2,  between = (m_1 - m_2)^2 / 2
        k >= 3:  centre = median_s m_s,  between = (1.4826 median_s |m_s - centre|)^2
        within = sum_s sum_i (r_si - m_s)^2 / sum_s (n_s - 1)   (0 when every n_s is 1)
        tau2 = max(0, between - within * (1/k) sum_s 1/n_s)

    (E[between] = tau2 + sigma_w^2 mean(1/n_s): the method-of-moments split.) From three
    sources on, the centre and the spread of the source means are the median and the
    median absolute deviation (scaled by 1.4826, the normal's consistency factor: Rousseeuw
    & Croux, J. Am. Stat. Assoc. 88 (1993) 1273-1283): the source offsets are heavy-tailed
    (most sources within 10-20 %, a few 2-7x off), and a moment estimate lets one such
    source set the width of every interval of its stratum (the static 80 % intervals, 5.5x
    wide hi / lo with four new static sources, covered 97.9 % of the held-out sources; with
    the robust spread 1.5x and 71.5 %, the whole serving set 78.0 %: ``docs/accuracy.md``)."""
    by: dict[str, list[float]] = {}
    for s, r in rs:
        by.setdefault(s, []).append(r)
    k = len(by)
    if k < 2:
        return None
    means = {s: sum(v) / len(v) for s, v in by.items()}
    if k >= 3:
        centre = statistics.median(means.values())
        between = (MAD_SCALE * statistics.median(abs(m - centre) for m in means.values())) ** 2
    else:
        centre = sum(means.values()) / k
        between = sum((m - centre) ** 2 for m in means.values()) / (k - 1)
    dof = sum(len(v) - 1 for v in by.values())
    within = (sum((x - means[s]) ** 2 for s, v in by.items() for x in v) / dof
              if dof else 0.0)
    tau2 = max(0.0, between - within * sum(1 / len(v) for v in by.values()) / k)
    return Spread(k, centre, between, within, tau2)


def residual_bounds(sp: Spread, level: float) -> tuple[float, float]:
    """``(r_lo, r_hi)``: centre -/+ t_{k-1, (1+L)/2} sqrt(predictive), the prediction
    interval of a new source's residual."""
    half = t_quantile((1 + level) / 2, sp.k - 1) * math.sqrt(sp.predictive)
    return sp.centre - half, sp.centre + half


def _label(keys: dict, n: int, sources: int) -> str:
    parts = [f"{k}={v}" for k, v in keys.items()]
    return " ".join(parts or ["all cases"]) + f" ({n} residuals, {sources} sources)"


def interval(value: float, residuals: Sequence[Residual], *, metric: str, engine: str = "",
             device_class: str = "", inside: bool = True, level: float = DEFAULT_LEVEL,
             exclude_origin: str = "", exclude_case: str = "") -> Interval | None:
    """The interval of ``value`` (see the module docstring); None when even all residuals
    come from fewer than ``MIN_SOURCES`` sources. ``exclude_case`` leaves one case's
    residuals out, ``exclude_origin`` one source's (scoring coverage out of sample)."""
    level = check_level(level)
    metric = FAMILY.get(metric, metric)
    want = {"engine": ENGINES.get(engine, engine) or "none", "device_class": device_class,
            "metric": metric, "family": family(metric),
            "range": "inside" if inside else "outside"}
    est = view(metric)  # static, load and training residuals never mix
    strata = _strata(residuals)
    for level_keys in LEVELS:
        keys = {k: want[k] for k in level_keys}
        sel = [r for r in strata.get((est, level_keys, tuple(keys.values())), ())
               if r.case != exclude_case and (not exclude_origin or r.origin != exclude_origin)]
        sp = spread((r.origin, r.r) for r in sel)
        if sp is None or sp.k < MIN_SOURCES:
            continue
        lo_r, hi_r = residual_bounds(sp, level)
        return Interval(value, value * math.exp(-hi_r), value * math.exp(-lo_r), level,
                        _label(keys, len(sel), sp.k), len(sel))
    return None


_STRATA: dict[int, tuple] = {}


def _strata(residuals: Sequence[Residual]) -> dict:
    """The residuals grouped by every stratum of :data:`LEVELS`:
    ``(view, level keys, their values) -> [residuals]`` (built once per residual
    sequence; the last few are kept, each with the sequence it indexes)."""
    hit = _STRATA.get(id(residuals))
    if hit is not None and hit[0] is residuals and hit[1] == len(residuals):
        return hit[2]
    index: dict = {}
    for r in residuals:
        est = view(r.metric)
        for level_keys in LEVELS:
            key = (est, level_keys, tuple(getattr(r, k) for k in level_keys))
            index.setdefault(key, []).append(r)
    if len(_STRATA) >= 8:
        _STRATA.pop(next(iter(_STRATA)))
    _STRATA[id(residuals)] = (residuals, len(residuals), index)
    return index


def estimate_interval(value: float, residuals: Sequence[Residual], *, metric: str,
                      engine: str = "", device_class: str = "", inside: bool = True,
                      beyond: bool = False, level: float = DEFAULT_LEVEL) -> Interval | None:
    """An estimate's interval: :func:`interval` in its range; an estimate on measured
    constants that uses a profile (host time, kernel) beyond the batches it was measured at
    (``beyond``) takes the union of its inside interval and the outside range's (the
    datasheet-basis residuals): wider, never moved off the inside one."""
    kw = dict(metric=metric, engine=engine, device_class=device_class, level=level)
    iv = interval(value, residuals, inside=inside, **kw)
    if not (inside and beyond):
        return iv
    out = interval(value, residuals, inside=False, **kw)
    if iv is None or out is None:
        return out if iv is None else iv
    return Interval(value, min(iv.lo, out.lo), max(iv.hi, out.hi), iv.level,
                    f"{iv.stratum} joined with {out.stratum} (a profile used beyond its "
                    "measured batches)", iv.n + out.n)


@functools.cache
def table(path: str | None = None) -> tuple[Residual, ...]:
    """The shipped residual table (or the one at ``path``)."""
    data = json.loads(Path(path or TABLE).read_text())
    return tuple(Residual(**row) for row in data["residuals"])


def residuals(report) -> list[Residual]:
    """Out-of-sample residuals of a validation report: every scored case (inside the
    calibrated range), every case listed only because its device has no calibration (the
    range outside it), and the datasheet-basis residual of every scored case (outside)."""
    from .serving.validation import DATASHEET_ONLY, LOSO, SCORED

    out = []
    for c in report.cases:
        p = c.predicted.get(LOSO)
        outside = DATASHEET_ONLY in c.reason
        if p is None or p <= 0 or not (c.group == SCORED or outside):
            continue
        out.append(Residual(c.name, c.origin, c.engine, c.metric, c.device_class,
                            "outside" if outside else "inside", math.log(p / c.measured)))
        d = c.predicted.get("datasheet")
        if not outside and d is not None and d > 0:
            out.append(Residual(c.name, c.origin, c.engine, c.metric, c.device_class,
                                "outside", math.log(d / c.measured), "datasheet"))
    return out


def engine_family(profile: str) -> str:
    """An engine profile's family: ``vllm-v1`` and ``vllm-v1-async`` -> ``vllm``,
    ``sglang-0.3`` -> ``sglang``, ``tensorrt-llm`` as it is."""
    return re.sub(r"(-v?\d+(\.\d+)*)?(-async)?$", "", ENGINES.get(profile, profile) or "none")


def load_residuals(report, registry) -> list[Residual]:
    """Out-of-sample residuals of a load validation report (``roofkit validate --kind load``):
    every scored case, metric ``load_<metric>``, its engine profile's family, inside the
    calibrated range where its device's bandwidth is measured; and, for those inside, the
    datasheet-basis residual (outside)."""
    from .circuit.roofline import device_roofline
    from .serving.validation import _device_class

    cat = registry.catalogues["load_cases"]
    out = []
    for c in report.cases:
        p = c.predicted.get("loso")
        if not c.scored or p is None or p <= 0:
            continue
        case = cat[c.name]
        inside = device_roofline(registry.device(case.device), "calibrated",
                                 registry).bandwidth_measured
        keys = (c.name, c.origin, engine_family(case.config.profile), f"load_{c.metric}",
                _device_class(case.device, registry))
        out.append(Residual(*keys, "inside" if inside else "outside",
                            math.log(p / c.measured)))
        d = c.predicted.get("datasheet")
        if inside and d is not None and d > 0:
            out.append(Residual(*keys, "outside", math.log(d / c.measured), "datasheet"))
    return out


#: the metric of a training residual: the step time (a tokens/s case's residual is negated:
#: tokens/s is tokens per step over the step time)
TRAIN_METRIC = "train_step_s"


def training_residuals(report, registry) -> list[Residual]:
    """Out-of-sample residuals of a training validation report (``roofkit validate --kind
    training``): per scored case the step-time residual on the calibrated basis without the
    calibration constants of its own source (:mod:`roofkit.serving.loso`), inside the
    calibrated range; a case listed only because its device has no calibration, outside;
    and each scored case's datasheet-basis residual, outside."""
    from .fleet.validation import predict
    from .serving import loso
    from .serving.validation import _device_class

    cat = registry.catalogues["training"]
    held: dict[str, object] = {}
    out = []
    for c in report.cases:
        case = cat[c.name]
        outside = c.reason.startswith("no calibration")
        p, d = c.predicted.get("calibrated"), c.predicted.get("datasheet")
        if not (c.scored or outside) or p is None or p <= 0 or d is None or d <= 0:
            continue
        o = loso.origin(case.source.url)
        if c.scored:
            if o not in held:
                held[o] = loso.without(registry, o)[0]
            if held[o] is not registry:
                try:
                    p = predict(case, "calibrated", held[o])[0]
                except RoofkitError:
                    continue
        sign = 1.0 if case.metric == "step_s" else -1.0  # in step-time orientation
        keys = (c.name, o, (case.engine.split() or ["none"])[0].lower(), TRAIN_METRIC,
                _device_class(registry.cluster(case.cluster).device, registry))
        out.append(Residual(*keys, "outside" if outside else "inside",
                            sign * math.log(p / c.measured)))
        if not outside:
            out.append(Residual(*keys, "outside", sign * math.log(d / c.measured),
                                "datasheet"))
    return out


def coverage(rows: Iterable[Residual], level: float = DEFAULT_LEVEL,
             leave_out: str = "case", score=None) -> dict:
    """Out-of-sample coverage: each case's interval, in its own stratum, from the residuals
    of the other cases (``leave_out="case"``) or of the other sources (``"source"``: a
    stricter test, whether the intervals transfer to a publisher they have not seen); the
    share whose measurement it contains, overall and per range. A case no interval can be
    made for is counted apart. Only a case's own (``loso``) residual is scored (and with
    ``score``, a predicate on a residual, only those it accepts); its datasheet-basis row
    only fills the outside strata."""
    if leave_out not in ("case", "source"):
        raise RoofkitError(f"leave_out is 'case' or 'source', not {leave_out!r}")
    rows = list(rows)
    scored = [r for r in rows if r.basis == "loso" and (score is None or score(r))]
    hits: dict[str, list[bool]] = {"inside": [], "outside": []}
    by_metric: dict[str, list[bool]] = {}
    for row in scored:
        iv = interval(1.0, rows, metric=row.metric, engine=row.engine,
                      device_class=row.device_class, inside=row.range == "inside",
                      level=level, exclude_case=row.case,
                      exclude_origin=row.origin if leave_out == "source" else "")
        if iv is None:
            continue
        measured = math.exp(-row.r)  # the prediction is 1: measured = exp(-r)
        hits[row.range].append(iv.lo <= measured <= iv.hi)
        by_metric.setdefault(row.metric, []).append(hits[row.range][-1])
    allh = hits["inside"] + hits["outside"]

    def share(h):
        return sum(h) / len(h) if h else None

    return {"level": level, "leave_out": leave_out, "cases": len(allh), "covered": share(allh),
            "inside": {"cases": len(hits["inside"]), "covered": share(hits["inside"])},
            "outside": {"cases": len(hits["outside"]), "covered": share(hits["outside"])},
            "metric": {m: {"cases": len(h), "covered": share(h)}
                       for m, h in sorted(by_metric.items())},
            "without_interval": len(scored) - len(allh)}


def write(report, path: str | Path = TABLE, load=(), training=()) -> Path:
    """Write the residual table of ``report`` (and the ``load`` and ``training`` residuals)
    to ``path`` (the shipped one by default)."""
    rows = [attrs.asdict(r) for r in (*residuals(report), *load, *training)]
    Path(path).write_text(json.dumps({
        "about": "out-of-sample residuals ln(predicted / measured), calibrated basis, "
                 "leave-one-source-out; written by python -m roofkit.intervals",
        "residuals": rows}, indent=1) + "\n")
    table.cache_clear()
    return Path(path)


def main(argv: list[str] | None = None) -> int:  # pragma: no cover - a maintenance command
    from .fleet.validation import run as run_training
    from .load.validation import run as run_load
    from .registry import default_registry
    from .serving.validation import run

    reg = default_registry()
    path = write(run(registry=reg), load=load_residuals(run_load(registry=reg), reg),
                 training=training_residuals(run_training(registry=reg), reg))
    print(f"wrote {len(table())} residuals to {path}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
