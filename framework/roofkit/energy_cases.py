"""Energy validation: published J/token and average-power measurements (``specs/energy_cases``)
predicted by the per-op model (:mod:`roofkit.energy`) and by the Engine reference's TDP model.

``error = predicted / measured - 1``; ``j_per_token = E / (batch * output_len)``,
``power_w = E / (e2e * tp)``, where ``E`` is the serving estimate's energy on its ``engine``.
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
        unknown = set(data) - set(_KEYS) - {"engine", "tp"}
        if unknown:
            raise SpecError(f"{path}: unknown keys {sorted(unknown)}")
        cases.append(EnergyCase(**data))
    return cases


def predict(case: EnergyCase, registry=None) -> dict:
    """The case's metric on both models: ``{"per_op": ..., "tdp": ..., "model": ...}``."""
    from .serving import serve

    est = serve(case.workload, case.device, batch=case.batch, input_len=case.input_len,
                output_len=case.output_len, tp=case.tp, engine=case.engine, registry=registry)
    per = case.batch * case.output_len if case.metric == "j_per_token" else est.e2e * case.tp
    return {"per_op": energy.serving_energy(est) / per, "tdp": est.energy / per,
            "model": energy.model_name(case.device)}


def run(cases=None, registry=None) -> dict:
    """Rows per case and the median absolute error of each model."""
    rows = []
    for case in load_cases() if cases is None else cases:
        p = predict(case, registry)
        rows.append({"case": case.name, "metric": case.metric, "measured": case.measured,
                     "per_op": p["per_op"], "tdp": p["tdp"], "model": p["model"],
                     "per_op_error": p["per_op"] / case.measured - 1.0,
                     "tdp_error": p["tdp"] / case.measured - 1.0})
    med = {m: statistics.median(abs(r[f"{m}_error"]) for r in rows) for m in ("per_op", "tdp")}
    return {"rows": rows, "median_abs_error": med}
