"""Prediction intervals from the out-of-sample residuals of the validation cases.

A residual is r = ln(predicted / measured) of one validation case (static serving, under
load, training) on the calibrated basis, leave-one-source-out: the case predicted without
the calibration constants of its own source (:mod:`roofkit.serving.loso`). A stratum is
engine x metric x device class x inside or outside the calibrated range (the device has a
calibration, or only its datasheet). Outside the calibrated range an estimate rests on the
datasheet, so the outside strata hold, beside the cases on uncalibrated devices, the
datasheet-basis residual of every case (``basis = "datasheet"``: no constant of any source
enters it, so it is out of sample by construction).

For an estimate ``v`` in a stratum of ``n`` residuals the interval at level ``L`` is

    [v * exp(-r_(k_hi)), v * exp(-r_(k_lo))],  k_lo = floor((n + 1) a),
                                                 k_hi = ceil((n + 1) (1 - a)),  a = (1 - L)/2

with ``r_(k)`` the k-th smallest residual: the split-conformal order statistics, which cover
at least ``L`` of new cases exchangeable with the stratum's and grow wider as ``n`` shrinks.
Cases of one source are not exchangeable with a new source's (they share its engine build,
client and reading), so a stratum is thin when it is too small for ``L`` (k_lo < 1 or
k_hi > n) or holds the residuals of fewer than ``MIN_SOURCES`` sources: one source's spread
says nothing of how far the next publisher lands. A thin stratum backs off: drop the engine,
then the device class, then widen the metric to its family (TTFT static and under load;
ITL and TPOT), then drop the family, then the range; the interval names the stratum it
used. Training residuals (metric ``train_step_s``) and serving residuals never share a
stratum. ``roofkit validate`` scores the construction both ways: each case's interval from the
other cases' residuals, and from the other sources' only (its own source held out).

The residual table ships as ``residuals.json`` beside this module, written by
``python -m roofkit.intervals`` from ``roofkit validate``'s leave-one-source-out runs; the
validate report computes its own coverage from a fresh run.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import attrs

from .errors import RoofkitError

DEFAULT_LEVEL = 0.8
TABLE = Path(__file__).with_name("residuals.json")
#: the stratum keys, dropped from the left when a stratum is too thin
KEYS = ("engine", "device_class", "metric", "range")
#: the strata tried in turn: the full stratum, then without the engine, the device class,
#: the metric in favour of its family (TTFT static and under load), the family, the range
LEVELS = (KEYS, KEYS[1:], KEYS[2:], ("family", "range"), ("range",), ())
#: a metric (without its ``load_`` prefix) -> its family
METRIC_FAMILY = {"ttft_ms": "ttft", "itl_ms": "decode", "tpot_ms": "decode",
                 "e2e_ms": "e2e", "output_tokens_per_s": "throughput",
                 "requests_per_s": "throughput", "kernel_ms": "kernel"}


def family(metric: str) -> str:
    """The family of a residual's metric: ``load_ttft_ms`` and ``ttft_ms`` -> ``ttft``."""
    m = metric.removeprefix("load_")
    return METRIC_FAMILY.get(m, m)
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


def order_statistics(n: int, level: float) -> tuple[int, int] | None:
    """``(k_lo, k_hi)``, 1-based, or None when ``n`` residuals are too few for ``level``."""
    a = (1.0 - level) / 2.0
    k_lo = math.floor((n + 1) * a + 1e-9)  # 1e-9: (1 - 0.8) / 2 is 0.09999... in floats
    k_hi = math.ceil((n + 1) * (1.0 - a) - 1e-9)
    return (k_lo, k_hi) if k_lo >= 1 and k_hi <= n else None


def _label(keys: dict, n: int, sources: int) -> str:
    parts = [f"{k}={v}" for k, v in keys.items()]
    return " ".join(parts or ["all cases"]) + f" ({n} residuals, {sources} sources)"


def interval(value: float, residuals: Sequence[Residual], *, metric: str, engine: str = "",
             device_class: str = "", inside: bool = True, level: float = DEFAULT_LEVEL,
             exclude_origin: str = "", exclude_case: str = "") -> Interval | None:
    """The interval of ``value`` (see the module docstring); None when even all residuals
    are too few or from fewer than ``MIN_SOURCES`` sources. ``exclude_case`` leaves one
    case's residuals out, ``exclude_origin`` one source's (scoring coverage out of
    sample)."""
    level = check_level(level)
    metric = FAMILY.get(metric, metric)
    want = {"engine": ENGINES.get(engine, engine) or "none", "device_class": device_class,
            "metric": metric, "family": family(metric),
            "range": "inside" if inside else "outside"}
    train = metric.startswith("train_")  # training and serving residuals never mix
    strata = _strata(residuals)
    for level_keys in LEVELS:
        keys = {k: want[k] for k in level_keys}
        sel = [r for r in strata.get((train, level_keys, tuple(keys.values())), ())
               if r.case != exclude_case and (not exclude_origin or r.origin != exclude_origin)]
        sources = len({r.origin for r in sel})
        ks = order_statistics(len(sel), level)
        if ks is None or sources < MIN_SOURCES:
            continue
        rs = sorted(r.r for r in sel)
        lo_r, hi_r = rs[ks[0] - 1], rs[ks[1] - 1]
        return Interval(value, value * math.exp(-hi_r), value * math.exp(-lo_r), level,
                        _label(keys, len(rs), sources), len(rs))
    return None


_STRATA: dict[int, tuple] = {}


def _strata(residuals: Sequence[Residual]) -> dict:
    """The residuals grouped by every stratum of :data:`LEVELS`:
    ``(training?, level keys, their values) -> [residuals]`` (built once per residual
    sequence; the last few are kept, each with the sequence it indexes)."""
    hit = _STRATA.get(id(residuals))
    if hit is not None and hit[0] is residuals and hit[1] == len(residuals):
        return hit[2]
    index: dict = {}
    for r in residuals:
        train = r.metric.startswith("train_")
        for level_keys in LEVELS:
            key = (train, level_keys, tuple(getattr(r, k) for k in level_keys))
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
