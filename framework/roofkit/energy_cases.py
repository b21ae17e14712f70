"""Energy validation: published J/token and average-power measurements (``specs/energy_cases``)
predicted by the per-op model (:mod:`roofkit.energy`) and by the Engine reference's TDP model.

``error = predicted / measured - 1``; ``j_per_token = E / (batch * output_len)``,
``power_w = E / (e2e * tp)``, where ``E`` is the serving estimate's energy on its ``engine``.
A case says what its meter saw (``scope``: ``gpu`` boards only, or ``node`` at the wall) and
may give the run's measured median ITL and per-device average power beside its metric; the
report then splits the miss into its time part and its power part (``itl_error``,
``power_error``, per-op model).
"""

from __future__ import annotations

import statistics
import tomllib
from pathlib import Path

import attrs

from . import energy
from .errors import SpecError
from .files import read_spec_bytes
from .paths import builtin_specs_dir

__all__ = ["EnergyCase", "load_cases", "predict", "run"]

METRICS = ("j_per_token", "power_w")
SCOPES = ("gpu", "node")
_OPTIONAL = ("engine", "tp", "scope", "measured_itl_ms", "measured_power_w")
_KEYS = ("name", "workload", "device", "batch", "input_len", "output_len", "metric",
         "measured", "url", "quote")


@attrs.frozen
class EnergyCase:
    name: str
    workload: str
    device: str
    batch: int
    input_len: int
    output_len: int
    metric: str
    measured: float
    url: str
    quote: str
    engine: str | None = None
    tp: int = 1
    scope: str = "gpu"  # what the meter saw: the GPU boards only, or the node at the wall
    measured_itl_ms: float | None = None  # the run's median inter-token latency
    measured_power_w: float | None = None  # the run's average power per device


def load_cases(folder: Path | None = None) -> list[EnergyCase]:
    """Every ``*.toml`` case of ``folder`` (default: the builtin ``specs/energy_cases``)."""
    folder = builtin_specs_dir() / "energy_cases" if folder is None else Path(folder)
    cases = []
    for path in sorted(folder.glob("*.toml")):
        try:
            data = tomllib.loads(read_spec_bytes(path).decode("utf-8"))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise SpecError(f"{path}: not readable TOML ({exc})") from None
        missing = [k for k in _KEYS if k not in data]
        if missing:
            raise SpecError(f"{path}: missing {', '.join(missing)}; an energy case names "
                            "its config, its measured value, the url and the quoted place")
        if data["metric"] not in METRICS:
            raise SpecError(f"{path}: metric {data['metric']!r} is not one of {METRICS}")
        if not 0.0 < float(data["measured"]) < 1e12:  # NaN and inf fail too
            raise SpecError(f"{path}: measured must be a finite number > 0")
        unknown = set(data) - set(_KEYS) - set(_OPTIONAL)
        if unknown:
            raise SpecError(f"{path}: unknown keys {sorted(unknown)}; known: "
                            f"{sorted(_KEYS + _OPTIONAL)}")
        if data.get("scope", "gpu") not in SCOPES:
            raise SpecError(f"{path}: scope {data['scope']!r} is not one of {SCOPES}")
        if data.get("scope") == "node":
            raise SpecError(f"{path}: scope 'node' (metered at the wall) is not scored yet: "
                            "the serving path predicts GPU boards only; give a GPU-metered "
                            "figure (scope = \"gpu\")")
        if data["metric"] == "power_w" and "measured_power_w" in data:
            raise SpecError(f"{path}: measured_power_w repeats a power_w metric; drop it")
        for key in ("measured_itl_ms", "measured_power_w"):
            if key in data and not 0.0 < float(data[key]) < 1e12:
                raise SpecError(f"{path}: {key} must be a finite number > 0")
        cases.append(EnergyCase(**data))
    return cases


def predict(case: EnergyCase, registry=None) -> dict:
    """The case's metric on both models: ``{"per_op": ..., "tdp": ..., "model": ...}``."""
    from .serving import serve

    est = serve(case.workload, case.device, batch=case.batch, input_len=case.input_len,
                output_len=case.output_len, tp=case.tp, engine=case.engine, registry=registry)
    e = energy.serving_energy(est)
    e2e, itl = energy.serving_times(est)  # device steps under the power limit
    tokens = case.batch * case.output_len
    j_tdp = est.energy / (tokens if case.metric == "j_per_token" else est.e2e * case.tp)
    per = tokens if case.metric == "j_per_token" else e2e * case.tp
    return {"per_op": e / per, "tdp": j_tdp, "model": energy.model_name(case.device),
            "itl_ms": itl * 1e3, "power_w": e / (e2e * case.tp)}


def run(cases=None, registry=None) -> dict:
    """Rows per case and the median absolute error of each model (``per_op``, ``tdp``), and of
    the per-op miss's time and power parts (``itl``, ``power``) where cases measured them."""
    rows = []
    for case in load_cases() if cases is None else cases:
        p = predict(case, registry)
        row = {"case": case.name, "device": case.device, "scope": case.scope,
               "metric": case.metric, "measured": case.measured,
               "per_op": p["per_op"], "tdp": p["tdp"], "model": p["model"],
               "per_op_error": p["per_op"] / case.measured - 1.0,
               "tdp_error": p["tdp"] / case.measured - 1.0,
               "itl_error": None, "power_error": None}
        if case.measured_itl_ms is not None:
            row["itl_error"] = p["itl_ms"] / case.measured_itl_ms - 1.0
        if case.measured_power_w is not None:
            row["power_error"] = p["power_w"] / case.measured_power_w - 1.0
        rows.append(row)
    med = {m: statistics.median(abs(r[f"{m}_error"]) for r in rows) for m in ("per_op", "tdp")}
    for part in ("itl", "power"):  # the per-op miss split, over the cases that measured it
        vals = [abs(r[f"{part}_error"]) for r in rows if r[f"{part}_error"] is not None]
        med[part] = statistics.median(vals) if vals else None
    return {"rows": rows, "median_abs_error": med}
